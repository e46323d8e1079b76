"""The checks of a GPU build of llama-cpp-python, held with the CPU build to a float32
reference of the same model, for ``scripts/check_gpu.sh`` (a Vulkan device, Mesa's lavapipe
on a machine without a GPU) and ``bench/gpu_check.sh`` (an NVIDIA GPU, with CUDA and Vulkan).

Run under each build's interpreter, ``probe OUT.json`` records what that build does with the
embedded model (``smollm2``, Q4_1): where its layers went, a streamed generation (its pieces,
how it stopped, a cancel, its decode speed), ``exam run --method logprob`` on N questions (the
letters, their log-probabilities and probabilities, items per second) and, with ``--app``,
the device line of the app's Models screen. ``reference OUT.gguf`` converts the embedded
model to float32 (llama.cpp's ALL_F32, :func:`engine.models.quantize.quantize`), and
``probe --model OUT.gguf --exam-only`` under the CPU build records its letters: the reference.
``compare CPU.json GPU.json --reference REF.json`` measures how far each build's letters sit
from the reference; what the quantization itself moves (the CPU build's distance, mean and
largest) times ``--factor`` is the GPU build's tolerance. It prints one line per check, the
distances, and, when the GPU build sits further from the reference than the CPU build, the
questions that moved most; it exits 1 when a check fails. ``settings CPU.json REF.json``,
under the GPU build, runs the exam again under each of the back end's switches that change
its arithmetic (:data:`SETTINGS`) and says how far each sits from the reference.

    python scripts/gpu_checks.py reference f32.gguf
    python scripts/gpu_checks.py probe ref.json --model f32.gguf --exam-only --questions FILE
    python scripts/gpu_checks.py probe cpu.json --questions FILE --n 20
    python scripts/gpu_checks.py compare cpu.json vulkan.json --reference ref.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PROMPT = [{"role": "user", "content": "Count from one to twenty, in words, separated by commas."}]


def medexam(db: str, *args: str, env: dict[str, str] | None = None) -> str:
    """The medexam command line of this interpreter (in ``env``, else this environment);
    its output (an error ends the probe)."""
    code = "import sys; from engine.entry import main; sys.argv[0] = 'medexam'; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "--db", db, *args], capture_output=True, text=True, env=env
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


def exam(
    questions: str,
    n: int,
    model: str = "smollm2",
    options: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """``exam run --method logprob`` with ``model`` (a name or a GGUF file) on the first ``n``
    questions of ``questions``, with more ``options`` of ``exam run``, in ``env``."""
    with tempfile.TemporaryDirectory() as folder:
        db = str(Path(folder) / "check.db")
        medexam(db, "import", "explaincpe", questions, "--name", "check", env=env)
        start = time.perf_counter()
        out = medexam(db, "exam", "run", "--dataset", "check", "--method", "logprob",
                      "--limit", str(n), "--model", model, *options, "--json", env=env)  # fmt: skip
        seconds = time.perf_counter() - start
        summary = json.loads(out)
        export = json.loads(
            medexam(db, "runs", "export", str(summary["run_id"]), "--format", "json", env=env)
        )
    answers = sorted(export["answers"], key=lambda a: a["position"])
    return {
        "n": len(answers),
        "letters": [a["chosen"] for a in answers],
        "probs": [a["extra"]["probs"] for a in answers],
        "logprobs": [a["extra"]["logprobs"] for a in answers],
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

    found: dict[str, Any] = {"llama_cpp": llama_cpp.__file__, "backends": gpu.backends()}
    found["devices"] = [d.label() for d in gpu.devices()]
    found["model"] = args.model
    if not args.exam_only:
        with LocalModel(resolve(args.model).path, n_ctx=2048) as model:
            found["info"] = model.info
            found["generation"] = generation(model, args.decode_tokens)
    found["exam"] = exam(args.questions, args.n, args.model)
    if args.app:
        found["app"] = app_line()
    Path(args.out).write_text(json.dumps(found, indent=2, ensure_ascii=False), encoding="utf-8")
    if "info" in found:
        info = found["info"]
        print(f"{info['device']}: {info['gpu_layers']}/{info['layers']} layers; {info['gpu_note']}")


def reference(args: argparse.Namespace) -> None:
    """The embedded model converted to float32 (kept when it is there already)."""
    from engine.models.catalog import resolve
    from engine.models.quantize import quantize

    print(quantize(Path(resolve("smollm2").path), Path(args.out), "F32"))


# -- the comparison ---------------------------------------------------------------------------

#: How far the GPU build's letters may sit from the float32 reference, as a multiple of how
#: far the CPU build's sit (what the quantization itself moves). A back end that quantizes
#: the activations as the CPU does (8-bit integer dot products) should move them about as
#: far, rounded otherwise (not measured: lavapipe has none); one that dequantizes and
#: computes in f16 moves them half as far (lavapipe: 0.028 nats against the CPU's 0.054),
#: in float32 not at all (0.0013). 1.5 leaves the first room and fails a back end that moves
#: the letters half again further than the quantization.
FACTOR = 1.5
#: The least tolerance, whatever the quantization moves: ten times the stored
#: log-probabilities' rounding (4 decimals).
FLOOR = 1e-3
#: Less than this (nats) further from the reference is as far: the stored rounding.
ROUNDING = 1e-4


@dataclass(frozen=True)
class Distance:
    """How far one probe's letters sit from another's over the same questions: the mean
    and the largest absolute difference of each letter's log-probability (nats) and of its
    probability (over the question's letters), the mean log-probability difference of each
    question, and the questions given the same letter."""

    logprob_mean: float
    logprob_max: float
    prob_mean: float
    prob_max: float
    per_question: tuple[float, ...]
    same: int
    n: int

    def line(self) -> str:
        return (
            f"log-prob mean {self.logprob_mean:.4f}, largest {self.logprob_max:.4f}; "
            f"probability mean {self.prob_mean:.4f}, largest {self.prob_max:.4f}; "
            f"same letter {self.same}/{self.n}"
        )


def distance(a: dict[str, Any], b: dict[str, Any]) -> Distance:
    """How far exam ``b`` (a probe's ``exam``) sits from exam ``a``."""
    if a["n"] != b["n"]:
        sys.exit(f"the probes answered {a['n']} and {b['n']} questions: not the same exam")
    per_question, lp, p = [], [], []
    for la, lb, pa, pb in zip(a["logprobs"], b["logprobs"], a["probs"], b["probs"], strict=True):
        if la.keys() != lb.keys():
            sys.exit(f"the probes scored the letters {sorted(la)} and {sorted(lb)}")
        moved = [abs(la[k] - lb[k]) for k in la]
        per_question.append(sum(moved) / len(moved))
        lp += moved
        p += [abs(pa[k] - pb[k]) for k in pa]
    same = sum(x == y for x, y in zip(a["letters"], b["letters"], strict=True))
    return Distance(
        logprob_mean=sum(lp) / max(len(lp), 1),
        logprob_max=max(lp, default=0.0),
        prob_mean=sum(p) / max(len(p), 1),
        prob_max=max(p, default=0.0),
        per_question=tuple(per_question),
        same=same,
        n=a["n"],
    )


@dataclass(frozen=True)
class Tolerance:
    """How far the GPU build may sit from the reference: ``factor`` times what the
    quantization moves (the CPU build's distance from it), mean log-probability and largest
    probability difference. A near tie is a question whose reference's two most likely
    letters are within the quantization's largest probability move: a gap it can close (the
    CPU build's letters differ from the reference's on such questions only)."""

    logprob_mean: float
    prob_max: float
    near_tie: float
    factor: float

    @classmethod
    def of(cls, quantization: Distance, factor: float = FACTOR) -> Tolerance:
        return cls(
            logprob_mean=max(factor * quantization.logprob_mean, FLOOR),
            prob_max=max(factor * quantization.prob_max, FLOOR),
            near_tie=max(quantization.prob_max, FLOOR),
            factor=factor,
        )


def near_ties(ref: dict[str, Any], dev: dict[str, Any], gap: float) -> tuple[int, int]:
    """Questions given the reference's letter, and those given another where the
    reference's two most likely letters are within ``gap`` (a near tie)."""
    same = ties = 0
    for x, y, probs in zip(ref["letters"], dev["letters"], ref["probs"], strict=True):
        first, second = sorted(probs.values(), reverse=True)[:2]
        same += x == y
        ties += x != y and first - second <= gap
    return same, ties


@dataclass(frozen=True)
class Verdict:
    """A GPU build's exam held to the reference: the distances, the tolerance, the checks
    (name, passed, detail) and, when the GPU build sits further from the reference than the
    CPU build, the questions that moved most."""

    quantization: Distance  # the CPU build from the reference
    gpu: Distance  # the GPU build from the reference
    backend: Distance  # the GPU build from the CPU build
    tolerance: Tolerance
    checks: list[tuple[str, bool, str]]
    moved_most: list[str]

    @property
    def further(self) -> bool:
        return self.gpu.logprob_mean > self.quantization.logprob_mean + ROUNDING


def judge(
    cpu: dict[str, Any], dev: dict[str, Any], ref: dict[str, Any], factor: float = FACTOR
) -> Verdict:
    """Hold the GPU build's exam ``dev`` to the float32 reference's ``ref``, with the
    tolerance from the CPU build's ``cpu`` (:meth:`Tolerance.of`)."""
    quantization, gpu, backend = distance(ref, cpu), distance(ref, dev), distance(cpu, dev)
    tol = Tolerance.of(quantization, factor)
    same, ties = near_ties(ref, dev, tol.near_tie)
    tied = f" ({ties} other: near ties, float32's top two within {tol.near_tie:.4f})" * bool(ties)
    within = gpu.logprob_mean <= tol.logprob_mean and gpu.prob_max <= tol.prob_max
    detail = (
        f"log-prob mean {gpu.logprob_mean:.4f} (quantization {quantization.logprob_mean:.4f}, "
        f"tolerance {tol.logprob_mean:.4f}), largest probability difference "
        f"{gpu.prob_max:.4f} (quantization {quantization.prob_max:.4f}, tolerance "
        f"{tol.prob_max:.4f}): {factor:g}× what the quantization moves"
    )
    checks = [
        ("float32's letters", same + ties == ref["n"], f"{same}/{ref['n']}{tied}"),
        ("within the quantization's move from float32", within, detail),
    ]
    verdict = Verdict(quantization, gpu, backend, tol, checks, [])
    if verdict.further:
        verdict.moved_most.extend(moved_most(cpu, dev, ref, verdict))
    return verdict


def moved_most(
    cpu: dict[str, Any], dev: dict[str, Any], ref: dict[str, Any], verdict: Verdict, top: int = 5
) -> list[str]:
    """One line for each of the ``top`` questions where the GPU build sits furthest beyond the
    CPU build from the reference."""
    q, g, b = verdict.quantization, verdict.gpu, verdict.backend
    order = sorted(range(q.n), key=lambda i: g.per_question[i] - q.per_question[i], reverse=True)
    return [
        f"question {i + 1}: from float32 CPU {q.per_question[i]:.4f}, GPU {g.per_question[i]:.4f}"
        f" (GPU from CPU {b.per_question[i]:.4f}); letters float32 {ref['letters'][i]}, "
        f"CPU {cpu['letters'][i]}, GPU {dev['letters'][i]}"
        for i in order[:top]
        if g.per_question[i] > q.per_question[i] + ROUNDING
    ]


def _load(path: str) -> dict[str, Any]:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def compare(args: argparse.Namespace) -> None:
    cpu, dev, ref = _load(args.cpu), _load(args.gpu), _load(args.reference)
    info, gen = dev["info"], dev["generation"]
    checks = [
        ("layers offloaded", info["gpu_layers"] == info["layers"] > 0,
         f"{info['gpu_layers']}/{info['layers']} on {info['device']}, "
         f"{info['gpu_memory'] / 2**20:.0f} MiB"),
        ("streams and stops", gen["pieces"] > 1 and gen["finish"] == "stop"
         and gen["cancel_finish"] == "cancelled",
         f"{gen['pieces']} pieces, {gen['finish']}, cancel: {gen['cancel_finish']}"),
    ]  # fmt: skip
    verdict = judge(cpu["exam"], dev["exam"], ref["exam"], args.factor)
    checks += verdict.checks
    if "app" in dev:
        shown = info["device"] != "CPU" and info["device"] in dev["app"]
        checks.append(("app shows the device", shown, dev["app"]))
    passed = all(ok for _, ok, _ in checks)
    a, b = cpu["exam"], dev["exam"]
    if args.json:
        print(json.dumps({
            "passed": passed,
            "checks": {name: {"ok": ok, "detail": detail} for name, ok, detail in checks},
            "device": info["device"],
            "distances": {name: asdict(getattr(verdict, name))
                          for name in ("quantization", "gpu", "backend")},
            "tolerance": asdict(verdict.tolerance),
            "further": verdict.further,
            "decode_tok_s": gen["decode_tok_s"],
            "cpu_decode_tok_s": cpu["generation"]["decode_tok_s"],
            "logprob_items_s": b["items_s"],
            "cpu_logprob_items_s": a["items_s"],
        }, ensure_ascii=False))  # fmt: skip
        return
    for name, ok, detail in checks:
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}")
    print(f"     CPU build from float32 (the quantization): {verdict.quantization.line()}")
    print(f"     GPU build from float32: {verdict.gpu.line()}")
    print(f"     GPU build from the CPU build: {verdict.backend.line()}")
    if verdict.further:
        print("     the GPU build sits further from float32 than the CPU build; most moved:")
        for line in verdict.moved_most:
            print(f"       {line}")
    speed = (f"decode {gen['decode_tok_s']} tok/s (CPU {cpu['generation']['decode_tok_s']}), "
             f"logprob {b['items_s']} items/s (CPU {a['items_s']})")  # fmt: skip
    print(f"     speed: {speed}")
    if not passed:
        sys.exit(1)


# -- what changes the GPU build's numbers ------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """A way to run the GPU build's exam otherwise: names set in its environment (None
    removes one), read by ggml's back end when it starts, and options of ``exam run``."""

    env: dict[str, str | None] = field(default_factory=dict)
    options: tuple[str, ...] = ()

    def environment(self, base: dict[str, str]) -> dict[str, str]:
        """``base`` with this setting's names set or removed."""
        env = {k: v for k, v in base.items() if k not in self.env}
        env.update({k: v for k, v in self.env.items() if v is not None})
        return env


#: The switches of ggml's Vulkan back end that change its arithmetic (integer dot products
#: only where the device accelerates them, not lavapipe), and the batching (one slot: each
#: question decoded alone rather than beside the others).
SETTINGS: dict[str, Setting] = {
    "as checked": Setting(),
    "f16 arithmetic": Setting({"GGML_VK_DISABLE_F16": None}),
    "no fused ops": Setting({"GGML_VK_DISABLE_FUSION": "1"}),
    "no graph reordering": Setting({"GGML_VK_DISABLE_GRAPH_OPTIMIZE": "1"}),
    "no integer dot product": Setting({"GGML_VK_DISABLE_INTEGER_DOT_PRODUCT": "1"}),
    "one slot": Setting(options=("--slots", "1")),
}


def first(found: dict[str, Any], n: int) -> dict[str, Any]:
    """A probe's exam cut to its first ``n`` questions (a shorter run of the same exam)."""
    return {**found, "n": min(n, found["n"]),
            **{k: found[k][:n] for k in ("letters", "probs", "logprobs")}}  # fmt: skip


def settings(args: argparse.Namespace) -> None:
    cpu, ref = _load(args.cpu)["exam"], _load(args.reference)["exam"]
    cpu, ref = first(cpu, args.n), first(ref, args.n)
    print(f"CPU build from float32 (the quantization): {distance(ref, cpu).line()}")
    for name in args.only or list(SETTINGS):
        setting = SETTINGS[name]
        found = exam(args.questions, args.n, "smollm2", setting.options,
                     setting.environment(dict(os.environ)))  # fmt: skip
        print(f"{name} ({found['wall_s']} s): from float32 {distance(ref, found).line()}; "
              f"from the CPU build {distance(cpu, found).line()}", flush=True)  # fmt: skip
        if args.out:
            with Path(args.out).open("a", encoding="utf-8") as out:
                out.write(json.dumps({"setting": name, "exam": found}, ensure_ascii=False) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("probe", help="record what this interpreter's build does")
    p.add_argument("out")
    p.add_argument("--questions", required=True, help="an ExplainCPE JSON file")
    p.add_argument("--n", type=int, default=20)
    p.add_argument("--model", default="smollm2", help="a model's name or GGUF file")
    p.add_argument("--exam-only", action="store_true", help="only the exam (the reference)")
    p.add_argument("--decode-tokens", type=int, default=128, help="tokens timed for decode")
    p.add_argument("--app", action="store_true", help="also read the app's Models screen")
    r = sub.add_parser("reference", help="convert the embedded model to float32")
    r.add_argument("out")
    c = sub.add_parser("compare", help="hold a GPU probe and the CPU one to the reference")
    c.add_argument("cpu")
    c.add_argument("gpu")
    c.add_argument("--reference", required=True, help="the float32 model's probe")
    c.add_argument("--factor", type=float, default=FACTOR, help="times the quantization's move")
    c.add_argument("--json", action="store_true", help="one JSON object, exit status 0")
    s = sub.add_parser("settings", help="the exam again under each back-end switch")
    s.add_argument("cpu")
    s.add_argument("reference")
    s.add_argument("--questions", required=True, help="an ExplainCPE JSON file")
    s.add_argument("--n", type=int, default=20)
    s.add_argument("--out", help="a file each run's exam is added to (JSON lines)")
    s.add_argument("--only", nargs="*", choices=list(SETTINGS), help="these switches only")
    args = parser.parse_args()
    commands = {"probe": probe, "reference": reference, "compare": compare, "settings": settings}
    commands[args.command](args)


if __name__ == "__main__":
    main()
