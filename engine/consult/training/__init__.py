"""Training a doctor.

golden.py    golden dialogues
finetune.py  a doctor fine-tuned on them
"""
