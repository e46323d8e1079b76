"""Two runs item by item (`medexam runs diff A B`): answers paired by item in run A's
order, the filters flipped / no-answer / cut-off, text and JSON, runs of different data sets
refused in one line, and the reply's stop reason as the run loop stores it."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.core.runs import run
from engine.core.scoring import Scored
from engine.errors import UserError
from engine.exam.dataset import ensure_sample
from engine.models.scripted import ScriptedModel
from engine.reports.diff import diff_runs, format_diff
from engine.store.store import Store

# Per item: (letter or None, right, finish reason)
A = [("A", True, "stop"), ("B", False, "stop"), (None, False, "length"), ("C", True, "stop")]
B = [("A", True, "stop"), ("C", True, "stop"), ("D", False, "stop"), ("B", False, "length")]
# Why A's third reply gives no answer, in the words of `runs compare`'s notes.
CUT_WORDS = "no answer: cut off by the token limit before an answer"


def stored_run(store: Store, dataset: str, model: str, answers, order=None) -> int:
    keys = [str(i["id"]) for i in store.items(dataset)]
    run_id = store.start_run("exam", dataset, model, {"method": "generate"})
    for place, n in enumerate(order or range(len(answers))):
        letter, right, finish = answers[n]
        extra = {"method": "generate", "rule": "答案" if letter else None,
                 "finish_reason": finish, **({} if letter else {"no_answer": "cut_off"})}  # fmt: skip
        reply = f"答案：{letter}\n<b>解析</b>" if letter else "解析：\x1b[31m没有字母"
        scored = [Scored("exam.letter", 1, {"correct": right}),
                  Scored("exam.rouge", 1, {"rouge1": 0.25})]  # fmt: skip
        store.add_answer(run_id, keys[n], response=reply, chosen=letter, gold="A",
                         scores=scored, extra=extra, position=place)  # fmt: skip
    store.finish_run(run_id, {})
    return run_id


@pytest.fixture
def pair(store: Store) -> tuple[Store, int, int]:
    dataset = ensure_sample(store)
    return (
        store,
        stored_run(store, dataset, "model-a", A),
        stored_run(store, dataset, "model-b", B, order=[3, 2, 1, 0]),
    )


def test_runs_are_paired_by_item_and_filtered(pair) -> None:
    store, a, b = pair
    found = diff_runs(store, a, b)
    assert found.paired == 4 and [i.number for i in found.items] == [1, 2, 3, 4]
    second = found.items[1]
    assert (second.a.chosen, second.b.chosen, second.a.correct, second.b.correct) == (
        "B", "C", 0, 1)  # fmt: skip
    assert second.a.rule == "答案" and second.a.scores == {"rouge1": 0.25}
    assert found.counts == {"flipped": 2, "no_answer": 1, "cut_off": 2,
                            "right_a_only": 1, "right_b_only": 1}  # fmt: skip
    assert [i.number for i in diff_runs(store, a, b, "flipped").items] == [2, 4]
    assert [i.number for i in diff_runs(store, a, b, "no-answer").items] == [3]
    assert [i.number for i in diff_runs(store, a, b, "cut-off").items] == [3, 4]
    assert [i.number for i in diff_runs(store, b, a, "flipped").items] == [1, 3]  # B's order


def test_runs_diff_only_flipped_in_text_and_json(pair) -> None:
    store, a, b = pair
    args = ["--db", store.path, "runs", "diff", str(a), str(b), "--only", "flipped"]
    out = CliRunner().invoke(cli, args)
    assert out.exit_code == 0, out.output
    assert "4 items both answered; 2 flipped (1 right only in" in out.output
    assert "Showing the 2 flipped items." in out.output
    assert "#2 " in out.output and "#4 " in out.output and "#3 " not in out.output
    assert f"A #{a} model-a: B · wrong · rule 答案 · stop stop · rouge1 0.25" in out.output
    assert f"B #{b} model-b: B · wrong · rule 答案 · stop length" in out.output
    assert "    | 答案：C" in out.output
    cut = CliRunner().invoke(cli, [*args[:-1], "no-answer"]).output
    assert f"A #{a} model-a: {CUT_WORDS} · wrong · rule – · stop length" in cut
    found = json.loads(CliRunner().invoke(cli, [*args, "--json"]).output)
    assert [i["number"] for i in found["items"]] == [2, 4] and found["only"] == "flipped"
    assert found["items"][0]["b"]["reply"].startswith("答案：C") and found["items"][0]["flipped"]
    # One spelling for one thing: the counts' keys are the items' (and a run summary's).
    assert {"no_answer", "cut_off"} <= set(found["counts"]) <= set(found["items"][0]) | {
        "right_a_only", "right_b_only"}  # fmt: skip
    everything = CliRunner().invoke(cli, args[:-2])
    assert "\x1b" not in everything.output and "\\x1b[31m" in everything.output


def test_runs_of_different_data_sets_are_refused_in_one_line(pair) -> None:
    store, a, _b = pair
    store.add_dataset("other", "exam", [{"id": "x1", "question": "?", "options": {"A": "a"},
                                         "answer": "A"}])  # fmt: skip
    other = stored_run(store, "other", "model-c", A[:1])
    out = CliRunner().invoke(cli, ["--db", store.path, "runs", "diff", str(a), str(other)])
    assert out.exit_code == 1 and out.output.count("\n") == 1
    assert f"runs {a} and {other} answered different data sets" in out.output
    with pytest.raises(UserError, match="name two different runs"):
        diff_runs(store, a, a)
    with pytest.raises(UserError, match="unknown filter"):
        diff_runs(store, a, other, "nothing")


def test_a_reply_cut_at_the_token_limit_is_found_by_its_stored_stop(store, scripted_pool):
    dataset = ensure_sample(store)
    ids = []
    for name, tokens in (("short", 3), ("long", 64)):
        pool = scripted_pool(ScriptedModel(name, replies="答案：A 解析：因为 它 的 作用 机制 如此"))
        settings = {"model": name, "method": "generate", "limit": 2, "max_tokens": tokens}
        ids.append(int(run(store, "exam", dataset, settings, pool=pool)["run_id"]))
    found = diff_runs(store, *ids, only="cut-off")
    assert len(found.items) == 2 and {i.a.finish for i in found.items} == {"length"}
    assert {i.b.finish for i in found.items} == {"stop"}
    assert "stop length" in format_diff(found)


def test_the_html_report_of_a_comparison_carries_the_replies_collapsed(pair) -> None:
    from engine.reports import build_report, render

    store, a, b = pair
    report = build_report(store, [a, b])
    sides = report["sections"][0]["sides"]
    assert [(s["a"]["id"], s["b"]["id"], s["counts"]["flipped"]) for s in sides] == [(a, b, 2)]
    page = render(report, "html")
    assert "<details><summary>Items side by side: A #" in page
    assert "&lt;b&gt;解析&lt;/b&gt;" in page and "<b>解析</b>" not in page
    assert "\x1b" not in page and "解析：\\x1b[31m没有字母" in page
    assert f"<summary>{CUT_WORDS} · wrong · rule – · stop length</summary>" in page
    assert "Items side by side" not in render(report, "text")
