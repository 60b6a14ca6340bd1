"""Training across rule sets: the ``rules_mix`` key read into :class:`RuleSet` entries, and their shares of the games.

An entry is ``{set: {<rule key>: value, ...}, weight: <number > 0>, name: <text>, teacher: <agent spec>,
teacher_scale: <number >= 0>}``: its rules are the run's ``env`` with ``set`` on top, its games a share of
``num_envs`` proportional to ``weight`` (default 1), its name (default: the text of its ``set``, ``default`` when
empty) the piece of its TensorBoard tags (``eval/<name>/...``, ``game/<name>/...``) and of its table's title, its
``teacher`` (default: the run's; an empty text: none) the agent its games' decisions are pulled towards
(kickstarting, train/teacher.py), e.g. ``pretrained`` at three players, and ``teacher_scale`` (default 1) what its
labels weigh over the run's teacher weight. An entry may also be written as the text ``KEY=VALUE,KEY=VALUE`` (the
entry keys but ``set`` among them), and the whole key as such texts joined by
``;``: ``--set "rules_mix=default,weight=3; six_card=true; num_players=3,scoring=simple"``.
Every mistake is a :class:`RulesMixError` in one line naming the entry (``rules_mix[2]``, counted from 0),
its key and what is allowed (:func:`train.config.make_train_config` reports it as a config error).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from pedro_env.config import ConfigError, PedroConfig, make_config, parse_override, read_rules, short_repr
from pedro_env.keys import read_text

ENTRY_KEYS = ("set", "weight", "name", "teacher", "teacher_scale")
MAX_RULE_SETS = 64
"""The most entries a mix may hold: each is a table group of its own (its env, its pool of rule agents)."""
NAME_CHARACTERS = re.compile(r"[A-Za-z0-9_.,=+-]{1,80}")
"""What a rule set's name may hold: it is a piece of TensorBoard tags and of file names."""
ENTRY_FORM = (
    "{set: {RULE_KEY: VALUE, ...}, weight: NUMBER > 0, name: TEXT, teacher: AGENT_SPEC, teacher_scale: NUMBER >= 0} "
    "or the text 'KEY=VALUE,...'"
)


class RulesMixError(ValueError):
    """A ``rules_mix`` entry that is not allowed (one line naming the entry, its key and the allowed values)."""


@dataclass(frozen=True)
class RuleSet:
    """One rule set of a run: its name, its rules (the run's ``env`` with ``changes`` on top) and its weight."""

    name: str
    rules: PedroConfig
    weight: float
    changes: Mapping[str, Any]  # the entry's ``set``: the rule keys it changes from ``env``
    teacher: str | None = None  # the entry's teacher spec ("" none); None: the run's
    teacher_scale: float = 1.0  # the run's teacher weight times this for the entry's labels


def rule_text(value: Any) -> str:
    """A rule value as written in YAML and ``--set``: ``true``, ``6``, ``sancho``."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def default_name(changes: Mapping[str, Any]) -> str:
    """``{num_players: 3, scoring: simple}`` -> ``num_players=3,scoring=simple``; ``{}`` -> ``default``."""
    return ",".join(f"{key}={rule_text(value)}" for key, value in changes.items()) or "default"


def read_rules_mix(value: Any, env: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    """``rules_mix`` as given (a list of entries or texts, or one text of entries joined by ``;``) -> its entries
    checked and written out in full, ``({"set": {...}, "weight": w, "name": n}, ...)`` (read-only mappings), every
    entry's rules checked on top of ``env``. Reading its own output gives the same entries."""
    value = _entries_of_text(value)
    if not isinstance(value, (list, tuple)):
        raise RulesMixError(
            f"config key 'rules_mix' = {short_repr(value)} is not allowed: it takes a list of entries {ENTRY_FORM}"
        )
    if len(value) > MAX_RULE_SETS:
        raise RulesMixError(f"config key 'rules_mix' has {len(value)} entries: at most {MAX_RULE_SETS} are allowed")
    entries = []
    named: dict[str, int] = {}
    for index, item in enumerate(value):
        where = f"rules_mix[{index}]"
        changes, weight, name, teacher, teacher_scale = _entry_parts(item, where)
        try:
            changes = read_rules(changes)  # text read by each rule key's type, as in every command
            make_config(**{**env, **changes})
        except ConfigError as error:
            raise RulesMixError(f"config key {where!r} ({default_name(changes)}): {error}") from None
        name = default_name(changes) if name is None else name
        if name in named:
            raise RulesMixError(
                f"config key 'rules_mix': entries {named[name]} and {index} are both named {name!r}: name one of them"
            )
        named[name] = index
        entry = {"set": MappingProxyType(changes), "weight": weight, "name": name}
        if teacher is not None:
            entry["teacher"] = teacher
        if teacher_scale is not None:
            entry["teacher_scale"] = teacher_scale
        entries.append(MappingProxyType(entry))
    return tuple(entries)


ENTRY_ASSIGNMENT = re.compile(r"rules_mix\[(\d+)\]\.(\w+(?:\.\w+)?)")
"""``rules_mix[N].KEY`` or ``rules_mix[N].set.RULE_KEY``: a ``--set`` of one entry's key (:func:`with_entry_key`)."""


def with_entry_key(value: Any, index: int, key: str, item: Any) -> list[Any]:
    """``rules_mix`` as given (entries or texts, or one text) with entry ``index``'s ``key`` set to ``item``
    (``set.RULE_KEY`` one of its rules): ``--set 'rules_mix[0].teacher=pretrained'`` on a config's mix. The entry
    is checked with the rest by :func:`read_rules_mix` (which refuses what is not an entry, as given); RulesMixError
    for an index past the mix's end."""
    value = _entries_of_text(value)
    entries = list(value) if isinstance(value, (list, tuple)) else []
    if index >= len(entries):
        have = f"entries 0 to {len(entries) - 1}" if entries else "no entries"
        raise RulesMixError(f"config key 'rules_mix[{index}].{key}' names no entry: the mix has {have}")
    entry = entries[index]
    entry = _entry_from_text(entry, f"rules_mix[{index}]") if isinstance(entry, str) else entry
    if isinstance(entry, Mapping) and not key.startswith("set."):
        entries[index] = {**entry, key: item}
    elif isinstance(entry, Mapping) and isinstance(entry.get("set") or {}, Mapping):
        entries[index] = {**entry, "set": {**(entry.get("set") or {}), key[4:]: item}}
    return entries


def _entries_of_text(value: Any) -> Any:
    """``rules_mix`` written as one text, ``'ENTRY; ENTRY'``, as the list of its entries' texts; any other value as
    it is."""
    if not isinstance(value, str):
        return value
    return [part for part in (piece.strip() for piece in value.split(";")) if part]


def _entry_parts(item: Any, where: str) -> tuple[dict[str, Any], float, str | None, str | None, float | None]:
    """One entry -> (its rule changes, its weight, its name or None, its teacher spec or None, its teacher scale or
    None)."""
    if isinstance(item, str):
        item = _entry_from_text(item, where)
    if not isinstance(item, Mapping):
        raise RulesMixError(f"config key {where!r} = {short_repr(item)} is not an entry: it takes {ENTRY_FORM}")
    unknown = [key for key in item if key not in ENTRY_KEYS]
    if unknown:
        raise RulesMixError(
            f"config key {where!r}: unknown key {short_repr(unknown[0])}: an entry takes {', '.join(ENTRY_KEYS)} "
            "(rule keys go under set)"
        )
    changes = item.get("set") or {}
    if not isinstance(changes, Mapping) or not all(isinstance(key, str) for key in changes):
        raise RulesMixError(
            f"config key '{where}.set' = {short_repr(changes)} is not allowed: it takes a mapping of rule keys, "
            "e.g. {six_card: true}"
        )
    weight = _number(item.get("weight", 1.0), f"{where}.weight", "> 0", lambda number: number > 0)
    teacher_scale = item.get("teacher_scale")
    if teacher_scale is not None:
        teacher_scale = _number(teacher_scale, f"{where}.teacher_scale", ">= 0", lambda number: number >= 0)
    name = item.get("name")
    if name is not None and (not isinstance(name, str) or not NAME_CHARACTERS.fullmatch(name) or not name.strip(".")):
        raise RulesMixError(
            f"config key '{where}.name' = {short_repr(name)} is not allowed: it takes 1 to 80 letters, digits and "
            "_ . , = + - (not only dots): it names TensorBoard tags and files"
        )
    teacher = item.get("teacher")
    if teacher is not None:
        if not isinstance(teacher, str):
            raise RulesMixError(
                f"config key '{where}.teacher' = {short_repr(teacher)} is not allowed: it takes an agent spec "
                "(or '' for none)"
            )
        if teacher:
            from agents import AgentSpecError, parse_spec

            try:
                parse_spec(teacher)
            except AgentSpecError as error:
                raise RulesMixError(f"config key '{where}.teacher': {error}") from None
    return dict(changes), weight, name, teacher, teacher_scale


def _entry_from_text(text: str, where: str) -> dict[str, Any]:
    """``'num_players=3,scoring=simple,weight=2'`` (or ``'default'``) -> the entry's mapping; each rule
    ``KEY=VALUE`` read as pedro_env reads it everywhere (:func:`pedro_env.config.parse_override`)."""
    changes: dict[str, Any] = {}
    entry: dict[str, Any] = {"set": changes}
    for piece in (part.strip() for part in text.split(",")):
        if piece in ("", "default"):
            continue
        key, _, value = piece.partition("=")
        key = key.strip()
        if key in ("name", "teacher"):
            entry[key] = value.strip()
        elif key in ("weight", "teacher_scale"):
            entry[key] = value
        else:
            try:
                rule, rule_value = parse_override(piece)
            except ConfigError as error:
                raise RulesMixError(f"config key {where!r}: {error}") from None
            changes[rule] = rule_value
    return entry


def _number(value: Any, key: str, allowed: str, holds: Callable[[float], bool]) -> float:
    """An entry's number (``weight``, ``teacher_scale``), also written as text as every number is
    (:func:`pedro_env.keys.read_text`); RulesMixError naming ``key`` unless finite and ``holds``."""
    if isinstance(value, str):
        try:
            value = read_text(value, float)
        except ValueError:
            value = value.strip()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not holds(value):
        raise RulesMixError(f"config key {key!r} = {short_repr(value)} is not allowed: it takes a number {allowed}")
    return float(value)


def rule_sets(entries: Sequence[Mapping[str, Any]], env: Mapping[str, Any], base: PedroConfig) -> tuple[RuleSet, ...]:
    """The rule sets of a run: each entry's (as :func:`read_rules_mix` wrote it), or, with none, ``base`` (the
    rules of ``env``) alone, named ``default``."""
    if not entries:
        return (RuleSet("default", base, 1.0, MappingProxyType({})),)
    return tuple(
        RuleSet(
            entry["name"],
            make_config(**{**env, **entry["set"]}),
            float(entry["weight"]),
            entry["set"],
            entry.get("teacher"),
            float(entry.get("teacher_scale", 1.0)),
        )
        for entry in entries
    )


def allot_games(num_envs: int, weights: Sequence[float]) -> list[int]:
    """Games of each rule set: ``num_envs`` shared in proportion to ``weights`` by largest remainders (ties to the
    earlier entry), then every share of 0 raised to 1 with a game of the largest share (the first of equals).
    Needs ``num_envs >= len(weights)``."""
    shares = np.asarray(weights, dtype=np.float64)
    if num_envs < shares.size:
        raise RulesMixError(f"{num_envs} games cannot seat {shares.size} rule sets: each needs at least one")
    quotas = num_envs * shares / shares.sum()
    counts = np.floor(quotas).astype(np.int64)
    order = np.argsort(-(quotas - counts), kind="stable")
    counts[order[: num_envs - int(counts.sum())]] += 1
    for index in np.flatnonzero(counts == 0):
        counts[int(np.argmax(counts))] -= 1
        counts[index] = 1
    return counts.tolist()


def teacher_scales(sets: Sequence[RuleSet], games: Sequence[int]) -> np.ndarray | None:
    """(B,) float32: each game's ``teacher_scale``, its rule set's (``games`` of each set, in order); None where every
    one is 1 (the update then weighs every label alike, as a single-rules run)."""
    scales = [rule_set.teacher_scale for rule_set in sets]
    return None if set(scales) == {1.0} else np.repeat(scales, games).astype(np.float32)


def check_rule_sets(sets: Sequence[RuleSet], num_envs: int, eval_rules: Sequence[str]) -> None:
    """RulesMixError unless every rule set has a game of the ``num_envs`` and ``eval_rules`` names rule sets. (One
    network reads them all: every config's observation has the one layout of pedro_env.observation_layout.)"""
    if num_envs < len(sets):
        raise RulesMixError(
            f"config key 'num_envs' = {num_envs} is less than the {len(sets)} rule sets of 'rules_mix': each plays at "
            "least one game"
        )
    names = [rule_set.name for rule_set in sets]
    unknown = [name for name in eval_rules if name not in names]
    if unknown:
        raise RulesMixError(
            f"config key 'eval_rules': {short_repr(unknown[0])} is not a rule set of 'rules_mix': its names are "
            f"{'; '.join(names)}"
        )
