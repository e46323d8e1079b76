"""Fine-tuned models (``BASE+NAME``): a LoRA adapter is checked against its base's header
before llama.cpp loads it (a mismatch there ends the model process), so a damaged or
mismatched adapter is listed as unusable with why and refused in one line; a copied
artefact folder is a model of its own. The adapters are written here with gguf's writer
over the real embedded base (SmolLM2, a llama of width 576)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import gguf
import numpy as np
import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.models import catalog
from engine.models.checks import adapter_problem, problems
from engine.models.gguf import BadModelFile


def write_adapter(
    path: Path, width: int = 576, arch: str = "llama", kind: str = "adapter", rank: int = 2
) -> Path:
    """A GGUF LoRA over ``blk.0.attn_q.weight`` of a llama of ``width`` (SmolLM2's: 576)."""
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_type(kind)
    writer.add_string("adapter.type", "lora")
    writer.add_float32("adapter.lora.alpha", float(rank))
    writer.add_tensor("blk.0.attn_q.weight.lora_a", np.zeros((rank, width), dtype=np.float32))
    writer.add_tensor("blk.0.attn_q.weight.lora_b", np.zeros((width, rank), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def publish(home: Path, folder: str, adapter: Path, name: str | None = None) -> Path:
    """A trained doctor's artefact as training publishes it: ``trained/FOLDER``."""
    target = home / "trained" / folder
    target.mkdir(parents=True)
    shutil.copy(adapter, target / "adapter.gguf")
    manifest = {"artefact": "adapter", "kind": "doctor", "base": "smollm2",
                "name": name or folder, "lora": "adapter.gguf", "training": 1}  # fmt: skip
    (target / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return target


@pytest.fixture
def base() -> str:
    return str(catalog.resolve("smollm2").path)


def test_an_adapter_that_fits_passes(tmp_path: Path, base: str) -> None:
    assert adapter_problem(write_adapter(tmp_path / "good.gguf"), base) == ""


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda p: write_adapter(p, width=896), "does not fit its base's (576, 576)"),
        (lambda p: write_adapter(p, arch="qwen2"), "made for a 'qwen2' model"),
        (lambda p: write_adapter(p, kind="model"), "not a LoRA adapter"),
        (lambda p: p.write_bytes(np.random.default_rng(0).bytes(5000)) and p, "not a GGUF"),
        (lambda p: p.write_bytes(b"GGUF\x03\x00\x00\x00" + bytes(8)) and p, "truncated"),
    ],
)
def test_mismatched_or_damaged_adapters_are_refused(tmp_path: Path, base: str, make, said):
    assert said in adapter_problem(make(tmp_path / "bad.gguf"), base)


def write_pair(path: Path, target: str, a: np.ndarray, b: np.ndarray) -> Path:
    """A GGUF LoRA of one pair over ``target``, ``a`` and ``b`` as given (numpy's order: the
    slowest-varying dimension first)."""
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_type("adapter")
    writer.add_string("adapter.type", "lora")
    writer.add_float32("adapter.lora.alpha", 2.0)
    writer.add_tensor(f"{target}.lora_a", a)
    writer.add_tensor(f"{target}.lora_b", b)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_adapters_llama_cpp_would_crash_on_are_refused(tmp_path: Path, base: str) -> None:
    """Whole-number weights, and a LoRA over the token embedding of a base whose output
    shares it (SmolLM2's), either way round: each ended the model process."""
    q = "blk.0.attn_q.weight"
    whole = write_pair(
        tmp_path / "i.gguf", q, np.zeros((2, 576), np.int32), np.zeros((576, 2), np.int32)
    )
    assert "I32" in adapter_problem(whole, base)
    embd, f32 = "token_embd.weight", np.float32
    for n, (a, b) in enumerate((((2, 576), (49152, 2)), ((49152, 2), (576, 2)))):
        both = write_pair(tmp_path / f"e{n}.gguf", embd, np.zeros(a, f32), np.zeros(b, f32))
        assert "output shares" in adapter_problem(both, base)


def test_a_truncated_adapter_is_refused(tmp_path: Path, base: str) -> None:
    whole = write_adapter(tmp_path / "whole.gguf").read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(whole[: len(whole) - 100])
    assert adapter_problem(cut, base).startswith("truncated")


def test_models_list_shows_a_bad_adapter_unusable_and_loading_refuses_it(
    tmp_path: Path, models_folder: Path, db_path: str
) -> None:
    home = models_folder.parent / "home"
    publish(home, "good", write_adapter(tmp_path / "good.gguf"))
    publish(home, "other", write_adapter(tmp_path / "other.gguf", width=896))
    listed = CliRunner().invoke(cli, ["--db", db_path, "models", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = {r["name"]: r for r in json.loads(listed.output)}
    assert rows["smollm2+good"]["usable"] is True
    assert rows["smollm2+other"]["usable"] is False
    assert "does not fit its base" in rows["smollm2+other"]["problem"]
    assert [p.name for p in problems() if p.origin == "trained"] == ["smollm2+other"]
    text = CliRunner().invoke(cli, ["--db", db_path, "models", "list"]).output
    assert "(trained model smollm2+other): its blk.0.attn_q.weight" in text

    with pytest.raises(BadModelFile, match="smollm2\\+other: its adapter adapter.gguf cannot"):
        catalog.resolve("smollm2+other")
    ran = CliRunner().invoke(
        cli, ["--db", db_path, "generate", "--model", "smollm2+other", "--prompt", "Hi"]
    )
    assert ran.exit_code == 1 and "Traceback" not in ran.output
    assert ran.output.strip().splitlines()[-1].startswith("Error: smollm2+other: its adapter")


def test_a_fitting_adapter_loads_and_generates(
    tmp_path: Path, models_folder: Path, db_path: str
) -> None:
    publish(models_folder.parent / "home", "good", write_adapter(tmp_path / "good.gguf"))
    ran = CliRunner().invoke(
        cli,
        ["--db", db_path, "generate", "--model", "smollm2+good", "--prompt", "Hi",
         "--max-tokens", "4", "--json"],
    )  # fmt: skip
    assert ran.exit_code == 0, ran.output
    assert json.loads(ran.output)["completion_tokens"] >= 1


def test_a_copied_artefact_does_not_shadow_the_original(
    tmp_path: Path, models_folder: Path
) -> None:
    home = models_folder.parent / "home"
    original = publish(home, "doc", write_adapter(tmp_path / "doc.gguf"))
    publish(home, "a-copy", write_adapter(tmp_path / "copy.gguf", rank=3), name="doc")
    names = [m.name for m in catalog.list_models() if m.origin == "trained"]
    assert sorted(names) == ["smollm2+a-copy", "smollm2+doc"]
    found = catalog.resolve("smollm2+doc")
    assert found.lora == str(original / "adapter.gguf")  # type: ignore[attr-defined]


def test_damaged_manifests_do_not_break_the_catalog(
    tmp_path: Path, models_folder: Path, db_path: str
) -> None:
    home = models_folder.parent / "home"
    publish(home, "good", write_adapter(tmp_path / "good.gguf"))
    deep = home / "trained" / "deep"
    deep.mkdir()
    (deep / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    keyless = publish(home, "keyless", write_adapter(tmp_path / "k.gguf"))
    (keyless / "manifest.json").write_text(json.dumps({"artefact": "adapter", "name": "x"}))
    listed = CliRunner().invoke(cli, ["--db", db_path, "models", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = {r["name"]: r for r in json.loads(listed.output)}
    assert rows["smollm2+good"]["usable"] is True
    assert rows["unknown+keyless"]["problem"] == "its manifest names no base model or adapter file"


def test_an_adapter_outside_its_own_folder_is_refused(
    tmp_path: Path, models_folder: Path, db_path: str
) -> None:
    home = models_folder.parent / "home"
    outside = write_adapter(tmp_path / "outside.gguf")
    cases = {"up": "../../../outside.gguf", "absolute": str(outside), "linked": "link.gguf"}
    for folder, lora in cases.items():
        target = publish(home, folder, write_adapter(tmp_path / f"{folder}.gguf"))
        manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
        (target / "manifest.json").write_text(json.dumps({**manifest, "lora": lora}))
    (home / "trained" / "linked" / "link.gguf").symlink_to(outside)
    listed = CliRunner().invoke(cli, ["--db", db_path, "models", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = {r["name"]: r for r in json.loads(listed.output)}
    for folder, lora in cases.items():
        row = rows[f"smollm2+{folder}"]
        assert row["usable"] is False, row
        assert row["problem"] == f"its adapter {lora!r} is not a file of its own folder {folder}"
