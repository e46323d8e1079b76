"""The turn budget: how accuracy and what the patient revealed grow with the number of
questions a doctor may ask (AgentClinic saw accuracy fall sharply from 20 to 10 turns).
:func:`turn_budget` plays the same settings at each budget — reusing a finished run of those
settings and that budget when there is one — and :func:`budget_groups` finds the runs that
differ only in their budget (the report lays each group out as a table and a chart:
:func:`engine.consult.report.section.budget_tables`).

>>> rows = turn_budget(store, "osce", {"doctor": "model"}, [1, 2, 4, 8])       # doctest: +SKIP
>>> [(r["turns"], r["accuracy"]) for r in rows]                                # doctest: +SKIP
[(1, 30.0), (2, 35.0), (4, 40.0), (8, 45.0)]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from engine.consult.settings import MAX_TURNS, consult_settings
from engine.errors import UserError

if TYPE_CHECKING:
    from engine.store.store import Store
    from engine.types import JSONDict, Row

#: Settings that do not make two runs different experiments.
FREE = ("max_turns", "concurrency", "limit", "trial", "trials", "trial_set")
KEYS = ("accuracy", "patient_recall", "patient_f1", "avg_turns")


class BudgetError(UserError):
    """Budgets that cannot be played (none, or not whole numbers of at least one)."""


def questions_allowed(turns: object) -> str:
    """A budget in words: ``"1 question"``, ``"3 questions"``."""
    return f"{turns} question{'' if turns == 1 else 's'}"


def parse_turns(text: str) -> list[int]:
    """``"1,2,4,8"`` → ``[1, 2, 4, 8]`` (sorted, each once; each 1 to :data:`MAX_TURNS`)."""
    try:
        found = sorted({int(t) for t in text.replace(" ", "").split(",") if t})
    except ValueError:
        raise BudgetError(
            f"--turns takes whole numbers separated by commas (got {text!r})"
        ) from None
    if not found or found[0] < 1:
        raise BudgetError("--turns takes at least one budget, each of at least 1 question")
    if found[-1] > MAX_TURNS:
        raise BudgetError(f"--turns: a budget is at most {MAX_TURNS} questions (got {found[-1]})")
    return found


def _same(a: JSONDict, b: JSONDict) -> bool:
    keys = (set(a) | set(b)) - set(FREE)
    return all(a.get(k) == b.get(k) for k in keys)


def finished_run(
    store: Store, dataset: str, settings: JSONDict, turns: int, limit: int | None
) -> Row | None:
    """A finished consultation run of ``dataset`` with these settings (the run may hold
    more, derived from them), this budget and as many cases (None when there is none)."""
    for run in store.runs("consult"):
        s = run.get("settings") or {}
        if (
            run["status"] == "finished"
            and run["dataset"] == dataset
            and s.get("max_turns") == turns
            and s.get("limit") == limit
            and not s.get("trial_set")
            and all(k in FREE or s.get(k) == v for k, v in settings.items())
        ):
            return run
    return None


def turn_budget(
    store: Store,
    dataset: str,
    settings: JSONDict,
    turns: Sequence[int],
    *,
    on_budget: Callable[[int], None] | None = None,
    **options: Any,
) -> list[JSONDict]:
    """Play ``settings`` over ``dataset`` at each budget of ``turns`` (the doctor's
    ``max_turns``); a finished run of the same settings and budget is reused. One row per
    budget: ``turns``, ``run_id``, ``reused``, the run's ``status`` and :data:`KEYS`.
    ``options`` are :func:`engine.core.runs.run`'s; a run that does not finish stops the budget."""
    from engine.core.runs import run

    full = consult_settings(settings)
    rows: list[JSONDict] = []
    for t in turns:
        if on_budget is not None:
            on_budget(t)
        found = finished_run(store, dataset, full, t, full.get("limit"))
        if found is not None:
            summary, reused = (
                {**(found.get("summary") or {}), "run_id": found["id"], "status": "finished"},
                True,
            )
        else:
            summary, reused = (
                run(store, "consult", dataset, {**settings, "max_turns": t}, **options),
                False,
            )
        rows.append(
            {
                "turns": t,
                "run_id": summary["run_id"],
                "reused": reused,
                "status": summary.get("status"),
                **{k: summary.get(k) for k in KEYS},
            }
        )
        if summary.get("status") != "finished":
            break
    return rows


def budget_groups(runs: Sequence[Row]) -> list[list[Row]]:
    """Runs that differ only in their budget (at least two budgets), by budget."""
    groups: list[list[Row]] = []
    for run in runs:
        s = run.get("settings") or {}
        if run.get("runner") != "model" or s.get("trial_set"):
            continue
        for g in groups:
            first = g[0]
            if first["dataset"] == run["dataset"] and _same(first.get("settings") or {}, s):
                g.append(run)
                break
        else:
            groups.append([run])
    out = []
    for g in groups:
        if len({(r.get("settings") or {}).get("max_turns") for r in g}) >= 2:
            out.append(sorted(g, key=lambda r: (r.get("settings") or {}).get("max_turns") or 0))
    return out
