"""The README's Python API example, saved as a script and run as a new user would."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def readme_snippet() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Python API") :]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "the README's Python API section has no python block"
    return found.group(1)


def test_the_readme_python_example_runs_as_a_script(tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(readme_snippet(), encoding="utf-8")
    env = os.environ | {"MEDEXAM_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    ran, scored = out.stdout.strip().splitlines()[-2:]
    assert re.fullmatch(r"finished (\d+(\.\d+)?) 3 of 3", ran), out.stdout
    accuracy = ran.split()[1]
    assert scored == f"{{'exam.letter': 3}} {accuracy}", out.stdout  # the same, no model
    assert (tmp_path / "demo.db").is_file()
