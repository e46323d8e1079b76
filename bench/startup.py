"""Time from process start to the painted main window: the medexam desktop app (started as
``medexam gui``) against a bare PySide6 ``QMainWindow`` shown by the same interpreter, each in
its own process, alternately.

    python bench/startup.py [--rounds 5] [--json]

Each time runs from just before the process is spawned to the moment its window has been
painted by ``show()`` and ``processEvents()``, read from the wall clock the child prints then:
the app through its ``MEDEXAM_STARTUP_PROBE`` hook (``MEDEXAM_STARTUP_TIMING=quit`` then
closes it), the bare window by the same two calls. Both run headless
(``QT_QPA_PLATFORM=offscreen``); the app gets a temporary ``MEDEXAM_HOME`` and database.
Compiled bytecode is kept in a temporary ``PYTHONPYCACHEPREFIX`` (written even where
``PYTHONDONTWRITEBYTECODE`` is set, never into the source tree) and one unmeasured run of
each fills it, as a user's second start would find it.

The last line is JSON with the medians ``app_s`` and ``bare_s`` and ``ratio`` = app / bare
(the goal is <= 1.5).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAINTED = re.compile(r"painted at ([\d.]+)")

BARE = r"""
import sys, time
from PySide6.QtWidgets import QApplication, QMainWindow

app = QApplication(sys.argv[:1])
window = QMainWindow()
window.resize(1280, 820)
window.show()
app.processEvents()
print(f"painted at {time.time():.6f}", file=sys.stderr, flush=True)
"""


def medexam_command() -> list[str]:
    """``medexam`` beside this interpreter, else the same entry point through ``-c``."""
    script = Path(sys.executable).with_name("medexam")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "from engine.entry import main; main()"]


def environment(home: Path) -> dict[str, str]:
    """Headless Qt and a bytecode cache under ``home`` (see the module docstring)."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    env["PYTHONPYCACHEPREFIX"] = str(home / "pycache")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def timed(command: list[str], env: dict[str, str]) -> float:
    """Run ``command``; return the seconds from its spawn to its painted window."""
    start = time.time()
    out = subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    found = PAINTED.search(out.stderr)
    if out.returncode != 0 or found is None:
        raise SystemExit(f"{command[0]} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    return float(found.group(1)) - start


def app_seconds(home: Path) -> float:
    env = {
        **environment(home),
        "MEDEXAM_HOME": str(home),
        "MEDEXAM_STARTUP_PROBE": "1",
        "MEDEXAM_STARTUP_TIMING": "quit",
    }
    env.pop("MEDEXAM_DB", None)
    return timed([*medexam_command(), "--db", str(home / "medexam.db"), "gui"], env)


def bare_seconds(home: Path) -> float:
    return timed([sys.executable, "-c", BARE], environment(home))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="Only the JSON line.")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="medexam-startup-"))
    app_times: list[float] = []
    bare_times: list[float] = []
    try:
        app_seconds(home)  # fill the bytecode and file caches, create the database
        bare_seconds(home)
        for i in range(args.rounds):
            app_times.append(app_seconds(home))
            bare_times.append(bare_seconds(home))
            if not args.json:
                print(
                    f"round {i + 1}: app {app_times[-1]:.3f} s, bare {bare_times[-1]:.3f} s, "
                    f"ratio {app_times[-1] / bare_times[-1]:.2f}"
                )
    finally:
        shutil.rmtree(home, ignore_errors=True)
    app_s, bare_s = statistics.median(app_times), statistics.median(bare_times)
    result = {
        "app_s": round(app_s, 4),
        "bare_s": round(bare_s, 4),
        "ratio": round(app_s / bare_s, 3),
        "rounds": args.rounds,
        "app_all": [round(t, 4) for t in app_times],
        "bare_all": [round(t, 4) for t in bare_times],
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
