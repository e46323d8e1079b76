"""A French data set described as the FrenchMedMCQA paper describes its own (its §2.1): the
questions by number of right answers, the length of the questions and of the options in
words and in characters, and the size of the vocabulary.

A word is a run of letters or digits (``\\w+``: an apostrophe or a hyphen splits ``l'acide``
and ``anti-inflammatoire`` in two); the vocabulary is the distinct words of the questions and
their options, lower-cased, accents kept. Characters are counted as written, spaces included.

>>> found = dataset_stats([{"question": "Quel est le pH ?", "correct_answers": ["a"],
...     "answers": {"a": "7,4", "b": "Acide", "c": "acide", "d": "8", "e": "6"}}])
>>> found["by_n_answers"]["1"], found["question"]["words"]["mean"], found["vocabulary"]
({'n': 1, 'share': 100.0}, 4.0, 9)
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from engine.french.items import gold, options

if TYPE_CHECKING:
    from engine.store.store import Store
    from engine.types import JSONDict

_WORD = re.compile(r"\w+", re.UNICODE)
#: Right answers a FrenchMedMCQA question may have.
ANSWER_COUNTS = ("1", "2", "3", "4", "5")


def words(text: str) -> list[str]:
    """The words of ``text`` (see the module docstring)."""
    return _WORD.findall(text)


def _spread(values: Sequence[int]) -> JSONDict:
    """Mean (two decimals), median, smallest and largest of ``values``."""
    if not values:
        return {"mean": 0.0, "median": 0, "min": 0, "max": 0}
    return {
        "mean": round(statistics.fmean(values), 2),
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
    }


def _lengths(texts: Sequence[str]) -> JSONDict:
    return {"words": _spread([len(words(t)) for t in texts]), "chars": _spread([len(t) for t in texts])}  # fmt: skip


def dataset_stats(items: Sequence[JSONDict]) -> JSONDict:
    """§2.1's figures for ``items`` (FrenchMedMCQA questions as stored): ``n``,
    ``by_n_answers`` (count and share in % per number of right answers, 1 to 5),
    ``mean_answers``, ``question`` and ``option`` lengths (``words`` and ``chars``: mean,
    median, min, max), ``vocabulary`` (distinct words), ``tokens`` (words in all) and
    ``by_subject`` when the questions name one."""
    n = len(items)
    counts = Counter(len(gold(item)) for item in items)
    questions = [str(item["question"]) for item in items]
    option_texts = [str(text) for item in items for _, text in options(item)]
    every = [w.lower() for text in (*questions, *option_texts) for w in words(text)]
    subjects = Counter(str(item["subject_name"]) for item in items if item.get("subject_name"))
    return {
        "n": n,
        "by_n_answers": {
            k: {"n": counts[int(k)], "share": round(100 * counts[int(k)] / n, 2) if n else 0.0}
            for k in ANSWER_COUNTS
        },
        "mean_answers": round(sum(k * c for k, c in counts.items()) / n, 2) if n else 0.0,
        "question": _lengths(questions),
        "option": _lengths(option_texts),
        "vocabulary": len(set(every)),
        "tokens": len(every),
        "by_subject": dict(subjects.most_common()),
    }


def stored_stats(store: Store, dataset: str) -> JSONDict:
    """:func:`dataset_stats` of a stored French data set (one that is not, or is another
    activity's, is one line: :func:`engine.core.run_checks.check_dataset`), named."""
    from engine.core.run_checks import check_dataset

    check_dataset(store, "french", dataset)
    return {"dataset": dataset, **dataset_stats(store.items(dataset))}


def stats_lines(found: JSONDict) -> list[str]:
    """The figures as the lines ``medexam french stats`` prints."""
    n = found["n"]
    lines = [f"data set    {found['dataset']} ({n} questions)", "questions by number of right answers:"]  # fmt: skip
    for k, block in found["by_n_answers"].items():
        lines.append(f"  {k}: {block['n']:>6}  ({block['share']:5.2f}%)")
    lines.append(f"  mean right answers per question: {found['mean_answers']:.2f}")
    lines.append("lengths            words: mean  median  min  max   characters: mean  median  min  max")  # fmt: skip
    for label, key in (("question", "question"), ("option (each)", "option")):
        w, c = found[key]["words"], found[key]["chars"]
        lines.append(
            f"  {label:<16} {w['mean']:>11.2f} {w['median']:>7} {w['min']:>4} {w['max']:>4}"
            f"   {c['mean']:>16.2f} {c['median']:>7} {c['min']:>4} {c['max']:>4}"
        )
    lines.append(f"vocabulary  {found['vocabulary']} distinct words (lower-cased) of {found['tokens']} in all")  # fmt: skip
    if found["by_subject"]:
        shown = ", ".join(f"{s} {c}" for s, c in found["by_subject"].items())
        lines.append(f"subjects    {shown}")
    return lines
