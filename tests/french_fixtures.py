"""Fixtures for the French activity tests (import them into a test module to use them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import engine.paths
from engine.french.dataset import ensure_sample
from engine.paths import samples_dir
from engine.store.store import Store


@pytest.fixture
def indexes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Built indexes go to a temporary folder instead of ``indexes/``."""
    folder = tmp_path / "indexes"
    folder.mkdir()
    monkeypatch.setattr(engine.paths, "indexes_dir", lambda: folder)
    return folder


@pytest.fixture
def sample_store(store: Store) -> Store:
    """A store holding the sample data set "frenchmedmcqa-sample" and corpus "french-sample"."""
    ensure_sample(store)
    return store


def sample_questions() -> list[dict]:
    return json.loads((samples_dir() / "frenchmedmcqa_sample.json").read_text(encoding="utf-8"))


def sample_passages() -> list[dict]:
    lines = (samples_dir() / "french_passages.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def write_questions(path: Path, questions: list[dict]) -> Path:
    path.write_text(json.dumps(questions, ensure_ascii=False), encoding="utf-8")
    return path
