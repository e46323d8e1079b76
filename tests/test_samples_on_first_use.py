"""The samples medexam ships need no import step: a data set named as a sample is there the
first time anything asks for it (a run, a plan, the store), on a fresh database; and a paper's
preset runs on its split's usual name when no data set is given, or says how to import it."""

from __future__ import annotations

from click.testing import CliRunner

from engine.cli import cli
from engine.exam.dataset import import_file, sample_path
from engine.store.store import Store


def test_each_sample_is_there_when_first_asked_for(tmp_path):
    store = Store(tmp_path / "fresh.db")
    try:
        assert store.datasets() == []
        for name, activity in (("explaincpe-sample", "exam"), ("cases-sample", "consult"),
                               ("frenchmedmcqa-sample", "french")):  # fmt: skip
            assert store.dataset(name)["activity"] == activity
            assert store.items(name)
        assert "french-sample" in {c["name"] for c in store.corpora()}  # its passages too
        assert "no data set named 'cpe-test'" in _error(lambda: store.dataset("cpe-test"))
    finally:
        store.close()


def _error(call) -> str:
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - what it says
        return str(exc)
    raise AssertionError("no error")


def _plan(db, *args: str):
    return CliRunner().invoke(
        cli, ["--db", str(db), "experiment", "plan", "explaincpe-table8", "--models", "smollm2",
              "--limit", "2", *args])  # fmt: skip


def test_a_plan_on_a_sample_of_a_fresh_database(tmp_path):
    out = _plan(tmp_path / "fresh.db", "--dataset", "explaincpe-sample")
    assert out.exit_code == 0, out.output
    assert "8 runs of explaincpe-sample" in out.output


def test_a_preset_without_a_data_set_runs_on_its_splits_usual_name(tmp_path):
    db = tmp_path / "fresh.db"
    out = _plan(db)
    assert out.exit_code == 1 and out.output.count("\n") == 1
    assert out.output.startswith("Error: explaincpe-table8 runs on 'cpe-test' (or --dataset NAME)")
    assert "medexam import explaincpe test.json --name cpe-test" in out.output
    store = Store(db)
    import_file(store, sample_path(), "explaincpe", "cpe-test")
    store.close()
    out = _plan(db)
    assert out.exit_code == 0 and "8 runs of cpe-test" in out.output, out.output
