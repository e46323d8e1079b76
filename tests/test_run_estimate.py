"""How long a model run will take, said before it starts: the items times the seconds per
item of the newest earlier run of the same model and method; the app's model evaluation asks
before a long run and starts with a few questions, not the whole data set."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from engine.core.estimate import Estimate, estimate
from engine.exam.dataset import ensure_sample


def a_timed_run(store, dataset: str, model: str, method: str, seconds: int, n: int) -> int:
    """A finished run of ``n`` answers that took ``seconds`` in all."""
    run_id = store.start_run("exam", dataset, model, {"method": method, "shots": 0}, n_total=n)
    for i in range(n):
        store.add_answer(run_id, f"sample-{i + 1:02d}", response="A", chosen="A", gold="B")
    store.finish_run(run_id, {"accuracy": 0.0})
    finished = f"2026-01-01T10:{seconds // 60:02d}:{seconds % 60:02d}+00:00"
    store.update_run(run_id, started="2026-01-01T10:00:00+00:00", finished=finished)
    return run_id


def test_the_estimate_times_the_items_by_an_earlier_run_of_the_same_model(store):
    dataset = ensure_sample(store)  # 14 questions
    generate = a_timed_run(store, dataset, "smollm2", "generate", 270, 10)  # 27 s each
    a_timed_run(store, dataset, "smollm2", "logprob", 10, 10)  # another method: 1 s each
    settings = {"model": "smollm2", "method": "generate", "shots": 0}
    found = estimate(store, "exam", dataset, settings)
    assert found == Estimate(14, 27.0, generate) and found.seconds == 378
    assert found.text("question") == f"14 questions × 27 s (as run #{generate} took) ≈ 7 min"
    assert estimate(store, "exam", dataset, {**settings, "limit": 5}, trials=3).items == 15
    unknown = estimate(store, "exam", dataset, {**settings, "model": "gemma3-270m"})
    assert unknown.seconds is None and "no earlier run" in unknown.text("question")


def test_a_run_stopped_and_resumed_days_later_is_timed_by_its_answers_not_the_pause(store):
    """Its start and end are a day apart; its ten answers took 10 s each, five on each day."""
    dataset = ensure_sample(store)
    run_id = store.start_run("exam", dataset, "smollm2", {"method": "generate"}, n_total=10)
    for i in range(10):
        key = f"sample-{i + 1:02d}"
        store.add_answer(run_id, key, response="A", chosen="A", gold="B", latency_s=10.0)
        day, second = (1, 10 * (i + 1)) if i < 5 else (2, 10 * (i - 4))
        store.db.execute(
            "UPDATE answers SET created = ? WHERE run_id = ? AND item_key = ?",
            [f"2026-01-0{day}T10:{second // 60:02d}:{second % 60:02d}+00:00", run_id, key],
        )
    store.finish_run(run_id, {"accuracy": 0.0})
    store.update_run(
        run_id, started="2026-01-01T10:00:00+00:00", finished="2026-01-02T10:00:50+00:00"
    )
    found = estimate(store, "exam", dataset, {"model": "smollm2", "method": "generate"})
    assert found == Estimate(14, 10.0, run_id)  # not 14 × 8,645 s (the day between them)


def test_a_run_within_one_second_is_timed_by_its_answers(store):
    """Runs' start and end are stored in whole seconds: a quick run's are the same second,
    and its answers' own times pace it (before: no estimate at all)."""
    dataset = ensure_sample(store)
    run_id = store.start_run("exam", dataset, "smollm2", {"method": "generate"}, n_total=4)
    for i in range(4):
        key = f"sample-{i + 1:02d}"
        store.add_answer(run_id, key, response="A", chosen="A", gold="B", latency_s=0.1)
        store.db.execute(
            "UPDATE answers SET created = ? WHERE run_id = ? AND item_key = ?",
            ["2026-01-01T10:00:00+00:00", run_id, key],
        )
    store.finish_run(run_id, {"accuracy": 0.0})
    moment = "2026-01-01T10:00:00+00:00"
    store.update_run(run_id, started=moment, finished=moment)
    found = estimate(store, "exam", dataset, {"model": "smollm2", "method": "generate"})
    assert found.run_id == run_id and found.seconds_per_item == pytest.approx(0.025)


@pytest.mark.gui
def test_the_app_says_how_long_and_asks_before_a_long_run(qtbot, window, monkeypatch):
    store = window.ctx.store
    dataset = ensure_sample(store)
    ev = window.go("exam").evaluation
    assert ev.limit.value() == 20  # a first run answers a few questions, not all
    earlier = a_timed_run(store, dataset, "smollm2", "generate", 600, 10)  # 60 s a question
    qtbot.waitUntil(lambda: window.ctx.model_list is not None, timeout=60_000)
    ev.dataset.select(dataset)
    ev.fields["model"].setCurrentIndex(ev.fields["model"].findData("smollm2"))
    ev.fields["method"].setCurrentIndex(ev.fields["method"].findData("generate"))
    ev.fields["shots"].setCurrentIndex(ev.fields["shots"].findData(0))
    ev.limit.setValue(0)  # All: 14 questions × 60 s = 14 min
    asked: list[str] = []

    def decline(_parent, _title, text):
        asked.append(text)
        return QMessageBox.StandardButton.No

    monkeypatch.setattr(QMessageBox, "question", decline)
    qtbot.mouseClick(ev.run_button, Qt.MouseButton.LeftButton)
    assert asked and f"14 questions × 60 s (as run #{earlier} took) ≈ 14 min" in asked[0]
    assert ev.job is None and [r["id"] for r in store.runs()] == [earlier]  # not started
