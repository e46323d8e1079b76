"""Progress anywhere: when output is not a terminal (a log, CI), a long command writes a line
at every tenth of its work, with items, time elapsed and time left."""

from __future__ import annotations

import re

from click.testing import CliRunner

from engine.cli import cli
from engine.core.progress import Progress, TenthLines
from engine.exam.dataset import ensure_sample
from engine.exam.runner import run_exam
from engine.exam.settings import ExamSettings


def test_a_line_at_every_tenth_with_items_and_time_left():
    lines: list[str] = []
    ticks = iter(range(0, 1000, 2))
    tenths = TenthLines("work", lines.append, clock=lambda: float(next(ticks)))
    for done in range(0, 38):
        tenths(Progress(done, 37, f"item {done}"))
    percents = [int(re.search(r"(\d+)%", line)[1]) for line in lines]
    assert percents == [11, 22, 32, 41, 51, 62, 70, 81, 92, 100]  # once past each tenth
    assert len(lines) == 10 and lines[-1].startswith("work: 100% (37/37 items)")
    assert "left" in lines[0] and "left" not in lines[-1]
    assert re.fullmatch(
        r"work: 11% \(4/37 items\) · 0:0\d elapsed · 0:\d\d left · item 4", lines[0]
    )


def test_unknown_totals_and_repeats_write_nothing_more():
    lines: list[str] = []
    tenths = TenthLines("work", lines.append)
    tenths(Progress(3, 0))
    tenths(Progress(1, 2))
    tenths(Progress(1, 2))
    assert lines and len(lines) == 1 and lines[0].startswith("work: 50% (1/2 items)")


def test_a_long_command_writing_to_a_file_prints_percentages(store, scripted_pool):
    dataset = ensure_sample(store)
    done = run_exam(store, dataset, ExamSettings(method="logprob", limit=10), pool=scripted_pool())
    result = CliRunner().invoke(
        cli,
        ["--db", store.path, "rescore", str(done["run_id"]), "--scorer", "exam.letter", "--force"],
    )
    assert result.exit_code == 0, result.output
    found = re.findall(
        r"scoring run \d+: (\d+)% \((\d+)/10 items\) · \d+:\d\d elapsed", result.stderr
    )
    assert [int(p) for p, _n in found] == list(range(10, 101, 10)), result.stderr
