"""Quantizations written by llama.cpp's quantizer from the embedded smollm2 (Q4_1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.progress import Progress
from engine.models.catalog import resolve
from engine.models.gguf import read_gguf_info
from engine.models.quantize import QuantizeError, ftype, quantize


def _smollm2() -> Path:
    return Path(resolve("smollm2").path)  # type: ignore[attr-defined]


def test_quantize_writes_the_type_with_progress_and_keeps_a_finished_file(
    tmp_path: Path,
) -> None:
    seen: list[Progress] = []
    target = tmp_path / "smollm2-q8_0.gguf"
    (tmp_path / ".smollm2-q8_0.gguf.part").write_bytes(b"left by a stopped run")
    out = quantize(_smollm2(), target, "q8_0", progress=seen.append, threads=1)
    assert out == target
    header = read_gguf_info(target)
    assert header.quantization == "Q8_0"
    assert header.parameters == read_gguf_info(_smollm2()).parameters
    # one report per tensor, in order, up to all of them
    assert [p.done for p in seen] == list(range(1, seen[-1].total + 1))
    assert seen[-1].total > 100 and seen[0].message.startswith("Q8_0: ")
    assert list(tmp_path.iterdir()) == [target]  # no part file left beside it
    written = target.stat().st_mtime_ns
    again: list[Progress] = []
    assert quantize(_smollm2(), target, "Q8_0", progress=again.append) == target
    assert target.stat().st_mtime_ns == written and again == []  # kept, not redone


def test_quantize_refuses_an_unknown_type_with_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(QuantizeError, match=r"unknown quantization type 'Q9_9'; known: F32, F16"):
        quantize(_smollm2(), tmp_path / "x.gguf", "Q9_9")
    assert ftype("Q4_K_M") == 15 and ftype("f32") == 0


def test_quantize_a_file_that_is_no_model_leaves_nothing(tmp_path: Path) -> None:
    source = tmp_path / "notes.gguf"
    source.write_bytes(b"not a model" * 100)
    target = tmp_path / "out" / "notes-q8_0.gguf"
    with pytest.raises(QuantizeError, match="could not write notes.gguf as Q8_0"):
        quantize(source, target, "Q8_0", threads=1)
    assert not any((tmp_path / "out").iterdir())
    with pytest.raises(QuantizeError, match="no model file missing.gguf"):
        quantize(tmp_path / "missing.gguf", target, "Q8_0")
