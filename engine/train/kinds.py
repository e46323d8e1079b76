"""Training kinds: what can be trained, on which kind of data set, with which settings, and
how one training's work is prepared.

A kind is one :class:`TrainingKind`, registered with ``register("training", TrainingKind(...))``
(:func:`engine.registry.register`) by a module of the activity it serves (the modules in its
descriptor's ``trainings_from``, imported by :func:`kinds`): the training machinery here names
no activity. Like an activity, a kind names its heavy parts with
:class:`engine.registry.Lazy` references imported on first use, so listing the kinds loads no
torch:

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
  :func:`trained_answerer` finds it from the artefact's manifest;
* ``evaluation`` (optional): ``evaluation(training row) →`` the settings of a run of the
  kind's activity that uses what the training made (:mod:`engine.train.evaluate`).

>>> from engine.train.kinds import kinds
>>> kinds()["french-reader"].activity
'french'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.registry import entries, get

if TYPE_CHECKING:
    from engine.registry import Lazy
    from engine.store.store import Store
    from engine.types import JSONDict


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
    #: ``evaluation(row)``: the run settings that use what training ``row`` made (none: what
    #: it makes cannot be evaluated by a run).
    evaluation: Lazy[Callable[[JSONDict], JSONDict]] | None = None
    #: What a training of the kind is judged by, with their short names: the measures of
    #: its dev set after each epoch (when it has one: the first is the one a list of
    #: trainings shows) and of an evaluation run in a line; ``shown`` are the summary keys
    #: the CLI says after an evaluation run (none: the measures').
    measures: Mapping[str, str] = field(default_factory=dict)
    shown: tuple[str, ...] = ()
    #: The name a new training is offered (none: ``artefact``), what it makes in words (the
    #: app's line under the kind) and what an evaluation run of it is (the button's tip).
    default_name: str = ""
    note: str = ""
    evaluation_note: str = ""
    #: Where the kind comes among the kinds (lower first, then as registered): the order of
    #: the app's kind picker, whose first kind is the one it opens on.
    order: int = 100
    #: The app's widget choosing the data (made with the app's context; none: a data set
    #: picker of the kind's activity).
    data_picker: Lazy[type] | None = None

    def settings_class(self) -> type:
        return self.settings.load()

    def prepare_function(self) -> Callable[..., Any]:
        return self.prepare.load()

    def shown_keys(self) -> tuple[str, ...]:
        """The summary keys of an evaluation run said after it."""
        return self.shown or tuple(self.measures)

    def said(
        self, values: Mapping[str, Any], digits: int = 1, sep: str = ", ", first: bool = False
    ) -> str:
        """Its measures found in ``values`` (an epoch's evaluation, a run's summary) in
        words: ``"Hamming 40.0, EMR 10.0"`` (only the first with ``first``); empty when
        none is there."""
        found = [
            f"{short} {values[key]:.{digits}f}"
            for key, short in self.measures.items()
            if isinstance(values.get(key), int | float)
        ]
        return sep.join(found[:1] if first else found)

    def check_data(self, store: Store, data: str) -> JSONDict:
        """Refuse ``data`` when the kind cannot train on it; return what it is when it is a
        file (its absolute ``path`` and ``sha256``), else ``{}``."""
        if self.check is not None:
            return self.check.load()(store, data) or {}
        from engine.core.run_checks import check_dataset

        check_dataset(store, self.activity, data)
        return {}


def kinds() -> dict[str, TrainingKind]:
    """Every registered training kind by id, in their ``order`` (the activities' modules
    that register them, their ``trainings_from``, imported first)."""
    return entries("training")


def get_kind(kind_id: str) -> TrainingKind:
    """The kind ``kind_id``; :class:`engine.registry.UnknownKind` names the known ones."""
    found: TrainingKind = get("training", kind_id)
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
