"""Load settings as arguments (:mod:`engine.models.load`): everything a model load needs
(context, threads, GPU layers, slots, flash attention) is one object passed from the command
line, the app or an experiment down to the pool, which keeps one model per name and load
settings, and each run stores its own; no module global holds a setting."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.exam.dataset import ensure_sample
from engine.exam.runner import ExamSettings, run_exam
from engine.models.load import LoadSettings, LoadSettingsError
from engine.models.pool import ModelPool
from engine.store.store import Store

ENGINE = Path(__file__).resolve().parent.parent / "engine"
#: The ``global`` statements engine/ may hold: none of them a setting (the process's pool,
#: the registries' flags that their built-in modules were imported).
NOT_SETTINGS = {
    ("models/pool.py", "_default"),
    ("registry.py", "_loaded"),
    ("registry.py", "_loading"),
}


def test_no_global_statement_in_engine_sets_a_setting():
    found = set()
    for path in ENGINE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Global):
                where = path.relative_to(ENGINE).as_posix()
                found |= {(where, name) for name in node.names}
    assert found <= NOT_SETTINGS, found - NOT_SETTINGS


def test_load_settings_are_checked_stored_and_laid_over_each_other():
    given = LoadSettings(n_ctx=8192, slots=2)
    assert given.as_dict() == {"n_ctx": 8192, "slots": 2}
    assert LoadSettings.from_dict(json.loads(json.dumps(given.as_dict()))) == given
    assert LoadSettings().kwargs() == {"n_ctx": 4096}  # the default context
    assert LoadSettings(threads=2, gpu_layers=0, flash_attn=True).kwargs() == {
        "n_ctx": 4096, "n_threads": 2, "n_gpu_layers": 0, "flash_attn": True
    }  # fmt: skip
    assert LoadSettings(slots=3).over(given) == LoadSettings(n_ctx=8192, slots=3)
    for bad in ({"slots": 0}, {"slots": 65}, {"gpu_layers": -2}, {"n_ctx": "big"}):
        with pytest.raises(LoadSettingsError):
            LoadSettings(**bad)
    with pytest.raises(LoadSettingsError, match="unknown load setting"):
        LoadSettings.from_dict({"context": 4096})


@pytest.mark.slow
def test_two_runs_in_one_process_each_load_their_own_context(db_path):
    store = Store(db_path)
    dataset = ensure_sample(store)
    pool = ModelPool(cores=1, machine_wide=False)
    exam = ExamSettings(model="smollm2", method="logprob", limit=1)
    try:
        short = run_exam(store, dataset, exam, pool=pool, load=LoadSettings(n_ctx=1024, slots=1))
        long = run_exam(store, dataset, exam, pool=pool, load=LoadSettings(n_ctx=2048, slots=1))
        loaded = {json.dumps(m["load"]): m["state"] for m in pool.status()}
        assert loaded == {'{"n_ctx": 1024, "slots": 1}': "ready",
                          '{"n_ctx": 2048, "slots": 1}': "ready"}  # fmt: skip
        for n_ctx in (1024, 2048):  # each still loaded as its run left it
            with pool.lease("smollm2", LoadSettings(n_ctx=n_ctx, slots=1)) as model:
                assert model.info["n_ctx"] == n_ctx
        assert len(pool.status()) == 2
        stored = [store.run(s["run_id"])["settings"]["load"] for s in (short, long)]
        assert stored == [{"n_ctx": 1024, "slots": 1}, {"n_ctx": 2048, "slots": 1}]
        assert short["accuracy"] == long["accuracy"]  # the same numbers
    finally:
        pool.close()
        store.close()


@pytest.mark.slow
def test_the_command_line_passes_its_load_settings_to_the_run(db_path, monkeypatch):
    from engine.models import pool

    fresh = ModelPool(cores=1, machine_wide=False)
    monkeypatch.setattr(pool, "_default", fresh)
    try:
        out = CliRunner().invoke(cli, ["--db", db_path, "exam", "run", "--model", "smollm2",
                                       "--method", "logprob", "--limit", "1", "--n-ctx", "1024",
                                       "--slots", "1", "--json"])  # fmt: skip
        assert out.exit_code == 0, out.output
        store = Store(db_path)
        (row,) = store.runs()
        assert row["settings"]["load"] == {"n_ctx": 1024, "slots": 1}
        assert fresh.status()[0]["load"] == {"n_ctx": 1024, "slots": 1}
        store.close()
    finally:
        fresh.close()
