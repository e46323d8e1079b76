"""Parts named by typed references (engine.registry.Lazy), not "module:attribute" strings:
each loads the thing of its kind, one PartError line says what is wrong with one that does
not, a descriptor that names a part as a string is refused, and no such string is left."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import click
import pytest

from engine.activities import RUN_SPEC, Activity, activities
from engine.experiments.plan import presets
from engine.registry import CLASS, COMMAND, FUNCTION, Lazy, PartError
from engine.train.kinds import kinds

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = re.compile(r"^[a-z_]\w*(\.\w+)+:[A-Za-z_]\w*$")


def test_a_part_loads_as_its_kind():
    spec = Lazy("engine.exam.runner", "SPEC", RUN_SPEC).load()
    assert spec.activity.id == "exam"
    assert isinstance(Lazy("engine.cli.runs", "runs", COMMAND).load(), click.Group)
    assert Lazy("engine.exam.settings", "ExamSettings", CLASS).load().__name__ == "ExamSettings"
    assert str(Lazy("engine.cli.runs", "runs", COMMAND)) == "engine.cli.runs:runs"


@pytest.mark.parametrize(
    ("part", "said"),
    [
        (Lazy("engine.no_such", "x", FUNCTION), "engine.no_such:x cannot be loaded: No module"),
        (Lazy("engine.cli.runs", "nothing", COMMAND), "engine.cli.runs:nothing cannot be loaded"),
        (Lazy("engine.exam.settings", "ExamSettings", COMMAND), "is a type, not a click command"),
        (Lazy("engine.cli.runs", "runs", RUN_SPEC), "is a Group, not a run spec"),
        (
            Lazy("engine.exam.runner", "SPEC", CLASS),
            "engine.exam.runner:SPEC is a Spec, not a class",
        ),
    ],
)
def test_a_part_missing_or_of_another_kind_is_one_clear_error(part, said):
    with pytest.raises(PartError, match=re.escape(said)) as caught:
        part.load()
    assert "\n" not in str(caught.value)


def test_a_descriptor_naming_a_part_as_a_string_is_refused():
    with pytest.raises(TypeError, match=r"activity 'old': cli is str 'old.cli:group', not a Lazy"):
        Activity("old", "Old", "accuracy", "item", cli="old.cli:group")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"import_commands\['x'\] is str"):
        Activity("old", "Old", "accuracy", "item", import_commands={"x": "old.cli:x"})  # type: ignore[dict-item]


def test_every_part_medexam_names_loads_as_its_kind():
    parts: list[Lazy[object]] = []
    for act in activities().values():
        parts += [p for p in (act.spec, act.settings, act.cli, act.report, act.run_label) if p]
        parts += [p for p in (act.card, act.explained, act.screen) if p]
        parts += list(act.import_commands.values())
    for preset in presets().values():
        parts += [p for p in (preset.report, preset.summary) if p]
    for kind in kinds().values():
        found = (kind.settings, kind.prepare, kind.check, kind.answerer, kind.evaluation)
        parts += [p for p in (*found, kind.data_picker) if p]
    assert len(parts) > 40
    for part in parts:
        part.load()  # raises PartError naming the part


def test_no_module_attribute_string_is_left_in_engine_or_gui():
    found = []
    for path in sorted([*ROOT.glob("engine/**/*.py"), *ROOT.glob("gui/**/*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            text = node.value if isinstance(node, ast.Constant) else None
            if isinstance(text, str) and REFERENCE.match(text):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {text}")
    assert found == []
