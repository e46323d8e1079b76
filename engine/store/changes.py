"""What another medexam process (the command line, a second window) changed in the database
since it was last looked at: the data sets and corpora, the runs, the experiments.

SQLite's ``PRAGMA data_version`` changes on a connection when another connection commits,
so a look costs one pragma while nothing happened; only then are the tables read, and only
a change a screen would show is reported (answers given in this process, say, are not).

>>> watch = Changes(store)                                                  # doctest: +SKIP
>>> watch.since()          # after `medexam exam import ...` in a terminal  # doctest: +SKIP
{'data'}
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.store.store import Store

#: What each kind of change reads: data sets and corpora; runs and experiments.
_QUERIES = {
    "data": (
        "SELECT (SELECT group_concat(name || ':' || n_items, '|') FROM datasets), "
        "(SELECT group_concat(name, '|') FROM corpora)"
    ),
    "runs": (
        "SELECT (SELECT count(*) || ':' || max(id) || ':' || max(coalesce(finished, '')) || ':'"
        " || sum(status = 'running') FROM runs), "
        "(SELECT count(*) || ':' || max(id) FROM experiments), "
        "(SELECT count(*) || ':' || max(coalesce(run_id, 0)) FROM experiment_cells)"
    ),
}


class Changes:
    """Watches ``store``'s database for what other connections commit (:meth:`since`)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._version = self._data_version()
        self._seen = self._read()

    def _data_version(self) -> int:
        return int(self.store.db.execute("PRAGMA data_version").fetchone()[0])

    def _read(self) -> dict[str, tuple[object, ...]]:
        return {kind: tuple(self.store.db.execute(q).fetchone()) for kind, q in _QUERIES.items()}

    def since(self) -> set[str]:
        """What changed since the last look: ``data`` (data sets, corpora), ``runs`` (runs,
        experiments), or nothing."""
        version = self._data_version()
        if version == self._version:
            return set()
        self._version = version
        now = self._read()
        changed = {kind for kind, seen in now.items() if self._seen.get(kind) != seen}
        self._seen = now
        return changed
