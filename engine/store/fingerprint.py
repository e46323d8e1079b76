"""A data set's fingerprint, shared by the store (:mod:`engine.store.store`) and the migration
that gave data sets theirs (:mod:`engine.store.migrations`), so neither imports the other."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable


def items_fingerprint(rows: Iterable[tuple[str, str]]) -> str:
    """A data set's fingerprint: a digest of its items' keys and stored contents (JSON), in
    order. A run stores its data set's (``dataset_fingerprint``) when it starts, so a data
    set replaced by other items since is told apart
    (:meth:`engine.store.store.Store.items_changed`)."""
    digest = hashlib.sha256()
    for key, data in rows:
        digest.update(f"{key}\0{data}\n".encode())
    return digest.hexdigest()[:32]
