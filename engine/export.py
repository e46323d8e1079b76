"""Reading runs back out: a headline score, a full detail view, CSV and JSON exports."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from engine.store import Store

# The summary key that best sums up a run, by activity.
HEADLINE_KEYS = {"exam": "accuracy", "french": "hamming", "consult": "accuracy"}


def headline_value(run: dict[str, Any]) -> float | None:
    """The run's main score (accuracy, Hamming score…) in percent, if it has one."""
    summary = run.get("summary") or {}
    # A person's session counts unanswered questions as wrong: its "score", not the accuracy
    # over the questions answered, is what it earned.
    first = "score" if run.get("runner") == "person" else ""
    for key in (
        first,
        HEADLINE_KEYS.get(run.get("activity", ""), ""),
        "accuracy",
        "hamming",
        "score",
    ):
        value = summary.get(key)
        if isinstance(value, int | float):
            return float(value)
    return None


def headline(run: dict[str, Any]) -> str:
    value = headline_value(run)
    return "" if value is None else f"{value:.1f}"


def run_detail(store: Store, run_id: int) -> dict[str, Any]:
    """A run with its answers and consultation turns."""
    return {
        "run": store.run(run_id),
        "answers": store.answers(run_id),
        "turns": store.turns(run_id),
    }


ANSWER_COLUMNS = [
    "item_key",
    "chosen",
    "gold",
    "correct",
    "response",
    "latency_s",
    "prompt_tokens",
    "completion_tokens",
    "scores",
    "extra",
    "created",
]


def export_run(store: Store, run_id: int, fmt: str) -> str:
    """A run as JSON (run, answers, turns) or CSV (one row per answer, JSON-valued columns
    as JSON text)."""
    detail = run_detail(store, run_id)
    if fmt == "json":
        return json.dumps(detail, ensure_ascii=False, indent=2) + "\n"
    if fmt != "csv":
        raise ValueError(f"unknown export format {fmt!r} (csv or json)")
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["run_id", *ANSWER_COLUMNS])
    for a in detail["answers"]:
        writer.writerow(
            [run_id]
            + [
                json.dumps(a[c], ensure_ascii=False) if isinstance(a[c], dict | list) else a[c]
                for c in ANSWER_COLUMNS
            ]
        )
    return out.getvalue()
