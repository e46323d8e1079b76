"""The ratings given to a set of runs, read once (:func:`read_ratings`) for the ratings
tables (:mod:`engine.ratings.table`) and their correction by people's
(:mod:`engine.ratings.corrected`).

>>> ratings = read_ratings(store, [12, 14])        # doctest: +SKIP
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.ratings.perspectives import KEYS
from engine.ratings.scorers import JUDGE, PERSON

if TYPE_CHECKING:
    from engine.store.store import Store

Answer = tuple[int, str]  # (run id, item key)


@dataclass
class Ratings:
    """The ratings given to a set of runs, read once: for each source (``people`` by rater,
    ``judges`` by model) ``{(run id, item key): {key: rating}}``, and the judges' replies that
    gave no ratings."""

    people: dict[str, dict[Answer, dict[str, float]]] = field(default_factory=dict)
    judges: dict[str, dict[Answer, dict[str, float]]] = field(default_factory=dict)
    unparsed: dict[str, int] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.people and not self.judges


def read_ratings(store: Store, run_ids: Sequence[int]) -> Ratings:
    """Every person's and judge's ratings of the answers of ``run_ids`` (skipped answers and
    unparsed judge replies left out, the latter counted)."""
    grouped: dict[tuple[str, str], dict[Answer, dict[str, float | None]]] = defaultdict(dict)
    for r in store.rated_rows(list(run_ids)):
        scorer, _, who = str(r["scorer"]).partition("@")
        grouped[(scorer, who)].setdefault((int(r["run_id"]), str(r["item_key"])), {})[r["key"]] = r[
            "value"
        ]
    out = Ratings()
    for (scorer, who), answers in grouped.items():
        flag = "rated" if scorer == PERSON else "parsed" if scorer == JUDGE else None
        if flag is None:
            continue
        kept = {
            a: {k: float(v) for k in KEYS if isinstance((v := values.get(k)), int | float)}
            for a, values in answers.items()
            if values.get(flag)
        }
        target = out.people if scorer == PERSON else out.judges
        target[who] = kept
        if scorer == JUDGE:
            out.unparsed[who] = sum(1 for v in answers.values() if not v.get(flag))
    return out


def pool_sources(
    sources: dict[str, dict[Answer, dict[str, float]]],
) -> dict[Answer, dict[str, list[float]]]:
    """Each answer's ratings per perspective, from all of ``sources`` together."""
    out: dict[Answer, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for answers in sources.values():
        for a, values in answers.items():
            for k, v in values.items():
                out[a][k].append(v)
    return out
