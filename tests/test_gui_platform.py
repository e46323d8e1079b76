"""The app on Qt's real X11 platform plugin (xcb) under Xvfb, as a fresh Linux machine starts
it: the other GUI tests run Qt offscreen and never load the plugin, so a system library the
plugin needs and the machine lacks fails here. ``scripts/system_libs.sh`` (what
``scripts/run`` checks first) names such a library and the package to install."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CHECK = REPO / "scripts" / "system_libs.sh"

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="Xvfb and the xcb plugin exist only on Linux"
)


def xcb_plugin() -> Path:
    import PySide6

    return Path(PySide6.__file__).parent / "Qt" / "plugins" / "platforms" / "libqxcb.so"


def medexam() -> list[str]:
    script = Path(sys.executable).with_name("medexam")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "from engine.entry import main; main()"]


@pytest.mark.gui
def test_app_starts_on_the_xcb_plugin_under_xvfb(tmp_path: Path) -> None:
    xvfb_run = shutil.which("xvfb-run")
    assert xvfb_run, (
        "Xvfb is not installed: apt-get install xvfb (scripts/test installs it as root)"
    )
    env = {**os.environ, "QT_QPA_PLATFORM": "xcb", "MEDEXAM_HOME": str(tmp_path)}
    env["MEDEXAM_STARTUP_TIMING"] = "quit"  # closes the app once its screen is ready
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    cmd = [xvfb_run, "-a", "-s", "-screen 0 1280x800x24"]
    cmd += [*medexam(), "--db", str(tmp_path / "medexam.db"), "gui"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240, check=False)
    said = out.stdout + out.stderr
    assert out.returncode == 0, said[-3000:]
    assert "window shown" in said and "ready" in said, said[-3000:]
    assert "could not" not in said.lower(), said[-3000:]  # "could not load the Qt platform plugin"


RATE = r"""
import sys, tempfile
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from engine.exam.dataset import ensure_sample
from engine.models.scripted import ScriptedModel, scripted_pool
from engine.core.runs import run
from gui.testing import open_window

window = open_window(tempfile.mkdtemp())
window.show()
store = window.ctx.store
pool = scripted_pool(ScriptedModel("model-a", replies="答案：B\n解析：B项正确。"))
done = run(store, "exam", ensure_sample(store), {"model": "model-a", "limit": 1}, pool=pool)
pool.close()
results = window.go("results")
results.reload()
results.select_runs([int(done["run_id"])])
results.rate_button.click()
dialog = results.rate_dialog
for _ in range(50):  # up to 5 s for the window system
    if QApplication.activeWindow() is dialog:
        break
    QTest.qWait(100)
print("active:", QApplication.activeWindow() is dialog, flush=True)
focus = QApplication.focusWidget()
print("focus on the first row:", focus is dialog.rows[0], flush=True)
if focus is not None:
    QTest.keyClick(focus, Qt.Key.Key_4)
print("first row:", dialog.rows[0].value, flush=True)
window.close()
"""


@pytest.mark.gui
def test_rate_explanations_takes_keys_at_once_on_xcb(tmp_path: Path) -> None:
    """The rating keys work as soon as Rate explanations opens, on the real platform: under
    Xvfb, with no window manager, a window is active only when the app makes it so (the
    offscreen platform makes every window active, so the other tests cannot see it)."""
    xvfb_run = shutil.which("xvfb-run")
    assert xvfb_run, (
        "Xvfb is not installed: apt-get install xvfb (scripts/test installs it as root)"
    )
    env = {**os.environ, "QT_QPA_PLATFORM": "xcb", "MEDEXAM_HOME": str(tmp_path)}
    env.pop("DISPLAY", None)
    cmd = [xvfb_run, "-a", "-s", "-screen 0 1280x800x24", sys.executable, "-c", RATE]
    out = subprocess.run(
        cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    said = out.stdout + out.stderr
    assert out.returncode == 0, said[-3000:]
    assert "active: True" in said and "focus on the first row: True" in said, said[-3000:]
    assert "first row: 4" in said, said[-3000:]


def test_system_libs_finds_no_missing_library_here() -> None:
    out = subprocess.run(
        [str(CHECK), "--check"], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr


def test_system_libs_names_a_missing_library_and_its_package(tmp_path: Path) -> None:
    """The plugin made to need a library no machine has (its name changed in the copy):
    the check names it and the command that installs its package, and installs nothing."""
    plugin = xcb_plugin()
    data = plugin.read_bytes()
    assert data.count(b"libxcb-cursor.so.0") == 1
    platforms = tmp_path / "plugins" / "platforms"
    platforms.mkdir(parents=True)
    (tmp_path / "lib").symlink_to(plugin.parents[2] / "lib")  # its RUNPATH, $ORIGIN/../../lib
    copy = platforms / "libqxcb.so"
    copy.write_bytes(data.replace(b"libxcb-cursor.so.0", b"libxcb-cursoq.so.0"))
    env = {**os.environ, "MEDEXAM_QT_PLUGIN": str(copy)}
    out = subprocess.run(
        [str(CHECK), "--check"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 1
    line = out.stderr.strip()
    assert "libxcb-cursoq.so.0" in line and "apt-get install -y libxcb-cursoq0" in line, line
    assert len(line.splitlines()) == 1
