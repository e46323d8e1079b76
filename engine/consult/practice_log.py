"""A profile's consultation practice: the cases seen, right or not, the facts elicited of
each case's facts, and the facts most often left unasked (the Review screen's practice log,
``medexam stats --activity consult``)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from engine.bank.pools import person_runs
from engine.consult.activity import CONSULT

if TYPE_CHECKING:
    from engine.store.store import Store
    from engine.types import JSONDict


def consult_log(store: Store, profile: str) -> JSONDict:
    """A profile's consultation practice: each case seen (date, right or not, facts elicited
    of the case's facts) and the facts most often left unasked."""
    from engine.consult.cases.cases import get_case
    from engine.consult.scoring.metrics import uncovered_facts

    seen: list[JSONDict] = []
    missed: Counter[str] = Counter()
    for run in person_runs(store, CONSULT.id, profile):
        for a in store.answers(int(run["id"])):
            try:
                case = get_case(store, str(run["dataset"]), str(a["item_key"]))
            except Exception:  # noqa: BLE001 - a case deleted since: its row is left out
                continue
            told = {
                f["index"]
                for f in uncovered_facts(case, store.turns(int(run["id"]), a["item_key"]))
            }
            missed.update(f.key for i, f in enumerate(case.facts) if i not in told)
            seen.append(
                {
                    "run_id": run["id"],
                    "date": str(run.get("started") or "")[:10],
                    "case": a["item_key"],
                    "correct": bool(a["correct"]),
                    "facts": len(case.facts),
                    "elicited": len(told),
                }
            )
    return {
        "cases": seen,
        "right": sum(1 for s in seen if s["correct"]),
        "most_missed": [{"fact": k, "times": n} for k, n in missed.most_common(10)],
    }
