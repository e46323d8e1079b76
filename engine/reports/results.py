"""Reading stored runs for review: summary metrics by name, scores by category, and two runs
compared item by item. The desktop app's results screen and any other viewer draw these.

>>> summary_rows({"n": 3, "accuracy": 66.7, "by_type": {}, "recall_at_k": {"1": 0.5}})
[('n', 'Items', 3), ('accuracy', 'Accuracy (%)', 66.7), ('recall_at_k.1', 'Recall at k: 1', 0.5)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from engine.activities import activity as activity_of
from engine.activities import find_label, metric_label

if TYPE_CHECKING:
    from engine.activities import Breakdown
    from engine.store.store import Store

# Summary entries that are not metrics.
_NOT_METRICS = {"run_id", "dataset", "model", "settings", "status", "items", "error"}


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, int | float | str | bool)


def summary_rows(
    summary: Mapping[str, Any] | None,
    activity: str | None = None,
    keys: Sequence[str] | None = None,
) -> list[tuple[str, str, Any]]:
    """The scalar entries of a run summary as ``(key, label, value)``, labelled as
    ``activity`` names them (:func:`engine.activities.metric_label`), nested blocks of
    scalars flattened one level (``recall_at_k`` → "Recall at k: 1"); ``by_…`` breakdowns
    are left to :func:`category_scores`. With ``keys``, only those entries, in that order
    (the activity's ``run_keys`` give the few a model run ends with)."""
    rows = _all_summary_rows(summary, activity)
    if keys is None:
        return rows
    found = {row[0]: row for row in rows}
    return [found[key] for key in keys if key in found and found[key][2] is not None]


def answer_label(key: str, activity: str | None) -> str:
    """An answer's score in words, as ``activity`` names it (an answer holds fractions, not
    the percentages of a run's summary).

    >>> answer_label("rouge1", "exam")
    'ROUGE-1'
    """
    return metric_label(key, activity).removesuffix(" (%)").replace(", %)", ")")


def running_score(activity: str, answers: Sequence[dict[str, Any]]) -> tuple[float | None, int]:
    """The activity's headline score (percent) over the answers given so far, and how many
    of them are wholly right. Each answer is what a run reports as it goes (``correct``,
    ``scores``): a headline of each answer's ``correct`` (accuracy) from ``correct``, any
    other (the Hamming score) from the score its metric reduces, where 1 is wholly right.

    >>> running_score("french", [{"scores": {"hamming": 1.0}}, {"scores": {"hamming": 0.5}}])
    (75.0, 1)
    """
    from engine.core.scoring import activity_metrics

    headline = activity_of(activity).headline
    m = activity_metrics(activity).get(headline)
    of = m.of if m is not None else headline
    if of == "correct":
        values = [1.0 if a.get("correct") else 0.0 for a in answers]
    else:
        values = [float((a.get("scores") or {}).get(of) or 0.0) for a in answers]
    if not values:
        return None, 0
    return 100 * sum(values) / len(values), sum(1 for v in values if v == 1.0)


def _all_summary_rows(
    summary: Mapping[str, Any] | None, activity: str | None = None
) -> list[tuple[str, str, Any]]:
    out: list[tuple[str, str, Any]] = []
    for key, value in (summary or {}).items():
        if key in _NOT_METRICS or key.startswith("by_"):
            continue
        label = metric_label(key, activity)
        if isinstance(value, dict):
            for sub, v in value.items():
                if _scalar(v):
                    named = find_label(f"{key}.{sub}", activity) or f"{label}: {sub}"
                    out.append((f"{key}.{sub}", named, v))
        elif _scalar(value):
            out.append((key, label, value))
    return out


def _from_summary(run: Mapping[str, Any]) -> Breakdown | None:
    """The run's scores by category as its activity reads them from its summary
    (``Activity.breakdown``); None when it gives none."""
    from engine.activities import activities

    found = activities().get(str(run.get("activity")))
    if found is None or found.breakdown is None:
        return None
    return found.breakdown.load()(run.get("summary") or {})


def category_scores(
    run: Mapping[str, Any], store: Store | None = None
) -> tuple[str, list[tuple[str, float, int]]]:
    """Scores by category of one run, as ``(what, [(category, score %, n)])``.

    Taken from the run's summary where the activity gives a breakdown
    (``Activity.breakdown``: an exam's by question type, French QA's by number of right
    answers); otherwise, with ``store``, the share of correct answers per item category
    (``type1`` or ``category``) of the run's data set. ``("", [])`` when there is none, or
    when the data set is gone.
    """
    found = _from_summary(run)
    if found is not None:
        return found
    if store is None:
        return "", []
    items = store.items_by_key(run["dataset"])
    if items is None:
        return "", []
    groups: dict[str, list[bool]] = {}
    for a in store.answers(run["id"]):
        item = items.get(str(a["item_key"]), {})
        cat = item.get("type1") or item.get("category")
        if cat and a.get("correct") is not None:
            groups.setdefault(str(cat), []).append(bool(a["correct"]))
    return "Accuracy by category", [
        (k, 100.0 * sum(v) / len(v), len(v)) for k, v in sorted(groups.items())
    ]


def compare_runs(store: Store, a: int, b: int) -> dict[str, Any]:
    """Two runs side by side: their summary metrics and how they answered the same items.

    Returns ``{"a": run a, "b": run b, "metrics", "items", "agree"}``: ``metrics`` is
    ``[(label, value_a, value_b)]`` over the summary entries of either run (see
    :func:`summary_rows`), in order of first appearance; ``items`` is ``[(key, answer_a,
    answer_b, correct_a, correct_b)]`` for the items both runs answered, in run a's order;
    ``agree`` counts the items they answered alike; ``warnings`` says what makes the two not
    comparable (consultation runs whose tasks different solvers answered).
    """
    ra, rb = store.run(a), store.run(b)
    rows_a = summary_rows(ra["summary"], ra.get("activity"))
    rows_b = summary_rows(rb["summary"], rb.get("activity"))
    sa = {k: v for k, _label, v in rows_a}
    sb = {k: v for k, _label, v in rows_b}
    labels = {k: label for k, label, _v in rows_a + rows_b}
    metrics = [(labels[k], sa.get(k), sb.get(k)) for k in dict.fromkeys([*sa, *sb])]
    ans_a = {x["item_key"]: x for x in store.answers(a)}
    ans_b = {x["item_key"]: x for x in store.answers(b)}
    items = [
        (k, x.get("chosen"), ans_b[k].get("chosen"), x.get("correct"), ans_b[k].get("correct"))
        for k, x in ans_a.items()
        if k in ans_b
    ]
    agree = sum(1 for _k, x, y, _cx, _cy in items if x == y)
    warnings = _solver_warnings(ra, rb)
    return {
        "a": ra,
        "b": rb,
        "metrics": metrics,
        "items": items,
        "agree": agree,
        "warnings": warnings,
    }


def _solver_warnings(ra: Mapping[str, Any], rb: Mapping[str, Any]) -> list[str]:
    """A line for each setting that two runs of one activity must share to be compared
    (``Activity.compare_warnings``: the consultation's solver) and do not."""
    from engine.activities import activities

    found = activities().get(str(ra.get("activity")))
    if found is None or ra.get("activity") != rb.get("activity"):
        return []
    out = []
    for keys, message in found.compare_warnings.items():
        sa, sb = (
            next((s[k] for k in keys.split("|") if (s := r.get("settings") or {}).get(k)), None)
            for r in (ra, rb)
        )
        if sa and sb and sa != sb:
            out.append(message.format(a=sa, b=sb))
    return out
