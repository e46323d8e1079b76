"""Control characters in data (a plan's title, a model file's name, names in reports and
exports) never reach the terminal raw: ``experiment plan|run|show``, ``models list|add``,
``report`` and ``runs export`` to stdout and the one-line errors show them escaped, JSON
as JSON's escapes (the same JSON); a file written with ``--out`` keeps every character; and
``report --figures DIR`` replaces a link planted in DIR instead of writing through it."""

from __future__ import annotations

import csv
import io
import json
import re
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner
from model_files import tiny_llama

from engine.cli import cli
from engine.core.runs import run
from engine.exam.dataset import ensure_sample
from engine.models.scripted import ScriptedModel, scripted_pool
from engine.store.store import Store
from engine.text.columns import visible as shown

#: What a terminal acts on: C0 controls but the line break, DEL, C1, the marks that reorder.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
#: Hostile texts a name may hold (a file's name holds no NUL): OSC title, clear screen, C1
#: CSI, right-to-left override, an isolate, a carriage return, DEL, BEL.
HOSTILE = [
    "\x1b]0;owned\x07",
    "\x1b[2J\x1b[31mred",
    "\x9b31m\u202eevil",
    "a\rb\x7f\u2066c\x08",
]


def medexam(*args: str) -> str:
    """What ``medexam ARGS`` prints, stdout and stderr (status 0), checked to hold no raw
    control character."""
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert not RAW.search(result.output), (args, result.output)
    return result.output


def toml_text(text: str) -> str:
    """``text`` as a TOML basic string, every control character as its escape."""
    return '"' + "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text) + '"'


@pytest.mark.parametrize("bad", HOSTILE)
def test_experiment_plan_run_and_show_print_a_title_and_names_escaped(db_path, home, tmp_path, bad):
    model = f"bot{bad}"
    (home / "models.json").write_text(
        json.dumps({model: {"backend": "scripted", "replies": "答案：A"}}), encoding="utf-8"
    )
    plan = tmp_path / "grid.toml"
    title = f"My{bad}title"
    plan.write_text(f'title = {toml_text(title)}\nactivity = "exam"\nlimit = 2\n', "utf-8")
    given = [str(plan), "--dataset", "explaincpe-sample", "--models", model]
    medexam("--db", db_path, "exam", "sample")

    planned = medexam("--db", db_path, "experiment", "plan", *given)
    assert planned.startswith(f"{shown(title)}: ") and shown(model) in planned
    assert json.loads(medexam("--db", db_path, "experiment", "plan", *given, "--json"))[
        "title"
    ] == title  # the same JSON, every character kept  # fmt: skip
    played = medexam("--db", db_path, "experiment", "run", *given)
    assert f"experiment 1: {shown(title)}" in played
    for args in (["experiment", "show"], ["experiment", "show", "1"]):
        assert f"experiment 1: {shown(title)}" in medexam("--db", db_path, *args)
    found = json.loads(medexam("--db", db_path, "experiment", "show", "1", "--json"))
    assert found["title"] == title and found["runs"][0]["label"] == model


@pytest.mark.parametrize("bad", HOSTILE)
def test_models_list_and_add_print_a_files_name_escaped(models_folder, tmp_path, bad):
    (models_folder / f"broken{bad}.gguf").write_bytes(b"not a model")
    added = tiny_llama(tmp_path / f"tiny{bad}.gguf")

    said = medexam("models", "add", str(added))
    assert said.startswith(f"added {shown(f'tiny{bad}')}\n")
    listed = medexam("models", "list")
    assert shown(f"tiny{bad}") in listed and shown(f"broken{bad}.gguf") in listed
    names = [m["name"] for m in json.loads(medexam("models", "list", "--json"))]
    assert f"tiny{bad}" in names


@pytest.fixture
def hostile_run(tmp_path: Path) -> tuple[str, int, str]:
    """A database holding a run by a model whose name holds every hostile text: its path,
    the run's id and the model's name."""
    name = "m" + "".join(HOSTILE)
    store = Store(tmp_path / "medexam.db")
    try:
        dataset = ensure_sample(store)
        model = ScriptedModel(name, replies=f"{HOSTILE[0]} 答案：A")
        settings = {"model": name, "limit": 2}
        run_id = run(store, "exam", dataset, settings, pool=scripted_pool(model))["run_id"]
        return store.path, run_id, name
    finally:
        store.close()


@pytest.mark.parametrize("fmt", ["text", "md", "csv", "html", "json"])
def test_a_report_on_stdout_prints_names_escaped(hostile_run, fmt):
    db, run_id, name = hostile_run
    with warnings.catch_warnings(record=True) as said:  # a chart's missing glyphs…
        warnings.simplefilter("always")
        out = medexam(
            "--db", db, "report", str(run_id), "--format", fmt, "--title", f"T{HOSTILE[1]}"
        )
    assert not [w for w in said if RAW.search(str(w.message))]
    if fmt == "json":
        found = json.loads(out)
        assert found["runs"][0]["model"] == name and found["title"] == f"T{HOSTILE[1]}"
    else:
        assert "m\\x1b]0;owned\\x07" in out


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_an_export_on_stdout_is_escaped_and_a_file_keeps_every_character(
    hostile_run, tmp_path, fmt
):
    db, run_id, name = hostile_run
    out = medexam("--db", db, "runs", "export", str(run_id), "--format", fmt)
    if fmt == "json":
        assert json.loads(out)["run"]["model"] == name
    else:
        assert "\\x1b]0;owned\\x07" in out and out.count("\n") >= 3
    path = tmp_path / f"run.{fmt}"
    medexam("--db", db, "runs", "export", str(run_id), "-o", str(path))
    text = path.read_text(encoding="utf-8-sig")
    if fmt == "json":
        assert json.loads(text)["run"]["model"] == name
    else:
        assert [f"{HOSTILE[0]} 答案：A"] * 2 == [
            r["response"] for r in csv.DictReader(io.StringIO(text))
        ]


@pytest.mark.parametrize("bad", HOSTILE)
def test_an_error_naming_data_is_one_line_escaped(db_path, tmp_path, bad):
    result = CliRunner().invoke(
        cli, ["--db", db_path, "import", "mcq", str(tmp_path / f"q{bad}.json")]
    )
    assert result.exit_code == 1 and not RAW.search(result.output), result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize("dangling", [False, True])
def test_report_figures_replace_a_planted_link_instead_of_writing_through_it(
    hostile_run, tmp_path, dangling
):
    db, run_id, _name = hostile_run
    folder = tmp_path / "figures"
    medexam("--db", db, "report", str(run_id), "--figures", str(folder))
    figures = sorted(folder.iterdir())
    assert figures
    outside = tmp_path / "outside.txt"
    if not dangling:
        outside.write_text("kept", encoding="utf-8")
    for figure in figures:
        figure.unlink()
        figure.symlink_to(outside)

    medexam("--db", db, "report", str(run_id), "--figures", str(folder))

    assert (outside.read_text(encoding="utf-8") == "kept") if not dangling else not outside.exists()
    for figure in figures:
        magic = b"<svg" if figure.suffix == ".svg" else b"\x89PNG"
        assert not figure.is_symlink() and figure.read_bytes().startswith(magic)
    assert sorted(folder.iterdir()) == figures  # no file left half-written beside them


def test_report_figures_writes_png_as_well_as_svg_for_every_figure(hostile_run, tmp_path):
    db, run_id, _name = hostile_run
    folder = tmp_path / "figures"
    result = medexam("--db", db, "report", str(run_id), "--figures", str(folder))
    svgs = sorted(p.stem for p in folder.glob("*.svg"))
    pngs = sorted(p.stem for p in folder.glob("*.png"))
    assert svgs and svgs == pngs  # the run's interval chart too, not only line charts
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in folder.glob("*.png"))
    assert result.count("wrote ") == len(svgs) * 2
