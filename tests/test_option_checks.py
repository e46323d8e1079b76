"""Options and environment variables that name nothing usable are refused in one line that
names them: a temperature that is not a finite number (wherever temperature is an option, and
before ``--trials`` can call it 0), ``MEDEXAM_HOME`` and ``MEDEXAM_DB`` naming a file, a folder
or a place that cannot be made, and damaged ``settings.json`` or ``models.json`` files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.consult.settings import ConsultSettings
from engine.fields import SettingError

MEDEXAM = Path(sys.executable).with_name("medexam")


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def refused(out, said: str) -> None:
    assert out.exit_code in (1, 2), out.output
    assert isinstance(out.exception, SystemExit), out.exception  # no traceback
    assert said in out.output.strip().splitlines()[-1], out.output


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN", "-0.5"])
@pytest.mark.parametrize(
    "command",
    [
        ["exam", "run", "--method", "generate", "--limit", "1"],
        ["exam", "run", "--method", "generate", "--limit", "1", "--trials", "3"],
        ["consult", "run", "--limit", "1", "--trials", "3"],
        ["french", "run", "--limit", "1"],
        ["generate", "--prompt", "hi"],
    ],
)
def test_a_temperature_must_be_a_finite_number(db_path: str, command, value) -> None:
    out = invoke("--db", db_path, *command, "--temperature", value)
    refused(out, "--temperature" if value in ("inf", "-inf", "-0.5") else "finite number")
    assert "temperature 0" not in out.output


def test_stored_settings_with_nan_are_refused_too() -> None:
    with pytest.raises(SettingError, match="temperature must be a finite number"):
        ConsultSettings.from_dict({"temperature": float("nan")})


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text("not a folder")
    return path


@pytest.mark.parametrize("command", [["runs", "list"], ["models", "list"], ["gui"]])
def test_an_unusable_medexam_home_is_named(tmp_path: Path, a_file: Path, command) -> None:
    cases = ((a_file, "it is a file, not a folder"), (a_file / "sub", "it cannot be made"))
    for home, why in cases:
        env = {**os.environ, "MEDEXAM_HOME": str(home), "QT_QPA_PLATFORM": "offscreen"}
        env.pop("MEDEXAM_DB", None)
        done = subprocess.run(
            [str(MEDEXAM), *command], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 1, done.stderr
        assert done.stderr.strip().splitlines() == [
            f"Error: MEDEXAM_HOME={home} is not usable: {why}"
            + ("" if "file" in why else " (Not a directory)")
        ]


def test_a_file_in_the_way_of_the_models_folder(models_folder: Path, monkeypatch) -> None:
    from engine import paths

    home = models_folder.parent / "home"
    (home / "indexes").write_text("in the way")
    with pytest.raises(paths.FolderError) as err:
        paths.indexes_dir()
    assert str(err.value) == (
        f"the indexes folder {home / 'indexes'} (in MEDEXAM_HOME={home}) is not usable: "
        "it is a file, not a folder"
    )


def test_a_medexam_home_linked_to_nothing(tmp_path: Path, monkeypatch) -> None:
    home = tmp_path / "home"
    home.symlink_to(tmp_path / "gone")
    monkeypatch.setenv("MEDEXAM_HOME", str(home))
    out = invoke("models", "list")
    refused(out, f"MEDEXAM_HOME={home} is not usable: it is a link to nothing")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_a_read_only_medexam_home(tmp_path: Path, monkeypatch) -> None:
    home = tmp_path / "ro"
    home.mkdir(mode=0o555)
    monkeypatch.setenv("MEDEXAM_HOME", str(home))
    out = invoke("models", "list")
    refused(out, f"MEDEXAM_HOME={home} is not usable: it cannot be written to")


@pytest.mark.parametrize("command", [["runs", "list"], ["gui"]])
def test_an_unusable_medexam_db_is_named(tmp_path: Path, a_file: Path, command) -> None:
    cases = (
        (tmp_path / "no" / "x.db", "folder"),
        (tmp_path, "is a folder, not a medexam database"),
        (a_file, "is not a medexam database"),
    )
    for db, why in cases:
        env = {**os.environ, "MEDEXAM_DB": str(db), "QT_QPA_PLATFORM": "offscreen"}
        env["MEDEXAM_HOME"] = str(tmp_path / "home")
        done = subprocess.run(
            [str(MEDEXAM), *command], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 1, done.stderr
        [line] = done.stderr.strip().splitlines()
        assert line.startswith(f"Error: MEDEXAM_DB={db} is not usable: ") and why in line


@pytest.mark.parametrize("name", ["settings.json", "models.json"])
def test_damaged_settings_and_model_lists(home: Path, db_path: str, name: str) -> None:
    for text in ("{oops", "[" * 100_000 + "]" * 100_000):
        (home / name).write_text(text)
        out = invoke("--db", db_path, "models", "list")
        assert out.exit_code == 1 and out.exception is not None, out.output
        assert isinstance(out.exception, SystemExit), out.exception
        line = out.output.strip().splitlines()[-1]
        assert line.startswith("Error: ") and name in line, out.output
