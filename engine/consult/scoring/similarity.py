"""Sentence similarity for consultations, over the shared embedder (all-MiniLM-L6-v2).

Used to compare a diagnosis with the gold one and, in English cases, to match a doctor's
question with the patient's facts when the words differ ("fever" ↔ "Temperature"). The model
is :mod:`engine.text.embedder`'s, loaded once per process and shared with dense retrieval.
"""

from __future__ import annotations

import numpy as np

from engine.text.embedder import embed, embedder

__all__ = ["embed", "embedder", "similarity"]


def similarity(a: str, b: str) -> float:
    """Cosine similarity of two texts (−1…1; 0.0 when either is empty)."""
    if not a.strip() or not b.strip():
        return 0.0
    va, vb = embed([a, b])
    return float(np.clip(va @ vb, -1.0, 1.0))
