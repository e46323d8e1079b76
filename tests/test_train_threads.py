"""A CPU training takes the cores other programs leave it, as a model does: torch's threads
spin while they wait, so a thread on a core another program keeps busy slows the training's
every step. Its threads are read again between steps and torch's own are given back after."""

from __future__ import annotations

from pathlib import Path

import pytest
import train_fixtures
from test_cores_load import hog  # noqa: F401 - a fixture: a busy loop on one core
from train_fixtures import settings

from engine.core.progress import Progress
from engine.french.dataset import ensure_sample
from engine.models.hardware import available_cores
from engine.store.store import Store
from engine.train.loop import train
from engine.train.threads import CpuThreads

tiny_encoder = train_fixtures.tiny_encoder
torch = pytest.importorskip("torch")
two_cores = pytest.mark.skipif(available_cores() < 2, reason="needs two cores to use")


@pytest.fixture(autouse=True)
def machine_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEDEXAM_SHARE_CORES", "machine")


@two_cores
def test_a_core_another_program_keeps_busy_is_left_out(hog) -> None:  # noqa: F811
    before = torch.get_num_threads()
    threads = CpuThreads(cores=2)
    try:
        assert torch.get_num_threads() == 1 and threads.settle() == 1
    finally:
        threads.restore()
    assert torch.get_num_threads() == before


def test_threads_are_torchs_own_when_the_load_is_not_counted(monkeypatch) -> None:
    monkeypatch.setenv("MEDEXAM_SHARE_CORES", "medexam")
    before = torch.get_num_threads()
    threads = CpuThreads(cores=2)
    assert threads.settle() == before and not threads.enabled


@two_cores
def test_a_training_beside_a_busy_program_trains_on_the_other_core(
    tmp_path: Path,
    home: Path,
    tiny_encoder: Path,
    hog,  # noqa: F811
) -> None:
    store = Store(tmp_path / "t.db")
    ensure_sample(store)
    seen: list[int] = []

    def progress(p: Progress) -> None:
        if "loss" in p.info:
            seen.append(torch.get_num_threads())

    before = torch.get_num_threads()
    row = train(
        store, "french-reader", "frenchmedmcqa-sample", settings(tiny_encoder), name="r",
        progress=progress,
    )  # fmt: skip
    assert row["status"] == "finished" and seen == [1, 1, 1]
    assert torch.get_num_threads() == before
