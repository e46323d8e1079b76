"""Anki decks of a profile's cards, written with ``genanki``: a deck per activity
("medexam::Pharmacist exam"…), the question and its options on the front, the answer and
the gold explanation on the back, tags by activity, data set, question type and category
(``missed`` on the questions whose latest answer was wrong), and from the student's notebook
``marked``, ``missed::<why>`` and the note in its own field.

Every id is stable: a note's GUID comes from its data set and question id, and the decks'
and note type's ids from their names, so importing a newer export into Anki updates the same
notes instead of adding copies.
"""

from __future__ import annotations

import hashlib
import html
import re
from pathlib import Path
from typing import TYPE_CHECKING

from engine.bank.notebook import Entry, entries
from engine.errors import UserError
from engine.review.cards import ReviewCard, cards, face, items_of
from engine.review.profiles import DEFAULT_PROFILE
from engine.store.store import Store
from engine.types import Face

if TYPE_CHECKING:
    import genanki

    from engine.types import JSONDict

DECK_ROOT = "medexam"
MODEL_NAME = "medexam question"
FIELDS = ["Question", "Options", "Answer", "Explanation", "Source", "Note"]
MODEL_VERSION = "2"  # the note type's fields changed (a Note field): a new id
FRONT = '<div class="question">{{Question}}</div><div class="options">{{Options}}</div>'
BACK = (
    "{{FrontSide}}<hr id=answer>"
    '<div class="answer">{{Answer}}</div><div class="explanation">{{Explanation}}</div>'
    '<div class="source">{{Source}}</div>'
    '{{#Note}}<div class="note">{{Note}}</div>{{/Note}}'
)
CSS = """.card { font-family: "Noto Sans", "Noto Sans CJK SC", sans-serif; font-size: 19px;
  text-align: left; color: #111827; background: #ffffff; }
.options { margin-top: 12px; line-height: 1.6; }
.answer { font-weight: bold; color: #15803d; }
.explanation { margin-top: 10px; }
.source { margin-top: 14px; font-size: 12px; color: #6b7280; }
.note { margin-top: 12px; padding: 8px; background: #fef9c3; border-radius: 4px; }"""


class ExportError(UserError):
    """Nothing to export, or a file that cannot be written."""


def stable_id(*parts: str) -> int:
    """A fixed id in Anki's range (2^30 to 2^31) for a name."""
    digest = hashlib.sha1("\x1f".join(parts).encode("utf-8")).digest()
    return (1 << 30) + int.from_bytes(digest[:4], "big") % (1 << 30)


def note_guid(dataset: str, key: str) -> str:
    """The GUID of a question's note: the same question gives the same note every time."""
    import genanki

    return str(genanki.guid_for(DECK_ROOT, dataset, key))


def tag(text: str) -> str:
    """``text`` as one Anki tag (no spaces)."""
    return re.sub(r"\s+", "_", text.strip())


def note_tags(card: ReviewCard, face_: Face, noted: Entry | None = None) -> list[str]:
    """The note's tags: activity, data set, question types, ``missed``, and from the
    student's notebook ``marked`` and ``missed::<why>``."""
    tags = [tag(f"{DECK_ROOT}::{card.activity}"), tag(f"dataset::{card.dataset}")]
    tags += [tag(f"{name}::{value}") for name, value in face_.tags.items()]
    if card.last_correct is False:
        tags.append("missed")
    if noted is not None and noted.marked:
        tags.append("marked")
    if noted is not None and noted.reason:
        tags.append(tag(f"missed::{noted.reason}"))
    return tags


def _html(text: str) -> str:
    return html.escape(text, quote=False).replace("\n", "<br>")


def note_fields(card: ReviewCard, face_: Face, noted: Entry | None = None) -> list[str]:
    """The note's fields (HTML): question, options, answer, explanation, source, and the
    student's own note."""
    options = "<br>".join(f"{letter}. {_html(text)}" for letter, text in face_.options)
    texts = dict(face_.options)
    answer = "<br>".join(f"{g}. {_html(texts.get(g, ''))}" for g in face_.gold)
    return [
        _html(face_.question),
        options,
        answer,
        _html(face_.explanation),
        _html(f"{card.dataset} #{card.item_key}"),
        _html(noted.note) if noted is not None else "",
    ]


def _model() -> genanki.Model:
    import genanki

    return genanki.Model(
        stable_id(DECK_ROOT, MODEL_NAME, MODEL_VERSION),
        MODEL_NAME,
        fields=[{"name": name} for name in FIELDS],
        templates=[{"name": "Question", "qfmt": FRONT, "afmt": BACK}],
        css=CSS,
    )


def export_anki(
    store: Store, path: str | Path, profile: str = DEFAULT_PROFILE, only_missed: bool = False
) -> JSONDict:
    """Write the profile's cards (``only_missed``: those whose latest answer was wrong) to
    the Anki package ``path``; return ``{path, notes, decks: {deck name: notes}}``."""
    import genanki

    from engine.activities import activity_name

    path = Path(path)
    if path.is_dir():
        raise ExportError(f"{path} is a folder; name the .apkg file to write")
    if not path.parent.is_dir():
        raise ExportError(f"folder {path.parent} does not exist")
    chosen = cards(store, profile, only_missed=only_missed)
    if not chosen:
        what = "missed questions" if only_missed else "cards"
        raise ExportError(f"no {what} to export in profile {profile!r}")
    items = items_of(store, chosen)
    noted = {(e.dataset, e.item_key): e for e in entries(store, profile)}
    model = _model()
    decks: dict[str, genanki.Deck] = {}
    for card in sorted(chosen, key=lambda c: (c.activity, c.dataset, c.item_key)):
        name = f"{DECK_ROOT}::{activity_name(card.activity)}"
        if name not in decks:
            decks[name] = genanki.Deck(stable_id(name), name)
        f = face(card.activity, items[(card.dataset, card.item_key)])
        decks[name].add_note(
            genanki.Note(
                model=model,
                fields=note_fields(card, f, noted.get((card.dataset, card.item_key))),
                tags=note_tags(card, f, noted.get((card.dataset, card.item_key))),
                guid=note_guid(card.dataset, card.item_key),
            )
        )
    genanki.Package(list(decks.values())).write_to_file(str(path))
    return {
        "path": str(path),
        "profile": profile,
        "notes": len(chosen),
        "decks": {name: len(deck.notes) for name, deck in decks.items()},
    }
