"""Training models, as a job like a run: a kind, a data set, typed settings, progress, cancel,
checkpoints and resume, a seed, and an end (finished, cancelled or failed).

In stage order: :mod:`~engine.train.kinds` (the registry of what can be trained, each kind
registered by the activity it serves, in its own package: ``engine/<activity>/``) →
:mod:`~engine.train.settings` (what every training takes, and LoRA's) → a kind's ``prepare``
(LoRA on a GGUF chat model: :mod:`~engine.train.chat_lora`, :mod:`~engine.train.lora`) →
:mod:`~engine.train.loop` (the loop) with :mod:`~engine.train.checkpoints` →
:mod:`~engine.train.records` (the ``trainings`` table) → :mod:`~engine.train.artefacts` (the
trained folder, found by name) → :mod:`~engine.train.evaluate` (a run of what it made).

>>> from engine.train import all_trainings, train                                 # doctest: +SKIP
>>> train(store, "french-reader", "train", {"epochs": 1, "retriever": "bm25",
...       "corpus": "train-passages"}, name="minilm-bm25")                    # doctest: +SKIP
>>> [t["name"] for t in all_trainings(store)]                                  # doctest: +SKIP
['minilm-bm25']
"""

from __future__ import annotations

import lazy_loader

# Public names, each imported from its submodule on first use.
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "artefacts": ["ArtefactError", "find", "list_artefacts"],
        "kinds": ["TrainingKind", "get_kind", "kinds"],
        "loop": ["Task", "TrainError", "train"],
        "records": ["all_trainings", "get"],
    },
)
