"""An experiment's plan is capped (:data:`engine.experiments.plan.MAX_CELLS` runs, refused in
one line before any cell is made: a 759-byte file once asked for 160,000 runs and never
finished planning), and planning takes time in step with its cells: what each cell looks up
(the data set, the runs it could reuse, its model's pace) is looked up once per plan."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from engine.exam.dataset import ensure_sample
from engine.experiments.plan import MAX_CELLS, PlanError, make_plan
from engine.store.store import Store


@pytest.fixture
def catalog(home: Path) -> Path:
    (home / "models.json").write_text(json.dumps({"scripted": {"backend": "scripted"}}))
    return home


def _grid(tmp_path: Path, lines: str) -> str:
    path = tmp_path / "grid.toml"
    path.write_text(f'activity = "exam"\nmodels = ["scripted"]\nlimit = 2\n{lines}')
    return str(path)


@pytest.mark.parametrize(
    ("lines", "trials", "said"),
    [
        (f"[grid]\nseed = {list(range(400))}\nmax_tokens = {list(range(1, 401))}\n", None,
         "this experiment asks for 160,000 runs; the most one plans is 10,000 "
         "(fewer models, [grid] values or trials)"),
        (f"[settings]\ntemperature = 0.7\n[grid]\nseed = {list(range(4000))}\n", 3,
         "this experiment asks for 4,000 runs × 3 trials = 12,000 runs; the most one plans"),
    ],
    ids=["grid", "grid-times-trials"],
)  # fmt: skip
def test_a_plan_of_more_runs_than_the_cap_is_refused_in_a_line_before_any_is_made(
    store, catalog, tmp_path, lines, trials, said
):
    dataset = ensure_sample(store)
    path = _grid(tmp_path, lines)
    started = time.perf_counter()

    with pytest.raises(PlanError) as refused:
        make_plan(store, path, None, dataset, trials=trials)

    assert str(refused.value).startswith(said) and "\n" not in str(refused.value)
    assert time.perf_counter() - started < 10  # refused, not planned
    assert MAX_CELLS == 10_000


def test_planning_looks_up_the_data_set_runs_and_paces_once_however_many_cells(
    store, catalog, tmp_path, monkeypatch
):
    dataset = ensure_sample(store)
    calls = {"runs": 0, "dataset": 0}
    for name in calls:
        real = getattr(Store, name)

        def counted(self, *args, _real=real, _name=name, **kw):
            calls[_name] += 1
            return _real(self, *args, **kw)

        monkeypatch.setattr(Store, name, counted)
    found = []
    for n in (10, 1000):
        calls.update(runs=0, dataset=0)
        plan = make_plan(
            store, _grid(tmp_path, f"[grid]\nseed = {list(range(n))}\n"), None, dataset
        )
        assert len(plan.cells) == n and len(plan.to_play()) == n
        found.append(dict(calls))

    assert found[0] == found[1]  # none of them per cell
