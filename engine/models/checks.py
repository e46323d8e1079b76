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

from engine.models.catalog import (  # the default model's setting lives with the catalog
    DEFAULT_MODEL,
    checked_default,
    default_model,
    fall_back,
    set_default_model,
)
from engine.models.protocol import ModelError

if TYPE_CHECKING:
    from engine.models.pool import ModelPool, PooledModel

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


def adapter_problem(lora: str | Path, base: str | Path) -> str:
    """Why the GGUF LoRA adapter ``lora`` cannot be loaded over the model file ``base`` ("" when
    it can), read from both headers as llama.cpp checks them when it loads the adapter (where
    a mismatch ends the model process): a GGUF file with all its data, of ``general.type``
    ``adapter`` and ``adapter.type`` ``lora``, made for the base's architecture, whose tensors
    come in ``lora_a``/``lora_b`` pairs over tensors of the base, of shapes that fit them.
    Read once per version of the two files."""
    key = tuple((str(p), *_stamp(Path(p))) for p in (lora, base))
    if key not in _ADAPTERS:
        _ADAPTERS[key] = _adapter_problem(Path(lora), Path(base))
    return _ADAPTERS[key]


_ADAPTERS: dict[tuple[tuple[str, int, float], ...], str] = {}


def _stamp(path: Path) -> tuple[int, float]:
    try:
        st = path.stat()
    except OSError:
        return -1, -1.0
    return st.st_size, st.st_mtime


def _adapter_problem(lora: Path, base: Path) -> str:
    from engine.models.gguf import BadModelFile, read_header

    try:
        meta, tensors, _ = read_header(lora, "adapter")
    except BadModelFile as exc:
        return exc.reason
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    try:
        base_meta, base_tensors, _ = read_header(base)
    except (BadModelFile, OSError) as exc:
        return f"its base cannot be read ({exc})"
    if meta.get("general.type") != "adapter" or meta.get("adapter.type") != "lora":
        kind = f"{meta.get('general.type') or '?'}/{meta.get('adapter.type') or '?'}"
        return f"not a LoRA adapter (its header says {kind}, not adapter/lora)"
    arch, base_arch = meta.get("general.architecture"), base_meta.get("general.architecture")
    if arch != base_arch:
        return f"made for a {arch!r} model, not for its base's {base_arch!r}"
    shapes = {t.name: t.shape for t in base_tensors}
    pairs: dict[str, dict[str, tuple[int, ...]]] = {}
    for t in tensors:
        target, _, part = t.name.rpartition(".")
        if part not in ("lora_a", "lora_b"):
            return f"tensor {t.name} is not a LoRA tensor"
        if t.kind in _NOT_WEIGHTS:
            return f"damaged: tensor {t.name} holds {t.kind} numbers, not a LoRA's weights"
        pairs.setdefault(target, {})[part] = t.shape
    if not pairs:
        return "damaged: it holds no LoRA tensors"
    for target, pair in pairs.items():
        if target == "token_embd.weight" and "output.weight" not in shapes:
            return (
                "its LoRA over token_embd.weight cannot be used: its base's output shares "
                "that tensor, which llama.cpp cannot adapt both ways"
            )
        problem = _pair_problem(target, pair, shapes.get(target))
        if problem:
            return problem
    return ""


# Tensor types llama.cpp cannot multiply a LoRA by (a model process given one crashed).
_NOT_WEIGHTS = frozenset({"I8", "I16", "I32", "I64", "F64"})


def _pair_problem(
    target: str, pair: dict[str, tuple[int, ...]], weight: tuple[int, ...] | None
) -> str:
    """Why the LoRA pair over ``target`` does not fit its base weight (of shape ``weight``),
    as llama.cpp reads it: a token embedding's pair flipped (its ``lora_b`` across the
    embedding, its ``lora_a`` across the vocabulary), every other pair straight."""
    if weight is None:
        return f"its base has no tensor {target} (the adapter was made for another model)"
    if set(pair) != {"lora_a", "lora_b"}:
        return f"damaged: {target} has only its {', '.join(pair)}"
    a, b = pair["lora_a"], pair["lora_b"]
    if not len(a) == len(b) == len(weight) == 2:
        fits = False
    elif target.endswith("token_embd.weight"):
        fits = a[0] == b[0] and weight[0] == b[1] and weight[1] == a[1]
    else:
        fits = a[1] == b[0] and a[0] == weight[0] and b[1] == weight[1]
    if not fits:
        return (
            f"its {target} of shape {a} x {b} does not fit its base's {weight} "
            "(the adapter was made for another model)"
        )
    return ""


def check_adapter(name: str, lora: str | Path, base: str | Path) -> None:
    """:class:`~engine.models.gguf.BadModelFile` naming model ``name`` when its adapter
    cannot be loaded over its base (:func:`adapter_problem`)."""
    from engine.models.gguf import BadModelFile

    reason = adapter_problem(lora, base)
    if reason:
        raise BadModelFile(
            f"{name}: its adapter {Path(lora).name} cannot be used: {reason}", reason
        )


def acquire_default(
    pool: ModelPool | None = None, name: str | None = None
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
