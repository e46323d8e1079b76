"""A French question's review card (``Activity.card``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.french.activity import FRENCH
from engine.review.cards import topics
from engine.types import Face

if TYPE_CHECKING:
    from engine.types import Item


def french_face(item: Item) -> Face:
    """A French question's card: several options may be right."""
    from engine.french.items import gold, options

    return Face(
        item["question"],
        [(letter.upper(), text) for letter, text in options(item)],
        sorted(letter.upper() for letter in gold(item)),
        str(item.get("explanation") or ""),
        multi=True,
        tags=topics(FRENCH.id, item),
    )
