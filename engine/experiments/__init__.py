"""Experiments: grids of runs (models × settings × data sets) played and reported as one job."""
