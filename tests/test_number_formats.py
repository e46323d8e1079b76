"""The same kind of number is printed the same way everywhere: a percentage with one decimal
(``exam take``'s score and its by-type lines, ``french take``'s Bilan, ``stats``), a p-value
with three (a report's McNemar p), all through :func:`engine.text.columns.fmt_number`."""

from __future__ import annotations

import re

from click.testing import CliRunner

from engine.cli import cli
from engine.exam.dataset import ensure_sample
from engine.reports import build_report, render
from engine.text.columns import fmt_number, number_unit

TWO_DECIMALS = re.compile(r"\d\.\d\d(?!\d)")


def test_a_unit_fixes_the_precision():
    assert [fmt_number(v, unit="%") for v in (0.0, 0.5, 50.0, 100.0)] == [
        "0.0",
        "0.5",
        "50.0",
        "100.0",
    ]
    assert [fmt_number(v, unit="p") for v in (1.0, 0.5, 0.03125)] == ["1.000", "0.500", "0.031"]
    assert fmt_number(0.5) == "0.500" and fmt_number(None, "—", "%") == "—"
    assert [number_unit(h) for h in ("Exact match ratio (%)", "Bootstrap p", "n")] == ["%", "p", ""]


def _cli(path: str, answers: str, *args: str) -> str:
    out = CliRunner().invoke(cli, ["--db", path, *args], input=answers)
    assert out.exit_code == 0, out.output
    return out.output


def test_exam_take_french_take_and_stats_write_percentages_alike(store):
    exam = _cli(store.path, "A\nB\n", "exam", "take", "--limit", "2", "--seed", "1")
    tail = exam[exam.index("score ") :]
    assert "score 50.0%" in tail
    by_type = [line for line in tail.splitlines() if "accuracy" in line]
    assert by_type and all(re.search(r"accuracy +\d+\.\d%$", line) for line in by_type)
    assert any(line.endswith("accuracy   0.0%") for line in by_type)
    stats = _cli(store.path, "", "stats")
    assert "0.0%" in stats and "100.0%" in stats and not re.search(r"(?<![\d.])\d+%", stats)
    french = _cli(
        store.path, "A\nB\n", "french", "take", "--dataset", "frenchmedmcqa-sample", "--limit", "2"
    )
    bilan = french[french.index("Bilan") :]
    assert not TWO_DECIMALS.search(bilan), bilan
    assert re.search(r"Hamming score \(%\) +\d+\.\d$", bilan, re.M), bilan


def test_a_reports_mcnemar_p_has_three_decimals_as_the_others(store):
    dataset = ensure_sample(store)
    _cli(store.path, "A\nB\n", "exam", "take", "--dataset", dataset, "--limit", "2", "--seed", "1")
    _cli(store.path, "B\nB\n", "exam", "take", "--dataset", dataset, "--limit", "2", "--seed", "1")
    report = build_report(store, [r["id"] for r in store.runs()])
    for fmt in ("text", "md", "html"):
        text = render(report, fmt)
        assert "1.000" in text and not re.search(r"[ >|]1\.0[ <|]", text.split("Paired")[1])
