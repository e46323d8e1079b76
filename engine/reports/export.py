"""Reading runs back out: a headline score, a full detail view, and exports a spreadsheet
can use.

* CSV: one row per answer with the question text, its options and type fields, the gold
  answer beside the response, one column per score and per ``extra`` field (nested values
  flattened: ``extra_probs_A``); consultations add a turns file (run, case, turn, speaker,
  text, facts revealed).
* JSON: everything stored — the run (with its label), its answers, turns and the items it
  answered.
* XLSX (openpyxl): the answers, the turns and the run on sheets of one workbook.

Text that a spreadsheet would run as a formula (``=HYPERLINK(…)`` in an imported question)
is written as text in both (:mod:`engine.text.sheets`).

>>> write_export(store, 12, "run-12.csv")     # doctest: +SKIP
[PosixPath('run-12.csv'), PosixPath('run-12-turns.csv')]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NotRequired, TypeAlias, TypedDict, cast

from engine.bank.notebook import Entry, by_item
from engine.core.scoring import headline_value
from engine.errors import UnknownFormat
from engine.reports.label import run_label
from engine.review.profiles import run_profile
from engine.store.store import Store
from engine.text.sheets import append_row, csv_text

if TYPE_CHECKING:
    from openpyxl.worksheet.worksheet import Worksheet

    from engine.types import Item, JSONDict, JSONValue, Row

__all__ = [
    "FORMATS",
    "answer_table",
    "export_run",
    "export_turns",
    "headline",
    "headline_value",
    "run_detail",
    "save_text",
    "turn_table",
    "write_export",
]

FORMATS = ("csv", "json", "xlsx")
#: Item fields that say what kind of question it is (ExplainCPE types, FrenchMedMCQA's).
TYPE_FIELDS = ("type1", "type2", "type3", "type", "nbr_correct_answers", "subject_name")
LETTERS = "ABCDEFGHIJ"
#: A value as a spreadsheet cell holds it.
SheetValue: TypeAlias = "str | int | float | None"
#: A sheet: its columns and its rows (column → value).
Table: TypeAlias = "tuple[list[str], list[JSONDict]]"


class RunDetail(TypedDict):
    """A run (with its ``label``), its answers and turns; the JSON export adds the items."""

    run: Row
    answers: Sequence[Row]
    turns: Sequence[Row]
    ratings: Sequence[Row]
    notebook: list[JSONDict]
    items: NotRequired[dict[str, Item]]


def headline(run: Row) -> str:
    value = headline_value(run)
    return "" if value is None else f"{value:.1f}"


def run_detail(store: Store, run_id: int) -> RunDetail:
    """A run (with its ``label`` and the ``scorers`` that scored it) with its answers,
    consultation turns, the ratings people and judges gave its explanations and, for a
    person's session, that person's notebook entries on its questions."""
    found = store.run(run_id)
    run: JSONDict = {**found, "label": run_label(found), "scorers": store.run_scorers(run_id)}
    answers = store.answers(run_id)
    return {
        "run": run,
        "answers": answers,
        "turns": store.turns(run_id),
        "ratings": store.rated_rows([run_id]),
        "notebook": [e.as_dict() for e in _noted(store, run, answers).values()],
    }


def _noted(store: Store, run: Row, answers: Sequence[Row]) -> dict[str, Entry]:
    """A person's notebook entries on the questions of their session, by key."""
    if run.get("runner") != "person":
        return {}
    keys = {str(a["item_key"]) for a in answers}
    found = by_item(store, run_profile(run), str(run["dataset"]))
    return {k: e for k, e in found.items() if k in keys}


def _items(store: Store, dataset: str) -> dict[str, Item]:
    return store.items_by_key(dataset) or {}


def _options(options: JSONValue) -> str:
    if isinstance(options, dict):
        pairs = [(str(k).upper(), v) for k, v in options.items()]
    elif isinstance(options, list):
        pairs = list(zip(LETTERS, options, strict=False))
    else:
        return ""
    return "\n".join(f"{k}. {v}" for k, v in pairs)


def _question(item: Item) -> JSONDict:
    """The question columns of an item: text, options and (for cases) the opening."""
    task = item.get("task")
    if isinstance(task, dict):  # a consultation case
        return {
            "question": task.get("question", ""),
            "options": _options(task.get("options")),
            "opening_request": item.get("initial_request", ""),
        }
    return {
        "question": item.get("question", ""),
        "options": _options(item.get("options") or item.get("answers")),
    }


def _cell(value: JSONValue) -> SheetValue:
    """A value a spreadsheet reads: booleans as 1/0, lists of plain values joined, other
    structures as JSON text."""
    if isinstance(value, bool):
        return int(value)
    if value is None or isinstance(value, int | float | str):
        return value
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return "; ".join(str(v) for v in value)
    return json.dumps(value, ensure_ascii=False)


def _flatten(prefix: str, values: JSONDict | None) -> dict[str, SheetValue]:
    out: dict[str, SheetValue] = {}
    for key, value in (values or {}).items():
        flat = isinstance(value, dict) and all(
            v is None or isinstance(v, int | float | str | bool) for v in value.values()
        )
        if flat and value:
            out.update({f"{prefix}{key}_{sub}": _cell(v) for sub, v in value.items()})
        else:
            out[f"{prefix}{key}"] = _cell(value)
    return out


def answer_table(store: Store, run_id: int) -> Table:
    """The answers of a run as spreadsheet rows: ``(columns, rows)`` (see the module)."""
    run = store.run(run_id)
    label = run_label(run)
    items = _items(store, run["dataset"])
    rows, columns = [], {}
    answers = store.answers(run_id)
    noted = _noted(store, run, answers)
    for a in answers:
        item = items.get(str(a["item_key"]), {})
        row: JSONDict = {
            "run_id": run_id,
            "run_label": label,
            "item_key": a["item_key"],
            "position": a["position"],
            **_question(item),
            **{f: _cell(item[f]) for f in TYPE_FIELDS if f in item},
            "gold": a["gold"],
            "chosen": a["chosen"],
            "correct": _cell(None if a["correct"] is None else bool(a["correct"])),
            "response": a["response"],
            **_flatten("score_", a["scores"]),
            **_flatten("extra_", a["extra"]),
            **_notebook_cells(noted.get(str(a["item_key"])), run.get("runner") == "person"),
            "latency_s": a["latency_s"],
            "prompt_tokens": a["prompt_tokens"],
            "completion_tokens": a["completion_tokens"],
            "created": a["created"],
        }
        rows.append(row)
        columns.update(dict.fromkeys(row))
    head = ["run_id", "run_label", "item_key", "position", "question", "options"]
    tail = ["latency_s", "prompt_tokens", "completion_tokens", "created"]
    middle = [c for c in columns if c not in head and c not in tail]
    return [*head, *middle, *tail], rows


def _fact_keys(case: Item, indices: JSONValue) -> str:
    facts = case.get("facts") or []
    names = []
    for i in indices if isinstance(indices, list) else []:
        if isinstance(i, int) and 0 <= i < len(facts):
            names.append(str(facts[i].get("key", i)))
        else:
            names.append(str(i))
    return "; ".join(names)


TURN_COLUMNS = [
    "run_id",
    "case",
    "turn",
    "speaker",
    "kind",
    "text",
    "facts_revealed",
    "facts_leaked",
    "facts_given",
    "source",
    "latency_s",
    "tokens",
    "created",
]


def turn_table(store: Store, run_id: int) -> Table:
    """The consultation turns of a run, one row per utterance: who spoke, what, and which
    of the case's facts (by key) the reply revealed, leaked or was given."""
    run = store.run(run_id)
    cases = _items(store, run["dataset"])
    rows = []
    for t in store.turns(run_id):
        extra = t["extra"] or {}
        case = cases.get(str(t["item_key"]), {})
        given = [f.get("index") for f in extra.get("facts") or [] if isinstance(f, dict)]
        rows.append(
            {
                "run_id": run_id,
                "case": t["item_key"],
                "turn": t["turn"],
                "speaker": t["role"],
                "kind": extra.get("kind", ""),
                "text": t["text"],
                "facts_revealed": _fact_keys(case, extra.get("revealed")),
                "facts_leaked": _fact_keys(case, extra.get("leaked")),
                "facts_given": _fact_keys(case, given),
                "source": extra.get("source", ""),
                "latency_s": t["latency_s"],
                "tokens": t["tokens"],
                "created": t["created"],
            }
        )
    return list(TURN_COLUMNS), rows


def _csv(table: Table) -> str:
    columns, rows = table
    return csv_text([columns, *([row.get(c) for c in columns] for row in rows)])


def _notebook_cells(entry: Entry | None, person: bool) -> dict[str, SheetValue]:
    """A person's mark, note and why they missed the question (a person's session only)."""
    if entry is None:
        return {"marked": False, "note": "", "miss_reason": ""} if person else {}
    return {"marked": entry.marked, "note": entry.note, "miss_reason": entry.reason or ""}


def export_json(store: Store, run_id: int) -> str:
    """Everything about a run: the run, its answers, its turns and the items it answered."""
    detail = run_detail(store, run_id)
    items = _items(store, detail["run"]["dataset"])
    keys = [str(a["item_key"]) for a in detail["answers"]]
    detail["items"] = {k: items[k] for k in keys if k in items}
    return json.dumps(detail, ensure_ascii=False, indent=2) + "\n"


def export_run(store: Store, run_id: int, fmt: str) -> str:
    """A run as JSON (everything) or CSV (one row per answer, see :func:`answer_table`)."""
    if fmt == "json":
        return export_json(store, run_id)
    if fmt == "csv":
        return _csv(answer_table(store, run_id))
    raise UnknownFormat(f"unknown export format {fmt!r} (csv or json)")


def export_turns(store: Store, run_id: int) -> str:
    """The consultation turns of a run as CSV (see :func:`turn_table`)."""
    return _csv(turn_table(store, run_id))


def turns_path(path: Path) -> Path:
    """Where the turns file goes beside an answers CSV (``run.csv`` → ``run-turns.csv``)."""
    return path.with_name(f"{path.stem}-turns{path.suffix}")


def _xlsx(store: Store, run_id: int, path: Path) -> None:
    from openpyxl import Workbook
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

    def clean(value: JSONValue) -> JSONValue:
        if isinstance(value, str):
            return ILLEGAL_CHARACTERS_RE.sub("", value)[:32767]
        return value

    book = Workbook()
    sheets = [("answers", answer_table(store, run_id))]
    turns = turn_table(store, run_id)
    if turns[1]:
        sheets.append(("turns", turns))
    run = run_detail(store, run_id)["run"]
    info = {k: v for k, v in run.items() if k not in ("settings", "summary")}
    info.update(_flatten("settings_", run["settings"]))
    info.update(_flatten("summary_", run["summary"]))
    sheets.append(
        ("run", (["field", "value"], [{"field": k, "value": _cell(v)} for k, v in info.items()]))
    )
    for i, (name, (columns, rows)) in enumerate(sheets):
        sheet = cast("Worksheet", book.active) if i == 0 else book.create_sheet()
        sheet.title = name
        append_row(sheet, columns)
        for row in rows:
            append_row(sheet, [clean(row.get(c)) for c in columns])
        sheet.freeze_panes = "A2"
    book.save(path)


def write_export(store: Store, run_id: int, path: str | Path, fmt: str | None = None) -> list[Path]:
    """Export a run to ``path`` as ``fmt`` (csv, json or xlsx; by default the file's
    suffix, CSV without one); return the files written. A CSV export of a run with
    consultation turns writes them beside it (:func:`turns_path`)."""
    path = Path(path)
    fmt = fmt or path.suffix.lower().lstrip(".") or "csv"
    if fmt not in FORMATS:
        raise UnknownFormat(f"unknown export format {fmt!r} (choose from {', '.join(FORMATS)})")
    if fmt == "xlsx":
        _xlsx(store, run_id, path)
        return [path]
    save_text(path, export_run(store, run_id, fmt), fmt)
    written = [path]
    if fmt == "csv" and store.turns(run_id):
        save_text(turns_path(path), export_turns(store, run_id), fmt)
        written.append(turns_path(path))
    return written


def save_text(path: str | Path, text: str, fmt: str | None = None) -> None:
    """Write an export's ``text`` to ``path`` as it is (no newline translation). A CSV file
    (``fmt`` "csv", or by default a ``.csv`` suffix) starts with UTF-8's byte-order mark,
    without which Excel reads Chinese and accented text as another encoding."""
    fmt = fmt or Path(path).suffix.lower().lstrip(".")
    Path(path).write_text(text, encoding="utf-8-sig" if fmt == "csv" else "utf-8", newline="")
