"""medexam's own settings: a small JSON file (``settings.json``) in the user data folder.

>>> from engine import settings                                          # doctest: +SKIP
>>> settings.get("solver")            # the default when never set        # doctest: +SKIP
'model'
>>> settings.set("solver", "qwen2.5-7b-instruct")                        # doctest: +SKIP

Known keys and their defaults are in :data:`DEFAULTS`:

* ``solver`` — the model that answers the final task of every consultation run (so that
  doctors are compared on the same footing); ``model`` means the default chat model.
* ``model`` — the default chat model (empty: the embedded one); see
  :func:`engine.models.checks.default_model`, which also forgets a model that fails to load.
* ``gpu`` — ``auto`` (local models offload to a GPU the layers that fit its free memory) or
  ``cpu`` (they stay on the CPU); ``medexam models gpu [auto|cpu]`` shows or sets it.
* ``flash_attn`` — llama.cpp's flash attention for local models, ``off`` (the default) or
  ``on`` (``medexam models flash-attn``): on, 8 sequences at once decode faster on a CPU
  (1.74× one sequence's tokens per second here, against 1.4×), but a long context's numbers
  then depend on the model's threads (which follow the machine's load) and log-probabilities
  move by up to 0.1 (nats); runs store it (``settings.flash_attn``).

``medexam consult solver [NAME]`` shows or sets it from the command line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from engine.errors import UserError
from engine.paths import data_dir
from engine.text import jsonio

if TYPE_CHECKING:
    from engine.types import JSONDict, JSONValue

FILE_NAME = "settings.json"

DEFAULTS: JSONDict = {"solver": "model", "model": "", "gpu": "auto", "flash_attn": "off"}


class SettingsError(UserError, ValueError):
    """An unknown setting, or a settings file that is not a JSON object."""


def settings_path() -> Path:
    """Where the settings live (the user data folder, ``MEDEXAM_HOME`` if set)."""
    return data_dir() / FILE_NAME


def load() -> JSONDict:
    """Every setting: the stored ones over :data:`DEFAULTS`."""
    path = settings_path()
    stored: JSONValue = {}
    if path.is_file():
        try:
            stored = jsonio.parse(path, jsonio.read_text(path) or "{}")
        except jsonio.RecordsError as exc:
            raise SettingsError(str(exc)) from None
    if not isinstance(stored, dict):
        raise SettingsError(f"{path.name}: expected a JSON object")
    return {**DEFAULTS, **stored}


def _check_known(key: str) -> None:
    """Refuse a key that is no setting, naming the nearest one
    (:func:`engine.fields.unknown_name`)."""
    from engine.fields import unknown_name

    problem = unknown_name([key], DEFAULTS)
    if problem:
        raise SettingsError(problem)


def get(key: str) -> JSONValue:
    """One setting's value (its default when never set)."""
    _check_known(key)
    return load()[key]


def set(key: str, value: JSONValue) -> None:  # noqa: A001 - the module's documented verb
    """Store one setting; ``None`` puts it back to its default."""
    _check_known(key)
    values = load()
    if value is None:
        values.pop(key, None)
    else:
        values[key] = value
    stored = {k: v for k, v in values.items() if k not in DEFAULTS or v != DEFAULTS[k]}
    path = settings_path()
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(stored, indent=2, ensure_ascii=False), encoding="utf-8")
    tmp.replace(path)
