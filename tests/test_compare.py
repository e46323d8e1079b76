"""Compare models: runs on the same items side by side with paired tests checked by hand,
no interval or p from too few items, what each model cost the run recorded by the run loop,
and ``medexam runs compare`` on two real models."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.core.progress import Cancel
from engine.core.runs import run
from engine.core.scoring import Scored
from engine.exam.dataset import ensure_sample
from engine.experiments.compare import compare_runs, format_compare
from engine.experiments.size_chart import size_svg
from engine.models.scripted import ScriptedModel
from engine.reports.stats import MIN_ITEMS, TOO_FEW, holm, paired_bootstrap
from engine.store.store import Store
from tests.test_paired_interval import scipy_newcombe


def invoke(db_path: str, *args: str):
    return CliRunner().invoke(cli, ["--db", db_path, *args])


def stored_run(store: Store, dataset: str, model: str, rights: list[bool], **kw) -> int:
    """An exam run whose answers are right as ``rights`` says, item by item."""
    keys = [str(i["id"]) for i in store.items(dataset)]
    run_id = store.start_run("exam", dataset, model, {"method": "generate"}, **kw)
    for key, right in zip(keys, rights, strict=False):
        chosen = "A" if right else "B"
        rouge = dict.fromkeys(("rouge1", "rouge2", "rougeL"), 0.5 if right else 0.2)
        scored = [Scored("exam.letter", 1, {"correct": right}), Scored("exam.rouge", 1, rouge)]
        store.add_answer(run_id, key, response=chosen, chosen=chosen, gold="A", scores=scored)
    store.finish_run(run_id, {"accuracy": 100.0 * sum(rights) / len(rights)})
    return run_id


def hand_mcnemar(b: int, c: int) -> float:
    n = b + c
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2**n)


# -- statistics from few items -------------------------------------------------------------


def test_four_items_that_all_moved_alike_give_no_interval_nor_p():
    # What `medexam report` printed for 4 questions: "Hamming B − A 20.0 [20.0, 20.0], p 0".
    four = paired_bootstrap([0.5, 0.2, 0.4, 0.6], [0.7, 0.4, 0.6, 0.8])
    assert four["diff"] == pytest.approx(0.2)
    assert (four["low"], four["high"], four["p"], four["too_few"]) == (None, None, None, True)
    # Enough items, all moved alike: no spread to show, and the exact sign test's p.
    many = paired_bootstrap([0.2] * 12, [0.4] * 12)
    assert many["low"] is None and many["p"] == pytest.approx(2 * 0.5**12)
    assert not many["too_few"]


def test_report_of_four_french_questions_says_too_few_items(db_path):
    from engine.french.dataset import ensure_sample as french_sample

    store = Store(db_path)
    dataset = french_sample(store)["dataset"]
    keys = [str(i["id"]) for i in store.items(dataset)][:4]
    ids = []
    for hamming in ([0.5, 0.2, 0.4, 0.6], [0.7, 0.4, 0.6, 0.8]):
        run_id = store.start_run("french", dataset, "m", {"method": "generate"}, n_total=4)
        for key, h in zip(keys, hamming, strict=True):
            scored = [Scored("french.options", 1, {"hamming": h, "exact": 0, "correct": False})]
            store.add_answer(run_id, key, response="a", chosen="a", gold="b", scores=scored)
        store.finish_run(run_id, {"hamming": 100 * sum(hamming) / 4})
        ids.append(str(run_id))
    out = invoke(db_path, "report", *ids)
    assert out.exit_code == 0, out.output
    assert "[20.0, 20.0]" not in out.output
    line = next(x for x in out.output.splitlines() if x.strip().startswith(f"#{ids[0]}   #"))
    assert line.rstrip().endswith(f"20.0 [{TOO_FEW}]   {TOO_FEW}")


# -- comparing runs ------------------------------------------------------------------------


def test_paired_difference_and_mcnemar_against_a_hand_computed_case(store):
    dataset = ensure_sample(store)
    a = [True] * 9 + [False] * 5  # 9 of 14 right
    b = [True, False, False, False, True, False, True, False, False] + [True, False] * 2 + [False]
    first, second = stored_run(store, dataset, "big", a), stored_run(store, dataset, "small", b)
    result = compare_runs(store, [second, first])
    assert result["best"] == first and result["items"] == {
        "shared": 14,
        "by_run": {str(second): 14, str(first): 14},
        "different": False,
    }
    rows = {r["run_id"]: r for r in result["rows"]}
    assert rows[first]["paired"] is None and rows[first]["best"]
    paired = rows[second]["paired"]["accuracy"]
    only_best = sum(1 for x, y in zip(a, b, strict=True) if x and not y)  # 6
    only_this = sum(1 for x, y in zip(a, b, strict=True) if y and not x)  # 2
    assert (paired["only_a"], paired["only_b"]) == (only_best, only_this) == (6, 2)
    assert paired["test"] == "McNemar" and paired["vs"] == first
    assert paired["p"] == pytest.approx(hand_mcnemar(6, 2)) == pytest.approx(74 / 256)
    assert paired["diff"] == pytest.approx(100 * (sum(b) - sum(a)) / 14)
    # Newcombe's interval (method 10): 3 right in both, 6 in the best only, 2 in this only.
    expected = tuple(100 * x for x in scipy_newcombe(3, 6, 2, 3))
    assert (paired["low"], paired["high"]) == pytest.approx(expected)
    assert paired["low"] < paired["diff"] < paired["high"] and paired["method"] == "newcombe"
    assert not paired["too_few"]
    score = rows[first]["scores"]["accuracy"]
    assert score["value"] == pytest.approx(100 * 9 / 14) and score["n"] == 14
    assert score["low"] == pytest.approx(100 * 0.3880, abs=0.05)  # Wilson 9/14
    text = format_compare(result)
    assert "best" in text and f"{74 / 256:.3g} (McNemar)" in text


def test_a_model_not_above_chance_is_never_best(store):
    """The reproduction: a model whose replies echo the option list scored 16.7% and was
    ranked best. Chance (20% of five options) is each run's; a model is best only above it."""
    from scipy.stats import binomtest

    dataset = ensure_sample(store)
    echoing = stored_run(store, dataset, "echoing", [True] * 3 + [False] * 11)
    silent = stored_run(store, dataset, "silent", [True] + [False] * 13)
    for run_id, shares in ((echoing, {"echo": 78.6}), (silent, {"empty": 50.0})):
        summary = {**store.run(run_id)["summary"], "chance": {"accuracy": 20.0}}
        store.update_run(run_id, summary=summary | {"no_answer": shares, "cut_off": 64.3})
    result = compare_runs(store, [echoing, silent])
    assert result["best"] is None and result["reference"] == echoing
    row = next(r for r in result["rows"] if r["run_id"] == echoing)
    expected = binomtest(3, 14, 0.2, alternative="greater").pvalue
    assert row["chance"] == {
        "metric": "accuracy", "level": 20.0, "p": round(expected, 4), "above": False
    }  # fmt: skip
    assert not row["best"] and row["no_answer"] == {"echo": 78.6} and row["cut_off"] == 64.3
    text = format_compare(result)
    assert "No model is above chance: none is best." in text and "best " not in text
    assert "lists the options without choosing one 78.6%" in text
    assert "not above (p " in text and " ref " in text
    # A model well above chance is best; the others are compared with it.
    knowing = stored_run(store, dataset, "knowing", [True] * 10 + [False] * 4)
    summary = store.run(knowing)["summary"] | {"chance": {"accuracy": 20.0}}
    store.update_run(knowing, summary=summary)
    result = compare_runs(store, [echoing, silent, knowing])
    assert result["best"] == knowing
    assert next(r for r in result["rows"] if r["best"])["chance"]["above"]


def test_french_runs_are_tested_against_chance_on_their_exact_matches(db_path):
    from scipy.stats import binomtest

    from engine.french.dataset import ensure_sample as french_sample

    store = Store(db_path)
    dataset = french_sample(store)["dataset"]
    keys = [str(i["id"]) for i in store.items(dataset)][:4]
    ids = []
    for exact in ([1, 0, 0, 0], [0, 0, 0, 0]):
        run_id = store.start_run("french", dataset, "m", {"method": "generate"}, n_total=4)
        for key, e in zip(keys, exact, strict=True):
            values = {"hamming": 0.5 + e / 2, "exact": bool(e), "correct": bool(e)}
            store.add_answer(run_id, key, response="a", chosen="a", gold="b",
                             scores=[Scored("french.options", 1, values)])  # fmt: skip
        chance = {"hamming": 29.08, "emr": 3.23, "accuracy": 3.23}
        store.finish_run(run_id, {"hamming": 50.0 + 50 * sum(exact) / 4, "chance": chance})
        ids.append(run_id)
    result = compare_runs(store, ids)
    top = next(r for r in result["rows"] if r["run_id"] == ids[0])
    p = binomtest(1, 4, 0.0323, alternative="greater").pvalue
    assert top["chance"]["metric"] == "emr" and top["chance"]["p"] == round(p, 4)
    assert result["chance"] == 29.08 and result["best"] is None  # p 0.12: not above
    assert "29.1% hamming score (3.2% exact match ratio)" in format_compare(result)


def test_runs_on_different_items_are_compared_on_the_shared_ones(store):
    dataset = ensure_sample(store)
    whole = stored_run(store, dataset, "whole", [True] * 14)
    part = stored_run(store, dataset, "part", [False] * 6)
    result = compare_runs(store, [whole, part])
    assert result["items"]["shared"] == 6 and result["items"]["different"]
    assert any("cover different items" in n for n in result["notes"])
    paired = next(r for r in result["rows"] if r["run_id"] == part)["paired"]["accuracy"]
    assert paired["n"] == 6 and paired["diff"] == -100.0
    # McNemar's exact p and Newcombe's interval hold for any n: 6 right in the first only.
    assert paired["p"] == pytest.approx(2 / 64) and not paired["too_few"]
    expected = tuple(100 * x for x in scipy_newcombe(0, 6, 0, 0))
    assert (paired["low"], paired["high"]) == pytest.approx(expected)
    # A bootstrap (the Hamming score, ROUGE…) needs MIN_ITEMS: from 6 it gives none.
    rouge = next(r for r in result["rows"] if r["run_id"] == part)["scores"]["rouge1"]
    assert MIN_ITEMS > 6 and rouge["too_few"] and rouge["low"] is None
    assert f"0.200 [{TOO_FEW}]" in format_compare(result)


def test_a_persons_run_on_the_same_items_is_a_row(store):
    dataset = ensure_sample(store)
    a = stored_run(store, dataset, "one", [True, False] * 7)
    b = stored_run(store, dataset, "two", [False, True] * 7)
    you = stored_run(store, dataset, "you", [True] * 14, runner="person")
    rows = compare_runs(store, [a, b])["rows"]
    assert [r["run_id"] for r in rows] == [a, b, you]
    assert rows[2]["model"] == "person" and rows[2]["paired"]["accuracy"]["diff"] > 0
    assert [r["run_id"] for r in compare_runs(store, [a, b], people=False)["rows"]] == [a, b]


def test_runs_that_cannot_be_compared_say_why_in_one_line(db_path):
    store = Store(db_path)
    one = stored_run(store, ensure_sample(store), "one", [True] * 3)
    out = invoke(db_path, "runs", "compare", str(one))
    assert out.exit_code == 1 and out.output == "Error: give at least two runs to compare\n"
    out = invoke(db_path, "runs", "compare", str(one), "999")
    assert out.exit_code == 1 and out.output == "Error: no run with id 999\n"


def test_the_run_loop_records_what_the_model_cost(store, scripted_pool):
    dataset = ensure_sample(store)
    pool = scripted_pool(ScriptedModel("writer", replies="答案：B\n解析：抗凝药。"))
    settings = {"model": "writer", "method": "generate", "limit": 3, "max_tokens": 24}
    cancel = Cancel()
    stop = lambda item, answer: cancel.set()  # noqa: E731 - after the first answer
    first = run(store, "exam", dataset, settings, pool=pool, cancel=cancel, on_answer=stop)
    assert first["status"] == "cancelled"
    usage = store.run(first["run_id"])["summary"]["usage"]["writer"]
    assert usage["generations"] == 1 and usage["completion_tokens"] == 2
    assert usage["load_s"] is not None and usage["run_s"] > 0
    assert usage["memory"] == {"ram_peak": None, "gpu": None}  # no process of its own
    # The resumed run adds its session to the first.
    again = run(store, "exam", resume=first["run_id"], pool=pool)
    usage = store.run(again["run_id"])["summary"]["usage"]["writer"]
    assert again["status"] == "finished" and usage["generations"] == 3
    assert usage["completion_tokens"] == 3 * 2


def thirty_items(store: Store) -> str:
    """A data set of 30 exam questions (five options, A right)."""
    options = {k: f"option {k}" for k in "ABCDE"}
    items = [{"id": f"q{i}", "question": f"Question {i}?", "options": options, "answer": "A"}
             for i in range(30)]  # fmt: skip
    store.add_dataset("thirty", "exam", items)
    return "thirty"


def test_paired_interval_of_runs_compare_json_is_newcombes(db_path):
    # 30 items, 5 disagreements (4 right in the first run only, 1 in the second only).
    store = Store(db_path)
    dataset = thirty_items(store)
    first = stored_run(store, dataset, "big", [True] * 14 + [False] * 16)
    second = stored_run(store, dataset, "small", [True] * 10 + [False] * 4 + [True] + [False] * 15)
    out = invoke(db_path, "runs", "compare", str(first), str(second), "--json")
    assert out.exit_code == 0, out.output
    result = json.loads(out.output[out.output.index("{") :])
    paired = next(r for r in result["rows"] if r["run_id"] == second)["paired"]["accuracy"]
    assert set(paired) >= {"low", "high", "p", "test", "method"}
    assert (paired["only_a"], paired["only_b"], paired["test"]) == (4, 1, "McNemar")
    expected = tuple(100 * x for x in scipy_newcombe(10, 4, 1, 15))
    assert (paired["low"], paired["high"]) == pytest.approx(expected)
    assert paired["p"] == pytest.approx(hand_mcnemar(4, 1)) and paired["adjusted"] is None
    assert any("Newcombe" in n for n in result["notes"])
    assert any("peak, which includes each slot's cache" in n for n in result["notes"])


def test_paired_interval_p_of_three_models_against_the_best_is_holm_adjusted(store):
    dataset = thirty_items(store)
    best = stored_run(store, dataset, "best", [True] * 20 + [False] * 10)
    near = stored_run(store, dataset, "near", [True] * 18 + [False] * 12)
    far = stored_run(store, dataset, "far", [True] * 8 + [False] * 22)
    result = compare_runs(store, [best, near, far])
    rows = {r["run_id"]: r["paired"] for r in result["rows"]}
    raw = [hand_mcnemar(2, 0), hand_mcnemar(12, 0)]
    for run_id, expected in zip((near, far), holm(raw), strict=True):
        accuracy = rows[run_id]["accuracy"]
        assert accuracy["adjusted"] == "holm" and accuracy["p"] == pytest.approx(expected)
    assert rows[far]["accuracy"]["p_unadjusted"] == pytest.approx(raw[1])
    assert rows[far]["accuracy"]["p"] == pytest.approx(2 * raw[1])  # the smaller, times two
    text = format_compare(result)
    assert "(McNemar, Holm)" in text and "Holm's step-down adjustment" in text


def test_speed_is_named_for_what_it_is_and_each_run_says_how_it_was_made(store):
    dataset = ensure_sample(store)
    run_id = stored_run(store, dataset, "smollm2", [True] * 14)
    other = stored_run(store, dataset, "gemma", [False] * 14)
    usage = {
        "smollm2": {"tokens_per_s": 6.0, "first_token_s": 15.2, "decode_alone_per_s": 71.3,
                    "first_token_alone_s": 0.41, "throughput_per_s": 38.5, "slots": 8,
                    "slot_wait_s": 9.87, "file": "smol.gguf", "quantization": "Q4_1",
                    "n_threads": 2, "flash_attn": False},
    }  # fmt: skip
    settings = {"method": "generate", "seed": 7, "temperature": 0.0, "prompt_version": 2}
    store.update_run(run_id, summary={"accuracy": 100.0, "usage": usage}, settings=settings)
    for i, key in enumerate(k for k in store.items_by_key(dataset) or {}):
        rule = "cue" if i < 10 else "none"
        store.add_answer(run_id, key, response="A", chosen="A", gold="A", extra={"rule": rule},
                         scores=[Scored("exam.letter", 1, {"correct": True})])  # fmt: skip
    result = compare_runs(store, [run_id, other])
    row = next(r for r in result["rows"] if r["run_id"] == run_id)
    assert (row["decode_alone_per_s"], row["first_token_alone_s"]) == (71.3, 0.41)
    assert (row["throughput_per_s"], row["slots"], row["slot_wait_s"]) == (38.5, 8, 9.87)
    made = row["made"]
    assert (made["file"], made["quantization"], made["slots"], made["threads"]) == (
        "smol.gguf", "Q4_1", 8, 2)  # fmt: skip
    assert (made["seed"], made["temperature"], made["prompt_version"]) == (7, 0.0, 2)
    assert made["flash_attn"] is False and made["rules"] == {"cue": 10, "none": 4}
    text = format_compare(result)
    header = next(line for line in text.splitlines() if line.startswith("Run"))
    for name in ("Decode alone (tok/s)", "First token alone (s)", "Throughput (tok/s)",
                 "Slot wait (s)"):  # fmt: skip
        assert name in header
    assert "tok/s  First token (s)" not in header  # the shared per-answer speed is not shown
    line = next(x for x in text.splitlines() if x.startswith(f"#{run_id} "))
    assert "71.3" in line and "0.41" in line and "38.5" in line and "9.87" in line
    flat = " ".join(text.split())
    assert f"#{run_id} smollm2: file smol.gguf; quantization Q4_1; slots 8;" in flat
    assert "flash attention off; threads 2; seed 7; temperature 0.0; prompt version 2;" in flat
    assert "answers found by rule cue 10, none 4" in flat


def test_paired_interval_of_a_trial_set_resamples_whole_items(store):
    # Three trials of one model are one row, not three models: each item's score its mean
    # over the trials, the interval and p a bootstrap over items with all their trials.
    dataset = ensure_sample(store)
    patterns = [[True] * 10 + [False] * 4, [True] * 8 + [False] * 6, [True] * 12 + [False] * 2]
    trials = []
    for k, rights in enumerate(patterns, start=1):
        tags = {"trial_set": "feedbeef", "trial": k, "trials": 3, "temperature": 0.7}
        trials.append(stored_run(store, dataset, "sampled", rights))
        run = store.run(trials[-1])
        store.update_run(trials[-1], settings={**(run["settings"] or {}), **tags})
    other = stored_run(store, dataset, "greedy", [True] * 5 + [False] * 9)
    result = compare_runs(store, [*trials, other])
    assert [r["run_id"] for r in result["rows"]] == [trials[0], other]
    row = result["rows"][0]
    assert row["trial_runs"] == trials and result["best"] == trials[0]
    per_item = [100 * sum(p[i] for p in patterns) / 3 for i in range(14)]
    assert row["scores"]["accuracy"]["value"] == pytest.approx(sum(per_item) / 14)
    paired = result["rows"][1]["paired"]["accuracy"]
    assert paired["test"] == "cluster bootstrap" == paired["method"]
    hand = paired_bootstrap(per_item, [100.0] * 5 + [0.0] * 9)
    assert (paired["low"], paired["high"], paired["p"]) == pytest.approx(
        (hand["low"], hand["high"], hand["p"]))  # fmt: skip
    text = format_compare(result)
    assert f"#{trials[0]} (3 trials)" in text and "(bootstrap by case)" in text
    assert "is a trial set of 3 runs" in " ".join(text.split())


# -- two real models -----------------------------------------------------------------------


@pytest.mark.slow
def test_runs_compare_json_of_smollm2_and_gemma(db_path, tmp_path):
    ids = []
    for model in ("smollm2", "gemma3-270m"):
        out = invoke(db_path, "exam", "run", "--model", model, "--method", "generate",
                     "--max-tokens", "16", "--limit", "5")  # fmt: skip
        assert out.exit_code == 0, out.output
        ids.append(str(Store(db_path).runs()[0]["id"]))
    chart = tmp_path / "size.svg"
    out = invoke(db_path, "runs", "compare", *ids, "--json", "--chart", str(chart))
    assert out.exit_code == 0, out.output
    result = json.loads(out.output[out.output.index("{") :])
    assert result["items"]["shared"] == 5
    for row in result["rows"]:
        assert set(row) >= {"paired", "tokens_per_s", "first_token_s", "memory", "load_s"}
        assert row["tokens_per_s"] > 0 and row["first_token_s"] > 0 and row["load_s"] > 0
        assert row["memory"]["ram_peak"] > row["file_size"] > 0
        assert row["memory"]["gpu"] is not None
    worse = next(r for r in result["rows"] if r["run_id"] != result["reference"])
    assert worse["paired"]["accuracy"]["p"] is not None  # McNemar's exact p
    assert worse["paired"]["rouge1"]["too_few"]  # 5 items: no bootstrap
    assert worse["scores"]["rouge1"]["too_few"] and worse["scores"]["rouge1"]["low"] is None
    assert chart.read_text().startswith("<svg") and size_svg(result["chart"])


def test_consult_compare_of_four_cases_says_too_few_items(db_path):
    from engine.consult.cases.cases import ensure_sample as consult_sample

    store = Store(db_path)
    cases = consult_sample(store)
    ids = []
    for rights in ([True, False, False, True], [True, True, True, True]):
        run_id = store.start_run("consult", cases, "m", {}, n_total=4)
        for i, right in enumerate(rights):
            scored = [Scored("consult.task", 1, {"correct": right})]
            store.add_answer(run_id, f"case-{i}", response="A", chosen="A", gold="A", scores=scored)
        store.finish_run(run_id, {"accuracy": 25.0 * sum(rights)})
        ids.append(str(run_id))
    out = invoke(db_path, "consult", "compare", *ids)
    assert out.exit_code == 0, out.output
    line = next(x for x in out.output.splitlines() if x.startswith("Accuracy"))
    assert line.count(TOO_FEW) == 2  # the interval and p of a bootstrap over 4 cases


def test_readme_example_of_runs_compare_has_the_columns_it_prints(store):
    """The README's `runs compare` example shows the table as the command prints it now."""
    import re
    from pathlib import Path

    dataset = ensure_sample(store)
    runs = [stored_run(store, dataset, m, [True, False, False]) for m in ("smollm2", "gemma")]
    usage = {"decode_alone_per_s": 5.0, "throughput_per_s": 2.0, "slots": 8, "file": "m.gguf"}
    for run_id in runs:
        summary = store.run(run_id)["summary"] | {"chance": {"accuracy": 20.0}, "cut_off": 0.0}
        store.update_run(run_id, summary=summary | {"usage": {"smollm2": usage}})
    text = format_compare(compare_runs(store, runs))
    printed = next(line for line in text.splitlines() if line.startswith("Run "))
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    block = readme.split("medexam runs compare 1 2 --chart size.svg", 1)[1]
    shown = next(line for line in block.splitlines() if line.startswith("Run "))
    assert re.split(r"\s{2,}", shown.strip()) == re.split(r"\s{2,}", printed.strip())
