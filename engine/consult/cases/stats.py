"""A case set described as the consultation paper describes its test sets: Table 1 and
Figure 4.

Table 1 gives, for a set of cases, the number of instances, the options per question (of
its multiple-choice tasks), the mean tokens of the medical information and of the initial
request, and the facts per case. Tokens are words as ROUGE counts them
(:func:`engine.text.rouge.tokenize`: lower-cased words, jieba segments for Chinese); the medical
information is the vignette a case was converted from (``meta.information``), else its
facts' values. Figure 4 is the most frequent fact keys (a repeated key's number, ``Age (2)``,
dropped; the part before `` - `` kept, as ``Vital signs - Pulse`` counts as ``Vital signs``).

>>> from engine.consult.cases.cases import Case
>>> case = Case.from_dict({"id": "1", "facts": [{"key": "Age", "value": "24 years"}],
...     "initial_request": "I have a headache.", "task": {"diagnosis": "Migraine"}})
>>> table1([case])["facts_per_case"]
1.0
"""

from __future__ import annotations

import re
from collections import Counter
from statistics import mean
from typing import TYPE_CHECKING

from engine.text.rouge import tokenize

if TYPE_CHECKING:
    from engine.consult.cases.cases import Case
    from engine.types import JSONDict

#: Table 1's rows as the paper names them, with the keys of :func:`table1`.
ROWS = (
    ("instances", "Instances"),
    ("options_per_question", "Options per question"),
    ("information_tokens", "Tokens of information"),
    ("request_tokens", "Tokens of request"),
    ("facts_per_case", "Facts per case"),
)
TOP_KEYS = 20


def information(case: Case) -> str:
    """The case's medical information: the vignette it was converted from, else its facts."""
    given = case.meta.get("information")
    if isinstance(given, str) and given.strip():
        return given
    return " ".join(f.value for f in case.facts)


def _mean(values: list[int]) -> float | None:
    return round(float(mean(values)), 2) if values else None


def table1(cases: list[Case]) -> JSONDict:
    """Table 1's figures for ``cases`` (means; ``options_per_question`` over the
    multiple-choice tasks only, None when there is none)."""
    options = [len(c.task.options) for c in cases if c.task.kind == "mcq"]
    return {
        "instances": len(cases),
        "options_per_question": _mean(options),
        "information_tokens": _mean([len(tokenize(information(c))) for c in cases]),
        "request_tokens": _mean([len(tokenize(c.initial_request)) for c in cases]),
        "facts_per_case": _mean([len(c.facts) for c in cases]),
    }


def base_key(key: str) -> str:
    """A fact key as Figure 4 counts it.

    >>> base_key("Vital signs - Blood pressure (2)"), base_key("Chief complaint")
    ('Vital signs', 'Chief complaint')
    """
    key = re.sub(r"\s*\(\d+\)$", "", key.strip())
    return key.split(" - ", 1)[0].strip()


def top_keys(cases: list[Case], n: int = TOP_KEYS) -> list[tuple[str, int]]:
    """Figure 4: the ``n`` most frequent fact keys and in how many cases each occurs (keys
    as often first seen first)."""
    counts: Counter[str] = Counter()
    for case in cases:
        counts.update(list(dict.fromkeys(base_key(f.key) for f in case.facts)))
    return counts.most_common(n)


def stats(cases: list[Case], n: int = TOP_KEYS) -> JSONDict:
    """Table 1 and Figure 4 of ``cases``: ``{"table1": …, "figure4": [{"key", "cases"}]}``."""
    keys = [{"key": k, "cases": c} for k, c in top_keys(cases, n)]
    return {"table1": table1(cases), "figure4": keys}


def render(found: JSONDict, title: str = "", width: int = 40) -> str:
    """Table 1 as two columns and Figure 4 as a bar list, in plain text."""
    table = found["table1"]
    lines = [f"Table 1{f': {title}' if title else ''}"]
    for key, label in ROWS:
        value = table[key]
        shown = "—" if value is None else f"{value:g}" if isinstance(value, float) else str(value)
        lines.append(f"  {label:<22} {shown:>8}")
    keys = found["figure4"]
    lines += ["", f"Figure 4: the {len(keys)} most frequent keys (cases holding each)"]
    most = max((k["cases"] for k in keys), default=0)
    name_width = max((len(k["key"]) for k in keys), default=0)
    for k in keys:
        bar = "█" * max(1, round(width * k["cases"] / most))
        lines.append(f"  {k['key']:<{name_width}}  {bar} {k['cases']}")
    return "\n".join(lines)
