"""Experiments: a grid of runs (models × settings × data sets) planned, played and reported as one job."""
