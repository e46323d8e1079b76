"""Batching: what a local model gains from decoding several sequences at once (its slots),
measured through medexam's engine on an embedded model, N slots (default 8) against 1, the
two levels measured alternately in one run (one model process per level, both kept for the
whole run).

    python bench/batching.py [--model smollm2] [--slots 8] [--rounds 1] [--questions 20]
                             [--cases 8] [--tokens 64] [--gpu-layers N] [--json]

Four measures, at N slots and at 1:

* ``decode``: N sequences of ``--tokens`` tokens sent at once, each asking for a long essay
  on its own subject (so that none reaches its end of text first; the tokens counted are
  those produced): tokens per second;
* ``generate``: ``exam run --method generate`` over ``--questions`` questions (the ExplainCPE
  test beside the project when it is there, else the sample bank; the English prompt; answers
  cut at ``--tokens``): items per second;
* ``consult``: ``--cases`` consultations of the sample cases with the model as doctor,
  patient and solver (3 questions of at most 48 tokens), played at once against one at a
  time: cases per minute;
* ``logprob``: ``exam run --method logprob`` with 4 solved examples: items per second.

Runs keep as many items in flight as the model has slots (their default), so the 1-slot
level is the one-at-a-time baseline. The last line is JSON: ``gain_decode_N``,
``gain_generate_N``, ``gain_consult_N``, ``gain_logprob_N`` (N slots over 1, the best
round of each), ``agreement_1_vs_N`` (the share of the letters of the generate and logprob
runs equal at 1 and N slots: llama.cpp is not bitwise batch-invariant), ``rouge_l_1_vs_N``
(mean ROUGE-L F of the generated answers at 1 against N), ``same_items`` (every run at
both levels answered the same items, stored in the same order), ``peak_rss_mib`` per level
(the model process's peak resident memory), ``threads`` per level (the fewest and most
CPU threads the model had while measured: the pool gives fewer when other programs keep
cores busy), ``parent_cpu_s`` and ``model_cpu_s`` per level (the CPU time of this process, the
one asking the model, and of the model's process while measured, all rounds: on a busy
machine, where rates move with the load, the work done), ``load`` (the machine's load average
at the end), the rates and the settings. The goals on a
quiet 2-core machine: decode >= 1.5, generate and consult >= 1.3, logprob >= 0.95,
agreement >= 0.95. ``bench/gpu_check.sh`` runs it on a GPU at 16 slots.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
MEASURES = ("decode", "generate", "consult", "logprob")
SUBJECTS = (
    "the history of pharmacy", "how vaccines train the immune system", "the kidneys",
    "antibiotic resistance", "the heart's electrical system", "how anaesthesia works",
    "the discovery of insulin", "sleep and memory", "the liver's many tasks",
    "how the eye sees colour", "the history of surgery", "pain and its treatment",
    "the lymphatic system", "blood clotting", "the skin as an organ", "hormones of stress",
)  # fmt: skip


class PeakRSS:
    """The peak resident memory of a model's process and the CPU threads in force in it,
    sampled every 50 ms while it is watched, and the CPU time this (the parent) process
    spent meanwhile."""

    def __init__(self) -> None:
        self.peak = 0
        self.threads: list[int] = []
        self.parent_cpu_s = 0.0
        self.model_cpu_s = 0.0

    @contextmanager
    def watching(self, model: Any) -> Iterator[None]:
        import psutil

        pid = model.pid
        if pid is None:
            yield
            return
        proc, done = psutil.Process(pid), threading.Event()

        def sample() -> None:
            while not done.wait(0.05):
                try:
                    self.peak = max(self.peak, proc.memory_info().rss)
                except psutil.Error:
                    return
                if model.threads is not None:
                    self.threads.append(int(model.threads))

        def spent() -> float:
            try:
                times = proc.cpu_times()
            except psutil.Error:
                return 0.0
            return times.user + times.system

        thread = threading.Thread(target=sample, daemon=True)
        cpu, model_cpu = time.process_time(), spent()
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()
            self.parent_cpu_s += time.process_time() - cpu
            self.model_cpu_s += spent() - model_cpu


def decode(model: Any, n: int, tokens: int) -> tuple[float, dict[str, Any]]:
    """``n`` essays of ``tokens`` tokens asked at once: tokens per second."""

    def one(subject: str) -> int:
        ask = [{"role": "user", "content": f"Write a long, detailed essay on {subject}."}]
        return model.chat(ask, max_tokens=tokens, temperature=0.0).completion_tokens

    subjects = [SUBJECTS[i % len(SUBJECTS)] for i in range(n)]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(n) as pool:
        made = list(pool.map(one, subjects))
    return sum(made) / (time.perf_counter() - t0), {"tokens": made}


def through_run(
    store: Any, activity: str, dataset: str, settings: dict[str, Any], pool: Any, per: float
) -> tuple[float, dict[str, Any]]:
    """A run through the engine's one run loop: answered items per ``per`` seconds, and its
    answers by item key (in their stored order)."""
    from engine.core.runs import run

    t0 = time.perf_counter()
    summary = run(store, activity, dataset, settings, pool=pool)
    seconds = time.perf_counter() - t0
    if summary["status"] != "finished":
        raise SystemExit(f"the {activity} run failed: {summary.get('error')}")
    answers = {a["item_key"]: a for a in store.answers(summary["run_id"])}
    return summary["answered"] * per / seconds, {"answers": answers, "run_id": summary["run_id"]}


def questions(store: Any) -> str:
    """The ExplainCPE test when it is beside the project, else the sample bank."""
    from engine.exam.dataset import ensure_sample, import_file

    test = ROOT.parent / "shared" / "data" / "explaincpe" / "test.json"
    if not test.is_file():
        return ensure_sample(store)
    return str(import_file(store, test, "explaincpe", "explaincpe-test")["name"])


def measures(args: argparse.Namespace, store: Any) -> dict[str, Callable[[Any, Any], tuple]]:
    """Each measure as a function of (pool, model) giving (rate, details)."""
    from engine.consult.cases.cases import ensure_sample as cases_sample

    exam = questions(store)
    cases = cases_sample(store)
    model = args.model
    common = {"model": model, "limit": args.questions, "lang": "en"}
    generate = {**common, "method": "generate", "max_tokens": args.tokens}
    logprob = {**common, "method": "logprob", "shots": 4}
    consult = {"doctor": model, "patient": model, "solver": model, "limit": args.cases,
               "max_turns": 3, "doctor_max_tokens": 48}  # fmt: skip
    return {
        "decode": lambda pool, m: decode(m, args.slots, args.tokens),
        "generate": lambda pool, m: through_run(store, "exam", exam, generate, pool, 1.0),
        "consult": lambda pool, m: through_run(store, "consult", cases, consult, pool, 60.0),
        "logprob": lambda pool, m: through_run(store, "exam", exam, logprob, pool, 1.0),
    }


def compare(first: dict[str, Any], second: dict[str, Any]) -> tuple[list[bool], list[float]]:
    """Letters equal, and ROUGE-L F of the responses, item by item."""
    from engine.text.rouge import rouge_l

    same, rouge = [], []
    for key, a in first.items():
        b = second.get(key)
        if b is None:
            continue
        same.append(a["chosen"] == b["chosen"])
        rouge.append(rouge_l(a["response"] or "", b["response"] or "").fmeasure)
    return same, rouge


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2", help="an embedded (or any local) model")
    ap.add_argument("--slots", type=int, default=8, help="the level measured against 1 slot")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--cases", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--n-ctx", type=int, default=4096, help="each slot's context")
    ap.add_argument("--gpu-layers", type=int, default=None, help="as medexam's --gpu-layers")
    ap.add_argument("--only", default=",".join(MEASURES), help="the measures, comma-separated")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("MEDEXAM_HOME", tempfile.mkdtemp(prefix="medexam-bench-"))

    from engine.models.load import LoadSettings
    from engine.models.pool import ModelPool
    from engine.store.store import Store

    store = Store(Path(tempfile.mkdtemp()) / "bench.db")
    chosen = [m for m in args.only.split(",") if m]
    work = {k: v for k, v in measures(args, store).items() if k in chosen}
    levels = (1, args.slots)
    pools = {
        n: ModelPool(LoadSettings(n_ctx=args.n_ctx, slots=n, gpu_layers=args.gpu_layers))
        for n in levels
    }
    rates: dict[str, dict[int, list[float]]] = {m: {n: [] for n in levels} for m in work}
    first: dict[str, dict[int, dict[str, Any]]] = {m: {} for m in work}
    rss = {n: PeakRSS() for n in levels}
    held = {n: pools[n].acquire(args.model) for n in levels}
    try:
        for n in levels:
            held[n].chat([{"role": "user", "content": "Hi"}], max_tokens=4)  # warm up
            got = held[n].info.get("slots")
            if got != n:
                raise SystemExit(f"the model loaded with {got} slots, not {n}")
        for r in range(args.rounds):
            for name, measure in work.items():
                for n in levels if r % 2 == 0 else reversed(levels):
                    settle(pools[n])
                    with rss[n].watching(held[n]):
                        rate, details = measure(pools[n], held[n])
                    rates[name][n].append(rate)
                    first[name].setdefault(n, details)
                    print(f"{name} slots={n}: {rate:.3f}", file=sys.stderr)
    finally:
        for n in levels:
            held[n].close()
            pools[n].close()
    print(json.dumps(result(args, levels, rates, first, rss)))


def settle(pool: Any, limit_s: float = 5.0) -> None:
    """Wait until the other level's model, which just worked, no longer counts as working
    (its entry lingers a second after its last request): else the level measured starts with
    the cores shared between the two models, one thread each."""
    end = time.monotonic() + limit_s
    while pool.machine.others(within=0) and time.monotonic() < end:
        time.sleep(0.1)


def result(
    args: argparse.Namespace,
    levels: tuple[int, int],
    rates: dict[str, dict[int, list[float]]],
    first: dict[str, dict[int, dict[str, Any]]],
    rss: dict[int, PeakRSS],
) -> dict[str, Any]:
    one, n = levels
    best = {m: {str(k): round(max(v), 3) for k, v in by.items()} for m, by in rates.items()}
    out: dict[str, Any] = {
        f"gain_{m}_{n}": round(best[m][str(n)] / best[m][str(one)], 3) for m in best
    }
    same: list[bool] = []
    rouge: list[float] = []
    orders = []
    for m in ("generate", "logprob", "consult"):
        if m not in first:
            continue
        a, b = first[m][one]["answers"], first[m][n]["answers"]
        orders.append(list(a) == list(b))
        if m != "consult":
            letters, scores = compare(a, b)
            same += letters
            rouge += scores if m == "generate" else []
    if same:
        out[f"agreement_1_vs_{n}"] = round(sum(same) / len(same), 3)
    if rouge:
        out[f"rouge_l_1_vs_{n}"] = round(statistics.fmean(rouge), 3)
    if orders:
        out["same_items"] = all(orders)
    out["peak_rss_mib"] = {str(k): round(rss[k].peak / 2**20) for k in levels}
    out["threads"] = {  # the model's CPU threads in force while measured: least, most
        str(k): [min(rss[k].threads), max(rss[k].threads)] if rss[k].threads else None
        for k in levels
    }
    out["parent_cpu_s"] = {str(k): round(rss[k].parent_cpu_s, 2) for k in levels}
    out["model_cpu_s"] = {str(k): round(rss[k].model_cpu_s, 2) for k in levels}
    out["load"] = [round(x, 2) for x in os.getloadavg()]  # the machine's, at the end
    out["rates"] = best
    out["units"] = {"decode": "tokens/s", "generate": "items/s", "consult": "cases/min",
                    "logprob": "items/s"}  # fmt: skip
    out |= {"model": args.model, "slots": n, "rounds": args.rounds, "questions": args.questions,
            "cases": args.cases, "tokens": args.tokens, "n_ctx": args.n_ctx}  # fmt: skip
    if not args.json:
        for m, by in best.items():
            print(f"{m:<9} 1 slot {by[str(one)]:>9.3f}   {n} slots {by[str(n)]:>9.3f}   "
                  f"gain {out[f'gain_{m}_{n}']:.2f}")  # fmt: skip
    return out


if __name__ == "__main__":
    main()
