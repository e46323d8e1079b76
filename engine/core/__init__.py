"""The run loop and scoring, what every activity plugs into.

runs.py        the one run loop
job.py         one run's work as the loop plays it, and who else may answer it
run_checks.py  what a run is checked against before it starts
solvers.py     who answers
scoring.py     scorers apart from solvers, and rescoring
metrics.py     the reducers a run's summary is made of
no_answer.py   replies that give no answer
chance.py      where chance lies
estimate.py    how long a run will take
progress.py    progress and cancel
trials.py      repeated trials of sampled runs
"""
