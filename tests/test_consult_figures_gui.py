"""The Experiments screen shows a ``consult-table2`` experiment's Table 3 and its three
figures (5, 6 and 7), one under the other. The models are scripted."""

from __future__ import annotations

import json

import pytest

from engine.consult.cases.cases import ensure_sample
from engine.experiments.plan import make_plan
from engine.experiments.run import open_experiment, run_experiment
from engine.models.scripted import ScriptedModel

pytestmark = pytest.mark.gui


def test_the_screen_shows_table_3_and_figures_5_6_and_7(window, home, scripted_pool):
    (home / "models.json").write_text(json.dumps({"doc": {"backend": "scripted"}}))
    store = window.ctx.store
    dataset = ensure_sample(store)
    doctor = ScriptedModel("doc", replies=["Where does it hurt?", "Any fever?", "I have enough."])
    pool = scripted_pool(ScriptedModel("smollm2", replies="It hurts here. B"), doctor)
    experiment_id, _ = open_experiment(
        store, make_plan(store, "consult-table2", ["doc"], dataset, limit=1)
    )
    assert run_experiment(store, experiment_id, pool=pool)["status"] == "finished"

    screen = window.go("experiments")

    assert "Consultation Table 3: question diversity" in screen.view.toHtml()
    shown = [label for label in screen.figures if not label.isHidden()]
    assert len(shown) == 3 and all(not label.pixmap().isNull() for label in shown)
    assert shown[0].pixmap().width() > shown[0].pixmap().height()  # three panels side by side
