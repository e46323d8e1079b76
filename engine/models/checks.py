"""Model files that cannot be used, and the default chat model with its fallback.

* :func:`problems` lists every ``.gguf`` in the models folder and every added file that the
  catalog leaves out, each with the reason in words ("truncated: 12 MB of 253 MB expected",
  "not a GGUF model file …"). Only GGUF headers are read, so it is cheap.
* :func:`default_model` is the chosen default chat model (the ``model`` setting, see
  :mod:`engine.settings`), else the embedded one. :func:`acquire_default` leases it from the
  pool; when it cannot be loaded, it leases the embedded default instead, stops naming the
  failed model as the default and says so in one sentence.

>>> for path, reason in problems():                                  # doctest: +SKIP
...     print(path, reason)
models/cut.gguf truncated: 12 MB of 253 MB expected
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from engine.models.adapters import adapter_problem, check_adapter
from engine.models.catalog import (  # the default model's setting lives with the catalog
    DEFAULT_MODEL,
    checked_default,
    default_model,
    fall_back,
    set_default_model,
)
from engine.models.protocol import ModelError

if TYPE_CHECKING:
    from engine.models.pool import Lending, ModelPool, PooledModel

__all__ = [
    "ModelProblem",
    "acquire_default",
    "adapter_problem",
    "check_adapter",
    "checked_default",
    "default_model",
    "problems",
    "set_default_model",
]


class ModelProblem(NamedTuple):
    """A model file medexam found but cannot use, and why."""

    path: str
    reason: str
    origin: str  # "folder", "added" or "trained"
    name: str


def problems() -> list[ModelProblem]:
    """The model files in the models folder, the added files and the trained adapters that
    cannot be used, with their reasons, in the order ``models list`` shows them (added
    first, trained last)."""
    from engine.models import catalog
    from engine.models.gguf import BadModelFile

    out: list[ModelProblem] = []
    seen: set[str] = set()
    for name, path in catalog.added_files().items():
        seen.add(str(path))
        reason = _reason(Path(path))
        if reason:
            out.append(ModelProblem(str(path), reason, "added", name))
    for p in sorted(catalog.models_dir().glob("*.gguf")):
        if str(p) in seen:
            continue
        reason = _reason(p)
        if reason:
            out.append(ModelProblem(str(p), reason, "folder", p.stem))
    for name, lora, found in catalog.trained(assemble=False):
        if isinstance(found, BadModelFile):
            out.append(ModelProblem(lora, found.reason, "trained", name))
    return out


def _reason(path: Path) -> str:
    """Why ``path`` cannot be used ("" when it can)."""
    from engine.models.gguf import BadModelFile, cached_info

    try:
        cached_info(path)
    except BadModelFile as exc:
        return exc.reason
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    return ""


def acquire_default(
    pool: ModelPool | Lending | None = None, name: str | None = None
) -> tuple[PooledModel, str]:
    """A lease of ``name`` (default: :func:`default_model`) and a message, "" when all went
    well. When that model cannot be loaded (a :class:`ModelError`: a damaged or missing file,
    a crash on load) and it is not the embedded default, the embedded default is leased
    instead, the ``model`` setting stops naming the failed one, and the message says so in one
    sentence. Release the lease with ``close()``."""
    from engine.models.pool import default_pool

    pool = pool or default_pool()
    wanted = name or default_model()
    try:
        return pool.acquire(wanted), ""
    except ModelError as exc:
        if wanted == DEFAULT_MODEL:
            raise
        message = fall_back(wanted, exc)
    return pool.acquire(DEFAULT_MODEL), message
