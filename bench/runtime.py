"""Generation speed through medexam's engine (model in a child process) against a raw
llama-cpp-python decode loop in this process: same model file, threads, prompt and greedy
decoding, measured alternately in one run.

    python bench/runtime.py [--model NAME] [--tokens 128] [--rounds 5] [--json]

The last line is JSON with ``engine_tps``, ``raw_tps`` and ``ratio`` (engine / raw; the
goal is >= 0.95). Tokens per second count the tokens after the first one over the time
from the first to the last, seen by the caller, so prompt processing is left out of both.

    python bench/runtime.py --pair [--model NAME] [--seconds 4] [--rounds 3] [--json]

Two models generating at once, from two threads: the combined speed of two LocalModel
instances (a) each with every core (llama.cpp threads spin-wait, so that collapses) and
(b) each given its share, ``set_threads(max(1, physical_cores() // 2))``, against one
model alone. The last line is JSON with ``alone_tok_s``, ``pair_oversubscribed_tok_s``,
``pair_shared_tok_s`` and ``ratio_shared`` (shared pair / alone; the goal is >= 0.9). A
pair's speed counts the pieces (about one per token) the streams produced while all were
generating, over that time; each stream stops after ``--seconds`` (or ``--tokens``).

    python bench/runtime.py --pair-processes [--model NAME] [--seconds 4] [--rounds 3] [--json]

Two medexam processes generating at once, each with a model pool of its own leasing the
model (every core each, by default): their combined speed against one of them alone, with
the pools sharing the cores across processes (:mod:`engine.models.cores`) and without
(as with ``MEDEXAM_SHARE_CORES=process``), measured alternately in one run, the two
processes kept for the whole run. Each has a user data folder of its own (the registry of
working models is the machine's), and the two a registry of their own. The last line
is JSON with ``alone_tok_s``, ``pair_unshared_tok_s``, ``pair_shared_tok_s``,
``ratio_unshared`` and ``ratio_shared`` (shared pair / alone; the goal is >= 0.9), the
thread counts the models had and the load average before and after.

    python bench/runtime.py --hog [--model NAME] [--seconds 4] [--rounds 3] [--json]

Another program busy: a busy loop pinned to one core for the whole run, and one model
generating beside it, measured alternately: leased from a model pool as every run leases it
(every core by default, less the cores other programs hold: :mod:`engine.models.cores`),
with one thread, and with every core regardless. The last line is JSON with ``pool_tok_s``,
``one_thread_tok_s``, ``all_threads_tok_s`` (medians), ``ratio_hog`` (the median of each
round's pool / one thread; the goal is >= 0.9), ``rounds_tok_s`` (each round's rates),
``ratio_all_threads`` (every core / one thread), the pool's threads at the end of each
stream, the load it read (``busy_seen``) and the load average before and after.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

PROMPT = "Write a long, detailed essay on the history of pharmacy, from antiquity to today."


def raw_tps(llm, prompt_tokens: list[int], n: int) -> float:
    llm.reset()
    times = []
    for i, _token in enumerate(
        llm.generate(prompt_tokens, temp=0.0, top_k=40, top_p=0.95, min_p=0.0, repeat_penalty=1.0)
    ):
        times.append(time.perf_counter())
        if i + 1 >= n:
            break
    return (len(times) - 1) / (times[-1] - times[0])


def engine_tps(model, n: int) -> float:
    stream = model.stream_chat([{"role": "user", "content": PROMPT}], max_tokens=n, temperature=0.0)
    first = None
    for _piece in stream:
        if first is None:
            first = time.perf_counter()
    last = time.perf_counter()
    assert stream.result is not None and first is not None
    return (stream.result.completion_tokens - 1) / (last - first)


def piece_times(model: Any, n: int, deadline: float) -> list[float]:
    """When each piece of a greedy generation of up to ``n`` tokens arrived; the stream is
    cancelled at ``deadline`` (a perf_counter time)."""
    stream = model.stream_chat([{"role": "user", "content": PROMPT}], max_tokens=n, temperature=0.0)
    times: list[float] = []
    for _piece in stream:
        times.append(time.perf_counter())
        if times[-1] > deadline:
            stream.cancel()
    return times


def together_tps(models: list[Any], n: int, seconds: float) -> float:
    """Combined pieces per second of ``models`` generating at once, one thread each, over
    the time all of them were generating."""
    barrier = threading.Barrier(len(models))
    times: list[list[float]] = [[] for _ in models]

    def run(i: int) -> None:
        barrier.wait()
        times[i] = piece_times(models[i], n, time.perf_counter() + seconds)

    workers = [threading.Thread(target=run, args=(i,)) for i in range(len(models))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return combined_rate(times)


def combined_rate(times: list[list[float]]) -> float:
    """Pieces per second of streams whose pieces came at ``times``, over the time all of
    them were generating."""
    if not times or not all(times):
        return 0.0
    start = max(t[0] for t in times)
    end = min(t[-1] for t in times)
    pieces = sum(sum(1 for x in t if start < x <= end) for t in times)
    return pieces / (end - start) if end > start else 0.0


def pair(args: argparse.Namespace) -> dict[str, Any]:
    """One model alone, then two at once: oversubscribed, then sharing the cores."""
    from engine.models.catalog import open_model, resolve
    from engine.models.hardware import available_cores, physical_cores

    info = resolve(args.model)
    physical, logical = physical_cores(), available_cores()
    share = max(1, physical // 2)
    models = [open_model(args.model, n_ctx=2048, n_threads=physical) for _ in range(2)]
    say = (lambda *_: None) if args.json else (lambda m: print(m, file=sys.stderr))
    try:
        for m in models:  # warm both
            piece_times(m, 16, time.perf_counter() + 5)
        runs: dict[str, list[float]] = {"alone": [], "oversubscribed": [], "shared": []}
        for r in range(args.rounds):
            for m in models:
                m.set_threads(physical)
            runs["alone"].append(together_tps(models[:1], args.tokens, args.seconds))
            for m in models:
                m.set_threads(logical)
            runs["oversubscribed"].append(together_tps(models, args.tokens, args.seconds))
            for m in models:
                m.set_threads(share)
            runs["shared"].append(together_tps(models, args.tokens, args.seconds))
            say(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.1f} tok/s" for k, v in runs.items()))
    finally:
        for m in models:
            m.close()
    alone, over, shared = (statistics.median(runs[k]) for k in runs)
    say(f"two models, every core each: {over:.1f} tok/s together ({over / alone:.2f} x alone)")
    say(f"two models, {share} thread(s) each: {shared:.1f} tok/s ({shared / alone:.2f} x alone)")
    return {
        "model": info.name,
        "physical_cores": physical,
        "logical_cores": logical,
        "threads_alone": physical,
        "threads_oversubscribed": logical,
        "threads_shared": share,
        "tokens": args.tokens,
        "rounds": args.rounds,
        "alone_tok_s": round(alone, 2),
        "pair_oversubscribed_tok_s": round(over, 2),
        "pair_shared_tok_s": round(shared, 2),
        "ratio_oversubscribed": round(over / alone, 3),
        "ratio_shared": round(shared / alone, 3),
    }


SETTLE_S = 2.0  # after a phase: the entries it left are gone (linger and poll, with room)


def child(args: argparse.Namespace) -> None:
    """``--child``: one medexam process with a pool of its own, generating when the parent
    writes ``{"at", "seconds", "tokens", "shared"}`` on a line of stdin; it answers with
    the pieces' times and the model's threads at the end."""
    from engine.models.load import LoadSettings
    from engine.models.pool import ModelPool

    pool = ModelPool(LoadSettings(n_ctx=2048))
    try:
        with pool.lease(args.model) as model:
            piece_times(model, 16, time.perf_counter() + 5)  # warm
            print("ready", flush=True)
            for line in sys.stdin:
                order = json.loads(line)
                pool.machine.enabled = bool(order["shared"])
                time.sleep(max(0.0, order["at"] - time.perf_counter()))
                times = piece_times(model, order["tokens"], order["at"] + order["seconds"])
                print(json.dumps({"times": times, "threads": model.threads}), flush=True)
    finally:
        pool.close()


def _together(children: list[subprocess.Popen[str]], args: argparse.Namespace, shared: bool):
    """The children generating at once: their combined pieces per second, their threads."""
    order = {"at": time.perf_counter() + 0.3, "seconds": args.seconds, "tokens": args.tokens}
    for c in children:
        assert c.stdin is not None
        c.stdin.write(json.dumps({**order, "shared": shared}) + "\n")
        c.stdin.flush()
    replies = [json.loads(_line(c)) for c in children]
    time.sleep(SETTLE_S)
    return combined_rate([r["times"] for r in replies]), [r["threads"] for r in replies]


def _line(child: subprocess.Popen[str]) -> str:
    assert child.stdout is not None
    line = child.stdout.readline()
    if not line:
        raise SystemExit(f"a benchmark process stopped (exit status {child.wait()})")
    return line


def _load() -> list[float] | None:
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


def pair_processes(args: argparse.Namespace) -> dict[str, Any]:
    """Two medexam processes, each with its own pool: one alone, then both at once without
    and with the cores shared across processes, alternately."""
    from engine.models.catalog import resolve
    from engine.models.hardware import physical_cores

    info = resolve(args.model)
    # Each process its own user data folder (the cores are the machine's, not a folder's),
    # and a registry of this benchmark's own (no other medexam process on the machine counts).
    top = tempfile.mkdtemp(prefix="medexam-bench-")
    command = [sys.executable, __file__, "--child"] + (["--model", args.model] * bool(args.model))
    say = (lambda *_: None) if args.json else (lambda m: print(m, file=sys.stderr))
    load_before = _load()
    children = [
        subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={
                **os.environ,
                "MEDEXAM_HOME": os.path.join(top, f"home-{i}"),
                "MEDEXAM_CORES_DIR": os.path.join(top, "cores"),
                "MEDEXAM_SHARE_CORES": "machine",
            },
        )
        for i in range(2)
    ]
    runs: dict[str, list[float]] = {"alone": [], "unshared": [], "shared": []}
    threads: dict[str, list[int]] = {}
    try:
        for c in children:
            if _line(c).strip() != "ready":
                raise SystemExit("a benchmark process did not start")
        for r in range(args.rounds):
            for kind, group, shared in (
                ("alone", children[:1], True),
                ("unshared", children, False),
                ("shared", children, True),
            ):
                rate, threads[kind] = _together(group, args, shared)
                runs[kind].append(rate)
            say(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.1f} tok/s" for k, v in runs.items()))
    finally:
        for c in children:
            with contextlib.suppress(OSError):
                c.stdin.close()  # type: ignore[union-attr]
        for c in children:
            try:
                c.wait(timeout=30)
            except subprocess.TimeoutExpired:
                c.kill()
    alone, unshared, shared = (statistics.median(runs[k]) for k in runs)
    say(f"two processes, every core each: {unshared:.1f} tok/s ({unshared / alone:.2f} x alone)")
    say(f"two processes, cores shared: {shared:.1f} tok/s ({shared / alone:.2f} x alone)")
    return {
        "model": info.name,
        "physical_cores": physical_cores(),
        "tokens": args.tokens,
        "seconds": args.seconds,
        "rounds": args.rounds,
        "threads_alone": threads["alone"],
        "threads_unshared": threads["unshared"],
        "threads_shared": threads["shared"],
        "alone_tok_s": round(alone, 2),
        "pair_unshared_tok_s": round(unshared, 2),
        "pair_shared_tok_s": round(shared, 2),
        "ratio_unshared": round(unshared / alone, 3),
        "ratio_shared": round(shared / alone, 3),
        "load_before": load_before,
        "load_after": _load(),
    }


BUSY_LOOP = "while True: pass"


def _busy_loop() -> subprocess.Popen[bytes]:
    """Another program keeping one core busy: pinned to the last CPU this process may use."""
    child = subprocess.Popen([sys.executable, "-c", BUSY_LOOP])
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(child.pid, {max(os.sched_getaffinity(0))})
    return child


def hog(args: argparse.Namespace) -> dict[str, Any]:
    """One model beside a busy loop: leased from a pool, with one thread, with every core."""
    from engine.models.catalog import open_model, resolve
    from engine.models.hardware import physical_cores
    from engine.models.load import LoadSettings
    from engine.models.pool import ModelPool

    info, physical = resolve(args.model), physical_cores()
    # A registry of this benchmark's own (no other medexam process counts); other programs'
    # load counts, as by default.
    os.environ["MEDEXAM_CORES_DIR"] = tempfile.mkdtemp(prefix="medexam-bench-cores-")
    os.environ["MEDEXAM_SHARE_CORES"] = "machine"
    say = (lambda *_: None) if args.json else (lambda m: print(m, file=sys.stderr))
    pool = ModelPool(LoadSettings(n_ctx=2048))
    alone = open_model(args.model, n_ctx=2048, n_threads=physical)
    load_before, loop = _load(), _busy_loop()
    runs: dict[str, list[float]] = {"pool": [], "one_thread": [], "all_threads": []}
    threads: list[int | None] = []

    def rate(model: Any) -> float:
        return combined_rate([piece_times(model, args.tokens, time.perf_counter() + args.seconds)])

    try:
        with pool.lease(args.model) as pooled:
            piece_times(pooled, 64, time.perf_counter() + 3)  # warm; the load read meanwhile
            piece_times(alone, 16, time.perf_counter() + 3)
            for r in range(args.rounds):
                runs["pool"].append(rate(pooled))
                threads.append(pooled.threads)
                alone.set_threads(1)
                runs["one_thread"].append(rate(alone))
                alone.set_threads(physical)
                runs["all_threads"].append(rate(alone))
                say(
                    f"round {r + 1}: "
                    + ", ".join(f"{k} {v[-1]:.1f} tok/s" for k, v in runs.items())
                )
            busy_seen = pool.machine.busy
    finally:
        loop.kill()
        loop.wait(timeout=10)
        alone.close()
        pool.close()
    pooled_tps, one, every = (statistics.median(runs[k]) for k in runs)
    # each round's pool against the one thread measured right after it: the machine's speed
    # beside a busy loop drifts between rounds (which core the scheduler gives each thread)
    pairs = zip(runs["pool"], runs["one_thread"], strict=True)
    paired = statistics.median(p / o for p, o in pairs)
    say(f"beside a busy loop: pool {pooled_tps:.1f} tok/s ({paired:.2f} x one thread)")
    return {
        "model": info.name,
        "physical_cores": physical,
        "tokens": args.tokens,
        "seconds": args.seconds,
        "rounds": args.rounds,
        "threads_pool": threads,
        "busy_seen": round(busy_seen, 2),
        "pool_tok_s": round(pooled_tps, 2),
        "one_thread_tok_s": round(one, 2),
        "all_threads_tok_s": round(every, 2),
        "ratio_all_threads": round(every / one, 3),
        "load_before": load_before,
        "load_after": _load(),
        "ratio_hog": round(paired, 3),
        "rounds_tok_s": {k: [round(v, 1) for v in vs] for k, vs in runs.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="catalog name (default: smollm2)")
    parser.add_argument("--tokens", type=int, default=None, help="128; 512 with --pair… --hog")
    parser.add_argument("--rounds", type=int, default=None, help="5; 3 with --pair… --hog")
    parser.add_argument("--pair", action="store_true", help="two models at once (see above)")
    parser.add_argument(
        "--pair-processes", action="store_true", help="two processes at once (see above)"
    )
    parser.add_argument("--hog", action="store_true", help="beside a busy loop (see above)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, default=4.0, help="--pair(-processes): per stream")
    parser.add_argument("--json", action="store_true", help="only the JSON line")
    args = parser.parse_args()
    if args.pair or args.pair_processes or args.child or args.hog:
        args.tokens, args.rounds = args.tokens or 512, args.rounds or 3
        if args.child:
            child(args)
        elif args.hog:
            print(json.dumps(hog(args)))
        else:
            print(json.dumps(pair_processes(args) if args.pair_processes else pair(args)))
        return
    args.tokens, args.rounds = args.tokens or 128, args.rounds or 5

    import llama_cpp

    from engine.models.catalog import open_model, resolve
    from engine.models.hardware import physical_cores

    info = resolve(args.model)
    threads = physical_cores()
    model = open_model(args.model, n_ctx=2048, n_threads=threads)
    llm = llama_cpp.Llama(
        model_path=info.path,
        n_ctx=2048,
        n_threads=threads,
        n_threads_batch=threads,
        n_gpu_layers=model.settings.n_gpu_layers,
        verbose=False,
    )
    prompt = model.chat_prompt([{"role": "user", "content": PROMPT}])
    tokens = llm.tokenize(prompt.encode(), add_bos=False, special=True)
    # Warm both once, then alternate.
    engine_tps(model, 16)
    raw_tps(llm, tokens, 16)
    engine, raw = [], []
    for r in range(args.rounds):
        engine.append(engine_tps(model, args.tokens))
        raw.append(raw_tps(llm, tokens, args.tokens))
        if not args.json:
            print(
                f"round {r + 1}: engine {engine[-1]:.1f} tok/s, raw {raw[-1]:.1f} tok/s",
                file=sys.stderr,
            )
    model.close()
    e, w = statistics.median(engine), statistics.median(raw)
    result = {
        "model": info.name,
        "threads": threads,
        "tokens": args.tokens,
        "rounds": args.rounds,
        "engine_tps": round(e, 2),
        "raw_tps": round(w, 2),
        "ratio": round(e / w, 3),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
