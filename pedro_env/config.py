"""The one place where a Pedro config is validated.

Rule keys are those of docs/rules.md section 9; ``reward``, ``episode`` and ``max_deals`` shape the
episode an environment presents. :func:`make_config` is the only constructor users need: a bad key
or value raises :class:`ConfigError` naming the key and the allowed values.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from itertools import islice
from typing import Any

import numpy as np

from pedro_env.cards import VARIANT_TOTAL_POINTS


class ConfigError(ValueError):
    """A config key or value outside what docs/rules.md section 9 (or the env options) allows."""


class SeedError(ValueError, TypeError):
    """A seed that is not an int from 0 to 2**64 - 1 (both a ValueError and a TypeError: catch either)."""


SEED_LIMIT = 2**64  # seeds are uint64 in the engine: a seed lies in 0 .. SEED_LIMIT - 1


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

# key -> allowed values (a tuple) or a description of the allowed range (a str)
ALLOWED_VALUES: dict[str, tuple[Any, ...] | str] = {
    "num_players": (2, 3, 4),
    "target_score": "an int from 1 to 10000",
    "min_bid": "an int from 1 to the variant's total points (cinch 14, sancho 23, dom 17, pitch 4)",
    "all_pass": ("dealer_forced", "redeal"),
    "variant": ("cinch", "sancho", "dom", "pitch"),
    "six_card": (False, True),
    "refill": ("maker_sorted", "top", "dealer_robs"),
    "scoring": ("difference", "simple"),
    "low": ("captured", "held"),
    "renege": ("forbid", "penalty"),
    "reward": ("points", "win"),
    "episode": ("match", "deal"),
    "max_deals": "an int from 1 to 1000000",
}


@dataclass(frozen=True)
class PedroConfig:
    """Rules (docs/rules.md section 9) and episode options of one Pedro environment."""

    num_players: int = 4
    """Players at the table: 4 = two fixed partnerships (seats 0+2 vs 1+3); 2 or 3 = every player alone."""
    target_score: int = 62
    """A team that reaches this score wins the match (section 8)."""
    min_bid: int = 1
    """Lowest bid allowed (house rules 6 or 7)."""
    all_pass: str = "dealer_forced"
    """When the first n-1 players pass: ``dealer_forced`` (the dealer must bid) or ``redeal`` (thrown in)."""
    variant: str = "cinch"
    """Point cards: ``cinch`` 14, ``sancho`` 23 (+9 of trumps), ``dom`` 17 (+3 of trumps), ``pitch`` 4 (no Pedros)."""
    six_card: bool = False
    """Deal 6 cards and skip discard and draw."""
    refill: str = "maker_sorted"
    """How the stock refills hands: ``maker_sorted`` (the maker takes the trumps first, face up), ``top`` (everyone
    from the top) or ``dealer_robs`` (the dealer robs the rest of the pack)."""
    scoring: str = "difference"
    """Made: ``difference`` (the side with more points scores the difference) or ``simple`` (each side scores its
    points). Set: the maker's side loses the bid either way."""
    low: str = "captured"
    """Low scores for the side that ``captured`` the 2 of trumps, or the side that ``held`` it when play began."""
    renege: str = "forbid"
    """``forbid`` (an illegal card raises) or ``penalty`` (accepted: the deal ends and the offenders are punished)."""
    reward: str = "points"
    """``points``: at every deal's end, team score change minus the opponents', over the total points; ``win``:
    +1/-1 at the match's end."""
    episode: str = "match"
    """``match``: an episode is a whole match; ``deal``: every episode is one deal of a fresh match."""
    max_deals: int = 200
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


def _check_int(key: str, value: Any, low: int, high: int | None = None) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer))
        or value < low
        or (high is not None and value > high)
    ):
        raise ConfigError(
            f"config key {key!r} = {short_repr(value)} is not allowed: allowed values are {ALLOWED_VALUES[key]}"
        )


def make_config(config: PedroConfig | None = None, **overrides: Any) -> PedroConfig:
    """Validate ``overrides`` on top of ``config`` (default rules) and return a frozen config.

    Raises ConfigError for an unknown key (listing the known ones) or a value outside the allowed set.
    """
    if config is not None and not isinstance(config, PedroConfig):
        raise ConfigError(f"config must be a PedroConfig (or None), got {type(config).__name__} {short_repr(config)}")
    known = [f.name for f in fields(PedroConfig)]
    for key in overrides:
        if key not in known:
            raise ConfigError(f"unknown config key {short_repr(key)}: known keys are {', '.join(known)}")
    values = {f.name: getattr(config or PedroConfig(), f.name) for f in fields(PedroConfig)}
    values.update(overrides)
    for key, allowed in ALLOWED_VALUES.items():
        value = values[key]
        if isinstance(allowed, tuple):
            # bools are ints in Python: keep True from passing for num_players=1 and 1 for six_card=True
            # and keep arrays (whose == is elementwise) out of the membership test
            scalar = isinstance(value, (str, int, np.integer))
            type_ok = scalar and isinstance(value, bool) == isinstance(allowed[0], bool)
            if not type_ok or value not in allowed:
                raise ConfigError(
                    f"config key {key!r} = {short_repr(value)} is not allowed: "
                    f"allowed values are {', '.join(map(repr, allowed))}"
                )
    _check_int("target_score", values["target_score"], 1, MAX_TARGET_SCORE)
    _check_int("max_deals", values["max_deals"], 1, MAX_DEALS)
    _check_int("min_bid", values["min_bid"], 1, VARIANT_TOTAL_POINTS[values["variant"]])
    for key in ("num_players", "target_score", "min_bid", "max_deals"):
        values[key] = int(values[key])
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
    """``'key=value'`` (command-line form) -> ``(key, value)`` typed like that config field.

    Raises ConfigError for a text longer than :data:`MAX_ASSIGNMENT_CHARS`, a missing ``=``, an unknown key
    (listing the known ones) or a value that is not of the field's type; :func:`make_config` still checks the
    allowed values.
    """
    check_assignment_length(text)
    key, sep, value = text.partition("=")
    key, value = key.strip(), value.strip()
    types = {field.name: type(field.default) for field in fields(PedroConfig)}
    if not sep or key not in types:
        raise ConfigError(f"expected KEY=VALUE with KEY one of {', '.join(types)}, got {short_repr(text)}")
    if types[key] is bool:
        if value.lower() not in ("true", "false", "1", "0"):
            raise ConfigError(f"config key {key!r} takes true or false, got {short_repr(value)}")
        return key, value.lower() in ("true", "1")
    if types[key] is int:
        try:
            return key, int(value)
        except ValueError:
            raise ConfigError(f"config key {key!r} takes an int, got {short_repr(value)}") from None
    return key, value


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
