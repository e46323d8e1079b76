"""Generation speed through medexam's engine (model in a child process) against a raw
llama-cpp-python decode loop in this process: same model file, threads, prompt and greedy
decoding, measured alternately in one run.

    python bench/runtime.py [--model NAME] [--tokens 128] [--rounds 5] [--json]

The last line is JSON with ``engine_tps``, ``raw_tps`` and ``ratio`` (engine / raw; the
goal is >= 0.95). Tokens per second count the tokens after the first one over the time
from the first to the last, seen by the caller, so prompt processing is left out of both.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="catalog name (default: smollm2)")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="only the JSON line")
    args = parser.parse_args()

    import llama_cpp

    from engine.catalog import open_model, resolve
    from engine.runtime import available_cores

    info = resolve(args.model)
    threads = available_cores()
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
