"""The simulated patient.

simulated.py   the patient, in two modes
facts.py       the facts a doctor's question asks about
voice.py       a fact said in the patient's voice
contradict.py  whether a reply contradicts a fact
"""
