"""People rate explanations: a blind session over several runs in a seeded order, each rating
stored as it is given and the session resumed where it stopped; the terminal's `medexam rate`;
the report's Table 4 with people's and a judge's rows, and the judge's agreement with people
(or the warning that it was never measured)."""

from __future__ import annotations

import dataclasses

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.cli.rate import show
from engine.core.runs import run
from engine.core.scoring import Scored
from engine.exam.dataset import ensure_sample, import_file
from engine.exam.responses import import_responses
from engine.models.scripted import ScriptedModel
from engine.ratings.people import MAX_COMMENT, RatingSession
from engine.ratings.perspectives import KEYS, RatingError
from engine.ratings.table import rating_tables
from engine.reports import build_report, render
from engine.store.store import Store


def reasons(request) -> str:
    letter = "BCDAE"[request.number % 5]
    return f"答案：{letter}\n解析：{letter}项正确，因为它的作用机制如此。"


def model_run(store: Store, scripted_pool, name: str, **settings) -> int:
    pool = scripted_pool(ScriptedModel(name, replies=reasons))
    found = run(
        store, "exam", ensure_sample(store), {"model": name, "limit": 5, **settings}, pool=pool
    )
    return int(found["run_id"])


def five(*values: int) -> dict[str, int]:
    return dict(zip(KEYS, values, strict=True))


def test_a_blind_session_over_two_runs_resumes_where_it_stopped(store, scripted_pool):
    a, b = model_run(store, scripted_pool, "model-a"), model_run(store, scripted_pool, "model-b")
    session = RatingSession(store, [a, b], "dr-li", seed=3)
    assert session.total == 10 and session.done == 0
    order = [e.key for e in session.entries]
    assert {r for r, _ in order} == {a, b} and order != sorted(order)  # mixed, not run by run
    assert [e.key for e in RatingSession(store, [a, b], "dr-li", seed=3).entries] == order
    assert [e.key for e in RatingSession(store, [a, b], "dr-li", seed=4).entries] != order
    first, second, third = session.pending()[:3]
    assert "model-a" not in repr(first.explained) and "model-b" not in repr(first.explained)
    session.rate(first, five(5, 4, 3, 2, 1), comment="cites the wrong enzyme")
    session.skip(second)
    with pytest.raises(RatingError, match="Support needs a rating from 1 to 5"):
        session.rate(third, {**five(5, 4, 3, 2, 1), "support": 6})
    again = RatingSession(store, [a, b], "dr-li", seed=3)
    assert again.done == 2 and again.next() == third
    assert (again.rated, again.skipped) == (1, 1)
    assert again.given(first) == {
        **five(5, 4, 3, 2, 1),
        "rated": 1,
        "comment": "cites the wrong enzyme",
    }
    assert RatingSession(store, [a, b], "dr-wang", seed=3).done == 0  # each rater apart
    assert store.answers(first.run_id)[0]["scores"].keys().isdisjoint(KEYS)


def test_runs_without_explanations_are_refused_in_one_line(store, scripted_pool):
    letters = model_run(store, scripted_pool, "model-a", method="logprob")
    with pytest.raises(RatingError, match="no explanations to rate"):
        RatingSession(store, [letters], "dr-li")
    with pytest.raises(RatingError, match="cannot name a rater"):
        RatingSession(store, [model_run(store, scripted_pool, "model-b")], "  !bad")


def test_rating_in_the_terminal_stores_each_answer_and_goes_on(store, scripted_pool):
    run_id = model_run(store, scripted_pool, "model-a")
    runner = CliRunner()
    args = ["--db", store.path, "rate", str(run_id), "--rater", "dr-li"]
    typed = "45342\nclear\n5\n7\n5\n4\n4\n3\n\ns\n\nq\n"
    out = runner.invoke(cli, args, input=typed)
    assert out.exit_code == 0, out.output
    assert "a whole number from 1 to 5" in out.output  # the 7 was refused and asked again
    assert "1 rated now" not in out.output and "2 rated now; 3 of 5 done by dr-li" in out.output
    rows = store.rated_rows([run_id], "explanation-rating")
    assert {r["scorer"] for r in rows} == {"explanation-rating@dr-li"}
    out = runner.invoke(cli, args, input="q\n")
    assert "3 already rated by dr-li" in out.output and "Explanation 4 of 5" in out.output


ESCAPES = "\x1b[31mred \x1b]8;;http://x.invalid\x07link\x1b]8;;\x07 \x1b]0;title\x07 \u202eevil"


def test_the_rater_reads_the_answer_with_its_option_and_escapes_escaped(store, scripted_pool):
    def reply(request) -> str:
        return "C" if request.number == 0 else f"答案：B\n解析：{ESCAPES}\n第二行{ESCAPES}"

    pool = scripted_pool(ScriptedModel("model-a", replies=reply))
    done = run(store, "exam", ensure_sample(store), {"model": "model-a", "limit": 3}, pool=pool)
    run_id = int(done["run_id"])
    items = {str(i["id"]): i for i in store.items(ensure_sample(store))}
    out = CliRunner().invoke(cli, ["--db", store.path, "rate", str(run_id)], input="s\n\n" * 3)
    assert out.exit_code == 0, out.output
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in out.output
    assert "\\x1b]8;;http://x.invalid\\x07link" in out.output and "\\u202eevil" in out.output
    shown = [a for a in store.answers(run_id) if a["chosen"] == "B"]
    option_b = items[shown[0]["item_key"]]["options"][1]
    assert f"Answer given: B. {option_b}" in out.output
    gold = items[shown[0]["item_key"]]["answer"]
    assert (
        f"Right answer: {gold}. {items[shown[0]['item_key']]['options']['ABCDE'.index(gold)]}"
        in (out.output)
    )


def test_a_published_response_without_a_letter_says_so(store, shared_data, capsys):
    folder = shared_data / "explaincpe"
    import_file(store, folder / "test.json", "explaincpe", "cpe")
    run_id = import_responses(
        store, folder / "chatgpt_test_responses.json", "cpe", "gpt", "zero_with"
    )
    [entry] = [e for e in RatingSession(store, [run_id], "dr-li").entries if e.item_key == "114"]
    show(entry.explained, 1, 1)
    shown = capsys.readouterr().out
    assert "Answer given: C. 阿奇霉素\n" in shown  # 我认为…是选项C：阿奇霉素
    assert "Right answer: A. 呋喃妥因\n" in shown
    blank = dataclasses.replace(entry.explained, answer="—")
    assert blank.answer_shown == "— (no answer could be read from the reply)"


def test_a_comment_keeps_its_case_drops_controls_and_is_capped(store, scripted_pool):
    run_id = model_run(store, scripted_pool, "model-a")
    long = "x" * (MAX_COMMENT + 1)
    typed = f"45342\n{long}\nCites The WRONG\x00 enzyme\x1b[2J\n45342\n{'y' * MAX_COMMENT}\nq\n"
    out = CliRunner().invoke(cli, ["--db", store.path, "rate", str(run_id)], input=typed)
    assert out.exit_code == 0, out.output
    assert f"a comment holds at most {MAX_COMMENT} characters (this one {MAX_COMMENT + 1})" in (
        out.output
    )
    comments = sorted(
        r["explanation"]
        for r in store.rated_rows([run_id], "explanation-rating")
        if r["explanation"]
    )
    assert comments == ["Cites The WRONG enzyme[2J", "y" * MAX_COMMENT]
    session = RatingSession(store, [run_id], "dr-wang")
    with pytest.raises(RatingError, match="a comment holds at most"):
        session.rate(session.entries[0], five(5, 4, 3, 2, 1), comment=long)
    assert session.done == 0  # nothing stored


def rate_all(store: Store, run_id: int, rater: str, values: list[tuple[int, ...]]) -> None:
    session = RatingSession(store, [run_id], rater)
    for entry in session.entries:
        session.rate(entry, five(*values[int(entry.item_key[-2:]) - 1]))


def judge_all(store: Store, run_id: int, judge: str, values: list[tuple[int, ...]]) -> None:
    for n, answer in enumerate(store.answers(run_id)):
        scored = Scored(f"explanation-judge@{judge}", 1, {**five(*values[n]), "parsed": 1})
        store.add_scores(run_id, answer["item_key"], [scored])


PEOPLE = [(5, 5, 4, 4, 3), (4, 4, 2, 3, 3), (3, 2, 1, 2, 2), (5, 4, 4, 5, 4), (2, 3, 1, 1, 1)]
JUDGE = [(5, 5, 5, 4, 4), (5, 4, 3, 3, 3), (4, 3, 2, 2, 3), (5, 5, 4, 5, 4), (3, 3, 2, 2, 2)]


def test_the_report_prints_table_4_and_the_judges_agreement_with_people(store, scripted_pool):
    run_id = model_run(store, scripted_pool, "model-a")
    rate_all(store, run_id, "dr-li", PEOPLE)
    judge_all(store, run_id, "big-judge", JUDGE)
    judge_all(store, run_id, "unchecked", JUDGE)
    store.db.execute(
        "DELETE FROM scores WHERE scorer = 'explanation-rating@dr-li' AND item_key != 'sample-01'"
    )
    store.db.conn.commit()
    rate_all(store, run_id, "dr-li", PEOPLE)  # all five rated again: sample-01 kept
    tables = {t["title"]: t for t in rating_tables(store, [run_id])}
    main = tables["Explanation ratings (ExplainCPE Table 4 layout)"]
    people = next(r for r in main["rows"] if r[0] == "People")
    assert people[4] == 5
    assert people[5]["value"] == pytest.approx(sum(p[0] for p in PEOPLE) / 5)
    assert people[9]["value"] == pytest.approx(sum(p[4] for p in PEOPLE) / 5)
    judge = next(r for r in main["rows"] if r[0] == "Judge big-judge")
    assert judge[7]["value"] == pytest.approx(sum(j[2] for j in JUDGE) / 5)
    agreement = tables["How far the judges can be trusted: agreement with people"]
    rows = {(r[0], r[1]): r for r in agreement["rows"]}
    bias = rows[("Judge big-judge vs people", "Correctness")][5]["value"]
    assert bias == pytest.approx(sum(j[2] - p[2] for j, p in zip(JUDGE, PEOPLE, strict=True)) / 5)
    assert rows[("Judge big-judge vs people", "Well-formed")][2] == 5
    text = render(build_report(store, [run_id]), "text")
    assert "Explanation ratings (ExplainCPE Table 4 layout)" in text
    assert "Explanation ratings by question type" in text and "药品知识题" in text
    for fmt in ("md", "html"):
        assert "Weighted κ" in render(build_report(store, [run_id]), fmt)


def test_a_judge_never_checked_against_people_is_flagged(store, scripted_pool):
    run_id = model_run(store, scripted_pool, "model-a")
    judge_all(store, run_id, "lonely", JUDGE)
    tables = {t["title"]: t for t in rating_tables(store, [run_id])}
    main = tables["Explanation ratings (ExplainCPE Table 4 layout)"]
    assert main["rows"][0][0] == "Judge lonely (unchecked)"
    notes = tables["How far the judges can be trusted: agreement with people"]["notes"]
    assert any("lonely's agreement with people was never measured" in n for n in notes)
    assert rating_tables(store, [model_run(store, scripted_pool, "model-b")]) == []
