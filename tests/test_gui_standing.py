"""Where a student stands among the real candidates, in the app (issue #46): after a block
on a data set whose questions say how candidates did, the results screen and Review › Where I
stand show the estimated percentile with its interval, how it moved over sessions, and each
question's share of candidates right. The numbers are the engine's
(:func:`engine.exam.candidates.item_standing`, what ``exam take`` prints). No model."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt

from engine.exam.candidates import item_standing, ordinal
from engine.exam.dataset import import_file

pytestmark = [pytest.mark.gui]


def click(qtbot, widget):
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def rated_set(window, tmp_path, n: int = 6) -> list[dict]:
    """A data set whose questions carry the candidates' rates in ``analyse``, as ExplainCPE's
    test split does."""
    rows = [
        {
            "id": i,
            "question": f"Q{i}?",
            "options": ["a", "b", "c", "d", "e"],
            "answer": "B",
            "explanation": "because",
            "analyse": f"本题共被作答{40 + 7 * i}次 正确率{35 + 9 * i}%",
        }
        for i in range(1, n + 1)
    ]
    path = tmp_path / "rated.json"
    path.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    import_file(window.ctx.store, path, name="rated")
    window.ctx.notify_data()
    return window.ctx.store.items("rated")


def block(qtbot, window, dataset: str, rights: list[bool]):
    """A practice block on ``dataset`` in file order, answered right or wrong as told."""
    p = window.go("exam").practice
    p.dataset.select(dataset)
    p.part.mode_practice.setChecked(True)
    p.part.count.setValue(len(rights))
    p.part.in_order.setChecked(True)
    click(qtbot, p.start_button)
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 1 and p.item is not None and not p.busy)
    for i, right in enumerate(rights):
        qtbot.waitUntil(lambda i=i: p.at == i and not p.answered and not p.busy)
        letter = "B" if right else "C"
        click(qtbot, p.options.buttons[letter])
        click(qtbot, p.submit_button)
        qtbot.waitUntil(lambda: p.answered and not p.busy)
        click(qtbot, p.next_button)
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 2 and not p.busy)
    return p


def engine_standing(items: list[dict], rights: list[bool]):
    right = {str(item["id"]) for item, ok in zip(items, rights, strict=False) if ok}
    return item_standing(items[: len(rights)], right)


def test_standing_in_app_results_screen_and_where_i_stand(qtbot, window, tmp_path):
    items = rated_set(window, tmp_path)
    first, second = [True, True, False, True, True, True], [False, False, True, False, True, False]
    p = block(qtbot, window, "rated", first)
    found = engine_standing(items, first)
    card, text = p.part.report.candidates_card, p.part.report.candidates_label.text()
    assert card.isVisible()
    assert f"{ordinal(found.percentile)} percentile</b>" in text
    assert f"(95% interval {found.low:.0f}–{found.high:.0f})" in text
    assert f"candidates {found.candidates:.0f}% on these 6 questions" in text
    assert p.part.result.candidates == found.as_dict()  # what `exam take` prints
    # Each question: the person's ✓ or ✗ beside the share of candidates right.
    assert "1 <b style='color:#15803d'>✓</b> 44%" in text
    assert "3 <b style='color:#b91c1c'>✗</b> 62%" in text
    assert "Your sessions, oldest first: " + ordinal(found.percentile) in text

    p.back_to_setup()
    p = block(qtbot, window, "rated", second)
    moved = engine_standing(items, second)
    assert moved.percentile < found.percentile
    text = p.part.report.candidates_label.text()
    assert f"{ordinal(moved.percentile)} percentile</b>" in text
    said = f"{ordinal(found.percentile)} → {ordinal(moved.percentile)}"
    assert f"Your sessions, oldest first: {said}" in text

    # Results › the run's details say it in words.
    results = window.go("results")
    results.show_run(p.part.result.run_id)
    shown = results.summary.toPlainText()
    assert "Percentile among candidates" in shown and "Candidates: percentile" not in shown

    # Where I stand: by the latest answer to each question (the second block's), and the
    # percentile of each session on the chart beside the score.
    r = window.go("review")
    r.tabs.setCurrentWidget(r.standing)
    st = r.standing
    st.refresh()
    assert st.stack.currentIndex() == 1 and st.among.isVisible()
    assert st.found.candidates == moved.as_dict()
    assert f"{ordinal(moved.percentile)} percentile</b>" in st.among.text()
    assert f"(95% interval {moved.low:.0f}–{moved.high:.0f})" in st.among.text()
    assert said in st.among.text()
    series = {s.name(): s for s in st.trend_view.chart().series() if s.name()}
    ranked = series["Percentile among candidates"]
    points = sorted(ranked.at(i).y() for i in range(ranked.count()))  # both in one second
    assert points == sorted([found.percentile, moved.percentile])
    assert series["Your score"].count() == 2


def test_standing_in_app_says_nothing_without_candidates_rates(qtbot, window, tmp_path):
    p = block(qtbot, window, "explaincpe-sample", [True, False])
    assert p.part.result.candidates is None and not p.part.report.candidates_card.isVisible()
    r = window.go("review")
    r.tabs.setCurrentWidget(r.standing)
    r.standing.refresh()
    assert r.standing.found.candidates is None and not r.standing.among.isVisible()
    assert len(r.standing.trend_view.chart().series()) == 2  # the score's line and dots only


def test_standing_in_app_on_the_explaincpe_test_split(qtbot, window, shared_data):
    store = window.ctx.store
    import_file(store, shared_data / "explaincpe" / "test.json", name="cpe-test")
    window.ctx.notify_data()
    items = store.items("cpe-test")[:5]
    rights = [True, False, True, True, False]
    gold = [item["answer"] for item in items]
    p = window.go("exam").practice
    p.dataset.select("cpe-test")
    p.part.mode_timed.setChecked(True)  # a timed block: the same standing at the end
    p.part.count.setValue(5)
    p.part.in_order.setChecked(True)
    click(qtbot, p.start_button)
    for i, (right, answer) in enumerate(zip(rights, gold, strict=True)):
        qtbot.waitUntil(lambda i=i: p.at == i and not p.busy)
        letter = answer if right else next(x for x in "ABCDE" if x != answer)
        click(qtbot, p.options.buttons[letter])
        click(qtbot, p.submit_button)
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 2 and not p.busy)
    found = engine_standing(items, rights)
    assert found is not None and found.n == 5
    text = p.part.report.candidates_label.text()
    assert f"{ordinal(found.percentile)} percentile</b>" in text
    assert f"(95% interval {found.low:.0f}–{found.high:.0f})" in text
    share = round(100 * items[1]["candidates"]["right"])
    assert f"2 <b style='color:#b91c1c'>✗</b> {share}%" in text


def test_standing_in_app_a_review_places_no_one(qtbot, window, tmp_path):
    """A review goes over questions picked again (the missed ones): no percentile, no
    session in the trend, only each question's share of candidates right."""
    rated_set(window, tmp_path)
    p = block(qtbot, window, "rated", [True, False, True, False])
    click(qtbot, p.part.report.review_button)
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 1 and p.session.mode == "review")
    for _ in range(2):
        qtbot.waitUntil(lambda: p.item is not None and not p.answered and not p.busy)
        click(qtbot, p.options.buttons["B"])
        click(qtbot, p.submit_button)
        qtbot.waitUntil(lambda: p.answered and not p.busy)
        click(qtbot, p.next_button)
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 2 and not p.busy)
    text = p.part.report.candidates_label.text()
    assert "percentile" not in text and "Your sessions" not in text
    assert text.startswith("Candidates right, question by question: <span")


def test_layout_1280_session_charts_have_room_beside_the_result(qtbot, window, tmp_path):
    """At the default window the two charts beside a block's result are wide enough to read
    (the result's four buttons two by two, not in one row that squeezes them)."""
    window.resize(1280, 820)
    rated_set(window, tmp_path)
    p = block(qtbot, window, "rated", [True, False, True])
    report = p.part.report
    qtbot.waitUntil(lambda: report.type_chart is not None and report.type_chart.isVisible())
    assert report.type_chart.width() >= 260 and report.time_chart.width() >= 260
    buttons = (report.review_button, report.review_all, report.review_marked)
    assert all(b.isVisible() and b.width() >= b.sizeHint().width() for b in buttons)
