"""The registry of training kinds: what can be trained, on which kind of data set, with which
settings, and how one training's work is prepared.

A kind is one :class:`TrainingKind`, registered with :func:`register_kind` when its module is
imported (medexam's own are in :data:`BUILTIN`). Like an activity, it names its heavy parts
with :class:`engine.registry.Lazy` references imported on first use, so listing the kinds
loads no torch:

* ``settings``: the settings dataclass (:class:`engine.train.settings.TrainSettings` and the
  kind's own fields, declared with :func:`engine.fields.setting`);
* ``check`` (optional): ``check(store, data)`` refuses data it cannot train on (default:
  a data set of the kind's activity) and returns what the data is when it is a file
  (``{"path": absolute path, "sha256": its hash}``, recorded with the training so that a
  resume finds the same file and refuses it changed; else ``{}``), and ``data_flag`` names
  the CLI option;
* ``prepare``: ``prepare(store, dataset, settings, device, cancel=None) →``
  :class:`engine.train.loop.Task` — the model, the examples, how a batch is made and scored
  (``cancel`` checked often while it works); the loop (:func:`engine.train.loop.train`)
  does the rest;
* ``answerer`` (a kind whose artefact answers an activity's items itself, a reader): the
  class that loads a trained artefact by name and answers (``answer(item, passages)``);
  :func:`trained_answerer` finds it from the artefact's manifest.

>>> from engine.train.kinds import kinds
>>> kinds()["french-reader"].activity
'french'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.errors import UserError

if TYPE_CHECKING:
    from engine.registry import Lazy
    from engine.store import Store
    from engine.types import JSONDict

#: The training kinds medexam ships (their modules register them when imported).
BUILTIN = (
    "engine.train.reader",
    "engine.train.doctor",
    "engine.train.writer",
    "engine.train.seq2seq",
)


class UnknownKind(UserError, ValueError):
    """A training kind medexam does not have."""


@dataclass(frozen=True)
class TrainingKind:
    """One kind of training: ``id`` (``medexam train ID``), its name in words, the activity
    whose data sets it trains on, what it makes (``artefact``: ``"reader"``…) and its parts
    (see the module docstring)."""

    id: str
    name: str
    activity: str
    artefact: str
    settings: Lazy[type]
    prepare: Lazy[Callable[..., Any]]
    #: The option that names the data (``--dataset``: a data set of the activity).
    data_flag: str = "--dataset"
    data_help: str = "Data set to train on."
    #: ``check(store, data)`` refusing data the kind cannot train on, before anything is
    #: created (default: a data set of the kind's activity), and saying what a data file is.
    check: Lazy[Callable[[Store, str], JSONDict | None]] | None = None
    #: The class that answers with a trained artefact of this kind, loaded by its name
    #: (a reader: ``medexam french run --reader NAME``).
    answerer: Lazy[type] | None = None

    def settings_class(self) -> type:
        return self.settings.load()

    def prepare_function(self) -> Callable[..., Any]:
        return self.prepare.load()

    def check_data(self, store: Store, data: str) -> JSONDict:
        """Refuse ``data`` when the kind cannot train on it; return what it is when it is a
        file (its absolute ``path`` and ``sha256``), else ``{}``."""
        if self.check is not None:
            return self.check.load()(store, data) or {}
        from engine.runs import check_dataset

        check_dataset(store, self.activity, data)
        return {}


KINDS: dict[str, TrainingKind] = {}
_loaded = False


def register_kind(kind: TrainingKind) -> TrainingKind:
    """Add ``kind`` to the registry (again under the same id replaces it); return it."""
    KINDS[kind.id] = kind
    return kind


def kinds() -> dict[str, TrainingKind]:
    """Every registered training kind by id (medexam's own imported first)."""
    global _loaded
    if not _loaded:
        _loaded = True
        for module in BUILTIN:
            importlib.import_module(module)
    return dict(KINDS)


def get_kind(kind_id: str) -> TrainingKind:
    """The kind ``kind_id``; :class:`UnknownKind` names the known ones."""
    found = kinds().get(kind_id)
    if found is None:
        raise UnknownKind(f"unknown training kind {kind_id!r} (choose from {', '.join(kinds())})")
    return found


def trained_answerer(name: str, artefact: str) -> object:
    """The trained artefact ``name`` (one that makes ``artefact``: ``"reader"``), loaded by
    its kind's answerer; one line when there is none or its kind cannot answer."""
    from engine.train.artefacts import ArtefactError, find

    manifest = find(name, artefact)
    kind = kinds().get(str(manifest.get("kind")))
    if kind is None or kind.answerer is None:
        raise ArtefactError(
            f"trained {artefact} {name!r} is of kind {manifest.get('kind')!r}, which cannot answer"
        )
    return kind.answerer.load()(name)
