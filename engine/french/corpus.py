"""Retrieval corpora: documents cut into passages and stored with :meth:`Store.add_corpus`.

A corpus comes from a folder of ``.txt``/``.md`` files (searched recursively), a single such
file, a JSONL file of ``{"id", "text"}`` documents, or a FrenchMedMCQA data set already in the
store (one passage per question: the question and its correct options; its source names the
question, so retrieval recall can be measured). The corpus fingerprint is a hash of the passages'
content; indexes are rebuilt only when it changes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, cast

from engine.core.progress import Cancel, ProgressCallback, report
from engine.errors import UserError
from engine.french.items import gold, question_source
from engine.french.passages import MAX_CHARS, MIN_CHARS, Passage, split_passages
from engine.store.store import Store

if TYPE_CHECKING:
    from engine.french.items import FrenchQuestion
    from engine.types import JSONDict, Row

TEXT_SUFFIXES = (".txt", ".md")


class CorpusError(UserError, ValueError):
    """A corpus source that cannot be read or gives no passage."""


def fingerprint(passages: Iterable[JSONDict]) -> str:
    """SHA-256 over the passages' source, offset and text, in order."""
    h = hashlib.sha256()
    for p in passages:
        for part in (str(p.get("source", "")), str(p.get("offset", 0)), p["text"]):
            data = part.encode("utf-8")
            h.update(len(data).to_bytes(8, "little"))
            h.update(data)
    return h.hexdigest()


def read_documents(path: str | Path) -> list[tuple[str, str]]:
    """``(source, text)`` of each document under ``path`` (folder, text file or JSONL)."""
    path = Path(path)
    if path.is_dir():
        files = sorted(
            p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES
        )
        if not files:
            raise CorpusError(f"{path}: no .txt or .md file in this folder")
        return [(f.relative_to(path).as_posix(), _read_text(f)) for f in files]
    if not path.is_file():
        raise CorpusError(f"{path}: no such file or folder")
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        return _read_jsonl(path)
    if path.suffix.lower() in TEXT_SUFFIXES:
        return [(path.name, _read_text(path))]
    raise CorpusError(f"{path}: expected a folder, a .txt/.md file or a .jsonl file")


def _read_text(path: Path) -> str:
    from engine.text.jsonio import NotText, decode_text

    try:
        return decode_text(path.read_bytes())
    except NotText as exc:
        raise CorpusError(f"{path}: {exc}") from None


def _read_jsonl(path: Path) -> list[tuple[str, str]]:
    from engine.text import jsonio

    try:
        records = jsonio.numbered_records(path, keys=("documents", "records"), objects=False)
    except jsonio.RecordsError as exc:
        raise CorpusError(str(exc)) from None
    docs: list[tuple[str, str]] = []
    seen: set[str] = set()
    for number, where, record in records:
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            raise CorpusError(f"{path}: {where}: expected an object with a 'text' string")
        doc_id = str(record.get("id", number))
        if doc_id in seen:
            raise CorpusError(f"{path}: {where}: duplicate id {doc_id!r}")
        seen.add(doc_id)
        docs.append((doc_id, str(record["text"])))
    if not docs:
        raise CorpusError(f"{path}: no document in this file")
    return docs


def _store(
    store: Store,
    name: str,
    passages: list[Passage],
    source: str,
    meta: JSONDict,
    replace: bool,
) -> JSONDict:
    if not passages:
        raise CorpusError(f"corpus {name!r} would hold no passage (documents too short?)")
    rows = [p.as_dict() for p in passages]
    fp = fingerprint(rows)
    store.add_corpus(name, rows, source=source, fingerprint=fp, meta=meta, replace=replace)
    return {"name": name, "n_passages": len(rows), "fingerprint": fp, **meta}


def add_corpus_from_path(
    store: Store,
    path: str | Path,
    name: str,
    replace: bool = False,
    min_chars: int = MIN_CHARS,
    max_chars: int = MAX_CHARS,
    progress: ProgressCallback | None = None,
    cancel: Cancel | None = None,
) -> JSONDict:
    """Split the documents under ``path`` into passages and store them as corpus ``name``.

    Documents shorter than ``min_chars`` give no passage and are counted in ``skipped``.
    Returns ``{"name", "n_passages", "fingerprint", "n_documents", "skipped", ...}``.
    """
    path = Path(path)
    docs = read_documents(path)
    passages: list[Passage] = []
    skipped = 0
    for i, (source, text) in enumerate(docs):
        if cancel is not None:
            cancel.check()
        pieces = split_passages(text, source, min_chars, max_chars)
        skipped += not pieces
        passages.extend(pieces)
        report(progress, i + 1, len(docs), source)
    meta: JSONDict = {
        "kind": "files",
        "n_documents": len(docs),
        "skipped": skipped,
        "min_chars": min_chars,
        "max_chars": max_chars,
    }
    return _store(store, name, passages, path.name, meta, replace)


def dataset_passage_text(item: FrenchQuestion) -> str:
    """The passage made from one question: the question and its correct options."""
    correct = [item["answers"][c] for c in sorted(gold(item))]
    label = "Réponse exacte" if len(correct) == 1 else "Réponses exactes"
    return f"{item['question'].strip()}\n{label} : " + " ; ".join(c.strip() for c in correct)


def _normal(text: str) -> str:
    import re
    import unicodedata

    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).lower()
    return " ".join(re.sub(r"[^\w]+", " ", text).split())


def derived_from_question(passage: str, question: str, min_chars: int = 20) -> bool:
    """Whether ``passage`` was made from ``question``: it holds the question's text, or
    starts with a near-identical one (accents, case and punctuation aside; a similarity of
    0.9 or more). Questions shorter than ``min_chars`` never match (too little to tell).

    >>> derived_from_question("Quel est le pH ? Réponse exacte : 7,4", "Quel est le pH du sang ?")
    False
    """
    from difflib import SequenceMatcher

    q, p = _normal(question), _normal(passage)
    if len(q) < min_chars:
        return False
    if q in p:
        return True
    return SequenceMatcher(None, q, p[: len(q) + 10], autojunk=False).ratio() >= 0.9


def add_corpus_from_dataset(
    store: Store, dataset: str, name: str, replace: bool = False
) -> JSONDict:
    """One passage per question of ``dataset`` (see :func:`dataset_passage_text`).

    Each passage stays whole, even under 100 characters, so its source names exactly one
    question (``dataset#id``) and retrieval recall can be measured.
    """
    items = cast("list[FrenchQuestion]", store.items(dataset))  # normalised when imported
    passages = [
        Passage(dataset_passage_text(item), question_source(dataset, item["id"]), 0)
        for item in items
    ]
    meta: JSONDict = {
        "kind": "dataset",
        "dataset": dataset,
        "n_documents": len(items),
        "skipped": 0,
    }
    return _store(store, name, passages, f"dataset:{dataset}", meta, replace)


def corpus_passages(store: Store, name: str) -> list[Row]:
    """The stored passages of corpus ``name``: ``{position, source, offset, text}``."""
    return list(store.passages(name))
