"""The scores of a run's answers, as the store keeps them: a row per scorer and key (see
:mod:`engine.core.scoring`). :class:`ScoreRows` is a part of :class:`engine.store.store.Store`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from engine.store.dbfile import StoreError, now

if TYPE_CHECKING:
    import contextlib

    import sqlite_utils

    from engine.types import RatedRow, Row, RunRow, Scored, ScoreRow


class ScoreRows:
    """The store's methods for the ``scores`` table."""

    db: sqlite_utils.Database

    if TYPE_CHECKING:  # the store's own

        def run(self, run_id: int) -> RunRow: ...

        def _transaction(
            self, immediate: bool = True
        ) -> contextlib.AbstractContextManager[None]: ...

    @staticmethod
    def _scored_only(scores: Sequence[Scored]) -> list[Scored]:
        """Scorers' results, refused when they are anything else (raw ``{key: value}``)."""
        found = (
            list(scores) if isinstance(scores, Sequence) and not isinstance(scores, str) else None
        )
        if found is None or not all(hasattr(s, "scorer") and hasattr(s, "values") for s in found):
            raise StoreError(
                "an answer is stored with its scorers' results (Scored), not raw values"
            )
        return found

    def _insert_scores(self, run_id: int, item_key: str, scored: Sequence[Scored]) -> None:
        stamp = now()
        self.db.conn.executemany(
            "INSERT OR REPLACE INTO scores (run_id, item_key, scorer, version, key, value, "
            "explanation, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (run_id, item_key, s.scorer, s.version, key, value, s.explanations.get(key), stamp)
                for s in scored
                for key, value in s.values.items()
            ],
        )

    def add_scores(self, run_id: int, item_key: str, scored: Sequence[Scored]) -> None:
        """Store scorers' results for one stored answer, replacing what those scorers gave
        it before (any version), and commit at once."""
        with self._transaction():
            for s in scored:
                self.db.execute(
                    "DELETE FROM scores WHERE run_id = ? AND item_key = ? AND scorer = ?",
                    [run_id, str(item_key), s.scorer],
                )
            self._insert_scores(run_id, str(item_key), scored)

    def score_rows(self, run_id: int) -> list[ScoreRow]:
        """Every stored score of a run: ``item_key, scorer, version, key, value,
        explanation, created``, in the order they were stored."""
        rows = self.db.query(
            "SELECT item_key, scorer, version, key, value, explanation, created "
            "FROM scores WHERE run_id = ? ORDER BY id",
            [run_id],
        )
        return [cast("ScoreRow", r) for r in rows]

    def scored_versions(self, run_id: int) -> dict[tuple[str, str], int]:
        """``(item key, scorer) → version`` of what scored each answer of a run."""
        rows = self.db.execute(
            "SELECT item_key, scorer, max(version) FROM scores WHERE run_id = ? "
            "GROUP BY item_key, scorer",
            [run_id],
        )
        return {(str(k), str(s)): int(v) for k, s, v in rows}

    def run_scorers(self, run_id: int) -> list[Row]:
        """The scorers that scored a run: ``scorer``, ``version`` and ``answers`` (how many
        answers carry its scores), by name."""
        return list(
            self.db.query(
                "SELECT scorer, max(version) AS version, count(DISTINCT item_key) AS answers "
                "FROM scores WHERE run_id = ? GROUP BY scorer ORDER BY scorer",
                [run_id],
            )
        )

    def rated_rows(self, run_ids: Sequence[int], scorer: str = "") -> list[RatedRow]:
        """The scores given by someone (people, judge models: stored as ``scorer@who``) to
        the answers of runs ``run_ids``, of ``scorer`` only when given: ``run_id,
        item_key, scorer, version, key, value, explanation, created``."""
        if not run_ids:
            return []
        marks = ", ".join("?" for _ in run_ids)
        where = f"run_id IN ({marks}) AND instr(scorer, '@') > 0"
        params: list[object] = [int(r) for r in run_ids]
        if scorer:
            where += " AND substr(scorer, 1, instr(scorer, '@') - 1) = ?"
            params.append(scorer)
        rows = self.db.query(
            "SELECT run_id, item_key, scorer, version, key, value, explanation, created "
            f"FROM scores WHERE {where} ORDER BY id",
            params,
        )
        return [cast("RatedRow", r) for r in rows]
