"""The French QA screen and its parts.

* ``screen.py`` — the screen (:class:`~gui.french.screen.FrenchScreen`: practice and model
  runs), named by French QA's descriptor (``engine/french/activity.py``);
* ``item.py`` — French QA's item widget in the one practice panel
  (:class:`~gui.widgets.practice.PracticePanel`): a person's session with the passages beside
  each question; ``passages.py`` — the retrieved passages it shows and the corpus, retriever
  and k controls both tabs use.
"""
