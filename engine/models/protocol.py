"""The one interface every activity talks to a model through.

A :class:`ChatModel` chats (through the model's own chat template), completes plain text,
streams either with cancel, scores candidate continuations (``logprobs``), reports what it is
(``info``) and frees itself (``close``). The local GGUF model (:class:`engine.models.local.LocalModel`)
implements it, and so does the pool's lease of one (:class:`engine.models.pool.PooledModel`).
Activities never open or close models themselves: they lease them from a
:class:`~engine.models.pool.ModelPool`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

Message = dict[str, str]


class ModelError(Exception):
    """A request the model cannot serve (bad file, no chat template, prompt too long…)."""


class ModelCrashed(ModelError):
    """The model process died (segfault, killed, out of memory). ``restart()`` recovers."""


@dataclass
class Generation:
    """A finished generation and its cost."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    finish_reason: str  # "stop" (end of text or a stop string), "length" or "cancelled"
    prompt_seconds: float = 0.0

    @property
    def tokens_per_second(self) -> float:
        """Generation speed: completion tokens over the time spent producing them."""
        gen = self.seconds - self.prompt_seconds
        return self.completion_tokens / gen if gen > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"tokens_per_second": round(self.tokens_per_second, 2)}


__all__ = [
    "ChatModel",
    "Generation",
    "Message",
    "ModelCrashed",
    "ModelError",
    "TextStream",
]


#: Where a base model's reply in a plain transcript ends: at the next turn.
TRANSCRIPT_STOPS = ("\nUser:", "\nSystem:")


def plain_transcript(messages: Sequence[Message]) -> str:
    """A conversation written out for a model without a chat template: the system text,
    then ``User:`` and ``Assistant:`` turns, ending with ``Assistant:`` for the reply."""
    parts = []
    for m in messages:
        text = m["content"].strip()
        if m["role"] == "system":
            parts.append(text + "\n")
        else:
            parts.append(f"{'User' if m['role'] == 'user' else 'Assistant'}: {text}")
    return "\n".join(parts) + "\nAssistant:"


@runtime_checkable
class TextStream(Protocol):
    """Text pieces as they are generated; ``result`` once the stream is exhausted."""

    result: Generation | None

    def __iter__(self) -> Iterator[str]: ...

    def cancel(self) -> None: ...

    def text(self) -> Generation: ...


@runtime_checkable
class ChatModel(Protocol):
    """What the engine needs of a model. Options (``max_tokens``, ``temperature``, ``seed``,
    ``stop``…) are keyword arguments of :meth:`complete` and :meth:`chat`."""

    name: str
    info: dict[str, Any]

    @property
    def has_chat_template(self) -> bool: ...

    def chat(self, messages: Sequence[Message], **options: Any) -> Generation: ...

    def stream_chat(self, messages: Sequence[Message], **options: Any) -> TextStream: ...

    def complete(self, prompt: str, **options: Any) -> Generation: ...

    def stream_complete(self, prompt: str, **options: Any) -> TextStream: ...

    def logprobs(
        self,
        prompt: str,
        candidates: Sequence[str],
        reuse_prefix: bool = True,
        chat_formatted: bool = False,
    ) -> dict[str, float]: ...

    def chat_prompt(
        self, messages: Sequence[Message], add_generation_prompt: bool = True
    ) -> str: ...

    def count_tokens(self, text: str) -> int: ...

    def cancel(self) -> None: ...

    def close(self) -> None: ...
