"""Exam runs against llama.cpp's ``llama-server`` (8 parallel slots, prompt caching off):
items per second through medexam at concurrency 1, 4 and 8, against the same requests sent
directly with plain concurrent HTTP calls, measured alternately.

    python bench/served.py [--limit 8] [--tokens 64] [--rounds 1] [--lang en] [--threads 2]
                           [--json]

Two methods: ``logprob`` (letter probabilities: one ``/v1/completions`` request with
``logprobs`` per question) and ``generate`` (a chat answer of up to ``--tokens`` tokens).
llama-server is built once by ``scripts/build_llama_server.sh`` (cached in the user cache).
The last line is JSON: ``items_per_s`` per path (``engine``, ``direct``), method and
concurrency; ``engine_vs_direct`` (the lowest engine/direct ratio; the goal is >= 0.9 at
every N: medexam must never be what limits a server) and ``agreement_c1_c8`` (the share of
letters equal between concurrency 1 and 8: a batching server is not batch-invariant).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
LEVELS = (1, 4, 8)
METHODS = ("logprob", "generate")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def build_server() -> str:
    out = subprocess.run(
        [str(ROOT / "scripts" / "build_llama_server.sh")],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip().splitlines()[-1]


def start_server(binary: str, model: str, port: int, threads: int) -> subprocess.Popen[bytes]:
    args = [binary, "-m", model, "--host", "127.0.0.1", "--port", str(port)]
    args += ["-np", "8", "-c", str(8 * 2048), "-t", str(threads), "--no-cache-prompt"]
    args += ["--cache-ram", "0", "--no-webui"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2) as r:
                if json.load(r)["data"]:
                    return proc
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("llama-server did not start")


def direct_requests(model: Any, store: Any, dataset: str, settings: Any) -> list[tuple]:
    """The HTTP requests medexam sends for each question: (path, body)."""
    from engine.exam.prompts import build_messages, stop_sequences
    from engine.exam.runner import ExamJob, prompt_text
    from engine.models.pool import default_pool
    from engine.models.server import fields

    job = ExamJob(store, dataset, settings, default_pool())
    ps = settings.prompt_settings()
    out = []
    try:
        for item in job.items:
            shots = job.plan.for_item(item)
            prompt = prompt_text(model, item, shots, settings, job.chat)
            if settings.method == "logprob":
                body = {"model": model.info["api_model"], "prompt": prompt, "max_tokens": 1}
                body |= {"temperature": 0.0, "logprobs": 20}
                if job.chat:
                    body["add_special_tokens"] = False
                out.append(("/completions", body))
                continue
            given = {"max_tokens": settings.max_tokens, "seed": settings.seed}
            options = fields(given | {"stop": stop_sequences(ps.lang)})
            options |= options.pop("extra_body", {})
            body = {"model": model.info["api_model"], "messages": build_messages(item, shots, ps)}
            out.append(("/chat/completions", body | options))
    finally:
        job.close()
    return out


def send_direct(url: str, requests: list[tuple], n: int) -> float:
    import httpx2

    with httpx2.Client(timeout=600) as client:

        def one(req: tuple) -> None:
            r = client.post(url + req[0], json=req[1])
            r.raise_for_status()
            r.json()

        t0 = time.perf_counter()
        with ThreadPoolExecutor(n) as pool:
            list(pool.map(one, requests))
        return len(requests) / (time.perf_counter() - t0)


def through_engine(store: Any, dataset: str, settings: dict[str, Any], n: int) -> tuple:
    from engine.core.runs import run

    t0 = time.perf_counter()
    summary = run(store, "exam", dataset, settings, concurrency=n)
    rate = summary["answered"] / (time.perf_counter() - t0)
    assert summary["status"] == "finished", summary.get("error")
    letters = {a["item_key"]: a["chosen"] for a in store.answers(summary["run_id"])}
    return rate, letters


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=8, help="questions per run (the sample has 14)")
    ap.add_argument("--tokens", type=int, default=64, help="tokens generated per answer")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--lang", default="en", help="prompt language (en: SmolLM2's own)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("MEDEXAM_HOME", tempfile.mkdtemp(prefix="medexam-bench-"))

    from engine.exam.dataset import ensure_sample
    from engine.exam.runner import ExamSettings
    from engine.models import catalog
    from engine.models.pool import default_pool
    from engine.store.store import Store

    binary = build_server()
    port = free_port()
    proc = start_server(binary, catalog.resolve(None).path, port, args.threads)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        catalog.add_served(url, "bench-served")
        store = Store(Path(tempfile.mkdtemp()) / "bench.db")
        dataset = ensure_sample(store)
        rates: dict[str, dict[str, dict[int, list[float]]]] = {
            p: {m: {n: [] for n in LEVELS} for m in METHODS} for p in ("engine", "direct")
        }
        letters: dict[int, dict[str, Any]] = {}
        with default_pool().lease("bench-served") as model:
            for method in METHODS:
                given = {"model": "bench-served", "method": method, "limit": args.limit}
                given |= {"max_tokens": args.tokens, "lang": args.lang}
                settings = ExamSettings.from_dict(given)
                requests = direct_requests(model, store, dataset, settings)
                send_direct(url, requests[:2], 2)  # warm up
                for r in range(args.rounds):
                    for n in LEVELS:
                        order = ("engine", "direct") if r % 2 == 0 else ("direct", "engine")
                        for path in order:
                            if path == "engine":
                                rate, got = through_engine(store, dataset, given, n)
                                if method == "logprob":
                                    letters[n] = got
                            else:
                                rate = send_direct(url, requests, n)
                            rates[path][method][n].append(rate)
                            print(f"{path} {method} N={n}: {rate:.3f} items/s", file=sys.stderr)
    finally:
        proc.kill()
        proc.wait()
    best = {
        p: {m: {str(n): round(max(v), 3) for n, v in by_n.items()} for m, by_n in ms.items()}
        for p, ms in rates.items()
    }
    ratios = [
        best["engine"][m][str(n)] / best["direct"][m][str(n)] for m in METHODS for n in LEVELS
    ]
    same = [letters[1][k] == letters[8].get(k) for k in letters[1]]
    result = {
        "items_per_s": best,
        "engine_vs_direct": round(min(ratios), 3),
        "agreement_c1_c8": round(sum(same) / len(same), 3),
        "limit": args.limit,
        "tokens": args.tokens,
        "rounds": args.rounds,
        "lang": args.lang,
        "threads": args.threads,
        "server": "llama-server -np 8 --no-cache-prompt",
    }
    if not args.json:
        for p in ("engine", "direct"):
            for m in METHODS:
                cells = "  ".join(f"N={n}: {best[p][m][str(n)]:.2f}" for n in LEVELS)
                print(f"{p:<7} {m:<9} items/s  {cells}")
        print(f"engine/direct (lowest) {result['engine_vs_direct']:.3f}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
