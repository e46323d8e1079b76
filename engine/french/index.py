"""Retrieval indexes over a stored corpus: BM25, dense, or both fused (hybrid).

An index lives in ``indexes_dir()/NAME/``: ``manifest.json`` (corpus, fingerprint, retriever,
settings), ``passages.jsonl`` (so a loaded index needs no database) and the retriever files
(``bm25/``, ``dense/``). :func:`build_index` reuses an index whose corpus fingerprint and
settings are unchanged and rebuilds it otherwise.

>>> index = build_index(store, "french-sample", "bm25")          # doctest: +SKIP
>>> [hit.source for hit in index.search("hépatite B vaccin", k=3)]  # doctest: +SKIP
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from engine import paths
from engine.core.progress import (
    Cancel,
    Cancelled,
    CancelLike,
    Progress,
    ProgressCallback,
    as_cancel,
    report,
)
from engine.french.analyser import analyse
from engine.french.bm25 import BM25, K1, B
from engine.french.dense import DEFAULT_MODEL, Dense
from engine.french.passages import source_label
from engine.store.store import Store, StoreError
from engine.text import jsonio

if TYPE_CHECKING:
    from engine.types import JSONDict

RETRIEVERS = ("bm25", "dense", "hybrid")
RRF_K = 60
FORMAT = 1


class IndexError_(StoreError):
    """No such index, or an index that cannot be built or read."""


@dataclass(frozen=True)
class Hit:
    """One retrieved passage: its position in the corpus, its score, text and origin."""

    passage_id: int
    score: float
    text: str
    source: str
    offset: int = 0

    @property
    def label(self) -> str:
        """The passage's origin in words (:func:`engine.french.passages.source_label`)."""
        return source_label(self.source, self.text)

    def as_dict(self) -> JSONDict:
        return asdict(self) | {"label": self.label}


@dataclass
class Index:
    """A loaded index; :meth:`search` returns :class:`Hit` objects, best first."""

    name: str
    manifest: JSONDict
    passages: list[JSONDict]
    bm25: BM25 | None = None
    dense: Dense | None = None
    rebuilt: bool = field(default=False, compare=False)

    @property
    def retriever(self) -> str:
        return self.manifest["retriever"]

    @property
    def corpus(self) -> str:
        return self.manifest["corpus"]

    @property
    def corpus_dataset(self) -> str | None:
        """The data set whose questions the passages were made from (``--from-dataset``)."""
        return self.manifest.get("corpus_dataset")

    @property
    def fingerprint(self) -> str:
        return self.manifest["fingerprint"]

    def __len__(self) -> int:
        return len(self.passages)

    def is_fresh(self, store: Store) -> bool:
        """Whether the stored corpus still has the fingerprint this index was built from."""
        try:
            return store.corpus(self.corpus)["fingerprint"] == self.fingerprint
        except StoreError:
            return False

    def ranked(self, query: str, k: int) -> tuple[list[int], list[float]]:
        """Passage positions and scores of the ``k`` best passages for ``query``."""
        if self.retriever == "bm25":
            assert self.bm25 is not None
            return self.bm25.search(analyse(query), k)
        if self.retriever == "dense":
            assert self.dense is not None
            return self.dense.search(query, k)
        assert self.bm25 is not None and self.dense is not None
        depth = max(100, 10 * k)
        lists = [self.bm25.search(analyse(query), depth)[0], self.dense.search(query, depth)[0]]
        return reciprocal_rank_fusion(lists, k, self.manifest["settings"].get("rrf_k", RRF_K))

    def search(self, query: str, k: int = 5) -> list[Hit]:
        """The ``k`` best passages for ``query`` (BM25 returns only passages sharing a term)."""
        ids, scores = self.ranked(query, k)
        out = []
        for pid, score in zip(ids, scores, strict=True):
            p = self.passages[pid]
            out.append(Hit(pid, float(score), p["text"], p["source"], p.get("offset", 0)))
        return out


def reciprocal_rank_fusion(
    rankings: list[list[int]], k: int, rrf_k: int = RRF_K
) -> tuple[list[int], list[float]]:
    """Fuse ranked lists: each item scores ``sum(1 / (rrf_k + rank))`` (rank from 1).

    >>> reciprocal_rank_fusion([[3, 1, 2], [1, 3]], 2)
    ([1, 3], [0.0325..., 0.0325...])
    """
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (rrf_k + rank)
    order = sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
    return [i for i, _ in order], [s for _, s in order]


def index_dir(name: str, root: str | Path | None = None) -> Path:
    """Where index ``name`` lives."""
    if not name or "/" in name or "\\" in name or name.startswith("."):
        raise IndexError_(f"invalid index name {name!r}")
    base = Path(root) if root is not None else paths.indexes_dir()
    return base / name


def list_indexes(root: str | Path | None = None) -> list[JSONDict]:
    """The manifests of every index under ``root`` (default ``indexes_dir()``)."""
    base = Path(root) if root is not None else paths.indexes_dir()
    out = []
    for manifest in sorted(base.glob("*/manifest.json")):
        try:
            out.append(_manifest(manifest.parent))
        except (OSError, ValueError):
            continue
    return out


def _manifest(directory: Path) -> JSONDict:
    """An index's manifest, read by the one JSON reader (a ValueError when it is not JSON,
    nests too deeply or is not an object)."""
    path = directory / "manifest.json"
    found = jsonio.parse(path, path.read_text(encoding="utf-8"))
    if not isinstance(found, dict):
        raise jsonio.RecordsError(path, "expected a JSON object")
    return found


def _settings(retriever: str, model: str | None, method: str, k1: float, b: float) -> JSONDict:
    settings: JSONDict = {}
    if retriever in ("bm25", "hybrid"):
        settings["bm25"] = {"k1": k1, "b": b, "method": method}
    if retriever in ("dense", "hybrid"):
        settings["dense"] = {"model": model or DEFAULT_MODEL}
    if retriever == "hybrid":
        settings["rrf_k"] = RRF_K
    return settings


def build_index(
    store: Store,
    corpus: str,
    retriever: str = "bm25",
    name: str | None = None,
    progress: ProgressCallback | None = None,
    cancel: CancelLike | None = None,
    *,
    model: str | None = None,
    method: str = "lucene",
    k1: float = K1,
    b: float = B,
    force: bool = False,
    root: str | Path | None = None,
) -> Index:
    """Build (or reuse) index ``name`` (default ``CORPUS-RETRIEVER``) over a stored corpus.

    An index already built from the same corpus fingerprint with the same settings is loaded
    as it is (``index.rebuilt`` is False) unless ``force``; otherwise it is rebuilt and replaces
    the old one atomically. ``model`` is the dense model folder (default: embedded MiniLM);
    ``method``, ``k1`` and ``b`` are the BM25 settings.

    ``progress`` hears of the passages done, monotonically up to its total: the number of
    passages for BM25 or dense, twice that for hybrid (analysed, then embedded); each report's
    message names the stage. ``cancel`` (a :class:`~engine.core.progress.Cancel`, a
    ``threading.Event`` or a callable) is checked between embedding batches: the build then
    raises :class:`~engine.core.progress.Cancelled` and leaves no index on disk (an older one
    under the same name stays as it was).
    """
    if retriever not in RETRIEVERS:
        raise IndexError_(f"unknown retriever {retriever!r}; choose from {', '.join(RETRIEVERS)}")
    info = store.corpus(corpus)
    name = name or f"{corpus}-{retriever}"
    target = index_dir(name, root)
    settings = _settings(retriever, model, method, k1, b)
    if not force and _unchanged(target, corpus, info["fingerprint"], retriever, settings):
        return load_index(name, root)

    started = time.perf_counter()
    passages = list(store.passages(corpus))
    rows: list[JSONDict] = [
        {"source": p["source"], "offset": p["offset"], "text": p["text"]} for p in passages
    ]
    tmp = target.with_name(f".{name}.building")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        bm25, dense, total = _build_retrievers(
            tmp, [r["text"] for r in rows], settings, model, progress, as_cancel(cancel)
        )
        manifest: JSONDict = {
            "format": FORMAT,
            "name": name,
            "corpus": corpus,
            "fingerprint": info["fingerprint"],
            "retriever": retriever,
            "settings": settings,
            "n_passages": len(passages),
            "corpus_dataset": (info.get("meta") or {}).get("dataset")
            if (info.get("meta") or {}).get("kind") == "dataset"
            else None,
            "built": datetime.now(UTC).isoformat(timespec="seconds"),
            "build_s": round(time.perf_counter() - started, 3),
        }
        _write(tmp, rows, manifest)
        _replace(tmp, target)
    except Cancelled:
        shutil.rmtree(tmp, ignore_errors=True)
        raise Cancelled(f"building index {name!r} was cancelled; nothing was written") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    report(progress, total, total, "index built")
    return Index(name, manifest, rows, bm25, dense, rebuilt=True)


def _unchanged(
    target: Path, corpus: str, fingerprint: str, retriever: str, settings: JSONDict
) -> bool:
    """Whether the index in ``target`` was built from this corpus state with these settings."""
    try:
        old = _manifest(target)
    except (OSError, ValueError):
        return False
    return (
        old.get("format") == FORMAT
        and old.get("corpus") == corpus
        and old.get("fingerprint") == fingerprint
        and old.get("retriever") == retriever
        and old.get("settings") == settings
    )


def _build_retrievers(
    tmp: Path,
    texts: list[str],
    settings: JSONDict,
    model: str | None,
    progress: ProgressCallback | None,
    cancel: Cancel | None,
) -> tuple[BM25 | None, Dense | None, int]:
    """Build and save the retrievers ``settings`` names into ``tmp``; return them and the
    progress total (passages times stages)."""
    n = len(texts)
    total = n * (("bm25" in settings) + ("dense" in settings))
    bm25 = dense = None
    offset = 0
    if "bm25" in settings:
        report(progress, 0, total, "analysing passages", passages=0)
        terms = []
        for i, text in enumerate(texts):
            if cancel is not None and i % 1000 == 0:
                cancel.check()
            terms.append(analyse(text))
            if i % 1000 == 999:
                report(progress, i + 1, total, "analysing passages", passages=i + 1)
        report(progress, n, total, "building BM25", passages=n)
        bm25 = BM25.build(terms, **settings["bm25"])
        bm25.save(tmp / "bm25")
        offset = n
    if "dense" in settings:

        def embedded(p: Progress) -> None:
            report(progress, offset + p.done, total, "embedding passages", passages=p.done)

        dense = Dense.build(texts, model, progress=embedded if progress else None, cancel=cancel)
        dense.save(tmp / "dense")
    return bm25, dense, total


def _write(tmp: Path, rows: list[JSONDict], manifest: JSONDict) -> None:
    with (tmp / "passages.jsonl").open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    (tmp / "manifest.json").write_text(
        json.dumps(manifest, ensure_ascii=False, indent=2), encoding="utf-8"
    )


def _replace(tmp: Path, target: Path) -> None:
    """Move the built index ``tmp`` to ``target``, replacing an older one."""
    old_dir = target.with_name(f".{target.name}.old")
    shutil.rmtree(old_dir, ignore_errors=True)
    if target.exists():
        target.rename(old_dir)
    tmp.rename(target)
    shutil.rmtree(old_dir, ignore_errors=True)


def _read_passages(directory: Path) -> list[JSONDict]:
    with (directory / "passages.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def load_index(name: str, root: str | Path | None = None) -> Index:
    """Load index ``name`` from ``indexes_dir()`` (or ``root``)."""
    directory = index_dir(name, root)
    try:
        manifest = _manifest(directory)
    except FileNotFoundError:
        raise IndexError_(
            f"no index named {name!r} (build it with 'medexam french index')"
        ) from None
    except (OSError, ValueError) as exc:
        raise IndexError_(f"index {name!r} cannot be read: {exc}") from None
    retriever = manifest.get("retriever")
    bm25 = BM25.load(directory / "bm25") if retriever in ("bm25", "hybrid") else None
    dense = Dense.load(directory / "dense") if retriever in ("dense", "hybrid") else None
    return Index(name, manifest, _read_passages(directory), bm25, dense)
