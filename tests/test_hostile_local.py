"""What medexam does when a local model's process is busy and will not stop: a GGUF whose
chat template never ends rendering (SmolLM2's file with a nested ``range(100000)`` loop as
its template). Ctrl-C and SIGTERM stop a run within seconds, the process ends when its
parent is gone, and such a template is refused after a bound. And a .gguf path is a model's
name wherever one is taken."""

from __future__ import annotations

import _thread
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import gguf
import psutil
import pytest
from click.testing import CliRunner
from gguf.scripts.gguf_new_metadata import MetadataDetails, copy_with_new_metadata

from engine.cli import cli
from engine.models import catalog, local
from engine.models.catalog import resolve
from engine.models.local import LocalModel
from engine.models.pool import default_pool
from engine.models.protocol import ModelCrashed, ModelError
from tests.hostile_server import seconds

QUESTION = [{"role": "user", "content": "What is the capital of France?"}]
LOOPING = (
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    "{{ messages[0]['content'] }}"
)
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def looping_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The embedded SmolLM2 file with :data:`LOOPING` as its chat template."""
    target = tmp_path_factory.mktemp("looping") / "looping.gguf"
    reader = gguf.GGUFReader(resolve("smollm2").path, "r")
    arch = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    writer = gguf.GGUFWriter(str(target), arch=arch, endianess=reader.endianess)
    alignment = reader.fields.get(gguf.Keys.General.ALIGNMENT)
    if alignment is not None:
        writer.data_alignment = alignment.contents()
    template = MetadataDetails(gguf.GGUFValueType.STRING, LOOPING)
    copy_with_new_metadata(reader, writer, {gguf.Keys.Tokenizer.CHAT_TEMPLATE: template}, [])
    return target


def gone(pid: int, within: float) -> bool:
    """Whether process ``pid`` has ended (or is a zombie) within ``within`` seconds."""
    until = time.monotonic() + within
    while time.monotonic() < until:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.1)
    return False


def run_started(db: Path) -> bool:
    """Whether ``db`` holds a run yet (its model loaded: a run is recorded only then)."""
    if not db.exists():
        return False
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            return bool(conn.execute("SELECT count(*) FROM runs").fetchone()[0])
    except sqlite3.Error:
        return False


def busy_child(parent: subprocess.Popen[bytes], db: Path, timeout: float = 60.0) -> psutil.Process:
    """The model process of ``parent`` once its run has started (loading a model keeps the
    process busy too, on a slow machine for seconds) and it has been computing for a second."""
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        assert parent.poll() is None, parent.stdout.read() if parent.stdout else ""
        if not run_started(db):
            time.sleep(0.1)
            continue
        for child in psutil.Process(parent.pid).children(recursive=True):
            try:
                if child.cpu_percent(0.5) > 50 and child.cpu_percent(1.0) > 50:
                    return child
            except psutil.NoSuchProcess:
                continue
    raise AssertionError("the model process never got busy")


def test_a_chat_template_that_never_ends_is_refused(
    looping_gguf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local, "TEMPLATE_S", 1.5)
    with LocalModel(looping_gguf, n_ctx=512) as model:
        pid = model.pid
        assert pid is not None
        took, exc = seconds(lambda: model.chat_prompt(QUESTION))
        assert isinstance(exc, ModelCrashed)
        assert "template of looping.gguf takes more than 1.5 s to render" in str(exc)
        assert took < 1.5 + 2 and gone(pid, 2)
        model.restart()  # the file still completes text, and its template stays refused
        took, exc = seconds(lambda: model.chat(QUESTION, max_tokens=4))
        assert isinstance(exc, ModelError) and "medexam refuses it" in str(exc) and took < 0.5
        assert model.complete("The capital of France is", max_tokens=2).completion_tokens > 0


def test_a_template_waiting_behind_a_long_decode_step_is_not_taken_for_a_hung_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The template's bound counts its rendering only: a conversation that waits behind
    another request's long decode step (a big model's prompt, a busy machine) is rendered,
    and the process, with the other sequences in it, lives on."""
    monkeypatch.setattr(local, "TEMPLATE_S", 1.0)
    with LocalModel(resolve("smollm2").path, n_ctx=512) as model:
        pid = model.pid
        busy = threading.Thread(target=model._call, args=("hold",), kwargs={"seconds": 3.0})
        busy.start()
        time.sleep(0.3)  # the worker is inside the 3 s step when the conversation comes
        t0 = time.monotonic()
        got = model.chat_prompt(QUESTION)  # before: ModelCrashed, its process killed
        took = time.monotonic() - t0
        busy.join()
        assert "capital of France" in got, got
        assert took > 2, f"{took:.1f} s: the worker was not busy"
        assert model.alive and model.pid == pid


def test_a_cancel_waits_for_a_long_decode_step_instead_of_killing_the_process() -> None:
    """A cancel that comes while a decode step takes longer than SETTLE_S (a big model's
    prompt on a CPU) is answered after that step: the process, and the other sequences
    in it, live on."""
    with LocalModel(resolve("smollm2").path, n_ctx=512) as model:
        pid = model.pid
        got: list[object] = []
        step = threading.Thread(
            target=lambda: got.append(
                seconds(lambda: model._call("hold", seconds=local.SETTLE_S * 2))
            )
        )
        step.start()
        time.sleep(0.3)
        model.cancel()  # before: the step's process killed after SETTLE_S
        step.join()
        assert got[0][1] is None, got  # the step ended and answered
        assert model.alive and model.pid == pid
        assert model.complete("The capital of France is", max_tokens=2).completion_tokens > 0


def test_an_interrupted_request_stops_a_process_that_does_not_answer(
    looping_gguf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local, "TEMPLATE_S", 600.0)
    with LocalModel(looping_gguf, n_ctx=512) as model:
        pid = model.pid
        assert pid is not None
        threading.Timer(1.0, _thread.interrupt_main).start()
        took, exc = seconds(lambda: model.chat_prompt(QUESTION))
        assert isinstance(exc, KeyboardInterrupt)
        assert took < 1.0 + local.SETTLE_S + 1.5
        assert not model.alive and gone(pid, 2)
        model.restart()
        assert model.alive


def _cli(db: Path, *args: str) -> list[str]:
    """The command line, in a process of its own, with the template bound out of the way."""
    boot = (
        "import engine.models.local as m; m.TEMPLATE_S = 600.0; from engine.cli import cli; cli()"
    )
    return [sys.executable, "-c", boot, "--db", str(db), *args]


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_sigterm_and_ctrl_c_end_a_run_within_seconds_while_the_model_is_busy(
    looping_gguf: Path, tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    # A context given: the run does not render its prompts to size one before it starts.
    args = _cli(tmp_path / "m.db", "exam", "run", "--model", str(looping_gguf), "--limit", "1",
                "--n-ctx", "2048")  # fmt: skip
    env = os.environ | {"MEDEXAM_HOME": str(tmp_path / "home")}
    cli_process = subprocess.Popen(
        [*args, "--template", "chat"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        worker = busy_child(cli_process, tmp_path / "m.db")
        t0 = time.monotonic()
        cli_process.send_signal(sig)
        out, _ = cli_process.communicate(timeout=15)
        took = time.monotonic() - t0
    finally:
        if cli_process.poll() is None:
            cli_process.kill()
    assert cli_process.returncode == code
    assert took < 5, f"{took:.1f} s to stop"
    assert b"run 1 cancelled; resume it with --resume 1" in out
    assert gone(worker.pid, 1)


def test_the_model_process_ends_when_its_parent_is_killed(looping_gguf: Path) -> None:
    script = (
        "import sys, engine.models.local as m; m.TEMPLATE_S = 600.0\n"
        "model = m.LocalModel(sys.argv[1], n_ctx=512)\n"
        "print(model.pid, flush=True)\n"
        "model.chat_prompt([{'role': 'user', 'content': 'hi'}])\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script, str(looping_gguf)], cwd=REPO, stdout=subprocess.PIPE
    )
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        time.sleep(1.0)
        assert psutil.Process(pid).cpu_percent(0.5) > 50  # busy in the template
        parent.kill()
        parent.wait()
        assert gone(pid, 3)
    finally:
        if parent.poll() is None:
            parent.kill()


def test_a_gguf_path_is_a_model_name_everywhere(models_folder: Path, tmp_path: Path) -> None:
    path = tmp_path / "other-model.gguf"
    shutil.copy(resolve("smollm2").path, path)
    runner, db = CliRunner(), ["--db", str(tmp_path / "m.db")]
    try:
        args = ["exam", "run", "--model", str(path), "--limit", "1", "--method", "logprob"]
        first = runner.invoke(cli, [*db, *args])
        assert first.exit_code == 0, first.output
        again = runner.invoke(cli, [*db, "exam", "run", "--resume", "1"])
        assert again.exit_code == 0, again.output
        assert "other-model on explaincpe-sample (run 1)" in again.output
        assert "smollm2" not in again.output
        assert catalog.added_files() == {"other-model": str(path)}
        listed = runner.invoke(cli, ["models", "list"]).output
        assert any(line.startswith("other-model ") for line in listed.splitlines())
        runs = runner.invoke(cli, [*db, "runs", "list"]).output
        assert "other-model" in runs
    finally:
        default_pool().unload("other-model")
