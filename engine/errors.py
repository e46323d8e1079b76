"""medexam's errors: one root, and the errors shown to the user as one line.

Every exception class medexam defines derives from :class:`MedexamError`. Those that are the
user's to set right (bad input, a data set or run that is not there, a model that cannot
load…) derive from :class:`UserError`. The command line prints an error of :data:`ONE_LINE`
as ``Error: <message>`` and exits with status 1; the app shows its message alone. Any other
exception is a fault of medexam's own: it keeps its traceback.

>>> issubclass(UserError, MedexamError)
True
>>> isinstance(DatasetError("record 2: missing or empty 'question'"), ONE_LINE)
True
>>> isinstance(KeyError("id"), ONE_LINE)
False
"""

from __future__ import annotations


class MedexamError(Exception):
    """The root of every error medexam raises on purpose."""


class UserError(MedexamError):
    """An error shown to the user as one line, with no traceback: bad input, a data set or
    run that is not there, a model that cannot load…"""


class DatasetError(UserError, ValueError):
    """A data file that cannot be read or a record that does not fit (a data set to import,
    responses to score): the message says which records and why."""


class UnknownFormat(UserError, ValueError):
    """A file format medexam does not read or write (given by name or by a file's suffix)."""


#: What is shown as its message alone: medexam's errors for the user, and the system's
#: errors about files (missing, not allowed, a full disk), which are never medexam's fault.
ONE_LINE: tuple[type[Exception], ...] = (UserError, OSError)


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message (its class's name when it has none): what a
    library's long error says, in a line of medexam's own."""
    lines = str(exc).strip().splitlines()
    return lines[0].strip() if lines else type(exc).__name__
