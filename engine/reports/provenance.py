"""How a run's numbers were made, so that a reader can make them again or question them: the
model (its file and quantization), how it was loaded (slots, flash attention, threads), how
it was asked (seed, temperature, prompt version) and how its answers were read (how many
each extraction rule found), from what the run stored: its settings, the usage its run loop
recorded (:mod:`engine.models.usage`) and its answers.

>>> made = how_made(store, store.run(3))                 # doctest: +SKIP
>>> made_text(made)                                      # doctest: +SKIP
'#3 smollm2: SmolLM2-135M-Instruct-Q4_1.gguf (Q4_1), 8 slots, flash attention off, …'
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from engine.reports.shapes import table

if TYPE_CHECKING:
    from collections.abc import Iterable

    from engine.reports.layouts import RunData
    from engine.reports.shapes import Table
    from engine.store.store import Store
    from engine.types import JSONDict, Row

#: The columns of :func:`made_table`, with the key of :func:`how_made` each shows.
COLUMNS = (
    ("Run", "run"),
    ("Model", "model"),
    ("File", "file"),
    ("Quantization", "quantization"),
    ("Slots", "slots"),
    ("Flash attention", "flash_attn"),
    ("Threads", "threads"),
    ("Seed", "seed"),
    ("Temperature", "temperature"),
    ("Prompt version", "prompt_version"),
    ("Answers found by rule", "rules"),
)


def _per_model(value: Any, model: str) -> Any:
    """A setting a run stores per model (``{"smollm2": 8}``) for ``model``, or as it is."""
    if isinstance(value, dict):
        return value.get(model, next(iter(value.values()), None) if len(value) == 1 else None)
    return value


def how_made(store: Store, run: Row, answers: Iterable[Row] | None = None) -> JSONDict:
    """How run ``run``'s numbers were made (None where the run does not say): ``model``,
    ``file``, ``quantization``, ``slots``, ``flash_attn``, ``threads``, ``seed``,
    ``temperature``, ``prompt_version`` and ``rules`` (answers by the extraction rule that
    read them, "none" for those it could not read; empty where answers have no rule), from
    its ``answers`` when given (else as stored)."""
    settings = run.get("settings") or {}
    model = str(run.get("model") or "")
    usage = ((run.get("summary") or {}).get("usage") or {}).get(model) or {}
    rules = Counter(
        str((a.get("extra") or {}).get("rule") or "none")
        for a in (store.answers(int(run["id"])) if answers is None else answers)
        if isinstance(a.get("extra"), dict) and "rule" in a["extra"]
    )
    return {
        "run": int(run["id"]),
        "model": "person" if run.get("runner") == "person" else model,
        "file": usage.get("file"),
        "quantization": usage.get("quantization"),
        "slots": _per_model(settings.get("slots"), model) or usage.get("slots"),
        "flash_attn": _first(
            _per_model(settings.get("flash_attn"), model), usage.get("flash_attn")
        ),
        "threads": usage.get("n_threads"),
        "seed": settings.get("seed"),
        "temperature": settings.get("temperature"),
        "prompt_version": settings.get("prompt_version"),
        "rules": dict(rules.most_common()),
    }


def _first(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)


def _shown(key: str, value: Any) -> str:
    if value is None or value == {}:
        return "–"
    if key == "flash_attn":
        return "on" if value else "off"
    if key == "rules":
        return ", ".join(f"{rule} {n}" for rule, n in value.items())
    if key == "run":
        return f"#{value}"
    return str(value)


def made_text(made: JSONDict) -> str:
    """One run's :func:`how_made` in one line."""
    parts = [f"{label.lower()} {_shown(key, made[key])}" for label, key in COLUMNS[2:]]
    return f"#{made['run']} {made['model']}: " + "; ".join(parts)


def made_table(store: Store, runs: list[RunData], methods: list[str]) -> Table:
    """The table of how each of ``runs``' numbers were made, with the statistical
    ``methods`` the report used (each named in a note)."""
    rows = []
    for run in runs:
        made = how_made(store, run.run, run.answers.values())
        rows.append([_shown(key, made[key]) for _, key in COLUMNS])
    notes = ["Statistical methods: " + "; ".join(methods) + "."] if methods else []
    return table(
        "How these numbers were made",
        [label for label, _ in COLUMNS],
        rows,  # type: ignore[arg-type]
        "Model, file and quantization as the run loaded them; slots (sequences decoded at "
        "once), flash attention and threads as the model was loaded; seed, temperature and "
        "prompt version as the run asked; how many answers each extraction rule read "
        "('none': no answer found).",
        *notes,
    )
