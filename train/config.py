"""The training config read and checked: YAML files and ``KEY=VALUE`` overrides into one :class:`TrainConfig`.

A config file is a YAML mapping of :class:`TrainConfig` fields (declared, with their ranges and choices, in
:mod:`train.config_keys`); the rules of the games played go under ``env:`` as
:class:`pedro_env.config.PedroConfig` keys (docs/rules.md section 9 plus ``reward``, ``episode``, ``max_deals``)::

    total_decisions: 50_000_000
    num_envs: 512
    lr: 2.5e-4
    env:
      target_score: 62

Command-line overrides use the same names, ``lr=1e-4`` or ``env.target_score=31``. Every value, in a file or a
``--set``, is text read by its key's type with :mod:`pedro_env.keys` (the one ``KEY=VALUE`` reader of every
command), then checked in :func:`make_train_config`: an unknown key raises :class:`TrainConfigError` listing the
known ones, a value of the wrong type or outside its range names the key and what is allowed, and keys that are
fine alone but not together are named together. YAML is read in bounded time and memory by
:mod:`train.config_yaml`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pedro_env.config import ConfigError, PedroConfig, check_assignment_length, field_docs, make_config, read_rules
from pedro_env.keys import declared_keys, short_repr
from train.config_keys import (
    DEVICES,
    MAX_HIDDEN,
    OPPONENT_SAMPLINGS,
    PARTNER_OPPONENTS,
    PHASE_NAMES,
    PRECISIONS,
    TEACHER_SIDES,
    TrainConfig,
    TrainConfigError,
)
from train.config_yaml import (
    MAX_CONFIG_BYTES,
    MAX_YAML_DEPTH,
    check_keys,
    load_yaml,
    read_config_file,
    read_yaml,
    yaml_problem,
)
from train.rules_mix import ENTRY_ASSIGNMENT, RulesMixError, check_rule_sets, read_rules_mix, rule_sets, with_entry_key

__all__ = [
    "DEVICES",
    "MAX_CONFIG_BYTES",
    "MAX_HIDDEN",
    "MAX_YAML_DEPTH",
    "OPPONENT_SAMPLINGS",
    "PARTNER_KEYS",
    "PARTNER_OPPONENTS",
    "PHASE_NAMES",
    "PRECISIONS",
    "TEACHER_SIDES",
    "TrainConfig",
    "TrainConfigError",
    "apply_overrides",
    "config_reference",
    "load_train_config",
    "load_yaml",
    "make_train_config",
    "parse_assignment",
    "read_config_file",
    "read_yaml",
]


def make_train_config(base: TrainConfig | None = None, **values: Any) -> TrainConfig:
    """Check ``values`` (text, or values of each key's type) against :class:`TrainConfig` and return the frozen
    config (on top of ``base``).

    Raises TrainConfigError for an unknown key (listing the known ones), a wrong type or a value out of range
    (:mod:`pedro_env.keys`), for rule keys under ``env`` that pedro_env rejects and for keys that do not go together.
    """
    declared = declared_keys(TrainConfig)
    unknown = [name for name in values if name not in declared]
    if unknown:
        raise TrainConfigError(f"unknown config key {short_repr(unknown[0])}: known keys are {', '.join(declared)}")
    merged = {item.name: getattr(base or TrainConfig(), item.name) for item in fields(TrainConfig)}
    merged.update(values)
    for name, train_key in declared.items():
        if name != "rules_mix":  # read with env, below
            merged[name] = train_key.value(merged[name], f"config key {name!r}", TrainConfigError)
    merged["env"] = MappingProxyType(_rules_of_env(merged["env"]))  # read-only: a frozen config stays frozen
    run_name = merged["run_name"]
    if run_name in (".", "..") or any(mark in run_name for mark in ("/", "\\", "\0")):
        raise TrainConfigError(
            f"config key 'run_name' = {short_repr(run_name)} is not allowed: it names one directory under runs_dir "
            "(no '/', '\\', '.' or '..'; put other places in runs_dir)"
        )
    try:
        pedro_config = make_config(**merged["env"])
    except ConfigError as error:
        raise TrainConfigError(f"config key 'env': {error}") from None
    try:
        merged["rules_mix"] = read_rules_mix(merged["rules_mix"], merged["env"])
        sets = rule_sets(merged["rules_mix"], merged["env"], pedro_config)
        check_rule_sets(sets, merged["num_envs"], merged["eval_rules"])
    except RulesMixError as error:
        raise TrainConfigError(str(error)) from None
    _check_partner_keys(merged, pedro_config, given=set(values), tables=[rule_set.rules for rule_set in sets])
    _check_combinations(merged)
    _check_specs(merged)
    return TrainConfig(**merged)


def _rules_of_env(env: Mapping[Any, Any]) -> dict[str, Any]:
    """``env``'s rule keys read by their types (pedro_env.config.read_rules), or TrainConfigError naming the key."""
    check_keys(env, "config key 'env'")
    try:
        return read_rules(env)
    except ConfigError as error:
        raise TrainConfigError(f"config key 'env': {error}") from None


def _check_combinations(merged: dict[str, Any]) -> None:
    """Keys that are fine alone but not together (TrainConfigError naming both)."""
    if merged["rollout_steps"] * merged["num_envs"] < merged["num_minibatches"]:
        raise TrainConfigError(
            f"config keys 'num_minibatches' = {merged['num_minibatches']} exceeds the decisions of a rollout "
            f"(num_envs * rollout_steps = {merged['num_envs'] * merged['rollout_steps']})"
        )
    if merged["opponent_share"] + merged["partner_share"] > 1:
        raise TrainConfigError(
            f"config keys 'opponent_share' + 'partner_share' = {merged['opponent_share'] + merged['partner_share']} "
            "is not allowed: they are shares of the games and must sum to at most 1"
        )
    if merged["teacher_margin"] > 0 and not merged["teacher"]:
        raise TrainConfigError("config key 'teacher_margin' > 0 needs 'teacher' (a search:pimc spec)")
    if merged["bid_assist_share"] > 0 and not merged["bid_assistants"]:
        raise TrainConfigError("config key 'bid_assist_share' > 0 needs 'bid_assistants' (the agents that bid)")
    if merged["partner_share"] > 0 and not merged["baseline_opponents"]:
        raise TrainConfigError(
            "config key 'partner_share' > 0 needs 'baseline_opponents' (the partners come from them)"
        )
    restarts = list(merged["lr_restarts"])
    if restarts != sorted(set(restarts)) or (restarts and restarts[-1] >= merged["total_decisions"]):
        raise TrainConfigError(
            f"config key 'lr_restarts' = {restarts} is not allowed: decision counts in increasing order, each below "
            f"'total_decisions' ({merged['total_decisions']})"
        )
    if merged["lr_restart"] > 0 and not restarts:
        raise TrainConfigError("config key 'lr_restart' > 0 needs 'lr_restarts' (the decisions where it applies)")
    if merged["opponent_share"] > 0 and not merged["baseline_opponents"] and merged["league_size"] == 0:
        raise TrainConfigError(
            "config key 'opponent_share' > 0 needs opponents: give 'baseline_opponents' or a 'league_size' >= 1"
        )


PARTNER_KEYS = {"partner_share": 0.0, "partner_opponents": "pool", "eval_partners": False}
"""The keys that seat a partner beside the policy, and their value where nobody has one (individual games)."""


def _check_partner_keys(
    merged: dict[str, Any], pedro_config: PedroConfig, given: set[str], tables: list[PedroConfig]
) -> None:
    """Individual games (two or three players) have no partners: where every table of the run (``tables``: its rule
    sets' rules) is individual, each key of :data:`PARTNER_KEYS` not ``given`` takes its value there, and one given
    to seat a partner is refused, all of them named in one line. With a four-player table in ``rules_mix`` the keys
    apply to the four-player tables (the individual ones take the values of :data:`PARTNER_KEYS`)."""
    if any(rules.num_players > rules.num_teams for rules in tables):
        return
    for key, value in PARTNER_KEYS.items():
        if key not in given:
            merged[key] = value
    wrong = [f"{key}={_yaml_text(merged[key])}" for key, value in PARTNER_KEYS.items() if merged[key] != value]
    if wrong:
        fixes = " ".join(f"{key}={_yaml_text(value)}" for key, value in PARTNER_KEYS.items())
        where = (
            f"at every table of rules_mix ({' or '.join(sorted({str(rules.num_players) for rules in tables}))} players)"
            if merged["rules_mix"]
            else f"with env.num_players={pedro_config.num_players}"
        )
        raise TrainConfigError(
            f"config keys {', '.join(wrong)} seat partners, but {where} every player is alone: set {fixes} "
            f"(the shipped config individual{pedro_config.num_players} does)"
        )


def _yaml_text(value: Any) -> str:
    """A config value as it is written in YAML and --set (``false``, ``0.45``, ``0``, ``pool``)."""
    if isinstance(value, bool):
        return str(value).lower()
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _check_specs(values: dict[str, Any]) -> None:
    """Agent specs must parse (agents.parse_spec; checkpoints are not opened: they may be written later)."""
    from agents import AgentSpecError, parse_spec

    for key in ("baseline_opponents", "eval_opponents", "bid_assistants", "teacher"):
        for spec in values[key] if key != "teacher" else [values[key]] if values[key] else []:
            try:
                parse_spec(spec)
            except AgentSpecError as error:
                raise TrainConfigError(f"config key {key!r}: {error}") from None


def parse_assignment(text: str) -> tuple[str, Any]:
    """``'lr=1e-4'`` or ``'env.target_score=31'`` -> ``(key, value)``: the value's structure read as YAML by
    :func:`load_yaml` (``[16, 8]``, ``{target_score: 31}``), its scalars left as text for the key's type to read;
    TrainConfigError for a text longer than ``MAX_ASSIGNMENT_CHARS`` (pedro_env.config)."""
    import yaml

    try:
        check_assignment_length(text)
    except ConfigError as error:
        raise TrainConfigError(str(error)) from None
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise TrainConfigError(f"expected KEY=VALUE (e.g. lr=1e-4 or env.target_score=31), got {short_repr(text)}")
    try:
        value = load_yaml(raw, f"--set {short_repr(key, 40)}") if raw.strip() else ""
    except (yaml.YAMLError, RecursionError) as error:
        problem = yaml_problem(error)
        raise TrainConfigError(
            f"{key}={short_repr(raw)} is not a YAML value ({problem}); quote lists: 'KEY=[a, b]'"
        ) from None
    return key, value


def apply_overrides(values: dict[str, Any], assignments: list[str]) -> dict[str, Any]:
    """Apply ``KEY=VALUE`` assignments (``env.KEY`` for rule keys, ``rules_mix[N].KEY`` for one key of a
    ``rules_mix`` entry) to a mapping of config values."""
    out = {**values, "env": _rule_mapping(values.get("env"))}
    for text in assignments:
        key, value = parse_assignment(text)
        entry = ENTRY_ASSIGNMENT.fullmatch(key)
        if entry:  # one key of one rules_mix entry
            try:
                out["rules_mix"] = with_entry_key(out.get("rules_mix", ()), int(entry[1]), entry[2], value)
            except RulesMixError as error:
                raise TrainConfigError(str(error)) from None
        elif key.startswith("env."):
            out["env"][key[4:]] = value
        elif key == "env":
            out["env"] = _rule_mapping(value)
        else:
            out[key] = value
    return out


def _rule_mapping(value: Any) -> dict[str, Any]:
    """The ``env`` value as a fresh dict of rule keys (none given: empty), or TrainConfigError naming what it is
    instead."""
    if value is None or value == "":
        return {}
    if not isinstance(value, Mapping):
        refusal = declared_keys(TrainConfig)["env"].refusal(value, "config key 'env'")
        raise TrainConfigError(f"{refusal}, e.g. {{target_score: 31}}")
    check_keys(value, "env")
    return dict(value)


def load_train_config(path: str | Path | None = None, overrides: list[str] | None = None) -> TrainConfig:
    """A config file (or the defaults) plus ``KEY=VALUE`` overrides, checked."""
    values = read_config_file(path) if path is not None else {}
    return make_train_config(**apply_overrides(values, overrides or []))


def config_reference() -> list[tuple[str, str, str, str]]:
    """(key, default, allowed values, meaning) for every TrainConfig field, from its declaration and docstring."""
    docs, declared = field_docs(TrainConfig), declared_keys(TrainConfig)
    defaults = TrainConfig().to_dict()
    return [
        (name, repr(defaults[name]), train_key.describe(), docs.get(name, "")) for name, train_key in declared.items()
    ]
