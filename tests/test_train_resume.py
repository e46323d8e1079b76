"""A training killed with kill -9 reads ``interrupted`` and resumes from its last checkpoint to
the very weights an uninterrupted training with the same seed makes; one cancelled (Stop)
ends ``cancelled`` and resumes too. On the shipped sample (15 questions), tiny inputs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import french_fixtures
import pytest

from engine.core.progress import Cancel, Progress
from engine.french.dataset import ensure_sample
from engine.store.store import Store
from engine.train import records
from engine.train.artefacts import artefact_dir, find
from engine.train.loop import train

indexes = french_fixtures.indexes

#: 12 training questions (3 held out), 2 steps per epoch; checkpoints at steps 2, 3 and 4.
SETTINGS = {
    "epochs": 2,
    "batch_size": 6,
    "max_length": 40,
    "dev_fraction": 0.2,
    "checkpoint_every": 3,
    "seed": 7,
    "retriever": "bm25",
    "corpus": "french-sample",
}
KILL_AT = 4  # after the checkpoint of step 3, mid-epoch 2, before its end


def weights(name: str) -> dict:
    from safetensors.torch import load_file

    return load_file(str(artefact_dir(name) / "model.safetensors"))


KILLED = textwrap.dedent(
    """
    import os, signal, sys
    from engine.store.store import Store
    from engine.train.loop import train

    def progress(p):
        if p.done == {kill_at} and "loss" in p.info:
            os.kill(os.getpid(), signal.SIGKILL)

    train(Store(sys.argv[1]), "french-reader", "frenchmedmcqa-sample", {settings!r},
          name="killed", progress=progress)
    """
)


def test_killed_training_resumes_to_the_same_weights(
    tmp_path: Path, home: Path, indexes: Path
) -> None:
    db = tmp_path / "t.db"
    store = Store(db)
    ensure_sample(store)
    whole = train(store, "french-reader", "frenchmedmcqa-sample", SETTINGS, name="whole")
    assert whole["status"] == "finished" and whole["step"] == whole["n_steps"] == 4
    script = KILLED.format(kill_at=KILL_AT, settings=SETTINGS)
    env = {**os.environ, "MEDEXAM_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-c", script, str(db)], env=env, capture_output=True, timeout=900
    )
    assert done.returncode == -9, done.stderr.decode()[-2000:]
    killed = records.by_name(store, "killed")[0]
    assert killed["status"] == "interrupted" and killed["step"] == 3  # its last checkpoint
    steps: list[int] = []
    resumed = train(store, "", resume=killed["id"], progress=lambda p: steps.append(p.done))
    assert resumed["status"] == "finished" and resumed["id"] == killed["id"]
    assert steps and min(s for s in steps if s) == 4  # went on after step 3, not from 0
    assert [e["epoch"] for e in resumed["evals"]] == [1, 2]
    assert resumed["loss_curve"] == whole["loss_curve"]
    a, b = weights("whole"), weights("killed")
    assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)
    assert find("killed", "reader")["best_epoch"] == whole["result"]["best_epoch"]
    assert not list((home / "trained" / ".work").iterdir())  # checkpoints gone


def test_stop_ends_cancelled_and_resumes(tmp_path: Path, home: Path, indexes: Path) -> None:
    store = Store(tmp_path / "t.db")
    ensure_sample(store)
    cancel = Cancel()

    def stop_after_one(p: Progress) -> None:
        if p.done == 1 and "loss" in p.info:
            cancel.set()

    settings = {**SETTINGS, "epochs": 1, "retriever": "none", "dev_fraction": 0.0, "batch_size": 5}
    row = train(
        store, "french-reader", "frenchmedmcqa-sample", settings, name="stopped",
        progress=stop_after_one, cancel=cancel,
    )  # fmt: skip
    assert row["status"] == "cancelled" and row["step"] == 1
    assert row["result"] == {"resume": row["id"], "step": 1}
    with pytest.raises(Exception, match="a trained artefact named|no trained reader"):
        find("stopped", "reader")
    again = train(store, "", resume=row["id"])
    assert again["status"] == "finished" and again["step"] == 3
    assert find("stopped", "reader")["classes"] == again["data"]["classes"]
