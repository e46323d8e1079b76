"""The Exam screen and its parts.

* ``screen.py`` — the screen (:class:`~gui.exam.screen.ExamScreen`: practice and the model
  evaluation), named by the exam's descriptor (``engine/exam/activity.py``);
* ``item.py`` — the exam's item widget in the one practice panel
  (:mod:`gui.widgets.practice`): a person's sitting, with ``explain.py`` (a model's explanation of a
  question, asked for in practice) and ``report.py`` (the report at the end).
"""
