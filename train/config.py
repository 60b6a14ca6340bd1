"""The training config: one frozen dataclass, read from YAML, overridable from the command line.

A config file is a YAML mapping of :class:`TrainConfig` fields; the rules of the games played go
under ``env:`` as :class:`pedro_env.config.PedroConfig` keys (docs/rules.md section 9 plus ``reward``,
``episode``, ``max_deals``)::

    total_decisions: 50_000_000
    num_envs: 512
    lr: 2.5e-4
    env:
      target_score: 62

Command-line overrides use the same names, ``lr=1e-4`` or ``env.target_score=31``. Every key is
checked in :func:`make_train_config`: an unknown one raises :class:`TrainConfigError` listing the
known ones, a value of the wrong type or outside its range names the key and what is allowed.
YAML is read by :func:`load_yaml` alone, in time and memory bounded by its text: a file of at most
:data:`MAX_CONFIG_BYTES`, no aliases, no key given twice in one mapping.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

from arena.gauntlet import GAUNTLET_BASELINES
from pedro_env.config import (
    ConfigError,
    PedroConfig,
    check_assignment_length,
    field_docs,
    make_config,
    short_repr,
)
from train.rules_mix import ENTRY_FORM, RuleSet, RulesMixError, check_rule_sets, read_rules_mix, rule_sets


class TrainConfigError(ValueError):
    """A training config key or value that is not allowed (the message names it and the allowed values)."""


@dataclass(frozen=True)
class TrainConfig:
    """Every setting of a self-play PPO run (``pedro-train``). Decisions count every seat's actions in every game."""

    # ---- the run ----
    run_name: str = ""
    """Name of the run directory under ``runs_dir`` (empty: ``<config file stem>-<date-time>``)."""
    runs_dir: str = "runs"
    """Directory holding the run directories."""
    seed: int = 1
    """Seeds the deals, the network initialisation, the sampling of actions and the opponents."""
    device: str = "auto"
    """``auto`` (CUDA when available, else CPU), ``cpu`` or ``cuda``."""
    precision: str = "float32"
    """The network's arithmetic while training (the policy's and the league's forwards, the update): ``float32``,
    ``bfloat16`` (an autocast: weights, optimizer state, losses and outputs stay float32; about 3x the matrix pace
    on a CPU with AVX-512 BF16 or AMX) or ``auto`` (bfloat16 where the device multiplies it natively, else
    float32). Evaluation and the exported policy always run float32."""
    torch_threads: int = 1
    """Threads torch may use on CPU (0: one per core). One keeps its speed beside other processes; one per core is
    faster only alone on the machine (docs/training.md, "Threads")."""
    total_decisions: int = 12_000_000
    """Length of the run in decisions (environment steps summed over all games)."""

    # ---- the games ----
    env: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """Rule and episode options of the games (PedroConfig keys, e.g. ``{target_score: 62, variant: cinch}``)."""
    num_envs: int = 512
    """Games stepped together in the batched environment (per rank: a job of N ranks plays N * num_envs)."""
    rollout_steps: int = 64
    """Environment steps per game between two updates (a rollout holds num_envs * rollout_steps decisions)."""
    rules_mix: tuple[Mapping[str, Any], ...] = ()
    """Train one network on several rule sets at once: entries ``{set: {RULE_KEY: VALUE}, weight: W, name: N}``, each
    ``env`` with ``set`` on top, playing a share of ``num_envs`` proportional to ``weight`` (default 1), logged as
    ``eval/<name>/`` and ``game/<name>/`` (name default: the set as ``KEY=VALUE,...``, or ``default``). Empty: ``env``
    alone. docs/training.md, "Training across rule sets"."""

    # ---- the network ----
    hidden_sizes: tuple[int, ...] = (256, 256)
    """Widths of the hidden layers of the actor (and of the critic)."""
    init_from: str = ""
    """The network's starting weights: a checkpoint (``runs/NAME/latest.pt``, a run directory, an exported policy) or
    ``pretrained``; empty: random. Its network and observation layout must be this config's (a resume reads its own)."""
    shared_trunk: bool = True
    """Actor and critic share the hidden layers (two heads; half the compute). A centralized critic has its own."""
    centralized_critic: bool = False
    """The critic sees the full state (every hand, the stock) during training; the actor sees only its observation."""

    # ---- PPO ----
    lr: float = 3e-4
    """Adam learning rate."""
    anneal_lr: bool = True
    """Decay the learning rate linearly to 0 over ``total_decisions``."""
    gamma: float = 0.99
    """Discount per decision of the same seat."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    update_epochs: int = 3
    """Passes over each rollout."""
    num_minibatches: int = 4
    """Minibatches per pass."""
    clip_coef: float = 0.2
    """PPO ratio clip."""
    clip_vloss: bool = True
    """Clip the value loss around the rollout's values."""
    ent_coef: float = 0.01
    """Entropy bonus (entropy over legal actions only)."""
    bid_entropy_boost: float = 1.0
    """The entropy bonus of bidding decisions is ``ent_coef`` times this (keeps the policy trying bids)."""
    vf_coef: float = 0.5
    """Value-loss weight."""
    max_grad_norm: float = 0.5
    """Gradient-norm clip."""
    target_kl: float = 0.0
    """Stop an update's passes early once the approximate KL exceeds this (0: never)."""
    norm_adv: bool = True
    """Normalise advantages per minibatch."""

    # ---- opponents ----
    opponent_share: float = 0.25
    """Share of games in which the other teams are an opponent (a league snapshot or a baseline, the same at every
    seat not the policy's), not the policy."""
    partner_share: float = 0.45
    """Share of games in which one seat of the policy's team is a baseline partner (against ``partner_opponents``).
    Four players only: individual games (two or three players) take 0 and refuse any other value."""
    partner_opponents: str = "pool"
    """The other team in partner games: ``pool`` (any pool member, as in opponent games), ``baselines``, or
    ``partner`` (two of the partner's own baseline, as in the gauntlet's partner entries)."""
    baseline_opponents: tuple[str, ...] = ("rule:heuristic", "rule:cautious")
    """Agent specs that join the opponent pool (any spec of agents.make_agent; empty: league only)."""
    league_size: int = 5
    """Frozen past policies kept in the opponent pool (0: no league); the oldest leaves first."""
    league_interval: int = 2_000_000
    """Decisions between two snapshots of the policy into the league."""
    bid_assist_share: float = 0.0
    """Share of games in which a ``bid_assistants`` agent bids for one team's policy seats (the policy plays the rest),
    so it also plays contracts it would not bid yet; those bids are not trained on."""
    bid_assistants: tuple[str, ...] = ("rule:heuristic",)
    """Agent specs that bid in assisted games (one drawn per game)."""
    teacher: str = ""
    """Kickstarting: an agent spec whose choices the policy is pulled towards early in the run (empty: none)."""
    teacher_coef: float = 1.0
    """Initial weight of the cross-entropy from the policy to the teacher's action (added to the PPO loss)."""
    teacher_decisions: int = 0
    """Decisions over which the teacher's weight decays linearly to ``teacher_floor``."""
    teacher_floor: float = 0.0
    """The teacher's weight after ``teacher_decisions``, for the rest of the run (a lasting pull towards it)."""
    teacher_phases: tuple[str, ...] = ("trump", "discard", "play")
    """Phases in which the teacher is imitated (bid, trump, discard, play); the others are learned by RL alone."""
    teacher_sides: tuple[str, ...] = ("maker", "defender")
    """Whose decisions the teacher labels: the maker's side (my team holds the high bid), the defenders, or both."""
    teacher_margin: float = 0.0
    """Label only the play decisions where the teacher's card beats its next best by at least this many points (mean
    over the deals a ``search:pimc`` teacher samples); 0: every decision."""
    opponent_sampling: str = "uniform"
    """Who is met: ``uniform`` over the pool (and the partners), or ``pfsp``, favouring those the policy loses to."""
    pfsp_exponent: float = 2.0
    """With ``pfsp``: a member is drawn with weight ``(1 - win rate) ** pfsp_exponent + pfsp_floor``."""
    pfsp_floor: float = 0.05
    """With ``pfsp``: the weight every member keeps, however often the policy beats it."""

    # ---- evaluation, logging, checkpoints ----
    eval_interval: int = 2_000_000
    """Decisions between two evaluations with the harness (0: only the final one, if ``final_eval_pairs``)."""
    eval_opponents: tuple[str, ...] = GAUNTLET_BASELINES
    """Baselines of the evaluation gauntlet, met as opponents (eval/vs_<spec>/) and partners (eval/with_<spec>/)."""
    eval_partners: bool = True
    """The gauntlet also seats each baseline as the policy's partner against two of it. Four players only: individual
    games take false and refuse true."""
    eval_rules: tuple[str, ...] = ()
    """The names of the ``rules_mix`` rule sets that the periodic evaluations play (empty: every one); the final
    evaluation plays every one."""
    eval_league: int = 2
    """The most recent league snapshots that join the gauntlet (as opponents and partners; not in the worst case)."""
    eval_pairs: int = 100
    """Duplicate match pairs per baseline-opponent entry of the gauntlet in a periodic evaluation."""
    eval_partner_pairs: int = 50
    """Duplicate match pairs per partner entry and per league-snapshot entry in a periodic evaluation (0: none)."""
    eval_search_pairs: int = 4
    """Duplicate match pairs per search-agent entry (seconds per match) in a periodic evaluation (0: leave out)."""
    final_eval_pairs: int = 500
    """Duplicate match pairs per baseline-opponent entry in the evaluation table written at the end of the run."""
    final_partner_pairs: int = 200
    """Duplicate match pairs per partner entry and per league-snapshot entry in the final table (0: none)."""
    final_search_pairs: int = 30
    """Duplicate match pairs per search-agent entry in the final table (0: leave out)."""
    eval_workers: int = 0
    """Processes playing the evaluation matches (0: one per core; with several ranks each plays a share with its
    machine's cores divided among the ranks on it); training waits while they play."""
    eval_seed: int = 1_000_000
    """Seed of the evaluation deals (the same deals at every evaluation, so curves compare like with like)."""
    checkpoint_interval: int = 5_000_000
    """Decisions between two checkpoints (``latest.pt`` is rewritten; one is always written at the end)."""
    keep_checkpoints: bool = False
    """Also keep every interval checkpoint as ``checkpoint-<decisions>.pt``."""
    log_interval: int = 1
    """Updates between two writes of the loss and game scalars."""

    # ---- derived ----
    @property
    def rollout_decisions(self) -> int:
        """Decisions gathered per update."""
        return self.num_envs * self.rollout_steps

    @property
    def num_updates(self) -> int:
        """Updates in the run (the last may overshoot ``total_decisions`` by less than one rollout)."""
        return max(1, math.ceil(self.total_decisions / self.rollout_decisions))

    @functools.cached_property
    def pedro_config(self) -> PedroConfig:
        """The rules of ``env`` (validated once, when the config was made): the games' rules, or with ``rules_mix``
        the rules its entries change."""
        return make_config(**self.env)

    @functools.cached_property
    def rule_sets(self) -> tuple[RuleSet, ...]:
        """The rule sets of the games: one per ``rules_mix`` entry, or ``env``'s rules alone, named ``default``."""
        return rule_sets(self.rules_mix, self.env, self.pedro_config)

    def to_dict(self) -> dict[str, Any]:
        """Plain YAML/JSON-ready values (tuples as lists)."""
        out: dict[str, Any] = {}
        for item in fields(self):
            value = getattr(self, item.name)
            out[item.name] = (
                list(value) if isinstance(value, tuple) else (dict(value) if isinstance(value, Mapping) else value)
            )
        out["rules_mix"] = [{**entry, "set": dict(entry["set"])} for entry in self.rules_mix]
        return out


DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = ("auto", "float32", "bfloat16")
MAX_HIDDEN = 65_536  # units per hidden layer
PARTNER_OPPONENTS = ("pool", "baselines", "partner")
OPPONENT_SAMPLINGS = ("uniform", "pfsp")
PHASE_NAMES = ("bid", "trump", "discard", "play")
TEACHER_SIDES = ("maker", "defender")
_CHOICES: dict[str, tuple[str, ...]] = {
    "device": DEVICES,
    "precision": PRECISIONS,
    "partner_opponents": PARTNER_OPPONENTS,
    "opponent_sampling": OPPONENT_SAMPLINGS,
}

# key -> (lowest, highest or None, inclusive low) for numbers
_RANGES: dict[str, tuple[float, float | None]] = {
    "seed": (0, 2**32 - 1),  # the games of a run are seeded seed * 2**32 + i, within uint64
    "torch_threads": (0, 1024),
    "total_decisions": (1, 2**62),  # counters travel as int64
    "num_envs": (1, 2**20),
    "rollout_steps": (1, None),
    "lr": (0.0, None),
    "gamma": (0.0, 1.0),
    "gae_lambda": (0.0, 1.0),
    "update_epochs": (1, None),
    "num_minibatches": (1, None),
    "clip_coef": (0.0, None),
    "ent_coef": (0.0, None),
    "bid_entropy_boost": (0.0, None),
    "vf_coef": (0.0, None),
    "max_grad_norm": (0.0, None),
    "target_kl": (0.0, None),
    "opponent_share": (0.0, 1.0),
    "partner_share": (0.0, 1.0),
    "bid_assist_share": (0.0, 1.0),
    "teacher_coef": (0.0, None),
    "teacher_decisions": (0, None),
    "teacher_floor": (0.0, None),
    "teacher_margin": (0.0, None),
    "league_size": (0, None),
    "league_interval": (1, None),
    "pfsp_exponent": (0.0, None),
    "pfsp_floor": (0.0, None),
    "eval_interval": (0, None),
    "eval_league": (0, None),
    "eval_pairs": (1, None),
    "eval_partner_pairs": (0, None),
    "final_partner_pairs": (0, None),
    "eval_search_pairs": (0, None),
    "final_eval_pairs": (0, None),
    "final_search_pairs": (0, None),
    "eval_workers": (0, None),
    "eval_seed": (0, 2**62),  # evaluation deal seeds are eval_seed + p, int64
    "checkpoint_interval": (1, None),
    "log_interval": (1, None),
}


def _field_types() -> dict[str, type]:
    return {
        item.name: type(item.default) if item.default is not dataclasses.MISSING else dict
        for item in fields(TrainConfig)
    }


_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _coerce(key: str, value: Any, kind: type) -> Any:
    """``value`` as a ``kind`` field (ints given for floats are accepted; YAML lists become tuples)."""

    given = value

    def wrong() -> TrainConfigError:  # built only when raised, from the value cut short: it may be huge
        return TrainConfigError(
            f"config key {key!r} = {short_repr(given)} is not allowed: it takes {_describe(key, kind)}"
        )

    if kind in (int, float) and isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        value = float(value)  # PyYAML reads 1e-4 (no dot) as a string
    if kind is bool:
        if not isinstance(value, bool):
            raise wrong()
        return value
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)  # 1e6 in YAML
            raise wrong()
        return value
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise wrong()
        return float(value)
    if kind is str:
        if not isinstance(value, str):
            raise wrong()
        return value
    if kind is tuple:
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        if not isinstance(value, (list, tuple)):
            raise wrong()
        element = int if key == "hidden_sizes" else str
        if not all(isinstance(item, element) and not isinstance(item, bool) for item in value):
            raise wrong()
        return tuple(value)
    if kind is dict:
        if not isinstance(value, Mapping):
            raise wrong()
        return MappingProxyType(dict(value))  # read-only: a frozen config stays frozen
    raise TypeError(f"unhandled field type {kind} of {key}")


def _describe(key: str, kind: type) -> str:
    if key in _CHOICES:
        return f"one of {', '.join(_CHOICES[key])}"
    if key == "hidden_sizes":
        return f"a list of ints from 1 to {MAX_HIDDEN}, e.g. [256, 256]"
    if key == "teacher_phases":
        return f"a list of phases from {', '.join(PHASE_NAMES)}"
    if key == "teacher_sides":
        return f"a non-empty list from {', '.join(TEACHER_SIDES)}"
    if key == "rules_mix":
        return f"a list of entries {ENTRY_FORM}"
    if key == "eval_rules":
        return "a list of names of rules_mix entries"
    if kind is tuple:
        return "a list of agent specs, e.g. [random, rule:heuristic]"
    if kind is dict:
        return "a mapping of rule keys (pedro_env PedroConfig)"
    names = {bool: "true or false", int: "an int", float: "a number", str: "a string"}
    text = names[kind]
    if key in _RANGES:
        low, high = _RANGES[key]
        text += f" >= {low}" if high is None else f" from {low} to {_power_of_two(high)}"
    return text


def _power_of_two(value: float) -> str:
    """``4294967295`` -> ``2**32 - 1``: large bounds as the powers of two they come from."""
    if isinstance(value, int) and value >= 2**16:
        for offset, suffix in ((0, ""), (1, " - 1")):
            bits = (value + offset).bit_length() - 1
            if value + offset == 2**bits:
                return f"2**{bits}{suffix}"
    return str(value)


def make_train_config(base: TrainConfig | None = None, **values: Any) -> TrainConfig:
    """Check ``values`` against :class:`TrainConfig` and return the frozen config (on top of ``base``).

    Raises TrainConfigError for an unknown key (listing the known ones), a wrong type or a value out
    of range, and for rule keys under ``env`` that pedro_env rejects.
    """
    types = _field_types()
    unknown = [key for key in values if key not in types]
    if unknown:
        raise TrainConfigError(f"unknown config key {short_repr(unknown[0])}: known keys are {', '.join(types)}")
    base = base or TrainConfig()
    merged = {item.name: getattr(base, item.name) for item in fields(TrainConfig)}
    for key, value in values.items():
        merged[key] = value if key == "rules_mix" else _coerce(key, value, types[key])  # read with env, below
    _check_keys(merged["env"], "config key 'env'")
    for key, (low, high) in _RANGES.items():
        value = merged[key]
        if (
            value < low
            or (high is not None and value > high)
            or (isinstance(value, float) and not math.isfinite(value))
        ):
            raise TrainConfigError(
                f"config key {key!r} = {short_repr(value)} is not allowed: it takes {_describe(key, types[key])}"
            )
    for key, allowed in _CHOICES.items():
        if merged[key] not in allowed:
            raise TrainConfigError(
                f"config key {key!r} = {short_repr(merged[key])} is not allowed: "
                f"allowed values are {', '.join(allowed)}"
            )
    run_name = merged["run_name"]
    if run_name in (".", "..") or any(mark in run_name for mark in ("/", "\\", "\0")):
        raise TrainConfigError(
            f"config key 'run_name' = {short_repr(run_name)} is not allowed: it names one directory under runs_dir "
            "(no '/', '\\', '.' or '..'; put other places in runs_dir)"
        )
    if not merged["hidden_sizes"] or min(merged["hidden_sizes"]) < 1 or max(merged["hidden_sizes"]) > MAX_HIDDEN:
        raise TrainConfigError(
            f"config key 'hidden_sizes' = {short_repr(list(merged['hidden_sizes']))}: "
            f"{_describe('hidden_sizes', tuple)}"
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
    if not merged["teacher_sides"] or any(side not in TEACHER_SIDES for side in merged["teacher_sides"]):
        raise TrainConfigError(
            f"config key 'teacher_sides' = {short_repr(list(merged['teacher_sides']))} is not allowed: "
            f"a non-empty list of {', '.join(TEACHER_SIDES)}"
        )
    unknown_phases = [name for name in merged["teacher_phases"] if name not in PHASE_NAMES]
    if unknown_phases:
        raise TrainConfigError(
            f"config key 'teacher_phases': {short_repr(unknown_phases[0])} is not a phase: "
            f"allowed are {', '.join(PHASE_NAMES)}"
        )
    if merged["teacher_margin"] > 0 and not merged["teacher"]:
        raise TrainConfigError("config key 'teacher_margin' > 0 needs 'teacher' (a search:pimc spec)")
    if merged["bid_assist_share"] > 0 and not merged["bid_assistants"]:
        raise TrainConfigError("config key 'bid_assist_share' > 0 needs 'bid_assistants' (the agents that bid)")
    if merged["partner_share"] > 0 and not merged["baseline_opponents"]:
        raise TrainConfigError(
            "config key 'partner_share' > 0 needs 'baseline_opponents' (the partners come from them)"
        )
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
            f"(configs/individual{pedro_config.num_players}.yaml does)"
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
    """``'lr=1e-4'`` or ``'env.target_score=31'`` -> ``(key, value)``, the value read as YAML (``1e-4`` a float)
    by :func:`load_yaml`; TrainConfigError for a text longer than ``MAX_ASSIGNMENT_CHARS`` (pedro_env.config)."""
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
        problem = _yaml_problem(error)
        raise TrainConfigError(
            f"{key}={short_repr(raw)} is not a YAML value ({problem}); quote lists: 'KEY=[a, b]'"
        ) from None
    if isinstance(value, str) and _looks_like_number(value):
        value = float(value)  # YAML 1.1 reads 1e-4 (no dot) as a string
    return key, value


def _looks_like_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def apply_overrides(values: dict[str, Any], assignments: list[str]) -> dict[str, Any]:
    """Apply ``KEY=VALUE`` assignments (``env.KEY`` for rule keys) to a mapping of config values."""
    out = {**values, "env": _rule_mapping(values.get("env"))}
    for text in assignments:
        key, value = parse_assignment(text)
        if key.startswith("env."):
            out["env"][key[4:]] = value
        elif key == "env":
            out["env"] = _rule_mapping(value)
        else:
            out[key] = value
    return out


def _rule_mapping(value: Any) -> dict[str, Any]:
    """The ``env`` value as a fresh dict of rule keys, or TrainConfigError naming what it is instead."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TrainConfigError(
            f"config key 'env' = {short_repr(value)} is not allowed: it takes {_describe('env', dict)}, "
            "e.g. {target_score: 31}"
        )
    _check_keys(value, "env")
    return dict(value)


def _check_keys(values: dict[Any, Any], where: str) -> None:
    for key in values:
        if not isinstance(key, str):
            raise TrainConfigError(f"{where}: key {short_repr(key)} is not a name: config keys are words such as lr")


def _yaml_problem(error: Exception) -> str:
    """A PyYAML error in one line: its problem and where (line, column)."""
    problem = getattr(error, "problem", None) or str(error).strip().splitlines()[0]
    mark = getattr(error, "problem_mark", None)
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else str(problem)


MAX_CONFIG_BYTES = 65_536
"""The largest config file read (the shipped ones hold 1 to 3 kB): reading one takes bounded time and memory."""
MAX_YAML_DEPTH = 16
"""The deepest nesting of lists and mappings in config YAML (a config nests two deep: ``env:``, lists of specs)."""


def load_yaml(text: str, where: str) -> Any:
    """The value of the YAML ``text`` (one document), in time and memory bounded by the text's length.

    Refused with TrainConfigError naming ``where`` and the line: an alias (``*name``: nine nested aliases of
    nine expand a kilobyte into 387 million items; nothing we ship uses anchors), lists and mappings nested
    deeper than :data:`MAX_YAML_DEPTH`, a key given twice in one mapping (YAML keeps the last in silence) and
    a scalar Python cannot read (an int of more than 4300 digits). Text that is not YAML raises yaml.YAMLError.
    """
    import yaml

    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    depth = 0
    for event in yaml.parse(text, Loader=loader_class):  # events only: nothing is built yet
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            raise TrainConfigError(
                f"{where}: alias {short_repr('*' + event.anchor, 40)} at line {line} is not allowed: write each "
                "value out (YAML anchors and aliases are not read in a config)"
            )
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise TrainConfigError(
                    f"{where}: lists and mappings nest more than {MAX_YAML_DEPTH} deep at line {line}"
                )
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_unique_keys(node, where)
        try:
            return loader.construct_document(node)
        except ValueError as error:  # e.g. an int past Python's 4300-digit limit
            raise TrainConfigError(f"{where}: a value YAML cannot read: {str(error).split(';')[0]}") from None
    finally:
        loader.dispose()


def _check_unique_keys(root: Any, where: str) -> None:
    """TrainConfigError naming the first key (dotted from the top) given twice in one mapping under ``root``."""
    import yaml

    pending = [(root, "")]
    while pending:  # a loop, not recursion: the nesting was bounded, but stays cheap either way
        node, path = pending.pop()
        if isinstance(node, yaml.SequenceNode):
            pending.extend((item, f"{path}[{index}]") for index, item in reversed(list(enumerate(node.value))))
        elif isinstance(node, yaml.MappingNode):
            lines: dict[tuple[str, str], int] = {}
            below = []
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    continue  # not a name: read_yaml refuses it by name
                name = f"{path}.{key_node.value}" if path else key_node.value
                line = key_node.start_mark.line + 1
                key = (key_node.tag, key_node.value)
                if key in lines:
                    at = f"on line {line}" if lines[key] == line else f"at lines {lines[key]} and {line}"
                    raise TrainConfigError(f"{where}: key {short_repr(name)} is given twice {at}: give it once")
                lines[key] = line
                below.append((value_node, name))
            pending.extend(reversed(below))


def read_yaml(path: str | Path) -> dict[str, Any]:
    """The mapping in a YAML config file of at most :data:`MAX_CONFIG_BYTES`, read by :func:`load_yaml` (a clear
    error for a missing file, one too big or a file that is not a mapping)."""
    import yaml

    path = Path(path)
    if path.is_dir():
        raise TrainConfigError(f"config file {path} is a directory; give a YAML file such as configs/smoke.yaml")
    if path.exists() and not path.is_file():
        raise TrainConfigError(f"config file {path} is not a regular file; give a YAML file such as configs/smoke.yaml")
    if not path.is_file():
        raise TrainConfigError(f"config file not found: {path}")
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
        if len(data) > MAX_CONFIG_BYTES:
            raise TrainConfigError(
                f"config file {path} is larger than {MAX_CONFIG_BYTES:,} bytes, the most a config file may hold"
            )
        values = load_yaml(data.decode("utf-8"), f"config file {path}")
    except UnicodeDecodeError:
        raise TrainConfigError(f"config file {path} is not UTF-8 text") from None
    except OSError as error:
        raise TrainConfigError(f"cannot read config file {path}: {error.strerror or error}") from None
    except (yaml.YAMLError, RecursionError) as error:
        raise TrainConfigError(f"config file {path} is not valid YAML: {_yaml_problem(error)}") from None
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise TrainConfigError(f"config file {path} must hold a mapping of config keys, got {type(values).__name__}")
    _check_keys(values, f"config file {path}")
    return values


def read_config_file(path: str | Path, within: tuple[Path, ...] = ()) -> dict[str, Any]:
    """A config file's keys over those of the file its ``base`` key names (a path relative to it), if any.

    Its keys replace the base's; ``env`` is merged key by key. A base may name a base of its own.
    """
    path = Path(path)
    values: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for key, value in read_yaml(path).items():
        name = key.replace("-", "_")  # num-envs is num_envs
        if name in values:
            raise TrainConfigError(
                f"config file {path}: keys {short_repr(spelled[name])} and {short_repr(key)} both name "
                f"{short_repr(name)}: give it once"
            )
        values[name], spelled[name] = value, key
    base = values.pop("base", None)
    if base is None:
        return values
    if not isinstance(base, str) or not base.strip():
        raise TrainConfigError(
            f"config file {path}: 'base' = {short_repr(base)} is not allowed: it takes the path of another "
            "config file, relative to this one (e.g. base: ppo_long.yaml)"
        )
    base_path = path.parent / base
    if base_path.resolve() in (*within, path.resolve()):
        raise TrainConfigError(f"config file {path}: base {base} leads back to a file that names it as its base")
    merged = read_config_file(base_path, (*within, path.resolve()))
    env = values.pop("env", None)
    if isinstance(env, Mapping) and isinstance(merged.get("env"), Mapping):
        env = {**merged["env"], **env}
    if env is not None:
        merged["env"] = env
    return {**merged, **values}


def load_train_config(path: str | Path | None = None, overrides: list[str] | None = None) -> TrainConfig:
    """A config file (or the defaults) plus ``KEY=VALUE`` overrides, checked."""
    values = read_config_file(path) if path is not None else {}
    return make_train_config(**apply_overrides(values, overrides or []))


def config_reference() -> list[tuple[str, str, str, str]]:
    """(key, default, allowed values, meaning) for every TrainConfig field, from the field docstrings here."""
    docs, types = field_docs(TrainConfig), _field_types()
    defaults = TrainConfig().to_dict()
    return [
        (item.name, repr(defaults[item.name]), _describe(item.name, types[item.name]), docs.get(item.name, ""))
        for item in fields(TrainConfig)
    ]
