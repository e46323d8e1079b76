"""What a run is checked against before anything is created: its settings (every key one a
run of the activity knows, :func:`check_settings`), its data set (of the activity's kind,
:func:`check_dataset`) and, on resume, the run itself (:func:`resumable`: the activity's, a
model's, on the items its data set still holds, with the settings given). A refusal is a
:class:`RunError`, one line for the user. :mod:`engine.core.runs` makes these checks and
re-exports their names.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from engine.activities import activity
from engine.errors import UserError
from engine.fields import names, unknown_name
from engine.models.load import LoadSettings, LoadSettingsError

if TYPE_CHECKING:
    from engine.activities import RunSpec
    from engine.store.store import Store
    from engine.types import JSONDict, Row, RunRow


class RunError(UserError):
    """A run that cannot start or resume (wrong kind of data set, a person's session, settings
    that differ from the run's…): the message is one line for the user."""


#: What ``tags`` may hold: stored with a run's settings, kept when it is resumed.
TAGS = ("trial", "trials", "trial_set", "golden")
#: What the loop stores with a run's settings besides the activity's own: the items in
#: flight, the local models' slots and flash attention (as :mod:`engine.core.runs` reads them), the
#: load settings given (:class:`~engine.models.load.LoadSettings`), the tags.
LOOP_SETTINGS = ("concurrency", "slots", "flash_attn", "load", *TAGS)


def spec_for(activity_id: str) -> RunSpec:
    """The run spec of an activity (its module is imported on first use)."""
    return activity(activity_id).run_spec()


@functools.cache
def known_settings(activity_id: str) -> frozenset[str]:
    """Every key the settings of a run of the activity may hold: its settings dataclass's
    fields, what its job derives from them (``RunSpec.derived``) and what the loop stores
    (:data:`LOOP_SETTINGS`)."""
    found = activity(activity_id)
    derived = getattr(spec_for(activity_id), "derived", ())
    return frozenset((*names(found.settings_class()), *derived, *LOOP_SETTINGS))


def check_settings(activity_id: str, given: JSONDict, whose: str = "") -> None:
    """Refuse a key of ``given`` that no run of the activity knows, in one line naming it and
    the nearest known one (``whose``: a prefix such as ``run 5 holds an``): a setting
    misspelt is never dropped, so a run never plays other settings than it says."""
    problem = unknown_name(given, known_settings(activity_id))
    if problem:
        raise RunError(f"{whose} {problem}" if whose else problem)


def stored_settings(row: Row) -> JSONDict:
    """A stored run's settings as a run of them is given again: with its model (the run's
    ``model`` column) where the activity has a ``model`` setting."""
    stored = dict(row.get("settings") or {})
    if "model" in names(activity(row["activity"]).settings_class()):
        return {"model": row["model"], **stored}
    return stored


def check_dataset(store: Store, activity_id: str, dataset: str) -> None:
    """Refuse a data set of another activity's kind, before any run is created."""
    found = store.dataset(dataset)
    if found["activity"] != activity_id:
        mine, theirs = activity(activity_id), activity(found["activity"])
        fitting = ", ".join(d["name"] for d in store.datasets(activity_id)) or "none yet"
        raise RunError(
            f"data set {dataset!r} holds {theirs.name} items, not {mine.name} items "
            f"({mine.name} data sets: {fitting})"
        )


def _differences(stored: JSONDict, given: JSONDict) -> list[str]:
    out = []
    for key, value in given.items():
        if value is not None and stored.get(key) != value:
            out.append(f"{key} {value!r} (the run has {stored.get(key)!r})")
    return out


def resumable(
    store: Store, spec: RunSpec, run_id: int, given: JSONDict, runner: str | None = None
) -> RunRow:
    """The run to resume, checked: this activity's, a model's (with ``runner``, that
    solver's: a person's), with the given settings."""
    row = store.run(run_id)
    name = spec.activity.name
    if row["activity"] != spec.activity.id:
        raise RunError(f"run {run_id} is a {activity(row['activity']).name} run, not a {name} run")
    if runner is not None:
        if row["runner"] != runner:
            raise RunError(f"run {run_id} is not a {runner}'s session: it cannot be resumed here")
        if row["status"] == "finished":
            raise RunError(f"run {run_id} is finished: there is nothing left to answer")
        return row
    if row["runner"] == "person":
        raise RunError(
            f"run {run_id} is a person's session; a model cannot resume it "
            "(continue it with take --resume, or start a model run)"
        )
    if (row["settings"] or {}).get("source") == "published":
        raise RunError(f"run {run_id} holds published responses: there is no model to resume")
    if store.items_changed(row):
        raise RunError(
            f"run {run_id} was played on items data set {row['dataset']!r} no longer holds "
            "(replaced or deleted since): resuming it would mix the two. Start a new run"
        )
    check_settings(spec.activity.id, row["settings"] or {}, f"run {run_id} holds an")
    given = {k: v for k, v in given.items() if k != "concurrency"}  # free on resume
    differ = _differences(row["settings"] or {}, given)
    if differ:
        raise RunError(
            f"run {run_id} was made with other settings: {'; '.join(differ)}. "
            "Resume it without them, or start a new run"
        )
    return row


def stored_load(stored: JSONDict, given: LoadSettings | None) -> LoadSettings:
    """A resumed run's load settings: its own (none stored: the defaults), ``given`` laid
    over them."""
    try:
        own = LoadSettings.from_dict(stored.get("load"))
    except (LoadSettingsError, TypeError) as exc:
        raise RunError(f"the run's stored load settings cannot be read: {exc}") from None
    return given.over(own) if given is not None else own
