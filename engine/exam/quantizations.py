"""The ``quantizations`` preset: a model's quantization ladder (``medexam models quantize``,
:mod:`engine.models.quantize`) answering one exam data set by the letter probabilities
(``logprob``), each quantization against the ladder's reference — the model's highest
precision: its own file when F32/BF16/F16, else that file converted to F32 — on the items
both answered:

* the paired difference in accuracy with its interval and the equivalence verdict within
  ± the margin (:func:`engine.experiments.compare.compare_runs`, which also gives speed,
  peak memory and file size);
* the items that flipped each way, listed (:func:`engine.reports.diff.diff_runs`): right with the
  reference only (``lost``) and right with the quantization only (``gained``);
* the mean KL divergence of the answer-letter distribution from the reference's
  (:func:`engine.exam.metrics.letter_kl`), with a bootstrap interval;
* the prompt tokens read per second (the method generates none);

and a figure of accuracy (with the data set's chance level) and KL divergence against file
size, written as SVG and PNG beside the data each time the experiment is played
(:func:`quantization_figures`; ``experiment show`` writes them only when missing) and drawn in
the experiment's report.

>>> found = quantization_summary(store, experiment)     # doctest: +SKIP
>>> found[0]["ladders"][0]["quantizations"][0]["verdict"]  # doctest: +SKIP
'equivalent'
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any, cast

from engine.experiments.plan import Cell, PlanError, Preset, Request
from engine.registry import FUNCTION, Lazy, register
from engine.reports.equivalence import MARGIN

if TYPE_CHECKING:
    from pathlib import Path

    from matplotlib.figure import Figure

    from engine.reports.shapes import Chart, ScoreCell
    from engine.store.store import Store
    from engine.types import JSONDict

NAME = "quantizations"
#: Where the notes under the text table wrap.
COLUMNS = 100


def quantization_cells(request: Request) -> list[Cell]:
    """Each model's ladder, its reference first, every run by the letter probabilities."""
    from engine.models.quantize import QuantizeError, ladder

    cells = []
    for model in request.models:
        try:
            reference, rungs = ladder(model)
        except QuantizeError as exc:
            raise PlanError(str(exc)) from None
        for name, kind in [reference, *rungs]:
            settings: JSONDict = {"model": name, "method": "logprob", "limit": request.limit}
            coords = {"model": model, "type": kind, "reference": name == reference[0]}
            cells.append(Cell("exam", request.dataset, settings, f"{name} ({kind})", coords))
    return cells


def _ladders(experiment: JSONDict) -> dict[str, list[JSONDict]]:
    """The experiment's finished cells by the model whose ladder they are."""
    out: dict[str, list[JSONDict]] = {}
    for cell in experiment["cells"]:
        if cell["status"] == "finished" and cell["run_id"] is not None:
            out.setdefault(str(cell["coords"].get("model")), []).append(cell)
    return out


def _letters(store: Store, run_id: int) -> dict[str, dict[str, float]]:
    """Each answer's letter log-probabilities (the logprob method's), by item."""
    out = {}
    for a in store.answers(run_id):
        found = (a.get("extra") or {}).get("logprobs")
        if isinstance(found, dict) and found:
            out[str(a["item_key"])] = {str(k): float(v) for k, v in found.items()}
    return out


def kl_cell(reference: dict[str, dict[str, float]], other: dict[str, dict[str, float]]) -> JSONDict:
    """The mean KL divergence of ``other``'s letter distributions from ``reference``'s over
    the items both have (:func:`~engine.exam.metrics.letter_kl`), with its bootstrap
    interval (:func:`~engine.reports.stats.mean_cell`), and ``n``, the items."""
    from engine.exam.metrics import letter_kl
    from engine.reports.stats import mean_cell

    values = [letter_kl(reference[k], other[k]) for k in reference if k in other]
    found = [v for v in values if v is not None]
    cell = mean_cell(found)
    return {"value": None, "low": None, "high": None, **(cell or {}), "n": len(found)}


def _prompt_speed(store: Store, run_id: int, model: str) -> float | None:
    """Prompt tokens read per second of the run's answering time (``run_s``)."""
    run = store.run(run_id)
    usage = ((run.get("summary") or {}).get("usage") or {}).get(model) or {}
    seconds = float(usage.get("run_s") or 0)
    tokens = sum(int(a.get("prompt_tokens") or 0) for a in store.answers(run_id))
    return round(tokens / seconds, 1) if tokens and seconds > 0 else None


def _flipped(store: Store, ref_id: int, run_id: int) -> JSONDict:
    """The items right with the reference only (``lost``) and with the run only
    (``gained``): each its place, key, right answer and the two letters chosen."""
    from engine.reports.diff import diff_runs

    out: JSONDict = {"lost": [], "gained": []}
    for i in diff_runs(store, ref_id, run_id, only="flipped").items:
        item = {"number": i.number, "item_key": i.item_key, "gold": i.gold,
                "reference": i.a.chosen, "quantization": i.b.chosen}  # fmt: skip
        out["lost" if i.a.correct else "gained"].append(item)
    return out


def _rung(store: Store, row: JSONDict, cell: JSONDict, lead: str, ref_id: int) -> JSONDict:
    """One model of the ladder as the summary gives it (see the module's doc)."""
    run_id = int(row["run_id"])
    diff = (row.get("paired") or {}).get(lead) or {}
    out: JSONDict = {
        "model": row["model"],
        "type": cell["coords"].get("type"),
        "run_id": run_id,
        "reference": run_id == ref_id,
        "items": row["items"],
        "file_size": row.get("file_size"),
        "score": row["scores"].get(lead),
        "prompt_per_s": _prompt_speed(store, run_id, str(row["model"])),
        "ram_peak": (row.get("memory") or {}).get("ram_peak"),
    }
    if run_id == ref_id:
        return out | {"verdict": None, "kl_divergence": 0.0}
    kl = kl_cell(_letters(store, ref_id), _letters(store, run_id))
    return out | {
        "difference": {
            k: diff.get(k) for k in ("diff", "low", "high", "p", "p_unadjusted", "adjusted", "n")
        },
        "verdict": row.get("verdict"),
        "margin": row.get("margin"),
        "equivalence": row.get("equivalence"),
        "flipped": _flipped(store, ref_id, run_id),
        "kl_divergence": kl["value"],
        "kl_interval": [kl["low"], kl["high"]],
        "kl_items": kl["n"],
    }


def ladder_result(
    store: Store, model: str, cells: list[JSONDict], margin: float, reference: str | None
) -> JSONDict | None:
    """One model's ladder compared (see the module's doc); None before its reference and
    another of its models finished."""
    from engine.experiments.compare import compare_runs

    ref_cell = next((c for c in cells if c["coords"].get("reference")), None)
    if len(cells) < 2 or (ref_cell is None and reference is None):
        return None
    wanted = reference or f"#{ref_cell['run_id']}"  # type: ignore[index]
    ids = [int(c["run_id"]) for c in cells]
    result = compare_runs(store, ids, people=False, margin=margin, reference=wanted)
    ref_id, lead = int(result["reference"]), result["metrics"][0]["key"]
    by_run = {int(c["run_id"]): c for c in cells}
    rungs = [_rung(store, row, by_run[int(row["run_id"])], lead, ref_id) for row in result["rows"]]
    from engine.experiments.verdicts import verdict_note

    return {
        "model": model,
        "dataset": result["dataset"],
        "items": result["items"]["shared"],
        "metric": result["metrics"][0],
        "margin": margin,
        "chance": result["chance"],
        "reference": next(r for r in rungs if r["reference"]),
        "quantizations": [r for r in rungs if not r["reference"]],
        "notes": [verdict_note({**result, "top": None})],  # named the reference, not the top
    }


def ladder_results(
    store: Store, experiment: JSONDict, margin: float = MARGIN, reference: str | None = None
) -> list[JSONDict]:
    """Each model's ladder compared (:func:`ladder_result`), those with two finished runs."""
    found = [
        ladder_result(store, model, cells, margin, reference)
        for model, cells in _ladders(experiment).items()
    ]
    return [f for f in found if f is not None]


def quantization_summary(
    store: Store, experiment: JSONDict, margin: float = MARGIN, reference: str | None = None
) -> tuple[JSONDict, str] | None:
    """Each model's ladder compared (:func:`ladder_results`) as JSON and text, with the
    figure's files (:func:`quantization_figures`, written only when missing); None before
    any ladder has two finished runs."""
    ladders = ladder_results(store, experiment, margin, reference)
    if not ladders:
        return None
    figure = quantization_figures(store, experiment, again=False)
    result: JSONDict = {
        "ladders": ladders,
        "chart": ladder_chart(ladders),
        "figure": [str(p) for p in figure],
    }
    return result, format_ladders(result)


# -- text --------------------------------------------------------------------------------


def _mib(n: Any) -> str:
    return f"{n / 2**20:.0f} MiB" if isinstance(n, int | float) and n else "–"


def _letters_text(items: list[JSONDict]) -> str:
    """``#3 D→A, #9 B→–``: each flipped item's place and the letters chosen (reference →
    quantization)."""
    return ", ".join(
        f"#{i['number']} {i['reference'] or '–'}→{i['quantization'] or '–'}" for i in items
    )


def _row(rung: JSONDict) -> list[str]:
    from engine.reports.render import fmt_cell

    score = rung.get("score")
    cells = [str(rung["model"]), str(rung["type"]), _mib(rung.get("file_size"))]
    cells.append(fmt_cell(cast("ScoreCell", {**score, "n": None})) if score else "–")
    if rung["reference"]:
        cells += ["ref", "ref", "–", "–", "0"]
    else:
        d, flips = rung["difference"], rung["flipped"]
        cells.append(fmt_cell({"value": d["diff"], "low": d["low"], "high": d["high"]}))
        cells.append(str(rung.get("verdict") or "–"))
        cells += [str(len(flips["lost"])), str(len(flips["gained"]))]
        low, high = rung["kl_interval"]
        kl = rung["kl_divergence"]
        shown = "–" if kl is None else f"{kl:.4f}"
        cells.append(shown + (f" [{low:.4f}, {high:.4f}]" if low is not None else ""))
    speed = rung.get("prompt_per_s")
    cells += ["–" if speed is None else f"{speed:.0f}", _mib(rung.get("ram_peak"))]
    return cells


def _ladder_lines(ladder: JSONDict) -> list[str]:
    from engine.text.columns import align_rows

    ref = ladder["reference"]
    lines = [
        f"Quantizations of {ladder['model']} on {ladder['dataset']}: {ladder['items']} items, "
        f"each against {ref['model']} ({ref['type']}, the reference)",
        "",
    ]
    headers = _headers(ladder)
    rows = [_row(r) for r in [ref, *ladder["quantizations"]]]
    right = [False, False, True, True, True, False, True, True, True, True, True]
    return [*lines, *align_rows(headers, rows, right), "", *_flip_lines(ladder)]


def _headers(ladder: JSONDict) -> list[str]:
    headers = ["Model", "Type", "File", f"{ladder['metric']['label']} (%)", "Δ (points)"]
    headers += [f"Verdict (± {ladder['margin']:g})", "Lost", "Gained", "KL (nats)"]
    return [*headers, "Prompt (tok/s)", "RAM peak"]


def _flip_lines(ladder: JSONDict) -> list[str]:
    """Each quantization's flipped items, listed both ways."""
    lines = ["Flipped items (#place in the run: reference's letter → quantization's):"]
    for q in ladder["quantizations"]:
        flips = q["flipped"]
        text = (
            f"{q['model']}: lost {len(flips['lost'])} ({_letters_text(flips['lost']) or 'none'}); "
            f"gained {len(flips['gained'])} ({_letters_text(flips['gained']) or 'none'})"
        )
        lines += textwrap.wrap(text, COLUMNS, subsequent_indent="  ")
    return lines


def notes(ladders: list[JSONDict]) -> list[str]:
    """What the tables' numbers are and how they are made."""
    from engine.reports.stats import METHODS

    own = [
        f"Reference: {x['reference']['model']} ({x['reference']['type']}), {x['model']}'s "
        "highest precision: a model whose file is quantized is first converted to F32 by "
        "llama.cpp, which reads back the weights the file holds, not the original ones; each "
        "quantization is written from it."
        for x in ladders
    ]
    return [
        *own,
        "Δ: the quantization's accuracy less the reference's on the same items, with "
        f"{METHODS['newcombe']}. Lost: right with the reference only; gained: right with the "
        "quantization only (matching accuracy can hide flips both ways).",
        *[n for x in ladders for n in x["notes"]],
        "KL: the mean over the items of KL(P‖Q) in nats, P the reference's and Q the "
        "quantization's probabilities of the answer letters (each option's letter read after "
        "the answer cue, renormalised over the options), with "
        f"{METHODS['bootstrap']}; 0 when they give the same probabilities.",
        "Prompt: the prompt tokens the run read per second of its answering time (the letter "
        "probabilities need no generated token), as noisy as the machine is busy. RAM peak: the "
        "model process's, its slots' caches included.",
    ]


def format_ladders(result: JSONDict) -> str:
    """The ladders as text tables, their flipped items, notes and the figure's files."""
    lines: list[str] = []
    for ladder in result["ladders"]:
        lines += [*_ladder_lines(ladder), ""]
    lines += [textwrap.fill(n, COLUMNS) for n in notes(result["ladders"])]
    if result["figure"]:
        lines += ["", "Figure (accuracy and KL divergence against file size):"]
        lines += [f"  {p}" for p in result["figure"]]
    return "\n".join(lines) + "\n"


# -- the figure and the report -------------------------------------------------------------


def ladder_chart(ladders: list[JSONDict]) -> Chart:
    """Accuracy and KL divergence against file size, a series per ladder, and the data set's
    chance accuracy (``chance``, :mod:`engine.core.chance`; None when its runs give none)."""
    series = []
    for x in ladders:
        points = []
        for r in [x["reference"], *x["quantizations"]]:
            score = r.get("score") or {}
            if not r.get("file_size") or score.get("value") is None:
                continue
            low, high = r.get("kl_interval") or [None, None]
            points.append({"name": r["type"], "size": r["file_size"], **score,
                           "kl": r["kl_divergence"], "kl_low": low, "kl_high": high})  # fmt: skip
        series.append({"name": x["model"], "points": points})
    metric = ladders[0]["metric"]["label"] if ladders else ""
    title = f"{metric} and KL divergence from the reference against file size"
    return {
        "kind": NAME,
        "title": title,
        "axis": f"{metric} (%)",
        "series": series,  # type: ignore[typeddict-item]
        "chance": next((x["chance"] for x in ladders if x.get("chance") is not None), None),
    }


def _errors(points: list[JSONDict], key: str, low: str, high: str) -> list[list[float]]:
    return [
        [p[key] - p[low] if p.get(low) is not None else 0 for p in points],
        [p[high] - p[key] if p.get(high) is not None else 0 for p in points],
    ]


@register("chart", name=NAME)
def ladder_figure(chart: Chart) -> Figure:
    """Two panels sharing the file size (MiB, log scale): accuracy with its 95% interval
    and the chance level, and the mean KL divergence with its interval; each point named by
    its type."""
    from matplotlib.ticker import NullFormatter

    from engine.reports.charts import chance_line, figure

    series: list[Any] = list(chart.get("series") or [])
    fig = figure(3.6)
    score, kl = fig.subplots(1, 2)
    for i, s in enumerate(series):
        points = sorted(s["points"], key=lambda p: p["size"])
        xs = [p["size"] / 2**20 for p in points]
        style = {"fmt": "o-", "capsize": 3, "color": f"C{i % 10}", "label": s["name"]}
        score.errorbar(xs, [p["value"] for p in points],
                       yerr=_errors(points, "value", "low", "high"), **style)  # fmt: skip
        kl.errorbar(xs, [p["kl"] for p in points],
                    yerr=_errors(points, "kl", "kl_low", "kl_high"), **style)  # fmt: skip
        for ax, key in ((score, "value"), (kl, "kl")):
            for x, p in zip(xs, points, strict=True):
                ax.annotate(p["name"], (x, p[key]), textcoords="offset points", xytext=(4, 4),
                            fontsize=7)  # fmt: skip
    sizes = sorted({p["size"] / 2**20 for s in series for p in s["points"]})
    for ax, label in ((score, chart.get("axis", "")), (kl, "KL divergence (nats)")):
        ax.set_xscale("log")
        ax.set_xticks(sizes, [f"{v:.0f}" for v in sizes], fontsize=7)  # each file's size
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("File size (MiB)")
        ax.set_ylabel(label)
        ax.grid(color="#e5e7eb")
        ax.margins(x=0.15)
    score.set_ylim(0, 100)
    kl.set_ylim(bottom=0)
    chance_line(score, chart.get("chance"))
    score.legend(fontsize=7, loc="best")
    fig.suptitle(chart["title"], fontsize=10)
    return fig


def figure_paths(experiment_id: int) -> list[Path]:
    """Where the experiment's figure is written: SVG and PNG in ``figures/`` of the user data
    folder, named for the experiment."""
    from engine.paths import data_dir

    stem = data_dir() / "figures" / f"experiment-{experiment_id}-{NAME}"
    return [stem.with_suffix(".svg"), stem.with_suffix(".png")]


def figure_files(chart: Chart, experiment_id: int, again: bool = True) -> list[Path]:
    """The figure written as SVG and PNG (:func:`figure_paths`): each file replaced, or
    without ``again`` only the missing one written (the other left as it is); none without
    a point."""
    from engine.paths import write_own
    from engine.reports.charts import chart_figure, png, svg

    series: list[Any] = list(chart.get("series") or [])
    if not any(s["points"] for s in series):
        return []
    fig = chart_figure(chart)
    if fig is None:
        return []
    svg_path, png_path = figure_paths(experiment_id)
    svg_path.parent.mkdir(parents=True, exist_ok=True)
    if again or not svg_path.is_file():
        write_own(svg_path, svg(fig).encode("utf-8"))
    if again or not png_path.is_file():
        write_own(png_path, png(fig))
    return [svg_path, png_path]


def quantization_figures(store: Store, experiment: JSONDict, again: bool = True) -> list[Path]:
    """The experiment's figure files from its finished runs, each ladder against its own
    reference: written again (``again``: the preset's ``figures``, called each time the
    experiment has been played), or only the one missing (:func:`figure_files`; nothing
    drawn when both are there); none before a ladder has two finished runs."""
    paths = figure_paths(int(experiment["id"]))
    if not again and all(p.is_file() for p in paths):
        return paths
    ladders = ladder_results(store, experiment)
    return figure_files(ladder_chart(ladders), int(experiment["id"]), again) if ladders else []


def quantization_report(store: Store, experiment: JSONDict) -> JSONDict:
    """The ladders as report tables (one per model) with the figure."""
    from engine.reports.shapes import table

    ladders = ladder_results(store, experiment)
    tables = []
    for x in ladders:
        rows: list[list[Any]] = [_row(r) for r in [x["reference"], *x["quantizations"]]]
        title = f"Quantizations of {x['model']} on {x['dataset']}: {x['items']} items"
        tables.append(table(title, _headers(x), rows, *_flip_lines(x)))
    if tables:
        tables[-1]["notes"] += notes(ladders)
    return {"tables": tables, "charts": [ladder_chart(ladders)] if ladders else []}


register(
    "preset",
    Preset(
        NAME,
        "A model's quantizations against its highest precision",
        "exam",
        quantization_cells,
        report=Lazy("engine.exam.quantizations", "quantization_report", FUNCTION),
        dataset_hint="an exam data set: medexam import explaincpe test.json --name cpe-test",
        summary=Lazy("engine.exam.quantizations", "quantization_summary", FUNCTION),
        figures=Lazy("engine.exam.quantizations", "quantization_figures", FUNCTION),
    ),
)
