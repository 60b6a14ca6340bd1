"""Rule-based Pedro agents: ``rule:heuristic`` and the more careful ``rule:cautious``.

Both are :class:`RuleBasedAgent` with another :class:`Personality` (any of its fields is a spec option,
e.g. ``rule:heuristic,deny=true``). The decisions are compiled kernels (:mod:`agents.rule_kernels`) that
read the observation's bytes, one game at a time, and nothing else. Bids and trumps come from a hand
estimate; discards and plays from numbered rules, each a condition per game plus a score per card (ties go
to the lowest card id). A game takes the first rule, in order, that applies, so every action is legal in
every config of docs/rules.md section 9. Neither agent draws on ``rng``: the same observations give the
same actions.

The estimate's logistic weights, ``CAPTURE_MODELS``, are keyed by (players, refill), or (players,
"six_card") (:func:`capture_model_key`); ``BID_MARGINS`` holds the bid margins that differ per key.
docs/agents.md describes every rule and option.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from agents.base import Agent
from agents.rule_kernels import capture_feature_rows, hand_estimates, pack_rule_inputs, rule_actions, rule_discards
from pedro_env.cards import CARD_RANK, RuleTables, cards_to_bits
from pedro_env.config import PedroConfig
from pedro_env.keys import declared_keys, key
from pedro_env.observation_layout import observation_size, piece_starts

SURE = 1.0 - 1e-9  # a win chance this high is a certainty (no possible beater)
CHANCE_WORDS = "a chance above 0, at most 1"  # 0 or below would let a follower pick a card it may not play


CAPTURE_FEATURES = ("bias", "above_held", "above_missing", "length", "is_low", "dealer")
"""Features of one trump ``c`` of a hand with a suit as trumps: 1, trumps I hold above c, trumps above c I
do not hold, trumps I hold, c is the 2 (Low), I am the dealer (who robs the pack under ``dealer_robs``)."""


@dataclass(frozen=True)
class CaptureModel:
    """Logistic weights (one per CAPTURE_FEATURES entry) of the chance that the maker's side captures a point card."""

    held: tuple[float, ...]  # for a point card in my hand
    unheld: tuple[float, ...]  # for one I do not hold


def capture_model_key(config: PedroConfig) -> tuple[int, str]:
    """The table a config's capture model was fitted on: (players, refill), or (players, "six_card")."""
    return config.num_players, "six_card" if config.six_card else config.refill


CAPTURE_MODELS: dict[tuple[int, str], CaptureModel] = {
    (4, "maker_sorted"): CaptureModel(
        (0.599, 0.263, 0.014, 0.261, -1.618, -0.928),
        (0.142, 0.358, -0.006, -0.061, -0.278, -0.519),
    ),
    (4, "top"): CaptureModel(
        (-0.617, 0.189, -0.019, 0.37, -1.065, -0.038),
        (-0.456, 0.338, -0.036, -0.02, -0.052, -0.098),
    ),
    (4, "dealer_robs"): CaptureModel(
        (-0.665, 0.195, -0.013, 0.339, -1.128, 0.315),
        (-0.486, 0.342, -0.032, -0.004, -0.09, 0.068),
    ),
    (4, "six_card"): CaptureModel(
        (-0.358, 0.299, 0.022, 0.57, -1.341, 0.092),
        (-1.724, 0.27, -0.041, 0.001, 0.202, 0.02),
    ),
    (3, "maker_sorted"): CaptureModel(
        (1.545, 0.352, 0.047, 0.087, -2.611, -0.596),
        (-0.208, 0.403, 0.066, -0.289, -0.603, -0.147),
    ),
    (3, "top"): CaptureModel(
        (-1.983, 0.178, -0.055, 0.68, -1.416, 0.094),
        (-2.284, 0.609, -0.063, -0.085, 0.042, 0.046),
    ),
    (3, "dealer_robs"): CaptureModel(
        (-1.9, 0.163, -0.022, 0.238, -2.156, 2.849),
        (-3.12, 0.419, 0.072, 0.04, -0.996, 2.577),
    ),
    (3, "six_card"): CaptureModel(
        (-0.362, 0.31, 0.042, 0.529, -1.645, 0.179),
        (-4.148, 0.801, -0.081, 0.048, 0.385, 0.147),
    ),
    (2, "maker_sorted"): CaptureModel(
        (2.726, 0.336, 0.138, 0.034, -3.049, -0.829),
        (-0.359, 0.233, 0.081, -0.28, -0.425, 0.071),
    ),
    (2, "top"): CaptureModel(
        (-1.261, 0.158, -0.109, 0.729, -0.984, 0.073),
        (-2.342, 0.491, -0.016, -0.126, 0.17, 0.076),
    ),
    (2, "dealer_robs"): CaptureModel(
        (-3.032, 0.186, 0.123, 0.201, -4.155, 3.645),
        (-3.247, 0.316, 0.143, 0.048, -2.858, 3.771),
    ),
    (2, "six_card"): CaptureModel(
        (0.473, 0.275, 0.068, 0.445, -1.693, 0.269),
        (-4.719, 0.753, -0.062, 0.005, 0.616, 0.131),
    ),
}


# bidding margins (bid_margin, contest_allowance) per capture-model table where the default (0, 2) is not the best:
# with a top-of-stock refill four players gain less from the contract, so they bid more soberly (self-play tuned)
BID_MARGINS: dict[tuple[int, str], tuple[float, float]] = {(4, "top"): (2.0, 1.0), (4, "dealer_robs"): (2.0, 1.0)}
DEFAULT_BID_MARGINS = (0.0, 2.0)


@dataclass(frozen=True)
class Personality:
    """The knobs that make one rule-based player differ from another (docs/agents.md describes the rules they tune)."""

    bid_margin: float | None = None
    """Points my estimate must exceed the bid needed by before I bid (None: BID_MARGINS for the config)."""
    contest_allowance: float | None = None
    """Points above my estimate I go to take the contract from an opponent's high bid (None: BID_MARGINS)."""
    caution: float = 0.0
    """Points added to the bid margin."""
    partner_overcall_margin: float = 3.0
    """Extra margin needed to overcall my own partner's high bid (inf: never)."""
    preempt_shade: float | None = 0.0
    """An earlier bidder bids floor(estimate - margin - shade) (at least what is needed); None: just what is needed."""
    pull_trumps: bool = True
    """Leading rule 1: lead safe trumps while the opponents may hold trumps."""
    probe_as_maker: bool = True
    """Leading rule 3: the maker's side without a safe trump leads its highest non-point trump."""
    contest_points: int = 1
    """Following rule 4: contest a trick holding at least this many points (0: never contest)."""
    feed_chance: float = key(0.8, low=1e-9, high=1.0, words=CHANCE_WORDS)
    """Following rule 1: feed when the partner's card wins with at least this chance."""
    save_chance: float = key(0.8, low=1e-9, high=1.0, words=CHANCE_WORDS)
    """Following rule 2: play an at-risk point card that wins with at least this chance."""
    win_chance: float = key(0.8, low=1e-9, high=1.0, words=CHANCE_WORDS)
    """Following rule 3: win a trick holding points with a card that wins with at least this chance."""
    deny: bool = False
    """Discarding rule 0: a defender first discards its point trumps but the ace, face up, so the maker's side
    cannot capture them (off for both shipped personalities)."""


def checked_personality_options(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` as Personality field values, each of its field's type (text read as every KEY=VALUE is:
    ``none`` for a field that may be None); ValueError naming the field and the values it takes for an unknown
    field or a value of another type."""
    declared = declared_keys(Personality)
    unknown = [name for name in options if name not in declared]
    if unknown:
        raise ValueError(f"unknown option {unknown[0]!r}; a rule agent takes {', '.join(declared)}")
    return {name: declared[name].value(value, f"option {name!r}", ValueError) for name, value in options.items()}


HEURISTIC = Personality()
CAUTIOUS = Personality(
    caution=1.5,
    contest_allowance=0.0,
    partner_overcall_margin=float("inf"),
    preempt_shade=None,
    pull_trumps=False,
    probe_as_maker=False,
    contest_points=0,
    feed_chance=SURE,
    save_chance=SURE,
    win_chance=SURE,
)


def void_card_sets(tables: RuleTables) -> np.ndarray:
    """(4, 16) uint64 ``[trump, flags]``: the cards of the effective suits set in a 4-bit void flag set."""
    void_cards = np.zeros((4, 16), dtype=np.uint64)
    for flags in range(16):
        for suit in range(4):
            if flags >> suit & 1:
                void_cards[:, flags] |= tables.suit_set[:, suit]
    return void_cards


class RuleBasedAgent(Agent):
    """The shared machinery of the rule-based agents: a personality and a config's card tables, packed for the
    compiled kernels of :mod:`agents.rule_kernels` that decide."""

    personality: Personality = HEURISTIC
    option_fields = Personality  # the options of a spec (rule:heuristic,caution=2): Personality's fields

    def __init__(self, config: PedroConfig, **overrides: Any) -> None:
        """``overrides``: Personality fields to change, e.g. ``make_agent("rule:heuristic,contest_points=0")``; the
        card tables and settings the compiled kernels read, packed by :meth:`_packed_inputs`."""
        super().__init__(config)
        self.personality = replace(self.personality, **checked_personality_options(overrides))
        self.capture = CAPTURE_MODELS[capture_model_key(config)]
        margin, allowance = BID_MARGINS.get(capture_model_key(config), DEFAULT_BID_MARGINS)
        style = self.personality
        self.bid_margin = (margin if style.bid_margin is None else style.bid_margin) + style.caution
        self.contest_allowance = allowance if style.contest_allowance is None else style.contest_allowance
        tables = RuleTables.for_variant(config.variant)
        self.tables = tables
        self.is_trump = tables.is_trump  # (4, 52) bool [trump, card]
        self.strength = tables.trick_strength.astype(np.int16)  # (4, 52): trumps 20..33, others their rank 0..12
        # points a card counts in play (Low counts nothing in play with low=held) and in the estimate ([trump, card])
        self.play_value = tables.points.astype(np.int16).copy()
        if config.low == "held":  # Low scores for its holder: capturing it is worth nothing
            self.play_value[np.arange(4), tables.low_card] = 0
        bid_value = tables.points.astype(np.float64)
        # trumps of each suit, strongest first: (4, N) card ids
        trump_count = int(tables.is_trump[0].sum())
        order = np.argsort(-np.where(tables.is_trump, tables.trick_strength, -1), axis=1, kind="stable")
        self.trump_order = order[:, :trump_count]
        self.order_value = np.take_along_axis(bid_value, self.trump_order, axis=1)  # (4, N)
        # non-trump throw-away order and the "keep" value of a card when discarding (higher = keep)
        self.keep_value = np.where(
            tables.is_trump, 100 + self.strength + 10 * self.play_value, CARD_RANK[None, :].astype(np.int16)
        )
        self.team_of_seat = np.arange(config.num_players) % config.num_teams  # relative seat -> team (0 = mine)
        self._group: RuleAgentGroup | None = None
        self.pieces = piece_starts(config)
        self.observation_size = observation_size(config)
        self.ints, self.floats = self._packed_inputs(config)

    def _packed_inputs(self, config: PedroConfig) -> tuple[np.ndarray, np.ndarray]:
        """The kernels' (ints, floats) of this agent's tables and personality (:func:`pack_rule_inputs`)."""
        style = self.personality
        return pack_rule_inputs(
            tables={
                "strength": self.strength,
                "play_value": self.play_value,
                "keep_value": self.keep_value,
                "is_trump": self.is_trump,
                "beats": self.tables.beats,
                "trump_order": self.trump_order,
                "void_cards": void_card_sets(self.tables),
                "team_of_seat": self.team_of_seat,
            },
            settings={
                "players": config.num_players,
                "min_bid": config.min_bid,
                "total": config.total_points,
                "low_held": config.low == "held",
                "six_card": config.six_card,
                "pull_trumps": style.pull_trumps,
                "probe_as_maker": style.probe_as_maker,
                "contest_points": style.contest_points,
                "deny": style.deny,
                "preempt": style.preempt_shade is not None,
            },
            weights={
                "held": self.capture.held,
                "unheld": self.capture.unheld,
                "order_value": self.order_value,
                "bid_margin": self.bid_margin,
                "contest_allowance": self.contest_allowance,
                "partner_overcall": style.partner_overcall_margin,
                "preempt_shade": 0.0 if style.preempt_shade is None else style.preempt_shade,
                "feed_chance": style.feed_chance,
                "save_chance": style.save_chance,
                "win_chance": style.win_chance,
            },
        )

    def act(self, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """(B,) int64 actions for (B, D) uint8 observations (or one (D,)) and (B, 133) masks; draws nothing."""
        return self.group.act(observations, action_masks)

    @property
    def group(self) -> RuleAgentGroup:
        """This agent alone as a :class:`RuleAgentGroup`."""
        if self._group is None:
            self._group = RuleAgentGroup([self])
        return self._group

    def estimate_points(self, hands: np.ndarray, dealer: np.ndarray) -> np.ndarray:
        """(k,) uint64 card sets (or (k, 52) bool hands), (k,) bool "I am the dealer" -> (k, 4) float: expected
        points of the hand's side as the maker with each suit as trumps."""
        hands = np.asarray(hands)
        if hands.ndim == 2:
            hands = cards_to_bits(hands.astype(bool))
        out = np.empty((hands.shape[0], 4))
        hand_estimates(hands.astype(np.uint64), _bytes(np.asarray(dealer, dtype=bool)), self.ints, self.floats, out)
        return out

    def trump_capture_features(self, hand: int, trump: int, dealer: bool) -> np.ndarray:
        """(N, 6) float64: the CAPTURE_FEATURES of each trump of ``trump``, strongest first, for a uint64 ``hand``."""
        held = sum(1 << i for i, card in enumerate(self.trump_order[trump]) if int(hand) >> int(card) & 1)
        out = np.empty((self.trump_order.shape[1], 6))
        capture_feature_rows(np.uint64(held), self.trump_order.shape[1], bool(dealer), out)
        return out

    def discard_actions(
        self, trump: np.ndarray, robbing: np.ndarray, maker: np.ndarray, masks: np.ndarray
    ) -> np.ndarray:
        """Discard-phase actions of k games from the few public facts the discard rules read: (k,) trump suits,
        (k,) "I am the robbing dealer", (k,) the maker's relative seat, and the (k, 133) masks."""
        trump = np.asarray(trump, dtype=np.int64)
        actions = np.empty(trump.shape[0], dtype=np.int64)
        rule_discards(trump, _bytes(np.asarray(robbing, dtype=bool)), np.asarray(maker, dtype=np.int64),
                      _bytes(masks, trump.shape[0]), self.ints, actions)  # fmt: skip
        return actions


class RuleAgentGroup:
    """Several rule agents of one config deciding in one compiled call: each row of a batch by its own agent (the
    opponent pool's rule baselines, every personality at once)."""

    def __init__(self, agents: Sequence[RuleBasedAgent]) -> None:
        configs = {agent.config for agent in agents}
        if len(configs) != 1:
            raise ValueError(f"a rule agent group plays one config, got {len(configs)}")
        self.pieces, self.observation_size = agents[0].pieces, agents[0].observation_size
        self.config = agents[0].config
        self.ints = np.stack([agent.ints for agent in agents])  # (K, A_SIZE)
        self.floats = np.stack([agent.floats for agent in agents])  # (K, W_SIZE)

    def act(
        self,
        observations: np.ndarray,
        action_masks: np.ndarray,
        rows: np.ndarray | None = None,
        agent_of_row: np.ndarray | None = None,
    ) -> np.ndarray:
        """(R,) int64 actions for rows ``rows`` (R,) (default: all) of (B, D) uint8 observations (or one (D,)) and
        (B, 133) masks, row ``rows[i]`` decided by agent ``agent_of_row[i]`` (default: the first)."""
        observations = np.asarray(observations)
        if observations.ndim == 1:
            observations = observations[None, :]
        if observations.shape[1] != self.observation_size:
            raise ValueError(
                f"observations have {observations.shape[1]} entries; config {self.config} needs {self.observation_size}"
            )
        if rows is None:
            rows = np.arange(observations.shape[0], dtype=np.int64)
        if agent_of_row is None:
            agent_of_row = np.zeros(rows.shape[0], dtype=np.int64)
        actions = np.empty(rows.shape[0], dtype=np.int64)
        rule_actions(_bytes(observations), _bytes(action_masks, observations.shape[0]), self.pieces, self.ints,
                     self.floats, np.asarray(rows, dtype=np.int64), np.asarray(agent_of_row, dtype=np.int64),
                     actions)  # fmt: skip
        return actions


def _bytes(array: np.ndarray, rows: int | None = None) -> np.ndarray:
    """A C-contiguous uint8 view (a copy only when needed) of a 0/1 or bool array, as ``rows`` rows when given (one
    compiled signature for every caller's dtype)."""
    if isinstance(array, np.ndarray) and array.flags.c_contiguous and array.dtype in (np.uint8, np.bool_):
        array = array.view(np.uint8)  # the common cases, at once
        return array if rows is None or array.ndim == 2 else array.reshape(rows, -1)
    array = np.asarray(array)
    if rows is not None:
        array = array.reshape(rows, -1)
    if array.dtype == np.bool_ or array.dtype == np.int8:
        array = array.view(np.uint8)
    elif array.dtype != np.uint8:
        array = (array != 0).view(np.uint8)
    return np.ascontiguousarray(array)


class HeuristicAgent(RuleBasedAgent):
    """``rule:heuristic``: bids its estimate (more against opponents), pulls trumps, feeds and saves Pedros."""

    personality = HEURISTIC


class CautiousAgent(RuleBasedAgent):
    """``rule:cautious``: bids only with a margin and just what is needed, keeps its high trumps, leads low."""

    personality = CAUTIOUS


__all__ = [
    "CAUTIOUS",
    "HEURISTIC",
    "CautiousAgent",
    "HeuristicAgent",
    "Personality",
    "RuleAgentGroup",
    "RuleBasedAgent",
]
