"""An exam question's review card (``Activity.card``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.exam.activity import EXAM
from engine.review.cards import topics
from engine.text.options import LETTERS  # up to ten options (MedQA, mcq)
from engine.types import Face

if TYPE_CHECKING:
    from engine.types import Item


def exam_face(item: Item) -> Face:
    """An exam question's card: one right option of up to ten."""
    return Face(
        item["question"],
        list(zip(LETTERS, item["options"], strict=False)),
        [str(item["answer"]).upper()],
        str(item.get("explanation") or ""),
        multi=False,
        tags=topics(EXAM.id, item),
        heading="解析：",
    )
