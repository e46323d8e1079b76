"""Benchmark of the French BM25 retriever against rank-bm25 on synthetic French-like corpora.

Corpora of 10k, 200k and 1M passages are generated from a seeded Zipf vocabulary whose most
frequent words are real French stop words, followed by invented words built from French
syllables and endings. Every figure is measured in this run:

* index build time (French analysis + bm25s index) and peak memory (each size runs in its own
  process, so the peaks do not mix);
* p50/p95 query latency (analysis + scoring + top-10) of the project's BM25 and, at 10k and
  200k, of rank-bm25 (``BM25Okapi`` with the same k1, b, IDF and analyser), on the same queries;
* top-10 agreement between the two on those queries (ties broken by passage order in both).

The last line printed is JSON with ``speedup_vs_rank_bm25_200k``, ``top10_identical``,
``p50_ms_1m``, ``build_s_1m`` and the per-size figures.

    python bench/retrieval.py [--json] [--sizes 10000,200000,1000000] [--queries 200]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from engine.french.analyser import analyse  # noqa: E402
from engine.french.bm25 import BM25, reference_bm25, top_k  # noqa: E402

SEED = 20240617
STOP = [
    "de",
    "la",
    "le",
    "et",
    "les",
    "des",
    "en",
    "un",
    "du",
    "une",
    "que",
    "est",
    "pour",
    "qui",
    "dans",
    "par",
    "sur",
    "au",
    "pas",
    "ne",
    "se",
    "il",
    "ce",
    "sont",
    "avec",
    "plus",
    "ou",
    "son",
    "sa",
    "elle",
    "aux",
    "ses",
    "mais",
    "nous",
    "été",
    "leur",
    "on",
    "été",
    "être",
]
ONSETS = [
    "",
    "b",
    "c",
    "d",
    "f",
    "g",
    "l",
    "m",
    "n",
    "p",
    "r",
    "s",
    "t",
    "v",
    "ch",
    "tr",
    "pr",
    "cl",
    "gr",
    "ph",
    "st",
    "br",
]
VOWELS = ["a", "e", "i", "o", "u", "é", "è", "ou", "ai", "an", "on", "in", "eu", "y"]
ENDINGS = [
    "",
    "",
    "tion",
    "ique",
    "ose",
    "ite",
    "ase",
    "ine",
    "ment",
    "eur",
    "al",
    "aire",
    "ie",
    "isme",
    "oïde",
    "émie",
    "ale",
    "ique",
    "ée",
    "ant",
]
VOCAB = 100_000
ZIPF_S = 1.07
RANK_BM25_SIZES = (10_000, 200_000)
RANK_BM25_QUERIES = {10_000: 60, 200_000: 12}


def vocabulary(rng: np.random.Generator, n: int) -> list[str]:
    """``n`` distinct words: French stop words first, then invented French-looking words."""
    words, seen = list(STOP), set(STOP)
    while len(words) < n:
        syllables = rng.integers(1, 4)
        w = "".join(
            ONSETS[rng.integers(len(ONSETS))] + VOWELS[rng.integers(len(VOWELS))]
            for _ in range(syllables)
        )
        w += ENDINGS[rng.integers(len(ENDINGS))]
        if len(w) > 2 and w not in seen:
            seen.add(w)
            words.append(w)
    return words


def zipf_cdf(n: int, s: float = ZIPF_S) -> np.ndarray:
    weights = 1.0 / np.arange(1, n + 1) ** s
    return np.cumsum(weights / weights.sum())


def corpus(n_docs: int, seed: int = SEED) -> tuple[list[str], list[str], np.ndarray]:
    """``n_docs`` passages of 20–90 words (about 100–600 characters), the vocabulary and CDF."""
    rng = np.random.default_rng(seed)
    vocab = vocabulary(rng, VOCAB)
    cdf = zipf_cdf(len(vocab))
    lengths = rng.integers(20, 91, size=n_docs)
    ids = np.searchsorted(cdf, rng.random(int(lengths.sum())))
    ids = np.minimum(ids, len(vocab) - 1)
    words = np.array(vocab, dtype=object)[ids]
    docs, pos = [], 0
    for n in lengths:
        docs.append(" ".join(words[pos : pos + n]).capitalize() + ".")
        pos += n
    return docs, vocab, cdf


def queries(vocab: list[str], cdf: np.ndarray, n: int, seed: int = SEED + 1) -> list[str]:
    """Query texts of 25–45 words drawn from the same distribution (like a question followed
    by its five options)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        ids = np.minimum(np.searchsorted(cdf, rng.random(rng.integers(25, 46))), len(vocab) - 1)
        out.append(" ".join(vocab[i] for i in ids))
    return out


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def percentiles(wall: list[float], cpu: list[float]) -> dict[str, float]:
    """Wall-clock and CPU-time percentiles in milliseconds. On a busy machine the wall clock
    includes waiting for a core; the CPU time is what the query itself cost."""
    w, c = np.array(wall) * 1000, np.array(cpu) * 1000
    return {
        "p50_ms": round(float(np.percentile(w, 50)), 3),
        "p95_ms": round(float(np.percentile(w, 95)), 3),
        "cpu_p50_ms": round(float(np.percentile(c, 50)), 3),
        "cpu_p95_ms": round(float(np.percentile(c, 95)), 3),
        "n": len(wall),
    }


class Timer:
    """Collects wall-clock and CPU time of repeated blocks."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def __enter__(self) -> Timer:
        self._w, self._c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall.append(time.perf_counter() - self._w)
        self.cpu.append(time.process_time() - self._c)

    def result(self) -> dict[str, float]:
        return percentiles(self.wall, self.cpu)


def measure(n_docs: int, n_queries: int) -> dict:
    """Every figure for one corpus size (run in a process of its own)."""
    t = time.perf_counter()
    docs, vocab, cdf = corpus(n_docs)
    gen_s = time.perf_counter() - t
    mem_corpus = peak_mib()

    t, c = time.perf_counter(), time.process_time()
    terms = [analyse(d) for d in docs]
    analyse_s = time.perf_counter() - t
    index = BM25.build(terms)
    build_s, build_cpu_s = time.perf_counter() - t, time.process_time() - c
    index_mib = (index.data.nbytes + index.indices.nbytes + index.indptr.nbytes) / 2**20
    mem_build = peak_mib()

    qs = queries(vocab, cdf, n_queries)
    for q in qs[:5]:  # warm up
        index.search(analyse(q), 10)
    ours = Timer()
    for q in qs:
        with ours:
            index.search(analyse(q), 10)
    result = {
        "n_passages": n_docs,
        "n_terms": len(index.vocab),
        "avg_terms": round(float(np.mean([len(x) for x in terms])), 1),
        "generate_s": round(gen_s, 2),
        "analyse_s": round(analyse_s, 2),
        "build_s": round(build_s, 2),
        "build_cpu_s": round(build_cpu_s, 2),
        "index_mib": round(index_mib, 1),
        "peak_mib_corpus": round(mem_corpus),
        "peak_mib_build": round(mem_build),
        "ours": ours.result(),
    }
    if n_docs in RANK_BM25_SIZES:
        t = time.perf_counter()
        ref = reference_bm25(
            terms, k1=index.params["k1"], b=index.params["b"], method=index.params["method"]
        )
        result["rank_bm25_build_s"] = round(time.perf_counter() - t, 2)
        ref_timer, identical = Timer(), 0
        sample = qs[: RANK_BM25_QUERIES[n_docs]]
        for q in sample:
            with ref_timer:
                best_ref = top_k(np.asarray(ref.get_scores(analyse(q))), 10)
            identical += best_ref.tolist() == index.search(analyse(q), 10)[0]
        result["rank_bm25"] = ref_timer.result()
        result["top10_identical"] = identical
        result["top10_compared"] = len(sample)
        result["speedup_p50"] = round(result["rank_bm25"]["p50_ms"] / result["ours"]["p50_ms"], 1)
        result["speedup_cpu_p50"] = round(
            result["rank_bm25"]["cpu_p50_ms"] / result["ours"]["cpu_p50_ms"], 1
        )
        result["peak_mib_with_rank_bm25"] = round(peak_mib())
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print only the JSON line")
    parser.add_argument("--sizes", default="10000,200000,1000000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: one size
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.queries)))
        return

    started = time.perf_counter()
    sizes = [int(s) for s in args.sizes.split(",")]
    results = {}
    for n in sizes:
        proc = subprocess.run(
            [sys.executable, __file__, "--one", str(n), "--queries", str(args.queries)],
            capture_output=True,
            text=True,
            env=os.environ.copy(),
        )
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr)
            raise SystemExit(f"size {n} failed")
        results[n] = json.loads(proc.stdout.strip().splitlines()[-1])
        if not args.json:
            r = results[n]
            line = (
                f"{n:>9,} passages: build {r['build_s']:7.2f} s (analysis {r['analyse_s']:.2f} s; "
                f"cpu {r['build_cpu_s']:.2f} s), index {r['index_mib']:.0f} MiB, "
                f"peak {r['peak_mib_build']} MiB; query p50 {r['ours']['p50_ms']:.2f} ms "
                f"p95 {r['ours']['p95_ms']:.2f} ms (cpu p50 {r['ours']['cpu_p50_ms']:.2f} ms)"
            )
            if "rank_bm25" in r:
                line += (
                    f"; rank-bm25 p50 {r['rank_bm25']['p50_ms']:.1f} ms "
                    f"(x{r['speedup_p50']}), top-10 identical "
                    f"{r['top10_identical']}/{r['top10_compared']}"
                )
            print(line, flush=True)

    def get(n: int, *keys: str) -> float | None:
        value = results.get(n)
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        return value

    compared = [r for r in results.values() if "top10_compared" in r]
    summary = {
        "speedup_vs_rank_bm25_200k": get(200_000, "speedup_p50"),
        "top10_identical": bool(compared)
        and all(r["top10_identical"] == r["top10_compared"] for r in compared),
        "p50_ms_1m": get(1_000_000, "ours", "p50_ms"),
        "p95_ms_1m": get(1_000_000, "ours", "p95_ms"),
        "cpu_p50_ms_1m": get(1_000_000, "ours", "cpu_p50_ms"),
        "speedup_cpu_vs_rank_bm25_200k": get(200_000, "speedup_cpu_p50"),
        "load_average": os.getloadavg()[0],
        "build_s_1m": get(1_000_000, "build_s"),
        "peak_mib_1m": get(1_000_000, "peak_mib_build"),
        "cores": os.cpu_count(),
        "total_s": round(time.perf_counter() - started, 1),
        "sizes": {str(n): r for n, r in results.items()},
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
