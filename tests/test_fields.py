"""Settings declared once (:mod:`engine.fields`): a field's help, choices and bounds make the
``run`` commands' options, the app's form rows, the checks and the settings stored on a run;
a setting added to an activity's dataclass shows in all of them with no other edit."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.consult.settings import ConsultSettings, consult_settings
from engine.exam.settings import ExamSettings
from engine.fields import (
    SettingError,
    Settings,
    describe,
    form_rows,
    from_dict,
    given_on_command_line,
    setting,
    settings_options,
)
from engine.french.settings import FrenchSettings, french_settings
from engine.store.store import Store


@dataclass
class Demo(Settings):
    method: str = setting("generate", help="How.", choices={"generate": "Write", "logprob": "Read"})
    shots: int = setting(0, help="Examples.", choices=(0, 4), flag="--examples")
    temperature: float = setting(0.0, help="Sampling.", min=0.0, max=2.0)
    keep: bool = setting(True, help="Keep.", flag="--keep/--drop", form=False)
    limit: int | None = setting(None, help="First N.", min=1)
    name: str | None = None


def run_demo(*args: str) -> tuple[click.testing.Result, list[object]]:
    seen: list[object] = []

    @click.command()
    @settings_options(Demo, exclude=("name",))
    @click.pass_context
    def command(ctx: click.Context, settings: Demo) -> None:
        seen.extend([settings, given_on_command_line(ctx, Demo)])

    return CliRunner().invoke(command, list(args)), seen


def test_a_field_describes_itself():
    rows = {info.name: info for info in describe(Demo)}
    assert rows["method"].kind == "choice" and rows["method"].choices[1] == ("logprob", "Read")
    assert rows["shots"].values == (0, 4) and rows["shots"].label == "Shots"
    assert (rows["temperature"].kind, rows["temperature"].max) == ("float", 2.0)
    assert rows["limit"].optional and not rows["method"].optional
    assert (rows["name"].kind, rows["name"].help) == ("text", "")  # a plain field is a setting
    shown = ["method", "shots", "temperature", "limit", "name"]
    assert [info.name for info in form_rows(Demo)] == shown


@pytest.mark.parametrize(
    ("cls", "given", "message"),
    [
        (Demo, {"method": "vote"}, "method must be one of generate, logprob (got 'vote')"),
        (Demo, {"temperature": 2.5}, "temperature must be at most 2 (got 2.5)"),
        (Demo, {"limit": 0}, "limit must be at least 1 (got 0)"),
        (Demo, {"shots": "4"}, "shots must be one of 0, 4 (got '4')"),
        (Demo, {"keep": "yes"}, "keep must be true or false (got 'yes')"),
        (ExamSettings, {"max_tokens": 0}, "max_tokens must be at least 1 (got 0)"),
        (ConsultSettings, {"doctor_max_tokens": 8}, "doctor_max_tokens must be at least 16"),
        (FrenchSettings, {"index": "i", "k": 0}, "k must be at least 1 (got 0)"),
    ],
)
def test_choices_and_bounds_are_refused_in_one_line(cls, given, message):
    with pytest.raises(SettingError) as caught:
        from_dict(cls, given)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_from_dict_fills_defaults_and_leaves_unknown_keys_out():
    made = from_dict(Demo, {"shots": 4, "method": None, "limit": None, "shots_pool": "train"})
    assert made == Demo(shots=4)
    assert ExamSettings.from_dict({"shots": 4}).as_dict()["max_tokens"] == 320
    with pytest.raises(SettingError, match="method must be one of"):
        ExamSettings(method="vote")  # checked when made, too


def test_derived_settings_stay_computed():
    assert french_settings({"k": 3})["k"] == 0  # no index: no passages
    assert french_settings({"index": "cours-bm25", "k": 3})["k"] == 3
    resolved = consult_settings({"doctor": "oracle-direct"})
    assert resolved["patient"] == "model" and resolved["solver"]  # the fixed solver's name


def test_the_decorator_adds_one_option_per_field_and_parses_them():
    result, seen = run_demo("--method", "logprob", "--examples", "4", "--drop")
    assert result.exit_code == 0, result.output
    settings, typed = seen
    assert settings == Demo(method="logprob", shots=4, keep=False)
    assert typed == {"method": "logprob", "shots": 4, "keep": False}  # only what was typed
    shown = run_demo("--help")[0].output
    assert "--method [generate|logprob]" in shown and "[default: generate]" in shown
    assert "--examples [0|4]" in shown and "--keep / --drop" in shown
    assert "--temperature FLOAT RANGE" in shown and "0.0<=x<=2.0" in shown
    assert "--name" not in shown  # excluded
    bad = run_demo("--temperature", "3")[0]
    assert bad.exit_code == 2 and "'--temperature': 3.0 is not in the range" in bad.output


@pytest.mark.parametrize(
    ("command", "options"),
    [
        (
            "engine.exam.cli:exam_run",
            {"--model": None, "--shots": "0", "--instruction": True, "--lang": "zh",
             "--method": "generate", "--limit": None, "--template": "auto", "--seed": 0,
             "--max-tokens": 320, "--shots-from": None, "--resume": None,
             "--n-ctx": None},  # sized to the prompts, 4096 at least
        ),
        (
            "engine.french.cli:french_run",
            {"--model": None, "--index": None, "-k": 1, "--method": "generate",
             "--threshold": 0.5, "--limit": None, "--oracle-passages": False,
             "--no-context": False, "--resume": None},
        ),
        (
            "engine.consult.cli:consult_run",
            {"--doctor": "model", "--patient": None, "--patient-mode": "paper",
             "--solver": None, "--style": "long", "--max-turns": 10,
             "--doctor-max-tokens": 128, "--drop-conclusions": False, "--limit": None,
             "--seed": 0, "--resume": None},
        ),
    ],
)  # fmt: skip
def test_run_commands_keep_their_options_and_defaults(command, options):
    module, _, name = command.partition(":")
    run = getattr(importlib.import_module(module), name)
    found = {}
    for p in run.params:
        default = p.get_default(click.Context(run))
        for flag in p.opts:
            found[flag] = default
        for flag in p.secondary_opts:  # --no-instruction, --drop-conclusions: on or off
            found[flag] = not default
    for flag, default in options.items():
        assert flag in found, flag
        if default is not None:  # None: no default
            assert found[flag] == default, flag


def test_a_new_run_gets_every_setting_a_resume_only_those_typed(monkeypatch, db_path):
    import engine.core.runs

    seen = []

    def run(store, activity_id, dataset, given, **kwargs):
        seen.append((activity_id, given, kwargs["resume"]))
        return {"run_id": 3, "status": "finished"}

    monkeypatch.setattr(engine.core.runs, "run", run)
    store = Store(db_path)  # the runs resumed below exist (their titles name their models)
    for activity_id in ("exam", "consult", "french"):
        store.start_run(activity_id, "any", "smollm2", {})
    store.close()
    runner = CliRunner()
    for args in (
        ["exam", "run", "--resume", "3", "--shots", "4", "--no-instruction"],
        ["consult", "run", "--resume", "3", "--drop-conclusions"],
        ["french", "run", "--resume", "3", "-k", "2", "--oracle-passages"],
        ["consult", "run", "--max-turns", "2"],
    ):
        result = runner.invoke(cli, ["--db", db_path, *args, "--json"])
        assert result.exit_code == 0, result.output
    assert seen[:3] == [
        ("exam", {"shots": 4, "instruction": False}, 3),
        ("consult", {"keep_conclusions": False}, 3),
        ("french", {"k": 2, "oracle": True}, 3),
    ]
    activity_id, given, resume = seen[3]
    assert resume is None and given == ConsultSettings(max_turns=2).as_dict()


@dataclass
class WithTemperature(ExamSettings):
    """The exam's settings with one more field, declared as any other."""

    temperature: float = setting(0.0, help="Sampling temperature of the answers.", max=2.0)


# A fresh program in which the exam's settings are ``WithTemperature`` from the start, as if
# the field were written in the class: ``exam run --help`` and the app's form show it.
NEW_SETTING = """
import dataclasses, json, sys
import engine.exam.settings as module
from engine.fields import form_rows, setting


@dataclasses.dataclass
class ExamSettings(module.ExamSettings):
    temperature: float = setting(0.0, help="Sampling temperature of the answers.", max=2.0)


module.ExamSettings = ExamSettings

from click.testing import CliRunner
from engine.cli import cli
from gui.testing import open_window

shown = CliRunner().invoke(cli, ["exam", "run", "--help"]).output
window = open_window(sys.argv[1])
panel = window.go("exam").evaluation
box = panel.fields["temperature"]
box.setValue(1.5)
print(json.dumps({
    "help": shown,
    "rows": [row.name for row in form_rows(panel.settings_class)],
    "widget": [type(box).__name__, box.maximum(), box.toolTip()],
    "given": panel.given(),
}))
window.close()
"""


def test_a_new_setting_shows_in_help_and_in_the_form(tmp_path: Path):
    out = subprocess.run(
        [sys.executable, "-c", NEW_SETTING, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert "--temperature FLOAT RANGE" in found["help"]
    assert "Sampling temperature of the answers." in found["help"]
    assert found["rows"][-1] == "temperature"
    assert found["widget"] == ["QDoubleSpinBox", 2.0, "Sampling temperature of the answers."]
    assert found["given"]["temperature"] == 1.5


@pytest.mark.slow
def test_a_new_setting_is_stored_on_the_run_and_compared_on_resume(monkeypatch, store, chat_model):
    from engine.core.runs import RunError, run
    from engine.exam import runner
    from engine.exam.dataset import ensure_sample

    monkeypatch.setattr(runner, "ExamSettings", WithTemperature)  # the class the runs use
    given = {"model": "smollm2", "method": "logprob", "limit": 1, "temperature": 0.7}
    done = run(store, "exam", ensure_sample(store), given)
    assert done["status"] == "finished"
    assert store.run(done["run_id"])["settings"]["temperature"] == 0.7
    with pytest.raises(RunError, match=r"temperature 0.9 \(the run has 0.7\)"):
        run(store, "exam", resume=done["run_id"], settings={"temperature": 0.9})
