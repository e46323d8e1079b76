"""How the practice panel (:mod:`gui.widgets.practice`) asks a person's sitting: which
question it shows, how an answer is given and what the feedback says. The defaults of
:class:`Asking` suit a sitting asked one question after another (the exam's, a plug-in's
:class:`~engine.core.block.PersonBlock`): ``next_question()``, ``answer(chosen)``, ``index``
(the place of the next question to answer), ``questions`` and ``feedback`` (one per answered
question, with ``gold``, ``chosen`` and ``correct``). An activity whose questions are
answered in any order (French QA) overrides them. Every method but :meth:`Asking.fetch` and
:meth:`Asking.give` runs in the UI; those two run on the session thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from gui.widgets.question_grid import cell_states

if TYPE_CHECKING:
    from engine.types import JSONDict


class Asking:
    """How a sitting is asked (see the module)."""

    #: Several options may be right (each ticked on its own).
    multi: ClassVar[bool] = False
    #: Questions may be answered in any order: Next skips ahead, there is no Skip.
    any_order: ClassVar[bool] = False
    #: The session ends as soon as its last question is answered.
    ends_at_last: ClassVar[bool] = False

    def answer(self, item: Any, chosen: str | None) -> JSONDict:
        """The answer stored when the option ``chosen`` is given (None: skipped)."""
        return {"chosen": chosen}

    def gold(self, item: Any) -> str:
        """The right option of ``item``."""
        raise NotImplementedError

    def options(self, item: Any) -> list[tuple[str, str]]:
        """The item's options as (letter, text)."""
        raise NotImplementedError

    def text(self, item: Any) -> str:
        return str(item["question"])

    def key(self, item: Any) -> str:
        return str(item["id"])

    def keys(self, session: Any) -> list[str]:
        """The keys of the session's questions, in the order asked."""
        return [self.key(item) for item in session.questions]

    def reach(self, session: Any) -> int:
        """The furthest place that may be shown (here: the next to answer)."""
        return int(session.index)

    def said(self, session: Any, place: int) -> Any | None:
        """The feedback given on the question at ``place`` (None: not answered)."""
        return session.feedback[place] if place < len(session.feedback) else None

    def at_hand(self, session: Any, place: int) -> Any | None:
        """The item at ``place`` when it needs no engine call (here: an answered one)."""
        return session.questions[place] if place < session.index else None

    def fetch(self, session: Any, place: int) -> Any | None:
        """The item at ``place``, on the session thread (here: the next to answer; None:
        none is left, the session ends)."""
        return session.next_question()

    def place(self, session: Any, item: Any) -> int:
        """The place of ``item``, just fetched (here: the next to answer)."""
        return int(session.index)

    def give(self, session: Any, place: int, chosen: list[str]) -> Any:
        """Answer the question at ``place`` with the options ``chosen`` (none: skipped), on
        the session thread; the feedback (None: nothing is said until the end)."""
        return session.answer(chosen[0] if chosen else None)

    def after(self, session: Any, place: int) -> int | None:
        """Where Next goes from ``place`` (None: nowhere)."""
        return place + 1

    def progress(self, session: Any) -> tuple[int, int]:
        """How many questions, and how many answered."""
        return len(session.questions), int(session.index)

    def revealed(self, feedback: Any) -> tuple[list[str], list[str]]:
        """The right options and those chosen, of ``feedback``."""
        return [feedback.gold], [feedback.chosen] if feedback.chosen else []

    def right(self, feedback: Any) -> bool:
        return bool(feedback.correct)

    def states(self, session: Any) -> list[str]:
        """The question grid's cells (:func:`gui.widgets.question_grid.cell_states`)."""
        said: list[bool | None] = [f.correct for f in session.feedback]
        return cell_states(said + [None] * (len(session.questions) - len(said)), True)

    def finish(self, session: Any) -> Any:
        """End the session, on the session thread; what it came to (None: nothing to show)."""
        return session.finish()

    def unanswered(self) -> str:
        """What to say when the answer is asked for before one is given."""
        what = "Tick at least one option" if self.multi else "Choose an option"
        return f"{what} first (keys a–e or 1–5){'.' if self.any_order else ', or Skip.'}"

    def lost(self, session: Any, chosen: bool) -> str:
        """What ending the session now would lose, in words ("" when nothing)."""
        return ""
