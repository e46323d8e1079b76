"""The registries: one plain dict per kind of thing, filled by each package when imported.

* :data:`ACTIVITIES` — id → :class:`engine.activities.Activity`, registered by each activity
  package (``engine.exam.activity``, ``engine.consult.activity``, ``engine.french.activity``)
  with :func:`register_activity`;
* :data:`SCORERS` — name → :class:`engine.scoring.Scorer`, registered with
  :func:`engine.scoring.scorer` by the modules an activity names in ``Activity.scorers_from``;
* :data:`PRESETS` — name → :class:`engine.experiments.plan.Preset` (a paper's protocol as a
  grid of runs), registered with :func:`register_preset` by the modules an activity names in
  ``Activity.presets_from`` and by :data:`GENERAL_PRESETS`;
* :data:`FORMATS` — ``(activity, format)`` → :class:`engine.importers.Format`, registered
  with :func:`engine.importers.register_format` by the activity packages.

Model backends (GGUF files, OpenAI-compatible servers, the scripted test model) have their
registry beside the model code, in :mod:`engine.models.backend`, so that nothing outside
``engine/models/`` knows which backend a model has.

Every list of activities in medexam (the CLI's choices, the import menu, report sections, the
Results screen, the app's sidebar…) iterates :func:`activities`, so a new activity is one
package that registers one object. Registration is light: an activity names its heavy parts
(its run spec, CLI group, report section, screen) with :class:`Lazy` references, each the
module and attribute of one part and the :class:`Kind` of thing it must be, imported and
checked on first use (:meth:`Lazy.load`; a part that is missing or of another kind is one
:class:`PartError`).

Other installed packages add activities through the entry-point group :data:`PLUGIN_GROUP`
(``medexam.activities``): each entry point names a module whose import registers its activity
(and its importers, the way medexam's own packages do). The first call to :func:`activities`
imports medexam's own, then the plug-ins (:func:`load_plugins`); a plug-in that fails is left
out with one warning line: one that raises anything at import (``sys.exit`` included), and
one whose import does not end within :data:`PLUGIN_SECONDS` (it goes on in the background,
and what it registers then is refused: :func:`registering`).

>>> from engine.registry import activities, get_activity
>>> list(activities())
['exam', 'consult', 'french']
>>> get_activity("french").name
'French QA'
>>> Lazy("engine.exam.activity", "EXAM", CLASS).load()
Traceback (most recent call last):
...
engine.registry.PartError: engine.exam.activity:EXAM is an Activity, not a class
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from engine.errors import MedexamError, UserError

if TYPE_CHECKING:
    import click

    from engine.activities import Activity
    from engine.experiments.plan import Preset
    from engine.importers import Format
    from engine.scoring import Scorer

#: The activity packages medexam ships, in the order they are listed.
BUILTIN = ("engine.exam.activity", "engine.consult.activity", "engine.french.activity")

#: The modules registering presets of no one activity (compare-models).
GENERAL_PRESETS = ("engine.experiments.presets",)

#: The entry-point group through which other installed packages add activities.
PLUGIN_GROUP = "medexam.activities"

#: How long a plug-in's import may take, in seconds, before it is left out
#: (``MEDEXAM_PLUGIN_TIMEOUT`` sets another).
PLUGIN_SECONDS = 30.0

ACTIVITIES: dict[str, Activity] = {}
SCORERS: dict[str, Scorer] = {}
PRESETS: dict[str, Preset] = {}
#: ``(activity, format)`` → its importer (:func:`engine.importers.register_format`).
FORMATS: dict[tuple[str, str], Format] = {}
_loaded = False
_loading = False
#: Held while medexam's own activities and the plug-ins are imported: another thread asking
#: for the activities meanwhile waits for all of them rather than seeing none.
_LOADING = threading.RLock()
#: Held while a registry is written, and while a plug-in given up is taken back.
_WRITING = threading.Lock()
#: In a thread importing a plug-in: ``plugin``, its :class:`_PluginImport`.
_THREAD = threading.local()


class UnknownActivity(UserError, ValueError):
    """An activity id medexam does not have."""


class UnknownScorer(UserError, ValueError):
    """A scorer name medexam does not have, or one that does not fit the activity."""


class UnknownPreset(UserError, ValueError):
    """An experiment preset medexam does not have."""


class PartError(UserError, LookupError):
    """A part a :class:`Lazy` reference names cannot be imported, or is not what it must be."""


class PluginGivenUp(MedexamError):
    """A plug-in whose import outlasted its time registering something: it was left out."""


T = TypeVar("T", covariant=True)


@dataclass(frozen=True)
class Kind(Generic[T]):
    """What a lazily loaded part must be: ``name`` in words, ``check`` tells (called with
    the part, importing what it needs only then)."""

    name: str
    check: Callable[[object], bool]


def _is_command(found: object) -> bool:
    import click

    return isinstance(found, click.Command)


#: A class (a settings dataclass, a screen).
CLASS: Kind[type] = Kind("a class", inspect.isclass)
#: A function, or anything called like one.
FUNCTION: Kind[Callable[..., Any]] = Kind("a function", callable)
#: A click command or group (a CLI group, an ``import`` subcommand).
COMMAND: Kind[click.Command] = Kind("a click command", _is_command)


@dataclass(frozen=True)
class Lazy(Generic[T]):
    """A part imported on first use: the ``attribute`` of ``module``, which must be of
    ``kind``. Naming a part costs nothing until :meth:`load` (so listing activities loads no
    model code); written ``module:attribute`` in messages."""

    module: str
    attribute: str
    kind: Kind[T]

    def __str__(self) -> str:
        return f"{self.module}:{self.attribute}"

    def load(self) -> T:
        """The part, its module imported; :class:`PartError` when it cannot be imported,
        is not there, or is not of its kind."""
        try:
            found = getattr(importlib.import_module(self.module), self.attribute)
        except (ImportError, AttributeError) as exc:
            raise PartError(f"{self} cannot be loaded: {exc}") from exc
        if not self.kind.check(found):
            raise PartError(f"{self} is {_article(type(found).__name__)}, not {self.kind.name}")
        return cast("T", found)


def _article(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _load_builtin() -> None:
    global _loaded, _loading
    if _loaded or getattr(_THREAD, "plugin", None) is not None:  # a plug-in asks: what is there
        return
    with _LOADING:
        if _loaded or _loading:  # loaded meanwhile, or asked again by an import under way
            return
        _loading = True
        try:
            for module in BUILTIN:
                importlib.import_module(module)
            load_plugins()
            _loaded = True
        finally:
            _loading = False


@dataclass
class _PluginImport:
    """One plug-in's import, run in a thread of its own: what it raised, and whether it was
    given up (it took too long)."""

    name: str
    load: Callable[[], object]
    raised: BaseException | None = None
    given_up: bool = False

    def __call__(self) -> None:
        _THREAD.plugin = self
        try:
            self.load()
        except BaseException as exc:  # ``sys.exit`` too: another package's fault
            self.raised = exc


def plugin_seconds() -> float:
    """How long a plug-in's import may take: ``MEDEXAM_PLUGIN_TIMEOUT`` seconds when it is a
    positive number, else :data:`PLUGIN_SECONDS`."""
    try:
        found = float(os.environ.get("MEDEXAM_PLUGIN_TIMEOUT", ""))
    except ValueError:
        return PLUGIN_SECONDS
    return found if 0 < found < float("inf") else PLUGIN_SECONDS


def _import_plugin(name: str, load: Callable[[], object]) -> str | None:
    """Run ``load`` (a plug-in's import) in a daemon thread for at most :func:`plugin_seconds`;
    what went wrong in words (None: nothing). A plug-in that takes longer goes on in the
    background, given up: what it registers from then on is refused (:func:`registering`),
    and being a daemon it never keeps medexam from ending. (A plug-in that imports a module
    the calling thread is importing at that moment waits for it, and is left out so.)"""
    job = _PluginImport(name, load)
    seconds = plugin_seconds()
    thread = threading.Thread(target=job, name=f"medexam plug-in {name}", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        with _WRITING:
            job.given_up = True
        return f"its import did not end within {seconds:g} s"
    if job.raised is not None:
        said = str(job.raised)
        return type(job.raised).__name__ + (f": {said}" if said else "")
    return None


@contextlib.contextmanager
def registering() -> Iterator[None]:
    """Around every write to a registry: one at a time, and none from a plug-in whose import
    was given up (:class:`PluginGivenUp`)."""
    with _WRITING:
        job = getattr(_THREAD, "plugin", None)
        if job is not None and job.given_up:
            raise PluginGivenUp(f"plug-in {job.name!r} was left out: it took too long")
        yield


def load_plugins(group: str = PLUGIN_GROUP) -> dict[str, str]:
    """Import the module each installed package names in the entry-point ``group`` (its
    import registers its activity); return the plug-ins that failed, by entry-point name,
    with what was said of each. A plug-in that fails to import (whatever it raises,
    ``SystemExit`` included), whose import does not end within :func:`plugin_seconds`, or
    that registers an activity under an id already taken, is left out: what it registered
    (activities, scorers, presets, importers) is taken back and one ``Warning:`` line on
    stderr names it; the others load."""
    registries: list[dict[Any, Any]] = [ACTIVITIES, SCORERS, PRESETS, FORMATS]
    failed: dict[str, str] = {}
    for point in entry_points(group=group):
        before = [dict(registry) for registry in registries]
        problem = _import_plugin(point.name, point.load)
        taken = [a for a, found in before[0].items() if ACTIVITIES.get(a) is not found]
        if problem is None and taken:
            problem = f"ValueError: activity {taken[0]!r} is registered already"
        if problem is None:
            continue
        with _WRITING:
            for registry, kept in zip(registries, before, strict=True):
                registry.clear()
                registry.update(kept)
        failed[point.name] = problem
        print(
            f"Warning: plug-in {point.name!r} ({point.value}) left out: {problem}", file=sys.stderr
        )
    return failed


def register_activity(found: Activity) -> Activity:
    """Add ``found`` to the registry (again under the same id replaces it); return it."""
    with registering():
        ACTIVITIES[found.id] = found
    return found


def unregister_activity(activity_id: str) -> None:
    """Take an activity out of the registry (a test's own activity, when the test ends)."""
    ACTIVITIES.pop(activity_id, None)


def activities() -> dict[str, Activity]:
    """Every registered activity by id: medexam's own in :data:`BUILTIN`'s order (whichever
    was imported first), then the others in the order they were registered."""
    _load_builtin()
    own = [m.split(".")[1] for m in BUILTIN]
    first = {a: ACTIVITIES[a] for a in own if a in ACTIVITIES}
    return {**first, **{k: v for k, v in ACTIVITIES.items() if k not in first}}


def get_activity(activity_id: str) -> Activity:
    """The activity ``activity_id``; :class:`UnknownActivity` names the known ones."""
    found = activities().get(activity_id)
    if found is None:
        raise UnknownActivity(
            f"unknown activity {activity_id!r} (choose from {', '.join(activities())})"
        )
    return found


def scorers(activity_id: str | None = None) -> dict[str, Scorer]:
    """The registered scorers (of one activity, when given), by name. The activity's own
    scorer modules are imported first."""
    chosen = [get_activity(activity_id)] if activity_id else list(activities().values())
    for act in chosen:
        for module in act.scorers_from:
            importlib.import_module(module)
    if activity_id is None:
        return dict(SCORERS)
    return {n: s for n, s in SCORERS.items() if s.fits(activity_id)}


def get_scorer(name: str, activity_id: str | None = None) -> Scorer:
    """The scorer ``name`` (one that scores ``activity_id``'s answers, when given)."""
    known = scorers(activity_id)
    if name not in known:
        where = f" for {get_activity(activity_id).name} runs" if activity_id else ""
        raise UnknownScorer(
            f"no scorer {name!r}{where} (choose from {', '.join(sorted(known)) or 'none'})"
        )
    return known[name]


def register_preset(found: Preset) -> Preset:
    """Add an experiment preset to :data:`PRESETS` (again under the same name replaces it)."""
    with registering():
        PRESETS[found.name] = found
    return found


def presets() -> dict[str, Preset]:
    """Every experiment preset by name, the activities' preset modules imported first."""
    for act in activities().values():
        for module in act.presets_from:
            importlib.import_module(module)
    for module in GENERAL_PRESETS:
        importlib.import_module(module)
    return dict(PRESETS)


def get_preset(name: str) -> Preset:
    """The preset ``name``; :class:`UnknownPreset` names the known ones."""
    known = presets()
    if name not in known:
        raise UnknownPreset(f"no preset {name!r} (choose from {', '.join(known) or 'none'})")
    return known[name]
