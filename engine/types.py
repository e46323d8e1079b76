"""Types of the plain data medexam passes around: JSON values (what the store keeps in its
JSON columns: items, settings, summaries, answers' extra fields) and the rows read back.

An item, a summary or a run's settings is plain JSON: :data:`JSONDict` says so precisely,
where ``dict[str, Any]`` would say nothing. Rows read from the store are JSON dicts too.

>>> from engine.types import JSONDict
>>> summary: JSONDict = {"accuracy": 40.0, "by_type": {"A": {"n": 2}}}
"""

from __future__ import annotations

from typing import TypeAlias

#: A JSON scalar.
Scalar: TypeAlias = str | int | float | bool | None
#: Any JSON value: a scalar, a list of values or an object of values.
JSONValue: TypeAlias = "Scalar | list[JSONValue] | dict[str, JSONValue]"
#: A JSON object: an item, a summary, a run's settings, an answer's ``extra``.
JSONDict: TypeAlias = "dict[str, JSONValue]"

#: An item of a data set as stored (a question, a case…).
Item: TypeAlias = JSONDict
#: A row read back from the store (a run, an answer, a data set), JSON columns decoded.
Row: TypeAlias = JSONDict
#: A run's summary: metric keys and their values (nested blocks for breakdowns).
Summary: TypeAlias = JSONDict
