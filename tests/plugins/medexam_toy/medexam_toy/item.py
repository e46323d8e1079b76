"""The toy activity's item widget: a sum with three numbers to choose from, which is all it
adds to the app's one practice panel for a person to do its sums."""

from __future__ import annotations

from typing import Any

from engine.types import JSONDict
from gui.widgets.practice import ItemWidget

LETTERS = "ABC"


def _choices(item: Any) -> list[int]:
    """Three numbers in a row, the sum's answer among them (where, its remainder by 3)."""
    answer = int(item["answer"])
    first = answer - answer % 3
    return [first, first + 1, first + 2]


class SumsItem(ItemWidget):
    """A sum: the question, three numbers, the one chosen stored as the answer."""

    def options(self, item: Any) -> list[tuple[str, str]]:
        return [(letter, str(n)) for letter, n in zip(LETTERS, _choices(item), strict=True)]

    def gold(self, item: Any) -> str:
        return LETTERS[int(item["answer"]) % 3]

    def answer(self, item: Any, chosen: str | None) -> JSONDict:
        said = "" if chosen is None else str(_choices(item)[LETTERS.index(chosen)])
        return {"response": said, "chosen": said, "gold": str(item["answer"])}
