"""Activities as plain descriptors: id, display name, headline metric, the labels of its
summary's sections and settings (a metric's label is its scorer's), and the parts each
brings (settings, run spec, scorers, importers, CLI group, report section, screen). The
CLI, the desktop app and the exports all read labels from here (headline scores from
:func:`engine.core.scoring.headline_value`), so one measure has one name everywhere. Each activity
package registers its own descriptor in :mod:`engine.registry`; this module knows none of
them by name.

>>> activity("french").label("hamming")
'Hamming score (%)'
>>> activity_name("consult")
'Consultation'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Protocol, cast

from engine.registry import Kind, Lazy, PartError, UnknownActivity, entries, get

if TYPE_CHECKING:
    import click

    from engine.core.job import Job
    from engine.models.pool import ModelPool
    from engine.reports.shapes import Section
    from engine.store.store import Store
    from engine.types import Explained, Face, JSONDict, Row

__all__ = ["Activity", "UnknownActivity", "activity", "activity_name", "metric_label"]

# Labels of the summary keys every activity shares (the share right is labelled by each
# activity, whose scorers name it).
COMMON_LABELS = {
    "n": "Items",
    "answered": "Answered",
    "accuracy_answered": "Accuracy of the answered (%)",
    "seconds_per_question": "Seconds per question",
    "mean_seconds": "Seconds per question",
    "seconds": "Time (s)",
    "correct": "Correct",
    "score": "Score (%)",
    "passed": "Passed",
    "pass_mark": "Pass mark (%)",
}

#: A run's scores by category: what they are by, and ``(category, score %, n)`` each.
Breakdown = tuple[str, list[tuple[str, float, int]]]

_SPEC_METHODS = ("settings", "items", "key", "open", "sections")


def _is_run_spec(found: object) -> bool:
    return hasattr(found, "activity") and all(
        callable(getattr(found, m, None)) for m in _SPEC_METHODS
    )


class RunSpec(Protocol):
    """What an activity tells the run loop."""

    activity: Activity

    #: What its job adds to the settings stored on a run (derived from the settings).
    derived: tuple[str, ...]

    def settings(self, given: JSONDict) -> JSONDict:
        """Defaults filled in and checked (raises ValueError with one line)."""
        ...

    def items(self, store: Store, dataset: str) -> Sequence[Any]:
        """Every item of ``dataset`` as the job answers them (what a rescore scores)."""
        ...

    def key(self, item: Any) -> str:
        """An item's key (the stored answer's ``item_key``)."""
        ...

    def open(self, store: Store, dataset: str, settings: JSONDict, pool: ModelPool) -> Job: ...

    def sections(self, store: Store, run_id: int) -> JSONDict:
        """The activity's own entries of a stored run's summary (tables by type, calibration,
        the chance scores…), laid over its counts and its scorers' metrics by
        :func:`engine.core.scoring.summarize`."""
        ...


#: A run spec (:class:`RunSpec`: an activity, and the methods the run loop calls).
RUN_SPEC: Kind[RunSpec] = Kind("a run spec", _is_run_spec)


@dataclass(frozen=True)
class Activity:
    """An activity: what the app shows of it, and where its parts are.

    The parts are :class:`engine.registry.Lazy` references (a module, an attribute and the
    kind of thing it must be), imported on first use so that listing activities loads no
    model code: ``spec`` the run spec (:class:`RunSpec`: its
    settings, how a model answers an item, its summary's own sections), ``settings`` the settings
    dataclass, ``cli`` the click group, ``import_commands`` the ``medexam import`` subcommands,
    ``report`` the report section builder, ``run_label`` the few words that tell its runs
    apart, ``card`` draws an item's review card (none: its items are not reviewed). ``scorers``
    are the scorers each answer of a run gets, registered by the modules in ``scorers_from``;
    ``import_title`` names its data sets in an import menu; ``topic_fields`` name an item's
    topic (most specific first) and ``mastery_fields`` what mastery is reported by;
    ``compare_warnings`` maps settings two compared runs should share (``a|b``: the first
    set) to the warning shown when they differ (``{a}``, ``{b}``: their values);
    ``explained`` is what a rater reads of one answer (``(run, item, answer) →``
    :class:`engine.types.Explained` or None: nothing to rate);
    ``presets_from`` are the modules registering its experiment presets (its papers'
    protocols, :mod:`engine.experiments`) and ``trainings_from`` those registering its
    training kinds (:mod:`engine.train.kinds`); ``screen`` is its screen in the app (a QWidget
    class made with the app's context; none: it has no place in the sidebar),
    ``item_widget`` what a person sees of one item in the app's practice panel (a class,
    :class:`gui.widgets.practice.ItemWidget`; none: no person mode in the app),
    ``description`` one line on it (the sidebar's tooltip) and ``standing`` its page in the
    Review screen's Where I stand tab (a QWidget class made with the app's context,
    :class:`gui.widgets.qt_standing.StandingPage`; none: its standing by subject, when it
    has ``topic_fields``); ``cli_standing`` prints it for ``medexam stats --activity ID``
    (``(store, profile, as_json) →``; none: its standing by subject); ``breakdown`` reads
    a run's scores by category from its summary (``summary → (what, [(category, score %,
    n)])`` or None; none: by its items' categories, :func:`engine.reports.results.category_scores`).
    ``sample`` imports the sample it ships (``store →``, nothing done when it is there),
    whose data set is named ``sample_dataset``: asked for by that name, it is there.
    """

    id: str
    name: str
    headline: str
    item_noun: str
    #: Labels of its summary's entries that are not metrics (sections, settings): a metric's
    #: one label is its scorer's (:class:`engine.core.scoring.Metric`).
    labels: Mapping[str, str] = field(default_factory=dict)
    run_keys: tuple[str, ...] = ()  # the summary entries a model run ends with, in order
    spec: Lazy[RunSpec] | None = None
    settings: Lazy[type] | None = None
    scorers: tuple[str, ...] = ()
    scorers_from: tuple[str, ...] = ()
    cli: Lazy[click.Command] | None = None
    import_commands: Mapping[str, Lazy[click.Command]] = field(default_factory=dict)
    import_title: str = ""
    #: ``(store, runs) → Section``, the runs as :class:`engine.reports.layouts.RunData`.
    report: Lazy[Callable[[Store, list[Any]], Section]] | None = None
    run_label: Lazy[Callable[[Row], list[str]]] | None = None
    card: Lazy[Callable[[JSONDict], Face]] | None = None
    compare_warnings: Mapping[str, str] = field(default_factory=dict)
    topic_fields: tuple[str, ...] = ()
    mastery_fields: tuple[str, ...] = ()
    explained: Lazy[Callable[[Row, Any, Row], Explained | None]] | None = None
    presets_from: tuple[str, ...] = ()
    trainings_from: tuple[str, ...] = ()
    screen: Lazy[type] | None = None
    item_widget: Lazy[type] | None = None
    description: str = ""
    standing: Lazy[type] | None = None
    cli_standing: Lazy[Callable[[Store, str, bool], None]] | None = None
    breakdown: Lazy[Callable[[JSONDict], Breakdown | None]] | None = None
    sample: Lazy[Callable[[Store], object]] | None = None
    sample_dataset: str = ""

    def __post_init__(self) -> None:
        parts = [(f.name, getattr(self, f.name)) for f in fields(self) if f.name in _PARTS]
        parts += [(f"import_commands[{k!r}]", v) for k, v in self.import_commands.items()]
        for name, part in parts:
            if part is not None and not isinstance(part, Lazy):
                raise TypeError(
                    f"activity {self.id!r}: {name} is {type(part).__name__} "
                    f"{part!r}, not a Lazy(module, attribute, kind) reference"
                )

    def label(self, key: str) -> str:
        """A summary key in words ("avg_turns" → "Questions per case")."""
        return metric_label(key, self.id)

    def run_spec(self) -> RunSpec:
        """The activity's run spec (its module imported on first use)."""
        if self.spec is None:
            raise PartError(f"the {self.name} activity has no run spec")
        return self.spec.load()

    def settings_class(self) -> type:
        """The activity's settings dataclass."""
        if self.settings is None:
            raise PartError(f"the {self.name} activity has no settings")
        return self.settings.load()


#: The fields of :class:`Activity` that are lazily loaded parts.
_PARTS = (
    "spec",
    "settings",
    "cli",
    "report",
    "run_label",
    "card",
    "explained",
    "screen",
    "item_widget",
    "standing",
    "cli_standing",
    "breakdown",
    "sample",
)


def activities() -> dict[str, Activity]:
    """Every registered activity by id: medexam's own in :data:`engine.registry.BUILTIN`'s
    order (whichever was imported first), then the others in the order they were registered."""
    return entries("activity")


def get_activity(activity_id: str) -> Activity:
    """The activity ``activity_id``; :class:`UnknownActivity` names the known ones."""
    return cast("Activity", get("activity", activity_id))


def activity(activity_id: str) -> Activity:
    """The descriptor of ``activity_id`` (see :func:`activities`)."""
    return get_activity(activity_id)


def activity_name(activity_id: str) -> str:
    """The display name of an activity ("consult" → "Consultation")."""
    found = activities().get(activity_id)
    return found.name if found else activity_id


def find_label(key: str, activity_id: str | None = None) -> str | None:
    """The label of a summary key (``calibration.ece`` for a nested one): a metric's is its
    scorer's (:class:`engine.core.scoring.Metric`), the others' (sections, settings) the
    activity's ``labels``; those of the activity when it is given, else any; None when
    medexam has none."""
    named = scorer_label(key, activity_id)
    if named:
        return named
    found = activities().get(activity_id or "")
    if found is not None and key in found.labels:
        return found.labels[key]
    if key in COMMON_LABELS:
        return COMMON_LABELS[key]
    found_any = next((a.labels[key] for a in activities().values() if key in a.labels), None)
    return found_any or (scorer_label(key) if activity_id else None)


def scorer_label(key: str, activity_id: str | None = None) -> str | None:
    """The label a registered scorer (of ``activity_id``'s, when given) gives its metric
    ``key`` (:class:`engine.core.scoring.Metric`: a metric's one label); None when none labels
    it."""
    known = entries("scorer")
    if activity_id is not None:
        found = activities().get(activity_id)
        if found is None:
            return None  # an activity no longer installed
        for module in found.scorers_from:  # its scorers registered (engine.core.scoring.scorers)
            importlib.import_module(module)
        known = {n: s for n, s in entries("scorer", load=False).items() if s.fits(activity_id)}
    for s in known.values():
        m = s.metrics.get(key)
        if m is not None and m.label:
            return m.label
    return None


def metric_label(key: str, activity_id: str | None = None) -> str:
    """A summary key in words (see :func:`find_label`), or the key made readable."""
    return find_label(key, activity_id) or key.replace("_", " ").capitalize()
