"""Multiple-choice exam data sets: reading, validating and importing them.

A question is a dict::

    {"id": 0, "question": "…", "options": ["…", "…", "…", "…", "…"], "answer": "D",
     "explanation": "…", "analyse": "…", "type1": "正向", "type2": "常识题", "type3": "其他"}

``analyse`` and ``type1``/``type2``/``type3`` are optional. How real candidates did on a
question is kept as ``candidates`` (``{"n": 68, "right": 0.75}``: answers and the share
right), from the record's own ``candidates`` or from what ``analyse`` says
("本题共被作答68次 正确率75%", :mod:`engine.exam.candidates`). ExplainCPE files (the published
JSON lists) need exactly five options and an explanation; generic ``mcq`` files (JSON list,
JSON Lines or CSV) need two to ten options and may leave the explanation empty. MedQA's own
records (``{"question", "options": {"A": …}, "answer": "<the right option's text>",
"answer_idx": "A", "meta_info": "step1"}``, no id) are read as they are: the options in
letter order, ``answer_idx`` as the answer (checked against ``answer``), the record's number
as its id, ``meta_info`` kept.

Every record is checked before anything is stored; the first bad record stops the import
with its number (1-based) and the reason, and the store is left untouched.

>>> rows = [{"id": 1, "question": "Q?", "options": ["a", "b"], "answer": "b"}]
>>> validate_records(rows, fmt="mcq")[0]["answer"]
'B'
"""

from __future__ import annotations

import contextlib
import csv
import io
import re
import string
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NotRequired, TypeAlias, TypedDict, cast

from engine.errors import DatasetError
from engine.paths import samples_dir
from engine.store.store import AlreadyExists, Store
from engine.text import jsonio
from engine.text.options import letters

if TYPE_CHECKING:
    from engine.types import DatasetRow, Explained, JSONDict, JSONValue, Row

ACTIVITY = "exam"
MAX_OPTIONS = 5  # an ExplainCPE question's
MCQ_MAX_OPTIONS = 10  # a generic multiple-choice question's (MedQA's sets average about 5)
LETTERS = letters(MCQ_MAX_OPTIONS)
LIST_KEYS = ("data", "questions", "items", "records")
SAMPLE_NAME = "explaincpe-sample"
SAMPLE_FILE = "explaincpe_sample.json"
FORMATS = ("explaincpe", "mcq")
TypeField: TypeAlias = Literal["type1", "type2", "type3"]
TYPE_FIELDS: tuple[TypeField, ...] = ("type1", "type2", "type3")
OPTIONAL_TEXT: tuple[Literal["analyse", "source", "meta_info"] | TypeField, ...] = (
    "analyse",
    "source",
    "meta_info",
    *TYPE_FIELDS,
)


class Question(TypedDict):
    """An exam question as validated and stored (see the module)."""

    id: int | str
    question: str
    options: list[str]
    answer: str
    explanation: str
    analyse: NotRequired[str]
    source: NotRequired[str]
    meta_info: NotRequired[str]
    type1: NotRequired[str]
    type2: NotRequired[str]
    type3: NotRequired[str]
    candidates: NotRequired[JSONDict]


def letters_for(item: Question) -> str:
    """The option letters of a question (``"ABCDE"`` for five options)."""
    return LETTERS[: len(item["options"])]


def _text(value: JSONValue) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    return str(value).strip()


def _check_count(n: int, fmt: str) -> None:
    """Refuse ``n`` options where ``fmt`` takes another number (one line saying how many)."""
    wanted = "exactly 5" if fmt == "explaincpe" else f"2 to {MCQ_MAX_OPTIONS}"
    if (fmt == "explaincpe" and n != MAX_OPTIONS) or not 2 <= n <= MCQ_MAX_OPTIONS:
        raise DatasetError(f"'options' must hold {wanted} texts (got {n})")


def validate_record(record: JSONValue, fmt: str = "explaincpe") -> Question:
    """Check one record and return it normalised (stripped texts, upper-case answer).

    Raises :class:`DatasetError` with the reason (without the record number).
    """
    if fmt not in FORMATS:
        raise DatasetError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")
    if not isinstance(record, dict):
        raise DatasetError(f"expected an object, got {type(record).__name__}")
    rid = record.get("id")
    if rid is None or isinstance(rid, bool) or not isinstance(rid, str | int):
        raise DatasetError("missing or invalid 'id' (a number or a text)")
    if isinstance(rid, str) and not rid.strip():
        raise DatasetError("empty 'id'")
    question = _text(record.get("question"))
    if not question:
        raise DatasetError("missing or empty 'question'")
    options = record.get("options")
    if not isinstance(options, list):
        raise DatasetError("'options' must be a list of texts")
    _check_count(len(options), fmt)
    texts = [_text(o) for o in options]
    for letter, text in zip(LETTERS, texts, strict=False):
        if not text:
            raise DatasetError(f"option {letter} is missing or empty")
    answer = _text(record.get("answer"))
    valid = LETTERS[: len(options)]
    if not answer or len(answer) != 1 or answer.upper() not in valid:
        raise DatasetError(
            f"'answer' must be one letter of {', '.join(valid)} (got {record.get('answer')!r})"
        )
    explanation = _text(record.get("explanation"))
    if explanation is None and record.get("explanation") is not None:
        raise DatasetError("'explanation' must be a text")
    if fmt == "explaincpe" and not explanation:
        raise DatasetError("missing or empty 'explanation'")
    out: Question = {
        "id": rid.strip() if isinstance(rid, str) else rid,
        "question": question,
        "options": cast("list[str]", texts),  # none empty (checked above)
        "answer": answer.upper(),
        "explanation": explanation or "",
    }
    for key in OPTIONAL_TEXT:
        value = record.get(key)
        if value is None or value == "":
            continue
        text = _text(value)
        if text is None:
            raise DatasetError(f"'{key}' must be a text")
        out[key] = text  # type: ignore[literal-required]  # mypy reads no union of keys
    rate = _candidates(record.get("candidates"), out.get("analyse", ""))
    if rate is not None:
        out["candidates"] = rate
    return out


def _candidates(given: JSONValue, analyse: str) -> JSONDict | None:
    """How real candidates did on a question: the record's ``candidates`` (checked), else
    what its ``analyse`` says; None without either."""
    from engine.exam.candidates import checked, parse_analyse

    if given is not None:
        try:
            return checked(given)
        except ValueError as exc:
            raise DatasetError(str(exc)) from None
    rate = parse_analyse(analyse)
    return {"n": rate.n, "right": rate.right} if rate is not None else None


def validate_records(records: Iterable[JSONValue], fmt: str = "explaincpe") -> list[Question]:
    """Validate every record; the first bad one raises ``DatasetError("record N: …")``."""
    out: list[Question] = []
    seen: dict[str, int] = {}
    for number, record in enumerate(records, start=1):
        try:
            if fmt == "mcq":
                record = medqa_record(record, number)
            item = validate_record(record, fmt)
        except DatasetError as exc:
            raise DatasetError(f"record {number}: {exc}") from None
        key = str(item["id"])
        if key in seen:
            raise DatasetError(
                f"record {number}: duplicate id {item['id']!r} (also record {seen[key]})"
            )
        seen[key] = number
        out.append(item)
    if not out:
        raise DatasetError("the file holds no records")
    return out


def medqa_record(record: JSONValue, number: int) -> JSONValue:
    """A MedQA record (options as an object of letters, ``answer_idx``) in medexam's shape:
    options in letter order, ``answer_idx`` the answer, its number the id when it has none;
    any other record as it is. Raises :class:`DatasetError` when ``answer`` (the right
    option's text) is not the text of ``answer_idx``.

    >>> medqa_record({"question": "Q?", "options": {"B": "y", "A": "x"}, "answer": "y",
    ...               "answer_idx": "B", "meta_info": "step1"}, 3)["options"]
    ['x', 'y']
    """
    options = record.get("options") if isinstance(record, dict) else None
    if not isinstance(record, dict) or not isinstance(options, dict):
        return record
    order = sorted(options, key=lambda k: str(k).strip().upper())
    _check_count(len(order), "mcq")
    given = "".join(str(k).strip().upper() for k in order)
    if given != LETTERS[: len(given)]:
        raise DatasetError(f"'options' letters must run A, B, C… (got {', '.join(order)})")
    out: JSONDict = {**record, "options": [options[k] for k in order]}
    if record.get("answer_idx") is not None:
        letter = str(record["answer_idx"]).strip().upper()
        text = record.get("answer")
        right = next((options[k] for k in order if str(k).strip().upper() == letter), None)
        if (
            isinstance(text, str)
            and len(text.strip()) > 1
            and right is not None
            and (text.strip() != str(right).strip())
        ):
            raise DatasetError(
                f"'answer' {text!r} is not option {letter} ({right!r}) as 'answer_idx' says"
            )
        out["answer"] = letter
    if out.get("id") is None:
        out["id"] = number
    return out


# -- reading files -----------------------------------------------------------------------

# The columns of each option, A to Z: a question with more options than medexam takes is
# refused, saying how many it has, rather than cut.
_OPTION_COLUMNS = [
    [c, f"option_{c.lower()}", f"option{c}", f"option {c}", f"选项{c}"]
    for c in string.ascii_uppercase
]
# The columns an option is read from, left out of the record (a question with more options
# than these is refused).
_OPTION_KEYS = {name.lower() for names in _OPTION_COLUMNS[:MCQ_MAX_OPTIONS] for name in names}


def _csv_record(row: dict[str, str]) -> JSONDict:
    lowered = {(k or "").strip().lower(): v for k, v in row.items()}
    record: JSONDict = {k: (v.strip() if isinstance(v, str) else v) for k, v in lowered.items()}
    options: list[str] | None = None
    raw = lowered.get("options")
    if raw:
        raw = raw.strip()
        if raw.startswith("["):
            try:
                options = jsonio.parse("options", raw)  # type: ignore[assignment]
            except jsonio.RecordsError as exc:
                raise DatasetError(f"'options' column is not a JSON list ({exc.reason})") from None
        else:
            options = [o.strip() for o in raw.split("|")]
    else:
        options = []
        for names in _OPTION_COLUMNS:
            value = next(
                (lowered[n.lower()] for n in names if lowered.get(n.lower(), "") not in ("", None)),
                None,
            )
            if value is None:
                break
            options.append(value)
    record["options"] = options
    for key in [k for k in record if k in _OPTION_KEYS]:
        del record[key]
    return record


def read_records(path: str | Path) -> list[JSONValue]:
    """The raw records of a JSON list (or an object holding one under ``data``,
    ``questions``, ``items`` or ``records``), a JSON Lines file or a CSV file (by extension)."""
    path = Path(path)
    try:
        if path.suffix.lower() != ".csv":
            return jsonio.read_records(path, keys=LIST_KEYS, objects=False)
        text = jsonio.read_text(path)
    except jsonio.RecordsError as exc:
        raise DatasetError(exc.detail) from None
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames:
        raise DatasetError("no header row")
    records: list[JSONValue] = []
    try:
        for number, row in enumerate(reader, start=1):
            try:
                records.append(_csv_record(row))
            except DatasetError as exc:
                raise DatasetError(f"record {number}: {exc}") from None
    except csv.Error as exc:  # a cell over csv's limit (128 kB), a NUL byte…
        raise DatasetError(f"line {reader.line_num + 1}: not a CSV row ({exc})") from None
    return records


def load_file(path: str | Path, fmt: str = "explaincpe") -> list[Question]:
    """Read and validate a whole file (see :func:`read_records`, :func:`validate_records`)."""
    try:
        return validate_records(read_records(path), fmt)
    except DatasetError as exc:
        raise DatasetError(f"{Path(path).name}: {exc}") from None


def import_file(
    store: Store,
    path: str | Path,
    fmt: str = "explaincpe",
    name: str | None = None,
    replace: bool = False,
) -> Row:
    """Validate ``path`` and store it as one data set (default name: the file stem).

    Returns the stored data set row. Nothing is stored when any record is bad.
    """
    path = Path(path)
    items = load_file(path, fmt)
    name = name or path.stem
    meta = {
        "format": fmt,
        "n_options": sorted({len(i["options"]) for i in items}),
        "types": {f: sorted({i[f] for i in items if f in i}) for f in TYPE_FIELDS},
        "with_candidates": sum(1 for i in items if "candidates" in i),
    }
    store.add_dataset(name, ACTIVITY, items, source=path.name, meta=meta, replace=replace)
    return store.dataset(name)


def sample_path() -> Path:
    """The sample question bank shipped with medexam (written for it, not exam questions)."""
    return samples_dir() / SAMPLE_FILE


def ensure_sample(store: Store) -> str:
    """Import the sample bank as ``explaincpe-sample`` unless present; return its name."""
    if not store.has_dataset(SAMPLE_NAME):
        with contextlib.suppress(AlreadyExists):  # another instance wrote it meanwhile
            import_file(store, sample_path(), "explaincpe", SAMPLE_NAME)
    return SAMPLE_NAME


def exam_datasets(store: Store) -> list[DatasetRow]:
    """The exam data sets in the store."""
    return store.datasets(ACTIVITY)


# -- question types ------------------------------------------------------------------------

# Questions asking for the false statement or the exception ("反向" in ExplainCPE).
_NEGATIVE = re.compile(
    r"不正确|错误|不属于|不包括|不是|除外|不能|不符合|不需要|不用于|不可|不得|不恰当|不合理"
    r"|不妥|无关|不含|不常见|不会|\bexcept\b|\bnot\b|\bfalse\b|\bincorrect\b|\bsauf\b|\bfausse\b"
    r"|\binexacte\b",
    re.IGNORECASE,
)


def polarity(item: Question) -> str:
    """``type1`` when given, else ``反向`` for questions asking for the false statement or the
    exception (judged from the wording) and ``正向`` otherwise."""
    if item.get("type1"):
        return str(item["type1"])
    return "反向" if _NEGATIVE.search(item.get("question", "")) else "正向"


def explained(run: Row, item: Question, answer: Row) -> Explained | None:
    """What a rater reads of a generated exam answer: the question, its options, the gold
    letter and explanation, the model's letter and its reply (none for a letter picked by
    probabilities)."""
    from engine.text.language import item_language
    from engine.types import Explained

    settings = run.get("settings") or {}
    if isinstance(settings, dict) and settings.get("method", "generate") != "generate":
        return None
    options = tuple(zip(letters_for(item), (str(o) for o in item["options"]), strict=False))
    return Explained(
        question=str(item["question"]),
        options=options,
        gold=str(item.get("answer") or ""),
        answer=str(answer.get("chosen") or "—"),
        explanation=str(answer.get("response") or ""),
        gold_explanation=str(item.get("explanation") or ""),
        language=item_language(item, "zh"),
        topic={k: item[k] for k in TYPE_FIELDS if item.get(k)},
    )
