"""A training never learns from, keeps or publishes numbers that are not finite (NaN, inf): a
loss or gradients that are not finite end it in one line naming the likely cause, before the
weights change; a checkpoint is written only of finite weights; a resume from a checkpoint
(or best epoch) holding them fails in one line and publishes nothing. A tiny encoder on the
shipped sample, NaN put in its weights or its loss."""

from __future__ import annotations

import contextlib
import math
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import train_fixtures
from click.testing import CliRunner
from torch.optim.optimizer import register_optimizer_step_post_hook
from train_fixtures import steps_of, stopped_after_one_step

from engine.cli import cli
from engine.french.dataset import ensure_sample
from engine.store.store import Store
from engine.train import artefacts, records
from engine.train.checkpoints import BEST, CHECKPOINT
from engine.train.kinds import TrainingKind

tiny_encoder = train_fixtures.tiny_encoder
QUERY = "encoder.layer.0.attention.self.query.weight"


def one_error_line(result: Any) -> str:
    """The one line of a training that failed (after the lines of its start and progress)."""
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("Error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], result.output
    assert "Traceback" not in result.output
    return errors[0]


def cli_train(db: Path, encoder: Path, name: str) -> str:
    ensure_sample(Store(db))
    args = ["--db", str(db), "train", "french-reader", "--dataset", "frenchmedmcqa-sample",
            "--epochs", "1", "--batch-size", "5", "--max-length", "32", "--checkpoint-every",
            "1", "--encoder", str(encoder), "--name", name]  # fmt: skip
    return one_error_line(CliRunner().invoke(cli, args))


def nothing_kept(store: Store, name: str) -> None:
    [row] = records.by_name(store, name)
    assert row["status"] == "failed" and row["step"] == 0 and row["loss_curve"] == []
    assert not (artefacts.work_dir(row) / CHECKPOINT).exists()
    assert not artefacts.exists(name)


def spoiled(encoder: Path, folder: Path, value: float, at: tuple[int, int]) -> Path:
    """A copy of ``encoder`` with ``value`` at ``at`` of its attention's query weights."""
    from safetensors.torch import load_file, save_file

    copy = Path(shutil.copytree(encoder, folder))
    weights = load_file(str(copy / "model.safetensors"))
    weights[QUERY][at] = value
    save_file(weights, str(copy / "model.safetensors"), metadata={"format": "pt"})
    return copy


@pytest.mark.parametrize(("value", "at"), [(math.nan, (0, 0)), (math.inf, (3, 5))])
def test_a_non_finite_loss_fails_the_training_in_one_line(
    tmp_path: Path, home: Path, tiny_encoder: Path, value: float, at: tuple[int, int]
) -> None:
    encoder = spoiled(tiny_encoder, tmp_path / "spoiled", value, at)
    line = cli_train(tmp_path / "t.db", encoder, "r")
    assert "the loss of step 1 is nan, and nothing of that step was kept: the model's " in line
    assert "weights hold 1 value that is not a finite number (NaN or infinite), the " in line
    assert f"first in bert.{QUERY}: the model it starts from is damaged" in line
    nothing_kept(Store(tmp_path / "t.db"), "r")


@contextlib.contextmanager
def poisoned(step: int, how: Callable[[torch.nn.Module, torch.Tensor], Any]) -> Iterator[None]:
    """While it lasts, the reader's loss of step ``step`` is ``how(model, loss)``."""
    real = TrainingKind.prepare_function

    def prepare_function(kind: TrainingKind) -> Callable[..., Any]:
        prepare = real(kind)

        def poisoned_prepare(*args: Any, **kwargs: Any) -> Any:
            task = prepare(*args, **kwargs)
            calls = [0]

            def loss(model: torch.nn.Module, batch: dict[str, Any]) -> torch.Tensor:
                calls[0] += 1
                value = model(**batch).loss
                return how(model, value) if calls[0] == step else value

            task.loss = loss
            return task

        return poisoned_prepare

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(TrainingKind, "prepare_function", prepare_function)
        yield


def test_after_a_non_finite_loss_at_step_2_a_resume_goes_on_from_step_1(
    tmp_path: Path, home: Path, tiny_encoder: Path
) -> None:
    store = Store(tmp_path / "t.db")
    with poisoned(2, lambda _model, loss: loss * math.nan):
        row, steps = steps_of(store, tiny_encoder, "r")
    assert row["status"] == "failed" and steps == [1]
    assert row["error"] == (
        "the loss of step 2 is nan, and nothing of that step was kept: the learning rate "
        "(5e-05) may be too high for these data"
    )
    assert row["step"] == 1 and row["result"] == {"resume": row["id"], "step": 1}
    assert not artefacts.exists("r")
    # the loss is a number again: the training goes on from step 1
    resumed, steps = steps_of(store, tiny_encoder, "", resume=row["id"])
    assert resumed["status"] == "finished" and steps == [2, 3]
    assert all(math.isfinite(loss) for _, loss in resumed["loss_curve"])


def infinite_gradient(model: torch.nn.Module, loss: torch.Tensor) -> torch.Tensor:
    weight = dict(model.named_parameters())["classifier.weight"]
    weight.register_hook(lambda g: torch.full_like(g, math.inf))
    return loss


def test_a_non_finite_loss_gradient_fails_the_training_in_one_line(
    tmp_path: Path, home: Path, tiny_encoder: Path
) -> None:
    with poisoned(1, infinite_gradient):
        line = cli_train(tmp_path / "t.db", tiny_encoder, "r")
    assert "the gradients of step 1 hold " in line and "the first in classifier.weight" in line
    assert "the learning rate (5e-05) may be too high" in line
    nothing_kept(Store(tmp_path / "t.db"), "r")


@pytest.fixture
def weights_made_infinite() -> Iterator[None]:
    """Every optimizer step leaves the first weight it trains infinite."""

    def hook(optimizer: torch.optim.Optimizer, *_: Any) -> None:
        with torch.no_grad():
            optimizer.param_groups[0]["params"][0].fill_(math.inf)

    handle = register_optimizer_step_post_hook(hook)
    yield
    handle.remove()


def test_weights_made_non_finite_by_a_step_are_never_checkpointed(
    tmp_path: Path, home: Path, tiny_encoder: Path, weights_made_infinite: None
) -> None:
    line = cli_train(tmp_path / "t.db", tiny_encoder, "r")
    assert "after step 1 the trained weights hold " in line
    assert "(its checkpoint was not written)" in line
    [row] = records.by_name(Store(tmp_path / "t.db"), "r")
    assert row["status"] == "failed" and not (artefacts.work_dir(row) / CHECKPOINT).exists()
    assert not artefacts.exists("r")


def spoil_checkpoint(path: Path, last: bool) -> None:
    """What an earlier medexam wrote after a NaN loss: NaN weights, and (``last``) the
    training's last step reached with NaN losses."""
    state = torch.load(path, weights_only=True)
    first = next(iter(state["model"]))
    state["model"][first] = torch.full_like(state["model"][first], math.nan)
    if last:
        at = state["position"]
        at.update(step=3, epoch=1, batch=0)
        at["loss_curve"] += [[2, math.nan], [3, math.nan]]
    torch.save(state, path)


@pytest.mark.parametrize("last", [False, True])
def test_resume_after_a_non_finite_loss_publishes_nothing(
    tmp_path: Path, home: Path, tiny_encoder: Path, last: bool
) -> None:
    db = tmp_path / "t.db"
    store = Store(db)
    row = stopped_after_one_step(store, tiny_encoder, "r")
    spoil_checkpoint(artefacts.work_dir(row) / CHECKPOINT, last)
    for _ in range(2):  # and again: still nothing
        line = one_error_line(CliRunner().invoke(cli, ["--db", str(db), "train", "resume", str(row["id"])]))  # fmt: skip
        assert f"{CHECKPOINT} holds 1" in line or f"{CHECKPOINT} holds " in line
        assert "not finite" in line and "the training cannot go on from it" in line
        assert not artefacts.exists("r")
    assert records.get(store, row["id"])["status"] == "failed"


def test_resume_after_a_non_finite_loss_never_publishes_a_non_finite_best_epoch(
    tmp_path: Path, home: Path, tiny_encoder: Path
) -> None:
    store = Store(tmp_path / "t.db")
    row = stopped_after_one_step(store, tiny_encoder, "r")
    folder = artefacts.work_dir(row)
    weights = torch.load(folder / CHECKPOINT, weights_only=True)["model"]
    torch.save({k: torch.full_like(v, math.nan) for k, v in weights.items()}, folder / BEST)
    resumed, steps = steps_of(store, tiny_encoder, "", resume=row["id"])
    assert resumed["status"] == "failed" and steps == [2, 3]
    assert resumed["error"].startswith("after step 3 the trained weights hold ")
    assert resumed["error"].endswith("(the reader 'r' was not written)")
    assert not artefacts.exists("r")
