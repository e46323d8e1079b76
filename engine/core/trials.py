"""Repeated trials: a score that comes from sampling models (a consultation: two models
talking) varies from run to run, so one run's number cannot tell two doctors apart. A trial
set plays the same settings K times with K recorded seeds (``seed``, ``seed + 1``, …) at a
stated temperature: K runs, each stored, resumable and scored like any other, tagged with
their trial number and set. :func:`spread` gives the mean over trials, the between-trial
standard deviation and a 95% interval from a bootstrap clustered by case (whole cases
resampled, each with all its trials), as CRAFT-MD reports its five trials.

>>> settings = {"doctor": "model", "temperature": 0.7}                         # doctest: +SKIP
>>> result = run_trials(store, "consult", "osce", settings, 5)                 # doctest: +SKIP
>>> spread(store, result.run_ids)["accuracy"]                                  # doctest: +SKIP
{'mean': 41.2, 'sd': 3.1, 'low': 33.0, 'high': 49.5, 'trials': [40.0, 38.0, …], 'cases': 20}
"""

from __future__ import annotations

import secrets
import statistics
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.core.progress import Progress, ProgressCallback
from engine.core.scoring import failed, right_key
from engine.errors import UserError
from engine.reports.stats import TOO_FEW, enough

if TYPE_CHECKING:
    from engine.reports.shapes import Table
    from engine.store.store import Store
    from engine.types import JSONDict, Row

RESAMPLES = 2000
SEED = 0
MAX_TRIALS = 100


class TrialError(UserError):
    """Trials that cannot be run: greedy sampling, too many, an unknown set."""


@dataclass
class Trials:
    """A trial set: its name and the runs of its trials, in trial order, with their summaries."""

    name: str
    run_ids: list[int] = field(default_factory=list)
    summaries: list[JSONDict] = field(default_factory=list)


def check_trials(settings: JSONDict, trials: int) -> None:
    """Refuse trials that would all be the same (temperature 0) or that cannot sample."""
    if not 1 <= trials <= MAX_TRIALS:
        raise TrialError(f"--trials takes 1 to {MAX_TRIALS}")
    if trials > 1 and "temperature" not in settings:
        raise TrialError("these runs do not sample (no temperature): every trial would be the same")
    if trials > 1 and settings.get("reader"):
        raise TrialError("a trained reader does not sample: every trial would be the same")
    if trials > 1 and settings.get("method") == "logprob":
        raise TrialError(
            "--method logprob reads the letters' probabilities, it does not sample: every "
            "trial would be the same (use --method generate)"
        )
    if trials > 1 and not float(settings.get("temperature") or 0.0) > 0:
        raise TrialError(
            f"{trials} trials at temperature 0 would all be the same: sample with a "
            "temperature above 0 (--temperature)"
        )


def new_name() -> str:
    """A new trial set's name (eight hexadecimal digits)."""
    return secrets.token_hex(4)


def trial_runs(store: Store, name: str) -> dict[int, Row]:
    """The runs of trial set ``name`` by trial number (1 for the first)."""
    found = {}
    for run in store.runs():
        settings = run.get("settings") or {}
        if settings.get("trial_set") == name:
            found[int(settings.get("trial") or 0)] = run
    return dict(sorted(found.items()))


def set_size(store: Store, name: str) -> int:
    """How many trials set ``name`` plays (:class:`TrialError` when there is no such set)."""
    done = trial_runs(store, name)
    if not done:
        raise TrialError(f"no trial set {name!r}")
    first = done[min(done)]
    return int((first.get("settings") or {}).get("trials") or len(done))


def run_trials(
    store: Store,
    activity_id: str,
    dataset: str | None,
    settings: JSONDict,
    trials: int,
    *,
    resume: str | None = None,
    name: str | None = None,
    on_trial: Callable[[int, int], None] | None = None,
    **options: Any,
) -> Trials:
    """Play ``settings`` over ``dataset`` ``trials`` times (seeds ``seed`` … ``seed +
    trials - 1``), one stored run per trial, as the set ``name`` (default: a new one,
    :func:`new_name`); or, with ``resume`` (a set's name), go on with that set: its
    unfinished trials resumed, its missing ones started. ``on_trial(k, K)`` is called as
    trial ``k`` starts; ``options`` are :func:`engine.core.runs.run`'s (``pool``, ``progress``,
    ``cancel``, ``concurrency``…); ``progress`` counts cases × trials over the whole set,
    with the trial in its info. With ``concurrency`` above 1 (default: what the models take,
    a local model's slots or a served model's requests at once) up to that many trials play
    at once, sharing it out, on a database file; else one after the other. A trial that
    ends cancelled or failed stops the set (no further trial starts; resume it to go on)."""
    from engine.core.run_checks import stored_settings

    done: dict[int, Row] = {}
    if resume is not None:
        trials = set_size(store, resume)
        done = trial_runs(store, resume)
        first = done[min(done)]
        settings = stored_settings(first)
        dataset = first["dataset"]
        if options.get("load") is None and settings.get("load"):  # its trials load alike
            from engine.models.load import LoadSettings

            options["load"] = LoadSettings.from_dict(settings["load"])
    check_trials(settings, trials)
    progress = options.pop("progress", None)
    plan = _Plan(activity_id, dataset, settings, trials, resume or name or new_name(), done)
    given = options.pop("concurrency", None)
    concurrency = int(given or 1)
    if given is None and trials > 1 and store.path != ":memory:":
        concurrency = _models_concurrency(store, plan, options)
    at_once = min(trials, concurrency) if store.path != ":memory:" else 1
    if at_once > 1:
        return _at_once(store, plan, at_once, concurrency // at_once, on_trial, progress, options)
    out = Trials(plan.name)
    for k in range(1, trials + 1):
        if on_trial is not None:
            on_trial(k, trials)
        summary = plan.play(store, k, _over_set(progress, k, trials), given, options)
        out.run_ids.append(int(summary["run_id"]))
        out.summaries.append(summary)
        if summary.get("status") != "finished":
            break
    return out


@dataclass
class _Plan:
    """What every trial of a set shares: the settings, the set's name, the trials stored."""

    activity_id: str
    dataset: str | None
    settings: JSONDict
    trials: int
    name: str
    done: dict[int, Row]

    def play(
        self,
        store: Store,
        k: int,
        progress: ProgressCallback | None,
        concurrency: int | None,
        options: JSONDict,
    ) -> JSONDict:
        """Trial ``k``: its finished run's summary, its stopped run resumed or a new run."""
        from engine.core.runs import run

        old = self.done.get(k)
        if old is not None and old["status"] == "finished":
            return {**(old.get("summary") or {}), "run_id": old["id"], "status": "finished"}
        given = {**options, "progress": progress, "concurrency": concurrency}
        if old is not None:
            return run(store, self.activity_id, None, {}, resume=int(old["id"]), **given)
        tags = {"trial": k, "trials": self.trials, "trial_set": self.name}
        base = int(self.settings.get("seed") or 0) - (int(self.settings.get("trial") or 1) - 1)
        chosen = {key: v for key, v in self.settings.items() if key not in tags}
        chosen["seed"] = base + k - 1
        return run(store, self.activity_id, self.dataset, chosen, tags=tags, **given)


def _models_concurrency(store: Store, plan: _Plan, options: JSONDict) -> int:
    """What the set's models take at once (:func:`engine.core.runs.models_concurrency`)."""
    from engine.core.runs import models_concurrency
    from engine.models.pool import default_pool

    pool = options.get("pool") or default_pool()
    return models_concurrency(
        store, plan.activity_id, plan.dataset, plan.settings, pool, options.get("load")
    )


def _at_once(
    store: Store,
    plan: _Plan,
    at_once: int,
    per_trial: int,
    on_trial: Callable[[int, int], None] | None,
    progress: ProgressCallback | None,
    options: JSONDict,
) -> Trials:
    """The trials of ``plan``, ``at_once`` at a time (each in its own thread with its own
    connection to the database, ``per_trial`` items in flight); Ctrl-C cancels them all."""
    lock, stop = threading.Lock(), threading.Event()
    seen: dict[int, tuple[int, int]] = {}
    before = sum(1 for r in plan.done.values() if r["status"] == "finished")  # not played

    def tell(k: int) -> ProgressCallback:
        def report(p: Progress) -> None:
            with lock:
                seen[k] = (p.done, p.total)
                each = max(t for _, t in seen.values())
                done = sum(d for d, _ in seen.values()) + before * each
                if progress is not None:
                    info = {**p.info, "trial": k, "trials": plan.trials}
                    progress(Progress(done, plan.trials * each, p.message, info))

        return report

    def one(k: int) -> JSONDict | None:
        if stop.is_set():
            return None
        if on_trial is not None:
            on_trial(k, plan.trials)
        own = type(store)(store.path)
        try:
            summary = plan.play(own, k, tell(k), max(1, per_trial), options)
        finally:
            own.close()
        if summary.get("status") != "finished":
            stop.set()
        return summary

    out = Trials(plan.name)
    with ThreadPoolExecutor(at_once, thread_name_prefix="trial") as workers:
        futures = [workers.submit(one, k) for k in range(1, plan.trials + 1)]
        try:
            found = [f.result() for f in futures]
        except KeyboardInterrupt:
            stop.set()
            cancel = options.get("cancel")
            if cancel is not None:
                cancel.set()
            raise
    for summary in found:
        if summary is not None:
            out.run_ids.append(int(summary["run_id"]))
            out.summaries.append(summary)
    return out


def _over_set(progress: ProgressCallback | None, k: int, trials: int) -> ProgressCallback | None:
    """Trial ``k``'s progress as progress over the whole set: cases × trials done of all
    (every trial has the same cases), with ``trial`` and ``trials`` in the info."""
    if progress is None:
        return None

    def report(p: Progress) -> None:
        info = {**p.info, "trial": k, "trials": trials}
        if not p.total:
            progress(Progress(p.done, p.total, p.message, info))
            return
        progress(Progress((k - 1) * p.total + p.done, trials * p.total, p.message, info))

    return report


def _per_case(store: Store, run_ids: Sequence[int], key: str) -> dict[str, list[float]]:
    """Each case's value of ``key`` in every trial (the share right, :func:`_is_right`: 100
    for right, 0 otherwise)."""
    out: dict[str, list[float]] = {}
    right = _is_right(store, run_ids, key)
    for run_id in run_ids:
        for a in store.answers(run_id):
            if right:
                value = 0.0 if failed(a) else 100.0 * bool(a["correct"])
            else:
                raw = (a.get("scores") or {}).get(key)
                if not isinstance(raw, int | float):
                    continue
                value = float(raw)
            out.setdefault(str(a["item_key"]), []).append(value)
    return out


def _activity(store: Store, run_ids: Sequence[int]) -> str:
    """The activity of the runs ``run_ids`` (of the first; "" for none)."""
    return str(store.run(int(run_ids[0]))["activity"]) if run_ids else ""


def _is_right(store: Store, run_ids: Sequence[int], key: str) -> bool:
    """Whether ``key`` is the runs' share of items answered right
    (:func:`engine.core.scoring.right_key`), whose per-case values are each answer's ``correct``."""
    return bool(run_ids) and key == right_key(_activity(store, run_ids))


def _clustered_means(
    per_case: dict[str, list[float]], resamples: int = RESAMPLES, seed: int = SEED
) -> Any:
    """The means over all trials' values of ``resamples`` bootstrap samples of whole cases
    (each with all its trials, :func:`engine.reports.stats.cluster_means`), as a numpy
    array; None for fewer than two cases."""
    from engine.reports.stats import cluster_means

    cases = [case for case, found in per_case.items() for _ in found]
    values = [v for found in per_case.values() for v in found]
    return cluster_means(values, cases, resamples, seed)


def clustered_interval(
    per_case: dict[str, list[float]], resamples: int = RESAMPLES, seed: int = SEED
) -> tuple[float, float] | None:
    """A 95% percentile interval of the mean over all trials' values, resampling whole
    cases (with all their trials); None for fewer than :data:`MIN_ITEMS` cases (too few to
    resample honestly, :mod:`engine.reports.stats`) and when every value is the same (the
    bootstrap has no spread to show then, which is not certainty)."""
    import numpy as np

    values = {v for found in per_case.values() for v in found}
    if not enough(len(per_case)) or len(values) < 2:
        return None
    means = _clustered_means(per_case, resamples, seed)
    if means is None:
        return None
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def paired_sets(
    store: Store, a: Sequence[int], b: Sequence[int], key: str | None = None, scale: float = 1.0
) -> JSONDict | None:
    """Two trial sets (their runs in trial order; one run each is a set of one trial)
    compared on ``key`` (by default the share right, :func:`engine.core.scoring.right_key`, or a
    score each answer carries: ``patient_recall``,
    ``turns``…), each case of trial ``k`` of one paired with the same case of trial ``k`` of
    the other: the pairs, the cases, how many pairs are higher in A (``only_a``: right in A
    only, for accuracy) and in B, the means of A and B, the mean difference B − A with the
    95% interval and two-sided p of a bootstrap that resamples whole cases (with all their
    trials' pairs); each value is multiplied by ``scale`` first (100: a fraction in
    percent). None when the sets share no case and trial."""
    from engine.reports.stats import cluster_bootstrap

    key = key or right_key(_activity(store, a)) or ""
    cases: list[str] = []
    pairs: list[tuple[float, float]] = []
    for run_a, run_b in zip(a, b, strict=False):  # trial k with trial k
        right_a = _per_case(store, [run_a], key)
        right_b = _per_case(store, [run_b], key)
        for case in right_a.keys() & right_b.keys():
            cases.append(case)
            pairs.append((right_a[case][0] * scale, right_b[case][0] * scale))
    if not pairs:
        return None
    boot = cluster_bootstrap([x for x, _ in pairs], [y for _, y in pairs], cases)
    return {
        "pairs": len(pairs),
        "cases": len(set(cases)),
        "trials": min(len(a), len(b)),
        "only_a": sum(1 for x, y in pairs if x > y),
        "only_b": sum(1 for x, y in pairs if y > x),
        "key": key,
        "mean_a": statistics.fmean(x for x, _ in pairs),
        "mean_b": statistics.fmean(y for _, y in pairs),
        "diff": boot["diff"],
        "low": boot["low"],
        "high": boot["high"],
        "p": boot["p"],
        "too_few": boot["too_few"],
    }


def spread(
    store: Store, run_ids: Sequence[int], keys: Sequence[str] | None = None
) -> dict[str, JSONDict]:
    """Per summary key (by default the scores a trial set is summed up by,
    :func:`short_headers`): each trial's value (from its run's summary), their ``mean`` and
    between-trial ``sd`` (None for one trial), and for per-case scores (the share right, and
    the scores answers carry) the 95% interval ``low``–``high`` of a bootstrap clustered by
    case (only for the share right)."""
    runs = [store.run(int(r)) for r in run_ids]
    if keys is None:
        keys = list(short_headers([_activity(store, run_ids)] if run_ids else []))
    out: dict[str, JSONDict] = {}
    for key in keys:
        values = [
            float(v)
            for r in runs
            if isinstance((v := (r.get("summary") or {}).get(key)), int | float)
        ]
        if not values:
            continue
        entry: JSONDict = {
            "trials": values,
            "mean": round(statistics.fmean(values), 2),
            "sd": round(statistics.stdev(values), 2) if len(values) > 1 else None,
        }
        per_case = _per_case(store, [int(r["id"]) for r in runs], key)
        right = _is_right(store, run_ids, key)
        ci = clustered_interval(per_case) if right else None
        entry["low"], entry["high"] = (round(ci[0], 2), round(ci[1], 2)) if ci else (None, None)
        entry["cases"] = len(per_case)
        entry["too_few"] = right and not enough(len(per_case))
        out[key] = entry
    return out


def spread_text(entry: JSONDict) -> str:
    """One key's spread in words: ``41.20 ± 3.10 [33.0, 49.5]`` (mean ± between-trial SD
    [95% interval]), the parts a set does not have left out."""
    sd = f" ± {entry['sd']:.2f}" if entry.get("sd") is not None else ""
    ci = f" [{entry['low']:.1f}, {entry['high']:.1f}]" if entry.get("low") is not None else ""
    if entry.get("too_few"):
        ci = f" [{TOO_FEW}]"
    return f"{entry['mean']:.2f}{sd}{ci}"


def trial_sets(store: Store, run_ids: Sequence[int]) -> dict[str, list[int]]:
    """The trial sets among runs ``run_ids``: set name → its runs' ids in trial order."""
    found: dict[str, dict[int, int]] = {}
    for run_id in run_ids:
        settings = store.run(int(run_id)).get("settings") or {}
        name = settings.get("trial_set")
        if name:
            found.setdefault(str(name), {})[int(settings.get("trial") or 0)] = int(run_id)
    return {n: [r for _, r in sorted(t.items())] for n, t in found.items()}


def short_headers(activity_ids: Sequence[str]) -> dict[str, str]:
    """The scores a trial set of these activities' runs is summed up by, with their short
    headers: the metrics their scorers give a short header (``Metric.short``), in order."""
    from engine.core.scoring import activity_metrics

    out: dict[str, str] = {}
    for activity_id in activity_ids:
        for key, m in activity_metrics(activity_id).items():
            if m.short:
                out.setdefault(key, m.short)
    return out


def header(key: str, activity_id: str | None = None) -> str:
    """A score's header in a narrow column: the short header of its metric (of
    ``activity_id``'s, else any activity's; the metric of that key, or of the per-answer
    score ``key``: ``turns`` for the questions per case), else its label."""
    from engine.activities import activities, metric_label
    from engine.core.scoring import activity_metrics

    for act in [activity_id] if activity_id else list(activities()):
        found = activity_metrics(act)
        m = found.get(key) or next((m for m in found.values() if m.of == key), None)
        if m is not None and m.short:
            return m.short
    return metric_label(key, activity_id)


def table_keys(activity_ids: Sequence[str]) -> dict[str, str]:
    """The scores a trials table of these activities' runs reports, with their headers:
    those with a short header (:func:`short_headers`), then the other metrics their scorers
    give of each answer's values, by their labels (one made of whole answers, a table or a
    ratio, is its activity's to show)."""
    from engine.activities import metric_label
    from engine.core.scoring import activity_metrics

    out = short_headers(activity_ids)
    for activity_id in activity_ids:
        for key, m in activity_metrics(activity_id).items():
            if not m.rows:
                out.setdefault(key, metric_label(key, activity_id))
    return out


def trial_tables(store: Store, run_ids: Sequence[int]) -> list[Table]:
    """A report table of the trial sets among ``run_ids``: per set its setting, trials and
    cases, and per score the mean ± the between-trial SD, with the 95% interval of a
    bootstrap clustered by case for the accuracy (none when there is no set)."""
    from engine.reports.label import run_label
    from engine.reports.shapes import table

    sets = trial_sets(store, run_ids)
    if not sets:
        return []
    rows: list[list[Any]] = []
    shown: list[str] = []
    firsts = {name: store.run(ids[0]) for name, ids in sets.items()}
    headers = table_keys(list(dict.fromkeys(str(r["activity"]) for r in firsts.values())))
    found = {name: spread(store, ids, list(headers)) for name, ids in sets.items()}
    for values in found.values():
        shown += [k for k in values if k not in shown]
    for name, ids in sets.items():
        first = firsts[name]
        values = found[name]
        cells: list[Any] = [spread_text(values[k]) if k in values else None for k in shown]
        temperature = (first.get("settings") or {}).get("temperature")
        rows.append(
            [
                name,
                ", ".join(f"#{i}" for i in ids),
                str(first.get("model") or ""),
                run_label(first),
                temperature,
                len(ids),
                values.get(right_key(str(first["activity"])) or "", {}).get("cases"),
                *cells,
            ]
        )
    return [
        table(
            "Repeated trials: mean ± spread between trials",
            [
                "Set",
                "Runs",
                "Model",
                "Setting",
                "Temperature",
                "Trials",
                "Cases",
                *(headers[k] for k in shown),
            ],
            rows,
            "Each trial plays every case once with its own seed. ± is the standard deviation "
            "between the trials' scores; brackets: the 95% interval of a bootstrap that "
            "resamples whole cases with all their trials (2000 resamples).",
        ),
        *_compared_sets(store, sets),
    ]


def _compared_sets(store: Store, sets: dict[str, list[int]]) -> list[Table]:
    """The table of every two trial sets compared, paired by case and trial
    (:func:`paired_sets`); none for fewer than two sets."""
    from itertools import combinations

    from engine.reports.shapes import table

    rows: list[list[Any]] = []
    for (name_a, a), (name_b, b) in combinations(sets.items(), 2):
        found = paired_sets(store, a, b)
        if found is None:
            continue
        diff = {"value": found["diff"], "low": found["low"], "high": found["high"],
                "too_few": found["too_few"]}  # fmt: skip
        p = TOO_FEW if found["too_few"] else found["p"]
        rows.append([name_a, name_b, found["trials"], found["cases"], found["pairs"],
                     found["only_a"], found["only_b"], diff, p])  # fmt: skip
    if not rows:
        return []
    headers = ["A", "B", "Trials", "Cases", "Pairs", "Right in A only", "Right in B only",
               "Accuracy B − A (points)", "Bootstrap p"]  # fmt: skip
    return [
        table(
            "Trial sets compared, paired by case and trial",
            headers,
            rows,
            "Each case of trial k of set A is paired with the same case of trial k of set B. "
            "The interval and p come from a bootstrap that resamples whole cases with all "
            "their trials' pairs (2000 resamples); p ≥ 0.05: within the noise.",
        )
    ]
