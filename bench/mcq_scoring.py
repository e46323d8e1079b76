"""Benchmark: reading a model's multiple-choice answer, three ways.

1. **letter, 0-shot** — one forward pass scores the letters A–E after ``答案：``
   (:mod:`engine.exam.runner`, method ``logprob``);
2. **per option** — the lm-evaluation-harness way: the log-likelihood of each option's text
   after the same prompt, one forward pass per option from a fresh cache
   (``model.logprobs(prompt, [option], reuse_prefix=False)``); the answer is the most likely
   option (``accuracy``) or the most likely per character (``accuracy_norm``);
3. **letter, 4-shot** — the letter method behind four solved examples, whose computed prefix
   the model keeps from one question to the next.

Questions: the first ``--n`` (50) of the ExplainCPE test split in ``../shared/data`` (examples
from its train split), or the shipped sample questions when that folder is absent. The
model is the embedded chat model unless ``--model`` names another.

Goals: the letter method at least 3x faster than per-option scoring; 4-shot at most 1.3x the
time of 0-shot. The last line printed is a JSON object with the timings, accuracies and
ratios (``--json`` prints only that line).

    python bench/mcq_scoring.py [--n 50] [--model NAME] [--threads N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.exam.dataset import letters_for, load_file, sample_path  # noqa: E402
from engine.exam.prompts import ShotPlan  # noqa: E402
from engine.exam.runner import ExamSettings, answer_question, prompt_text, uses_chat  # noqa: E402
from engine.models.catalog import open_model, resolve  # noqa: E402

SHARED = ROOT.parent / "shared" / "data" / "explaincpe"


def load_questions(n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str, bool]:
    """``(questions, example pool, source, pool is the questions themselves)``."""
    if (SHARED / "test.json").is_file():
        questions = load_file(SHARED / "test.json")[:n]
        if (SHARED / "train.json").is_file():
            return questions, load_file(SHARED / "train.json"), "explaincpe test", False
        return questions, questions, "explaincpe test", True
    questions = load_file(sample_path())[:n]
    return questions, questions, "medexam samples", True


class Timer:
    """Wall-clock seconds and the CPU seconds of the model's process (Linux), which stay
    meaningful on a machine shared with other work."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def _cpu(self) -> float | None:
        try:
            fields = Path(f"/proc/{self.model.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def __enter__(self) -> Timer:
        self._c0, self._t0 = self._cpu(), time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall.append(time.perf_counter() - self._t0)
        c1 = self._cpu()
        if c1 is not None and self._c0 is not None:
            self.cpu.append(c1 - self._c0)

    def stats(self) -> dict[str, float]:
        out = {
            "seconds_per_question": sum(self.wall) / len(self.wall),
            "first_question_seconds": self.wall[0],
        }
        if len(self.cpu) == len(self.wall):
            out["cpu_seconds_per_question"] = sum(self.cpu) / len(self.cpu)
        return out


def letter_method(
    model: Any, questions: list[dict[str, Any]], plan: ShotPlan, chat: bool
) -> dict[str, Any]:
    """The letter read from one forward pass, with prefix reuse (the runner's way)."""
    settings = ExamSettings(method="logprob", shots=plan.k)
    timer, right = Timer(model), 0
    for item in questions:
        with timer:
            answer = answer_question(model, item, plan.for_item(item), settings, chat)
        right += answer["correct"]
    return {**timer.stats(), "accuracy": 100.0 * right / len(questions)}


def letter_without_reuse(
    model: Any, questions: list[dict[str, Any]], plan: ShotPlan, chat: bool
) -> dict[str, Any]:
    """The same prompts, each evaluated from a fresh cache: what prefix reuse saves."""
    settings = ExamSettings(method="logprob", shots=plan.k)
    timer = Timer(model)
    for item in questions:
        with timer:
            prompt = prompt_text(model, item, plan.for_item(item), settings, chat)
            model.logprobs(prompt, list(letters_for(item)), reuse_prefix=False, chat_formatted=chat)
    return timer.stats()


def per_option_method(model: Any, questions: list[dict[str, Any]], chat: bool) -> dict[str, Any]:
    """lm-evaluation-harness style: one fresh forward pass per option text."""
    settings = ExamSettings(method="logprob")
    timer, right, right_norm = Timer(model), 0, 0
    for item in questions:
        with timer:
            prompt = prompt_text(model, item, [], settings, chat)
            scores = {}
            for letter, option in zip(letters_for(item), item["options"], strict=True):
                lp = model.logprobs(prompt, [option], reuse_prefix=False, chat_formatted=chat)
                scores[letter] = (lp[option], lp[option] / max(1, len(option)))
        right += max(scores, key=lambda k: scores[k][0]) == item["answer"]
        right_norm += max(scores, key=lambda k: scores[k][1]) == item["answer"]
    return {
        **timer.stats(),
        "accuracy": 100.0 * right / len(questions),
        "accuracy_norm": 100.0 * right_norm / len(questions),
    }


def _line(name: str, stats: dict[str, Any]) -> str:
    text = f"{name + ':':<34} {stats['seconds_per_question']:7.3f} s/question"
    if "cpu_seconds_per_question" in stats:
        text += f" ({stats['cpu_seconds_per_question']:.3f} CPU s)"
    if "accuracy" in stats:
        text += f", accuracy {stats['accuracy']:.1f}%"
    if "accuracy_norm" in stats:
        text += f" (per character {stats['accuracy_norm']:.1f}%)"
    return text


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=50, help="number of questions (50)")
    parser.add_argument("--model", default=None, help="model name (default: smollm2)")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads for the model")
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument(
        "--no-reuse-n",
        type=int,
        default=5,
        help="questions timed for 4-shot without prefix reuse (5)",
    )
    parser.add_argument("--json", action="store_true", help="print only the JSON line")
    args = parser.parse_args(argv)

    def say(text: str) -> None:
        if not args.json:
            print(text, flush=True)

    questions, pool, source, same = load_questions(args.n)
    info = resolve(args.model)
    say(f"{len(questions)} questions ({source}), model {info.name}")
    model = open_model(args.model, n_ctx=args.n_ctx, n_threads=args.threads)
    try:
        chat = uses_chat(model)
        threads = model.settings.n_threads
        zero = letter_method(model, questions, ShotPlan(pool, 0), chat)
        say(_line("letter, 0-shot", zero))
        per_option = per_option_method(model, questions, chat)
        say(_line("per option", per_option))
        plan = ShotPlan(pool, 4, same_pool=same)
        four = letter_method(model, questions, plan, chat)
        say(_line("letter, 4-shot", four))
        fresh = letter_without_reuse(model, questions[: args.no_reuse_n], plan, chat)
        say(_line(f"4-shot, no reuse (first {min(args.no_reuse_n, len(questions))})", fresh))
    finally:
        model.close()
    key = (
        "cpu_seconds_per_question" if "cpu_seconds_per_question" in zero else "seconds_per_question"
    )
    speedup = per_option[key] / zero[key]
    four_vs_zero = four[key] / zero[key]
    result = {
        "n": len(questions),
        "source": source,
        "model": info.name,
        "chat_template": chat,
        "threads": threads,
        "ratios_from": key,
        "letter_0shot": {k: round(v, 4) for k, v in zero.items()},
        "per_option": {k: round(v, 4) for k, v in per_option.items()},
        "letter_4shot": {k: round(v, 4) for k, v in four.items()},
        "letter_4shot_no_reuse": {k: round(v, 4) for k, v in fresh.items()},
        "speedup_vs_per_option": round(speedup, 2),
        "four_vs_zero_shot": round(four_vs_zero, 2),
        "four_shot_reuse_saving": round(fresh[key] / four[key], 2),
        "wall_speedup_vs_per_option": round(
            per_option["seconds_per_question"] / zero["seconds_per_question"], 2
        ),
        "wall_four_vs_zero_shot": round(
            four["seconds_per_question"] / zero["seconds_per_question"], 2
        ),
        "goals": {
            "speedup_at_least_3x": speedup >= 3.0,
            "four_shot_at_most_1.3x": four_vs_zero <= 1.3,
        },
    }
    print(json.dumps(result, ensure_ascii=False))
    return result


if __name__ == "__main__":
    main()
