"""Index builds report their progress (passages done of the total) and can be cancelled."""

from __future__ import annotations

import threading

import french_fixtures
import pytest

from engine.core.progress import Cancelled, Progress
from engine.french.corpus import fingerprint
from engine.french.index import build_index, index_dir, load_index
from engine.text.embedder import BATCH_SIZE

indexes = french_fixtures.indexes

N = BATCH_SIZE + 8  # two embedding batches


@pytest.fixture
def tiny(store):
    """A corpus of ``N`` short passages, embedded in two batches."""
    rows = [
        {
            "text": f"Passage {i} : la warfarine est un anticoagulant oral.",
            "source": "t",
            "offset": i,
        }
        for i in range(N)
    ]
    store.add_corpus("tiny", rows, fingerprint=fingerprint(rows))
    return store


def test_progress_is_monotonic_and_ends_at_the_total(tiny, indexes):
    seen: list[Progress] = []
    build_index(tiny, "tiny", "hybrid", progress=seen.append)
    done = [p.done for p in seen]
    assert done == sorted(done) and {p.total for p in seen} == {2 * N}
    assert done[-1] == 2 * N
    embedded = [p.info["passages"] for p in seen if p.message == "embedding passages"]
    assert embedded == [BATCH_SIZE, N]


def test_cancel_after_the_first_batch_leaves_no_index(tiny, indexes):
    stop = threading.Event()

    def progress(p: Progress) -> None:
        if p.message == "embedding passages":
            stop.set()

    with pytest.raises(Cancelled, match="cancelled; nothing was written"):
        build_index(tiny, "tiny", "dense", progress=progress, cancel=stop)
    assert list(indexes.iterdir()) == []
    assert not index_dir("tiny-dense").exists()

    index = build_index(tiny, "tiny", "dense", cancel=lambda: False)
    assert index.rebuilt and len(load_index("tiny-dense")) == N


def test_ctrl_c_during_a_build_on_the_command_line(tiny, indexes, monkeypatch):
    from click.testing import CliRunner

    import engine.french.cli as cli_french
    from engine.cli import cli

    def interrupted(*args, progress, **kwargs):
        def press_ctrl_c(p: Progress) -> None:
            progress(p)
            if p.message == "embedding passages":
                raise KeyboardInterrupt

        return build_index(*args, progress=press_ctrl_c, **kwargs)

    monkeypatch.setattr(cli_french, "build_index", interrupted)
    db = str(tiny.path)
    out = CliRunner().invoke(
        cli, ["--db", db, "french", "index", "--corpus", "tiny", "--retriever", "dense"]
    )
    assert out.exit_code == 130, out.output
    assert "index build cancelled; nothing of it was kept" in out.output
    assert "Aborted" not in out.output and "Traceback" not in out.output
    assert list(indexes.iterdir()) == []
