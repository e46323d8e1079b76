"""``medexam consult convert --dataset NAME --converter MODEL --name CASES`` on the command
line: a MedQA JSONL of six options imports and converts, the filter's count said; Ctrl-C,
then the same command goes on; a few questions on the real converter."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.consult.cases.cases import load_cases
from engine.store.store import Store
from tests.test_consult_convert_job import medqa_file

MEDEXAM = [str(Path(sys.executable).with_name("medexam"))]
FACTS = "Sex: woman\nChief complaint: cough"


def invoke(db: str, *args: str):
    return CliRunner().invoke(cli, ["--db", db, *args])


def scripted(home: Path, **script: object) -> None:
    """The catalog of ``home`` names the scripted converter "conv"."""
    (home / "models.json").write_text(json.dumps({"conv": {"backend": "scripted", **script}}))


def test_a_medqa_file_of_six_options_imports_and_converts_with_the_filter_counted(
    db_path: str, tmp_path: Path, home: Path
) -> None:
    scripted(home, replies=FACTS)
    assert (
        invoke(db_path, "import", "mcq", str(medqa_file(tmp_path / "medqa.jsonl", 4))).exit_code
        == 0
    )
    done = invoke(db_path, "consult", "convert", "--dataset", "medqa", "--converter", "conv",
                  "--name", "medqa-cases")  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "4 cases in 'medqa-cases' from 6 questions" in done.output
    assert "left out: 2 with no patient information" in done.output
    assert "left out 5: no patient information" in done.output
    store = Store(db_path)
    cases = load_cases(store, "medqa-cases")
    store.close()
    assert len(cases) == 4 and all(len(c.task.options) == 6 for c in cases)
    listed = invoke(db_path, "consult", "cases", "--cases", "medqa-cases")
    assert listed.output.count("medqa-") == 4
    again = invoke(db_path, "consult", "convert", "--dataset", "medqa", "--converter", "conv",
                   "--name", "medqa-cases", "--json")  # fmt: skip
    assert json.loads(again.output)["new"] == 0  # nothing converted twice
    other = invoke(db_path, "consult", "convert", "--dataset", "medqa", "--converter", "smollm2",
                   "--name", "medqa-cases")  # fmt: skip
    assert (
        other.exit_code != 0 and "Error: 'medqa-cases' is being converted by 'conv'" in other.output
    )


def test_a_question_too_long_for_the_converter_is_said_and_counted(
    db_path: str, tmp_path: Path, home: Path
) -> None:
    scripted(home, replies=FACTS)
    path = medqa_file(tmp_path / "medqa.jsonl", 2)
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    question = ("A 30-year-old woman has a cough. " + "She coughs at night. " * 5000
                + "Which of the following is the most likely diagnosis?")  # fmt: skip
    long = json.dumps({**first, "question": question})
    path.write_text(path.read_text(encoding="utf-8") + "\n" + long, encoding="utf-8")
    assert invoke(db_path, "import", "mcq", str(path)).exit_code == 0
    done = invoke(db_path, "consult", "convert", "--dataset", "medqa", "--converter", "conv",
                  "--name", "cases")  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "2 cases in 'cases' from 5 questions" in done.output
    assert (
        "left out: 2 with no patient information, 1 too long for the converter's context, "
        "0 other" in done.output
    )
    assert "left out 5: too long for the converter's context: its prompt takes " in done.output


def test_ctrl_c_then_the_same_command_goes_on_where_it_stopped(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    scripted(home, replies=FACTS, delay=0.3)
    env = {**os.environ, "MEDEXAM_HOME": str(home)}
    db = str(tmp_path / "medexam.db")
    source = str(medqa_file(tmp_path / "medqa.jsonl", 10))
    subprocess.run([*MEDEXAM, "--db", db, "import", "mcq", source], check=True, env=env,
                   capture_output=True)  # fmt: skip
    command = [*MEDEXAM, "--db", db, "consult", "convert", "--dataset", "medqa", "--converter",
               "conv", "--name", "cases", "--concurrency", "1"]  # fmt: skip
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    time.sleep(4)  # a few questions in (two requests of 0.3 s each)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "the same command goes on where it stopped" in err
    store = Store(db)
    kept = store.dataset("cases")["n_items"]
    store.close()
    assert 1 <= kept < 10
    done = subprocess.run([*command, "--json"], env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    found = json.loads(done.stdout)
    assert found["converted"] == 10 and found["filtered"] == 2
    assert found["new"] == 12 - kept  # the questions of fact come last: none was reached


@pytest.mark.slow
def test_the_real_converter_drafts_a_few_cases(db_path: str, tmp_path: Path) -> None:
    assert (
        invoke(db_path, "import", "mcq", str(medqa_file(tmp_path / "medqa.jsonl", 3))).exit_code
        == 0
    )
    done = invoke(db_path, "consult", "convert", "--dataset", "medqa", "--converter", "smollm2",
                  "--name", "real", "--limit", "2", "--json")  # fmt: skip
    assert done.exit_code == 0, done.output
    found = json.loads(done.output)
    assert found["converted"] == 2 and found["converter"] == "smollm2"
    store = Store(db_path)
    cases = load_cases(store, "real")
    store.close()
    for case in cases:
        assert case.meta["draft"] and case.initial_request and case.facts
        assert case.task.answer == "B" and len(case.task.options) == 6
        assert "year-old" not in case.initial_request
