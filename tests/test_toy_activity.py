"""A fourth activity defined here and registered, with no edit anywhere else: it is listed,
run, scored again, reported, imported and shown in the Results screen like medexam's own."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import pytest
from click.testing import CliRunner

from engine.activities import Activity
from engine.cli import cli
from engine.importers import Request, register
from engine.registry import register_activity, unregister_activity
from engine.runs import Job, Spec, run
from engine.scoring import Scored, counts, scorer
from engine.store import Store

TOY = Activity(
    "toy",
    "Sums",
    "accuracy",
    "sum",
    {"accuracy": "Sums right (%)"},
    ("accuracy", "answered"),
    spec=f"{__name__}:SPEC",
    settings=f"{__name__}:ToySettings",
    scorers=("toy.exact",),
    scorers_from=(__name__,),
    import_title="Sums to do",
    report=f"{__name__}:section",
)


@dataclass
class ToySettings:
    model: str | None = None
    limit: int | None = None


@scorer("toy.exact", activities=("toy",), keys=("correct",))
def exact(answer, item, context):
    """Whether the reply is the sum."""
    return {"correct": (answer.get("chosen") or "").strip() == str(item["answer"])}


class ToyJob(Job):
    def __init__(self, store, dataset, settings, pool):
        super().__init__()
        self.items = store.items(dataset, limit=settings["limit"])
        self.model = self.lease(pool, settings["model"])
        self.model_label, self.settings = self.model.name, settings

    def answer(self, item, position):
        reply = self.model.chat([{"role": "user", "content": f"{item['question']} = ?"}]).text
        return {"response": reply, "chosen": reply.strip(), "gold": str(item["answer"])}


def _settings(given):
    return asdict(ToySettings(**{k: v for k, v in given.items() if k in ("model", "limit")}))


def _summary(store, run_id):
    return counts(store.answers(run_id), store.run(run_id)["n_total"])


SPEC = Spec(TOY, _settings, ToyJob, _summary)


def section(store, runs):
    from engine.reports.shapes import table

    rows = [[f"#{r.id}", r.who, r.summary.get("accuracy")] for r in runs]
    return {"tables": [table("Sums", ["Run", "Model", "Right (%)"], rows)], "comparisons": []}


def _import_sums(store: Store, req: Request):
    with open(req.source, encoding="utf-8") as fh:
        items = [json.loads(line) for line in fh if line.strip()]
    store.add_dataset(req.name or req.stem, "toy", items, replace=req.replace)
    return store.dataset(req.name or req.stem)


@pytest.fixture
def toy(tmp_path):
    register_activity(TOY)
    register("toy", "sums", "Sums (JSON Lines)", "Sums (*.jsonl)")(_import_sums)
    path = tmp_path / "sums.jsonl"
    path.write_text("\n".join(json.dumps(s) for s in SUMS) + "\n", encoding="utf-8")
    yield path
    unregister_activity("toy")
    from engine.importers import _REGISTRY

    _REGISTRY.pop(("toy", "sums"), None)


SUMS = [
    {"id": "s1", "question": "2 + 3", "answer": 5},
    {"id": "s2", "question": "4 + 4", "answer": 8},
    {"id": "s3", "question": "1 + 6", "answer": 7},
]


def test_toy_activity_is_listed_run_rescored_and_reported(toy, tmp_path, scripted_pool):
    from engine.importers import import_data
    from engine.models.scripted import ScriptedModel

    store = Store(tmp_path / "m.db")
    assert import_data(store, "toy", "sums", toy, name="sums")["n_items"] == 3
    pool = scripted_pool(ScriptedModel("adder", replies=["5", "9", "7"]))
    summary = run(store, "toy", "sums", {"model": "adder"}, pool=pool)
    assert summary["accuracy"] == round(100 * 2 / 3, 2) and summary["status"] == "finished"
    runner = CliRunner()
    listed = runner.invoke(cli, ["--db", store.path, "runs", "list", "--activity", "toy"])
    assert listed.exit_code == 0 and " toy " in listed.output and "adder" in listed.output
    again = runner.invoke(cli, ["--db", store.path, "rescore", "1", "--force"])
    assert again.exit_code == 0, again.output
    assert "toy.exact: 3 answers scored" in again.output
    report = runner.invoke(cli, ["--db", store.path, "report", "1"])
    assert report.exit_code == 0 and "== Sums ==" in report.output and "66.7" in report.output
    help_text = runner.invoke(cli, ["runs", "list", "--help"]).output
    assert "toy" in help_text
    store.close()


@pytest.mark.gui
def test_toy_activity_shows_in_the_import_dialog_and_the_results_screen(toy, window, qtbot):
    from gui.widgets.qt_import import ImportDialog

    dialog = ImportDialog(window.ctx, "toy", window)
    qtbot.addWidget(dialog)
    assert dialog.kind.currentData() == "toy" and dialog.kind.currentText() == "Sums to do"
    store = window.ctx.store
    store.add_dataset("sums", "toy", SUMS)
    run_id = store.start_run("toy", "sums", "adder", {}, "model", 3)
    right = [Scored("toy.exact", 1, {"correct": True})]
    store.add_answer(run_id, "s1", response="5", chosen="5", gold="5", scores=right)
    store.finish_run(run_id, {"accuracy": 100.0, "answered": 1, "n": 3})
    results = window.go("results")
    names = [results.activity.itemText(i) for i in range(results.activity.count())]
    assert "Sums" in names
    results.activity.setCurrentIndex(names.index("Sums"))
    results.reload()
    assert results.proxy.rowCount() == 1
    results.select_runs([run_id])
    assert "Sums right (%)" in results.summary.toPlainText()
