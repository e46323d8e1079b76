"""The Consultation screen and its parts.

* ``screen.py`` — the screen (:class:`~gui.consult.screen.ConsultScreen`: a person's
  consultation and the model-vs-model run), named by the consultation's descriptor
  (``engine/consult/activity.py``);
* ``person.py`` — a person consults the simulated patient.
"""
