"""The doctor and the final task.

doctors.py     the doctors that drive a consultation
written.py     the doctor a writer model plays for golden dialogues
dialogue.py    a consultation turn by turn
person.py      a person as the doctor, a one-case run resumed where it stopped
runner.py      a doctor's run over the cases
final_task.py  the final task answered and scored
budget.py      the turn budget
"""
