"""The Review screen's Cards tab, a card browser: search, suspend (the due count drops),
unsuspend, reset and a note edited, as a person does it."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from engine.bank.notebook import entry
from engine.exam.dataset import ensure_sample
from engine.review import due_cards
from tests.test_review_gui import missed_two

pytestmark = pytest.mark.gui


def click(qtbot, widget):
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def test_browse_search_suspend_reset_and_note(qtbot, window):
    store = window.ctx.store
    asked = missed_two(store)
    dataset = ensure_sample(store)
    r = window.go("review")
    r.tabs.setCurrentWidget(r.cards)
    c = r.cards
    assert c.model.rowCount() == 3 and c.count.text() == "3 cards"
    assert not c.suspend_button.isEnabled()  # nothing selected

    c.search.setText(asked[2]["question"][:4])  # Chinese: QTest types ASCII only
    assert c.model.rowCount() == 1 and c.model.rows[0]["row"].card.item_key == str(asked[2]["id"])
    c.table.selectRow(0)
    assert c.suspend_button.isEnabled() and c.suspend_button.text() == "Suspend"
    click(qtbot, c.suspend_button)
    assert c.suspend_button.text() == "Unsuspend"
    assert c.model.data(c.model.index(0, 3)) == "suspended"
    assert [k.item_key for k in due_cards(store, "default")] == [str(asked[0]["id"])]
    r.tabs.setCurrentIndex(0)
    assert r.due_label.text() == "1 due now"  # the suspended one is not due
    r.tabs.setCurrentWidget(r.cards)
    click(qtbot, c.suspend_button)  # unsuspended
    assert len(due_cards(store, "default")) == 2

    c.search.clear()
    right = next(
        i for i, x in enumerate(c.model.rows) if x["row"].card.reps and x["row"].card.last_correct
    )
    c.table.selectRow(right)
    click(qtbot, c.reset_button)  # the one known: new again, due now
    assert len(due_cards(store, "default")) == 3
    assert c.selected() is not None and c.selected().card.reps == 0

    c.set_note("Pregnancy: no ACE inhibitors")
    key = c.selected().card.item_key
    assert entry(store, "default", dataset, key).note == "Pregnancy: no ACE inhibitors"
    qtbot.keyClicks(c.search, "ace INHIBITORS")
    assert [x["row"].card.item_key for x in c.model.rows] == [key]
