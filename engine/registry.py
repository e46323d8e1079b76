"""The registry: one table of what medexam's packages (and other installed ones) add, keyed
by kind and name, filled one way and read one way. Its kinds (:data:`KINDS`), each an object
of one class, keyed by its attributes:

* ``activity``: :class:`engine.activities.Activity` (``id``), by ``engine.<activity>.activity``;
* ``scorer``: :class:`engine.core.scoring.Scorer` (``name``), by an activity's ``scorers_from``;
* ``preset``: :class:`engine.experiments.plan.Preset` (``name``), by an activity's
  ``presets_from`` and :data:`GENERAL_PRESETS`;
* ``format``: :class:`engine.importers.Format` (``(activity, key)``), by the activity packages;
* ``chart``: :class:`engine.reports.charts.Drawing` (``name``), by the modules drawing it;
* ``backend``: :class:`engine.models.backend.Backend` (``name``), by :data:`BACKENDS`;
* ``training``: :class:`engine.train.kinds.TrainingKind` (``id``), by ``trainings_from``.

One way to register, in two forms of the same call::

    register("preset", Preset("compare-models", ...))   # an object, returned as given

    @register("scorer", name="exam.letter", activities=("exam",), keys=("correct",))
    def letter(answer, item, context): ...              # returned as it is

the decorator form registering what the kind's class makes of the function and the keywords
(``Scorer.from_function``, ``Drawing.from_function``). Activities, presets, formats, training
kinds and backends are registered as objects (``register("training", TrainingKind(...))``);
scorers and charts over their functions (``@register("chart", name="reliability")``); what
imports as a kind that is no activity is titled by its formats (``Format(...,
kind_title="French corpus")``).

Registration checks what it is given there and then (:class:`RegistryError`): an object of
the kind's class, whose own checks ran when it was made (a scorer's metrics over its keys…);
no other object under a key taken (the same one again is nothing), unless ``replace`` (a
test's own: :func:`registered`); each :class:`Lazy` part it names (an activity's run spec,
CLI group, screen…) findable without importing it (:meth:`Lazy.problem`: its module found,
its packages not imported, so no Qt at a CLI's start; in a module already imported, the part
there and of its kind).

Read with :func:`get` (one line when there is none, as each kind says it: ``unknown activity
'x' (choose from exam, …)``), :func:`entries` and :func:`names`, each importing the modules
that register the kind first; each kind's typed readers live beside its class
(:func:`engine.activities.activities`, :func:`engine.core.scoring.scorers`,
:func:`engine.experiments.plan.presets`), so the registry imports none of what registers into
it. Other installed packages add activities through the entry-point group
:data:`PLUGIN_GROUP`, each naming a module whose import registers its activity (importers,
scorers…). A plug-in whose import raises anything (``sys.exit`` too), does not end within
:data:`PLUGIN_SECONDS` (what it registers later is refused: :func:`registering`), registers
what is refused, or names a part its own modules, once imported, do not hold, is left out:
what it registered is taken back and one ``Warning:`` line names it.

>>> names("activity")
['exam', 'consult', 'french']
>>> get("activity", "french").name, get("scorer", "exam.letter").keys
('French QA', ('correct',))
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, fields, is_dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast, overload

from engine.errors import MedexamError, UserError

if TYPE_CHECKING:
    import click

#: The activity packages medexam ships, in the order they are listed.
BUILTIN = ("engine.exam.activity", "engine.consult.activity", "engine.french.activity")
#: The modules registering presets of no one activity (compare-models).
GENERAL_PRESETS = ("engine.experiments.presets",)
#: The modules registering the model backends medexam ships.
BACKENDS = ("engine.models.local", "engine.models.served", "engine.models.scripted")
#: The entry-point group through which other installed packages add activities.
PLUGIN_GROUP = "medexam.activities"
#: How long a plug-in's import may take, in seconds, before it is left out
#: (``MEDEXAM_PLUGIN_TIMEOUT`` sets another).
PLUGIN_SECONDS = 30.0

_loaded = False
_loading = False
#: Held while medexam's own activities and the plug-ins are imported: another thread asking
#: for the activities meanwhile waits for all of them rather than seeing none.
_LOADING = threading.RLock()
#: Held while the table is written, and while a plug-in given up is taken back.
_WRITING = threading.Lock()
#: In a thread importing a plug-in: ``plugin``, its :class:`_PluginImport`.
_THREAD = threading.local()


class RegistryError(MedexamError, ValueError):
    """What the registry refuses: of another class than its kind's, under a key taken…"""


class Unknown(UserError, ValueError):
    """A name the registry does not have (of a chart kind, say)."""


class UnknownActivity(Unknown):
    """An activity id medexam does not have."""


class UnknownScorer(Unknown):
    """A scorer name medexam does not have, or one that does not fit the activity."""


class UnknownPreset(Unknown):
    """An experiment preset medexam does not have."""


class ImportFormatError(Unknown):
    """An activity or format that has no importer."""


class UnknownKind(Unknown):
    """A training kind medexam does not have."""


class PartError(UserError, LookupError):
    """A part a :class:`Lazy` reference names cannot be imported, or is not what it must be."""


class PluginGivenUp(MedexamError):
    """A plug-in whose import outlasted its time registering something: it was left out."""


T = TypeVar("T", covariant=True)
F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")  # what is registered, given back as it is
Key = Any  # a name, or ``(activity, format)``


@dataclass(frozen=True)
class Kind(Generic[T]):
    """What a lazily loaded part must be: ``name`` in words, ``check`` tells (given the part)."""

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

    def problem(self) -> str | None:
        """What is wrong with the part, found without importing anything (None: nothing
        seen): its module not found; in a module imported already (its import ended), the
        part not there or of another kind."""
        module = sys.modules.get(self.module)
        if module is None:
            return None if _findable(self.module) else f"{self}: no module {self.module!r}"
        if getattr(getattr(module, "__spec__", None), "_initializing", False):
            return None  # its import is under way: what it defines later is not there yet
        try:
            self.load()
        except PartError as exc:
            return str(exc)
        return None


def _findable(module: str) -> bool:
    """Whether ``module`` can be imported, asking the import system's finders as an import
    does (a frozen app's too), its packages not imported (a package's ``__init__`` may load
    Qt)."""
    where = None  # the search path of the package above
    for i in range(module.count(".") + 1):
        name = ".".join(module.split(".")[: i + 1])
        found = sys.modules.get(name)
        if found is not None:
            where = getattr(found, "__path__", None)
            continue
        finders = [getattr(f, "find_spec", None) for f in sys.meta_path] if i == 0 or where else []
        spec = next((s for f in finders if f and (s := f(name, where))), None)
        if spec is None:
            return False
        where = spec.submodule_search_locations
    return True


def _article(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


# -- the kinds -----------------------------------------------------------------------------


def _activity_modules() -> Iterable[str]:
    _load_builtin()  # medexam's own activity packages, and the plug-ins
    return ()


def _modules_of(attribute: str, *more: str) -> Callable[[], Iterable[str]]:
    """The modules every activity names in its ``attribute`` (``scorers_from``…), then
    ``more``."""

    def found() -> Iterable[str]:
        listed = [m for a in entries("activity").values() for m in getattr(a, attribute)]
        return [*listed, *more]

    return found


def _no_format(key: Key, known: list[Key]) -> str:
    activity, fmt = key
    theirs = [k for a, k in known if a == activity]
    if theirs:
        return f"no {activity} format {fmt!r} (choose from {', '.join(theirs)})"
    kinds = list(dict.fromkeys(a for a, _k in known))
    own = names("activity")
    ordered = [a for a in own if a in kinds] + sorted(set(kinds) - set(own))
    return f"nothing imports as {activity!r} (choose from {', '.join(ordered)})"


def _model_error(said: str) -> Exception:
    from engine.models.protocol import ModelError

    return ModelError(said)


def _activities_first(found: dict[Key, Any]) -> dict[Key, Any]:
    """medexam's own activities in :data:`BUILTIN`'s order, then the others as registered."""
    own = [m.split(".")[1] for m in BUILTIN]
    return {**{a: found[a] for a in own if a in found}, **found}


@dataclass(frozen=True)
class _Table:
    """One kind of registered thing: the class of its objects, the attributes of their key,
    the modules registering them, what a key not found says, and the order they are listed."""

    words: str
    home: tuple[str, str]  # the module and the name of the class
    key: tuple[str, ...]
    modules: Callable[[], Iterable[str]]
    #: What a key not found says: a template of ``key``, ``known`` and ``sorted`` (the
    #: keys there, "none" when there are none), or a function of the key and the keys.
    missing: str | Callable[[Key, list[Key]], str]
    error: Callable[[str], Exception] = Unknown
    order: Callable[[dict[Key, Any]], dict[Key, Any]] = dict

    @property
    def cls(self) -> Lazy[type]:
        return Lazy(*self.home, CLASS)

    def key_of(self, found: object) -> Key:
        keys = tuple(getattr(found, k) for k in self.key)
        return keys[0] if len(keys) == 1 else keys


_KINDS: dict[str, _Table] = {
    "activity": _Table(
        "activity", ("engine.activities", "Activity"), ("id",), _activity_modules,
        "unknown activity {key!r} (choose from {known})", UnknownActivity, _activities_first
    ),
    "scorer": _Table(
        "scorer", ("engine.core.scoring", "Scorer"), ("name",), _modules_of("scorers_from"),
        "no scorer {key!r} (choose from {sorted})", UnknownScorer
    ),
    "preset": _Table(
        "preset", ("engine.experiments.plan", "Preset"), ("name",),
        _modules_of("presets_from", *GENERAL_PRESETS), "no preset {key!r} (choose from {known})",
        UnknownPreset
    ),
    "format": _Table(
        "format", ("engine.importers", "Format"), ("activity", "key"), _activity_modules,
        _no_format, ImportFormatError
    ),
    "chart": _Table(
        "chart kind", ("engine.reports.charts", "Drawing"), ("name",),
        lambda: ("engine.reports.charts",), "unknown chart kind {key!r}"
    ),
    "backend": _Table(
        "model backend", ("engine.models.backend", "Backend"), ("name",), lambda: BACKENDS,
        "no model backend named {key!r} (known: {sorted})", _model_error
    ),
    "training": _Table(
        "training kind", ("engine.train.kinds", "TrainingKind"), ("id",),
        _modules_of("trainings_from"), "unknown training kind {key!r} (choose from {known})",
        UnknownKind, lambda found: dict(sorted(found.items(), key=lambda kv: kv[1].order))
    ),
}  # fmt: skip
KINDS = tuple(_KINDS)  #: the kinds of things registered
#: What is registered: kind → key → object.
_TABLE: dict[str, dict[Key, Any]] = {kind: {} for kind in KINDS}


def _table(kind: str) -> _Table:
    found = _KINDS.get(kind)
    if found is None:
        raise RegistryError(f"no kind {kind!r} in the registry (choose from {', '.join(KINDS)})")
    return found


# -- registering ---------------------------------------------------------------------------


@overload
def register(kind: str, found: R, /, *, replace: bool = ...) -> R: ...
@overload
def register(kind: str, /, *, replace: bool = ..., **fields: Any) -> Callable[[F], F]: ...
def register(kind: str, found: Any = None, /, *, replace: bool = False, **fields: Any) -> Any:
    """Register ``found`` as a ``kind`` and return it; without ``found``, a decorator (see
    the module docstring). :class:`RegistryError` when refused."""
    table = _table(kind)
    if found is None:

        def add(function: F) -> F:
            make = getattr(table.cls.load(), "from_function", None)
            if make is None:
                raise TypeError(
                    f"a {table.words} is registered as an object: register({kind!r}, x)"
                )
            register(kind, make(function, **fields), replace=replace)
            return function

        return add
    if fields:
        raise TypeError(f"register({kind!r}, object) takes no fields: {', '.join(fields)}")
    cls = table.cls.load()
    if not isinstance(found, cls):
        said = _article(type(found).__name__)
        raise RegistryError(f"a {table.words} must be {_article(cls.__name__)}, not {said}")
    key = table.key_of(found)
    problem = _part_problem(table, key, found)
    if problem:
        raise RegistryError(problem)
    with registering():
        there = _TABLE[kind].get(key)
        if there is not None and there is not found and there != found and not replace:
            raise RegistryError(f"{table.words} {key!r} is registered already")
        _TABLE[kind][key] = found
    return found


def _parts(found: object) -> Iterator[tuple[str, Lazy[Any]]]:
    """The :class:`Lazy` parts a registered object names (in its fields, or their mappings)."""
    for f in fields(found) if is_dataclass(found) else ():
        value = getattr(found, f.name)
        if isinstance(value, Lazy):
            yield f.name, value
        elif isinstance(value, Mapping):
            yield from ((f"{f.name}[{k!r}]", v) for k, v in value.items() if isinstance(v, Lazy))


def _part_problem(table: _Table, key: Key, found: object) -> str | None:
    """What is wrong with one of the parts ``found`` names, as one line (None: nothing)."""
    for name, part in _parts(found):
        problem = part.problem()
        if problem:
            return f"{table.words} {key!r}: its {name} {problem}"
    return None


def unregister(kind: str, key: Key) -> None:
    """Take what is registered under ``key`` out of the registry (a test's own)."""
    _table(kind)
    with registering():
        _TABLE[kind].pop(key, None)


@contextlib.contextmanager
def registered(kind: str, found: R) -> Iterator[R]:
    """``found`` registered (in place of what is under its key) for the time of a ``with``
    block, and what was there before it back after (a test's own scorer, say)."""
    table = _table(kind)
    key = table.key_of(found)
    before = _TABLE[kind].get(key)
    register(kind, found, replace=True)
    try:
        yield found
    finally:
        if before is None:
            unregister(kind, key)
        else:
            register(kind, before, replace=True)


@contextlib.contextmanager
def registering() -> Iterator[None]:
    """Around every write to the table: one at a time, and none from a plug-in whose import
    was given up (:class:`PluginGivenUp`)."""
    with _WRITING:
        job = getattr(_THREAD, "plugin", None)
        if job is not None and job.given_up:
            raise PluginGivenUp(f"plug-in {job.name!r} was left out: it took too long")
        yield


# -- reading -------------------------------------------------------------------------------


def entries(kind: str, *, load: bool = True) -> dict[Key, Any]:
    """Everything registered as a ``kind``, by key, in its order (the modules registering
    the kind imported first, unless not to ``load`` them: what is registered by now)."""
    table = _table(kind)
    for module in table.modules() if load else ():
        importlib.import_module(module)
    return table.order(dict(_TABLE[kind]))


def names(kind: str) -> list[Key]:
    """The keys of what is registered as a ``kind``, in its order."""
    return list(entries(kind))


def get(kind: str, key: Key) -> Any:
    """What is registered as a ``kind`` under ``key``; one line naming the known ones when
    there is none (the kind's error: :class:`UnknownActivity`…)."""
    known = entries(kind)
    if key not in known:
        table, listed = _table(kind), list(known)
        if callable(table.missing):
            raise table.error(table.missing(key, listed))
        said = {"known": ", ".join(listed) or "none", "sorted": ", ".join(sorted(listed)) or "none"}
        raise table.error(table.missing.format(key=key, **said))
    return known[key]


# -- medexam's own activities and the plug-ins ---------------------------------------------


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
    """One plug-in's import, in a thread of its own: what it raised, whether it was given up."""

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
    what went wrong in words (None: nothing). One that takes longer goes on in the background,
    given up (:func:`registering`); a daemon, it never keeps medexam from ending."""
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


def _added_problem(before: dict[str, dict[Key, Any]]) -> str | None:
    """What is wrong with a part of what was registered since ``before``, looked at again
    now that the package registering it is imported."""
    for kind, table in _KINDS.items():
        for key, found in _TABLE[kind].items():
            if before[kind].get(key) is not found:
                problem = _part_problem(table, key, found)
                if problem:
                    return f"RegistryError: {problem}"
    return None


def load_plugins(group: str = PLUGIN_GROUP) -> dict[str, str]:
    """Import the module each installed package names in the entry-point ``group`` (its
    import registers its activity); return the plug-ins left out (see the module docstring),
    by entry-point name, with what was said of each on stderr."""
    failed: dict[str, str] = {}
    for point in entry_points(group=group):
        before = {kind: dict(found) for kind, found in _TABLE.items()}
        problem = _import_plugin(point.name, point.load) or _added_problem(before)
        if problem is None:
            continue
        with _WRITING:
            for kind, kept in before.items():
                _TABLE[kind].clear()
                _TABLE[kind].update(kept)
        failed[point.name] = problem
        print(
            f"Warning: plug-in {point.name!r} ({point.value}) left out: {problem}", file=sys.stderr
        )
    return failed
