"""An experiment's plan: a preset (a paper's protocol) or an experiment file, with the models
and the data set, becomes the list of runs it needs — each run's activity, data set and
settings — which finished runs with the same settings it reuses, and how long the rest
should take (:mod:`engine.core.estimate`: as the newest earlier run of the same model took).

Presets are registered by their activity packages (``engine/<activity>/presets.py``, named
in ``Activity.presets_from``; :func:`presets`). An experiment file is TOML::

    title = "Examples and instruction, logprob"   # optional
    activity = "exam"                  # whose runs (or: preset = "explaincpe-table8")
    dataset = "cpe-test"               # --dataset overrides it
    models = ["smollm2", "gemma3-270m"]  # --models overrides them
    limit = 10                         # optional; --limit overrides it
    trials = 3                         # optional: each run played 3 times, seeds seed,
                                       # seed + 1, … (it must sample); --trials overrides it
    model_setting = "model"            # the setting each model goes to (default: the
                                       # activity's first setting: its model, or doctor)

    [settings]                         # every run's settings
    method = "logprob"

    [grid]                             # one run per combination, for each model
    shots = [0, 1, 4, 8]
    instruction = [true, false]

>>> found = make_plan(store, "explaincpe-table8", ["smollm2"], "cpe-test", 10)  # doctest: +SKIP
>>> len(found.cells), found.time_text()                                         # doctest: +SKIP
(8, '4 runs to play: 40 questions × 9 s (as run #12 took) ≈ 6 min; 4 reused')
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import math
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from engine.errors import UserError
from engine.experiments.cells import Cell, Plan, PlannedCell
from engine.registry import entries, get

if TYPE_CHECKING:
    from engine.core.estimate import Estimate
    from engine.registry import Lazy
    from engine.store.store import Store
    from engine.types import JSONDict, Row

#: Stored settings that do not change a run's answers (a run reused whatever they were).
FREE_SETTINGS = ("concurrency",)
#: The most runs one experiment plans (its models × its grid × its trials): past it a plan
#: is a slip of the keyboard (a 759-byte file can ask for 160,000 runs), refused in a line.
MAX_CELLS = 10_000


class PlanError(UserError):
    """An experiment that cannot be planned: a file that is not an experiment, no models, a
    data set of another kind, settings the activity refuses."""


@dataclass(frozen=True)
class Request:
    """What a preset makes its cells of: the models, the data set, the item limit and the
    store (for what the data set has, such as a French corpus's indexes)."""

    models: list[str]
    dataset: str
    limit: int | None
    store: Store | None = None


@dataclass(frozen=True)
class Preset:
    """A paper's protocol as a grid: ``cells(request)`` lists its runs; ``report`` is a
    :class:`engine.registry.Lazy` reference to ``(store, experiment) → {"tables", "charts"}``
    drawing the paper's tables and figures from them; ``summary`` one to ``(store,
    experiment, **options) → (JSON, text)`` (options such as compare-models' margin) that
    ``experiment run`` and ``show`` print after the runs (None: nothing yet), writing no file
    but one missing; ``figures`` one to ``(store, experiment) → [paths]`` that writes the
    preset's figure files again each time the experiment has been played
    (:func:`engine.experiments.run.run_experiment`); ``dataset_hint`` says what data set it
    wants, ``dataset`` the one it runs on by default."""

    name: str
    title: str
    activity: str | None
    cells: Callable[[Request], list[Cell]]
    report: Lazy[Callable[[Store, JSONDict], JSONDict]] | None = None
    dataset_hint: str = ""
    summary: Lazy[Callable[..., tuple[JSONDict, str] | None]] | None = None
    dataset: str = ""
    figures: Lazy[Callable[[Store, JSONDict], list[Path]]] | None = None


def presets() -> dict[str, Preset]:
    """Every experiment preset by name, the activities' preset modules imported first."""
    return entries("preset")


def get_preset(name: str) -> Preset:
    """The preset ``name``; :class:`engine.registry.UnknownPreset` names the known ones."""
    return cast("Preset", get("preset", name))


def preset_of(experiment: JSONDict) -> Preset | None:
    """The preset a stored experiment was planned from; None for one planned from a file of
    its own, or from a preset no longer known."""
    from engine.registry import UnknownPreset

    name = experiment["spec"].get("preset")
    try:
        return get_preset(str(name)) if name else None
    except UnknownPreset:
        return None


# -- what is asked -------------------------------------------------------------------


def read_file(path: str | Path) -> JSONDict:
    """An experiment file's contents (TOML), checked to be a table; one line when not."""
    from engine.text.jsonio import NotText, decode_text, long_number_line, long_number_reason

    try:
        with open(path, "rb") as f:
            text = decode_text(f.read())
        found = tomllib.loads(text)
    except FileNotFoundError:
        raise PlanError(f"no preset or experiment file {str(path)!r}") from None
    except NotText as exc:
        raise PlanError(f"{path} is {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise PlanError(f"{path} is not an experiment file (TOML): {exc}") from None
    except ValueError:  # Python's limit on the digits of a whole number
        if (line := long_number_line(text)) is None:
            raise
        raise PlanError(f"{path}: line {line}: {long_number_reason()}") from None
    known = {"title", "activity", "preset", "dataset", "models", "limit", "model_setting", "trials"}
    unknown = sorted(set(found) - known - {"settings", "grid"})
    if unknown:
        near = [m for k in unknown for m in difflib.get_close_matches(k, sorted(known), n=1)]
        hint = f"did you mean {near[0]!r}?" if near else "a run's settings go under [settings]"
        raise PlanError(
            f"{path}: unknown key(s) {', '.join(unknown)} "
            f"({hint}; known: {', '.join(sorted(known))}, [settings], [grid])"
        )
    return found


def _grid_cells(given: JSONDict, request: Request, where: str, trials: int) -> list[Cell]:
    """The cells of an experiment file: every model × every combination of ``[grid]``; a
    name in ``[settings]``, ``[grid]`` or ``model_setting`` that is not one of the
    activity's settings is refused, naming the nearest one."""
    from engine.activities import activity as get_activity
    from engine.fields import names, unknown_name

    activity = given.get("activity")
    if not isinstance(activity, str):
        raise PlanError(f'{where}: say whose runs it plays (activity = "exam") or a preset')
    settings = given.get("settings") or {}
    grid = given.get("grid") or {}
    if not isinstance(settings, dict) or not isinstance(grid, dict):
        raise PlanError(f"{where}: [settings] and [grid] are tables of setting = value(s)")
    axes = {k: v if isinstance(v, list) else [v] for k, v in grid.items()}
    if any(not v for v in axes.values()):
        raise PlanError(f"{where}: a [grid] setting with no values")
    key = str(given.get("model_setting") or model_setting(activity))
    known = names(get_activity(activity).settings_class())
    for part, found in (("[settings]", settings), ("[grid]", grid), ("model_setting", [key])):
        problem = unknown_name(found, known)
        if problem:
            raise PlanError(f"{where}: {part}: {problem}")
    check_size(len(request.models) * math.prod(len(v) for v in axes.values()), trials)
    cells = []
    for model in request.models:
        for values in itertools.product(*axes.values()):
            chosen = dict(zip(axes, values, strict=True))
            runs = {**settings, key: model, "limit": request.limit, **chosen}
            words = " · ".join(f"{k} {v}" for k, v in chosen.items())
            label = f"{model} · {words}" if words else model
            cells.append(Cell(activity, request.dataset, runs, label, {"model": model, **chosen}))
    return cells


def check_size(cells: int, trials: int = 1) -> None:
    """Refuse a plan of more than :data:`MAX_CELLS` runs, in one line, before any is made."""
    total = cells * trials
    if total > MAX_CELLS:
        asked = f"{cells:,} runs × {trials} trials = {total:,}" if trials > 1 else f"{total:,}"
        raise PlanError(
            f"this experiment asks for {asked} runs; the most one plans is {MAX_CELLS:,} "
            "(fewer models, [grid] values or trials)"
        )


def model_setting(activity_id: str) -> str:
    """The setting a model of an experiment goes to: the first of the activity's settings
    (the model a run asks, or who consults)."""
    from engine.activities import activity
    from engine.fields import describe

    return describe(activity(activity_id).settings_class())[0].name


def _models(models: Sequence[str]) -> list[str]:
    """The models named, checked to be known (one line naming the first that is not)."""
    from engine.models.catalog import resolve

    out = [m.strip() for m in models if m.strip()]
    if not out:
        raise PlanError("no models given (--models A,B)")
    for name in out:
        resolve(name, assemble=False)
    return list(dict.fromkeys(out))


def _file_models(value: Any, where: str) -> list[str]:
    """The models an experiment file names: a list of names (or one name, or several
    separated by commas, as ``--models`` takes them); one line when it is anything else."""
    if isinstance(value, str):
        value = value.split(",")
    if value is None or (isinstance(value, list) and all(isinstance(m, str) for m in value)):
        return list(value or [])
    raise PlanError(f'{where}: models must be a list of model names (models = ["smollm2"])')


def requested_cells(
    store: Store,
    what: str,
    models: Sequence[str] | None,
    dataset: str | None,
    limit: int | None,
    trials: int | None = None,
) -> tuple[str, str, Preset | None, list[Cell], JSONDict]:
    """``what`` (a preset's name or an experiment file) with the models, data set, limit and
    trials (each overriding the file's): its name, title, preset, cells and spec."""
    from engine.core.trials import MAX_TRIALS

    given: JSONDict = {}
    is_file = what not in presets() and (what.endswith(".toml") or Path(what).is_file())
    if is_file:
        given = read_file(what)
    preset = (
        get_preset(str(given.get("preset") or what)) if not is_file or given.get("preset") else None
    )
    models = list(models or _file_models(given.get("models"), what))
    default = preset.dataset if preset else ""
    dataset = dataset or given.get("dataset") or default
    limit = limit if limit is not None else given.get("limit")
    trials = trials if trials is not None else given.get("trials")
    if not dataset or (dataset == default and not store.has_dataset(default)):
        hint = f" ({preset.dataset_hint})" if preset and preset.dataset_hint else ""
        if default:
            raise PlanError(f"{what} runs on {default!r} (or --dataset NAME), not imported{hint}")
        raise PlanError(f"no data set given (--dataset NAME){hint}")
    if limit is not None and (type(limit) is not int or limit < 1):
        raise PlanError(f"limit must be a whole number of at least 1 (got {limit!r})")
    if trials is not None and (type(trials) is not int or not 1 <= trials <= MAX_TRIALS):
        raise PlanError(f"trials must be a whole number from 1 to {MAX_TRIALS}")
    store.dataset(str(dataset))  # one line when there is none
    request = Request(_models(models), str(dataset), limit, store)
    if preset is not None:
        cells, name, title = preset.cells(request), preset.name, preset.title
        check_size(len(cells), trials or 1)
    else:
        name = Path(what).stem
        cells = _grid_cells(given, request, what, trials or 1)
        title = str(given.get("title") or name)
    cells = with_trials(store, cells, trials or 1)
    spec = {
        "preset": preset.name if preset else None,
        "file": str(what) if is_file else None,
        "models": request.models,
        "dataset": request.dataset,
        "limit": limit,
        "trials": trials,
    }
    return name, title, preset, cells, spec


def with_trials(store: Store, cells: Sequence[Cell], trials: int) -> list[Cell]:
    """Each cell played ``trials`` times (:mod:`engine.core.trials`): trial k with the seed
    ``seed + k - 1``, its label and ``coords`` saying which trial, its settings tagged with
    the trial, the number of trials and a trial set named after the cell's settings (the same
    cell in another experiment is the same set). One trial leaves the cells as they are;
    settings that do not sample (temperature 0, letter probabilities) are refused in a line."""
    from engine.core.trials import TrialError, check_trials

    if trials == 1:
        return list(cells)
    out: list[Cell] = []
    checked: set[tuple[str, str]] = set()
    for cell in cells:
        full = full_settings(store, cell, checked)
        try:
            check_trials(full, trials)
        except TrialError as exc:
            raise PlanError(f"{cell.label}: {exc}") from None
        seed = int(full.get("seed") or 0)
        given = {k: v for k, v in full.items() if k != "seed"}
        text = json.dumps([cell.activity, cell.dataset, given], sort_keys=True, default=str)
        name = hashlib.sha256(text.encode()).hexdigest()[:8]
        for k in range(1, trials + 1):
            tags = {"trial": k, "trials": trials, "trial_set": name}
            settings = {**cell.settings, "seed": seed + k - 1, **tags}
            label = f"{cell.label} · trial {k}"
            out.append(
                Cell(cell.activity, cell.dataset, settings, label, {**cell.coords, "trial": k})
            )
    return out


# -- the plan ---------------------------------------------------------------------------


def full_settings(
    store: Store, cell: Cell, checked: set[tuple[str, str]] | None = None
) -> JSONDict:
    """A cell's settings as its activity fills them in and checks them (one line when it
    refuses them, or names a setting it does not have), its data set checked to be of the
    activity's kind (once per activity and data set in ``checked``)."""
    from engine.core.run_checks import check_dataset, check_settings, spec_for

    if checked is None or (cell.activity, cell.dataset) not in checked:
        check_dataset(store, cell.activity, cell.dataset)
        if checked is not None:
            checked.add((cell.activity, cell.dataset))
    try:
        check_settings(cell.activity, cell.settings)
        return spec_for(cell.activity).settings(dict(cell.settings))
    except (ValueError, UserError) as exc:
        raise PlanError(f"{cell.label}: {exc}") from None


def _canon(value: Any) -> Any:
    """``value`` as settings compare (a whole number equals the same number with a point)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, list | tuple):
        return [_canon(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _canon(v) for k, v in value.items()}
    return str(value)


def _signature(values: JSONDict, keys: Sequence[str]) -> str:
    return json.dumps([_canon(values.get(k)) for k in keys])


def settings_key(cell: Cell, full: JSONDict) -> str:
    """What tells cells apart: their activity, data set and full settings, as text."""
    return _signature({"c": [cell.activity, cell.dataset, full]}, ["c"])


def same_settings(run: Row, full: JSONDict) -> bool:
    """Whether stored run ``run`` was played with settings ``full`` (the free ones apart)."""
    keys = [k for k in full if k not in FREE_SETTINGS]
    return _signature(run.get("settings") or {}, keys) == _signature(full, keys)


def _may_reuse(store: Store, run: Row, cell: Cell) -> bool:
    """Whether ``run`` is a finished model run of ``cell``'s activity and data set, every
    item answered, played on the items its data set holds now (:meth:`Store.items_changed`),
    its settings all known here (one this medexam does not know may have changed its
    answers)."""
    from engine.core.run_checks import known_settings
    from engine.fields import unknown_name

    settings = run.get("settings") or {}
    return not (
        run["activity"] != cell.activity
        or run["dataset"] != cell.dataset
        or run["status"] != "finished"
        or run.get("runner") == "person"
        or settings.get("source") == "published"
        or int(run.get("n_done") or 0) < int(run.get("n_total") or 0)
        or unknown_name(settings, known_settings(cell.activity)) is not None
        or store.items_changed(run)
    )


def reusable(store: Store, cell: Cell, full: JSONDict, runs: list[Row] | None = None) -> int | None:
    """The newest finished model run of ``cell``'s activity and data set played with the
    settings ``full`` (the same model and limit among them), every item answered, on the
    items its data set holds now."""
    for run in runs if runs is not None else store.runs(cell.activity):
        if _may_reuse(store, run, cell) and same_settings(run, full):
            return int(run["id"])
    return None


class _Lookups:
    """What planning looks up once, however many cells ask: the data sets checked, the runs
    each reuse could be by their settings, the estimates by their pace settings."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.checked: set[tuple[str, str]] = set()
        self.runs: dict[tuple[str, str, tuple[str, ...]], dict[str, int]] = {}
        self.paces: dict[str, tuple[Estimate, bool]] = {}

    def reuse(self, cell: Cell, full: JSONDict) -> int | None:
        """:func:`reusable`, from an index of the activity's runs by these settings."""
        keys = tuple(k for k in full if k not in FREE_SETTINGS)
        found = self.runs.get((cell.activity, cell.dataset, keys))
        if found is None:
            found = {}
            for run in self.store.runs(cell.activity):  # newest first: the first one is kept
                if _may_reuse(self.store, run, cell):
                    found.setdefault(_signature(run.get("settings") or {}, keys), int(run["id"]))
            self.runs[(cell.activity, cell.dataset, keys)] = found
        return found.get(_signature(full, keys))

    def paced(self, cell: Cell, full: JSONDict) -> tuple[Estimate, bool]:
        """:func:`_paced`, once per activity, data set, model and pace settings."""
        from engine.core.estimate import PACE_KEYS

        keys = [k for k in (*PACE_KEYS, "model", "doctor", "limit") if k in full]
        key = json.dumps([cell.activity, cell.dataset, keys, _signature(full, keys)])
        if key not in self.paces:
            self.paces[key] = _paced(self.store, cell, full)
        return self.paces[key]


def _paced(store: Store, cell: Cell, full: JSONDict) -> tuple[Estimate, bool]:
    """The cell's estimate by the newest run of its model with the same pace settings
    (:func:`engine.core.estimate.estimate`), else by the newest run of its model whatever its
    settings (``True``: a rough one, the model's own pace)."""
    from engine.core.estimate import estimate

    found = estimate(store, cell.activity, cell.dataset, full)
    if found.seconds is not None:
        return found, False
    model = [{k: full[k]} for k in ("model", "doctor") if full.get(k)][:1]
    if model:
        given = {**model[0], "limit": full.get("limit")}  # the pace settings left out
        rough = estimate(store, cell.activity, cell.dataset, given)
        if rough.seconds is not None:
            return rough, True
    return found, False


def plan_cells(store: Store, cells: Sequence[Cell]) -> list[PlannedCell]:
    """Each cell with its full settings, the finished run it reuses and its estimate (each
    looked up once however many cells share it: planning takes time in step with cells)."""
    lookups = _Lookups(store)
    first: dict[str, int] = {}  # the first cell of each activity, data set and settings
    out: list[PlannedCell] = []
    for index, cell in enumerate(cells):
        full = full_settings(store, cell, lookups.checked)
        reuse = lookups.reuse(cell, full)
        same = first.setdefault(settings_key(cell, full), index)
        paced, rough = lookups.paced(cell, full)
        shared = None if reuse is not None or same == index else same
        out.append(PlannedCell(cell, full, reuse, paced, shared, rough))
    return out


def make_plan(
    store: Store,
    what: str,
    models: Sequence[str] | None = None,
    dataset: str | None = None,
    limit: int | None = None,
    trials: int | None = None,
) -> Plan:
    """The plan of preset or experiment file ``what`` (see the module's doc)."""
    found = requested_cells(store, what, models, dataset, limit, trials)
    name, title, _preset, cells, spec = found
    if not cells:
        raise PlanError(f"{name} makes no runs with these models and this data set")
    plan = Plan(name, title, spec, plan_cells(store, cells))
    _with_stored(store, plan)
    return plan


def _with_stored(store: Store, plan: Plan) -> None:
    """Mark each cell with its run in the stored experiment of ``plan`` (when there is one):
    a finished one is not played again, a stopped one is resumed for the items it lacks."""
    import dataclasses

    from engine.experiments import records

    plan.experiment_id = records.find(store, plan.key)
    if plan.experiment_id is None:
        return
    for planned, stored in zip(plan.cells, records.cells(store, plan.experiment_id), strict=False):
        run = stored["run"]
        if run is not None and stored["status"] == records.CHANGED:
            planned.stale = int(run["id"])  # on items its data set no longer holds: not its run
            continue
        if run is None or stored["reused"]:
            continue
        planned.own, planned.reuse, planned.same_as = run, None, None
        left = max(0, int(run.get("n_total") or 0) - int(run.get("n_done") or 0))
        planned.estimate = dataclasses.replace(planned.estimate, items=left)


def cell_from_json(data: Any) -> Cell:
    """A cell as stored (:mod:`engine.experiments.records`)."""
    settings, coords = dict(data.get("settings") or {}), dict(data.get("coords") or {})
    return Cell(
        str(data["activity"]), str(data["dataset"]), settings, str(data.get("label") or ""), coords
    )
