"""Real runs of every activity for the report and export tests (import into a test module:
``runs = report_fixtures.runs``). Made once per module with the embedded model, a few items
each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import engine.paths
from engine.consult.cases.cases import ensure_sample as consult_sample
from engine.core.runs import run
from engine.exam.dataset import ensure_sample as exam_sample
from engine.french.dataset import ensure_sample as french_sample
from engine.store.store import Store

#: name → (activity, settings); the data sets are the shipped samples.
RUNS: dict[str, tuple[str, dict[str, Any]]] = {
    "logprob": ("exam", {"model": "smollm2", "method": "logprob", "limit": 3}),
    "logprob-1shot": ("exam", {"model": "smollm2", "method": "logprob", "limit": 3, "shots": 1}),
    "generate": ("exam", {"model": "smollm2", "method": "generate", "limit": 2, "max_tokens": 24}),
    "upper": ("consult", {"doctor": "upper", "limit": 1}),
    "lower": ("consult", {"doctor": "lower", "limit": 1}),
    "doctor": ("consult", {"doctor": "smollm2", "limit": 1, "max_turns": 1}),
    "french": ("french", {"model": "smollm2", "limit": 2}),
    "french-bm25": ("french", {"model": "smollm2", "limit": 2, "index": "french-sample-bm25"}),
}


def make_runs(store: Store, names: list[str], indexes: Path) -> dict[str, int]:
    """Run ``names`` (keys of :data:`RUNS`) on the samples, all at once (each in its own
    thread with its own connection, as an experiment's lanes play: the model decodes their
    questions together); their run ids by name."""
    from concurrent.futures import ThreadPoolExecutor

    datasets = {"exam": exam_sample(store), "consult": consult_sample(store)}
    french = french_sample(store)
    datasets["french"] = french["dataset"]
    if any(RUNS[name][1].get("index") for name in names):
        from engine.french.index import build_index

        indexes.mkdir(exist_ok=True)
        engine.paths.indexes_dir = lambda: indexes
        build_index(store, french["corpus"], "bm25")

    def play(name: str) -> int:
        activity, settings = RUNS[name]
        own = Store(store.path)
        try:
            summary = run(own, activity, datasets[activity], settings)
        finally:
            own.close()
        assert summary["status"] == "finished", summary.get("error")
        return summary["run_id"]

    with ThreadPoolExecutor(len(names), thread_name_prefix="report-run") as workers:
        return dict(zip(names, workers.map(play, names), strict=True))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, chat_model: Any) -> tuple[Store, dict]:
    """A store holding one finished run of each of :data:`RUNS`; ``(store, ids by name)``."""
    folder = tmp_path_factory.mktemp("report-runs")
    saved = engine.paths.indexes_dir
    store = Store(folder / "medexam.db")
    try:
        ids = make_runs(store, list(RUNS), folder / "indexes")
    finally:
        engine.paths.indexes_dir = saved
    yield store, ids
    store.close()
