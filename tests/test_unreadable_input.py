"""Input medexam cannot read is one ``Error:`` line and exit status 1, never a traceback: an
experiment file that is not UTF-8 or names its models as anything but names, a number longer
than Python reads (4300 digits) in any imported file or experiment file, a multiple-choice
question with more options than medexam takes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cli import cli

LIMIT = sys.get_int_max_str_digits()
LONG = "9" * (LIMIT + 1)


def one_error(db: str, *args: str) -> str:
    """The one line ``medexam --db DB ARGS`` ends with (status 1), checked to be alone."""
    result = CliRunner().invoke(cli, ["--db", db, *args], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    return lines[0]


def plan_error(db: str, path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return one_error(db, "experiment", "plan", str(path), "--dataset", "any")


@pytest.mark.parametrize(
    "data",
    [
        'title = "caf\xe9"\nactivity = "exam"\n'.encode("latin-1"),
        b'activity = "exam"\n# \xff\xfe comment\n',
        'activity = "exam"\n'.encode("utf-16"),
        b'activity = "exam"\nmodels = ["\xc3"]\n',
    ],
)
def test_an_experiment_file_that_is_not_utf8_is_one_line(db_path, tmp_path, data):
    said = plan_error(db_path, tmp_path / "grid.toml", data)
    assert said.startswith(f"Error: {tmp_path / 'grid.toml'} is not UTF-8 text (byte ")


@pytest.mark.parametrize(
    "models",
    ["[1, 2]", '[["smollm2"]]', '["smollm2", 3]', "true", "{ a = 1 }", "[1.5]", "2026-01-01"],
)
def test_models_that_are_not_names_in_an_experiment_file_are_one_line(db_path, tmp_path, models):
    data = f'activity = "exam"\nmodels = {models}\n'.encode()
    said = plan_error(db_path, tmp_path / "grid.toml", data)
    assert (
        said
        == f'Error: {tmp_path / "grid.toml"}: models must be a list of model names (models = ["smollm2"])'
    )


def test_models_named_in_one_text_are_read_as_the_command_line_reads_them(db_path, tmp_path):
    path = tmp_path / "grid.toml"
    path.write_text('activity = "exam"\nmodels = "smollm2, smollm2"\nlimit = 1\n')
    runner = CliRunner()
    assert runner.invoke(cli, ["--db", db_path, "exam", "sample"]).exit_code == 0
    args = ["--db", db_path, "experiment", "plan", str(path), "--dataset", "explaincpe-sample"]
    result = runner.invoke(cli, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["models"] == ["smollm2"]


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (f'activity = "exam"\nlimit = {LONG}\n', 2),
        (f'activity = "exam"\n\n[settings]\nshots = -{LONG}0\n', 4),
        (f'activity = "exam"\n[grid]\nshots = [0, {LONG}]\n', 3),
        (f'trials = {LONG}\nactivity = "exam"\n', 1),
    ],
)
def test_a_number_too_long_in_an_experiment_file_is_one_line(db_path, tmp_path, text, line):
    said = plan_error(db_path, tmp_path / "grid.toml", text.encode())
    where = tmp_path / "grid.toml"
    assert said == f"Error: {where}: line {line}: a number of more than {LIMIT} digits"


def _mcq(number: str) -> dict[str, object]:
    return {"id": 1, "question": "Q?", "options": ["a", "b"], "answer": "A", "extra": number}


@pytest.mark.parametrize(
    ("command", "name", "text", "line"),
    [
        ("mcq", "q.json", json.dumps([_mcq("N")]).replace('"N"', LONG), 1),
        ("mcq", "q.jsonl", json.dumps(_mcq("x")) + "\n" + json.dumps(_mcq("N")).replace('"N"', f"-{LONG}"), 2),
        ("explaincpe", "cpe.json", '[\n {"id": 1,\n  "answer": ' + LONG + "}\n]", 3),
        ("frenchmedmcqa", "fr.json", '[{"id": "a", "nbr_correct_answers": ' + LONG * 2 + "}]", 1),
        ("cases", "cases.jsonl", '{"id": "' + LONG + '"}\n{"id": ' + LONG + "}\n", 2),
        ("agentclinic", "ac.jsonl", '{"OSCE_Examination": {"Age": ' + LONG + "}}\n", 1),
    ],
)  # fmt: skip
def test_a_number_too_long_in_an_imported_file_is_one_line(
    db_path, tmp_path, command, name, text, line
):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    said = one_error(db_path, "import", command, str(path))
    assert said.endswith(f"line {line}: a number of more than {LIMIT} digits"), said


def test_a_number_too_long_in_responses_to_store_is_one_line(db_path, tmp_path):
    path = tmp_path / "responses.json"
    path.write_text('[{"id": "sample-01", "answer": ' + LONG + "}]", encoding="utf-8")
    assert CliRunner().invoke(cli, ["--db", db_path, "exam", "sample"]).exit_code == 0
    said = one_error(
        db_path, "import", "responses", str(path), "--dataset", "explaincpe-sample",
        "--model", "m", "--field", "answer",
    )  # fmt: skip
    assert said.endswith(f"a number of more than {LIMIT} digits"), said


def test_digits_in_text_are_no_number():
    from engine.text.jsonio import long_number_line

    assert long_number_line(f'{{"q": "{LONG}",\n "n": {LONG}}}') == 2
    assert long_number_line(f"title = '{LONG}'\nlimit = 3") is None
    assert long_number_line(f'{{"q": "a \\" {LONG}"}}') is None
    assert long_number_line("9" * LIMIT) is None


@pytest.mark.parametrize("n", [11, 12, 26])
def test_more_options_than_medexam_takes_says_the_limit(db_path, tmp_path, n):
    letters = [chr(ord("A") + i) for i in range(n)]
    medqa = {"question": "Q?", "options": {c: c.lower() for c in letters}, "answer_idx": "A"}
    (tmp_path / "medqa.jsonl").write_text(json.dumps(medqa) + "\n", encoding="utf-8")
    header = ["id", "question", *letters, "answer"]
    row = ["1", "Q?", *(c.lower() for c in letters), "A"]
    lines = [",".join(header), ",".join(row)]
    (tmp_path / "columns.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for name in ("medqa.jsonl", "columns.csv"):
        said = one_error(db_path, "import", "mcq", str(tmp_path / name))
        assert said == f"Error: {name}: record 1: 'options' must hold 2 to 10 texts (got {n})"
