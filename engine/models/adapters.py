"""LoRA adapters checked against their base before llama.cpp loads them.

llama.cpp ends the model process when an adapter does not fit its base (a damaged file, one
made for another model, tensors it cannot multiply by), so medexam reads both GGUF headers
first and says why in one line: :func:`adapter_problem` for listing, :func:`check_adapter`
for loading. This module needs nothing but the header reader, so the catalog, the checks and
the model process can all use it.
"""

from __future__ import annotations

from pathlib import Path


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
