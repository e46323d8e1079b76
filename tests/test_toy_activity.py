"""A fourth activity from a package of its own (``tests/plugins/medexam_toy``), installed
beside medexam and found through the ``medexam.activities`` entry point, with no edit to
medexam: it is listed, run, scored again, reported, imported and shown in the app like
medexam's own. A plug-in that fails leaves one warning line and the rest works."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.registry import PLUGIN_GROUP
from engine.store.store import Store

TOY = Path(__file__).parent / "plugins" / "medexam_toy"
MEDEXAM = Path(sys.executable).with_name("medexam")
PLUGGED_IN = ("medexam_toy", "medexam_broken", "medexam_halfway")

SUMS = [
    {"id": "s1", "question": "2 + 3", "answer": 5},
    {"id": "s2", "question": "4 + 4", "answer": 8},
    {"id": "s3", "question": "1 + 6", "answer": 7},
]

# Two plug-ins that fail: one registers an activity, then fails; one names a CLI group that
# is not there (refused once its module is imported: its registration is checked then).
BROKEN = {
    "broken": """
from engine.activities import Activity
from engine.importers import Format
from engine.registry import COMMAND, Lazy, register

none = Lazy("medexam_broken", "none", COMMAND)
register("activity", Activity("broken", "Broken", "accuracy", "item", cli=none))
register("format", Format("broken", "any", "Anything", lambda store, req: {}))
raise RuntimeError("no sums today")
""",
    "halfway": """
from engine.activities import Activity
from engine.registry import COMMAND, Lazy, register

none = Lazy("medexam_halfway", "none", COMMAND)
register("activity", Activity("halfway", "Halfway", "accuracy", "item", cli=none))
""",
}


def install(site: Path, project: Path) -> None:
    """Install ``project`` into the folder ``site`` the way an editable install does: a
    ``.dist-info`` holding the entry points its ``pyproject.toml`` declares (its sources go
    on the path beside ``site``: :func:`paths`)."""
    meta = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    name = meta["name"].replace("-", "_")
    dist = site / f"{name}-{meta['version']}.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {meta['name']}\nVersion: {meta['version']}\n",
        encoding="utf-8",
    )
    groups = meta.get("entry-points", {})
    text = "".join(
        f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in points.items())
        for group, points in groups.items()
    )
    (dist / "entry_points.txt").write_text(text, encoding="utf-8")


def broken_plugins(site: Path) -> None:
    """Install the plug-ins of :data:`BROKEN` into ``site``, each a package of its own."""
    for name, source in BROKEN.items():
        (site / f"medexam_{name}.py").write_text(source, encoding="utf-8")
        project = site / name
        project.mkdir()
        (project / "pyproject.toml").write_text(
            f'[project]\nname = "medexam-{name}"\nversion = "1.0"\n'
            f'[project.entry-points."{PLUGIN_GROUP}"]\n{name} = "medexam_{name}"\n',
            encoding="utf-8",
        )
        install(site, project)


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A site folder holding the toy package and the broken plug-ins, installed."""
    folder = tmp_path / "site"
    folder.mkdir()
    install(folder, TOY)
    broken_plugins(folder)
    return folder


def paths(site: Path) -> list[str]:
    """What goes on the path for the packages in ``site``: the folder, the toy's sources."""
    return [str(site), str(TOY)]


def medexam(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(MEDEXAM), *args], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def toy_installed(site: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The toy package and the broken plug-ins installed in this process, the entry points
    read as at start-up (again, when this process read them before)."""
    from engine.activities import activities
    from engine.registry import load_plugins, unregister

    for folder in reversed(paths(site)):
        monkeypatch.syspath_prepend(folder)
    if "toy" not in activities():
        load_plugins()
    yield
    from engine.cli import import_group

    import_group.commands.pop("sums", None)
    unregister("activity", "toy")
    unregister("format", ("toy", "sums"))
    unregister("scorer", "toy.exact")
    for name in [m for m in sys.modules if m.startswith(PLUGGED_IN)]:
        del sys.modules[name]


def test_entry_point_activity_in_the_cli_runs_list_rescore_and_report(
    site, toy_installed, tmp_path
):
    from engine.cli import cli

    db = str(tmp_path / "m.db")
    sums = tmp_path / "sums.jsonl"
    sums.write_text("".join(json.dumps(s) + "\n" for s in SUMS), encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    (home / "models.json").write_text(
        json.dumps({"adder": {"backend": "scripted", "replies": ["5", "9", "7"]}})
    )
    path = os.pathsep.join([*paths(site), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env = {**os.environ, "PYTHONPATH": path, "MEDEXAM_HOME": str(home)}

    # A medexam started with the packages installed reads the entry points.
    found = medexam(env, "--help")
    assert found.returncode == 0, found.stderr
    assert "toy " in found.stdout and "Sums for a model to add up." in found.stdout
    assert "broken" not in found.stdout  # what the failed plug-in registered is gone
    assert "halfway" not in found.stdout  # its group is not there
    warnings = sorted(found.stderr.strip().splitlines())
    assert len(warnings) == 2, found.stderr
    assert warnings[0].startswith("Warning: plug-in 'broken'") and "no sums today" in warnings[0]
    assert warnings[1] == (
        "Warning: plug-in 'halfway' (medexam_halfway) left out: RegistryError: activity "
        "'halfway': its cli medexam_halfway:none is a Lazy, not a click command"
    )
    runner = CliRunner()  # the same, read in this process (toy_installed)
    imported = runner.invoke(cli, ["--db", db, "import", "sums", str(sums)])
    assert imported.exit_code == 0, imported.output
    assert "Imported 3 sums as “sums”." in imported.output
    ran = medexam(env, "--db", db, "toy", "run", "--dataset", "sums", "--model", "adder")
    assert ran.returncode == 0, ran.stderr
    assert "Sums right (%)" in ran.stdout and "66.7\n" in ran.stdout

    listed = runner.invoke(cli, ["--db", db, "runs", "list", "--activity", "toy"])
    assert listed.exit_code == 0, listed.output
    assert " toy " in listed.output and "adder" in listed.output
    again = runner.invoke(cli, ["--db", db, "rescore", "1", "--force"])
    assert again.exit_code == 0, again.output
    assert "toy.exact: 3 answers scored" in again.output
    stored = Store(db)
    summary = stored.run(1)["summary"]  # no sections of its own: counts and its metrics
    stored.close()
    assert {k: summary[k] for k in ("n", "answered", "no_answer", "chance")} == {
        "n": 3, "answered": 3, "no_answer": {}, "chance": {}
    }  # fmt: skip
    report = runner.invoke(cli, ["--db", db, "report", "1"])
    assert report.exit_code == 0 and "== Sums ==" in report.output and "66.7" in report.output


@pytest.mark.gui
def test_entry_point_activity_in_the_sidebar_import_dialog_and_results(
    toy_installed, window, qtbot
):
    from engine.core.scoring import Scored
    from engine.importers import activities as import_kinds
    from gui.widgets.qt_import import ImportDialog

    store = window.ctx.store
    store.add_dataset("sums", "toy", SUMS)
    run_id = store.start_run("toy", "sums", "adder", {}, "model", 3)
    right = [Scored("toy.exact", 1, {"correct": True})]
    store.add_answer(run_id, "s1", response="5", chosen="5", gold="5", scores=right)
    store.finish_run(run_id, {"accuracy": 100.0, "answered": 1, "n": 3})

    row = next(i for i, s in enumerate(window.screen_list) if s.key == "toy")
    item = window.nav.item(row)
    assert item.text() == "Sums" and item.toolTip() == "Sums for a model to add up"
    assert "Broken" not in [window.nav.item(i).text() for i in range(window.nav.count())]
    assert "broken" not in import_kinds()  # what the failed plug-in registered is gone
    screen = window.go("toy")
    assert type(screen).__module__ == "medexam_toy.screen"
    assert screen.datasets.item(0).text() == "sums (3 sums)"
    assert screen.runs.item(0).text() == f"#{run_id} adder: 100.0%"

    dialog = ImportDialog(window.ctx, "toy", window)
    qtbot.addWidget(dialog)
    assert dialog.kind.currentData() == "toy" and dialog.kind.currentText() == "Sums to do"
    results = window.go("results")
    names = [results.activity.itemText(i) for i in range(results.activity.count())]
    assert "Sums" in names
    results.activity.setCurrentIndex(names.index("Sums"))
    results.reload()
    assert results.proxy.rowCount() == 1
    results.select_runs([run_id])
    assert "Sums right (%)" in results.summary.toPlainText()


# Plug-ins that end the process or never end their import: each is left out with one
# warning, and medexam goes on without it.
RUNAWAY = {
    "exit_code": "import sys\nsys.exit(3)\n",
    "exit_bare": "raise SystemExit\n",
    "interrupt": "raise KeyboardInterrupt\n",
    "hang": "import time\ntime.sleep(3600)\n",
}


def runaway_site(
    folder: Path, sources: dict[str, str] = RUNAWAY, group: str = PLUGIN_GROUP
) -> Path:
    """A site folder holding plug-ins (``medexam_runaway_<name>``, of :data:`RUNAWAY` by
    default), their entry points in ``group``."""
    folder.mkdir()
    for name, source in sources.items():
        (folder / f"medexam_runaway_{name}.py").write_text(source, encoding="utf-8")
        dist = folder / f"medexam_runaway_{name}-1.0.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: medexam-runaway-{name}\nVersion: 1.0\n",
            encoding="utf-8",
        )
        (dist / "entry_points.txt").write_text(
            f"[{group}]\n{name} = medexam_runaway_{name}\n", encoding="utf-8"
        )
    return folder


def test_a_plugin_exit_at_import_leaves_help_and_builtins_working(tmp_path):
    site = runaway_site(tmp_path / "site")
    install(site, TOY)
    path = os.pathsep.join([str(site), str(TOY), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path.rstrip(os.pathsep), "MEDEXAM_PLUGIN_TIMEOUT": "1"}
    env["MEDEXAM_HOME"] = str(tmp_path / "home")

    found = medexam(env, "--help")
    assert found.returncode == 0, found.stderr
    for command in ("exam ", "consult ", "french ", "runs ", "toy "):  # the good plug-in too
        assert f"\n  {command}" in found.stdout
    warnings = sorted(found.stderr.strip().splitlines())
    assert len(warnings) == len(RUNAWAY), found.stderr
    said = {
        "exit_bare": "SystemExit",
        "exit_code": "SystemExit: 3",
        "hang": "its import did not end within 1 s",
        "interrupt": "KeyboardInterrupt",
    }
    for line, (name, why) in zip(warnings, sorted(said.items()), strict=True):
        assert line == f"Warning: plug-in {name!r} (medexam_runaway_{name}) left out: {why}"

    ran = medexam(env, "--db", str(tmp_path / "m.db"), "exam", "sample")
    assert ran.returncode == 0, ran.stderr
    assert "explaincpe-sample" in ran.stdout
    assert ran.stderr.count("Warning: plug-in") == len(RUNAWAY)


def test_a_plugin_exit_or_hang_takes_back_what_it_registered(tmp_path, monkeypatch):
    """In this process, under a group of its own: what a plug-in registered before it
    exited is taken back, and one that outlasts its time registers nothing afterwards."""
    import threading
    import time

    from engine.registry import entries, load_plugins, unregister

    group = "medexam.runaway-test"
    sources = {
        "exit_code": "from engine.activities import Activity\n"
        "from engine.registry import register\n"
        "register('activity', Activity('exiter', 'Exiter', 'accuracy', 'item'))\n"
        "raise SystemExit(2)\n",
        "hang": "import time\nfrom engine.activities import Activity\n"
        "from engine.registry import register\n"
        "time.sleep(1.5)\n"
        "register('activity', Activity('sleeper', 'Sleeper', 'accuracy', 'item'))\n",
    }
    site = runaway_site(tmp_path / "site", sources, group)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("MEDEXAM_PLUGIN_TIMEOUT", "0.3")
    try:
        failed = load_plugins(group)
        assert failed == {
            "exit_code": "SystemExit: 2",
            "hang": "its import did not end within 0.3 s",
        }
        assert not {"exiter", "sleeper"} & set(entries("activity", load=False))
        late = [t for t in threading.enumerate() if t.name == "medexam plug-in hang"]
        for thread in late:
            thread.join(10)
        time.sleep(0.05)
        assert "sleeper" not in entries(
            "activity", load=False
        )  # its registration after its time was refused
    finally:
        for name in ("exiter", "sleeper"):
            unregister("activity", name)
        for module in [m for m in sys.modules if m.startswith("medexam_runaway_")]:
            del sys.modules[module]


@pytest.mark.gui
def test_entry_point_activity_gets_a_person_mode_from_its_item_widget_alone(
    toy_installed, window, qtbot
):
    """The toy names an item widget and nothing else of a person's: the app's one practice
    panel asks its sums through the run loop, its scorer says right or wrong, and the run
    is stored as a person's."""
    from PySide6.QtCore import Qt

    store = window.ctx.store
    store.add_dataset("sums", "toy", SUMS)
    window.ctx.notify_data()
    p = window.go("toy").practice
    assert type(p.part).__name__ == "SumsItem"
    p.dataset.select("sums")
    qtbot.mouseClick(p.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 1 and p.item is not None and not p.busy)
    assert list(p.options.buttons) == ["A", "B", "C"]
    for i, right in enumerate((True, False, True)):
        gold = p.part.gold(p.item)
        p.options.toggle(gold if right else next(x for x in "ABC" if x != gold))
        qtbot.mouseClick(p.submit_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: p.answered and not p.busy)
        assert p.session.feedback[-1].correct is right
        assert p.grid.state(i) == ("right" if right else "wrong")
        qtbot.mouseClick(p.next_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: not p.busy and (p.stack.currentIndex() == 0 or not p.answered))
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 0 and not p.busy)
    (run,) = store.runs("toy")
    assert run["runner"] == "person" and run["status"] == "finished"
    assert run["summary"]["accuracy"] == pytest.approx(200 / 3, abs=0.1)
    chosen = {a["item_key"]: a["chosen"] for a in store.answers(run["id"])}
    assert chosen["s1"] == "5" and chosen["s2"] != "8" and chosen["s3"] == "7"
