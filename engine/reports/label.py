"""A run's short label: the settings that tell it apart from the other runs of its activity.

The CLI (``runs list``, ``report``), the desktop app's Results table and the exports all
name runs with :func:`run_label`, so one run reads the same everywhere.

>>> run_label({"activity": "exam", "runner": "model", "model": "smollm2",
...            "settings": {"method": "logprob", "shots": 4, "lang": "zh", "instruction": True}})
'logprob · 4-shot · zh · instr'
>>> run_label({"activity": "french", "runner": "model", "model": "smollm2",
...            "settings": {"index": "cours-hybrid", "retriever": "hybrid", "k": 1,
...                         "corpus": "cours"}})
'hybrid k=1 · cours'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.types import Row

SEP = " · "


def run_label(run: Row) -> str:
    """The settings that tell ``run`` (a stored run row) apart, in a few words, as its
    activity words them (``Activity.run_label``): the method, examples, prompt language and
    instruction of an exam; the doctor, patient and solver of a consultation; the
    retriever, k and corpus of French QA. A person's session starts with ``you``."""
    from engine.activities import activities

    person = run.get("runner") == "person"
    found = activities().get(str(run.get("activity")))
    words = found.run_label.load() if found is not None and found.run_label else None
    parts: list[str] = list(words(run)) if words is not None else []
    if person and parts[:1] != ["you"]:
        parts.insert(0, "you")
    return SEP.join(parts)


def label_matches(run: Row, text: str) -> bool:
    """Whether ``text`` (any case) appears in the run's label, model, data set or status."""
    needle = text.strip().lower()
    fields = (run_label(run), run.get("model"), run.get("dataset"), run.get("status"))
    hay = SEP.join(str(f or "") for f in fields)
    return needle in hay.lower()
