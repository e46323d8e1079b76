"""The type checker: mypy, configured in ``pyproject.toml`` (``[tool.mypy]``), passes on
``engine/`` and ``gui/``. A clean checkout's first run takes about ten seconds of one core
(the largest libraries are read as Any); its incremental cache (``.mypy_cache/``, ignored
by git) makes the next ones take a fraction of a second."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_mypy_passes_on_engine_and_gui() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", "--no-pretty"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
