"""An activity is one package: no shared module names an activity or one of its metric keys,
and every part an activity's descriptor refers to lives in its own packages
(``engine/<activity>/``, ``gui/<activity>/``). The few shared modules allowed to name them are
listed below, each with why; the README's architecture section explains the rule."""

from __future__ import annotations

import ast
from pathlib import Path

from engine.activities import _PARTS, activities
from engine.core.scoring import activity_metrics, scorers
from engine.registry import BUILTIN

REPO = Path(__file__).resolve().parents[1]

#: Shared modules allowed to name activities or metric keys, with the names and why.
ALLOWED: dict[str, tuple[set[str], str]] = {
    "engine/store/migrations.py": (
        {
            "exam",
            "french",
            "consult",
            "similarity",
            "hamming",
            "accuracy",
            "rouge1",
            "rouge2",
            "rougeL",
        },
        "past schemas' data and views are history: they name what was stored then",
    ),
    "engine/text/rouge.py": (
        {"rouge1", "rouge2", "rougeL"},
        "ROUGE's own names for its measures, which the scorers of two activities report",
    ),
}


def _builtin_ids() -> set[str]:
    return {module.split(".")[1] for module in BUILTIN}


def _names() -> set[str]:
    names = set(_builtin_ids())
    for activity_id in _builtin_ids():
        names |= set(activity_metrics(activity_id))
        for s in scorers(activity_id).values():
            names |= set(s.metrics)
    return names


def _shared_modules() -> list[Path]:
    own = {f"{top}/{a}" for top in ("engine", "gui") for a in _builtin_ids()}
    found = []
    for top in ("engine", "gui"):
        for path in sorted((REPO / top).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if not any(rel.startswith(p + "/") for p in own):
                found.append(path)
    return found


def test_no_shared_module_names_an_activity_or_its_metric_keys() -> None:
    names = _names()
    found = []
    for path in _shared_modules():
        rel = path.relative_to(REPO).as_posix()
        allowed = ALLOWED.get(rel, (set(), ""))[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in names - allowed:
                found.append(f"{rel}:{node.lineno} {node.value!r}")
    assert not found, f"{len(found)} names in shared modules:\n" + "\n".join(found)


def test_every_part_of_an_activity_lives_in_its_packages() -> None:
    outside = []
    for activity_id in sorted(_builtin_ids()):
        found = activities()[activity_id]
        parts = [(n, getattr(found, n)) for n in _PARTS]
        parts += [(f"import {k}", v) for k, v in found.import_commands.items()]
        for name, part in parts:
            if part is None:
                continue
            module = part.module
            if not module.startswith((f"engine.{activity_id}.", f"gui.{activity_id}.")):
                outside.append(f"{activity_id}.{name}: {module}")
    assert not outside, "parts outside their activity's packages:\n" + "\n".join(outside)
