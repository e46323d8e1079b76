"""User scripts run with ``python``: no ``__main__`` guard needed, Ctrl-C handled cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

SNIPPET = """\
from engine.models.catalog import open_model
m = open_model(None)
print(m.chat([{"role": "user", "content": "Hi"}], max_tokens=8).text)
m.close()
"""

# Generates until interrupted; a Ctrl-C may land anywhere: while waiting for a piece, in
# the loop body, between requests. The model must then answer again, from the same process.
# One thread: the script runs in a session of its own, which the kernel's scheduler (its
# autogroups) gives one core's time beside the suite's busy worker, and two llama.cpp threads
# spinning in one core's time crawl (8 tokens in 30 s here, 0.2 s with the machine quiet).
CTRL_C = """\
import time
from engine.models.catalog import open_model
m = open_model(None, n_ctx=1024, n_threads=1)
story = [{"role": "user", "content": "Tell me a very long story about a pharmacist."}]
pid = m.pid
try:
    deadline = time.monotonic() + 60
    first = True
    while time.monotonic() < deadline:
        for i, piece in enumerate(m.stream_chat(story, max_tokens=400, temperature=0.8)):
            if first and i == 2:
                print("generating", flush=True)
                first = False
    print("never interrupted", flush=True)
except KeyboardInterrupt:
    print("caught KeyboardInterrupt", flush=True)
g = m.chat([{"role": "user", "content": "What is the capital of France?"}], max_tokens=8)
print("after", m.pid == pid, m.alive, repr(g.text), flush=True)
m.close()
print("closed", flush=True)
"""


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=180
    )


def test_the_readme_snippet_runs_as_a_script_without_a_main_guard(tmp_path):
    (tmp_path / "snippet.py").write_text(SNIPPET)
    out = _run(["snippet.py"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip()
    assert "Traceback" not in out.stderr


def test_the_snippet_runs_as_a_module_too(tmp_path):
    (tmp_path / "snippet.py").write_text(SNIPPET)
    out = _run(["-m", "snippet"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip()


@pytest.mark.skipif(os.name == "nt", reason="POSIX signals")
@pytest.mark.timeout(180)
def test_ctrl_c_during_generation_leaves_the_model_usable(tmp_path):
    (tmp_path / "ctrl_c.py").write_text(CTRL_C)
    env = os.environ | {"PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "ctrl_c.py"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("generating"), line + proc.communicate(timeout=60)[1]
        time.sleep(0.3)
        # What a terminal does on Ctrl-C: SIGINT to every process of the foreground group,
        # the model process included.
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert "Traceback" not in err, err
    assert "caught KeyboardInterrupt" in out
    assert "after True True" in out  # the same model process answered again
    assert "closed" in out
    assert proc.returncode == 0
