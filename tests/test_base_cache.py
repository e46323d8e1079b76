"""A training base's dequantized weights are kept (:mod:`engine.train.base_cache`): the real
SmolLM2 read back from the cache equals the one transformers dequantizes from its GGUF; a
changed file is dequantized again and its old copy removed, a damaged copy is made again, and a
cache that cannot be written only costs time."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pytest
import torch

from engine.train.base_cache import WEIGHTS, cached_base
from engine.train.chat_lora import base_model, load_base


def tiny() -> Any:
    """A llama of a few thousand random weights, its embeddings tied to its output."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, tie_word_embeddings=True,
    )  # fmt: skip
    return LlamaForCausalLM(config)


def read(folder: Path) -> Any:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)


def same(a: Any, b: Any) -> bool:
    x, y = a.state_dict(), b.state_dict()
    return x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x)


def test_a_changed_damaged_or_unwritable_cache_costs_only_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEDEXAM_CACHE", str(tmp_path / "cache"))
    gguf = tmp_path / "base.gguf"
    gguf.write_bytes(b"GGUF one")
    loads: list[Any] = []

    def load() -> Any:
        loads.append(tiny())
        return loads[-1]

    first = cached_base(gguf, load, read)
    assert same(cached_base(gguf, load, read), first) and len(loads) == 1
    [kept] = (tmp_path / "cache" / "bases").iterdir()
    assert kept.name.startswith("base-") and (kept / WEIGHTS).is_file()

    (kept / WEIGHTS).write_bytes(b"not weights")  # damaged: made again
    cached_base(gguf, load, read)
    assert len(loads) == 2 and (kept / WEIGHTS).stat().st_size > 1000

    gguf.write_bytes(b"GGUF two, changed")  # changed: made again, the old copy removed
    os.utime(gguf, ns=(1, 1))
    cached_base(gguf, load, read)
    assert len(loads) == 3
    [now] = (tmp_path / "cache" / "bases").iterdir()
    assert now != kept and not any(p.name.startswith(".part-") for p in now.parent.iterdir())

    (tmp_path / "file").write_text("")
    monkeypatch.setenv("MEDEXAM_CACHE", str(tmp_path / "file"))  # unusable: nothing kept
    assert same(cached_base(gguf, load, read), loads[-1]) and len(loads) == 4


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_cached_base_with_non_finite_weights_is_made_again_from_the_gguf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: float
) -> None:
    from safetensors.torch import load_file, save_file

    monkeypatch.setenv("MEDEXAM_CACHE", str(tmp_path / "cache"))
    gguf = tmp_path / "base.gguf"
    gguf.write_bytes(b"GGUF")
    loads: list[Any] = []

    def load() -> Any:
        loads.append(tiny())
        return loads[-1]

    cached_base(gguf, load, read)
    [kept] = (tmp_path / "cache" / "bases").iterdir()
    weights = load_file(str(kept / WEIGHTS))
    weights["model.layers.0.mlp.down_proj.weight"][3, 1] = value
    save_file(weights, str(kept / WEIGHTS), metadata={"format": "pt"})
    again = cached_base(gguf, load, read)
    assert len(loads) == 2 and same(again, loads[-1])  # made again from the GGUF file
    assert all(torch.isfinite(t).all() for t in again.state_dict().values())
    assert same(cached_base(gguf, load, read), again) and len(loads) == 2  # and kept again


def test_a_base_that_loads_with_non_finite_weights_is_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEDEXAM_CACHE", str(tmp_path / "cache"))
    gguf = tmp_path / "base.gguf"
    gguf.write_bytes(b"GGUF")

    def load() -> Any:
        model = tiny()
        with torch.no_grad():
            model.model.norm.weight[0] = math.nan
        return model

    assert not torch.isfinite(cached_base(gguf, load, read).model.norm.weight).all()
    assert not list((tmp_path / "cache" / "bases").glob("base-*"))


def test_only_the_folders_the_cache_wrote_are_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEDEXAM_CACHE", str(tmp_path / "cache"))
    gguf = tmp_path / "base.gguf"
    gguf.write_bytes(b"GGUF one")
    cached_base(gguf, tiny, read)
    bases = tmp_path / "cache" / "bases"
    [old] = bases.iterdir()
    same_file = old.name.rsplit("-", 1)[0]
    kept_by_hand = [
        bases / f"{same_file}-my-backup",
        bases / f"{old.name}-copy",
        bases / f"{same_file}-{'0' * 11}",
        bases / f"{same_file}-{'0' * 12}x",
        bases / f"{same_file}-{'A' * 12}",
    ]
    for folder in kept_by_hand:
        folder.mkdir()
        (folder / "notes.txt").write_text("mine")
    (bases / f"{same_file}-{'0' * 12}.txt").write_text("a file of mine")
    gguf.write_bytes(b"GGUF two, changed")
    os.utime(gguf, ns=(1, 1))
    cached_base(gguf, tiny, read)
    assert not old.exists()  # the same file before it changed: removed
    assert all((f / "notes.txt").read_text() == "mine" for f in kept_by_hand)
    assert (bases / f"{same_file}-{'0' * 12}.txt").is_file()
    assert len(list(bases.iterdir())) == len(kept_by_hand) + 2


@pytest.mark.slow
def test_the_real_base_read_back_equals_the_dequantized_gguf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEDEXAM_CACHE", str(tmp_path / "cache"))
    info = base_model("smollm2")
    dequantized = load_base(info, "cpu")
    [kept] = (tmp_path / "cache" / "bases").iterdir()

    from transformers import AutoModelForCausalLM

    asked: list[str] = []
    real = AutoModelForCausalLM.from_pretrained

    def spy(where: str, *args: Any, **kwargs: Any) -> Any:
        asked.append(where if "gguf_file" not in kwargs else "the GGUF")
        return real(where, *args, **kwargs)

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", spy)
    again = load_base(info, "cpu")
    assert asked == [str(kept)]  # the GGUF is not read again
    assert same(again, dequantized)
    assert again.lm_head.weight.data_ptr() == again.model.embed_tokens.weight.data_ptr()
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    with torch.no_grad():
        assert torch.equal(again(ids).logits, dequantized(ids).logits)
