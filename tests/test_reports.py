"""Reports of real runs of every activity in the papers' layouts: the runs told apart by
their labels, 95% intervals and McNemar checked against hand-computed values, an HTML page
that loads nothing from outside, CSV that reads back, and ``medexam report``."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
import report_fixtures
from click.testing import CliRunner

from engine.cli import cli
from engine.exam.reliability import reliability_bins
from engine.reports import build_report, render, run_label
from engine.reports.stats import mcnemar, paired_bootstrap, wilson_interval

runs = report_fixtures.runs
Z = 1.959963984540054


def hand_wilson(k: int, n: int) -> tuple[float, float]:
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return centre - half, centre + half


def hand_mcnemar_exact(b: int, c: int) -> float:
    n = b + c
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


# -- statistics, by hand -------------------------------------------------------------------


def test_wilson_interval_matches_the_formula():
    assert wilson_interval(2, 4) == pytest.approx((0.1500, 0.8500), abs=1e-4)
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    for k, n in [(3, 7), (57, 190), (190, 190)]:
        assert wilson_interval(k, n) == pytest.approx(hand_wilson(k, n), abs=1e-9)
    assert wilson_interval(0, 0) is None


def test_mcnemar_exact_and_chi_square_by_hand():
    m = mcnemar(1, 5)
    assert m["p_exact"] == pytest.approx(14 / 64)  # 2 * (C(6,0) + C(6,1)) / 2^6
    assert m["chi2"] == pytest.approx(1.5)  # (|1 - 5| - 1)^2 / 6
    assert m["p_chi2"] == pytest.approx(math.erfc(math.sqrt(1.5 / 2)))
    assert mcnemar(0, 6)["p_exact"] == pytest.approx(2 / 64)
    assert mcnemar(4, 4)["p_exact"] == 1.0
    none = {"only_a": 0, "only_b": 0, "p_exact": 1.0, "chi2": None, "p_chi2": None}
    assert mcnemar(0, 0) == none


def test_paired_bootstrap_and_reliability_bins():
    same = paired_bootstrap([0.2, 0.4, 0.6] * 4, [0.2, 0.4, 0.6] * 4)
    assert same["diff"] == 0 and same["p"] == 1.0
    a = [0.1, 0.2, 0.3, 0.2, 0.1, 0.25, 0.3, 0.15, 0.2, 0.1]
    moved = [0.3, 0.2, 0.25, 0.35, 0.3, 0.2, 0.3, 0.25, 0.3, 0.2]
    b = [x + d for x, d in zip(a, moved, strict=True)]
    better = paired_bootstrap(a, b)
    assert better["diff"] == pytest.approx(0.265)
    assert 0.2 < better["low"] < better["diff"] < better["high"] < 0.33
    assert better["p"] < 0.01
    assert paired_bootstrap(a, b) == better  # seeded: the same report every time
    bins = reliability_bins([0.95, 0.91, 0.15, 0.5], [True, False, False, True])
    assert [(b["n"], b["accuracy"]) for b in bins] == [(1, 0.0), (1, 1.0), (2, 0.5)]
    assert bins[-1]["confidence"] == pytest.approx(0.93)


def test_a_numeric_column_with_no_values_stays_right_aligned():
    table = {
        "title": "Scores",
        "columns": ["Run", "Model", "Note", "Own passage retrieved (%)", "Bootstrap p"],
        "rows": [["#1", "smollm2", None, None, None], ["#2", "gemma", None, None, None]],
        "notes": [],
    }
    report = {"title": "T", "created": "today", "overview": table, "sections": []}
    md = render(report, "md").splitlines()
    assert "|---|---|---|---:|---:|" in md
    text = render(report, "text")
    header = next(line for line in text.splitlines() if "Bootstrap p" in line)
    row = next(line for line in text.splitlines() if "smollm2" in line)
    assert row.rstrip().endswith("–") and header.rstrip().endswith("p")
    assert len(row.rstrip()) == len(header.rstrip())  # the dash sits under the header's end


# -- labels --------------------------------------------------------------------------------


@pytest.mark.slow
def test_labels_tell_every_run_apart(runs):
    store, ids = runs
    labels = {name: run_label(store.run(i)) for name, i in ids.items()}
    assert labels["logprob"] == "logprob · 0-shot · zh · instr"
    assert labels["logprob-1shot"] == "logprob · 1-shot · zh · instr"
    assert labels["generate"] == "generate · 0-shot · zh · instr · max tokens 24"
    assert labels["upper"] == "upper bound · solver smollm2"
    assert labels["doctor"] == "doctor smollm2 · patient paper/smollm2 · solver smollm2 · 1 turn"
    assert labels["french"] == "no passages"
    assert labels["french-bm25"] == "bm25 k=1 · french-sample"
    assert len(set(labels.values())) == len(labels)


# -- reports of real runs ------------------------------------------------------------------


@pytest.mark.slow
def test_exam_report_has_the_papers_tables_with_hand_checked_figures(runs):
    store, ids = runs
    a, b, g = ids["logprob"], ids["logprob-1shot"], ids["generate"]
    report = build_report(store, [a, b, g])
    (section,) = report["sections"]
    titles = [t["title"] for t in section["tables"]]
    assert titles[0].startswith("Accuracy and explanation ROUGE (ExplainCPE Table 8")
    assert any("(ExplainCPE Table 5 layout)" in t for t in titles)
    assert any(t.startswith("Calibration") for t in titles)
    main = section["tables"][0]
    rows = {r[0]: dict(zip(main["columns"], r, strict=True)) for r in main["rows"]}
    for run_id in (a, b, g):
        answers = store.answers(run_id)
        k, n = sum(bool(x["correct"]) for x in answers), store.run(run_id)["n_total"]
        cell = rows[f"#{run_id}"]["Accuracy (%)"]
        assert cell["value"] == pytest.approx(100 * k / n)
        low, high = hand_wilson(k, n)
        assert (cell["low"], cell["high"]) == pytest.approx((100 * low, 100 * high), abs=1e-6)
    assert rows[f"#{g}"]["ROUGE-1"] == store.run(g)["summary"]["rouge1"]
    assert rows[f"#{a}"]["ROUGE-1"] is None
    # The paired test of the two logprob runs, from their stored answers by hand.
    pair = next(c for c in section["comparisons"] if (c["a"], c["b"]) == (a, b))
    ans_a = {x["item_key"]: x for x in store.answers(a)}
    ans_b = {x["item_key"]: x for x in store.answers(b)}
    only_a = sum(1 for k in ans_a if ans_a[k]["correct"] and not ans_b[k]["correct"])
    only_b = sum(1 for k in ans_a if ans_b[k]["correct"] and not ans_a[k]["correct"])
    assert (pair["mcnemar"]["only_a"], pair["mcnemar"]["only_b"]) == (only_a, only_b)
    assert pair["mcnemar"]["p_exact"] == pytest.approx(hand_mcnemar_exact(only_a, only_b))
    differ = sum(1 for k in ans_a if ans_a[k]["chosen"] != ans_b[k]["chosen"])
    assert pair["n"] == 3 and pair["different_answers"] == differ
    reliability = [c for c in section["charts"] if c["kind"] == "reliability"]
    assert {s["run_id"] for s in reliability[0]["series"]} == {a, b}
    assert sum(x["n"] for x in reliability[0]["series"][0]["bins"]) == 3


@pytest.mark.slow
def test_consult_and_french_layouts(runs):
    store, ids = runs
    chosen = ["doctor", "lower", "upper", "french", "french-bm25"]
    report = build_report(store, [ids[name] for name in chosen])
    consult, french = report["sections"]
    assert (consult["activity"], french["activity"]) == ("consult", "french")
    table2 = consult["tables"][0]
    rpf = ["R", "P", "F1"]
    assert table2["columns"][4:10] == [f"{who} {m}" for who in ("Patient", "Doctor") for m in rpf]
    # Upper bound first, lower bound last, as in the paper.
    assert [r[0] for r in table2["rows"]] == [f"#{ids[k]}" for k in ("upper", "doctor", "lower")]
    doctor = store.run(ids["doctor"])["summary"]
    keys = [f"{who}_{m}" for who in ("patient", "doctor") for m in ("recall", "precision", "f1")]
    assert table2["rows"][1][4:12] == [doctor[k] for k in [*keys, "avg_length", "avg_turns"]]
    main, by_n = french["tables"][:2]
    assert "Hamming" in main["columns"][5] and by_n["title"].startswith("By number of right")
    hamming = [100 * a["scores"]["hamming"] for a in store.answers(ids["french"])]
    row = next(r for r in main["rows"] if r[0] == f"#{ids['french']}")
    assert row[5]["value"] == pytest.approx(sum(hamming) / len(hamming))
    assert any(t["title"].startswith("Paired comparisons") for t in french["tables"])


class Resources(HTMLParser):
    """Every tag, and every attribute that could fetch something."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.fetches: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        for name, value in attrs:
            fetching = name in ("src", "href", "xlink:href", "srcset", "data", "poster", "action")
            if fetching and value and not value.startswith("#"):
                self.fetches.append(f"{tag} {name}={value}")


@pytest.mark.slow
def test_html_report_is_one_page_that_fetches_nothing(runs, tmp_path):
    store, ids = runs
    page = render(build_report(store, list(ids.values())), "html")
    parser = Resources()
    parser.feed(page)
    assert parser.fetches == []
    assert not {"script", "link", "img", "iframe", "object", "embed"} & parser.tags
    assert not re.search(r"url\((?!#)", page) and "@import" not in page  # url(#id) is inside
    assert page.count("<svg") >= 4  # an interval chart per activity and a reliability diagram
    assert "@media print" in page
    for run_id in ids.values():
        assert f"#{run_id}" in page
    assert "McNemar p" in page and "Table 2 layout" in page and "FrenchMedMCQA" in page


@pytest.mark.slow
def test_text_markdown_csv_and_json(runs):
    store, ids = runs
    report = build_report(store, [ids["logprob"], ids["generate"], ids["upper"]])
    text = render(report, "text")
    assert "ExplainCPE Table 8" in text and "Table 2 layout" in text
    assert "logprob · 0-shot · zh · instr" in text and "upper bound" in text
    assert "[" in text  # intervals
    md = render(report, "md")
    assert "| Run | Model | Setting |" in md and "### Paired comparisons" in md
    lines = md.splitlines()
    head = lines.index(next(x for x in lines if x.startswith("| Run | Model | Setting |")))
    columns = [c.strip() for c in lines[head].strip("|").split("|")]
    rule = lines[head + 1].strip("|").split("|")
    aligned = dict(zip(columns, rule, strict=True))
    assert aligned["Model"] == aligned["Setting"] == "---"  # text to the left
    assert all(aligned[c] == "---:" for c in columns if c.startswith("Accuracy"))
    rows = list(csv.reader(io.StringIO(render(report, "csv"))))
    headers = [rows[i + 1] for i, r in enumerate(rows) if len(r) == 1 and ": " in r[0]]
    main = next(h for h in headers if "ROUGE-1" in h)
    assert [c for c in main if c.startswith("Accuracy")] == [
        "Accuracy (%)",
        "Accuracy (%) 95% low",
        "Accuracy (%) 95% high",
    ]
    start = rows.index(main) + 1
    first = dict(zip(main, rows[start], strict=True))
    assert float(first["Accuracy (%) 95% low"]) <= float(first["Accuracy (%)"])
    data = json.loads(render(report, "json"))
    assert [r["label"] for r in data["runs"]][0] == "logprob · 0-shot · zh · instr"
    with pytest.raises(ValueError, match="unknown report format"):
        render(report, "pdf")


@pytest.mark.slow
def test_medexam_report_command(runs, tmp_path):
    store, ids = runs
    db = store.path
    out = CliRunner().invoke(cli, ["--db", db, "report", str(ids["logprob"]), str(ids["french"])])
    assert out.exit_code == 0, out.output
    assert "ExplainCPE Table 8" in out.output and "FrenchMedMCQA" in out.output
    page = tmp_path / "report.html"
    saved = CliRunner().invoke(cli, ["--db", db, "report", str(ids["upper"]), "--out", str(page)])
    assert saved.exit_code == 0 and page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    missing = CliRunner().invoke(cli, ["--db", db, "report", "999"])
    assert missing.exit_code == 1 and missing.output.strip() == "Error: no run with id 999"


@pytest.mark.slow
def test_runs_list_shows_and_filters_by_label(runs):
    store, ids = runs
    db = store.path
    listed = CliRunner().invoke(cli, ["--db", db, "runs", "list"]).output
    for run_id in ids.values():
        assert run_label(store.run(run_id)) in listed
    data = json.loads(CliRunner().invoke(cli, ["--db", db, "runs", "list", "--json"]).output)
    assert {r["id"]: r["label"] for r in data} == {i: run_label(store.run(i)) for i in ids.values()}
    shot = CliRunner().invoke(cli, ["--db", db, "runs", "list", "--filter", "1-SHOT", "--json"])
    assert [r["id"] for r in json.loads(shot.output)] == [ids["logprob-1shot"]]
    assert Path(db).exists()


@pytest.mark.slow
def test_views_join_runs_items_and_answers_in_plain_sqlite(runs):
    import sqlite3

    store, ids = runs
    con = sqlite3.connect(store.path)
    con.row_factory = sqlite3.Row
    g = ids["generate"]
    rows = con.execute("SELECT * FROM v_answers WHERE run_id = ? ORDER BY position", [g])
    items = {i["id"]: i for i in store.items("explaincpe-sample")}
    answers = store.answers(g)
    viewed = [dict(r) for r in rows]
    assert [r["item_key"] for r in viewed] == [a["item_key"] for a in answers]
    for row, a in zip(viewed, answers, strict=True):
        item = items[a["item_key"]]
        assert (row["question"], row["type2"]) == (item["question"], item["type2"])
        assert (row["gold"], row["correct"]) == (item["answer"], a["correct"])
        assert row["rougeL"] == a["scores"]["rougeL"] and row["model"] == "smollm2"
    case = store.items("cases-sample")[0]
    row = con.execute("SELECT * FROM v_answers WHERE run_id = ?", [ids["upper"]]).fetchone()
    assert row["question"] == case["task"]["question"] and row["patient_f1"] is not None
    runs_view = {r["run_id"]: dict(r) for r in con.execute("SELECT * FROM v_runs")}
    shot = runs_view[ids["logprob-1shot"]]
    summary = store.run(ids["logprob-1shot"])["summary"]
    assert (shot["method"], shot["shots"], shot["lang"]) == ("logprob", 1, "zh")
    assert shot["calibration_ece"] == summary["calibration"]["ece"]
    assert shot["accuracy"] == summary["accuracy"]
    assert (runs_view[ids["doctor"]]["doctor"], runs_view[ids["doctor"]]["patient_mode"]) == (
        "smollm2",
        "paper",
    )
    assert (runs_view[ids["french-bm25"]]["retriever"], runs_view[ids["french-bm25"]]["k"]) == (
        "bm25",
        1,
    )
    con.close()
