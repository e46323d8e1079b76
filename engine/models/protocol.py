"""The one interface every activity talks to a model through.

A :class:`ChatModel` chats (through the model's own chat template), completes plain text,
streams either with cancel, scores candidate continuations (``logprobs``), reports what it is
(``info``) and what it can do (``capabilities``), and frees itself (``close``). Each backend's
model implements it (:class:`engine.models.local.LocalModel`,
:class:`engine.models.served.ServedModel`, :class:`engine.models.scripted.ScriptedModel`), and
so does the pool's lease of one (:class:`engine.models.pool.PooledModel`).
Activities never open or close models themselves: they lease them from a
:class:`~engine.models.pool.ModelPool`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

from engine.errors import UserError

Message = dict[str, str]


class ModelError(UserError):
    """A request the model cannot serve (bad file, no chat template, prompt too long…)."""


class ModelCrashed(ModelError):
    """The model process died (segfault, killed, out of memory). ``restart()`` recovers."""


@dataclass
class Generation:
    """A finished generation and its cost. ``finish_reason`` is "stop" (end of text or a
    stop string), "length" (``max_tokens`` reached), "cancelled", or "truncated": the reply
    was longer than ``max_tokens`` can make and was cut (a served model's).

    ``seconds`` runs from the request to its end and ``prompt_seconds`` to its first token,
    both with the time it waited for one of the model's slots (``wait_seconds``) and shared
    the model with other sequences. Where the model decodes sequences together (a local
    model's slots) it also says what the same request would have cost alone:
    ``read_seconds``, the passes that read its prompt (each a pass of its own), and
    ``alone_tokens`` decoded in ``alone_seconds`` by passes that decoded it and nothing
    else (these and ``wait_seconds`` None where the backend does not say)."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    finish_reason: str  # "stop", "length", "cancelled" or "truncated" (see above)
    prompt_seconds: float = 0.0
    wait_seconds: float | None = None
    read_seconds: float | None = None
    alone_tokens: int | None = None
    alone_seconds: float | None = None

    @property
    def tokens_per_second(self) -> float:
        """Generation speed: completion tokens over the time spent producing them."""
        gen = self.seconds - self.prompt_seconds
        return self.completion_tokens / gen if gen > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"tokens_per_second": round(self.tokens_per_second, 2)}


__all__ = [
    "Capabilities",
    "ChatModel",
    "Generation",
    "Message",
    "ModelCrashed",
    "ModelError",
    "TextStream",
    "chat_as_prompt",
]


@dataclass(frozen=True)
class Capabilities:
    """What an opened model can do, for the code that adapts to it (each backend says it
    for its models, see :mod:`engine.models.backend`)."""

    logprobs: bool = True  # log-probabilities of candidate continuations (``logprobs``)
    tokenizer: bool = True  # ``count_tokens`` counts the model's own tokens (else estimates)
    chat_template: bool = True  # ``chat_prompt`` writes the model's chat-formatted prompt
    chats: bool = True  # ``chat`` speaks the model's own chat format (else a plain transcript)
    concurrency: int = 1  # requests in flight it takes well
    shares_cores: bool = False  # it computes on this machine's cores (the pool shares them)


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


def chat_as_prompt(
    model: ChatModel, messages: Sequence[Message], options: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """The prompt a model that completes text reads for a chat, and the options to complete
    it with: the model's chat template where it has one, else the conversation as a plain
    transcript (:func:`plain_transcript`) that stops at the next turn."""
    if model.has_chat_template:
        return model.chat_prompt(messages), options
    stops = [*options.get("stop", ()), *TRANSCRIPT_STOPS]
    return plain_transcript(messages), {**options, "stop": stops}


@runtime_checkable
class TextStream(Protocol):
    """Text pieces as they are generated; ``result`` once the stream is exhausted. A
    backend's stream may subclass it for :meth:`text`."""

    result: Generation | None

    def __iter__(self) -> Iterator[str]: ...

    def cancel(self) -> None: ...

    def text(self) -> Generation:
        """Consume the stream and return the finished generation."""
        for _ in self:
            pass
        if self.result is None:
            raise ModelError("the generation was abandoned: a later request cancelled it")
        return self.result


@runtime_checkable
class ChatModel(Protocol):
    """What the engine needs of a model. Options (``max_tokens``, ``temperature``, ``seed``,
    ``stop``…) are keyword arguments of :meth:`complete` and :meth:`chat`.

    A backend's model subclasses it and so shares what is written here once: :meth:`chat`
    and :meth:`complete` read its streams to the end, :meth:`logprobs` of no candidates are
    none (others are its ``_logprobs``), and it is a context manager (closed on exit).
    """

    name: str
    info: dict[str, Any]

    @property
    def has_chat_template(self) -> bool: ...

    @property
    def capabilities(self) -> Capabilities: ...

    def chat(self, messages: Sequence[Message], **options: Any) -> Generation:
        """Chat (see :meth:`stream_chat`), read to the end."""
        return self.stream_chat(messages, **options).text()

    def stream_chat(self, messages: Sequence[Message], **options: Any) -> TextStream: ...

    def complete(self, prompt: str, **options: Any) -> Generation:
        """Plain completion (see :meth:`stream_complete`), read to the end."""
        return self.stream_complete(prompt, **options).text()

    def stream_complete(self, prompt: str, **options: Any) -> TextStream: ...

    def logprobs(
        self,
        prompt: str,
        candidates: Sequence[str],
        reuse_prefix: bool = True,
        chat_formatted: bool = False,
    ) -> dict[str, float]:
        """``log P(candidate | prompt)`` for each candidate; none for no candidates."""
        if not candidates:
            return {}
        return self._logprobs(prompt, list(candidates), reuse_prefix, chat_formatted)

    def _logprobs(
        self, prompt: str, candidates: list[str], reuse_prefix: bool, chat_formatted: bool
    ) -> dict[str, float]: ...

    def chat_prompt(
        self, messages: Sequence[Message], add_generation_prompt: bool = True
    ) -> str: ...

    def count_tokens(self, text: str) -> int: ...

    def cancel(self) -> None: ...

    def close(self) -> None: ...

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"
