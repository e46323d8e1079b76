"""JSON nested too deeply, in every user file medexam reads as JSON: the one reader
(:mod:`engine.text.jsonio`) refuses it in one line naming the file and the line, whether or
not Python's parser could follow it, so no importer ends in a RecursionError."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.text import jsonio
from engine.text.jsonio import MAX_DEPTH, RecordsError, read_json, read_records


def nested(levels: int) -> str:
    return "[" * levels + "1" + "]" * levels


DEEP = nested(100_000)  # past any recursion limit
JUST_TOO_DEEP = nested(MAX_DEPTH)  # inside a record: MAX_DEPTH + 1 levels, parses fine


def invoke(db_path: str, *args: str):
    return CliRunner().invoke(cli, ["--db", db_path, *args])


def one_error_line(out, path: Path, line: int) -> None:
    assert out.exit_code == 1, out.output
    assert "Traceback" not in out.output and "RecursionError" not in out.output
    last = out.output.strip().splitlines()[-1]
    assert last.startswith("Error: ") and path.name in last, out.output
    assert f"line {line}: nested too deeply" in last, out.output


@pytest.mark.parametrize("inner", [DEEP, JUST_TOO_DEEP])
def test_the_reader_names_the_file_and_the_line(tmp_path: Path, inner: str) -> None:
    lines = tmp_path / "cases.jsonl"
    lines.write_text('{"id": 1}\n\n{"id": 2, "x": ' + inner + "}\n", encoding="utf-8")
    with pytest.raises(RecordsError, match=r"cases.jsonl: line 3: nested too deeply"):
        read_records(lines)
    document = tmp_path / "cases.json"
    document.write_text('[\n  {"id": 1},\n  {"id": 2, "x": ' + inner + "}\n]", encoding="utf-8")
    with pytest.raises(RecordsError, match=r"cases.json: line 3: nested too deeply"):
        read_records(document)
    with pytest.raises(RecordsError, match="line 3: nested too deeply"):
        read_json(document)
    brackets_in_text = tmp_path / "text.json"  # brackets inside strings are text
    brackets_in_text.write_text(json.dumps([{"q": "[" * 500}]), encoding="utf-8")
    assert read_records(brackets_in_text) == [{"q": "[" * 500}]
    assert read_json_ok(tmp_path, nested(MAX_DEPTH - 1))


def read_json_ok(tmp_path: Path, text: str) -> bool:
    path = tmp_path / "ok.json"
    path.write_text(text, encoding="utf-8")
    return jsonio.read_json(path) is not None


def test_import_agentclinic(tmp_path: Path, db_path: str) -> None:
    path = tmp_path / "agentclinic_medqa.jsonl"
    path.write_text('{"OSCE_Examination": ' + DEEP + "}\n", encoding="utf-8")
    one_error_line(invoke(db_path, "import", "agentclinic", str(path)), path, 1)


def test_train_doctor_dialogues(tmp_path: Path, db_path: str, home: Path) -> None:
    path = tmp_path / "dialogues.jsonl"
    good = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "?"}]}
    path.write_text(json.dumps(good) + '\n{"messages": ' + DEEP + "}\n", encoding="utf-8")
    out = invoke(db_path, "train", "doctor", "--dialogues", str(path), "--name", "deep")
    one_error_line(out, path, 2)


@pytest.mark.parametrize(
    ("command", "name", "text"),
    [
        (["import", "responses", "--dataset", "x", "--model", "m", "--field", "r"], "r.json", DEEP),
        (["import", "frenchmedmcqa", "--name", "f"], "f.json", DEEP),
        (["import", "cases", "--name", "c"], "c.json", DEEP),
        (["import", "mcq", "--name", "q"], "q.json", "[" + JUST_TOO_DEEP + "]"),
    ],
)
def test_every_importer(tmp_path: Path, db_path: str, command, name, text) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    one_error_line(invoke(db_path, *command, str(path)), path, 1)


def test_a_nested_options_cell_of_a_csv(tmp_path: Path, db_path: str) -> None:
    path = tmp_path / "q.csv"
    path.write_text(f"question,options,answer\nWhich?,{nested(5000)},A\n", encoding="utf-8")
    out = invoke(db_path, "import", "mcq", "--name", "q", str(path))
    assert out.exit_code == 1 and "Traceback" not in out.output, out.output
    assert "record 1: 'options' column is not a JSON list (nested too deeply" in out.output
    path.write_text(f"question,options,answer\nWhich?,{DEEP},A\n", encoding="utf-8")
    out = invoke(db_path, "import", "mcq", "--name", "q", str(path))  # a cell past csv's limit
    assert out.exit_code == 1 and "Traceback" not in out.output, out.output
    assert "line 2: not a CSV row (field larger than field limit" in out.output


def test_a_damaged_index_manifest(home: Path, db_path: str) -> None:
    from engine.paths import indexes_dir

    folder = indexes_dir() / "deep"
    folder.mkdir()
    (folder / "manifest.json").write_text(DEEP, encoding="utf-8")
    listed = invoke(db_path, "french", "indexes", "--json")
    assert listed.exit_code == 0 and json.loads(listed.output) == [], listed.output
    out = invoke(db_path, "french", "search", "--index", "deep", "--query", "fièvre")
    assert out.exit_code == 1 and "Traceback" not in out.output, out.output
    assert "index 'deep' cannot be read" in out.output and "nested too deeply" in out.output
