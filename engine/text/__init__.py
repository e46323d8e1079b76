"""Text helpers shared by every activity: option letters, language detection, reading JSON
and JSON Lines records, and the sentence embedder.

The package import stays light: :mod:`engine.text.embedder` (numpy, and torch on first use) is
imported only by the code that embeds.
"""

from __future__ import annotations

from engine.text.jsonio import RecordsError, read_records, read_text
from engine.text.language import LANGUAGE_NAMES, LANGUAGES, has_cjk, item_language, language_of
from engine.text.options import LETTERS, letters

__all__ = [
    "LANGUAGES",
    "LANGUAGE_NAMES",
    "LETTERS",
    "RecordsError",
    "has_cjk",
    "item_language",
    "language_of",
    "letters",
    "read_records",
    "read_text",
]
