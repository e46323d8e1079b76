"""Compare models: runs of one activity on one data set, each through another model (or
quantization, or a local model against a served one), side by side on the items they all
answered.

Per run: each of the activity's metrics that its scorers pair item by item
(``Scorer.metrics``: accuracy for the exam, the Hamming score and EMR for French QA,
accuracy and patient and doctor F1 for a consultation) with its 95% interval, the paired
difference from the top model (the highest first metric) with its interval and p
(Newcombe's interval and McNemar's exact p for right/wrong, a paired bootstrap for other
scores; with more than one run compared with the top model, their p adjusted by Holm's
method), a verdict on each model against the reference (the top model, or one named) from
a paired equivalence test of the first metric when it is right/wrong
(:mod:`engine.reports.equivalence`: ``equivalent``, ``not equivalent``, ``worse`` or
``too few items`` within ± ``margin`` points, with the difference the items would detect
and the items that would settle it), what the model cost the run as the run loop recorded
it (:mod:`engine.models.usage`): its decode speed and time to first token alone, its
throughput at its slots, the time answers
waited for a slot, peak memory (RAM and GPU), load time and file size; and how each run's
numbers were made (:mod:`engine.reports.provenance`). A person's run on the same items (a
student's or a clinician's own answers) is a row too. Intervals and p from fewer than
:data:`~engine.reports.stats.MIN_ITEMS` items say so.

Each model's first score, when right/wrong, is tested against the data set's chance level
(its runs' summaries, :mod:`engine.core.chance`) with a one-sided exact binomial test: the best
model is the top one above chance at 5%, and none is best when none is (a model whose replies
echo the option list is not ranked above another). Each row carries its run's replies
without an answer by reason (``no_answer``) and cut off by the token limit (``cut_off``).

>>> result = compare_runs(store, [3, 4])                              # doctest: +SKIP
>>> print(format_compare(result))                                     # doctest: +SKIP
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from engine.activities import activity, metric_label
from engine.errors import UserError
from engine.experiments.size_chart import size_chart
from engine.experiments.verdicts import (
    judge,
    reference_name,
    reference_run,
    verdict_note,
    verdict_text,
)
from engine.reports.equivalence import MARGIN
from engine.reports.stats import (
    METHODS,
    MIN_ITEMS,
    TOO_FEW,
    holm,
    mean_cell,
    paired_difference,
    share_cell,
)
from engine.text.columns import fmt_number

if TYPE_CHECKING:
    from collections.abc import Mapping

    from engine.reports.shapes import ScoreCell
    from engine.store.store import Store
    from engine.types import JSONDict, Row


#: Where the notes under the text table wrap.
NOTE_COLUMNS = 100
#: A score's label longer than this heads its column by its key (the label under the table).
HEADER = 24
#: The speed columns of a comparison: a row's key, its header, the digits shown.
SPEEDS = (
    ("decode_alone_per_s", "Decode alone (tok/s)", 1),
    ("first_token_alone_s", "First token alone (s)", 2),
    ("throughput_per_s", "Throughput (tok/s)", 1),
    ("slots", "Slots", 0),
    ("slot_wait_s", "Slot wait (s)", 2),
)


@dataclass(frozen=True)
class Metric:
    """A summary metric paired item by item: the answers' score ``item`` it is the mean of,
    in percent when its label says so, right/wrong when that score is (``correct``…)."""

    key: str
    item: str
    label: str
    percent: bool


def metrics_of(activity_id: str) -> list[Metric]:
    """The metrics a comparison shows for an activity: its headline and run keys (in their
    order) that one of its scorers gives as a metric of an answer's score, then the metrics
    of the scorers added to those it lists (:func:`engine.core.scoring.activity_metrics`); a
    metric made of whole answers (``rows``: a ratio of two counts, a table) has no value per
    answer to pair and is left out."""
    from engine.core.scoring import activity_metrics

    declared = {k: m.of for k, m in activity_metrics(activity_id).items() if not m.rows}
    found = activity(activity_id)
    keys = [found.headline, *found.run_keys, *activity_metrics(activity_id, added=True)]
    out = []
    for key in dict.fromkeys(k for k in keys if k in declared):
        label = metric_label(key, activity_id)
        plain = label.removesuffix(" (%)").replace(", %)", ")")
        out.append(Metric(key, declared[key], plain, "%" in label))
    return out


class CompareError(UserError):
    """Runs that cannot be compared (too few, of different activities or data sets)."""


def _runs(store: Store, run_ids: list[int]) -> list[Row]:
    runs: list[Row] = [store.run(int(i)) for i in dict.fromkeys(run_ids)]
    if len(runs) < 2:
        raise CompareError("give at least two runs to compare")
    kinds = {(r["activity"], r["dataset"]) for r in runs}
    if len(kinds) > 1:
        seen = ", ".join(f"#{r['id']} {r['activity']} on {r['dataset']}" for r in runs)
        raise CompareError(f"compare runs of one activity on one data set ({seen})")
    return runs


def _person_run(store: Store, runs: list[Row], keys: set[str]) -> Row | None:
    """The newest person's run of the same activity and data set that answered every one
    of ``keys`` (None: there is none, or one is already compared)."""
    if any(r.get("runner") == "person" for r in runs):
        return None
    first = runs[0]
    for r in store.runs(first["activity"]):
        same = r.get("runner") == "person" and r["dataset"] == first["dataset"]
        if same and keys and keys <= store.answered_keys(int(r["id"])):
            return r
    return None


def _values(answers: Mapping[str, Row], keys: list[str], metric: Metric) -> dict[str, float]:
    """A run's values of ``metric`` on ``keys`` (percent where it is one): right/wrong
    counts an answer without it (a failed one) wrong; other scores leave it out."""
    scale = 100.0 if metric.percent else 1.0
    out = {}
    for k in keys:
        a = answers[k]
        if metric.item == "correct":
            out[k] = scale * bool(a.get("correct"))
            continue
        value = (a.get("scores") or {}).get(metric.item)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[k] = scale * float(value)
        elif isinstance(value, bool):
            out[k] = scale * value
    return out


def _right_wrong(values: list[dict[str, float]], metric: Metric) -> bool:
    top = 100.0 if metric.percent else 1.0
    return all(v in (0.0, top) for vals in values for v in vals.values())


def _usage(run: Row) -> JSONDict:
    """What the run's model cost it, as the run loop stored it (empty for a person)."""
    usage = (run.get("summary") or {}).get("usage") or {}
    if not isinstance(usage, dict) or not usage:
        return {}
    found = usage.get(run.get("model")) or (next(iter(usage.values())) if len(usage) == 1 else {})
    return found if isinstance(found, dict) else {}


def compare_runs(
    store: Store,
    run_ids: list[int],
    people: bool = True,
    margin: float = MARGIN,
    reference: str | None = None,
) -> JSONDict:
    """Runs ``run_ids`` compared on the items they all answered (see the module): JSON-ready,
    ``{activity, dataset, items, metrics, best, reference, margin, rows, chart, notes}``.
    With ``people`` the newest person's run on the same data set that answered those items
    joins as a row. Each run is paired with ``reference`` (a model's name or a run's id;
    by default the best) and judged equivalent or not within ± ``margin`` points."""
    if not 0 < margin < 100:
        raise CompareError(f"the margin is in points between 0 and 100, not {margin:g}")
    runs = _runs(store, run_ids)
    answers = {int(r["id"]): {str(a["item_key"]): a for a in store.answers(int(r["id"]))}
               for r in runs}  # fmt: skip
    shared = set.intersection(*(set(a) for a in answers.values()))
    sets = _trial_sets(store, runs)
    later = {i for ids in sets.values() for i in ids[1:]}
    runs = [r for r in runs if int(r["id"]) not in later]
    person = _person_run(store, runs, shared) if people else None
    if person is not None:
        runs.append(person)
        answers[int(person["id"])] = {str(a["item_key"]): a for a in store.answers(person["id"])}
    if not shared:
        raise CompareError("the runs share no answered item")
    order = {k: i for i, k in enumerate(answers[int(runs[0]["id"])])}
    keys = sorted(shared, key=lambda k: order.get(k, 0))
    metrics, values = _metric_values(runs[0]["activity"], runs, answers, keys, sets)
    models = [r for r in runs if r.get("runner") != "person"] or runs  # people only: them
    lead = metrics[0] if metrics else None
    top = max(models, key=lambda r: _mean(values[lead.key][int(r["id"])]) if lead else 0)
    ref = reference_run(runs, reference) if reference else top
    rows = [_row(store, r, answers, values, metrics, ref, len(keys)) for r in runs]
    for row in rows:
        row["best"] = row["run_id"] == int(top["id"])  # the top one; above chance: below
        judge(row, values, lead, int(ref["id"]), margin)
        row["trial_runs"] = sets.get(row["run_id"], [row["run_id"]])
        if len(row["trial_runs"]) > 1 or ref["id"] in sets:
            _clustered(row)
    _adjust(rows, metrics)
    best = _above_chance(runs, rows, values, metrics)
    result: JSONDict = {
        "activity": runs[0]["activity"],
        "dataset": runs[0]["dataset"],
        "items": {
            "shared": len(keys),
            "by_run": {str(r["id"]): len(answers[int(r["id"])]) for r in runs},
            "different": any(len(answers[int(r["id"])]) != len(keys) for r in runs),
        },
        "metrics": [{"key": m.key, "label": m.label, "percent": m.percent} for m in metrics],
        "best": best,
        "top": int(top["id"]),
        "reference": int(ref["id"]),
        "margin": margin,
        "chance": _chance_of(runs[0], lead.key) if lead else None,
        "rows": rows,
        "min_items": MIN_ITEMS,
    }
    result["chart"] = size_chart(result)
    result["notes"] = _notes(result)
    return result


def _trial_sets(store: Store, runs: list[Row]) -> dict[int, list[int]]:
    """The trial sets of which several runs are compared: each set's first run given, with
    all its runs given (in trial order)."""
    from engine.core.trials import trial_sets

    found = trial_sets(store, [int(r["id"]) for r in runs])
    return {ids[0]: ids for ids in found.values() if len(ids) > 1}


def _clustered(row: JSONDict) -> None:
    """A trial set's row, or a row compared with one: its bootstrap resampled whole items
    with all their trials (each item's score its mean over them), named so."""
    for diff in (row["paired"] or {}).values():
        if diff.get("test") == "paired bootstrap":
            diff["test"] = diff["method"] = "cluster bootstrap"


def _chance_of(run: Row, key: str) -> float | None:
    """The chance level (percent) of score ``key`` on the run's data set, as its summary
    gives it (:mod:`engine.core.chance`); None when it gives none."""
    found = ((run.get("summary") or {}).get("chance") or {}).get(key)
    return float(found) if isinstance(found, int | float) else None


def _above_chance(
    runs: list[Row],
    rows: list[JSONDict],
    values: dict[str, dict[int, dict[str, float]]],
    metrics: list[Metric],
) -> int | None:
    """Mark each row's first right/wrong score that has a chance level (accuracy; EMR for
    French QA) against chance (``chance``: the ``metric``, its ``level``, the one-sided exact
    binomial ``p``, whether it is ``above`` at 5%; None without such a score) and its no
    answers; the best model: the top one if it is above chance (or not tested), else none."""
    from engine.core.chance import LEVEL, above_chance

    for run, row in zip(runs, rows, strict=True):
        summary = run.get("summary") or {}
        shares = summary.get("no_answer")
        row["no_answer"] = shares if isinstance(shares, dict) else None
        row["cut_off"] = summary.get("cut_off")
        row["chance"] = None
        for m in metrics:
            level, mine = _chance_of(run, m.key), values[m.key][int(run["id"])]
            if level is None or not mine or not _right_wrong([mine], m):
                continue
            right = sum(1 for v in mine.values() if v > 0)
            p = above_chance(right, len(mine), level / 100)
            row["chance"] = {"metric": m.key, "level": level, "p": round(p, 4), "above": p < LEVEL}
            break
    ranked = [r for r in rows if r["best"] and (r["chance"] is None or r["chance"]["above"])]
    for row in rows:
        row["best"] = bool(ranked) and row is ranked[0]
    return int(ranked[0]["run_id"]) if ranked else None


def _metric_values(
    activity_id: str,
    runs: list[Row],
    answers: Mapping[int, Mapping[str, Row]],
    keys: list[str],
    sets: dict[int, list[int]],
) -> tuple[list[Metric], dict[str, dict[int, dict[str, float]]]]:
    """The metrics some run has values of, and each run's values of each on ``keys`` (a
    trial set's, ``sets``: each item's mean over its trials)."""
    metrics, values = [], {}
    for m in metrics_of(activity_id):
        found = {}
        for r in runs:
            each = [_values(answers[i], keys, m) for i in sets.get(int(r["id"]), [int(r["id"])])]
            found[int(r["id"])] = {
                k: sum(v[k] for v in each) / len(each) for k in each[0] if all(k in v for v in each)
            }
        if any(found.values()):
            metrics.append(m)
            values[m.key] = found
    return metrics, values


def _mean(values: dict[str, float]) -> float:
    return sum(values.values()) / len(values) if values else float("-inf")


def _adjust(rows: list[JSONDict], metrics: list[Metric]) -> None:
    """With more than one run compared with the best, each metric's p adjusted over them
    by Holm's method (``p``; the test's own in ``p_unadjusted``, ``adjusted``: "holm")."""
    for m in metrics:
        found = [r["paired"][m.key] for r in rows if (r["paired"] or {}).get(m.key)]
        adjusted = holm([d["p"] for d in found]) if len(found) > 1 else [d["p"] for d in found]
        for diff, p in zip(found, adjusted, strict=True):
            diff["p_unadjusted"] = diff["p"]
            diff["adjusted"] = "holm" if len(found) > 1 else None
            diff["p"] = p


def _row(
    store: Store,
    run: Row,
    answers: Mapping[int, Mapping[str, Row]],
    values: dict[str, dict[int, dict[str, float]]],
    metrics: list[Metric],
    ref: Row,
    n: int,
) -> JSONDict:
    from engine.reports.label import run_label
    from engine.reports.provenance import how_made

    run_id, ref_id = int(run["id"]), int(ref["id"])
    scores: JSONDict = {}
    paired: JSONDict = {}
    for m in metrics:
        mine, theirs = values[m.key][run_id], values[m.key][ref_id]
        binary = _right_wrong([mine, theirs], m)
        scores[m.key] = _score_cell(mine, binary, m)
        if run_id != ref_id:
            both = [k for k in mine if k in theirs]
            top = 100.0 if m.percent else 1.0
            diff = paired_difference(
                [theirs[k] for k in both], [mine[k] for k in both], binary, top=top
            )
            paired[m.key] = {**diff, "vs": ref_id}
    usage = _usage(run)
    person = run.get("runner") == "person"
    return {
        "run_id": run_id,
        "model": "person" if person else run.get("model"),
        "runner": run.get("runner"),
        "label": run_label(run),
        "answered": len(answers[run_id]),
        "items": n,
        "reference": run_id == ref_id,
        "scores": scores,
        "paired": paired or None,
        "tokens_per_s": usage.get("tokens_per_s"),
        "first_token_s": usage.get("first_token_s"),
        **{key: usage.get(key) for key, _, _ in SPEEDS},
        "memory": usage.get("memory") or {"ram_peak": None, "gpu": None},
        "load_s": usage.get("load_s"),
        "file_size": usage.get("file_size"),
        "quantization": usage.get("quantization"),
        "device": usage.get("device"),
        "made": how_made(store, run, answers[run_id].values()),
    }


def _score_cell(values: dict[str, float], binary: bool, metric: Metric) -> JSONDict | None:
    """A run's score with its 95% interval: Wilson for right/wrong, else a bootstrap."""
    if not values:
        return None
    if binary:
        top = 100.0 if metric.percent else 1.0
        right = sum(1 for v in values.values() if v == top)
        cell: Mapping[str, Any] | None = share_cell(right, len(values))
        if cell is not None and not metric.percent:
            cell = {k: (v / 100 if v is not None else None) for k, v in cell.items()}
    else:
        cell = mean_cell(list(values.values()))
    if cell is None:
        return None
    return {"low": None, "high": None, "too_few": False, **cell, "n": len(values)}


def _notes(result: JSONDict) -> list[str]:
    items = result["items"]
    notes = []
    if items["different"]:
        counts = ", ".join(f"#{k} answered {v}" for k, v in items["by_run"].items())
        notes.append(
            f"The runs cover different items ({counts}): all are compared on the "
            f"{items['shared']} items every run answered."
        )
    notes.append(
        "Brackets: 95% interval. Right/wrong scores (every item 0 or 100%): "
        f"{METHODS['wilson']} for a score; Δ, the paired difference from the "
        f"{reference_name(result)} on the same items, with {METHODS['newcombe']} and the p of "
        f"{METHODS['McNemar']}. Other scores: a bootstrap's interval, and "
        f"{METHODS['paired bootstrap']} for Δ and p. A bootstrap needs {MIN_ITEMS} items: "
        f"below, '{TOO_FEW}'. The table shows the paired test of the first score; --json "
        "gives every score's."
    )
    notes.append(verdict_note(result))
    for row in result["rows"]:
        ids = row.get("trial_runs") or []
        if len(ids) > 1:
            notes.append(
                f"#{ids[0]} is a trial set of {len(ids)} runs ({', '.join(f'#{i}' for i in ids)}): "
                "each item's score is its mean over the trials, so its interval and paired test "
                f"resample whole items with all their trials ({METHODS['cluster bootstrap']})."
            )
    compared = sum(1 for r in result["rows"] if r["paired"])
    if compared > 1:
        notes.append(
            f"p: {METHODS['holm']} ({compared} runs compared with the top model; --json keeps "
            "each test's own p as p_unadjusted)."
        )
    notes += _chance_notes(result)
    notes.append(
        "Speed: decode alone, the model's tokens per second decoding one sequence (passes "
        "that decoded nothing else); first token alone, the mean seconds to read a prompt "
        "and give the first token with the model to itself (what a chat user waits); "
        "throughput, tokens per second of the whole run with its slots decoding at once "
        "(what an evaluation gets); slot wait, the mean seconds an answer waited for a "
        "slot. RAM: the model process's peak, which includes each slot's cache (the "
        "context every slot keeps), so the same model takes more with more Slots; GPU: its "
        "buffers on the GPU."
    )
    from engine.reports.provenance import made_text

    notes += [made_text(r["made"]) for r in result["rows"]]
    return notes


def _chance_notes(result: JSONDict) -> list[str]:
    """The chance line and each run's replies without an answer, by reason."""
    from engine.core.no_answer import shares_text

    labels = {m["key"]: m["label"].lower() for m in result["metrics"]}
    lead = result["metrics"][0]["key"] if result["metrics"] else ""
    tested = next((r["chance"] for r in result["rows"] if r.get("chance")), None)
    notes = []
    if result.get("chance") is not None and tested is not None:
        best = "" if result.get("best") is not None else " No model is above chance: none is best."
        level = (
            ""
            if tested["metric"] == lead
            else f" ({tested['level']:.1f}% {labels[tested['metric']]})"
        )
        notes.append(
            f"Chance: {result['chance']:.1f}% {labels[lead]}{level} by uniform guessing (one "
            "option of k with probability 1/k; of several right options, a non-empty subset, "
            "each alike). vs chance: the one-sided exact binomial p of the right answers "
            f"({labels[tested['metric']]}) against it; 'not above' when p ≥ 0.05.{best}"
        )
    for r in result["rows"]:
        if r.get("no_answer"):
            notes.append(f"#{r['run_id']} no answer: {shares_text(r['no_answer'])}.")
    return notes


def _chance_cell(row: JSONDict) -> str:
    found = row.get("chance")
    if not found:
        return "–"
    return f"{'above' if found['above'] else 'not above'} (p {fmt_number(found['p'], unit='p')})"


def _no_answer_cell(row: JSONDict) -> str:
    shares = row.get("no_answer")
    return "–" if shares is None else f"{sum(shares.values()):.1f}"


def _p_text(diff: JSONDict) -> str:
    if diff.get("p") is None:
        return TOO_FEW if diff.get("too_few") and diff.get("n") else "–"
    test = {"McNemar": "McNemar", "cluster bootstrap": "bootstrap by case"}
    named = test.get(str(diff.get("test")), "bootstrap")
    return f"{fmt_number(diff['p'], unit='p')} ({named}{', Holm' if diff.get('adjusted') else ''})"


def _size(n: Any) -> str:
    from engine.models.gpu import _mib

    return _mib(int(n)) if isinstance(n, int | float) and n else "–"


def _number(value: Any, digits: int = 1) -> str:
    return f"{value:.{digits}f}" if isinstance(value, int | float) else "–"


def format_compare(result: JSONDict) -> str:
    """The comparison as a text table with its notes under it."""
    from engine.text.columns import align_rows

    headers, rows = compare_table(result)
    names = _names(result["metrics"])
    title = f"Models compared on {result['dataset']}: {result['items']['shared']} items"
    right = [False, False, *([True] * (len(headers) - 2))]
    keyed = [
        f"{m['key']}: {m['label']}" for m in result["metrics"] if names[m["key"]] != m["label"]
    ]
    notes = [textwrap.fill(n, NOTE_COLUMNS) for n in [*result["notes"], *keyed]]
    return "\n".join([title, "", *align_rows(headers, rows, right), "", *notes]) + "\n"


def _names(metrics: list[JSONDict]) -> dict[str, str]:
    """Each score's column header: its label, or its key when the label is long."""
    return {m["key"]: m["label"] if len(m["label"]) <= HEADER else m["key"] for m in metrics}


def compare_table(result: JSONDict) -> tuple[list[str], list[list[str]]]:
    """The comparison's headers and rows as text (the text table's and the app's): per run
    its scores with their intervals, the paired test of the first score, speed and memory."""
    from engine.reports.render import fmt_cell

    metrics = result["metrics"]
    names = _names(metrics)
    headers = ["Run", "Model", "Items"]
    for m in metrics:
        headers.append(names[m["key"]] + (" (%)" if m["percent"] else ""))
    lead = metrics[:1]  # the text shows the paired test of the first; JSON of every one
    for m in lead:
        headers += [f"Δ {names[m['key']]}", "p", f"Verdict (± {result['margin']:g})"]
    headers += ["vs chance", "No answer (%)", "Cut off (%)"]
    headers += [header for _, header, _ in SPEEDS]
    headers += ["RAM peak", "GPU", "Load (s)", "File"]
    rows = []
    for r in result["rows"]:
        trials = len(r.get("trial_runs") or [])
        shown = f"#{r['run_id']}" + (f" ({trials} trials)" if trials > 1 else "")
        cells = [shown, str(r["model"]), str(r["items"])]
        scores = [r["scores"].get(m["key"]) for m in metrics]
        cells += [fmt_cell(cast("ScoreCell", {**c, "n": None}) if c else None) for c in scores]
        for m in lead:
            diff = (r["paired"] or {}).get(m["key"])
            if r["reference"]:
                cells += ["best" if r["best"] else "ref", ""]
            elif diff is None:
                cells += ["–", "–"]
            else:
                cell: ScoreCell = {"value": diff["diff"], "low": diff["low"], "high": diff["high"],
                                   "too_few": diff["too_few"]}  # fmt: skip
                cells += [fmt_cell(cell), _p_text(diff)]
            cells.append(verdict_text(r))
        cells += [_chance_cell(r), _no_answer_cell(r), _number(r.get("cut_off"))]
        memory = r.get("memory") or {}
        cells += [_number(r.get(key), digits) for key, _, digits in SPEEDS]
        cells += [
            _size(memory.get("ram_peak")),
            "0" if memory.get("gpu") == 0 else _size(memory.get("gpu")),
            _number(r.get("load_s"), 2),
            _size(r.get("file_size")) + (f" {r['quantization']}" if r.get("quantization") else ""),
        ]
        rows.append(cells)
    return headers, rows
