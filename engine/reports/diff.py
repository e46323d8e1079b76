"""Two runs of one data set, item by item: each item's question beside both runs' replies, the
letter (or answer) read from each and the rule that read it, why each reply stopped, whether
each was right, and their scores; filtered to the items that flipped (right in one run,
wrong in the other), that either run gave no answer to, or that either run cut off at its
token limit. The command line's ``medexam runs diff`` and the app's side-by-side screen are
views of :func:`diff_runs`.

>>> found = diff_runs(store, 3, 4, only="flipped")               # doctest: +SKIP
>>> [(i.number, i.a.chosen, i.b.chosen) for i in found.items]    # doctest: +SKIP
[(2, 'B', 'C'), (7, None, 'A')]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from engine.core.no_answer import cut_off, reason_of
from engine.errors import UserError

if TYPE_CHECKING:
    from engine.store.store import Store
    from engine.types import Row


@dataclass(frozen=True)
class Side:
    """One run's answer to an item: its ``reply``, the answer read from it (``chosen``;
    None: none could be read) and the ``rule`` that read it, why the reply stopped
    (``finish``: "stop", "length"…; None where the run did not store it), whether it was
    right (``correct``: None when nothing scored it), its numeric ``scores``, why the reply
    gives no answer where the extractor said (``why``: :data:`engine.core.no_answer.REASONS`)
    and any ``error`` that kept the model from answering."""

    reply: str
    chosen: str | None
    rule: str | None
    finish: str | None
    correct: int | None
    scores: dict[str, float | None] = field(default_factory=dict)
    error: str | None = None
    why: str | None = None

    @property
    def answered(self) -> bool:
        return bool((self.chosen or "").strip()) and not self.error

    @property
    def cut_off(self) -> bool:
        return cut_off(self.finish) or self.why == "cut_off"


@dataclass(frozen=True)
class ItemDiff:
    """One item both runs answered: its place in run A (``number``, from 1), key, question
    and right answer, and each run's :class:`Side`."""

    number: int
    item_key: str
    question: str
    gold: str | None
    a: Side
    b: Side

    @property
    def flipped(self) -> bool:
        """Right in one run, wrong in the other."""
        both = (self.a.correct, self.b.correct)
        return None not in both and bool(both[0]) != bool(both[1])

    @property
    def no_answer(self) -> bool:
        return not (self.a.answered and self.b.answered)

    @property
    def cut_off(self) -> bool:
        return self.a.cut_off or self.b.cut_off

    def as_dict(self) -> dict[str, Any]:
        found = asdict(self)
        found.update(flipped=self.flipped, no_answer=self.no_answer, cut_off=self.cut_off)
        return found


#: What ``--only`` keeps: the name a user types → whether an item is one of those.
FILTERS: dict[str, Callable[[ItemDiff], bool]] = {
    "flipped": lambda i: i.flipped,
    "no-answer": lambda i: i.no_answer,
    "cut-off": lambda i: i.cut_off,
}


def key(name: str) -> str:
    """A filter's key in the counts and in an item's JSON (``no-answer`` → ``no_answer``, as
    a run's summary says it)."""
    return name.replace("-", "_")


@dataclass(frozen=True)
class RunsDiff:
    """Runs ``a`` and ``b`` paired by item: ``items`` (those ``only`` keeps), ``paired``
    (how many items both answered) and ``counts`` (how many of those each filter keeps,
    with ``right_a_only`` and ``right_b_only``)."""

    a: Row
    b: Row
    only: str | None
    paired: int
    counts: dict[str, int]
    items: list[ItemDiff]

    def as_dict(self) -> dict[str, Any]:
        keep = ("id", "activity", "dataset", "model", "label")
        return {
            "a": {k: self.a.get(k) for k in keep},
            "b": {k: self.b.get(k) for k in keep},
            "only": self.only,
            "paired": self.paired,
            "counts": self.counts,
            "items": [i.as_dict() for i in self.items],
        }


def side(answer: Row) -> Side:
    """What one stored answer shows beside another's."""
    extra = answer.get("extra") or {}
    scores = {k: v for k, v in (answer.get("scores") or {}).items() if v is None or _number(v)}
    return Side(
        reply=str(answer.get("response") or ""),
        chosen=answer.get("chosen"),
        rule=extra.get("rule"),
        finish=extra.get("finish_reason"),
        correct=answer.get("correct"),
        scores=scores,
        error=extra.get("error"),
        why=reason_of(answer),
    )


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_pair(a: Row, b: Row) -> None:
    """Refuse, in one line, two runs that cannot be paired by item."""
    if a["id"] == b["id"]:
        raise UserError(f"run {a['id']} twice: name two different runs")
    if a["activity"] != b["activity"] or a["dataset"] != b["dataset"]:
        raise UserError(
            f"runs {a['id']} and {b['id']} answered different data sets "
            f"({a['activity']} on {a['dataset']}, {b['activity']} on {b['dataset']}): "
            "there are no items to pair"
        )


def diff_runs(store: Store, run_a: int, run_b: int, only: str | None = None) -> RunsDiff:
    """Runs ``run_a`` and ``run_b`` (one data set) paired by item, in run A's order;
    ``only`` one of :data:`FILTERS` keeps those items. Raises :class:`UserError` for runs
    of different data sets or an unknown filter, and a store error for an unknown run."""
    from engine.reports.answers import run_answers
    from engine.reports.label import run_label

    if only is not None and only not in FILTERS:
        raise UserError(f"unknown filter {only!r} (choose from {', '.join(FILTERS)})")
    ra, rb = store.run(int(run_a)), store.run(int(run_b))
    check_pair(ra, rb)
    a: Row = {**ra, "label": run_label(ra)}
    b: Row = {**rb, "label": run_label(rb)}
    theirs = {str(x["item_key"]): x for x in store.answers(int(run_b))}
    paired = [
        ItemDiff(
            number=int(x["number"]),
            item_key=str(x["item_key"]),
            question=str(x["question_full"]),
            gold=x.get("gold"),
            a=side(x),
            b=side(theirs[str(x["item_key"])]),
        )
        for x in run_answers(store, int(run_a))
        if str(x["item_key"]) in theirs
    ]
    counts = {key(name): sum(1 for i in paired if keep(i)) for name, keep in FILTERS.items()}
    counts["right_a_only"] = sum(1 for i in paired if i.flipped and i.a.correct)
    counts["right_b_only"] = counts["flipped"] - counts["right_a_only"]
    kept = [i for i in paired if only is None or FILTERS[only](i)]
    return RunsDiff(a, b, only, len(paired), counts, kept)


def no_answer_text(why: str | None) -> str:
    """ "no answer", with why in the words of the runs' notes where the extractor said
    (``no answer: lists the options without choosing one``)."""
    from engine.core.no_answer import REASONS

    return f"no answer: {REASONS.get(why, why)}" if why else "no answer"


def marked(correct: int | None) -> str:
    """Right, wrong, or "–" where nothing scored the answer."""
    return "–" if correct is None else "right" if correct else "wrong"


def _side_line(name: str, run: Row, s: Side) -> str:
    from engine.text.columns import fmt_number

    said = s.chosen if (s.chosen or "").strip() else no_answer_text(s.why)
    right = marked(s.correct)
    parts = [f"{said}", right, f"rule {s.rule or '–'}", f"stop {s.finish or '–'}"]
    parts += [f"{k} {fmt_number(v)}" for k, v in s.scores.items()]
    if s.error:
        parts.append(f"error: {s.error}")
    return f"  {name} #{run['id']} {run.get('model')}: " + " · ".join(parts)


def format_diff(found: RunsDiff) -> str:
    """The pairing as text: a heading with the counts, then per item its question, the
    right answer and each run's answer, rule, stop reason, scores and reply (the stored
    text's control characters escaped)."""
    from engine.text.columns import visible

    a, b, c = found.a, found.b, found.counts
    lines = [
        f"Runs {a['id']} ({a.get('model')}) and {b['id']} ({b.get('model')}) on "
        f"{a['dataset']}: {found.paired} items both answered; {c['flipped']} flipped "
        f"({c['right_a_only']} right only in #{a['id']}, {c['right_b_only']} only in "
        f"#{b['id']}), {c['no_answer']} without an answer, {c['cut_off']} cut off at the "
        "token limit.",
    ]
    if found.only:
        lines.append(f"Showing the {len(found.items)} {found.only} items.")
    for i in found.items:
        marks = [name for name, keep in FILTERS.items() if keep(i)]
        lines += [
            "",
            f"#{i.number} (item {i.item_key})"
            + (f" [{', '.join(marks)}]" if marks else "")
            + f" · right answer {i.gold or '–'}",
            *(f"  {line}" for line in i.question.strip().splitlines()),
        ]
        for name, run, s in (("A", a, i.a), ("B", b, i.b)):
            lines.append(_side_line(name, run, s))
            lines += [f"    | {line}" for line in (s.reply.strip() or "(no reply)").splitlines()]
    return "\n".join(visible(line) for line in lines) + "\n"


def _escaped(text: str) -> str:
    """Stored text for HTML: its control characters shown as escapes, then HTML-escaped."""
    import html

    from engine.text.columns import visible

    return html.escape(visible(text, newlines=True))


def _reply_html(side: dict[str, Any]) -> str:
    said = side["chosen"] if (side["chosen"] or "").strip() else no_answer_text(side["why"])
    right = marked(side["correct"])
    head = f"{said} · {right} · rule {side['rule'] or '–'} · stop {side['finish'] or '–'}"
    reply = side["reply"].strip() or "(no reply)"
    return (
        f"<td><details><summary>{_escaped(head)}</summary>"
        f"<pre style='white-space:pre-wrap'>{_escaped(reply)}</pre></details></td>"
    )


def sides_html(found: dict[str, Any]) -> str:
    """One comparison's items side by side for an HTML report (``found``:
    :meth:`RunsDiff.as_dict`), collapsed: a ``<details>`` per comparison and per reply,
    every stored text escaped."""
    a, b, c = found["a"], found["b"], found["counts"]
    rows = "".join(
        f"<tr><td class='num'>{i['number']}</td><td>{_escaped(i['question'][:300])}</td>"
        f"<td>{_escaped(str(i['gold'] or '–'))}</td>"
        f"<td>{_escaped(', '.join(k for k in FILTERS if i[key(k)]))}</td>"
        f"{_reply_html(i['a'])}{_reply_html(i['b'])}</tr>"
        for i in found["items"]
    )
    title = (
        f"Items side by side: A #{a['id']} {a['model']}, B #{b['id']} {b['model']} — "
        f"{found['paired']} items, {c['flipped']} flipped, {c['no_answer']} without an "
        f"answer, {c['cut_off']} cut off"
    )
    return (
        f"<details><summary>{_escaped(title)}</summary>"
        "<table cellpadding='4' cellspacing='0'><thead><tr><th>#</th><th>Question</th>"
        "<th>Right</th><th>Marks</th><th>A: answer, reply</th><th>B: answer, reply</th>"
        f"</tr></thead><tbody>{rows}</tbody></table></details>"
    )
