"""Trainings that cannot start say why in one line and leave no training "running": a bad
encoder folder (no tokenizer files, weights cut short, weights in a pickle — never run), a
data set of another activity's kind, a name already taken, a context without a corpus, too
little memory; and the kinds' registry."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import train_fixtures
from click.testing import CliRunner
from train_fixtures import TOKENIZER_FILES, plant

from engine.cli import cli
from engine.paths import samples_dir
from engine.store.store import Store
from engine.train.kinds import get_kind, kinds

tiny_encoder = train_fixtures.tiny_encoder


def invoke(db_path: str, *args: str):
    return CliRunner().invoke(cli, ["--db", db_path, *args])


@pytest.fixture
def ready(db_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MEDEXAM_HOME", str(tmp_path / "home"))
    assert invoke(db_path, "french", "sample").exit_code == 0
    return db_path


def train(db_path: str, *args: str):
    return invoke(
        db_path, "train", "french-reader", "--dataset", "frenchmedmcqa-sample", "--epochs", "1",
        "--max-length", "32", *args,
    )  # fmt: skip


def one_error_line(result) -> str:
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert "Traceback" not in result.output
    return lines[0]


def none_running(db_path: str) -> None:
    from engine.train.records import all_trainings

    rows = all_trainings(Store(db_path))
    assert all(r["status"] != "running" for r in rows)


def test_bad_encoder_folder(ready: str, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    line = one_error_line(train(ready, "--encoder", str(empty), "--name", "x"))
    assert "not a Hugging Face model folder (no config.json)" in line
    line = one_error_line(train(ready, "--encoder", str(tmp_path / "nope"), "--name", "x"))
    assert "no such folder" in line
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text(json.dumps({"model_type": "bert"}), encoding="utf-8")
    line = one_error_line(train(ready, "--encoder", str(broken), "--name", "x"))
    assert f"encoder {str(broken)!r}:" in line
    none_running(ready)


def test_encoder_folders_that_cannot_be_trained(
    ready: str, tmp_path: Path, tiny_encoder: Path
) -> None:
    def copy(name: str) -> Path:
        return Path(shutil.copytree(tiny_encoder, tmp_path / name))

    no_tokenizer = copy("no-tokenizer")
    for name in TOKENIZER_FILES:
        (no_tokenizer / name).unlink()
    line = one_error_line(train(ready, "--encoder", str(no_tokenizer), "--name", "x"))
    assert "its tokenizer knows only 5 tokens (the folder lacks the tokenizer's files" in line
    cut = copy("cut")
    weights = (cut / "model.safetensors").read_bytes()
    (cut / "model.safetensors").write_bytes(weights[: len(weights) // 3])
    line = one_error_line(train(ready, "--encoder", str(cut), "--name", "x"))
    assert "its model.safetensors is damaged or cut short" in line
    pickled, marker = copy("pickled"), tmp_path / "ran"
    (pickled / "model.safetensors").unlink()
    plant(pickled / "pytorch_model.bin", marker)
    line = one_error_line(train(ready, "--encoder", str(pickled), "--name", "x"))
    assert "its weights are a pickle that holds more than tensors" in line
    assert "weights_only" not in line and not marker.exists()
    none_running(ready)


def test_data_set_of_another_kind(ready: str) -> None:
    sample = samples_dir() / "explaincpe_sample.json"
    assert invoke(ready, "import", "explaincpe", str(sample), "--name", "cpe").exit_code == 0
    result = invoke(ready, "train", "french-reader", "--dataset", "cpe", "--name", "x")
    line = one_error_line(result)
    assert "holds Exam items, not French QA items" in line
    none_running(ready)


def test_context_needs_a_corpus_and_names_are_checked(ready: str) -> None:
    line = one_error_line(train(ready, "--retriever", "bm25", "--name", "x"))
    assert "--retriever bm25 needs --corpus" in line
    assert "invalid name" in one_error_line(train(ready, "--name", "../up"))
    assert "no data set named 'nope'" in one_error_line(
        invoke(ready, "train", "french-reader", "--dataset", "nope", "--name", "x")
    )
    assert "no training with id 9" in one_error_line(invoke(ready, "train", "resume", "9"))
    none_running(ready)


def test_a_run_with_an_unknown_reader(ready: str) -> None:
    result = invoke(ready, "french", "run", "--dataset", "frenchmedmcqa-sample", "--reader", "no")
    assert "no trained reader named 'no'" in one_error_line(result)
    assert not Store(ready).runs("french")  # refused before a run was created


def test_the_kinds_registry() -> None:
    assert "french-reader" in kinds()
    kind = get_kind("french-reader")
    assert kind.activity == "french" and kind.artefact == "reader"
    assert {"french-reader", "doctor", "french-writer"} <= set(kinds())
    assert get_kind("doctor").data_flag == "--dialogues"
    with pytest.raises(ValueError, match="unknown training kind 'nope'"):
        get_kind("nope")


def test_too_little_memory(ready: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import psutil

    class Tiny:
        available = 2**20

    monkeypatch.setattr(psutil, "virtual_memory", lambda: Tiny())
    line = one_error_line(train(ready, "--name", "x"))
    assert "GiB of memory" in line and "choose a smaller encoder" in line
    none_running(ready)
