"""The French QA screen and its parts.

* ``screen.py`` — the screen (:class:`~gui.french.screen.FrenchScreen`: practice and model
  runs), named by French QA's descriptor (``engine/french/activity.py``);
* ``practice.py`` — a person's French QA session; ``passages.py`` — the retrieved passages
  it shows and the corpus, retriever and k controls both tabs use.
"""
