"""Benchmark of medexam's training loop against a bare transformers loop on the same batches.

The French reader (MiniLM, no context) is trained for two epochs on the same questions,
tokenized and batched the same way, by turns: medexam's loop (:func:`engine.train.loop.train`:
progress, a DB row, the epoch's checkpoint, the artefact) and a bare loop (the same model
class, fused AdamW and linear schedule, ``loss.backward(); step()``, nothing else). Each
round's throughput is counted from its second step to its last (the epoch-end checkpoint
falls inside that window for medexam), and the median rounds are compared (goal: medexam at
least 0.9 times the bare loop). Also: peak RSS, the estimated time of one epoch over the
whole training set at this speed and, when FrenchMedMCQA's files are there, the
majority-combination baseline on its dev set (always answering the training set's most
frequent combination).

The last line printed is JSON.

    python bench/train.py [--json] [--rounds 2] [--examples 64] [--max-length 128]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("MEDEXAM_HOME", tempfile.mkdtemp(prefix="medexam-bench-train-"))

from engine.french.dataset import ensure_sample, import_frenchmedmcqa, load_questions  # noqa: E402
from engine.french.items import gold  # noqa: E402
from engine.french.scoring import summarise  # noqa: E402
from engine.french.train.reader_data import combination, encoder_dir  # noqa: E402
from engine.french.train.reader_task import _load_model, prepare  # noqa: E402
from engine.store.store import Store  # noqa: E402
from engine.train.loop import epoch_order, train  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "frenchmedmcqa"
EPOCHS = 2


def settings(examples: int, max_length: int, batch: int) -> dict:
    from engine.french.train.reader import ReaderSettings

    return ReaderSettings.from_dict(
        {
            "epochs": EPOCHS,
            "limit": examples,
            "max_length": max_length,
            "batch_size": batch,
            "seed": 3,
            "device": "cpu",
            "checkpoint_every": 1000,
        }
    ).as_dict()


def windowed(times: list[float], sizes: list[int], tokens: list[int]) -> dict:
    """Examples and tokens per second from the end of the first step to the end of the last."""
    seconds = times[-1] - times[0]
    return {
        "examples_per_s": sum(sizes[1:]) / seconds,
        "tokens_per_s": sum(tokens[1:]) / seconds,
    }


def medexam_round(store: Store, dataset: str, chosen: dict, k: int) -> dict:
    times: list[float] = []
    train(
        store, "french-reader", dataset, chosen, name=f"bench-{k}", replace=True,
        progress=lambda p: times.append(time.perf_counter()) if "loss" in p.info else None,
    )  # fmt: skip
    return {"times": times}


def bare_round(task, chosen: dict) -> dict:
    """The same model class from the same folder, the same batches, the same optimizer."""
    import torch
    from transformers import get_linear_schedule_with_warmup

    torch.manual_seed(chosen["seed"])
    model = _load_model(encoder_dir("minilm"), "minilm", task.data["classes"], task.data["head"])
    model.train()
    n_steps = EPOCHS * -(-len(task.examples) // chosen["batch_size"])
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.01, fused=True)
    schedule = get_linear_schedule_with_warmup(optimizer, round(0.1 * n_steps), n_steps)
    times = []
    size = chosen["batch_size"]
    for epoch in range(EPOCHS):
        order = epoch_order(chosen["seed"], epoch, len(task.examples))
        for start in range(0, len(order), size):
            batch = task.collate([task.examples[i] for i in order[start : start + size]])
            model(**batch).loss.backward()
            optimizer.step()
            schedule.step()
            optimizer.zero_grad(set_to_none=True)
            times.append(time.perf_counter())
    return {"times": times}


def batch_shapes(task, chosen: dict) -> tuple[list[int], list[int]]:
    sizes, tokens = [], []
    size = chosen["batch_size"]
    for epoch in range(EPOCHS):
        order = epoch_order(chosen["seed"], epoch, len(task.examples))
        for start in range(0, len(order), size):
            part = [task.examples[i] for i in order[start : start + size]]
            sizes.append(len(part))
            tokens.append(sum(len(e["input_ids"]) for e in part))
    return sizes, tokens


def majority() -> dict | None:
    """Always the training set's most frequent combination, scored on the dev set."""
    if not (DATA / "train.json").is_file() or not (DATA / "dev.json").is_file():
        return None
    train_q, dev_q = load_questions(DATA / "train.json"), load_questions(DATA / "dev.json")
    top = Counter(combination(gold(q)) for q in train_q).most_common(1)[0][0]
    scores = summarise((set(top), gold(q)) for q in dev_q)
    return {
        "combination": top,
        "n": scores["n"],
        "hamming": scores["hamming"],
        "emr": scores["emr"],
    }


def load_data(store: Store) -> tuple[str, int]:
    """FrenchMedMCQA's training set when it is there (its size for the epoch estimate), else
    the shipped sample."""
    if (DATA / "train.json").is_file():
        info = import_frenchmedmcqa(store, DATA / "train.json", "fm-train")
        return "fm-train", info["n_items"]
    return ensure_sample(store)["dataset"], 15


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print only the JSON line")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of each loop")
    parser.add_argument("--examples", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()
    store = Store(Path(os.environ["MEDEXAM_HOME"]) / "bench.db")
    dataset, full_size = load_data(store)
    chosen = settings(args.examples, args.max_length, args.batch_size)
    task = prepare(store, dataset, chosen, "cpu")
    sizes, tokens = batch_shapes(task, chosen)
    found: dict[str, list[dict]] = {"medexam": [], "bare": []}
    for k in range(args.rounds):  # by turns, so a change of load hits both
        for which in ("medexam", "bare"):
            got = medexam_round(store, dataset, chosen, k) if which == "medexam" else bare_round(task, chosen)  # fmt: skip
            speed = windowed(got["times"], sizes, tokens)
            found[which].append(speed)
            if not args.json:
                print(f"round {k + 1} {which:<8} {speed['examples_per_s']:6.2f} examples/s "
                      f"{speed['tokens_per_s']:8.1f} tokens/s")  # fmt: skip
    median = {w: statistics.median(r["examples_per_s"] for r in rs) for w, rs in found.items()}
    tok = {w: statistics.median(r["tokens_per_s"] for r in rs) for w, rs in found.items()}
    summary = {
        "examples": args.examples,
        "max_length": args.max_length,
        "batch_size": args.batch_size,
        "threads": __import__("torch").get_num_threads(),
        "load_1min": round(os.getloadavg()[0], 2),
        "medexam_examples_per_s": round(median["medexam"], 2),
        "bare_examples_per_s": round(median["bare"], 2),
        "medexam_tokens_per_s": round(tok["medexam"], 1),
        "bare_tokens_per_s": round(tok["bare"], 1),
        "ratio": round(median["medexam"] / median["bare"], 3),
        "goal_met": median["medexam"] >= 0.9 * median["bare"],
        "full_epoch_examples": full_size,
        "full_epoch_s_estimate": round(full_size / median["medexam"], 1),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "majority_baseline_dev": majority(),
    }
    if not args.json:
        print(f"medexam / bare: {summary['ratio']:.3f} (goal ≥ 0.9); one full epoch of "
              f"{full_size} questions ≈ {summary['full_epoch_s_estimate'] / 60:.1f} min")  # fmt: skip
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
