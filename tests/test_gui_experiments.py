"""The Experiments screen: an experiment stopped midway is listed with its runs and their
status, its tables and Figure 3; Go on plays the rest of it in the app (the model scripted,
named in the test's own catalog) and the screen then shows it finished; its report is saved."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt

from engine.core.progress import Cancel
from engine.exam.dataset import ensure_sample
from engine.experiments.plan import make_plan
from engine.experiments.run import open_experiment, run_experiment
from engine.models.scripted import ScriptedModel

pytestmark = pytest.mark.gui


def test_an_experiment_shows_its_runs_tables_and_figure_and_goes_on_in_the_app(
    window, qtbot, home, scripted_pool, tmp_path
):
    (home / "models.json").write_text(json.dumps({"quick": {"backend": "scripted",
                                                            "replies": "答案：B"}}))  # fmt: skip
    store = window.ctx.store
    dataset = ensure_sample(store)
    experiment_id, _ = open_experiment(
        store, make_plan(store, "explaincpe-table8", ["quick"], dataset, limit=2)
    )
    cancel = Cancel()

    def stop_after_two_runs(p):
        if p.info.get("cell", 0) >= 3:
            cancel.set()

    pool = scripted_pool(ScriptedModel("quick", replies="答案：B"))
    run_experiment(store, experiment_id, pool=pool, progress=stop_after_two_runs, cancel=cancel)

    screen = window.go("experiments")
    top = screen.tree.topLevelItem(0)
    assert top.text(0) == f"#{experiment_id} explaincpe-table8"
    assert top.text(2) == "cancelled" and top.childCount() == 8
    assert [top.child(i).text(2) for i in range(3)] == ["finished", "finished", "cancelled"]
    assert "ExplainCPE Table 8" in screen.view.toHtml()
    assert not screen.figure.pixmap().isNull()
    assert screen.go_button.isEnabled()

    qtbot.mouseClick(screen.go_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: screen.job is None, timeout=60_000)

    top = screen.tree.topLevelItem(0)
    assert top.text(2) == "finished"
    assert {top.child(i).text(2).split(" ")[0] for i in range(8)} == {"finished"}
    assert not screen.go_button.isEnabled()
    saved = screen.save_report(str(tmp_path / "experiment.html"))
    page = (tmp_path / "experiment.html").read_text(encoding="utf-8")
    assert saved and "ExplainCPE Figure 3" in page and "<svg" in page
