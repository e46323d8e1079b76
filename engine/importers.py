"""Every importer behind one call: data sets of the activities and retrieval corpora.

An importer is a :class:`Format` registered for an ``(activity, format)`` pair with
``register("format", Format(...))`` (:func:`engine.registry.register`), by the activity's own
package (``engine.<activity>.activity``).
medexam's own:

========  ===============  ===================================================================
activity  format           source
========  ===============  ===================================================================
exam      ``explaincpe``   an ExplainCPE JSON list (five options and an explanation)
exam      ``mcq``          multiple-choice questions in JSON, JSON Lines or CSV
consult   ``cases``        medexam cases (JSON or JSON Lines)
consult   ``agentclinic``  AgentClinic cases: MedQA, MedQA-extended, MIMIC-IV (OSCE) or NEJM
french    ``frenchmedmcqa`` a FrenchMedMCQA JSON list
corpus    ``file``         a text, Markdown or JSON Lines file (``path`` is the same)
corpus    ``folder``       a folder of ``.txt`` and ``.md`` files
corpus    ``dataset``      the questions of an imported French data set, one passage each
========  ===============  ===================================================================

:func:`import_data` runs one and returns the stored data set (or corpus) row with a one-line
``message``; :func:`formats` lists what an activity accepts, with a label and a file-dialog
filter, for an import dialog. Each importer checks every record before anything is stored,
and its error names the record and the reason.

>>> result = import_data(store, "exam", "mcq", "quiz.jsonl", name="quiz")  # doctest: +SKIP
>>> result["message"]                                                       # doctest: +SKIP
'Imported 14 questions as “quiz”.'
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.core.progress import Cancel, ProgressCallback, report
from engine.registry import ImportFormatError, entries, get
from engine.store.store import Store
from engine.types import Row


@dataclass(frozen=True)
class Request:
    """What to import: the source (a path, or a stored data set's name), the name to store
    it as (None: the importer's default), whether to replace, and the job's progress/cancel."""

    source: str
    name: str | None = None
    replace: bool = False
    progress: ProgressCallback | None = None
    cancel: Cancel | None = None

    @property
    def stem(self) -> str:
        """The default name: the file's stem, or a folder's name."""
        path = Path(self.source)
        return path.name if path.is_dir() else path.stem


# An importer stores ``Request.source`` and returns the stored row (with anything it reports).
Importer = Callable[[Store, Request], Row]


@dataclass(frozen=True)
class Format:
    """One registered importer and how an import dialog offers it.

    ``source`` is what it reads: ``file``, ``folder`` or ``dataset`` (the name of a stored
    data set of the activity ``datasets``); ``filter`` is a file-dialog filter (empty unless
    ``source`` is ``file``); ``message`` is the report, formatted with the returned row;
    ``marks`` are the fields every record of the format has and others' lack, so that a file
    given to the wrong importer is named for what it looks like (:func:`looks_like`);
    ``kind_title`` names what imports as ``activity`` when that is no activity (French QA's
    retrieval corpora: "French corpus").
    """

    activity: str
    key: str
    label: str
    run: Importer
    filter: str = ""
    source: str = "file"
    message: str = "Imported {n_items} questions as “{name}”."
    datasets: str = ""
    marks: tuple[str, ...] = ()
    kind_title: str = ""

    def __post_init__(self) -> None:
        if self.source not in ("file", "folder", "dataset"):
            raise ValueError(
                f"format {self.key!r}: source {self.source!r}, not file, folder, dataset"
            )
        if (self.source == "dataset") != bool(self.datasets):
            raise ValueError(f"format {self.key!r}: a dataset source, and only it, names datasets")

    @property
    def title(self) -> str:
        """The format's name without the details: ``FrenchMedMCQA``."""
        return self.label.split(" (")[0].removesuffix(" cases")

    @property
    def folder(self) -> bool:
        """Whether the source is a folder."""
        return self.source == "folder"


_ALIASES = {("corpus", "path"): "file"}


def _titles() -> dict[str, str]:
    from engine.activities import activities as registered  # registers their importers

    others = {f.activity: f.kind_title for f in _formats().values() if f.kind_title}
    return {**{a.id: a.import_title or a.name for a in registered().values()}, **others}


def _formats() -> dict[tuple[str, str], Format]:
    return entries("format")


def activities() -> dict[str, str]:
    """The activities (and other kinds, such as corpora) that have importers, with their
    titles, in the registry's order."""
    titles = _titles()
    kinds = {a for a, _k in _formats()}
    ordered = [a for a in titles if a in kinds] + sorted(kinds - titles.keys())
    return {a: titles.get(a, a) for a in ordered}


def formats(activity: str) -> list[Format]:
    """The formats ``activity`` imports, in the order an import dialog lists them."""
    found = [f for (a, _k), f in _formats().items() if a == activity]
    if not found:
        get("format", (activity, ""))  # one line naming what imports
    return found


def get_format(activity: str, fmt: str) -> Format:
    """The importer of ``(activity, fmt)``; raises :class:`ImportFormatError`."""
    formats(activity)  # nothing imports as ``activity``: said first
    return get("format", (activity, _ALIASES.get((activity, fmt), fmt)))


def import_data(
    store: Store,
    activity: str,
    fmt: str,
    source: str | Path,
    name: str | None = None,
    replace: bool = False,
    progress: ProgressCallback | None = None,
    cancel: Cancel | None = None,
) -> Row:
    """Import ``source`` with the importer of ``(activity, fmt)`` as ``name``.

    ``source`` is a file or folder path, or for the ``corpus``/``dataset`` format the name of
    a stored French data set. ``name`` defaults to the file's stem (``<data set>-passages``
    for a corpus made from a data set); an existing data set or corpus of that name is
    replaced only with ``replace``. ``progress`` and ``cancel`` reach the importers that
    take long (corpora from files).

    Returns the stored row (:meth:`Store.dataset` or :meth:`Store.corpus`) with what the
    importer reported about it and ``message``, e.g. ``Imported 14 questions as “x”.``
    Raises :class:`ImportFormatError` for an unknown pair, and the importer's own error
    (a ``ValueError`` naming the record and the reason, or a ``StoreError``) otherwise.
    """
    spec = get_format(activity, fmt)
    if cancel is not None:
        cancel.check()
    with named_if_other_format(source, spec):
        result = spec.run(store, Request(str(source), name or None, replace, progress, cancel))
    report(progress, 1, 1, "imported")
    return {**result, "message": spec.message.format(**result)}


@contextlib.contextmanager
def named_if_other_format(source: str | Path, given: Format | tuple[str, str]) -> Iterator[None]:
    """Around an import of the file ``source`` as ``given`` (a format, or its activity and
    key): a record refused in a file that looks like another format's says so first —
    ``this looks like a FrenchMedMCQA file: import it with `import frenchmedmcqa` (…: record
    1: 'options' must be a list of texts)``."""
    spec = get_format(*given) if isinstance(given, tuple) else given
    try:
        yield
    except ValueError as exc:
        other = looks_like(source, spec) if spec.source == "file" else None
        if other is None:
            raise
        a = "an" if other.title[:1].lower() in "aeiou" else "a"
        said = f"this looks like {a} {other.title} file: import it with `import {other.key}`"
        raise ImportFormatError(f"{said} ({exc})") from None


def looks_like(source: str | Path, given: Format) -> Format | None:
    """The other format whose ``marks`` the first record of the file ``source`` has (None:
    none, or not a file of records)."""
    from engine.text.jsonio import read_records

    try:
        first = read_records(source, objects=False)[:1]
    except (ValueError, OSError):
        return None
    if not first or not isinstance(first[0], dict):
        return None
    return next(
        (
            f
            for f in _formats().values()
            if f is not given and f.marks and all(k in first[0] for k in f.marks)
        ),
        None,
    )


def opening_dataset(datasets: Sequence[Row], remembered: str, chosen_at: str) -> str:
    """The data set a picker opens on: the one last chosen (``remembered``, at
    ``chosen_at``) unless a data set was imported after that, else the last imported. A
    sample, written on the first start, is never newer than an imported data set.

    >>> sets = [{"name": "a", "created": "2026-01-01T10:00:00+00:00"},
    ...         {"name": "b", "created": "2026-01-02T10:00:00+00:00"}]
    >>> opening_dataset(sets, "", ""), opening_dataset(sets, "a", "2026-01-03T00:00:00+00:00")
    ('b', 'a')
    >>> sample = {"name": "s", "created": "2026-01-05T00:00:00+00:00", "meta": {"sample": True}}
    >>> opening_dataset([*sets, sample], "", ""), opening_dataset([sample], "", "")
    ('b', 's')
    """
    if not datasets:
        return ""
    imported = [d for d in datasets if not (d.get("meta") or {}).get("sample")] or datasets
    newest = max(imported, key=lambda d: (d.get("created") or "", d.get("id") or 0))
    names = {d["name"] for d in datasets}
    if remembered in names and chosen_at >= (newest.get("created") or ""):
        return remembered
    return str(newest["name"])
