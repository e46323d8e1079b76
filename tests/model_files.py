"""Damaged and unloadable model files for the tests of model checks (made in a temporary
folder from the embedded chat model; nothing is written into the project)."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np

from engine.models import catalog


def cut_copy(target: Path, n_bytes: int) -> Path:
    """The first ``n_bytes`` of the embedded chat model's file, written to ``target``."""
    with Path(catalog.resolve("smollm2").path).open("rb") as fh:
        target.write_bytes(fh.read(n_bytes))
    return target


def tiny_llama(path: Path) -> Path:
    """A GGUF whose header passes the checks but that llama.cpp cannot load."""
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tensor("w", np.zeros((4, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
