"""Models behind one interface: the :class:`~engine.models.protocol.ChatModel` protocol that
every activity uses, and the :class:`~engine.models.pool.ModelPool` that loads, shares and
restarts them.

>>> from engine.models import default_pool                      # doctest: +SKIP
>>> with default_pool().lease("smollm2") as model:               # doctest: +SKIP
...     print(model.chat([{"role": "user", "content": "Hi"}], max_tokens=8).text)

Importing this package loads no model library: llama.cpp starts in a model's own process.
"""

from __future__ import annotations

import lazy_loader

# Public names, each imported from its submodule on first use.
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "pool": ["ModelPool", "PooledModel", "default_pool"],
        "protocol": ["ChatModel", "Generation", "ModelCrashed", "ModelError"],
        "served": ["ServedModel"],
    },
)
