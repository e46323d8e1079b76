"""Scoring and audit.

scorers.py       the consultation's scorers
metrics.py       its metrics
shares.py        the solver's answers after each share of a consultation
similarity.py    sentence similarity
judging.py       free-text answers judged by a model
verdicts.py      people's verdicts beside the judge's
audit.py         the patient audited
requirements.py  a reply read against the paper's requirements
"""
