"""Every prompt of the French activity, in one place.

The reader sees the retrieved passages (or none), the question and the five options a–e, and
answers with the letters of the exact options. :func:`option_prompt` asks about one option at a
time for the log-probability method.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.french.items import FrenchQuestion

SYSTEM = (
    "Tu es un expert en pharmacie qui répond à des questions à choix multiples d'examen. "
    "Une ou plusieurs propositions peuvent être exactes."
)

INSTRUCTION = (
    "Réponds uniquement par les lettres de toutes les propositions exactes, séparées par "
    "« + » (par exemple : A + C)."
)

ANSWER_PREFIX = "Réponse(s) :"

OPTION_QUESTION = "Cette proposition est-elle exacte ? Réponds par oui ou par non."
OPTION_ANSWER_PREFIX = "Réponse :"


def context_block(passages: list[str]) -> str:
    """The retrieved passages, numbered, or an empty string when there are none."""
    if not passages:
        return ""
    lines = ["Documents :"]
    lines += [f"[{i}] {text.strip()}" for i, text in enumerate(passages, start=1)]
    return "\n".join(lines) + "\n\n"


def question_block(item: FrenchQuestion) -> str:
    options = "\n".join(f"{letter.upper()}. {item['answers'][letter]}" for letter in "abcde")
    return f"Question : {item['question'].strip()}\n{options}"


def user_message(item: FrenchQuestion, passages: list[str]) -> str:
    """The whole question for a chat model: passages, question, options, instruction."""
    return f"{context_block(passages)}{question_block(item)}\n\n{INSTRUCTION}"


def answer_messages(item: FrenchQuestion, passages: list[str]) -> list[dict[str, str]]:
    """Chat messages asking for the letters of the exact options."""
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": user_message(item, passages)},
    ]


def answer_completion(item: FrenchQuestion, passages: list[str]) -> str:
    """The same request as a plain completion prompt (models without a chat template)."""
    return f"{SYSTEM}\n\n{user_message(item, passages)}\n\n{ANSWER_PREFIX}"


def option_user_message(item: FrenchQuestion, passages: list[str], letter: str) -> str:
    """One option to judge. The shared part (passages, question) comes first, so the model's
    cache of it is reused from one option to the next."""
    return (
        f"{context_block(passages)}Question : {item['question'].strip()}\n"
        f"Proposition {letter.upper()} : {item['answers'][letter]}\n\n{OPTION_QUESTION}"
    )


def option_messages(item: FrenchQuestion, passages: list[str], letter: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": option_user_message(item, passages, letter)},
    ]


def option_completion(item: FrenchQuestion, passages: list[str], letter: str) -> str:
    return f"{SYSTEM}\n\n{option_user_message(item, passages, letter)}\n{OPTION_ANSWER_PREFIX}"
