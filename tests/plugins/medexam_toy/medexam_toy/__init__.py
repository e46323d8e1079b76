"""A toy activity for medexam in a package of its own: sums a model answers.

medexam imports :mod:`medexam_toy.activity` through the ``medexam.activities`` entry point
this package declares; that module registers the activity and its importer, and names the
rest (run spec, scorer, report section, CLI group, screen) for medexam to import on use.
"""
