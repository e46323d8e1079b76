"""One module per shared screen (``qt_<screen>.py``) and the parts every screen is built from
(an activity's own screen lives in its package, ``gui/<activity>/``).

* ``screen.py`` — an activity screen's frame (:class:`~gui.widgets.screen.ActivityScreen`:
  header and tabs), a person's session calls on the session thread
  (:class:`~gui.widgets.screen.SessionCalls`) and scrolled areas;
* ``practice.py`` — the one panel a person practises in
  (:class:`~gui.widgets.practice.PracticePanel`: setup, question and results pages, Start,
  Go on, the question grid, ending) with the activity's item widget, and ``asking.py``, how
  it asks a sitting (one question after another by default);
* ``run_panel.py`` — the model-run panel every activity shares
  (:class:`~gui.widgets.run_panel.RunPanel`: settings, progress, live answers, summary);
* ``bank_block.py`` and ``bank_marks.py`` — a custom block of questions (pool, subjects,
  difficulty, saved blocks) and the mark, note and why-missed bar of the practice tabs;
* ``qt_notebook.py`` and ``qt_standing.py`` — the Review screen's Notebook and Where I stand;
* ``qt_rate.py`` — a person rates model explanations (Results → Rate explanations);
* ``common.py``, ``charts.py``, ``first_run.py`` — the small shared widgets, the charts and
  the note shown on the first start.
"""
