"""The Consultation screen and its parts.

* ``screen.py`` — the screen (:class:`~gui.consult.screen.ConsultScreen`: a person's
  consultation and the model-vs-model run), named by the consultation's descriptor
  (``engine/consult/activity.py``);
* ``item.py`` — the consultation's item widget in the one practice panel: a person consults
  the simulated patient and answers the case's task; ``result.py`` — how it went (facts,
  audit, overlap); ``transcript.py`` — a dialogue as chat bubbles.
"""
