"""A training's checkpoints are its own: read as tensors and numbers only (a planted pickle
never runs), kept apart from another database's training of the same id, and a resume whose
checkpoint is missing, cut short or another's ends failed in one line — never silently from
step 0, never left running. A tiny encoder on the shipped sample."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import train_fixtures
from click.testing import CliRunner
from train_fixtures import plant, steps_of, stopped_after_one_step

from engine.cli import cli
from engine.store.store import Store
from engine.train import artefacts, records
from engine.train.checkpoints import CHECKPOINT
from engine.train.loop import TrainError, train

tiny_encoder = train_fixtures.tiny_encoder


def one_error_line(result) -> str:
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    return lines[0]


def test_a_planted_checkpoint_never_runs(tmp_path: Path, home: Path, tiny_encoder: Path) -> None:
    store = Store(tmp_path / "t.db")
    row = stopped_after_one_step(store, tiny_encoder, "r")
    marker = tmp_path / "ran"
    plant(artefacts.work_dir(row) / CHECKPOINT, marker)
    for n in (row["id"], row["id"] + 1):  # where trainings worked before
        plant(home / "trained" / ".work" / str(n) / CHECKPOINT, marker)
    resumed = train(store, "", resume=row["id"])
    assert not marker.exists()
    assert resumed["status"] == "failed"
    assert "is not a checkpoint medexam can use (it holds more than tensors" in resumed["error"]
    assert "weights_only" not in resumed["error"]
    fresh, steps = steps_of(store, tiny_encoder, "fresh")
    assert not marker.exists()
    assert fresh["status"] == "finished" and steps == [1, 2, 3]


def test_trainings_of_two_databases_keep_their_own_checkpoints(
    tmp_path: Path, home: Path, tiny_encoder: Path
) -> None:
    y, z = Store(tmp_path / "y.db"), Store(tmp_path / "z.db")
    stopped = stopped_after_one_step(y, tiny_encoder, "y-reader")
    other, steps = steps_of(z, tiny_encoder, "z-reader")
    assert other["id"] == stopped["id"]
    assert other["status"] == "finished" and steps == [1, 2, 3]  # from step 0, not y's
    resumed, steps = steps_of(y, tiny_encoder, "", resume=stopped["id"])
    assert resumed["status"] == "finished" and steps == [2, 3]  # y's checkpoint still there
    assert artefacts.find("y-reader")["work"] != artefacts.find("z-reader")["work"]


def test_another_databases_artefact_is_not_taken_for_its_own(
    tmp_path: Path, home: Path, tiny_encoder: Path
) -> None:
    y, z = Store(tmp_path / "y.db"), Store(tmp_path / "z.db")
    stopped = stopped_after_one_step(y, tiny_encoder, "same")
    made, _ = steps_of(z, tiny_encoder, "same")  # z's training of that id and name
    assert made["status"] == "finished" and made["id"] == stopped["id"]
    with pytest.raises(TrainError, match="a trained artefact named 'same' already exists"):
        train(y, "", resume=stopped["id"])
    assert records.get(y, stopped["id"])["status"] == "cancelled"


def test_a_missing_checkpoint_is_said(tmp_path: Path, home: Path, tiny_encoder: Path) -> None:
    db = tmp_path / "t.db"
    store = Store(db)
    row = stopped_after_one_step(store, tiny_encoder, "r")
    shutil.rmtree(artefacts.work_dir(row))
    result = CliRunner().invoke(cli, ["--db", str(db), "train", "resume", str(row["id"])])
    line = one_error_line(result)
    assert f"the checkpoint of training {row['id']} at step 1 is missing" in line
    assert "resume it with" not in line  # there is nothing to resume from
    again = records.get(store, row["id"])
    assert again["status"] == "failed" and again["step"] == 1


def test_a_truncated_checkpoint_fails_in_one_line(
    tmp_path: Path, home: Path, tiny_encoder: Path
) -> None:
    db = tmp_path / "t.db"
    store = Store(db)
    row = stopped_after_one_step(store, tiny_encoder, "r")
    path = artefacts.work_dir(row) / CHECKPOINT
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    result = CliRunner().invoke(cli, ["--db", str(db), "train", "resume", str(row["id"])])
    line = one_error_line(result)
    assert "is not a checkpoint medexam can use (it is cut short or damaged" in line
    assert records.get(store, row["id"])["status"] == "failed"
