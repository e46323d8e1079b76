"""engine.text: option letters, language detection, the JSON/JSONL reader and the one shared
sentence embedder (dense retrieval and consultation similarity both use it)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import french_fixtures
import numpy as np
import pytest
from click.testing import CliRunner

import engine.text.embedder as embedder_mod
from engine.cli import cli
from engine.consult.scoring import similarity as consult_similarity
from engine.consult.text import language_of as consult_language_of
from engine.exam import dataset as exam_dataset
from engine.exam import extract as exam_extract
from engine.french.dataset import SAMPLE_CORPUS
from engine.french.dense import Dense
from engine.french.index import build_index, load_index
from engine.text import (
    LETTERS,
    RecordsError,
    has_cjk,
    item_language,
    language_of,
    letters,
    read_records,
)
from engine.text.jsonio import numbered_records

indexes = french_fixtures.indexes
sample_store = french_fixtures.sample_store


# -- option letters and language ------------------------------------------------------------


def test_one_definition_of_option_letters():
    assert LETTERS == "ABCDEFGHIJ" and letters(5) == "ABCDE" and letters(0) == ""
    assert exam_dataset.LETTERS == LETTERS  # up to 10 options (MedQA)
    assert letters(5) == exam_extract.LETTERS  # ExplainCPE's five, unless told more
    with pytest.raises(ValueError):
        letters(11)


def test_language_of_text_and_questions():
    assert language_of("妊娠期禁用的降压药是") == "zh" and has_cjk("维生素A")
    assert language_of("Which drug?") == "en" and language_of("Quel médicament ?", "fr") == "fr"
    assert consult_language_of is language_of
    assert item_language({"question": "Which?", "options": ["甲基多巴", "b"]}) == "zh"
    assert item_language({"question": "Which?", "options": {"A": "x", "B": "y"}}) == "en"
    assert item_language({"question": "Laquelle ?"}, default="fr") == "fr"


# -- reading records -----------------------------------------------------------------------


def write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.write_text(text, encoding=encoding)
    return path


def test_json_list_wrapped_list_and_single_object(tmp_path):
    rows = [{"id": 1}, {"id": 2}]
    assert read_records(write(tmp_path / "a.json", json.dumps(rows))) == rows
    wrapped = write(tmp_path / "b.json", json.dumps({"cases": rows}, indent=2))
    assert read_records(wrapped) == rows
    assert read_records(wrapped, keys=()) == [{"cases": rows}]
    assert read_records(write(tmp_path / "c.json", '{"id": 3}')) == [{"id": 3}]


def test_json_lines_by_suffix_or_content_with_bom_and_blank_lines(tmp_path):
    text = '{"id": 1}\r\n\n{"id": 2, "text": "a\u2028b"}\n'
    expected = [{"id": 1}, {"id": 2, "text": "a\u2028b"}]
    assert read_records(write(tmp_path / "a.jsonl", text, "utf-8-sig")) == expected
    assert read_records(write(tmp_path / "a.json", text)) == expected  # by content
    assert read_records(write(tmp_path / "list.jsonl", '[{"id": 1}]')) == [{"id": 1}]
    assert read_records(write(tmp_path / "empty.jsonl", "\n\n")) == []
    numbered = numbered_records(tmp_path / "a.jsonl")
    assert [(n.number, n.where) for n in numbered] == [(1, "line 1"), (3, "line 3")]
    assert numbered_records(tmp_path / "list.jsonl")[0].where == "record 1"


@pytest.mark.parametrize(
    ("name", "text", "line", "reason"),
    [
        ("bad.jsonl", '{"id": 1}\n\n{oops\n', 3, "not valid JSON"),
        ("bad.json", '[{"id": 1},\n {"id": ]', 2, "not valid JSON"),
        ("bad.ndjson", '{"id": 1}\n[1, 2]\n', 2, "expected a JSON object, got list"),
        ("bad2.json", "[1]", None, "record 1: expected a JSON object, got int"),
        ("bad3.json", '"text"', None, "expected a JSON list of records, got str"),
    ],
)
def test_errors_name_the_file_and_the_line(tmp_path, name, text, line, reason):
    path = write(tmp_path / name, text)
    with pytest.raises(RecordsError) as err:
        read_records(path)
    assert isinstance(err.value, ValueError) and "\n" not in str(err.value)
    assert str(err.value).startswith(f"{path}: ") and reason in str(err.value)
    assert err.value.line == line and err.value.path == path
    if line is not None:
        assert f"line {line}: " in str(err.value)


def test_unreadable_files(tmp_path):
    with pytest.raises(RecordsError, match="no such file"):
        read_records(tmp_path / "none.json")
    (tmp_path / "latin1.jsonl").write_bytes('{"t": "é"}'.encode("latin-1"))
    with pytest.raises(RecordsError, match="not UTF-8 text"):
        read_records(tmp_path / "latin1.jsonl")
    assert read_records(write(tmp_path / "raw.json", "[1, 2]"), objects=False) == [1, 2]


# -- the shared embedder --------------------------------------------------------------------


class FakeModel:
    """Stands in for a SentenceTransformer: one unit vector per text, from its letters."""

    dim = 8

    def get_embedding_dimension(self) -> int:
        return self.dim

    def encode(self, texts: list[str], **_kwargs) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for ch in text.lower():
                out[row, ord(ch) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """An empty embedder cache whose loads are counted and return a :class:`FakeModel`."""
    calls: list[str] = []

    def load(path: str) -> FakeModel:
        time.sleep(0.05)  # long enough for racing threads to meet
        calls.append(path)
        return FakeModel()

    monkeypatch.setattr(embedder_mod, "_models", {})
    monkeypatch.setattr(embedder_mod, "_load", load)
    return calls


def test_the_embedder_is_loaded_once_and_shared(loads):
    first = embedder_mod.embedder()
    assert embedder_mod.embedder() is first
    assert embedder_mod.embedder("all-MiniLM-L6-v2") is first
    assert consult_similarity.embedder is embedder_mod.embedder
    vectors = embedder_mod.embed(["fever", "temperature", ""])
    assert vectors.shape == (3, FakeModel.dim) and vectors.dtype == np.float32
    assert consult_similarity.similarity("fever", "fever") == pytest.approx(1.0)
    dense = Dense.build(["le foie", "le rein"])
    assert dense.search("foie", 1)[0] == [0]
    assert loads == [str(embedder_mod.default_model_dir().resolve())]


def test_threads_asking_at_once_share_one_load(loads):
    got: list[object] = []
    threads = [
        threading.Thread(target=lambda: got.append(embedder_mod.embedder())) for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(loads) == 1 and all(m is got[0] for m in got)


def test_hybrid_search_loads_the_embedder_once(loads, sample_store, indexes, db_path):
    build_index(sample_store, SAMPLE_CORPUS, "hybrid", name="s-hybrid")
    index = load_index("s-hybrid")
    for query in ("vaccin hépatite B", "antidote paracétamol"):
        assert index.search(query, 3)
    runner = CliRunner()
    for query in ("foie", "rein"):
        args = ["--db", db_path, "french", "search", "--index", "s-hybrid", "--query", query]
        assert runner.invoke(cli, [*args, "--json"]).exit_code == 0
    assert len(loads) == 1


def test_importing_engine_text_loads_no_torch():
    code = (
        "import sys, engine.text, engine.text.embedder, engine.french.dense, "
        "engine.consult.scoring.similarity; "
        "print(sorted(m for m in ('torch', 'sentence_transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_real_model_gives_unit_vectors():
    vectors = embedder_mod.embed(["Le foie", "Le rein"])
    assert vectors.shape == (2, embedder_mod.dimension())
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


def test_a_column_of_dashes_is_aligned_by_its_header():
    from engine.text.columns import align_rows

    lines = align_rows(["Model", "Note", "Bootstrap p"], [["smollm2", "–", "–"], ["g", "-", "–"]])
    assert lines[1] == "smollm2  –               –"
    assert lines[2] == "g        -               –"
