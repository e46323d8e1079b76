"""Scorers apart from solvers: what a run's model produced (an answer) is stored first, then
each of the activity's scorers gives it scores, stored in their own rows (the ``scores``
table: answer, scorer name and version, key, value, optional explanation). One answer can
carry several scorers' results, and a stored run can be scored again at any time —
with a fixed or a new measure — without running its model again (:func:`rescore`).

A scorer is a function of one stored answer, its item and the run's context, registered with
:func:`engine.registry.register` (:meth:`Scorer.from_function` makes it)::

    @register("scorer", name="exam.letter", activities=("exam",), keys=("correct",))
    def letter(answer, item, context):
        return {"correct": answer["chosen"] is not None and answer["chosen"] == answer["gold"]}

It returns ``{key: value}`` (numbers, booleans, None) or :class:`Value` entries carrying an
explanation. An activity lists the scorers its runs apply (``Activity.scorers``); any other
registered scorer that fits the activity and is computed on its own is applied after them.
A scorer names the summary entries it gives (``metrics={"accuracy": Metric("correct",
share_of_all(1))}``): each a reducer over its key's values in the run's answers
(:func:`percent`, :func:`rounded_mean`, :func:`share_of_all`), with a label. A run's
summary is :func:`counts` plus every scorer's metrics (:func:`metric_values`) and its
activity's own sections (:func:`summarize`), and reports,
tables, views and the app list a run's metrics by the scorers' (:func:`activity_metrics`).

>>> from engine.core.scoring import mean, proportion
>>> mean([0.5, None, 1.0]), proportion([True, False, True, True])
(0.75, 0.75)
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from engine.activities import Activity, get_activity
from engine.activities import activities as all_activities
from engine.core.metrics import (  # noqa: F401 (re-exported: scorers import their reducers here)
    Metric,
    ScoreValue,
    answer_values,
    mean,
    metric_values,
    percent,
    percent_mean,
    percent_of_mean,
    proportion,
    rounded_mean,
    share_of_all,
)
from engine.core.no_answer import cut_off_share, no_answer_shares
from engine.core.progress import Cancel, ProgressCallback, in_flight, report
from engine.errors import UserError
from engine.registry import UnknownScorer, entries, get
from engine.types import JSONDict, Row, Scored

if TYPE_CHECKING:
    from engine.models.pool import ModelPool
    from engine.models.protocol import ChatModel
    from engine.store.store import Store


@dataclass(frozen=True)
class Value:
    """A score value with the scorer's explanation of it (a judge's reasons, say)."""

    value: ScoreValue
    explanation: str | None = None


@dataclass
class Context:
    """What a scorer may look at beyond the answer and its item: the store, the run (its
    settings), a model pool for scorers that need a model, the run's cancel, the options
    the scoring was asked with (``{"judge": "qwen2.5-7b"}``) and the models leased for it
    by name."""

    store: Store | None
    run: Row
    pool: ModelPool | None = None
    cancel: Cancel | None = None
    options: JSONDict = field(default_factory=dict)
    models: dict[str, ChatModel] = field(default_factory=dict)

    @property
    def settings(self) -> JSONDict:
        found = self.run.get("settings")
        return found if isinstance(found, dict) else {}


#: A scorer: an answer, its target (the activity's own: an item, a case…) and the context.
ScoreFunction = Callable[[Row, Any, Context], Mapping[str, ScoreValue | Value]]


@dataclass(frozen=True)
class Scorer:
    """A registered scorer. ``applies(context)`` says whether it scores this run at all
    (ROUGE only for generated answers, say). ``by`` names the option that says who scores
    (``"judge"``: the judge model; ``"rater"``: a person): its results are stored as
    ``name@who``, so two judges' or two people's scores of one answer stand side by side.
    A ``needs_model`` scorer is given the model its ``by`` option names; a ``person``
    scorer's results are given by people (:mod:`engine.ratings.people`), never computed."""

    name: str
    version: int
    activities: tuple[str, ...]
    keys: tuple[str, ...]
    function: ScoreFunction
    description: str = ""
    needs_model: bool = False
    applies: Callable[[Context], bool] | None = None
    by: str = ""
    person: bool = False
    #: The run summary's entries it gives, each a reducer over one of its keys' values in
    #: the run's answers (:class:`Metric`): what a summary, a report, a table, the views and
    #: the app show of it, and what a comparison of runs pairs item by item
    #: (:mod:`engine.experiments.compare`).
    metrics: Mapping[str, Metric] = field(default_factory=dict)

    def __post_init__(self) -> None:
        others = sorted(m.of for m in self.metrics.values() if m.of not in self.keys)
        if others:
            raise ValueError(
                f"scorer {self.name!r}: a metric of {', '.join(others)}, none of its keys "
                f"({', '.join(self.keys) or 'none'})"
            )
        if not self.activities or self.version < 1:
            raise ValueError(f"scorer {self.name!r}: no activity, or a version below 1")

    @classmethod
    def from_function(
        cls,
        function: ScoreFunction,
        name: str,
        *,
        activities: Sequence[str],
        keys: Sequence[str],
        version: int = 1,
        description: str = "",
        needs_model: bool = False,
        applies: Callable[[Context], bool] | None = None,
        by: str = "",
        person: bool = False,
        metrics: Mapping[str, str | Metric] | None = None,
    ) -> Scorer:
        """The scorer ``name`` computed by ``function``, what ``@register("scorer", name=…,
        …)`` registers (raise ``version`` whenever what it computes changes: a rescore then
        replaces the older version's scores); a metric given as a key is the mean of that key
        in percent (:func:`percent`); the description is the function's docstring's first
        paragraph when none is given."""
        doc = description or (function.__doc__ or "").strip().split("\n\n")[0].replace("``", "")
        declared = {
            k: m if isinstance(m, Metric) else Metric(m) for k, m in (metrics or {}).items()
        }
        return cls(
            name,
            version,
            tuple(activities),
            tuple(keys),
            function,
            " ".join(doc.split()),
            needs_model,
            applies,
            by,
            person,
            declared,
        )

    def fits(self, activity_id: str) -> bool:
        """Whether this scorer scores ``activity_id``'s answers (``*``: every activity's)."""
        return "*" in self.activities or activity_id in self.activities

    def who(self, context: Context) -> str:
        """Who scores (the value of the ``by`` option); "" for a scorer that is computed."""
        if not self.by:
            return ""
        found = str(context.options.get(self.by) or "").strip()
        if not found:
            raise UserError(f"scorer {self.name} needs --{self.by} NAME (who scores)")
        return found

    def stored_name(self, context: Context) -> str:
        """The name its results are stored under: ``name``, or ``name@who``."""
        who = self.who(context)
        return f"{self.name}@{who}" if who else self.name

    def score(self, answer: Row, item: object, context: Context) -> Scored:
        """Score one answer."""
        values: dict[str, ScoreValue] = {}
        explanations: dict[str, str] = {}
        for key, value in self.function(answer, item, context).items():
            if isinstance(value, Value):
                values[key] = value.value
                if value.explanation:
                    explanations[key] = value.explanation
            else:
                values[key] = value
        return Scored(self.stored_name(context), self.version, values, explanations)


def scorers(activity_id: str | None = None) -> dict[str, Scorer]:
    """The registered scorers (of one activity, when given), by name."""
    if activity_id is None:
        return entries("scorer")
    for module in get_activity(activity_id).scorers_from:
        importlib.import_module(module)
    return {n: s for n, s in entries("scorer", load=False).items() if s.fits(activity_id)}


def get_scorer(name: str, activity_id: str | None = None) -> Scorer:
    """The scorer ``name`` (one that scores ``activity_id``'s answers, when given)."""
    if activity_id is None:
        return cast("Scorer", get("scorer", name))
    known = scorers(activity_id)
    if name not in known:
        where = f" for {get_activity(activity_id).name} runs"
        listed = ", ".join(sorted(known)) or "none"
        raise UnknownScorer(f"no scorer {name!r}{where} (choose from {listed})")
    return known[name]


def run_scorers(activity_id: str, context: Context) -> list[Scorer]:
    """The scorers a run of ``activity_id`` applies to each answer, in order."""
    return [s for s in scorers_of(activity_id) if s.applies is None or s.applies(context)]


def score_answer(
    scorers: Iterable[Scorer], answer: Row, item: object, context: Context
) -> list[Scored]:
    """Each scorer's result for one answer (the answer's own fields and the earlier scorers'
    values are what a later scorer sees in ``answer["scores"]``)."""
    out: list[Scored] = []
    seen: dict[str, ScoreValue] = {}
    for s in scorers:
        found = s.score({**answer, "scores": dict(seen)}, item, context)
        seen.update(found.values)
        out.append(found)
    return out


def scorers_of(activity_id: str) -> list[Scorer]:
    """The scorers an activity's runs apply: those of the activity's list, in its order,
    then any other registered scorer that fits the activity and is computed on its own (not
    given by people, by a judge or with a model): a measure added with one scorer."""
    listed = get_activity(activity_id).scorers
    found = [get_scorer(name, activity_id) for name in listed]
    added = [
        s
        for name, s in scorers(activity_id).items()
        if name not in listed and not (s.by or s.person or s.needs_model)
    ]
    return found + added


def merged(scored: Iterable[Scored]) -> dict[str, ScoreValue]:
    """The values of several scorers' results as one ``{key: value}``."""
    out: dict[str, ScoreValue] = {}
    for s in scored:
        out.update(s.values)
    return out


# -- a run's summary -----------------------------------------------------------------------


def run_metrics(store: Store | None, run: Row, answers: Sequence[Row], n: int) -> JSONDict:
    """The metrics of the scorers a stored run applies (:func:`run_scorers`) over its
    ``answers``, for a run of ``n`` items."""
    chosen = run_scorers(str(run["activity"]), Context(store, run))
    return metric_values(chosen, [answer_values(a) for a in answers], n)


def activity_metrics(activity_id: str, *, added: bool = False) -> dict[str, Metric]:
    """Every metric an activity's scorers give, by summary key, in the scorers' order; with
    ``added``, only those of the scorers the activity does not list (its measures added
    since: what a layout made for its own scorers shows beside them)."""
    listed = get_activity(activity_id).scorers if added else ()
    out: dict[str, Metric] = {}
    for s in (s for s in scorers_of(activity_id) if s.name not in listed):
        for key, m in s.metrics.items():
            out.setdefault(key, m)
    return out


def right_key(activity_id: str) -> str | None:
    """The summary key of an activity's share of items answered right: its metric over each
    answer's ``correct`` (None when its scorers give none)."""
    if activity_id not in all_activities():
        return None
    return next((k for k, m in activity_metrics(activity_id).items() if m.of == "correct"), None)


def failed(answer: Row) -> bool:
    """Whether the model could not answer this item (its error is in ``extra["error"]``)."""
    extra = answer.get("extra")
    return isinstance(extra, dict) and bool(extra.get("error"))


def counts(answers: Sequence[Row], n_total: int) -> JSONDict:
    """The entries every run summary shares: ``n`` (the run's items, answered or not) and
    ``answered`` (an item whose answer failed is not); ``failed`` when some answers failed.
    The share right is a metric of the activity's scorers (:func:`right_key`), beside its
    others (:func:`run_metrics`)."""
    n = max(int(n_total or 0), len(answers))
    out: JSONDict = {"n": n, "answered": sum(1 for a in answers if not failed(a))}
    broken = sum(1 for a in answers if failed(a))
    if broken:
        out["failed"] = broken
    return out


def summarize(store: Store, run_id: int) -> JSONDict:
    """A run's summary computed afresh from its stored answers and scores: its
    :func:`counts`, every metric of the scorers it applies (:func:`run_metrics`), the
    replies that gave no answer by reason (``no_answer``) and the share cut off by the
    token limit (``cut_off``, :mod:`engine.core.no_answer`), then its activity's own sections
    (its run spec's ``sections``: tables by type, calibration, the chance scores…;
    ``chance`` is empty when it gives none). The one summary of every run, whoever answered:
    what the run loop stores when the run ends and a rescore stores again."""
    run = store.run(run_id)
    answers = store.answers(run_id)
    n = int(run.get("n_total") or 0)
    out: JSONDict = {**counts(answers, n), **run_metrics(store, run, answers, n)}
    replied = [a for a in answers if not failed(a)]
    out["no_answer"] = no_answer_shares(replied, len(replied))
    out["cut_off"] = cut_off_share(replied, len(replied))
    out.update(get_activity(str(run["activity"])).run_spec().sections(store, run_id))
    out.setdefault("chance", {})
    return out


# -- scoring a stored run again -------------------------------------------------------------


class RescoreError(UserError):
    """A stored run that cannot be scored again (still running, its data set gone…)."""


def items_by_key(store: Store, run: Row) -> dict[str, Any]:
    """A run's items by key (what its answers answered)."""
    act = get_activity(str(run["activity"]))
    spec = act.run_spec()
    dataset = str(run["dataset"])
    if not store.has_dataset(dataset):
        raise RescoreError(
            f"run {run['id']}'s data set {dataset!r} was deleted: its items cannot be scored"
        )
    return {spec.key(item): item for item in spec.items(store, dataset)}


@dataclass
class Rescored:
    """What :func:`rescore` did: the run's new ``summary``, and by scorer name (as stored:
    ``explanation-judge@qwen2.5-7b``) how many answers it ``scored`` and how many it
    ``skipped`` (already scored by that version)."""

    summary: JSONDict
    scored: dict[str, int]
    skipped: dict[str, int]


def rescore(
    store: Store,
    run_id: int,
    scorers: Sequence[str] | None = None,
    *,
    pool: ModelPool | None = None,
    progress: ProgressCallback | None = None,
    cancel: Cancel | None = None,
    force: bool = False,
    options: JSONDict | None = None,
    limit: int | None = None,
) -> Rescored:
    """Apply ``scorers`` (names; default the activity's own) to every stored answer of run
    ``run_id`` without running its model, store their scores and the run's new summary, and
    return what was done (:class:`Rescored`: the summary, the answers each scorer scored and
    skipped).

    ``options`` are what the scorers are asked with (``{"judge": MODEL}`` names the model a
    judge scorer leases from ``pool``, the process's own by default); ``limit`` scores only
    that many answers: those people rated first (so that a judge's agreement with them can
    be measured), then the run's first. Answers that already carry a scorer's current version are
    skipped unless ``force``, so a cancelled rescore continues where it stopped. A scorer
    that needs a model scores as many answers at once as the model takes well (a served
    model's concurrency). ``progress`` is told each answer scored; ``cancel`` stops between
    answers (raising :class:`engine.core.progress.Cancelled`; what was scored stays stored).
    """
    run = store.run(run_id)
    activity_id = str(run["activity"])
    if store.live(run):
        raise RescoreError(f"run {run_id} is still running; score it once it has ended")
    context = Context(store, run, pool, cancel, dict(options or {}))
    chosen = (
        [get_scorer(name, activity_id) for name in scorers]
        if scorers
        else run_scorers(activity_id, context)
    )
    for s in chosen:
        if s.person:
            raise RescoreError(f"{s.name} is given by people: rate the run with `medexam rate`")
        s.who(context)  # the option naming who scores is there
    items = items_by_key(store, run)
    answers = store.answers(run_id)
    if limit and limit > 0:  # the answers people rated first: a judge is measured against them
        rated = {str(r["item_key"]) for r in store.rated_rows([run_id]) if r["key"] == "rated"}
        answers = sorted(answers, key=lambda a: str(a["item_key"]) not in rated)[:limit]
    have = store.scored_versions(run_id)
    work = [
        (
            s,
            [
                a
                for a in answers
                if force or have.get((str(a["item_key"]), s.stored_name(context))) != s.version
            ],
        )
        for s in chosen
    ]
    total = len(answers) * len(chosen)
    result = Rescored({}, {}, {})
    done = total - sum(len(todo) for _, todo in work)
    report(progress, done, total, "scoring", run_id=run_id)
    for s, todo in work:
        name = s.stored_name(context)
        result.scored[name], result.skipped[name] = 0, len(answers) - len(todo)
        with _models_for(s, context):
            for key, scored in _scored(s, todo, items, context):
                store.add_scores(run_id, key, [scored])
                result.scored[name] += 1
                done += 1
                report(progress, done, total, f"{name}: item {key}", run_id=run_id, item=key)
    summary = summarize(store, run_id)
    store.update_run(run_id, summary={**(run.get("summary") or {}), **summary})
    result.summary = store.run(run_id)["summary"]
    return result


@contextlib.contextmanager
def _models_for(s: Scorer, context: Context) -> Iterator[None]:
    """Lease the model a scorer that needs one scores with (its ``by`` option names it)."""
    if not s.needs_model:
        yield
        return
    if context.pool is None:
        from engine.models.pool import default_pool

        context.pool = default_pool()
    name = s.who(context)
    with context.pool.lease(name) as model:
        context.models[name] = model
        try:
            yield
        finally:
            context.models.pop(name, None)


def _scored(
    s: Scorer, answers: Sequence[Row], items: Mapping[str, object], context: Context
) -> Iterator[tuple[str, Scored]]:
    """``(item key, result)`` of scorer ``s`` for each answer, as they are done: several at
    once for a scorer whose model takes concurrent requests (the run loop's scheduling,
    :func:`engine.core.progress.in_flight`; Stop ends every request in flight and none cut short
    is kept), in order otherwise."""
    run_id = context.run["id"]

    def one(answer: Row) -> Scored:
        key = str(answer["item_key"])
        item = items.get(key)
        if item is None:
            raise RescoreError(
                f"item {key!r} of run {run_id} is no longer in data set {context.run['dataset']!r}"
            )
        return s.score(answer, item, context)

    model = context.models.get(s.who(context)) if s.needs_model else None
    at_once = max(1, model.capabilities.concurrency) if model is not None else 1
    stop = model.cancel if model is not None else None
    for answer, scored in in_flight(one, answers, at_once, context.cancel, stop, f"score-{s.name}"):
        yield str(answer["item_key"]), scored


def describe(name: str) -> str:
    """One line about a registered scorer: its name, version, what it scores."""
    s = get_scorer(name)
    return f"{s.name} v{s.version}: {s.description}" if s.description else f"{s.name} v{s.version}"


def headline_value(run: Row) -> float | None:
    """The run's main score in percent (accuracy, or the Hamming score for French QA); a
    person's session is headlined by its ``score`` (unanswered questions count wrong).

    >>> headline_value({"activity": "exam", "summary": {"accuracy": 40.0}})
    40.0
    """
    summary: JSONDict = run.get("summary") or {}
    if summary.get("answered") == 0:
        return None  # nothing answered: no score to show
    found = all_activities().get(str(run.get("activity", "")))
    for key in _headline_keys(found, run.get("runner") == "person"):
        value = summary.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def _headline_keys(found: Activity | None, person: bool) -> Iterator[str]:
    """The summary keys a run's headline is read from, in turn: a person's ``score``, its
    activity's headline and share right, any activity's (a run of an activity no longer
    installed, or whose summary lacks them), then ``score``."""
    if person:
        yield "score"
    for act in [found] if found is not None else []:
        yield act.headline
        yield right_key(act.id) or act.headline
    for act in all_activities().values():
        yield right_key(act.id) or act.headline
        yield act.headline
    yield "score"
