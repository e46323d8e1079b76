"""The language of a text or a question: Chinese when it holds Chinese characters.

medexam's three languages are English, French and Chinese. Chinese is told by its script;
English and French share theirs, so the caller's default (the data set's or the case's
language) stands for Latin text.

>>> language_of("妊娠期禁用的降压药是"), language_of("Which drug?"), language_of("Quel?", "fr")
('zh', 'en', 'fr')
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.types import Row

LANGUAGES = ("en", "fr", "zh")

LANGUAGE_NAMES = {"en": "English", "fr": "French", "zh": "Chinese"}

# CJK unified ideographs, extension A and the compatibility ideographs.
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds at least one Chinese character."""
    return bool(CJK.search(text))


def language_of(text: str, default: str = "en") -> str:
    """``zh`` when ``text`` holds Chinese characters, else ``default``."""
    return "zh" if has_cjk(text) else default


def item_language(item: Row, default: str = "en") -> str:
    """The language of a question: its stem and options (a list, or a letter → text map)."""
    options = item.get("options") or []
    if isinstance(options, Mapping):
        options = list(options.values())
    text = str(item.get("question") or "") + "".join(str(o) for o in options)
    return language_of(text, default)
