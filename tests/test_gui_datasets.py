"""Data set pickers open on the last imported data set of their kind, or on the one the
person picked after it (no model runs)."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.gui


def _copy(store, sample: str, name: str) -> None:
    """Store ``sample``'s items again as data set ``name``, as an import would."""
    activity = next(d["activity"] for d in store.datasets() if d["name"] == sample)
    store.add_dataset(name, activity, store.items(sample), source=f"{name}.json")


def _pick(picker, name: str) -> None:
    """Choose ``name`` in the picker as a person does (an ``activated`` combo box)."""
    i = picker.combo.findData(name)
    picker.combo.setCurrentIndex(i)
    picker.combo.activated.emit(i)


@pytest.mark.parametrize(
    ("screen", "panel", "sample"),
    [
        ("consult", "person", "cases-sample"),
        ("consult", "models", "cases-sample"),
        ("exam", "evaluation", "explaincpe-sample"),
        ("french", "runs", "frenchmedmcqa-sample"),
    ],
)
def test_a_picker_opens_on_the_last_imported_set(qtbot, window, screen, panel, sample):
    picker = getattr(window.go(screen), panel).dataset  # the screen writes its sample
    qtbot.waitUntil(lambda: picker.combo.findData(sample) >= 0, timeout=60_000)
    store = window.ctx.store
    _copy(store, sample, "aa-older")
    _copy(store, sample, "zz-newer")  # imported last, listed last
    window.ctx.notify_data()  # as the import dialog does
    assert picker.name == "zz-newer"
    again = type(picker)(window.ctx, picker.activity, remember=picker.remember)
    assert again.name == "zz-newer"  # and so it opens next time


def test_a_pick_is_kept_until_the_next_import(window):
    picker = window.go("consult").person.dataset
    store = window.ctx.store
    _copy(store, "cases-sample", "aa-older")
    _copy(store, "cases-sample", "zz-newer")
    window.ctx.notify_data()
    _pick(picker, "aa-older")
    window.ctx.notify_data()  # something else changed: the pick stays
    assert picker.name == "aa-older"
    again = type(picker)(window.ctx, "consult", remember="consult")  # the app opened again
    assert again.name == "aa-older"
    time.sleep(1.1)  # the times are kept to the second
    _copy(store, "cases-sample", "mm-latest")
    window.ctx.notify_data()  # an import after the pick: open on it
    assert picker.name == again.name == "mm-latest"


def test_the_fact_legend_explains_its_marks_and_labels_keep_their_unit(window):
    from engine.consult.cases.cases import Case

    p = window.go("consult").person.part.result_card
    case = Case.from_dict(window.ctx.store.items("cases-sample")[0])
    p.show_facts(case, [], {"patient_recall": 0.5, "doctor_recall": 0.25})
    marks = {p.facts.data(p.facts.index(r, 0)) for r in range(p.facts.rowCount())}
    assert marks == {"○"}  # nothing told
    assert "○ not told" in p.facts_note.text() and "·" not in p.facts_note.text()
    assert "recall,&nbsp;%)" in p.overlap.text() and "recall, %)" not in p.overlap.text()
