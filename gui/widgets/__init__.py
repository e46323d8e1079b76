"""One module per screen (``qt_<screen>.py``) and the parts they are built from.

* ``screen.py`` — an activity screen's frame (:class:`~gui.widgets.screen.ActivityScreen`:
  header and tabs), a person's session calls on the session thread
  (:class:`~gui.widgets.screen.SessionCalls`) and scrolled areas;
* ``run_panel.py`` — the model-run panel every activity shares
  (:class:`~gui.widgets.run_panel.RunPanel`: settings, progress, live answers, summary);
* ``exam_practice.py`` and ``exam_report.py`` — a person's exam session and its report
  (the Exam screen, ``qt_exam.py``, adds the model evaluation);
* ``consult_person.py`` — a person consults the simulated patient (``qt_consult.py`` adds
  the model-vs-model run);
* ``french_practice.py`` and ``french_passages.py`` — a person's French QA session and the
  retrieved passages it shows (``qt_french.py`` adds the model run);
* ``bank_block.py`` and ``bank_marks.py`` — a custom block of questions (pool, subjects,
  difficulty, saved blocks) and the mark, note and why-missed bar of the practice tabs;
* ``qt_notebook.py`` and ``qt_standing.py`` — the Review screen's Notebook and Where I stand;
* ``qt_rate.py`` — a person rates model explanations (Results → Rate explanations);
* ``common.py``, ``charts.py``, ``first_run.py`` — the small shared widgets, the charts and
  the note shown on the first start.
"""
