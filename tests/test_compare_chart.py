"""``runs compare --chart FILE`` writes the format FILE's suffix names (SVG or PNG), and
refuses any other suffix in one line before comparing anything."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from test_compare import stored_run

from engine.cli import cli
from engine.exam.dataset import ensure_sample
from engine.store.store import Store

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def two_runs(db_path: str) -> list[str]:
    """Two exam runs whose summaries know their model's file size."""
    store = Store(db_path)
    try:
        dataset = ensure_sample(store)
        ids = []
        for model, size, rights in (("big", 4 << 30, [True] * 10), ("small", 1 << 28, [True] * 5)):
            run_id = stored_run(store, dataset, model, rights)
            usage = {model: {"file_size": size, "quantization": "Q4_K_M"}}
            store.finish_run(run_id, {"accuracy": 10.0 * len(rights), "usage": usage})
            ids.append(str(run_id))
        return ids
    finally:
        store.close()


@pytest.mark.parametrize(
    ("name", "starts"), [("size.png", PNG), ("SIZE.PNG", PNG), ("size.svg", b"<svg")]
)
def test_the_chart_is_written_in_the_format_its_suffix_names(
    db_path, tmp_path, two_runs, name, starts
):
    path = tmp_path / name
    out = CliRunner().invoke(
        cli, ["--db", db_path, "runs", "compare", *two_runs, "--chart", str(path)]
    )
    assert out.exit_code == 0, out.output
    assert path.read_bytes().startswith(starts)


@pytest.mark.parametrize("name", ["size.jpg", "size.pdf", "size", "size.png.txt"])
def test_a_chart_suffix_it_cannot_write_is_one_line(db_path, tmp_path, two_runs, name):
    path = tmp_path / name
    out = CliRunner().invoke(
        cli, ["--db", db_path, "runs", "compare", *two_runs, "--chart", str(path)]
    )
    assert out.exit_code == 1
    assert out.output.splitlines() == [
        f"Error: the chart is written as SVG or PNG, not "
        f"{'a file without a suffix' if '.' not in name else 'a ' + path.suffix + ' file'}: "
        "name a .svg or .png file"
    ]
    assert not path.exists()
