"""One registry (:mod:`engine.registry`): every kind of thing registered there, one way, and
checked when registered — an object of another class, another object under a taken key, a
part that cannot be found, a scorer's metric of no key of its own, are refused in one line;
a plug-in registering any of them is left out; and no other module keeps a registry."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from engine.activities import Activity
from engine.core.metrics import Metric
from engine.experiments.plan import Preset
from engine.importers import Format
from engine.registry import (
    CLASS,
    COMMAND,
    KINDS,
    Lazy,
    RegistryError,
    entries,
    get,
    load_plugins,
    register,
    registered,
    unregister,
)

ROOT = Path(__file__).resolve().parents[1]
#: Module-level dicts written after they are made that are no registry: what was read once
#: (a file's header, an adapter's check, a loaded model) kept for the next ask.
CACHES = {
    ("engine/models/adapters.py", "_ADAPTERS"),
    ("engine/models/gguf.py", "_CACHE"),
    ("engine/text/embedder.py", "_models"),
}


def _module_dicts(tree: ast.Module) -> set[str]:
    """The names a module binds to a dict at its top level."""
    found = set()
    for node in tree.body:
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        is_dict = isinstance(value, ast.Dict | ast.DictComp) or (
            isinstance(value, ast.Call) and getattr(value.func, "id", "") in ("dict", "defaultdict")
        )
        found |= {t.id for t in targets if is_dict and isinstance(t, ast.Name)}
    return found


def _written(tree: ast.Module) -> set[str]:
    """The names the module writes into: ``NAME[k] = v``, ``NAME.update(…)``…"""
    found = set()
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else []
        targets += [node.target] if isinstance(node, ast.AugAssign) else []
        found |= {t.value.id for t in targets if isinstance(t, ast.Subscript)
                  and isinstance(t.value, ast.Name)}  # fmt: skip
        func = node.func if isinstance(node, ast.Call) else None
        mutators = ("update", "setdefault", "pop", "popitem", "clear")
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            found |= {func.value.id} if func.attr in mutators else set()
    return found


def registries(sources: dict[str, str]) -> set[tuple[str, str]]:
    """``(path, name)`` of each registry in ``sources`` (path → text): a module-level dict
    that its module, or a module importing it, writes into; and each ``register…``
    function."""
    trees = {path: ast.parse(text) for path, text in sources.items()}
    modules = {path.removesuffix(".py").replace("/", "."): path for path in trees}
    dicts = {path: _module_dicts(tree) for path, tree in trees.items()}
    written = {path: _written(tree) for path, tree in trees.items()}  # each tree walked once
    found = {(path, name) for path in trees for name in written[path] & dicts[path]}
    for path, tree in trees.items():
        for node in ast.walk(tree):
            named = getattr(node, "name", "") if isinstance(node, ast.FunctionDef) else ""
            if named.startswith("register"):
                found.add((path, named))
            if isinstance(node, ast.ImportFrom) and node.module in modules:
                home = modules[node.module]
                names = {a.asname or a.name: a.name for a in node.names if a.name in dicts[home]}
                found |= {(home, names[n]) for n in written[path] & set(names)}
    return found


def engine_sources() -> dict[str, str]:
    paths = [*ROOT.glob("engine/**/*.py"), *ROOT.glob("gui/**/*.py")]
    return {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in paths}


def test_no_registry_is_kept_outside_the_registry_module():
    found = registries(engine_sources())
    outside = {(path, name) for path, name in found if path != "engine/registry.py"}
    assert outside - CACHES == set()
    assert found >= CACHES  # each still there, still a cache


def test_the_registry_finder_finds_each_kind_of_registry():
    sources = {
        "pkg/things.py": "THINGS = {}\n\ndef add(x):\n    THINGS[x.name] = x\n",
        "pkg/titles.py": "TITLES: dict[str, str] = {}\n",
        "pkg/user.py": "from pkg.titles import TITLES\nTITLES['corpus'] = 'Corpus'\n",
        "pkg/maker.py": "def register_maker(m):\n    return m\n",
        "pkg/table.py": "TABLE = {'a': 1}\n\ndef read(k):\n    return TABLE[k]\n",
    }
    assert registries(sources) == {
        ("pkg/things.py", "THINGS"),
        ("pkg/titles.py", "TITLES"),
        ("pkg/maker.py", "register_maker"),
    }


def test_every_kind_is_read_through_one_lookup_that_names_the_known_ones():
    said = {  # each kind's words, and one of the known ones named
        "activity": ("unknown activity 'nope' (choose from exam, consult, french", "french"),
        "scorer": ("no scorer 'nope' (choose from consult.answer-at, ", "exam.letter"),
        "preset": ("no preset 'nope' (choose from ", "compare-models"),
        "chart": ("unknown chart kind 'nope'", ""),
        "backend": ("no model backend named 'nope' (known: gguf, openai, scripted", "gguf"),
        "training": ("unknown training kind 'nope' (choose from ", "french-reader"),
    }
    for kind, (start, known) in said.items():
        with pytest.raises(Exception) as caught:
            get(kind, "nope")
        line = str(caught.value)
        assert line.startswith(start) and known in line and "\n" not in line
    with pytest.raises(ValueError, match=r"^no exam format 'x' \(choose from explaincpe, mcq\)$"):
        get("format", ("exam", "x"))
    assert set(KINDS) == {*said, "format"}
    assert get("format", ("corpus", "folder")).kind_title == "French corpus"


def test_an_object_of_another_class_or_kind_is_refused():
    with pytest.raises(RegistryError, match="^a scorer must be a Scorer, not a str$"):
        register("scorer", "exam.letter")
    with pytest.raises(RegistryError, match="^a preset must be a Preset, not an Activity$"):
        register("preset", Activity("x", "X", "accuracy", "item"))
    with pytest.raises(RegistryError, match="^no kind 'widget' in the registry"):
        register("widget", object())
    with pytest.raises(TypeError, match=r"registered as an object: register\('preset', x\)"):
        register("preset", name="p")(lambda request: [])


def test_another_object_under_a_taken_key_is_refused_the_same_one_again_is_nothing():
    exam = get("activity", "exam")
    assert register("activity", exam) is exam
    with pytest.raises(RegistryError, match="^activity 'exam' is registered already$"):
        register("activity", Activity("exam", "Another exam", "accuracy", "item"))
    assert get("activity", "exam") is exam
    other = Preset("compare-models", "Other", None, lambda request: [])
    with pytest.raises(RegistryError, match="^preset 'compare-models' is registered already$"):
        register("preset", other)
    with registered("preset", other):  # a test's own, for a while
        assert get("preset", "compare-models") is other
    assert get("preset", "compare-models") is not other


@pytest.mark.parametrize(
    ("part", "said"),
    [
        (
            Lazy("engine.no_such", "group", COMMAND),
            "activity 'ghost': its cli engine.no_such:group: no module 'engine.no_such'",
        ),
        (
            Lazy("engine.cli.runs", "nothing", COMMAND),
            "activity 'ghost': its cli engine.cli.runs:nothing cannot be loaded",
        ),
        (
            Lazy("engine.cli.runs", "runs_list", CLASS),
            "activity 'ghost': its cli engine.cli.runs:runs_list is a Command, not a class",
        ),
    ],
)
def test_a_part_that_cannot_be_found_is_refused_when_registered(part, said):
    import engine.cli.runs  # noqa: F401 - imported: its parts are looked at

    with pytest.raises(RegistryError, match=f"^{said}") as caught:
        register("activity", Activity("ghost", "Ghost", "accuracy", "item", cli=part))
    assert "\n" not in str(caught.value) and "ghost" not in entries("activity")


def test_a_part_of_a_module_not_imported_is_found_without_importing_it():
    """Registering French QA finds its screen's module, imports no Qt and no gui package."""
    code = (
        "import sys\nfrom engine.activities import activities\nactivities()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('gui', 'PySide6')))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_scorers_metric_of_no_key_of_its_own_and_a_bad_format_are_refused():
    bad = Metric("right", label="Right (%)")
    with pytest.raises(ValueError, match=r"scorer 'exam.bad': a metric of right, none of its"):
        register("scorer", name="exam.bad", activities=("exam",), keys=("correct",),
                 metrics={"right": bad})(lambda answer, item, context: {})  # fmt: skip
    assert "exam.bad" not in entries("scorer")
    with pytest.raises(ValueError, match="source 'url', not file, folder, dataset"):
        Format("exam", "web", "Web", lambda store, req: {}, source="url")
    with pytest.raises(ValueError, match="a dataset source, and only it, names datasets"):
        Format("corpus", "sets", "Sets", lambda store, req: {}, source="dataset")


def test_a_plugin_registering_what_is_refused_is_left_out_in_one_line(
    tmp_path, monkeypatch, capsys
):
    group, sources = (
        "medexam.registry-test",
        {
            "taken": "from engine.activities import Activity\nfrom engine.registry import register\n"
            "register('activity', Activity('fine', 'Fine', 'accuracy', 'item'))\n"
            "register('activity', Activity('exam', 'Mine', 'accuracy', 'item'))\n",
        },
    )
    for name, source in sources.items():
        (tmp_path / f"medexam_refused_{name}.py").write_text(source, encoding="utf-8")
        dist = tmp_path / f"medexam_refused_{name}-1.0.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: r-{name}\nVersion: 1.0\n")
        (dist / "entry_points.txt").write_text(f"[{group}]\n{name} = medexam_refused_{name}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        failed = load_plugins(group)
        assert failed == {"taken": "RegistryError: activity 'exam' is registered already"}
        assert capsys.readouterr().err == (
            "Warning: plug-in 'taken' (medexam_refused_taken) left out: "
            "RegistryError: activity 'exam' is registered already\n"
        )
        assert "fine" not in entries("activity")  # what it registered before is taken back
        assert get("activity", "exam").name == "Exam"
    finally:
        unregister("activity", "fine")
        sys.modules.pop("medexam_refused_taken", None)
