"""An experiment played as one resumable job: each of its cells is a run of the one run loop
(:func:`engine.core.runs.run`), started, resumed or reused in order.

* a cell whose run finished is skipped; one with no run first looks for a finished run of the
  same settings (another experiment's, a run made by hand) and reuses it; otherwise its run is
  started and its id stored in the cell as soon as the run exists;
* a cell whose run stopped (Ctrl-C, Stop, a crash, kill -9: ``interrupted``) is resumed with
  the run's own resume, which skips what is answered: nothing is lost or asked twice;
* progress is reported over the whole grid (items of every cell), with the cell being played
  and the time left (the items still to answer at the pace of this session, or as the plan
  estimated them before any answer came);
* each model's runs are played in turn, and the models' at once (each model busy with its
  own runs, its slots filled by the run loop), on a database file;
* a cell is taken before it is played (:func:`records.claim`): a second ``experiment run``
  on the same database plays the cells the first has not taken, then waits for the others;
* a cell whose run answered items its data set no longer holds (replaced since) gets a new
  run;
* a cell whose model cannot play it (not even its shortest prompt fits the model's trained
  context: :class:`~engine.core.runs.NoRoom`) is marked so with the reason
  (:data:`~engine.experiments.records.NO_ROOM`), which the tables show; it is no failure;
* a cancel (Stop, Ctrl-C) ends the runs being played as cancelled and starts no other cell;
  ``experiment run`` again goes on from there. A run that fails, or cannot start (a prompt
  that fits no question in the model's context…), is reported and the other cells are
  played; the experiment then reads ``failed`` and ``experiment run`` tries that cell again.

>>> plan = make_plan(store, "explaincpe-table8", ["smollm2"], "cpe-test", 10)  # doctest: +SKIP
>>> experiment_id, _ = open_experiment(store, plan)                              # doctest: +SKIP
>>> run_experiment(store, experiment_id)["status"]                              # doctest: +SKIP
'finished'
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine.core.progress import Progress, ProgressCallback, report
from engine.core.runs import NoRoom
from engine.errors import UserError
from engine.experiments import records
from engine.experiments.plan import cell_from_json, full_settings, reusable, settings_key

if TYPE_CHECKING:
    from pathlib import Path

    from engine.core.progress import Cancel
    from engine.experiments.plan import Plan
    from engine.models.load import LoadSettings
    from engine.models.pool import ModelPool
    from engine.store.store import Store
    from engine.types import JSONDict


def progress_line(info: JSONDict, message: str = "", with_left: bool = True) -> str:
    """An experiment's progress in one line: the run it plays, of how many, and (unless
    the line it goes on says it already) the time left (``message`` when the progress names
    no run)."""
    from engine.core.estimate import duration_text

    if "cell" not in info:
        return message
    left = info.get("left_s") if with_left else None
    at = f"run {info['cell']}/{info['cells']} · {info['label']}"
    return at + (f" · {duration_text(left)} left" if isinstance(left, int | float) else "")


def open_experiment(store: Store, plan: Plan) -> tuple[int, bool]:
    """The experiment of ``plan``: the newest stored one with the same runs (to go on with),
    else a new one. Returns its id and whether it is new."""
    return records.find_or_create(store, plan)


def _expected_items(store: Store, cell: JSONDict) -> int:
    """Items a cell's run answers: its run's count, else its data set's (to its limit)."""
    if cell["run"] is not None and cell["status"] not in records.TO_START:
        return int(cell["run"].get("n_total") or 0)
    n = int(store.dataset(cell["dataset"])["n_items"] or 0)
    limit = (cell["settings"] or {}).get("limit")
    return min(n, int(limit)) if limit else n


def _repeats(store: Store, cells: list[JSONDict]) -> list[bool]:
    """Which cells are played by an earlier cell's run (the same settings once the activity
    fills them in, such as ExplainCPE's two 0-shot rows): their items are not counted twice."""
    seen: set[str] = set()
    checked: set[tuple[str, str]] = set()
    out = []
    for cell in cells:
        found = cell_from_json(cell)
        key = settings_key(found, full_settings(store, found, checked))
        out.append(key in seen)
        seen.add(key)
    return out


class _Tally:
    """The grid's progress: items done and expected per cell (none for a cell played by an
    earlier cell's run), the pace of this session."""

    def __init__(self, store: Store, cells: list[JSONDict]) -> None:
        self.repeats = _repeats(store, cells)
        self.total = [
            0 if r else _expected_items(store, c) for c, r in zip(cells, self.repeats, strict=True)
        ]
        self.done = [
            0
            if r or c["run"] is None or c["status"] in records.TO_START
            else int(c["run"].get("n_done") or 0)
            for c, r in zip(cells, self.repeats, strict=True)
        ]
        self.started = time.monotonic()
        self.first = sum(self.done)
        self.lock = threading.Lock()  # lanes played at once report from their threads

    def left_s(self) -> float | None:
        """Seconds left at the pace of this session's answers (None before any)."""
        answered = sum(self.done) - self.first
        if answered <= 0:
            return None
        pace = (time.monotonic() - self.started) / answered
        return max(0, sum(self.total) - sum(self.done)) * pace


def _cell_progress(
    progress: ProgressCallback | None, tally: _Tally, index: int, cell: JSONDict
) -> ProgressCallback | None:
    if progress is None:
        return None

    def update(p: Progress) -> None:
        with tally.lock:
            if p.total:
                tally.total[index] = p.total
            tally.done[index] = p.done
            info = {
                **p.info,
                "cell": index + 1,
                "cells": len(tally.total),
                "label": cell["label"],
                "left_s": tally.left_s(),
            }
            report(progress, sum(tally.done), sum(tally.total), p.message, **info)

    return update


def _play(
    store: Store,
    cell: JSONDict,
    progress: ProgressCallback | None,
    options: JSONDict,
) -> JSONDict:
    """Play one cell: resume its run, reuse a finished run of its settings, or start it (a
    run on items its data set no longer holds is left as it is: another is started)."""
    from engine.core.runs import TAGS, run

    if cell["run"] is not None and cell["status"] not in records.TO_START:
        return run(store, cell["activity"], resume=cell["run_id"], progress=progress, **options)
    found = cell_from_json(cell)
    reuse = reusable(store, found, full_settings(store, found))
    if reuse is not None:
        records.set_run(store, cell["id"], reuse, reused=True)
        return {**store.run(reuse)["summary"], "run_id": reuse, "status": "finished"}

    def started(run_id: int) -> None:
        records.set_run(store, cell["id"], run_id)

    settings = {k: v for k, v in found.settings.items() if k not in TAGS}
    tags = {k: v for k, v in found.settings.items() if k in TAGS}  # a trial's (with_trials)
    return run(
        store, cell["activity"], cell["dataset"], settings,
        progress=progress, on_start=started, tags=tags or None, **options,
    )  # fmt: skip


Outcome = tuple[list[int], list["JSONDict"]]  # the runs played, those that failed


#: Seconds between two looks at cells another process plays, waiting for them.
WAIT_S = 0.5


def _lane(
    store: Store,
    cells: list[JSONDict],
    indices: list[int],
    tally: _Tally,
    progress: ProgressCallback | None,
    options: JSONDict,
    on_cell: Callable[[JSONDict, JSONDict], None] | None,
) -> Outcome:
    """Play the cells ``indices`` one after the other, until one is cancelled: each taken
    first (:func:`records.claim`), so that a cell another process plays is left to it,
    waited for after the others."""
    outcome: Outcome = ([], [])
    cancel = options.get("cancel")
    pending = list(indices)
    while pending:
        waiting = []
        for index in pending:
            if cancel is not None and cancel.is_set():
                return outcome
            state, cell = records.claim(store, cells[index]["id"])
            if state == "taken":
                waiting.append(index)
                continue
            if state == "done":
                _count(store, tally, index, cell["run_id"])
                continue
            try:
                going = _play_cell(store, cell, index, tally, progress, options, on_cell, outcome)
            finally:
                records.release(store, cell["id"])
            if not going:
                return outcome
        pending = waiting
        if pending:
            time.sleep(WAIT_S)
    return outcome


def _count(store: Store, tally: _Tally, index: int, run_id: int) -> None:
    """Count the answers of cell ``index``'s run ``run_id`` in the grid's progress."""
    if not tally.repeats[index]:
        with tally.lock:
            tally.done[index] = int(store.run(int(run_id))["n_done"] or 0)


def _play_cell(
    store: Store,
    cell: JSONDict,
    index: int,
    tally: _Tally,
    progress: ProgressCallback | None,
    options: JSONDict,
    on_cell: Callable[[JSONDict, JSONDict], None] | None,
    outcome: Outcome,
) -> bool:
    """Play one cell this process took, adding it to ``outcome`` (the runs played, those
    that failed); False when it was cancelled (no other cell is to start)."""
    played, failed = outcome
    try:
        summary = _play(store, cell, _cell_progress(progress, tally, index, cell), options)
    except NoRoom as exc:  # its model cannot play it: said in the tables
        records.set_error(store, cell["id"], str(exc), no_room=True)
        if on_cell is not None:
            on_cell(cell, {"run_id": None, "status": records.NO_ROOM})
        return True
    except UserError as exc:  # its run could not start or resume: the others go on
        records.set_error(store, cell["id"], str(exc))
        failed.append({"run_id": cell["run_id"], "label": cell["label"], "error": str(exc)})
        if on_cell is not None:
            on_cell(cell, {"run_id": cell["run_id"], "status": "could not start"})
        return True
    played.append(int(summary["run_id"]))
    _count(store, tally, index, summary["run_id"])
    if on_cell is not None:
        on_cell(cell, summary)
    if summary.get("status") == "failed":
        failed.append({"run_id": summary["run_id"], "label": cell["label"],
                       "error": summary.get("error")})  # fmt: skip
    return summary.get("status") != "cancelled"


def lanes(cells: list[JSONDict]) -> list[list[int]]:
    """The cells by the model they put to work (their ``model`` coordinate; cells with none,
    a consultation's bounds, together), in order: one lane plays one model's runs in turn."""
    found: dict[str, list[int]] = {}
    for index, cell in enumerate(cells):
        found.setdefault(str(cell["coords"].get("model") or ""), []).append(index)
    return list(found.values())


def _at_once(
    store: Store,
    cells: list[JSONDict],
    found: list[list[int]],
    tally: _Tally,
    progress: ProgressCallback | None,
    options: JSONDict,
    on_cell: Callable[[JSONDict, JSONDict], None] | None,
) -> Outcome:
    """Every lane at once, each in its own thread with its own connection to the database;
    Ctrl-C cancels the runs of every lane (each closed as cancelled) and is raised again."""
    from concurrent.futures import ThreadPoolExecutor

    def lane(indices: list[int]) -> Outcome:
        own = type(store)(store.path)
        try:
            return _lane(own, cells, indices, tally, progress, options, on_cell)
        finally:
            own.close()

    with ThreadPoolExecutor(len(found), thread_name_prefix="experiment") as workers:
        futures = [workers.submit(lane, indices) for indices in found]
        try:
            done = [f.result() for f in futures]
        except KeyboardInterrupt:
            options["cancel"].set()
            raise
    return [i for d in done for i in d[0]], [f for d in done for f in d[1]]


def run_experiment(
    store: Store,
    experiment_id: int,
    *,
    pool: ModelPool | None = None,
    progress: ProgressCallback | None = None,
    cancel: Cancel | None = None,
    concurrency: int | None = None,
    on_cell: Callable[[JSONDict, JSONDict], None] | None = None,
    load: LoadSettings | None = None,
) -> JSONDict:
    """Play every cell of experiment ``experiment_id`` that has not finished (see the module's
    doc): each model's runs in turn, the models' lanes (:func:`lanes`) at once on a database
    file, their models loaded with ``load`` (:func:`engine.core.runs.run`); ``on_cell(cell,
    summary)`` after each cell played; then its preset's figure files written again
    (:func:`write_figures`). Returns ``{"experiment_id",
    "status", "played", "failed"}``: ``status`` is the experiment's once done (``finished``,
    ``cancelled``, ``failed``). Ctrl-C (KeyboardInterrupt) is raised again once the runs being
    played are closed as cancelled."""
    from engine.core.progress import Cancel

    cells = records.get(store, experiment_id)["cells"]
    tally = _Tally(store, cells)
    found = lanes(cells)
    at_once = len(found) > 1 and store.path != ":memory:"
    cancel = cancel if cancel is not None or not at_once else Cancel()
    options: dict[str, Any] = {
        "pool": pool, "cancel": cancel, "concurrency": concurrency, "load": load
    }  # fmt: skip
    report(progress, sum(tally.done), sum(tally.total), "starting", cells=len(cells))
    if at_once:
        played, failed = _at_once(store, cells, found, tally, progress, options, on_cell)
    else:
        everything = list(range(len(cells)))
        played, failed = _lane(store, cells, everything, tally, progress, options, on_cell)
    experiment = records.get(store, experiment_id)
    write_figures(store, experiment)
    status = experiment["status"]
    return {"experiment_id": experiment_id, "status": status, "played": played, "failed": failed}


def write_figures(store: Store, experiment: JSONDict) -> list[Path]:
    """Write the figure files of the experiment's preset from its finished runs (its
    ``figures``, :class:`~engine.experiments.plan.Preset`), as each time it has been played;
    none for a preset without."""
    from engine.experiments.plan import preset_of

    preset = preset_of(experiment)
    if preset is None or preset.figures is None:
        return []
    return preset.figures.load()(store, experiment)


def trial_spreads(store: Store, experiment: JSONDict) -> list[JSONDict]:
    """The cells played as repeated trials (``--trials``, :func:`~engine.experiments.plan.
    with_trials`), one entry per trial set in order: its ``label`` (the cell's, without the
    trial), ``trial_set``, ``trials`` (asked), ``runs`` (those finished) and per score the
    ``spread`` over them (:func:`engine.core.trials.spread`: mean ± SD between trials, the 95%
    interval of a bootstrap clustered by item)."""
    from engine.core.trials import spread

    sets: dict[str, JSONDict] = {}
    for cell in experiment["cells"]:
        name = (cell["settings"] or {}).get("trial_set")
        if not name:
            continue
        entry = sets.setdefault(
            str(name),
            {
                "label": str(cell["label"]).rsplit(" · trial ", 1)[0],
                "trial_set": str(name),
                "trials": int(cell["settings"].get("trials") or 0),
                "runs": [],
            },
        )
        if cell["status"] == "finished" and cell["run_id"] not in entry["runs"]:
            entry["runs"].append(int(cell["run_id"]))
    for entry in sets.values():
        entry["spread"] = spread(store, entry["runs"]) if entry["runs"] else {}
    return list(sets.values())
