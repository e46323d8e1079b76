"""What a server's answers are allowed to be: each field medexam reads from an
OpenAI-compatible server is checked here before it is used, so that a broken or hostile
server gets one line naming the problem, never a traceback, and nothing that cannot be
stored (a ``NaN``) gets past.

* An answer that is not the API's (an HTML page, choices that are not a list, a model list
  of strings…): :class:`Malformed`, the server's fault (a run stops).
* Log-probabilities that are not finite numbers ≤ 0 in the API's shapes:
  :class:`BadLogprobs`, this request's fault (a run's item fails).
* A reply longer than the tokens asked can make is cut (:func:`cut`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from engine.models.protocol import ModelError
from engine.models.server import ServerUnavailable

__all__ = [
    "CHARS_PER_TOKEN",
    "BadLogprobs",
    "Malformed",
    "candidate_logprobs",
    "choice",
    "cut",
    "listed_models",
    "top_tokens",
]

CHARS_PER_TOKEN = 32  # a reply keeps at most this many characters per token asked for
LOGPROB_SLACK = 1e-4  # a log-probability this far above 0 is rounding, read as 0


class Malformed(ServerUnavailable):
    """The server's answer is not what the API says it is."""


class BadLogprobs(ModelError):
    """The server's log-probabilities are not finite numbers ≤ 0 in the API's shapes."""


def shown(value: Any, width: int = 40) -> str:
    """``value`` as a line of at most ``width`` characters."""
    text = " ".join(repr(value).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _what(value: Any) -> str:
    if isinstance(value, str):
        return f"text ({shown(value)})"
    return f"{type(value).__name__} {shown(value)}" if value is not None else "null"


def obj(value: Any, what: str, url: str) -> dict[str, Any]:
    """``value`` when it is a JSON object; :class:`Malformed` otherwise."""
    if not isinstance(value, dict):
        raise Malformed(f"malformed answer from {url}: {what} is {_what(value)}, not an object")
    return value


def choice(reply: Any, url: str) -> dict[str, Any]:
    """The first choice of a completion."""
    choices = obj(reply, "the answer", url).get("choices")
    if not isinstance(choices, list) or not choices:
        raise Malformed(f"malformed answer from {url}: its choices are {_what(choices)}")
    return obj(choices[0], "its first choice", url)


def choices(event: Any, url: str) -> list[dict[str, Any]]:
    """The choices of one streamed event (none is fine: a usage-only event)."""
    found = obj(event, "a streamed event", url).get("choices") or []
    if not isinstance(found, list):
        raise Malformed(
            f"malformed answer from {url}: a streamed event's choices are {_what(found)}"
        )
    return [obj(c, "a streamed choice", url) for c in found]


def text_of(c: dict[str, Any], chat: bool, url: str, delta: bool = False) -> str:
    """The text of a choice: a chat message's (or streamed delta's) content, or a
    completion's text; "" for none."""
    if chat:
        holder = c.get("delta" if delta else "message")
        text = obj(holder, "a chat message", url).get("content") if holder is not None else None
    else:
        text = c.get("text")
    if text is not None and not isinstance(text, str):
        raise Malformed(f"malformed answer from {url}: a reply's text is {_what(text)}")
    return text or ""


def finish_of(c: dict[str, Any]) -> str | None:
    reason = c.get("finish_reason")
    return reason if isinstance(reason, str) else None


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def usage_of(reply: Any) -> tuple[int, int] | None:
    """``(prompt_tokens, completion_tokens)`` from an answer's usage, when it has one."""
    usage = reply.get("usage") if isinstance(reply, dict) else None
    if not isinstance(usage, dict):
        return None
    return _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))


def prompt_seconds(reply: Any) -> float:
    """llama-server's time on the prompt (``timings.prompt_ms``), when it says."""
    timings = reply.get("timings") if isinstance(reply, dict) else None
    ms = timings.get("prompt_ms") if isinstance(timings, dict) else None
    if isinstance(ms, bool) or not isinstance(ms, int | float) or not math.isfinite(ms):
        return 0.0
    return max(0.0, float(ms)) / 1000


def positive_int(value: Any) -> int | None:
    """``value`` as a count (a context size), None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and value > 0 else None


def cut(text: str, max_tokens: int) -> tuple[str, bool]:
    """``text`` kept to what ``max_tokens`` tokens can make (:data:`CHARS_PER_TOKEN` a
    token), and whether it was cut."""
    limit = max(1, int(max_tokens)) * CHARS_PER_TOKEN
    return (text[:limit], True) if len(text) > limit else (text, False)


# -- log-probabilities ---------------------------------------------------------------------


def _logprob(token: Any, value: Any) -> tuple[str, float]:
    if not isinstance(token, str):
        raise BadLogprobs(f"the server listed {_what(token)} as a token, not text")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadLogprobs(f"the server gave {_what(value)} as the log-probability of {token!r}")
    v = float(value)
    if not math.isfinite(v):
        raise BadLogprobs(f"the server gave {v} as the log-probability of {token!r}")
    if v > LOGPROB_SLACK:
        raise BadLogprobs(
            f"the server gave {v:g} as the log-probability of {token!r} (above 0: a "
            "probability over 1)"
        )
    return token, min(v, 0.0)


def _table(value: Any, where: str) -> dict[str, float]:
    """A ``{token: logprob}`` table (the OpenAI completions form)."""
    if not isinstance(value, dict):
        raise BadLogprobs(f"the server's top log-probabilities {where} are {_what(value)}")
    return dict(_logprob(t, v) for t, v in value.items())


def _entries(value: Any, where: str) -> dict[str, float]:
    """A ``[{token, logprob}]`` list (the chat form, and llama-server's)."""
    if not isinstance(value, list):
        raise BadLogprobs(f"the server's top log-probabilities {where} are {_what(value)}")
    out = {}
    for entry in value:
        if not isinstance(entry, dict):
            raise BadLogprobs(f"the server listed {_what(entry)} among its top tokens")
        token, lp = _logprob(entry.get("token"), entry.get("logprob"))
        out[token] = lp
    return out


def top_tokens(c: dict[str, Any]) -> dict[str, float]:
    """The top tokens a choice lists for its first position, with their log-probabilities:
    the OpenAI completions form (``top_logprobs``: one table per position) or the chat and
    llama-server form (``content``: ``[{token, logprob, top_logprobs}]``); ``{}`` when it
    lists none. :class:`BadLogprobs` when they are not finite numbers ≤ 0 in those shapes."""
    lp = c.get("logprobs")
    if lp is None:
        return {}
    if not isinstance(lp, dict):
        raise BadLogprobs(f"the server's log-probabilities are {_what(lp)}, not an object")
    tops = lp.get("top_logprobs")
    if tops is not None:
        if not isinstance(tops, list):
            raise BadLogprobs(f"the server's top log-probabilities are {_what(tops)}")
        return _table(tops[0], "after the prompt") if tops and tops[0] is not None else {}
    content = lp.get("content")
    if content is None:
        return {}
    if not isinstance(content, list):
        raise BadLogprobs(f"the server's log-probabilities are {_what(content)}")
    if not content:
        return {}
    first = content[0]
    if not isinstance(first, dict):
        raise BadLogprobs(f"the server's first token is {_what(first)}, not an object")
    return _entries(first.get("top_logprobs") or [], "of the first token")


def _matches(top: dict[str, float], candidate: str) -> list[float]:
    exact = [lp for tok, lp in top.items() if tok == candidate]
    if exact:
        return exact
    return [lp for tok, lp in top.items() if tok.strip() == candidate.strip() and tok.strip()]


def candidate_logprobs(top: dict[str, float], candidates: Sequence[str]) -> dict[str, float]:
    """Each candidate's log-probability from the top tokens after the prompt: the token
    spelled as the candidate (or the same once spaces are stripped, summed); a candidate
    absent from the top tokens gets the lowest listed value, an upper bound of its own."""
    if not top:
        raise ModelError("the server listed no top tokens")
    floor = min(top.values())
    out = {}
    for cand in candidates:
        found = _matches(top, cand)
        if not found:
            out[cand] = floor
        elif len(found) == 1:
            out[cand] = found[0]
        else:
            peak = max(found)
            out[cand] = peak + math.log(sum(math.exp(x - peak) for x in found))
    return out


# -- the model list --------------------------------------------------------------------------


def listed_models(listing: Any, url: str) -> list[dict[str, Any]]:
    """The models ``/v1/models`` lists, each an object with a text ``id``."""
    data = obj(listing, "its model list", url).get("data")
    if not isinstance(data, list):
        raise Malformed(f"malformed answer from {url}: its model list holds {_what(data)}")
    for entry in data:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise Malformed(
                f"malformed answer from {url}: its model list holds {_what(entry)}, "
                "not a model (an object with an id)"
            )
    return data


def some(names: Sequence[str], most: int = 5) -> str:
    """A few of ``names`` and how many there are: ``a, b, c … and 9,997 more``."""
    if not names:
        return "none"
    head = ", ".join(" ".join(str(n).split())[:60] for n in names[:most])
    return head if len(names) <= most else f"{head} … and {len(names) - most:,} more"


def field(reply: Any, key: str, kind: type, url: str) -> Any:
    """``reply[key]`` when ``reply`` is an object and that field is of ``kind``."""
    value = obj(reply, "the answer", url).get(key)
    if isinstance(value, bool) or not isinstance(value, kind):
        raise Malformed(f"malformed answer from {url}: its {key!r} is {_what(value)}")
    return value
