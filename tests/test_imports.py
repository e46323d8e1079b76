"""Imports: no cycles inside ``engine`` nor ``gui`` (whose screens reach the window through
its navigator), light packages and CLI, thread-safe lazy names."""

from __future__ import annotations

import ast
import json
import random
import subprocess
import sys
from pathlib import Path

import click
import pytest

REPO = Path(__file__).resolve().parents[1]
ENGINE = REPO / "engine"
GUI = REPO / "gui"
HEAVY = ("bm25s", "scipy", "torch", "sentence_transformers", "llama_cpp", "jieba", "PySide6")


def python(code: str, timeout: float = 300) -> str:
    """Run ``code`` in a fresh interpreter at the repository root; return its stdout."""
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def loaded_after(statement: str) -> set[str]:
    code = f"import sys, json\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    return set(json.loads(python(code).splitlines()[-1]))


# -- the import graph ----------------------------------------------------------------------


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, known: set[str], typing: bool = False) -> set[str]:
    """Modules of ``known`` that ``path`` imports anywhere (functions included, what only
    type checking imports too when ``typing``)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) and not typing:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([node.module] if node.module else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return {m for m in found if m in known and m != name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def test_engine_has_no_import_cycles():
    paths = sorted(ENGINE.rglob("*.py"))
    known = {module_name(p) for p in paths}
    graph = {module_name(p): imported(p, known) for p in paths}
    assert graph["engine.french.corpus"] and graph["engine.french.dataset"]
    assert cycles(graph) == []


def below(graph: dict[str, set[str]], module: str) -> set[str]:
    """Every module ``module`` imports, directly or through others."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        for found in graph[todo.pop()] - seen:
            seen.add(found)
            todo.append(found)
    return seen


#: What the store is made of; it imports nothing else but the bottom layer.
STORE = {
    "engine.store.store",
    "engine.store.dbfile",
    "engine.store.migrations",
    "engine.store.fingerprint",
    "engine.store.scorerows",
    "engine.store.corpusrows",
    "engine.store.deleted",
    "engine.store.owner",
    "engine.store.changes",
}


def test_engine_has_no_import_cycles_type_checking_included():
    """Type-only imports (``if TYPE_CHECKING:``) count: the registry imports none of what
    registers into it, the store nothing above it, report shapes nothing of the statistics,
    slots nothing of the load settings."""
    paths = sorted(ENGINE.rglob("*.py"))
    known = {module_name(p) for p in paths}
    graph = {module_name(p): imported(p, known, typing=True) for p in paths}
    assert "engine.models.gpu" in graph["engine.models.slots"]  # a type-only import, seen
    assert cycles(graph) == []
    bottom = {"engine.errors", "engine.models.protocol"}
    assert below(graph, "engine.registry") <= bottom
    under_store = {m for part in STORE for m in below(graph, part)} - STORE
    assert under_store <= {*bottom, "engine.registry", "engine.paths", "engine.types"}


def test_gui_has_no_import_cycles_type_checking_included():
    """The screens reach the main window through :class:`gui.navigator.Navigator`: no gui
    module imports :mod:`gui.main_window` back, not even for its type."""
    paths = sorted(GUI.rglob("*.py"))
    known = {module_name(p) for p in paths}
    graph = {module_name(p): imported(p, known, typing=True) for p in paths}
    assert "gui.widgets.common" in graph["gui.main_window"]
    assert cycles(graph) == []


def test_every_gui_module_imports_in_any_order():
    names = [module_name(p) for p in sorted(GUI.rglob("*.py"))]
    seed = random.randrange(1000)
    random.Random(seed).shuffle(names)
    code = (
        "import importlib, os\nos.environ['QT_QPA_PLATFORM'] = 'offscreen'\n"
        f"for name in {names!r}:\n    importlib.import_module(name)\nprint('ok')"
    )
    assert python(code).strip() == "ok", f"order of seed {seed}: {names}"


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# -- what an import loads ------------------------------------------------------------------


def test_importing_the_cli_loads_no_heavy_library_and_no_activity():
    modules = loaded_after("import engine.cli")
    assert not {m for m in modules if m.split(".")[0] in HEAVY}
    assert not {m for m in modules if m.startswith(("engine.consult", "engine.french"))}
    assert not {m for m in modules if m.startswith(("engine.exam", "engine.models.catalog"))}


def test_naming_the_store_does_not_load_sqlite_utils():
    """Modules that name :class:`Store` (results, export, the GUI) load the database library
    only when a store is opened, after the window is painted."""
    modules = loaded_after(
        "from engine.store.store import Store, StoreError\nimport engine.store.migrations"
    )
    assert "sqlite_utils" not in modules and "numpy" not in modules


def test_storing_an_answer_imports_no_scoring():
    """Answers are scored before they reach the store, which only keeps scorers' results."""
    modules = loaded_after(
        "from engine.store.store import Store\nstore = Store(':memory:')\n"
        "store.add_answer(store.start_run('exam', 'demo', 'm'), 'q1', chosen='A')"
    )
    assert "engine.store.store" in modules and "engine.core.scoring" not in modules


def test_importing_a_package_imports_none_of_its_modules():
    modules = loaded_after("import engine, engine.exam, engine.french, engine.consult")
    engine_modules = {m for m in modules if m.startswith("engine")}
    assert engine_modules == {"engine", "engine.exam", "engine.french", "engine.consult"}


def test_public_names_still_import_from_their_packages():
    out = python(
        "import engine.exam, engine.french, engine.consult\n"
        "from engine.french import FrenchSitting, ensure_sample\n"
        "from engine.french.dataset import gold, options, LETTERS\n"
        "from engine.french.items import gold as g\n"
        "from engine import __version__\n"
        "assert gold is g and FrenchSitting.__module__ == 'engine.french.person'\n"
        "for pkg in (engine.exam, engine.french, engine.consult):\n"
        "    for name in pkg.__all__:\n"
        "        assert getattr(pkg, name) is not None, name\n"
        "    assert set(pkg.__all__) <= set(dir(pkg))\n"
        "print(__version__)"
    )
    assert out.strip()
    with pytest.raises(AttributeError, match="nothing"):
        import engine.french

        _ = engine.french.nothing


THREADED = """
import sys, threading
barrier = threading.Barrier(4)
errors = []

def run(job):
    barrier.wait()
    try:
        job()
    except BaseException as exc:
        errors.append(repr(exc))

def package():
    import engine.french
    assert engine.french.FrenchSitting is not None

def from_import():
    from engine.french import FrenchSitting, ensure_sample
    assert FrenchSitting and ensure_sample

def corpus():
    from engine.french.corpus import add_corpus_from_path
    assert add_corpus_from_path

def dataset():
    from engine.french.dataset import ensure_sample
    assert ensure_sample

threads = [threading.Thread(target=run, args=(job,))
           for job in (package, from_import, corpus, dataset)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert not errors, errors
print("ok")
"""


@pytest.mark.parametrize("attempt", range(3))
def test_threads_importing_engine_french_at_once_all_succeed(attempt):
    assert python(THREADED).strip() == "ok"


# -- the lazy command groups ---------------------------------------------------------------


def test_help_lists_every_command_and_each_loads_from_its_module():
    from engine.cli import COMMANDS, activity_commands, cli, import_commands, import_group

    ctx = click.Context(cli)
    everything = {*COMMANDS, *activity_commands()}
    assert {"exam", "consult", "french", "rescore"} <= everything
    assert set(cli.list_commands(ctx)) == {*everything, "import"}
    importers = import_commands()
    assert import_group.list_commands(ctx) == sorted(importers)
    for group, names in ((cli, everything), (import_group, importers)):
        for name in names:
            command = group.get_command(ctx, name)
            assert isinstance(command, click.Command) and command.name == name
    out = python(
        "import sys\nfrom engine.cli import cli\n"
        "sys.argv = ['medexam', '--help']\n"
        "try:\n    cli(prog_name='medexam')\nexcept SystemExit:\n    pass\n"
    )
    listed = {line.split()[0] for line in out.split("Commands:")[1].splitlines() if line.strip()}
    assert listed == {*everything, "import"}


def test_a_command_loads_only_its_own_module():
    modules = loaded_after(
        "from click.testing import CliRunner\nfrom engine.cli import cli\n"
        "assert CliRunner().invoke(cli, ['runs', '--help']).exit_code == 0"
    )
    cli_modules = {m for m in modules if m.startswith("engine.cli.")}
    assert cli_modules == {"engine.cli.common", "engine.cli.runs"}
