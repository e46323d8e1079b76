"""Cutting documents into passages of at least 100 characters and storing corpora."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from french_fixtures import sample_passages, sample_questions, write_questions

from engine.cli import cli
from engine.french.corpus import (
    CorpusError,
    add_corpus_from_dataset,
    add_corpus_from_path,
    dataset_passage_text,
    fingerprint,
)
from engine.french.dataset import import_frenchmedmcqa
from engine.french.passages import sentences, split_passages

S1 = "La warfarine est un antivitamine K dont l'effet est surveillé par l'INR."  # 72 chars
S2 = (
    "Son antidote est la vitamine K, associée au besoin à un concentré de complexe prothrombinique."
)
S3 = "Les interactions médicamenteuses sont nombreuses."


def test_every_passage_is_an_exact_slice_of_at_least_100_chars():
    text = "\n\n".join([f"{S1} {S2}", S3, f"{S1} {S3} {S2}"] * 5)
    passages = split_passages(text, "doc.txt")
    assert passages
    for p in passages:
        assert len(p.text) >= 100
        assert text[p.offset : p.offset + len(p.text)] == p.text
        assert p.source == "doc.txt"
    offsets = [p.offset for p in passages]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)


def test_cuts_fall_on_sentence_or_paragraph_boundaries():
    text = " ".join([S1, S2, S3] * 10)
    ends = {e for _, e, _ in sentences(text)}
    starts = {s for s, _, _ in sentences(text)}
    for p in split_passages(text, "d", min_chars=100, max_chars=300):
        assert p.offset in starts and p.offset + len(p.text) in ends
        assert len(p.text) <= 300 or p.text.count(". ") == 0


def test_short_paragraphs_join_and_a_short_tail_joins_the_last_passage():
    text = f"{S3}\n\n{S3}\n\n{S1}"  # 49 + 49 + 72 characters of sentences
    passages = split_passages(text, "d")
    assert len(passages) == 1 and passages[0].text == text
    assert split_passages(S3, "d") == []  # a document under 100 characters gives no passage
    tail = split_passages(f"{S1} {S2}\n\n{S3}", "d")
    assert len(tail) == 1 and tail[0].text.endswith(S3)


def test_long_paragraph_is_split_below_max_chars():
    text = " ".join([S2] * 20)
    passages = split_passages(text, "d", min_chars=100, max_chars=400)
    assert len(passages) > 3 and all(100 <= len(p.text) <= 400 for p in passages)


def test_sentence_boundaries_respect_abbreviations_and_lowercase():
    text = "Le pH est de 7,4 environ. la suite reste ici. Puis une autre phrase."
    assert [text[s:e] for s, e, _ in sentences(text)] == [
        "Le pH est de 7,4 environ. la suite reste ici.",
        "Puis une autre phrase.",
    ]


def test_corpus_from_folder(store, tmp_path):
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text(f"{S1} {S2}\n\n{S3} {S1}", encoding="utf-8")
    (folder / "sub" / "b.md").write_text(f"# Titre\n\n{S2} {S3}", encoding="utf-8")
    (folder / "short.txt").write_text("Trop court.", encoding="utf-8")
    (folder / "ignored.csv").write_text(S2 * 3, encoding="utf-8")
    result = add_corpus_from_path(store, folder, "docs")
    assert result["n_documents"] == 3 and result["skipped"] == 1
    rows = list(store.passages("docs"))
    assert {r["source"] for r in rows} == {"a.txt", "sub/b.md"}
    assert all(len(r["text"]) >= 100 for r in rows)
    assert store.corpus("docs")["fingerprint"] == fingerprint(rows) == result["fingerprint"]


def test_corpus_from_jsonl_and_fingerprint_follows_content(store, tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(json.dumps({"id": f"d{i}", "text": f"{S1} {S2}"}) for i in range(3)))
    first = add_corpus_from_path(store, path, "p")
    assert first["n_passages"] == 3
    assert [r["source"] for r in store.passages("p")] == ["d0", "d1", "d2"]
    same = add_corpus_from_path(store, path, "p", replace=True)
    assert same["fingerprint"] == first["fingerprint"]
    path.write_text(json.dumps({"id": "d0", "text": f"{S2} {S1}"}))
    changed = add_corpus_from_path(store, path, "p", replace=True)
    assert changed["fingerprint"] != first["fingerprint"]


def test_sample_corpus_passages_are_long_enough_and_marked():
    passages = sample_passages()
    assert len(passages) >= 30
    assert all(p["sample"] and len(p["text"]) >= 100 for p in passages)


def test_corpus_from_dataset_knows_each_question(store, tmp_path):
    import_frenchmedmcqa(store, write_questions(tmp_path / "q.json", sample_questions()), "qs")
    result = add_corpus_from_dataset(store, "qs", "qs-passages")
    assert result["n_passages"] == 15
    rows = list(store.passages("qs-passages"))
    assert rows[0]["source"] == "qs#sample-01"
    assert rows[0]["text"] == dataset_passage_text(store.items("qs")[0])
    assert (
        "Réponses exactes : La toxicité est principalement hépatique ; L'antidote"
        in rows[0]["text"]
    )


def test_corpus_errors(store, tmp_path):
    with pytest.raises(CorpusError, match="no such file"):
        add_corpus_from_path(store, tmp_path / "nope", "x")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CorpusError, match="no .txt or .md"):
        add_corpus_from_path(store, tmp_path / "empty", "x")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "text": "ok"}\n{"id": 2}\n')
    with pytest.raises(CorpusError, match="line 2"):
        add_corpus_from_path(store, bad, "x")
    short = tmp_path / "short.txt"
    short.write_text("Court.")
    with pytest.raises(CorpusError, match="no passage"):
        add_corpus_from_path(store, short, "x")
    assert store.corpora() == []


def test_cli_corpus_add_and_list(db_path, tmp_path):
    runner = CliRunner()
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text(f"{S1} {S2}", encoding="utf-8")
    added = runner.invoke(
        cli, ["--db", db_path, "french", "corpus", "add", str(folder), "--name", "docs"]
    )
    assert added.exit_code == 0, added.output
    assert "corpus 'docs': 1 passages from 1 documents" in added.output

    path = write_questions(tmp_path / "q.json", sample_questions())
    runner.invoke(cli, ["--db", db_path, "import", "frenchmedmcqa", str(path), "--name", "qs"])
    from_ds = runner.invoke(
        cli,
        [
            "--db",
            db_path,
            "french",
            "corpus",
            "add",
            "--from-dataset",
            "qs",
            "--name",
            "qs-p",
            "--json",
        ],
    )
    assert from_ds.exit_code == 0 and json.loads(from_ds.output)["n_passages"] == 15

    listed = runner.invoke(cli, ["--db", db_path, "french", "corpus", "list", "--json"])
    assert [c["name"] for c in json.loads(listed.output)] == ["docs", "qs-p"]

    neither = runner.invoke(cli, ["--db", db_path, "french", "corpus", "add", "--name", "x"])
    assert neither.exit_code == 2 and "either PATH or --from-dataset" in neither.output
    missing = runner.invoke(
        cli, ["--db", db_path, "french", "corpus", "add", "--from-dataset", "nope", "--name", "x"]
    )
    assert missing.exit_code == 1 and "no data set named 'nope'" in missing.output
