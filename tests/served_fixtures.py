"""llama-cpp-python's own OpenAI-compatible server on the embedded SmolLM2, for the
served-model tests: started on 127.0.0.1 on a free port, stopped (or killed) at will."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ALIAS = "smollm2-served"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LlamaServer:
    """``python -m llama_cpp.server`` on SmolLM2 (one thread, requests never interrupted),
    answering at :attr:`url` once :meth:`start` returns."""

    def __init__(self, log_dir: Path, *extra: str) -> None:
        from engine.models.catalog import resolve

        self.model = resolve(None).path
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.extra = extra
        self.log = log_dir / f"llama-server-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 120.0) -> LlamaServer:
        args = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            self.model,
            "--model_alias",
            ALIAS,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_threads",
            "1",
            "--n_ctx",
            "2048",
            "--interrupt_requests",
            "false",
            *self.extra,
        ]
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited: {self.log.read_text()[-2000:]}")
            if self.answers():
                return self
            time.sleep(0.3)
        self.stop()
        raise RuntimeError("the server did not answer in time")

    def answers(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/models", timeout=2) as r:
                return bool(json.load(r)["data"])
        except (OSError, urllib.error.URLError, ValueError):
            return False

    def kill(self) -> None:
        """Kill the server at once (as a crash would)."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc = None
