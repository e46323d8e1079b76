"""Option letters of multiple-choice questions, the one definition every activity uses.

Exam questions take the first five (``A``–``E``), consultation tasks up to ten (``A``–``J``);
FrenchMedMCQA writes its five in lower case.

>>> letters(3)
'ABC'
"""

from __future__ import annotations

LETTERS = "ABCDEFGHIJ"


def letters(n: int) -> str:
    """The letters of ``n`` options, ``A`` first (at most ``len(LETTERS)``)."""
    if not 0 <= n <= len(LETTERS):
        raise ValueError(f"{n} options: between 0 and {len(LETTERS)} have letters")
    return LETTERS[:n]
