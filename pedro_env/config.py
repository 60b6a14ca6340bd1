"""The one place where a Pedro config is declared and validated.

Rule keys are those of docs/rules.md section 9; ``reward``, ``episode`` and ``max_deals`` shape the
episode an environment presents. Each field of :class:`PedroConfig` declares its range or choices beside it
(:func:`pedro_env.keys.key`). :func:`make_config` is the only constructor users need: a bad key or value raises
:class:`ConfigError` naming the key and the allowed values. Text (``--set KEY=VALUE`` of every command, the rule
keys of a training config) is read by :func:`parse_override` and :func:`read_rules`, with the one reader of
:mod:`pedro_env.keys`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from pedro_env.cards import VARIANT_TOTAL_POINTS
from pedro_env.keys import Key, declared_keys, key, short_repr, split_assignment


class ConfigError(ValueError):
    """A config key or value outside what docs/rules.md section 9 (or the env options) allows."""


class SeedError(ValueError, TypeError):
    """A seed that is not an int from 0 to 2**64 - 1 (both a ValueError and a TypeError: catch either)."""


SEED_LIMIT = 2**64  # seeds are uint64 in the engine: a seed lies in 0 .. SEED_LIMIT - 1


def check_seed(seed: Any, games: int = 1, name: str = "seed") -> int:
    """``seed`` as a Python int; SeedError unless it is an int (Python or numpy, not bool) from 0 to 2**64 - ``games``.

    With ``games`` > 1 (the vector env) game ``i`` is seeded ``seed + i``, which must stay below 2**64 too.
    """
    allowed = f"{name} must be an int from 0 to 2**64 - {games}"
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise SeedError(f"{allowed}, got {type(seed).__name__} {short_repr(seed)}")
    if not 0 <= seed <= SEED_LIMIT - games:
        raise SeedError(f"{allowed}, got {short_repr(seed)}")
    return int(seed)


MAX_TARGET_SCORE = 10_000  # scores are int32 and the encoder's counts uint8: far from both, and any real match fits
MAX_DEALS = 1_000_000  # deal counters are int32: far from it, and no match lasts this long
MIN_BID_WORDS = "an int from 1 to the variant's total points (cinch 14, sancho 23, dom 17, pitch 4)"


@dataclass(frozen=True)
class PedroConfig:
    """Rules (docs/rules.md section 9) and episode options of one Pedro environment."""

    num_players: int = key(4, choices=(2, 3, 4))
    """Players at the table: 4 = two fixed partnerships (seats 0+2 vs 1+3); 2 or 3 = every player alone."""
    target_score: int = key(62, low=1, high=MAX_TARGET_SCORE)
    """A team that reaches this score wins the match (section 8)."""
    min_bid: int = key(1, low=1, words=MIN_BID_WORDS)
    """Lowest bid allowed (house rules 6 or 7)."""
    all_pass: str = key("dealer_forced", choices=("dealer_forced", "redeal"))
    """When the first n-1 players pass: ``dealer_forced`` (the dealer must bid) or ``redeal`` (thrown in)."""
    variant: str = key("cinch", choices=("cinch", "sancho", "dom", "pitch"))
    """Point cards: ``cinch`` 14, ``sancho`` 23 (+9 of trumps), ``dom`` 17 (+3 of trumps), ``pitch`` 4 (no Pedros)."""
    six_card: bool = False
    """Deal 6 cards and skip discard and draw."""
    refill: str = key("maker_sorted", choices=("maker_sorted", "top", "dealer_robs"))
    """How the stock refills hands: ``maker_sorted`` (the maker takes the trumps first, face up), ``top`` (everyone
    from the top) or ``dealer_robs`` (the dealer robs the rest of the pack)."""
    scoring: str = key("difference", choices=("difference", "simple"))
    """Made: ``difference`` (the side with more points scores the difference) or ``simple`` (each side scores its
    points). Set: the maker's side loses the bid either way."""
    low: str = key("captured", choices=("captured", "held"))
    """Low scores for the side that ``captured`` the 2 of trumps, or the side that ``held`` it when play began."""
    renege: str = key("forbid", choices=("forbid", "penalty"))
    """``forbid`` (an illegal card raises) or ``penalty`` (accepted: the deal ends and the offenders are punished)."""
    reward: str = key("points", choices=("points", "win"))
    """``points``: at every deal's end, team score change minus the opponents', over the total points; ``win``:
    +1/-1 at the match's end."""
    episode: str = key("match", choices=("match", "deal"))
    """``match``: an episode is a whole match; ``deal``: every episode is one deal of a fresh match."""
    max_deals: int = key(200, low=1, high=MAX_DEALS)
    """Deals (thrown-in ones included) after which a match is truncated."""

    # ---- derived quantities ----
    @property
    def total_points(self) -> int:
        """Points available in one deal (14 for cinch)."""
        return VARIANT_TOTAL_POINTS[self.variant]

    @property
    def hand_size(self) -> int:
        """Cards dealt to each player: 9, or 6 with ``six_card``."""
        return 6 if self.six_card else 9

    @property
    def stock_size(self) -> int:
        """Cards left in the stock after the deal."""
        return 52 - self.num_players * self.hand_size

    @property
    def num_teams(self) -> int:
        """2 teams of two with four players; otherwise one team per player."""
        return 2 if self.num_players == 4 else self.num_players

    @property
    def team_of_seat(self) -> np.ndarray:
        """(num_players,) int8: seat -> team."""
        return np.arange(self.num_players, dtype=np.int8) % self.num_teams


def rule_keys() -> dict[str, Key]:
    """Rule key -> its :class:`~pedro_env.keys.Key`: type, range and choices, as declared on :class:`PedroConfig`."""
    return declared_keys(PedroConfig)


def _allowed_values() -> dict[str, tuple[Any, ...] | str]:
    allowed: dict[str, tuple[Any, ...] | str] = {}
    for name, rule_key in rule_keys().items():
        choices = (False, True) if rule_key.kind is bool else rule_key.allowed.choices
        allowed[name] = choices if choices else rule_key.describe()
    return allowed


ALLOWED_VALUES: dict[str, tuple[Any, ...] | str] = _allowed_values()
"""Rule key -> its allowed values (a tuple) or its range in words (a str), from the declarations on PedroConfig."""


def make_config(config: PedroConfig | None = None, **overrides: Any) -> PedroConfig:
    """Validate ``overrides`` on top of ``config`` (default rules) and return a frozen config.

    Values are Python values of each key's type (text is read by :func:`parse_override`). Raises ConfigError for
    an unknown key (listing the known ones) or a value outside the allowed set.
    """
    if config is not None and not isinstance(config, PedroConfig):
        raise ConfigError(f"config must be a PedroConfig (or None), got {type(config).__name__} {short_repr(config)}")
    declared = rule_keys()
    for name in overrides:
        if name not in declared:
            raise ConfigError(f"unknown config key {short_repr(name)}: known keys are {', '.join(declared)}")
    values = {item.name: getattr(config or PedroConfig(), item.name) for item in fields(PedroConfig)}
    values.update(overrides)
    for name, rule_key in declared.items():
        values[name] = rule_key.checked(values[name], f"config key {name!r}", ConfigError)
    if values["min_bid"] > VARIANT_TOTAL_POINTS[values["variant"]]:
        raise ConfigError(f"config key 'min_bid' = {values['min_bid']} is not allowed: it takes {MIN_BID_WORDS}")
    if values["num_players"] == 3 and values["scoring"] != "simple":
        raise ConfigError(
            "config key 'scoring' = 'difference' is not allowed with num_players=3: "
            "three-player Pedro allows only 'simple'"
        )
    if values["reward"] == "win" and values["episode"] == "deal":
        raise ConfigError(
            "config key 'reward' = 'win' needs episode='match': a one-deal episode has no match winner "
            "(allowed rewards with episode='deal': 'points')"
        )
    return PedroConfig(**values)


MAX_ASSIGNMENT_CHARS = 4096
"""The longest ``KEY=VALUE`` text a command reads (``--set`` in every command): a few dozen agent specs fit."""


def check_assignment_length(text: str) -> None:
    """ConfigError unless ``text``, one ``KEY=VALUE``, has at most :data:`MAX_ASSIGNMENT_CHARS` characters."""
    if len(text) > MAX_ASSIGNMENT_CHARS:
        raise ConfigError(
            f"KEY=VALUE {short_repr(text, 40)} has {len(text):,} characters: at most {MAX_ASSIGNMENT_CHARS:,} are read"
        )


def parse_override(text: str) -> tuple[str, Any]:
    """``'key=value'`` (command-line form) -> ``(key, value)``, the value read by the key's type and checked
    (:mod:`pedro_env.keys`: ``six_card=yes`` is True in every command).

    Raises ConfigError for a text longer than :data:`MAX_ASSIGNMENT_CHARS`, a missing ``=``, an unknown key
    (listing the known ones) or a value the key does not allow; :func:`make_config` checks the keys together.
    """
    check_assignment_length(text)
    declared = rule_keys()
    assignment = split_assignment(text)
    if assignment is None or assignment[0] not in declared:
        raise ConfigError(f"expected KEY=VALUE with KEY one of {', '.join(declared)}, got {short_repr(text)}")
    name, value = assignment
    return name, declared[name].value(value, f"config key {name!r}", ConfigError)


def read_rules(values: Mapping[str, Any]) -> dict[str, Any]:
    """Rule keys of a config file or a ``--set`` (text, or values of each key's type) -> values of each key's type,
    checked one by one (ConfigError naming the key); an unknown key is left for :func:`make_config` to name."""
    declared = rule_keys()
    return {
        name: declared[name].value(value, f"config key {name!r}", ConfigError) if name in declared else value
        for name, value in values.items()
    }


def field_docs(config_class: type) -> dict[str, str]:
    """Field name -> the docstring written under it in the class body (how every config field is documented)."""
    import ast
    import inspect
    import textwrap

    body = ast.parse(textwrap.dedent(inspect.getsource(config_class))).body[0].body  # type: ignore[attr-defined]
    docs: dict[str, str] = {}
    for node, following in zip(body, body[1:]):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[node.target.id] = " ".join(following.value.value.split())
    return docs
