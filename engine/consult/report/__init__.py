"""Consultation runs reported.

tables.py   the paper's tables
section.py  the report section
figures.py  its figures
label.py    the words of a run's label
"""
