"""The checks of a GPU build of llama-cpp-python against the CPU build, for
``scripts/check_gpu.sh`` (a Vulkan device, Mesa's lavapipe on a machine without a GPU) and
``bench/gpu_check.sh`` (an NVIDIA GPU, with CUDA and Vulkan).

Run under each build's interpreter, ``probe OUT.json`` records what that build does with the
embedded model (``smollm2``): where its layers went, a streamed generation (its pieces, how
it stopped, a cancel, its decode speed), ``exam run --method logprob`` on N questions (the
letters, their probabilities, items per second) and, with ``--app``, the device line of the
app's Models screen. ``compare CPU.json GPU.json`` holds a GPU probe to the CPU one: layers
offloaded, the same letters, each probability within ``--tol``; it prints one line per check
and exits 1 when one fails.

    python scripts/gpu_checks.py probe cpu.json --questions FILE --n 20
    python scripts/gpu_checks.py compare cpu.json vulkan.json --tol 0.05
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PROMPT = [{"role": "user", "content": "Count from one to twenty, in words, separated by commas."}]


def medexam(db: str, *args: str) -> str:
    """The medexam command line of this interpreter; its output (an error ends the probe)."""
    code = "import sys; from engine.entry import main; sys.argv[0] = 'medexam'; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "--db", db, *args], capture_output=True, text=True
    )
    if done.returncode != 0:
        sys.exit(f"medexam {' '.join(args)} failed: {done.stderr.strip()[-2000:]}")
    return done.stdout


def generation(model: Any, decode_tokens: int) -> dict[str, Any]:
    """A streamed generation to a stop sequence, one cancelled, and one of ``decode_tokens``
    timed for the decode speed."""
    stream = model.stream_chat(PROMPT, max_tokens=96, stop=["ten"])
    pieces = list(stream)
    stopped = stream.result
    cancelled = model.stream_chat(PROMPT, max_tokens=96)
    for n, _ in enumerate(cancelled, 1):
        if n == 3:
            cancelled.cancel()
    timed = model.complete("Once upon a time, in a small village,", max_tokens=decode_tokens)
    return {
        "pieces": len(pieces),
        "text": "".join(pieces),
        "finish": stopped.finish_reason,
        "cancel_finish": cancelled.result.finish_reason,
        "decode_tokens": timed.completion_tokens,
        "decode_tok_s": round(timed.tokens_per_second, 2),
    }


def exam(questions: str, n: int) -> dict[str, Any]:
    """``exam run --method logprob`` on the first ``n`` questions of ``questions``."""
    with tempfile.TemporaryDirectory() as folder:
        db = str(Path(folder) / "check.db")
        medexam(db, "import", "explaincpe", questions, "--name", "check")
        start = time.perf_counter()
        out = medexam(db, "exam", "run", "--dataset", "check", "--method", "logprob",
                      "--limit", str(n), "--json")  # fmt: skip
        seconds = time.perf_counter() - start
        summary = json.loads(out)
        export = json.loads(
            medexam(db, "runs", "export", str(summary["run_id"]), "--format", "json")
        )
    answers = sorted(export["answers"], key=lambda a: a["position"])
    return {
        "n": len(answers),
        "letters": [a["chosen"] for a in answers],
        "probs": [a["extra"]["probs"] for a in answers],
        "accuracy": summary.get("accuracy"),
        "items_s": round(len(answers) / sum(a["latency_s"] for a in answers), 3),
        "wall_s": round(seconds, 1),
    }


def app_line() -> str:
    """The Models screen's device line, the app shown offscreen."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QCoreApplication, QDeadlineTimer, QThread

    from gui.testing import open_window

    with tempfile.TemporaryDirectory() as folder:
        window = open_window(folder)
        window.show()
        screen = window.go("models")
        deadline = QDeadlineTimer(120_000)
        while screen.gpu_note.text().startswith("Checking") and not deadline.hasExpired():
            QCoreApplication.processEvents()
            QThread.msleep(50)
        text = screen.gpu_note.text()
        window.close()
    return text


def probe(args: argparse.Namespace) -> None:
    import llama_cpp

    from engine.models import gpu
    from engine.models.catalog import resolve
    from engine.models.local import LocalModel

    found = {"llama_cpp": llama_cpp.__file__, "backends": gpu.backends()}
    found["devices"] = [d.label() for d in gpu.devices()]
    with LocalModel(resolve("smollm2").path, n_ctx=2048) as model:
        found["info"] = model.info
        found["generation"] = generation(model, args.decode_tokens)
    found["exam"] = exam(args.questions, args.n)
    if args.app:
        found["app"] = app_line()
    Path(args.out).write_text(json.dumps(found, indent=2, ensure_ascii=False), encoding="utf-8")
    info = found["info"]
    print(f"{info['device']}: {info['gpu_layers']}/{info['layers']} layers; {info['gpu_note']}")


def _letters(cpu: dict[str, Any], dev: dict[str, Any], tol: float) -> tuple[int, int]:
    """Questions given the same letter, and those given another where the CPU's two most
    likely letters are within ``tol`` (a near tie, which differences within the tolerance
    may turn)."""
    same = ties = 0
    for x, y, probs in zip(cpu["letters"], dev["letters"], cpu["probs"], strict=True):
        first, second = sorted(probs.values(), reverse=True)[:2]
        same += x == y
        ties += x != y and first - second <= tol
    return same, ties


def compare(args: argparse.Namespace) -> None:
    cpu = json.loads(Path(args.cpu).read_text(encoding="utf-8"))
    dev = json.loads(Path(args.gpu).read_text(encoding="utf-8"))
    info, gen = dev["info"], dev["generation"]
    checks = [
        ("layers offloaded", info["gpu_layers"] == info["layers"] > 0,
         f"{info['gpu_layers']}/{info['layers']} on {info['device']}, "
         f"{info['gpu_memory'] / 2**20:.0f} MiB"),
        ("streams and stops", gen["pieces"] > 1 and gen["finish"] == "stop"
         and gen["cancel_finish"] == "cancelled",
         f"{gen['pieces']} pieces, {gen['finish']}, cancel: {gen['cancel_finish']}"),
    ]  # fmt: skip
    a, b = cpu["exam"], dev["exam"]
    same, ties = _letters(a, b, args.tol)
    diffs = [abs(p[k] - q[k]) for p, q in zip(a["probs"], b["probs"], strict=True) for k in p]
    worst, mean = max(diffs, default=0.0), sum(diffs) / max(len(diffs), 1)
    tied = f" ({ties} other: near ties, the CPU's top two within {args.tol:g})" if ties else ""
    checks.append(("same letters", same + ties == a["n"] == b["n"], f"{same}/{a['n']}{tied}"))
    detail = f"largest difference {worst:.4f}, mean {mean:.4f}"
    checks.append(("probabilities", worst <= args.tol, detail))
    if "app" in dev:
        shown = info["device"] != "CPU" and info["device"] in dev["app"]
        checks.append(("app shows the device", shown, dev["app"]))
    passed = all(ok for _, ok, _ in checks)
    if args.json:
        print(json.dumps({
            "passed": passed,
            "checks": {name: {"ok": ok, "detail": detail} for name, ok, detail in checks},
            "device": info["device"],
            "decode_tok_s": gen["decode_tok_s"],
            "cpu_decode_tok_s": cpu["generation"]["decode_tok_s"],
            "logprob_items_s": b["items_s"],
            "cpu_logprob_items_s": a["items_s"],
        }, ensure_ascii=False))  # fmt: skip
        return
    for name, ok, detail in checks:
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}")
    speed = (f"decode {gen['decode_tok_s']} tok/s (CPU {cpu['generation']['decode_tok_s']}), "
             f"logprob {b['items_s']} items/s (CPU {a['items_s']})")  # fmt: skip
    print(f"     speed: {speed}; tolerance {args.tol}")
    if not passed:
        sys.exit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("probe", help="record what this interpreter's build does")
    p.add_argument("out")
    p.add_argument("--questions", required=True, help="an ExplainCPE JSON file")
    p.add_argument("--n", type=int, default=20)
    p.add_argument("--decode-tokens", type=int, default=128, help="tokens timed for decode")
    p.add_argument("--app", action="store_true", help="also read the app's Models screen")
    c = sub.add_parser("compare", help="hold a GPU probe to the CPU one")
    c.add_argument("cpu")
    c.add_argument("gpu")
    c.add_argument("--tol", type=float, default=0.05)
    c.add_argument("--json", action="store_true", help="one JSON object, exit status 0")
    args = parser.parse_args()
    probe(args) if args.command == "probe" else compare(args)


if __name__ == "__main__":
    main()
