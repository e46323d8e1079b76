"""How a person's consultation went: the verdict on their answer, the facts the patient told
(in the order they came out) and those it did not, the patient audited (replies
contradicting a fact, each requirement's share), and the consultation's word-overlap
metrics, labelled by the engine. The fact matching, the audit and the metrics are
:mod:`engine.consult`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QLabel

from engine.activities import metric_label
from engine.text.columns import fmt_number
from gui.tables import RowsModel, format_value, table_view
from gui.widgets.common import Card, esc, muted

if TYPE_CHECKING:
    from engine.consult.cases.cases import Case
    from engine.consult.doctor.dialogue import ConsultResult
    from engine.consult.scoring.metrics import CaseMetrics
    from engine.types import JSONDict, Turn

#: The consultation metrics shown to a person, by their engine labels: ROUGE-1 word overlap
#: of the replies and questions with the case's facts, and how alike the questions were.
OVERLAP_KEYS = ("patient_recall", "doctor_recall", "doctor_f1", "diversity")
FACT_MARKS = {"told": "✓", "not_told": "○"}
FACT_COLOURS = {"told": "#15803d", "not_told": "#6b7280"}
FACTS_LEGEND = "✓ told, in the order it came out;  ! told unasked;  ○ not told"


class ResultCard(Card):
    """How it went (see the module); :meth:`show_result` fills it."""

    def __init__(self) -> None:
        super().__init__("How it went")
        self.verdict = QLabel("")
        self.verdict.setWordWrap(True)
        self.add(self.verdict)
        self.facts_title = self._title("Facts the patient told you")
        self.facts_title.setWordWrap(True)
        self.facts = RowsModel([("", _fact_mark), ("Fact", _fact_text)], self)
        self.facts.colour = _fact_colour
        self.facts.tooltip = _fact_tip
        self.facts_table = table_view(self.facts, stretch=1, fit=[0], header=False, wrap=True)
        self.facts_table.horizontalHeader().sectionResized.connect(
            lambda *_: self.facts_table.resizeRowsToContents()
        )
        self.facts_table.setMinimumHeight(110)  # the card fits the window; the list scrolls
        self.add(self.facts_table, 1)
        self.facts_note = muted(QLabel(FACTS_LEGEND))
        self.facts_note.setWordWrap(True)
        self.add(self.facts_note)
        self._title("The patient audited")
        self.audit = self._rich()
        self._title("Word overlap with the case")
        self.metrics: list[tuple[str, str]] = []  # (the engine's label, the value)
        self.overlap = self._rich()
        overlap_note = muted(
            QLabel("Shared words, not facts: the research measure of the consultation paper.")
        )
        overlap_note.setWordWrap(True)
        self.add(overlap_note)

    def _title(self, text: str) -> QLabel:
        title = QLabel(text)
        title.setObjectName("cardTitle")
        self.add(title)
        return title

    def _rich(self) -> QLabel:
        label = QLabel("")
        label.setWordWrap(True)
        label.setTextFormat(Qt.TextFormat.RichText)
        self.add(label)
        return label

    def show_result(self, result: ConsultResult, case: Case, turns: list[Turn]) -> None:
        """The verdict on ``result``, the facts ``turns`` brought out of ``case``, the audit
        and the metrics."""
        task = result.task
        if case.task.kind == "mcq":
            gold_text = f"{task.gold}. {case.task.options.get(task.gold, '')}"
        else:
            gold_text = task.gold
        colour = "#15803d" if result.correct else "#b91c1c"
        headline = "Right diagnosis" if result.correct else "Not this time"
        extra = ""
        if task.similarity is not None:
            similarity = fmt_number(100 * task.similarity, unit="%")
            extra = f"<br><small>Similarity to the right diagnosis: {similarity}%</small>"
        said = task.chosen or task.response or "—"
        self.verdict.setText(
            f"<p style='color:{colour}; font-size:13pt'><b>{headline}</b></p>"
            f"<p>You said: {esc(said)}<br>The answer: <b>{esc(gold_text)}</b>{extra}</p>"
        )
        self.show_facts(case, turns, result.metrics)
        self.show_audit(case, turns)
        QTimer.singleShot(0, self.facts_table.resizeRowsToContents)

    def show_facts(self, case: Case, turns: list[Turn], metrics: CaseMetrics) -> None:
        """The facts the patient told (in the order they came out), then the others; and the
        consultation's word-overlap metrics, labelled by the engine."""
        from engine.consult.scoring.metrics import uncovered_facts

        told = [{**f, "status": "told"} for f in uncovered_facts(case, turns)]
        seen = {f["index"] for f in told}
        rest = [
            {"index": i, "key": f.key, "value": f.value, "status": "not_told", "leaked": False}
            for i, f in enumerate(case.facts)
            if i not in seen
        ]
        asked = int(metrics.get("turns") or 0)
        self.facts_title.setText(
            f"Facts the patient told you: {len(told)} of {len(case.facts)}"
            f" ({asked} question{'' if asked == 1 else 's'} asked)"
        )
        self.facts.set_rows(told + rest)
        rows = []
        for key in OVERLAP_KEYS:
            value = metrics.get(key)
            shown = (
                fmt_number(100 * value, unit="%")
                if isinstance(value, float)
                else format_value(value)
            )
            rows.append((metric_label(key, "consult"), shown))
        self.metrics = rows
        self.overlap.setText(
            "<table width='100%' cellpadding='3'>"
            + "".join(
                f"<tr><td>{_unbroken_end(esc(label))}</td>"
                f"<td align='right' width='1%' nowrap><b>{esc(value)}</b></td></tr>"
                for label, value in rows
            )
            + "</table>"
        )

    def show_audit(self, case: Case, turns: list[Turn]) -> None:
        """What the patient said checked against the case's facts (the engine's patient
        audit): replies contradicting a fact, each requirement's share with an example reply,
        and replies the patient's check replaced."""
        from engine.consult.scoring.audit import audit_lines, person_audit

        lines = audit_lines(person_audit(case, turns))
        self.audit.setText("<br>".join(esc(line).replace("  ", "&nbsp;&nbsp;") for line in lines))


def _unbroken_end(label: str) -> str:
    """``label`` with its last word kept on the line of the word before it, so a wrapped
    label never leaves a lone "%)" on a line."""
    head, _, last = label.rpartition(" ")
    return f"{head}&nbsp;{last}" if head else label


def _fact_mark(fact: JSONDict) -> str:
    return "!" if fact["leaked"] else FACT_MARKS[fact["status"]]


def _fact_text(fact: JSONDict) -> str:
    return f"{fact['key']}: {fact['value']}"


def _fact_colour(fact: JSONDict) -> str:
    return FACT_COLOURS[fact["status"]]


def _fact_tip(fact: JSONDict) -> str:
    if fact["status"] == "not_told":
        return "Not told: no question brought it out"
    unasked = ", without being asked" if fact["leaked"] else ""
    return f"Told in reply {fact['turn']}{unasked}"
