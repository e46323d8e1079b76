"""One label per metric: a metric's label is on its scorer's declaration, and no activity
labels a key its scorers give as a metric; the activity labels only the other entries of its
summary (sections, settings)."""

from __future__ import annotations

import pytest

from engine.activities import COMMON_LABELS, activities, metric_label
from engine.core.scoring import scorers


@pytest.mark.parametrize("activity_id", ["exam", "french", "consult"])
def test_every_metric_is_labelled_once_by_its_scorer(activity_id: str) -> None:
    act = activities()[activity_id]
    for s in scorers(activity_id).values():
        for key, m in s.metrics.items():
            assert m.label, f"{s.name}'s metric {key} has no label"
            assert key not in act.labels, f"{key} is labelled by {activity_id} and {s.name}"
            assert key not in COMMON_LABELS, f"{key} is labelled twice"
            assert metric_label(key, activity_id) == m.label


def test_sections_keep_the_activity_labels() -> None:
    assert metric_label("calibration.ece", "exam") == "Calibration error (ECE)"
    assert metric_label("by_share", "consult") == "Answered after each share of the questions"
    assert metric_label("hamming") == "Hamming score (%)"  # a metric, any activity's
    assert metric_label("leakage", "consult") == "Leakage (%)"
