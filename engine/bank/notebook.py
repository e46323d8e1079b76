"""A student's notebook: per profile and question, a mark (to come back to it), a note, and
why it was missed (:data:`REASONS`). Each change is stored the moment it is made.

>>> mark(store, "default", "exam", "cpe-test", "17")                     # doctest: +SKIP
>>> set_note(store, "default", "exam", "cpe-test", "17",                  # doctest: +SKIP
...          "warfarin: INR, not aPTT")
>>> [e.item_key for e in entries(store, "default", marked=True)]          # doctest: +SKIP
['17']
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from engine.errors import UserError
from engine.store.store import now

if TYPE_CHECKING:
    from engine.store.store import Store
    from engine.types import JSONDict, Row

#: Why a question was missed: key → words.
REASONS = {
    "knowledge": "Knowledge gap",
    "misread": "Misread the question",
    "reasoning": "Reasoning",
    "time": "Ran out of time",
}
MAX_NOTE = 10_000


class NotebookError(UserError):
    """A reason medexam does not know, a note too long."""


@dataclass(frozen=True)
class Entry:
    """One question in a student's notebook."""

    profile: str
    activity: str
    dataset: str
    item_key: str
    marked: bool = False
    note: str = ""
    reason: str | None = None
    updated: str | None = None

    def as_dict(self) -> JSONDict:
        return asdict(self)


def _entry(row: Row) -> Entry:
    return Entry(
        str(row["profile"]),
        str(row["activity"]),
        str(row["dataset"]),
        str(row["item_key"]),
        bool(row["marked"]),
        str(row["note"] or ""),
        row["reason"],
        row["updated"],
    )


def entry(store: Store, profile: str, dataset: str, key: str) -> Entry | None:
    """The notebook entry of one question (None when nothing was noted of it)."""
    rows = list(
        store.db.query(
            "SELECT * FROM notebook WHERE profile = ? AND dataset = ? AND item_key = ?",
            [profile, dataset, str(key)],
        )
    )
    return _entry(rows[0]) if rows else None


def _set(
    store: Store, profile: str, activity: str, dataset: str, key: str, **values: object
) -> Entry:
    columns = ", ".join(values)
    marks = ", ".join("?" for _ in values)
    updates = ", ".join(f"{c} = excluded.{c}" for c in values)
    with store.transaction():
        store.db.execute(
            f"INSERT INTO notebook (profile, activity, dataset, item_key, {columns}, updated) "
            f"VALUES (?, ?, ?, ?, {marks}, ?) ON CONFLICT (profile, dataset, item_key) "
            f"DO UPDATE SET {updates}, updated = excluded.updated",
            [profile, activity, dataset, str(key), *values.values(), now()],
        )
    found = entry(store, profile, dataset, key)
    assert found is not None
    return found


def mark(
    store: Store, profile: str, activity: str, dataset: str, key: str, on: bool = True
) -> Entry:
    """Mark a question to come back to it (``on=False``: unmark it)."""
    return _set(store, profile, activity, dataset, key, marked=int(on))


def toggle_mark(store: Store, profile: str, activity: str, dataset: str, key: str) -> bool:
    """Mark a question, or unmark it when it is marked; True when it is marked now."""
    found = entry(store, profile, dataset, key)
    on = not (found and found.marked)
    mark(store, profile, activity, dataset, key, on)
    return on


def set_note(store: Store, profile: str, activity: str, dataset: str, key: str, note: str) -> Entry:
    """Write (or, with "", clear) the note on a question."""
    if len(note) > MAX_NOTE:
        raise NotebookError(f"a note holds at most {MAX_NOTE} characters")
    return _set(store, profile, activity, dataset, key, note=note.strip())


def set_reason(
    store: Store, profile: str, activity: str, dataset: str, key: str, reason: str | None
) -> Entry:
    """Say why a question was missed (a key of :data:`REASONS`; None clears it)."""
    if reason is not None and reason not in REASONS:
        raise NotebookError(f"unknown reason {reason!r} (choose from {', '.join(REASONS)})")
    return _set(store, profile, activity, dataset, key, reason=reason)


def entries(
    store: Store,
    profile: str,
    *,
    activity: str | None = None,
    dataset: str | None = None,
    marked: bool | None = None,
    noted: bool | None = None,
    search: str = "",
) -> list[Entry]:
    """The notebook of ``profile``, newest change first: only marked questions, only those
    with a note, of one activity or data set, or whose note holds ``search``, when asked."""
    where, params = ["profile = ?"], [profile]
    for column, value in (("activity", activity), ("dataset", dataset)):
        if value:
            where.append(f"{column} = ?")
            params.append(value)
    if marked is not None:
        where.append("marked = ?")
        params.append(str(int(marked)))
    if noted is not None:
        where.append("note != ''" if noted else "note = ''")
    if search:
        where.append("instr(lower(note), lower(?)) > 0")
        params.append(search)
    rows = store.db.query(
        f"SELECT * FROM notebook WHERE {' AND '.join(where)} ORDER BY updated DESC, id DESC", params
    )
    return [_entry(r) for r in rows]


def by_item(store: Store, profile: str, dataset: str) -> dict[str, Entry]:
    """The notebook entries of one data set, by question key."""
    return {e.item_key: e for e in entries(store, profile, dataset=dataset)}
