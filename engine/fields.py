"""Run settings declared once: each is a dataclass field that carries its help, choices and
bounds, and everything else is made from the dataclass.

An activity's settings are one dataclass (``engine/<activity>/settings.py``) whose fields are
declared with :func:`setting`. From it come:

* the settings stored on a run: :func:`from_dict` (defaults filled in, unknown keys left out,
  checked) and :func:`as_dict`; :func:`check` refuses a value out of its choices or bounds
  with one line naming the setting (:class:`SettingError`); :func:`unknown_name` says which
  name given is no setting, with the nearest one;
* the click options of the activity's ``run`` command: :func:`settings_options`, a decorator
  that adds one option per field and hands the command one checked instance; with
  ``--resume``, :func:`given_on_command_line` says which of them the user typed (only those
  are compared with the run's own settings);
* the rows of the app's settings form: :func:`form_rows`.

A new setting is one more field: it shows in ``--help``, in the app's form and in the stored
settings with no other edit.

>>> from dataclasses import dataclass
>>> @dataclass
... class Demo(Settings):
...     shots: int = setting(0, help="Solved examples.", choices=(0, 1, 4))
...     limit: int | None = setting(None, help="Only the first N.", min=1, form=False)
>>> Demo.from_dict({"shots": 4, "unknown": 1})
Demo(shots=4, limit=None)
>>> Demo.from_dict({"limit": 0})
Traceback (most recent call last):
...
engine.fields.SettingError: limit must be at least 1 (got 0)
>>> [(row.name, row.kind, row.default) for row in form_rows(Demo)]
[('shots', 'choice', 0)]
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import types
import typing
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from engine.errors import UserError

if TYPE_CHECKING:
    import click

    from engine.types import JSONDict, JSONValue

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

#: The key of a field's metadata that holds its :class:`Meta`.
KEY = "medexam.setting"
#: What a setting's form row shows: a list to choose from, a number, a check box, a line of
#: text, or a model picker (a text setting naming a model).
KINDS = ("choice", "int", "float", "bool", "text", "model")
#: Upper bound of a form's number box for a setting without one.
FORM_MAX = 9999
#: The most a whole-number setting without a bound of its own takes (on the command line
#: and when checked): anything past it is a slip of the keyboard, and 10^20 does not even
#: fit the database.
INT_MAX = 2**31 - 1


class SettingError(UserError, ValueError):
    """A setting out of its choices or bounds, or of the wrong type: one line naming it."""


@dataclass(frozen=True)
class Meta:
    """What a setting says of itself besides its name, type and default (see :func:`setting`)."""

    help: str = ""
    choices: tuple[tuple[JSONValue, str], ...] = ()
    min: float | None = None
    max: float | None = None
    flag: str | None = None
    label: str | None = None
    form: bool = True
    kind: str | None = None


def setting(
    default: JSONValue,
    *,
    help: str = "",
    choices: Iterable[JSONValue] | Mapping[JSONValue, str] | None = None,
    min: float | None = None,
    max: float | None = None,
    flag: str | None = None,
    label: str | None = None,
    form: bool = True,
    kind: str | None = None,
) -> Any:
    """A settings dataclass field: ``default`` and what the CLI and the app show of it.

    ``choices``: the values allowed, or a mapping of each value to its label in the app.
    ``min``/``max``: bounds of a number (inclusive). ``flag``: the CLI option when it is not
    ``--name`` (``"-k"``, ``"--oracle-passages"``, ``"--keep-conclusions/--drop-conclusions"``
    for a flag with an off switch; a true/false setting is ``--name/--no-name`` otherwise).
    ``label``: its label in the app's form (default: the name in words); ``form=False`` keeps
    it out of the form. ``kind``: ``"model"`` for a text setting that names a model (the form
    shows a model picker); otherwise the kind follows the type (see :data:`KINDS`).
    """
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)} (got {kind!r})")
    if isinstance(choices, Mapping):
        pairs = tuple((value, str(text)) for value, text in choices.items())
    else:
        pairs = tuple((value, str(value)) for value in choices or ())
    meta = Meta(help, pairs, min, max, flag, label, form, kind)
    return dataclasses.field(default=default, metadata={KEY: meta})


def temperature_setting(what: str) -> Any:
    """The sampling temperature of a run that samples (``what`` samples: "a generated
    answer", "the model doctor and the patient"): 0 by default, which is greedy, so that
    repeated trials (:mod:`engine.core.trials`) need more."""
    return setting(
        0.0,
        help=f"Sampling temperature of {what} (0: greedy, so every run of the same settings "
        "is the same; trials need more).",
        min=0.0,
        max=2.0,
        label="Temperature",
    )


@dataclass(frozen=True)
class SettingInfo:
    """One setting of a dataclass, described: what :func:`form_rows` gives for each row of
    the app's form and what :func:`settings_options` makes an option of."""

    name: str
    label: str
    kind: str
    type: type
    optional: bool  # None is a value: the setting is left to the engine (no limit, default model)
    default: JSONValue
    help: str = ""
    choices: tuple[tuple[JSONValue, str], ...] = ()
    min: float | None = None
    max: float | None = None
    flag: str | None = None
    form: bool = True

    @property
    def values(self) -> tuple[JSONValue, ...]:
        """The values allowed (empty: any of its type)."""
        return tuple(value for value, _ in self.choices)

    def problem(self, value: JSONValue) -> str | None:
        """Why ``value`` does not do for this setting, in one line; None when it does."""
        if value is None:
            return None if self.optional else f"{self.name} must be given"
        if self.choices:
            if value not in self.values:
                allowed = ", ".join(str(v) for v in self.values)
                return f"{self.name} must be one of {allowed} (got {value!r})"
            return None
        if not _is_a(value, self.type):
            return f"{self.name} must be {_TYPE_WORDS.get(self.type, 'a text')} (got {value!r})"
        if isinstance(value, float) and not math.isfinite(value):
            return f"{self.name} must be a finite number (got {value!r})"
        if not isinstance(value, int | float):
            return None
        if self.min is not None and value < self.min:
            return f"{self.name} must be at least {_number(self.min)} (got {value!r})"
        top = self.upper
        if top is not None and value > top:
            return f"{self.name} must be at most {_number(top)} (got {value!r})"
        return None

    @property
    def upper(self) -> float | None:
        """The most the setting takes: its ``max``, or :data:`INT_MAX` for a whole number."""
        return self.max if self.max is not None or self.type is not int else INT_MAX


_TYPE_WORDS = {bool: "true or false", int: "a whole number", float: "a number"}


def _is_a(value: object, kind: type) -> bool:
    if kind is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _number(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else str(bound)


def _base_type(hint: object) -> tuple[type, bool]:
    """``int | None`` → ``(int, True)``; ``str`` → ``(str, False)``."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return (args[0] if len(args) == 1 and isinstance(args[0], type) else str), True
    return (hint if isinstance(hint, type) else str), False


def describe(cls: type) -> list[SettingInfo]:
    """Every setting of the dataclass ``cls``, in field order (a field declared without
    :func:`setting` is a setting too, with no help)."""
    return list(_described(cls))


@functools.cache
def _described(cls: type) -> tuple[SettingInfo, ...]:
    """:func:`describe`, once per class (reading the type hints is what takes the time: a
    plan checks the settings of thousands of runs)."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        meta: Meta = f.metadata.get(KEY, Meta())
        base, optional = _base_type(hints.get(f.name, str))
        default = None if f.default is dataclasses.MISSING else f.default
        kind = meta.kind or ("choice" if meta.choices else _KIND_OF.get(base, "text"))
        label = meta.label or f.name.replace("_", " ").capitalize()
        out.append(
            SettingInfo(
                f.name,
                label,
                kind,
                base,
                optional or default is None,
                default,
                meta.help,
                meta.choices,
                meta.min,
                meta.max,
                meta.flag,
                meta.form,
            )
        )
    return tuple(out)


_KIND_OF = {bool: "bool", int: "int", float: "float"}


def form_rows(cls: type) -> list[SettingInfo]:
    """The rows of the app's settings form for ``cls``: the settings it shows, in order
    (each with its label, kind, choices and their labels, bounds and default)."""
    return [info for info in describe(cls) if info.form]


def check(obj: object) -> None:
    """Raise :class:`SettingError` (one line naming the setting) when a setting of ``obj`` is
    out of its choices or bounds, or not of its type."""
    for info in describe(type(obj)):
        problem = info.problem(getattr(obj, info.name))
        if problem:
            raise SettingError(problem)


def names(cls: type) -> tuple[str, ...]:
    """The names of the settings of the dataclass ``cls``, in field order."""
    return tuple(info.name for info in describe(cls))


def unknown_name(given: Iterable[str], known: Collection[str], what: str = "setting") -> str | None:
    """One line naming the first of ``given`` that is not in ``known``, with the nearest known
    one (``unknown setting 'temprature' (did you mean 'temperature'?)``); None when every one
    is known."""
    for name in given:
        if name in known:
            continue
        near = difflib.get_close_matches(str(name), sorted(known), n=1)
        hint = f"did you mean {near[0]!r}?" if near else f"known: {', '.join(sorted(known))}"
        return f"unknown {what} {name!r} ({hint})"
    return None


def from_dict(cls: type[T], data: Mapping[str, JSONValue]) -> T:
    """An instance of ``cls`` from ``data`` (stored settings, a form's values…): unknown keys
    are left out, missing ones and None for a setting that cannot be None take their default;
    checked (:func:`check`)."""
    values = {}
    for info in describe(cls):
        if info.name in data and (data[info.name] is not None or info.optional):
            values[info.name] = data[info.name]
    obj = cls(**values)
    check(obj)
    return obj


def as_dict(obj: object) -> JSONDict:
    """The settings of ``obj`` as a plain dict (what is stored on a run)."""
    return dataclasses.asdict(obj)  # type: ignore[call-overload]


class Settings:
    """A base for an activity's settings dataclass: checked when made, read from and written
    to a dict."""

    def __post_init__(self) -> None:
        check(self)

    def as_dict(self) -> JSONDict:
        return as_dict(self)

    @classmethod
    def from_dict(cls: type[T], data: Mapping[str, JSONValue]) -> T:
        return from_dict(cls, data)


# -- the command line ----------------------------------------------------------------------


def settings_options(cls: type[Any], exclude: Iterable[str] = ()) -> Callable[[F], F]:
    """A click decorator: one option per setting of ``cls`` (but those in ``exclude``), with
    its help, choices, bounds and default shown. The command gets them as one ``settings``
    argument, an instance of ``cls`` made with :func:`from_dict` (a value it refuses is a
    usage error).

    >>> @click.command()                                                  # doctest: +SKIP
    ... @settings_options(ExamSettings)
    ... def run(settings: ExamSettings) -> None: ...
    """
    import click

    left_out = set(exclude)
    infos = [info for info in describe(cls) if info.name not in left_out]

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            values = {info.name: kwargs.pop(info.name) for info in infos}
            try:
                settings = from_dict(cls, values)
            except SettingError as exc:
                raise click.UsageError(str(exc)) from None
            return func(*args, settings=settings, **kwargs)

        for info in reversed(infos):  # click lists the options in the order decorated
            wrapper = click.option(*_declarations(info), **_option_kwargs(info))(wrapper)
        return wrapper  # type: ignore[return-value]

    return decorate


def _declarations(info: SettingInfo) -> tuple[str, str]:
    """The option's flag(s) and its parameter name (the setting's name)."""
    dashed = info.name.replace("_", "-")
    if info.flag:
        return info.flag, info.name
    if info.kind == "bool":
        return f"--{dashed}/--no-{dashed}", info.name
    return f"--{dashed}", info.name


def _option_kwargs(info: SettingInfo) -> dict[str, Any]:
    import click

    out: dict[str, Any] = {"help": info.help, "show_default": info.default is not None}
    if info.kind == "bool":
        out.update(is_flag=True, default=bool(info.default))
        out["show_default"] = "/" in _declarations(info)[0] or bool(info.default)
    elif info.choices:
        by_text = {str(value): value for value in info.values}
        out["type"] = click.Choice(list(by_text))
        out["default"] = None if info.default is None else str(info.default)
        out["callback"] = lambda _ctx, _param, text: None if text is None else by_text[text]
    else:
        out["type"] = _click_type(info)
        out["default"] = info.default
    return out


def _click_type(info: SettingInfo) -> click.ParamType:
    import click

    bounded = info.min is not None or info.max is not None
    if info.type is int:
        low, high = info.min, info.upper
        return click.IntRange(
            None if low is None else int(low), None if high is None else int(high)
        )
    if info.type is float:
        return click.FloatRange(info.min, info.max) if bounded else click.FLOAT
    return click.STRING


def given_on_command_line(ctx: click.Context, cls: type) -> JSONDict:
    """The settings of ``cls`` the user typed (not left at their defaults), by name, as the
    command parsed them: what a ``--resume`` compares with the run's own settings."""
    from click.core import ParameterSource

    out: JSONDict = {}
    for info in describe(cls):
        if ctx.get_parameter_source(info.name) not in (ParameterSource.DEFAULT, None):
            out[info.name] = ctx.params[info.name]
    return out
