"""Shared fixtures. Every model used here is a real embedded model, run on the CPU, or a
scripted one (``scripted_pool``) for the tests of the run loop that need no real model."""

from __future__ import annotations

import gc
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# Before any engine import: a private user data folder, cache and registry of working models (the
# suite's processes share the cores among themselves, not with others), offline hubs,
# headless Qt.
_MADE: list[str] = []  # the temporary folders this process made, removed when the run ends
for _name, _prefix in [
    ("MEDEXAM_HOME", "medexam-test-home-"),
    ("MEDEXAM_CORES_DIR", "medexam-test-cores-"),
    # One cache for the whole run, its workers included: a training base is dequantized once.
    ("MEDEXAM_CACHE", "medexam-test-cache-"),
]:
    if _name not in os.environ:
        os.environ[_name] = tempfile.mkdtemp(prefix=_prefix)
        _MADE.append(os.environ[_name])
if _worker := os.environ.get("PYTEST_XDIST_WORKER"):
    # Parallel workers inherit these from the controlling process: each keeps its own data
    # folder under the shared one, and all share one registry of cores.
    os.environ["MEDEXAM_HOME"] = os.path.join(os.environ["MEDEXAM_HOME"], _worker)
    os.makedirs(os.environ["MEDEXAM_HOME"], exist_ok=True)
# Models share the cores as the app's do (MEDEXAM_SHARE_CORES=machine): with the other medexam
# processes' models and leaving out the cores other programs keep busy, the suite's other
# workers among them: a model spinning on a core another worker holds would run 2-3 times slower.
# By default a model's numbers do not depend on its threads (tests/test_flash_attn.py).
os.environ.setdefault("MEDEXAM_SHARE_CORES", "machine")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from engine.models.pool import ModelPool, PooledModel, default_pool  # noqa: E402
from engine.store.store import Store  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: a plain pytest runs without it
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: a worker per core this process may use (its affinity, as the models'
    threads count them), at most 4: more would hold more copies of torch and Qt than the
    tests gain."""
    from engine.models.hardware import available_cores

    return min(available_cores(), 4)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The temporary folders made above removed (in the process that made them: the
    controlling one when the run has workers)."""
    import shutil

    for folder in _MADE:
        shutil.rmtree(folder, ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The files holding slow tests first, most slow tests first, each file's tests together
    and in their order: shared among workers (``scripts/test``), the long files start early
    and the quick ones fill in at the end, rather than one long file running alone last."""
    slow = Counter(item.path for item in items if item.get_closest_marker("slow"))
    items.sort(key=lambda item: -slow[item.path])


@pytest.fixture(scope="module", autouse=True)
def collect_module_garbage_here() -> Iterator[None]:
    """After a test file, collect everything its tests kept (its module fixtures, say) in
    the main thread: :func:`collect_garbage_here` freezes what outlives each test."""
    yield
    gc.unfreeze()
    gc.collect()


@pytest.fixture(autouse=True)
def collect_garbage_here() -> Iterator[None]:
    """Collect each test's garbage in the main thread: a Qt object collected later by a
    worker thread (whichever thread allocates when the collector runs) can crash. What
    survives is frozen (``gc.freeze``) until the end of the test file, so the next test's
    collection looks at its own objects only, not again at the half million that the
    imported libraries (torch, Qt, transformers) hold (a third of a second per test)."""
    yield
    gc.collect()
    gc.freeze()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A fresh database in a temporary folder."""
    s = Store(tmp_path / "medexam.db")
    yield s
    s.close()


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    """A database path for CLI tests (``medexam --db PATH …``)."""
    return str(tmp_path / "cli.db")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user data folder of the test's own (trained models and settings go there)."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("MEDEXAM_HOME", str(folder))
    return folder


@pytest.fixture
def models_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty models folder and a user data folder of its own (its settings and added
    models); Gemma, which lives in the models folder, is left out of the catalog."""
    from engine.models import catalog

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("MEDEXAM_HOME", str(home))
    folder = tmp_path / "models"
    folder.mkdir()
    monkeypatch.setattr(catalog, "models_dir", lambda: folder)
    monkeypatch.delitem(catalog.EMBEDDED, "gemma3-270m")
    return folder


@pytest.fixture(scope="session")
def chat_model() -> Iterator[PooledModel]:
    """The default embedded chat model (SmolLM2-135M-Instruct), leased from the process's
    model pool for the whole session: runs that name it ("smollm2") use this same model."""
    with default_pool().lease("smollm2") as model:
        yield model


@pytest.fixture(scope="session")
def base_model() -> Iterator[PooledModel]:
    """The embedded multilingual base model (Gemma 3 270M), held the same way."""
    with default_pool().lease("gemma3-270m") as model:
        yield model


@pytest.fixture
def scripted_pool() -> Iterator[Callable[..., ModelPool]]:
    """Make model pools of scripted models (:mod:`engine.models.scripted`), no model
    process: ``scripted_pool(ScriptedModel("doctor", replies=[...]), …)`` knows those models
    by name, the first being the default; with none, one model "scripted" answering "A".
    Pass the pool to a run (``run(..., pool=pool)``); it is closed after the test."""
    from engine.models.scripted import scripted_pool as make

    pools: list[ModelPool] = []

    def make_pool(*models: Any, **options: Any) -> ModelPool:
        pools.append(make(*models, **options))
        return pools[-1]

    yield make_pool
    for pool in pools:
        pool.close()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The public data sets beside the project (``../shared/data``); skips when absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip("the public data sets are not in ../shared/data")
    return SHARED_DATA


#: How long a GUI test waits for a condition by default (pytest-qt's own is 5 s): a step on a
#: worker thread that takes 35 ms alone may wait seconds for a core while the suite's other
#: workers train and decode. A test that fails still fails, later.
WAIT_MS = 30_000


@pytest.fixture
def qtbot(qtbot: Any) -> Any:
    """pytest-qt's ``qtbot``, whose ``waitUntil`` waits :data:`WAIT_MS` unless told."""
    wait_until = qtbot.waitUntil

    def patient_wait_until(callback: Callable[[], Any], *, timeout: int = WAIT_MS) -> None:
        wait_until(callback, timeout=timeout)

    qtbot.waitUntil = patient_wait_until
    return qtbot


@pytest.fixture
def window(qtbot: Any, tmp_path: Path) -> Iterator[Any]:
    """The app's main window over a fresh database in ``tmp_path``, shown; closed after the
    test with every message box left open. A test that needs the embedded chat model loaded
    asks for ``chat_model`` too."""
    from gui.testing import close_message_boxes, open_window

    w = open_window(tmp_path)
    qtbot.addWidget(w)
    w.show()
    yield w
    close_message_boxes()
    w.close()
