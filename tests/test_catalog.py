"""The model catalog: embedded models, the models folder, added files, bad files."""

from __future__ import annotations

import shutil
from pathlib import Path

import gguf
import numpy as np
import pytest

from engine.models import catalog
from engine.models.gguf import BadModelFile, read_gguf_info


def test_the_embedded_chat_model_is_listed_with_its_metadata():
    models = {m.name: m for m in catalog.list_models()}
    smol = models["smollm2"]
    assert smol.origin == "embedded"
    assert smol.architecture == "llama"
    assert smol.parameters_human == "135M"
    assert smol.quantization == "Q4_1"
    assert smol.chat_template is True
    assert smol.context_length == 8192
    assert Path(smol.path).is_file()


def test_gemma_is_assembled_on_first_use_and_checksummed():
    gemma = catalog.resolve("gemma3-270m")
    assert gemma.architecture == "gemma3"
    assert gemma.quantization == "Q4_K_M"
    assert gemma.chat_template is False  # a base model


def test_default_is_smollm2():
    assert catalog.resolve(None).name == "smollm2"


def test_missing_file(tmp_path):
    with pytest.raises(BadModelFile, match="no such file"):
        read_gguf_info(tmp_path / "nope.gguf")


def test_not_a_gguf_file(tmp_path):
    p = tmp_path / "notes.gguf"
    p.write_text("just some text, not a model")
    with pytest.raises(BadModelFile, match="not a GGUF model file"):
        read_gguf_info(p)


def test_truncated_file(tmp_path):
    src = Path(catalog.resolve("smollm2").path)
    p = tmp_path / "cut.gguf"
    with src.open("rb") as fh:
        p.write_bytes(fh.read(src.stat().st_size // 2))
    with pytest.raises(BadModelFile, match="truncated"):
        read_gguf_info(p)
    head = tmp_path / "head.gguf"
    with src.open("rb") as fh:
        head.write_bytes(fh.read(2000))
    with pytest.raises(BadModelFile, match="truncated"):
        read_gguf_info(head)


def test_unsupported_architecture(tmp_path):
    p = tmp_path / "alien.gguf"
    writer = gguf.GGUFWriter(str(p), "alienformer")
    writer.add_tensor("w", np.zeros((4, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(BadModelFile, match="architecture 'alienformer' is not supported"):
        read_gguf_info(p)


def test_added_models_are_remembered(tmp_path):
    copy = tmp_path / "my-small-model.gguf"
    shutil.copy(catalog.resolve("smollm2").path, copy)
    added = catalog.add_model(copy)
    assert added.name == "my-small-model" and added.origin == "added"
    assert "my-small-model" in {m.name for m in catalog.list_models()}
    assert catalog.resolve("my-small-model").path == str(copy.resolve())
    catalog.remove_model("my-small-model")
    assert "my-small-model" not in {m.name for m in catalog.list_models()}


def test_adding_a_bad_file_is_refused(tmp_path):
    p = tmp_path / "bad.gguf"
    p.write_bytes(b"GGUF\x03\x00")
    with pytest.raises(BadModelFile):
        catalog.add_model(p)


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(catalog.ModelError, match="known: .*smollm2"):
        catalog.resolve("no-such-model")
