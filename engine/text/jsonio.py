"""Reading records from JSON and JSON Lines files, the one reader every importer uses.

A file holds records as

* a JSON list of objects;
* a JSON object holding such a list under one of the ``keys`` the caller accepts
  (``{"cases": [...]}``); any other JSON object is one record;
* JSON Lines (NDJSON): one object per line, blank lines skipped.

JSON Lines is recognised by the suffix (``.jsonl``, ``.ndjson``) or, whatever the suffix, by
content: a file that starts with ``{`` but is not one JSON document. A JSON Lines file whose
content starts with ``[`` is read as a JSON list. Files are read as UTF-8, with or without a
byte-order mark.

Every problem raises :class:`RecordsError`, a :class:`ValueError` whose message is one line
naming the file and, where there is one, the line: ``quiz.jsonl: line 3: not valid JSON
(Expecting ',' delimiter)``. Its ``reason`` and ``line`` let callers word their own error.
JSON nested deeper than :data:`MAX_DEPTH` levels is refused the same way ("nested too
deeply"), whether or not Python's parser could follow it, so that nothing downstream has to;
so is a whole number longer than Python reads (:func:`long_number_line`).
:func:`parse` and :func:`read_json` are the same reader for one JSON document (a cell of a
table, a file that is not a list of records).

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "two.jsonl"
>>> _ = path.write_text('{"id": 1}\\n\\n{"id": 2}\\n', encoding="utf-8")
>>> read_records(path)
[{'id': 1}, {'id': 2}]
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple, overload

from engine.errors import UserError

if TYPE_CHECKING:
    from engine.types import JSONDict, JSONValue

JSONL_SUFFIXES = (".jsonl", ".ndjson")

# The keys under which a JSON object may hold its list of records, when a caller accepts any.
LIST_KEYS = ("records", "data", "items", "questions", "cases")

#: The deepest nesting of lists and objects a file may hold (records nest a few levels).
MAX_DEPTH = 100


class RecordsError(UserError, ValueError):
    """A file that cannot be read as records: ``path``, ``line`` (1-based, or None) and
    ``reason``; ``str()`` is ``"<path>: line <n>: <reason>"``."""

    def __init__(self, path: str | Path, reason: str, line: int | None = None) -> None:
        self.path = Path(path)
        self.reason = reason
        self.line = line
        super().__init__(f"{self.path}: {self.where}{reason}")

    @property
    def where(self) -> str:
        """``"line N: "``, or ``""`` when the problem is not on one line."""
        return f"line {self.line}: " if self.line is not None else ""

    @property
    def detail(self) -> str:
        """The message without the file name: ``"line N: reason"`` or ``"reason"``."""
        return self.where + self.reason


#: The first bytes of files people mistake for text, and what they are.
_MAGIC = (
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"%PDF", "a PDF document"),
    (b"PK\x03\x04", "a ZIP archive (or an Excel/Word file)"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"SQLite format 3\x00", "an SQLite database"),
)


def not_text_reason(data: bytes, exc: UnicodeDecodeError) -> str:
    """Why ``data`` is not UTF-8 text, saying what the file looks like: an image or other
    known binary file, a text cut off in the middle of a character at its end, or text in
    another encoding (the byte where it stops being UTF-8).

    >>> data = "药品".encode()[:-1]
    >>> not_text_reason(data, _decode_error(data))
    'cut off mid-character at its end (byte 3 of 5): the file looks truncated'
    """
    for magic, what in _MAGIC:
        if data.startswith(magic):
            return f"{what}, not a text file"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):  # a byte-order mark of UTF-16
        return "not UTF-8 text (byte 0): UTF-16 text, save it as UTF-8"
    if b"\x00" in data[:4096]:
        return "a binary file, not text"
    if exc.end >= len(data) and "unexpected end" in exc.reason:
        return (
            f"cut off mid-character at its end (byte {exc.start} of {len(data)}): "
            "the file looks truncated"
        )
    return f"not UTF-8 text (byte {exc.start}): save it as UTF-8"


def _decode_error(data: bytes) -> UnicodeDecodeError:
    try:
        data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return exc
    raise ValueError("the bytes are UTF-8")


class NotText(UserError, ValueError):
    """Bytes given as text that are not UTF-8; the message says what they look like (the
    caller names the file)."""


def decode_text(data: bytes) -> str:
    """``data`` as UTF-8 text (a byte-order mark dropped); :class:`NotText` saying what it
    looks like (:func:`not_text_reason`) when it is not."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NotText(not_text_reason(data, exc)) from None


def read_text(path: str | Path) -> str:
    """The text of ``path`` as UTF-8 (a byte-order mark is dropped)."""
    path = Path(path)
    try:
        return decode_text(path.read_bytes())
    except FileNotFoundError:
        raise RecordsError(path, "no such file") from None
    except IsADirectoryError:
        raise RecordsError(path, "a folder, not a file") from None
    except NotText as exc:
        raise RecordsError(path, str(exc)) from None


def _depth(value: JSONValue) -> int:
    """How deeply lists and objects nest in ``value`` (0: a scalar), counted without
    recursion; stops counting past :data:`MAX_DEPTH`."""
    deepest, stack = 0, [(value, 1)] if isinstance(value, dict | list) else []
    while stack and deepest <= MAX_DEPTH:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return deepest


_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*"|[\[\]{}\n]')


def _deep_line(text: str) -> int | None:
    """The line of ``text`` where lists and objects first nest deeper than
    :data:`MAX_DEPTH` (strings skipped), None when they never do."""
    depth, line = 0, 1
    for m in _TOKENS.finditer(text):
        token = m.group()
        if token == "\n":
            line += 1
        elif token in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return line
        elif token in "]}":
            depth -= 1
    return None


# A run of digits, or a quoted string (JSON's, TOML's) whose digits are text.
_DIGITS = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|\d+')


def long_number_line(text: str) -> int | None:
    """The line of ``text`` holding the first run of digits longer than Python turns into a
    whole number (:func:`sys.get_int_max_str_digits`, 4300 by default), None when none is.

    >>> long_number_line('{"id": 1,\\n "n": ' + "9" * 4301 + "}")
    2
    """
    limit = sys.get_int_max_str_digits()
    if not limit:
        return None
    found = next(
        (m for m in _DIGITS.finditer(text) if m.group()[0].isdigit() and len(m.group()) > limit),
        None,
    )
    return None if found is None else text.count("\n", 0, found.start()) + 1


def long_number_reason() -> str:
    """What is said of a number longer than Python reads (:func:`long_number_line`)."""
    return f"a number of more than {sys.get_int_max_str_digits()} digits"


def parse(path: str | Path, text: str, line: int | None = None) -> JSONValue:
    """``text`` (read from ``path``, at ``line`` when it is one line of it) as JSON;
    :class:`RecordsError` when it is not valid JSON, nests deeper than :data:`MAX_DEPTH` or
    holds a number longer than Python reads (:func:`long_number_line`)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        at: int | None = line if line is not None else exc.lineno
        raise RecordsError(path, f"not valid JSON ({exc.msg})", at) from None
    except ValueError:  # Python's limit on the digits of a whole number
        at = long_number_line(text)
        if at is None:
            raise
        raise RecordsError(path, long_number_reason(), at if line is None else line) from None
    except RecursionError:
        value = None
    else:
        if _depth(value) <= MAX_DEPTH:
            return value
    at = line if line is not None else _deep_line(text)
    raise RecordsError(path, f"nested too deeply (more than {MAX_DEPTH} levels)", at)


def read_json(path: str | Path) -> JSONValue:
    """The one JSON document in ``path`` (UTF-8, a byte-order mark allowed), checked as
    :func:`parse` checks it."""
    return parse(path, read_text(path))


class Numbered(NamedTuple):
    """A record and where it is: its line (JSON Lines) or its position (a JSON list)."""

    number: int
    where: str
    record: JSONValue


def _json_lines(path: Path, text: str) -> list[Numbered]:
    out = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        out.append(Numbered(number, f"line {number}", parse(path, line, number)))
    return out


def _from_document(path: Path, data: JSONValue, keys: Sequence[str]) -> list[Numbered]:
    if isinstance(data, dict):
        alone: list[JSONValue] = [data]
        data = next((data[k] for k in keys if isinstance(data.get(k), list)), alone)
    if not isinstance(data, list):
        raise RecordsError(path, f"expected a JSON list of records, got {type(data).__name__}")
    return [Numbered(n, f"record {n}", r) for n, r in enumerate(data, start=1)]


def numbered_records(
    path: str | Path,
    keys: Sequence[str] = LIST_KEYS,
    jsonl: bool | None = None,
    objects: bool = True,
) -> list[Numbered]:
    """Like :func:`read_records`, each record with where it is (``line 3`` of a JSON Lines
    file, ``record 3`` of a JSON list), for callers whose own checks name it."""
    path = Path(path)
    text = read_text(path)
    start = text.lstrip()[:1]
    by_line = path.suffix.lower() in JSONL_SUFFIXES and start != "[" if jsonl is None else jsonl
    if by_line:
        records = _json_lines(path, text)
    else:
        try:
            records = _from_document(path, parse(path, text), keys)
        except RecordsError as exc:
            if start != "{" or jsonl is False or not exc.reason.startswith("not valid JSON"):
                raise
            records = _json_lines(path, text)
    if objects:
        for r in records:
            if not isinstance(r.record, dict):
                got = type(r.record).__name__
                if r.where.startswith("line"):
                    raise RecordsError(path, f"expected a JSON object, got {got}", r.number)
                raise RecordsError(path, f"{r.where}: expected a JSON object, got {got}")
    return records


@overload
def read_records(
    path: str | Path,
    keys: Sequence[str] = ...,
    jsonl: bool | None = ...,
    objects: Literal[True] = ...,
) -> list[JSONDict]: ...
@overload
def read_records(
    path: str | Path,
    keys: Sequence[str] = ...,
    jsonl: bool | None = ...,
    *,
    objects: bool,
) -> list[JSONValue]: ...
def read_records(
    path: str | Path,
    keys: Sequence[str] = LIST_KEYS,
    jsonl: bool | None = None,
    objects: bool = True,
) -> list[JSONDict] | list[JSONValue]:
    """The records of a JSON list, a JSON object holding a list under one of ``keys`` (any
    other object is one record), or a JSON Lines file.

    ``jsonl`` forces (True) or forbids (False) reading line by line; None decides by suffix
    and content (see the module). With ``objects`` every record must be a JSON object;
    without, records are returned as they are, for callers that check them. Raises
    :class:`RecordsError`.
    """
    return [r.record for r in numbered_records(path, keys, jsonl, objects)]
