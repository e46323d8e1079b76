"""Models behind one interface: the :class:`~engine.models.protocol.ChatModel` protocol that
every activity uses, and the :class:`~engine.models.pool.ModelPool` that loads, shares and
restarts them.

>>> from engine.models import default_pool                      # doctest: +SKIP
>>> with default_pool().lease("smollm2") as model:               # doctest: +SKIP
...     print(model.chat([{"role": "user", "content": "Hi"}], max_tokens=8).text)

Importing this package loads no model library: llama.cpp starts in a model's own process.
Each kind of model is a backend (:mod:`engine.models.backend`); the catalog
(:mod:`engine.models.catalog`) finds the models, :mod:`engine.models.gguf` reads a GGUF file's
header. A served model's requests go through :mod:`engine.models.server` (deadlines, retries,
one-line errors) over :mod:`engine.models.wire` (what is read, and for how long), and its
answers are checked by :mod:`engine.models.replies` before anything is read from them.
"""

from __future__ import annotations

import lazy_loader

# Public names, each imported from its submodule on first use.
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "backend": ["Backend", "ModelInfo", "backend", "default_concurrency"],
        "load": ["LoadSettings"],
        "pool": ["ModelPool", "PooledModel", "default_pool"],
        "protocol": ["Capabilities", "ChatModel", "Generation", "ModelCrashed", "ModelError"],
        "scripted": ["ScriptedModel", "scripted_pool"],
        "served": ["ServedModel"],
    },
)
