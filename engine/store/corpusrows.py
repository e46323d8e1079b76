"""Retrieval corpora as the store keeps them: a corpus (its name, source, fingerprint and
meta) and its passages in order. :class:`CorpusRows` is a part of :class:`engine.store.store.Store`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.store.dbfile import AlreadyExists, StoreError, decode_json, dump_json, now

if TYPE_CHECKING:
    import contextlib
    from collections.abc import Iterable, Iterator

    import sqlite_utils


class CorpusRows:
    """The store's methods for the ``corpora`` and ``passages`` tables."""

    db: sqlite_utils.Database

    if TYPE_CHECKING:  # the store's own

        def _transaction(
            self, immediate: bool = True
        ) -> contextlib.AbstractContextManager[None]: ...

    def add_corpus(
        self,
        name: str,
        passages: Iterable[dict[str, Any]],
        source: str = "",
        fingerprint: str = "",
        meta: dict[str, Any] | None = None,
        replace: bool = False,
    ) -> int:
        """Store a corpus of passages (``{text, source, offset}``) in one transaction."""
        rows = list(passages)
        with self._transaction():
            existing = list(self.db["corpora"].rows_where("name = ?", [name]))
            if existing:
                if not replace:
                    raise AlreadyExists(f"a corpus named {name!r} already exists")
                self.db.execute("DELETE FROM passages WHERE corpus_id = ?", [existing[0]["id"]])
                self.db.execute("DELETE FROM corpora WHERE id = ?", [existing[0]["id"]])
            corpus_id = (
                self.db.table("corpora")
                .insert(
                    {
                        "name": name,
                        "source": source,
                        "created": now(),
                        "n_passages": len(rows),
                        "fingerprint": fingerprint,
                        "meta": dump_json(meta or {}),
                    }
                )
                .last_pk
            )
            self.db.table("passages").insert_all(
                (
                    {
                        "corpus_id": corpus_id,
                        "position": i,
                        "source": p.get("source", ""),
                        "offset": p.get("offset", 0),
                        "text": p["text"],
                    }
                    for i, p in enumerate(rows)
                ),
                batch_size=1000,
            )
        return int(corpus_id)  # type: ignore[arg-type]  # last_pk is set after an insert

    def corpus(self, name: str) -> dict[str, Any]:
        rows = list(self.db["corpora"].rows_where("name = ?", [name]))
        if not rows:
            raise StoreError(f"no corpus named {name!r}")
        return decode_json(rows[0])

    def corpora(self) -> list[dict[str, Any]]:
        return [decode_json(r) for r in self.db["corpora"].rows_where(order_by="name")]

    def passages(self, corpus: str) -> Iterator[dict[str, Any]]:
        """The passages of a corpus in order: ``{position, source, offset, text}``."""
        c = self.corpus(corpus)
        yield from self.db.query(
            "SELECT position, source, offset, text FROM passages WHERE corpus_id = ? "
            "ORDER BY position",
            [c["id"]],
        )
