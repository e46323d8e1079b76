"""One error root: every exception class medexam defines derives from MedexamError; an error
for the user (UserError) is one ``Error:`` line from the command line and a message without
a traceback in the app, anything else keeps its traceback; a run whose data set was deleted
still reads, exports and reports; a name already taken in the import dialog says what to do."""

from __future__ import annotations

import csv
import importlib
import io
import json
import pkgutil
from collections import Counter

import click
import pytest
from click.testing import CliRunner

import engine
import gui
from engine.cli import cli
from engine.core.scoring import Scored
from engine.errors import ONE_LINE, MedexamError, UserError
from engine.paths import samples_dir
from engine.store.store import Store


def exception_classes() -> list[type[BaseException]]:
    """Every exception class defined in a module of engine/ or gui/."""
    found = []
    for package in (engine, gui):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            module = importlib.import_module(info.name)
            found += [
                obj
                for obj in vars(module).values()
                if isinstance(obj, type)
                and issubclass(obj, BaseException)
                and obj.__module__ == module.__name__
            ]
    return found


def test_every_exception_class_derives_from_medexam_error():
    classes = exception_classes()
    assert len(classes) > 20
    # A signal that is not an Exception (SIGTERM read as Ctrl-C) stays outside on purpose:
    # ``except Exception`` must not catch it.
    errors = [cls for cls in classes if issubclass(cls, Exception)]
    strays = [f"{c.__module__}.{c.__qualname__}" for c in errors if not issubclass(c, MedexamError)]
    assert strays == []
    assert all(issubclass(c, KeyboardInterrupt) for c in classes if c not in errors)
    twice = [name for name, n in Counter(c.__name__ for c in errors).items() if n > 1]
    assert twice == []


def test_errors_for_the_user_and_the_built_ins_callers_catch():
    from engine.core.progress import Cancelled
    from engine.core.runs import RunError
    from engine.exam.dataset import DatasetError as ExamDatasetError
    from engine.french.dataset import DatasetError as FrenchDatasetError
    from engine.models.protocol import ModelCrashed
    from engine.settings import SettingsError
    from engine.store.store import AlreadyExists

    assert ExamDatasetError is FrenchDatasetError
    for cls in (ExamDatasetError, RunError, ModelCrashed, AlreadyExists, SettingsError):
        assert issubclass(cls, UserError)
    assert issubclass(ExamDatasetError, ValueError) and issubclass(SettingsError, ValueError)
    assert issubclass(Cancelled, MedexamError) and not issubclass(Cancelled, UserError)


def with_command(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    """Add ``medexam fail``, a command that raises ``exc``."""

    @click.command("fail")
    def fail() -> None:
        raise exc

    monkeypatch.setitem(cli.commands, "fail", fail)


def test_cli_prints_a_user_error_as_one_line(monkeypatch):
    with_command(monkeypatch, UserError("nothing here to score"))
    result = CliRunner().invoke(cli, ["fail"], catch_exceptions=False)
    assert result.exit_code == 1
    assert result.output.splitlines() == ["Error: nothing here to score"]


def test_cli_prints_a_missing_file_as_one_line(monkeypatch, tmp_path):
    with_command(monkeypatch, FileNotFoundError(2, "No such file or directory", "gone.json"))
    result = CliRunner().invoke(cli, ["fail"], catch_exceptions=False)
    assert result.exit_code == 1
    assert result.output.splitlines() == ["Error: [Errno 2] No such file or directory: 'gone.json'"]


def test_cli_keeps_the_traceback_of_its_own_faults(monkeypatch):
    with_command(monkeypatch, KeyError("options"))
    with pytest.raises(KeyError, match="options"):
        CliRunner().invoke(cli, ["fail"], catch_exceptions=False)
    with_command(monkeypatch, ValueError("a bug, not bad input"))
    with pytest.raises(ValueError, match="a bug"):
        CliRunner().invoke(cli, ["fail"], catch_exceptions=False)


def test_a_command_error_from_the_engine_is_one_line(tmp_path):
    responses = tmp_path / "responses.json"
    responses.write_text(json.dumps([{"id": "sample-01", "other_field": "B"}]), encoding="utf-8")
    gold = samples_dir() / "explaincpe_sample.json"
    argv = ["exam", "score", "--gold", str(gold), "--responses", str(responses)]
    result = CliRunner().invoke(cli, [*argv, "--field", "answer"], catch_exceptions=False)
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        "Error: no response has a field 'answer' (fields: other_field)"
    ]
    export = CliRunner().invoke(
        cli, ["--db", str(tmp_path / "x.db"), "runs", "export", "1", "-o", str(tmp_path / "r.csv")]
    )
    assert export.exit_code == 1 and export.output.startswith("Error: no run with id 1")


def test_items_by_key_says_when_a_data_set_is_gone(db_path):
    store = Store(db_path)
    assert store.items_by_key("demo") is None
    store.add_dataset("demo", "exam", [{"id": 2, "question": "b"}, {"id": "q1", "question": "a"}])
    assert store.items_by_key("demo") == {
        "2": {"id": 2, "question": "b"},
        "q1": {"id": "q1", "question": "a"},
    }
    run_id = store.start_run("exam", "demo", "smollm2", {}, n_total=1)
    wrong = [Scored("exam.letter", 1, {"correct": False})]
    store.add_answer(run_id, "q1", response="A", chosen="A", gold="B", scores=wrong)
    store.finish_run(run_id, {"accuracy": 0.0})
    store.delete_dataset("demo")
    assert store.items_by_key("demo") is None
    store.close()

    def invoke(*args: str):
        return CliRunner().invoke(cli, ["--db", db_path, *args], catch_exceptions=False)

    exported = invoke("runs", "export", str(run_id), "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(exported.output)))
    assert [(r["item_key"], r["chosen"]) for r in rows] == [("q1", "A")]
    assert invoke("report", str(run_id)).exit_code == 0


def test_unknown_export_format_is_one_line(db_path, tmp_path):
    store = Store(db_path)
    store.add_dataset("demo", "exam", [{"id": "q1"}])
    run_id = store.start_run("exam", "demo", "smollm2", {}, n_total=1)
    store.close()
    out = tmp_path / "run.txt"
    result = CliRunner().invoke(
        cli, ["--db", db_path, "runs", "export", str(run_id), "-o", str(out)]
    )
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        "Error: unknown export format 'txt' (choose from csv, json, xlsx)"
    ]


@pytest.mark.gui
def test_the_app_shows_a_user_error_as_one_line_and_a_fault_with_its_traceback(qtbot, window):
    from gui.testing import close_message_boxes, message_boxes
    from gui.widgets.common import show_error

    def fail(_job, exc: BaseException) -> None:
        raise exc

    def shown(exc: BaseException):
        window.jobs.start(fail, exc, on_error=lambda e: show_error(window, e, window.ctx))
        qtbot.waitUntil(lambda: bool(message_boxes()), timeout=10_000)
        box = message_boxes()[0]
        found = box.text(), box.detailedText()
        close_message_boxes()
        return found

    class Gone(UserError):
        """Told apart by its class, whatever its name."""

    assert shown(Gone("data set 'demo' was deleted")) == ("data set 'demo' was deleted", "")
    text, detail = shown(KeyError("options"))
    assert text == "'options'" and "Traceback" in detail and "KeyError" in detail
    text, detail = shown(ValueError("a bug, not bad input"))
    assert text == "a bug, not bad input" and "Traceback" in detail
    assert isinstance(OSError(), ONE_LINE) and not isinstance(KeyError(), ONE_LINE)


@pytest.mark.gui
def test_importing_a_name_taken_says_how_to_go_on(qtbot, window, tmp_path):
    from gui.widgets.qt_import import ImportDialog

    path = tmp_path / "taken.csv"
    path.write_text("id,question,A,B,answer\n1,Which?,Yes,No,A\n", encoding="utf-8")
    window.ctx.store.add_dataset("taken", "exam", [{"id": "x"}])
    d = ImportDialog(window.ctx, "exam", window)
    qtbot.addWidget(d)
    d.format.setCurrentIndex(d.format.findData("mcq"))
    d.show()
    d.path.setText(str(path))
    d.import_button.click()
    qtbot.waitUntil(lambda: d.job is None and d.message.text() != "")
    assert "already exists" in d.message.text() and "Replace" in d.message.text()
