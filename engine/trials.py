"""Repeated trials: a score that comes from sampling models (a consultation: two models
talking) varies from run to run, so one run's number cannot tell two doctors apart. A trial
set plays the same settings K times with K recorded seeds (``seed``, ``seed + 1``, …) at a
stated temperature: K runs, each stored, resumable and scored like any other, tagged with
their trial number and set. :func:`spread` gives the mean over trials, the between-trial
standard deviation and a 95% interval from a bootstrap clustered by case (whole cases
resampled, each with all its trials), as CRAFT-MD reports its five trials.

>>> result = run_trials(store, "consult", "osce", {"doctor": "model", "temperature": 0.7}, 5)  # doctest: +SKIP
>>> spread(store, result.run_ids)["accuracy"]                                  # doctest: +SKIP
{'mean': 41.2, 'sd': 3.1, 'low': 33.0, 'high': 49.5, 'trials': [40.0, 38.0, …], 'cases': 20}
"""

from __future__ import annotations

import secrets
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.errors import UserError
from engine.scoring import failed

if TYPE_CHECKING:
    from engine.store import Store
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
    if trials > 1 and not float(settings.get("temperature") or 0.0) > 0:
        raise TrialError(
            f"{trials} trials at temperature 0 would all be the same: give --temperature above 0"
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
    :func:`new_name`); or, with ``resume`` (a set's name), go on with that set: its unfinished trials resumed, its missing ones started. ``on_trial(k, K)`` is
    called as trial ``k`` starts; ``options`` are :func:`engine.runs.run`'s (``pool``,
    ``progress``, ``cancel``, ``concurrency``…). A trial that ends cancelled or failed stops
    the set (resume it to go on)."""
    from engine.runs import run

    done: dict[int, Row] = {}
    if resume is not None:
        done = trial_runs(store, resume)
        if not done:
            raise TrialError(f"no trial set {resume!r}")
        first = done[min(done)]
        settings = {"model": first["model"], **(first["settings"] or {})}
        trials, dataset = int(settings.get("trials") or len(done)), first["dataset"]
    check_trials(settings, trials)
    name = resume or name or new_name()
    base = int(settings.get("seed") or 0) - (int(settings.get("trial") or 1) - 1)
    out = Trials(name)
    for k in range(1, trials + 1):
        if on_trial is not None:
            on_trial(k, trials)
        old = done.get(k)
        tags = {"trial": k, "trials": trials, "trial_set": name}
        if old is not None and old["status"] == "finished":
            summary = {**(old.get("summary") or {}), "run_id": old["id"], "status": "finished"}
        elif old is not None:
            summary = run(store, activity_id, None, {}, resume=int(old["id"]), **options)
        else:
            given = {k2: v for k2, v in settings.items() if k2 not in tags}
            summary = run(
                store, activity_id, dataset, {**given, "seed": base + k - 1}, tags=tags, **options
            )
        out.run_ids.append(int(summary["run_id"]))
        out.summaries.append(summary)
        if summary.get("status") != "finished":
            break
    return out


def _per_case(store: Store, run_ids: Sequence[int], key: str) -> dict[str, list[float]]:
    """Each case's value of ``key`` in every trial (accuracy: 100 for right, 0 otherwise)."""
    out: dict[str, list[float]] = {}
    for run_id in run_ids:
        for a in store.answers(run_id):
            if key == "accuracy":
                value = 0.0 if failed(a) else 100.0 * bool(a["correct"])
            else:
                raw = (a.get("scores") or {}).get(key)
                if not isinstance(raw, int | float):
                    continue
                value = float(raw)
            out.setdefault(str(a["item_key"]), []).append(value)
    return out


def clustered_interval(
    per_case: dict[str, list[float]], resamples: int = RESAMPLES, seed: int = SEED
) -> tuple[float, float] | None:
    """A 95% percentile interval of the mean over all trials' values, resampling whole
    cases (with all their trials); None for fewer than two cases."""
    import numpy as np

    groups = [np.asarray(v, dtype=float) for v in per_case.values() if v]
    if len(groups) < 2:
        return None
    sums = np.array([g.sum() for g in groups])
    counts = np.array([len(g) for g in groups], dtype=float)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(groups), size=(resamples, len(groups)))
    means = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def spread(
    store: Store, run_ids: Sequence[int], keys: Sequence[str] = ("accuracy",)
) -> dict[str, JSONDict]:
    """Per summary key: each trial's value (from its run's summary), their ``mean`` and
    between-trial ``sd`` (None for one trial), and for per-case scores (``accuracy``, and
    the scores answers carry) the 95% interval ``low``–``high`` of a bootstrap clustered by
    case."""
    runs = [store.run(int(r)) for r in run_ids]
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
        ci = clustered_interval(per_case) if key == "accuracy" else None
        entry["low"], entry["high"] = (round(ci[0], 2), round(ci[1], 2)) if ci else (None, None)
        entry["cases"] = len(per_case)
        out[key] = entry
    return out


def spread_text(entry: JSONDict) -> str:
    """One key's spread in words: ``41.20 ± 3.10 [33.0, 49.5]`` (mean ± between-trial SD
    [95% interval]), the parts a set does not have left out."""
    sd = f" ± {entry['sd']:.2f}" if entry.get("sd") is not None else ""
    ci = f" [{entry['low']:.1f}, {entry['high']:.1f}]" if entry.get("low") is not None else ""
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


#: The scores a trials table reports (those the runs' summaries have), with short headers.
TABLE_KEYS = {
    "accuracy": "Accuracy (%)",
    "hamming": "Hamming (%)",
    "patient_recall": "Patient R",
    "patient_f1": "Patient F1",
    "doctor_f1": "Doctor F1",
    "avg_turns": "Turns",
}


def trial_tables(store: Store, run_ids: Sequence[int]) -> list[JSONDict]:
    """A report table of the trial sets among ``run_ids``: per set its setting, trials and
    cases, and per score the mean ± the between-trial SD, with the 95% interval of a
    bootstrap clustered by case for the accuracy (none when there is no set)."""
    from engine.reports.label import run_label
    from engine.reports.layouts import table

    sets = trial_sets(store, run_ids)
    if not sets:
        return []
    rows: list[list[Any]] = []
    shown: list[str] = []
    found = {name: spread(store, ids, list(TABLE_KEYS)) for name, ids in sets.items()}
    for values in found.values():
        shown += [k for k in values if k not in shown]
    for name, ids in sets.items():
        first = store.run(ids[0])
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
                values.get("accuracy", {}).get("cases"),
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
                *(TABLE_KEYS[k] for k in shown),
            ],
            rows,
            "Each trial plays every case once with its own seed. ± is the standard deviation "
            "between the trials' scores; brackets: the 95% interval of a bootstrap that "
            "resamples whole cases with all their trials (2000 resamples).",
        )
    ]
