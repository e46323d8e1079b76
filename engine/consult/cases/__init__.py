"""Consultation cases.

cases.py        the native format
agentclinic.py  AgentClinic's files
draft.py        a case drafted from a multiple-choice question by a model
convert.py      a whole data set of questions converted so
stats.py        a case set described as the paper describes its own
"""
