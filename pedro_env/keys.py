"""KEY=VALUE: the one reader of a key's text, and the declarations beside each key that it reads by.

A key is a field of a config dataclass (a rule key of :class:`pedro_env.config.PedroConfig`, a training key of
``train.config.TrainConfig``, a rule agent's option of ``agents.rule_based.Personality``) or a keyword of an agent's
constructor (``search:pimc,samples=8``). Its annotation says how its text is read; :func:`key` declares its range
or choices beside it, in the field's metadata (:class:`Allowed`). The same text means the same value in every
command: ``--set`` of every tool, the options of an agent spec, the scalars of a YAML training config.

==============  =================================================================================================
type            text read
==============  =================================================================================================
``bool``        ``true``/``false``, ``yes``/``no``, ``on``/``off``, ``1``/``0`` (any case)
``int``         a whole number: ``31``, ``-2``, ``1_000``, or written as a number that is whole (``1e6``, ``2.0``)
``float``       a number: ``0.5``, ``1e-4``, ``inf``; ``nan`` and ``inf`` refused where a range is declared
``str``         the text itself (stripped)
``X | None``    ``none`` (any case) or an ``X``
``tuple[X, ...]`` items separated by commas (or a YAML list in a config file), each an ``X``
==============  =================================================================================================
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import Any

import numpy as np

TRUE_TEXTS = ("true", "yes", "on", "1")
FALSE_TEXTS = ("false", "no", "off", "0")
BOOL_WORDS = "true or false (or yes/no, on/off, 1/0)"
NONE_TEXT = "none"


def short_repr(value: Any, limit: int = 60) -> str:
    """``repr(value)`` on one line, cut to ``limit`` characters: for error messages about values of any size.

    A string, list, tuple or dict longer than ``limit`` is cut before it is printed (its repr could not fit anyway),
    so the cost stays bounded by ``limit`` for a huge value of one of them."""
    if isinstance(value, (str, bytes, list, tuple)) and len(value) > limit:
        value = value[:limit]
    elif isinstance(value, dict) and len(value) > limit:
        value = dict(islice(value.items(), limit))
    try:
        text = repr(value)
    except ValueError:  # an int past Python's 4300-digit str limit
        text = f"<int of {int(value).bit_length()} bits>"
    text = text.replace("\n", " ")  # numpy arrays print over several lines
    return text if len(text) <= limit else text[: limit - 3] + "..."


def value_text(value: Any) -> str:
    """A value as it is written in ``KEY=VALUE`` text: ``true``, ``6``, ``sancho``, ``none``."""
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return NONE_TEXT
    return str(value)


def power_of_two_text(value: float) -> str:
    """``4294967295`` -> ``2**32 - 1``: large bounds as the powers of two they come from."""
    if isinstance(value, int) and value >= 2**16:
        for offset, suffix in ((0, ""), (1, " - 1")):
            bits = (value + offset).bit_length() - 1
            if value + offset == 2**bits:
                return f"2**{bits}{suffix}"
    return str(value)


@dataclass(frozen=True)
class Allowed:
    """What a key allows beyond its type, declared beside it with :func:`key`.

    ``choices``: the values allowed (of the key's type, or of its items for a list); ``low``/``high``: an inclusive
    range (of the value, or of each item of a list; a float key with a range refuses nan and inf); ``non_empty``: a
    list needs an item; ``words``: the allowed values in words, where the type and range would not say them (a
    range that depends on another key, a list of agent specs)."""

    choices: tuple[Any, ...] = ()
    low: float | None = None
    high: float | None = None
    non_empty: bool = False
    words: str = ""


def key(
    default: Any = dataclasses.MISSING,
    *,
    default_factory: Any = dataclasses.MISSING,
    choices: tuple[Any, ...] = (),
    low: float | None = None,
    high: float | None = None,
    non_empty: bool = False,
    words: str = "",
) -> Any:
    """A dataclass field with its :class:`Allowed` values in its metadata: ``lr: float = key(3e-4, low=0.0)``."""
    allowed = Allowed(choices, low, high, non_empty, words)
    return dataclasses.field(default=default, default_factory=default_factory, metadata={"allowed": allowed})


class KeyValueError(ValueError):
    """A value a key does not allow; its message is one line naming the key, the value and the allowed values."""


@dataclass(frozen=True)
class Key:
    """One key: its name, its type (the annotation: ``int``, ``float | None``, ``tuple[str, ...]`` ...) and what it
    allows. :meth:`value` turns text or a typed value into the key's value; :meth:`describe` says what it takes."""

    name: str
    kind: Any
    allowed: Allowed = Allowed()

    # ---- the type ----
    @property
    def item_kind(self) -> Any:
        """The type of a list's items (``tuple[int, ...]`` -> int), or the key's own type."""
        return typing.get_args(self.kind)[0] if typing.get_origin(self.kind) is tuple else self.kind

    @property
    def is_list(self) -> bool:
        return typing.get_origin(self.kind) is tuple

    @property
    def is_mapping(self) -> bool:
        return typing.get_origin(self.kind) in (Mapping, dict) or self.kind in (Mapping, dict)

    # ---- words ----
    def describe(self) -> str:
        """What the key takes, in words: ``an int from 1 to 2**20``, ``one of auto, cpu, cuda``, ``true or false``."""
        allowed = self.allowed
        if allowed.words:
            return allowed.words
        if allowed.choices and not self.is_list:
            return f"one of {', '.join(value_text(choice) for choice in allowed.choices)}"
        if self.is_list:
            items = f"{', '.join(value_text(choice) for choice in allowed.choices)}" if allowed.choices else ""
            start = "a non-empty list" if allowed.non_empty else "a list"
            return f"{start} from {items}" if items else f"{start} of {_plural(self.item_kind)}{self._range_words()}"
        return f"{_singular(self.kind)}{self._range_words()}"

    def complaint(self, text: bool = True) -> str:
        """The end of an error message: ``allowed values are a, b`` or ``it takes <describe>``; a bool key says
        the texts it reads, or with ``text`` false (a Python value was given) ``allowed values are False, True``."""
        if self.kind is bool:
            return f"it takes {BOOL_WORDS}" if text else "allowed values are False, True"
        if self.allowed.choices and not self.is_list and not self.allowed.words:
            return f"allowed values are {', '.join(value_text(choice) for choice in self.allowed.choices)}"
        return f"it takes {self.describe()}"

    def _range_words(self) -> str:
        low, high = self.allowed.low, self.allowed.high
        if low is None and high is None:
            return ""
        if high is None:
            return f" >= {low}"
        if low is None:
            return f" <= {power_of_two_text(high)}"
        return f" from {low} to {power_of_two_text(high)}"

    # ---- reading and checking ----
    def value(self, given: Any, label: str, error: type[Exception] = KeyValueError) -> Any:
        """``given`` (text, or a value of the key's type) as the key's value, checked; ``error`` with the message
        ``<label> = <value> is not allowed: <allowed values>`` otherwise (``label``: ``config key 'lr'``; the value
        as read when text was read but is out of range: ``= 5``, else as given: ``= 'many'``)."""
        text = isinstance(given, str)
        if text and not _takes_text(self.kind):
            try:
                given = self.read(given)
            except (ValueError, TypeError, OverflowError):
                raise error(self.refusal(given, label)) from None
        try:
            return self.check(given)
        except (ValueError, TypeError, OverflowError):
            raise error(self.refusal(given, label, text)) from None

    def checked(self, given: Any, label: str, error: type[Exception] = KeyValueError) -> Any:
        """``given``, a value of the key's type (never text for a key of another type), checked like :meth:`value`."""
        try:
            return self.check(given, text_items=False)
        except (ValueError, TypeError, OverflowError):
            raise error(self.refusal(given, label, text=False)) from None

    def refusal(self, given: Any, label: str, text: bool = True) -> str:
        """The one-line error: ``<label> = <given> is not allowed: <allowed values>``."""
        return f"{label} = {short_repr(given)} is not allowed: {self.complaint(text)}"

    def read(self, text: str) -> Any:
        """Text as a value of the key's type (module docstring); ValueError if it is not one."""
        if self.is_list:
            return tuple(read_text(part.strip(), self.item_kind) for part in text.split(",") if part.strip())
        if self.is_mapping:
            if text.strip():
                raise ValueError("a mapping is not read from plain text")
            return {}
        return read_text(text, self.kind)

    def check(self, value: Any, text_items: bool = True) -> Any:
        """A value of the key's type, normalised (numpy ints as ints, ints as floats for a float key, lists as
        tuples) and checked against :class:`Allowed`; ValueError or TypeError if it is not allowed. A list's items
        may be text (a YAML list in a config file) with ``text_items``."""
        if self.is_mapping:
            if not isinstance(value, Mapping):
                raise TypeError("not a mapping")
            return value
        if self.is_list:
            if isinstance(value, str) or not isinstance(value, (list, tuple)):
                raise TypeError("not a list")
            items = tuple(self._checked_item(item, self.item_kind, text_items) for item in value)
            if self.allowed.non_empty and not items:
                raise ValueError("empty")
            return items
        return self._checked_item(value, self.kind, False)

    def _checked_item(self, value: Any, kind: Any, text: bool) -> Any:
        if text and isinstance(value, str) and not _takes_text(kind):
            value = read_text(value, kind)  # a list's items may come as text
        value = check_type(value, kind)
        allowed = self.allowed
        if allowed.choices and value not in allowed.choices:
            raise ValueError("not a choice")
        if value is not None and (allowed.low is not None or allowed.high is not None):
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError("not finite")
            if (allowed.low is not None and value < allowed.low) or (allowed.high is not None and value > allowed.high):
                raise ValueError("out of range")
        return value


def _optional(kind: Any) -> Any:
    """``X`` for ``X | None``; None for any other type."""
    arguments = typing.get_args(kind)
    if typing.get_origin(kind) in (typing.Union, types.UnionType) and type(None) in arguments and len(arguments) == 2:
        return next(argument for argument in arguments if argument is not type(None))
    return None


def _takes_text(kind: Any) -> bool:
    return kind is str or kind is Any


def _singular(kind: Any) -> str:
    inner = _optional(kind)
    if inner is not None:
        return f"{_singular(inner)} or none"
    return {bool: "true or false", int: "an int", float: "a number", str: "a string"}.get(kind, str(kind))


def _plural(kind: Any) -> str:
    return {bool: "booleans", int: "ints", float: "numbers", str: "strings"}.get(kind, str(kind))


def read_text(text: str, kind: Any) -> Any:
    """``text`` as a value of type ``kind`` (the module docstring's table); ValueError if it is not one."""
    text = text.strip()
    inner = _optional(kind)
    if inner is not None:
        return None if text.lower() == NONE_TEXT else read_text(text, inner)
    if kind is bool:
        if text.lower() in TRUE_TEXTS:
            return True
        if text.lower() in FALSE_TEXTS:
            return False
        raise ValueError(text)
    if kind is int:
        try:
            return int(text)
        except ValueError:
            number = float(text)  # 1e6, 2.0: a whole number written as a number
            if not number.is_integer():
                raise
            return int(number)
    if kind is float:
        return float(text)
    if _takes_text(kind):
        return text
    raise TypeError(f"no text form for {kind}")


def check_type(value: Any, kind: Any) -> Any:
    """``value`` if it is of type ``kind`` (numpy ints as ints, ints as floats for a float), else TypeError. A bool
    is neither an int nor a float here, and an int is not a bool."""
    inner = _optional(kind)
    if inner is not None:
        return None if value is None else check_type(value, inner)
    if kind is bool and isinstance(value, bool):
        return value
    if kind is int and isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    if kind is float and isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return float(value)
    if _takes_text(kind) and isinstance(value, str):
        return value
    raise TypeError(f"{short_repr(value)} is not {_singular(kind)}")


@functools.cache
def declared_keys(config_class: type) -> dict[str, Key]:
    """Field name -> :class:`Key` of every field of the dataclass ``config_class`` (types from its annotations)."""
    hints = typing.get_type_hints(config_class)
    return {
        item.name: Key(item.name, hints[item.name], item.metadata.get("allowed", Allowed()))
        for item in dataclasses.fields(config_class)
    }


@functools.cache
def parameter_keys(function: Callable[..., Any]) -> dict[str, Key]:
    """Keyword name -> :class:`Key` of every annotated keyword of ``function`` after its first (an agent's
    constructor: ``config`` first, then its options)."""
    hints = typing.get_type_hints(function)
    names = list(inspect.signature(function).parameters)[1:]
    return {name: Key(name, hints[name]) for name in names if name in hints and name not in ("self", "config")}


def split_assignment(text: str) -> tuple[str, str] | None:
    """``'key=value'`` -> ``('key', 'value')`` stripped; None without ``=`` or a key."""
    name, sep, value = text.partition("=")
    name = name.strip()
    return (name, value.strip()) if sep and name else None
