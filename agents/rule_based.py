"""Rule-based Pedro agents: ``rule:heuristic`` and the more careful ``rule:cautious``.

Both are :class:`RuleBasedAgent` with another :class:`Personality` (any of its fields is a spec option,
e.g. ``rule:heuristic,deny=true``). They read only the public-information view
(:func:`pedro_env.view.decode_observations`) and the engine's card tables (:class:`pedro_env.cards.RuleTables`),
and decide for the whole batch at once. Bids and trumps come from a hand estimate; discards and plays from
numbered rules, each a boolean per game (it applies) plus a score per card (int16; an illegal card scores
``NOT_LEGAL``, ties go to the lowest card id). A game takes the first rule, in order, that applies, so
every action is legal in every config of docs/rules.md section 9. Neither agent draws on ``rng``: the same
observations give the same actions.

The estimate's logistic weights, ``CAPTURE_MODELS``, are keyed by (players, refill), or (players,
"six_card") (:func:`capture_model_key`); ``BID_MARGINS`` holds the bid margins that differ per key.
docs/agents.md describes every rule and option.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from agents.base import Agent
from pedro_env.actions import DISCARD_OFFSET, DONE_ACTION, PASS_ACTION, PLAY_OFFSET, TRUMP_OFFSET
from pedro_env.cards import CARD_RANK, NO_CARDS, NUM_CARDS, RuleTables, bits_to_cards
from pedro_env.config import PedroConfig
from pedro_env.state import BID, DISCARD, PLAY, TRUMP
from pedro_env.view import PublicView, decode_observations

NOT_LEGAL = np.int16(-32000)  # score of an illegal card: never chosen (scores are small ints)
SURE = 1.0 - 1e-9  # a win chance this high is a certainty (no possible beater)
TRUMP_STRENGTH = 20  # trick strengths of trumps start here (RuleTables.trick_strength)
STRENGTH_LEVELS = 35  # trick strengths -1 .. 33, shifted by one to index arrays


CAPTURE_FEATURES = ("bias", "above_held", "above_missing", "length", "is_low", "dealer")
"""Features of one trump ``c`` of a hand with a suit as trumps: 1, trumps I hold above c, trumps above c I
do not hold, trumps I hold, c is the 2 (Low), I am the dealer (who robs the pack under ``dealer_robs``)."""


@dataclass(frozen=True)
class CaptureModel:
    """Logistic weights (one per CAPTURE_FEATURES entry) of the chance that the maker's side captures a point card."""

    held: tuple[float, ...]  # for a point card in my hand
    unheld: tuple[float, ...]  # for one I do not hold


def capture_features(held: np.ndarray, dealer: np.ndarray) -> tuple[np.ndarray, ...]:
    """The CAPTURE_FEATURES of every trump of a suit, in order, each broadcastable to ``held``: ``held`` (..., N) bool
    the trumps I hold, strongest first; ``dealer`` I am the dealer, shaped to broadcast against ``held``."""
    count = held.shape[-1]
    above_held = np.cumsum(held, axis=-1) - held
    return (
        np.ones(count),
        above_held,
        np.arange(count) - above_held,
        held.sum(axis=-1, keepdims=True),
        np.arange(count) == count - 1,
        dealer,
    )


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
    feed_chance: float = 0.8
    """Following rule 1: feed when the partner's card wins with at least this chance."""
    save_chance: float = 0.8
    """Following rule 2: play an at-risk point card that wins with at least this chance."""
    win_chance: float = 0.8
    """Following rule 3: win a trick holding points with a card that wins with at least this chance."""
    deny: bool = False
    """Discarding rule 0: a defender first discards its point trumps but the ace, face up, so the maker's side
    cannot capture them (off for both shipped personalities)."""


def checked_personality_options(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` as Personality field values (``none`` for a field that may be None); ValueError naming the
    field and the values it takes for an unknown field or a value of the wrong kind."""
    kinds = {item.name: str(item.type) for item in fields(Personality)}
    checked = {}
    for name, value in options.items():
        kind = kinds.get(name)
        if kind is None:
            raise ValueError(f"unknown option {name!r}; a rule agent takes {', '.join(kinds)}")
        if kind == "bool":
            if not isinstance(value, bool):
                raise ValueError(f"{name} takes true or false, got {value!r}")
        elif kind == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name} takes a whole number, got {value!r}")
        else:  # float, or float | None
            may_be_none = "None" in kind
            if may_be_none and (value is None or str(value).lower() == "none"):
                value = None
            elif isinstance(value, bool) or not isinstance(value, (int, float)):
                allowed = "a number or none" if may_be_none else "a number"
                raise ValueError(f"{name} takes {allowed}, got {value!r}")
            else:
                value = float(value)
        checked[name] = value
    return checked


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


# ---------------------------------------------------------------------- play: what a seat knows of the trick and cards

Rule = tuple[np.ndarray, np.ndarray]
"""One play rule for k games: (card (k,) int index 0..51 it would play, applies (k,) bool)."""


@dataclass(frozen=True)
class TrickSoFar:
    """The current trick of k games from my seat (relative seats, 0 = me)."""

    in_trick: np.ndarray  # (k, n) bool: the seat has played to this trick
    leading: np.ndarray  # (k,) bool: nobody has played yet, I lead
    beats: np.ndarray  # (k, 52) int16: each card's strength in this trick (-1: it cannot win it)
    best: np.ndarray  # (k,) int16: strength of the card winning the trick so far (-1 when leading)
    beats_best: np.ndarray  # (k, 52) bool: the card would take the trick from the card now winning it
    points: np.ndarray  # (k,) int: points of the cards in the trick (RuleBasedAgent.play_value)
    partner_winning: np.ndarray  # (k,) bool: my side's card is winning the trick


@dataclass(frozen=True)
class UnseenCards:
    """Where the cards I have not seen may be, for k games (relative seats 1 .. n-1)."""

    possible: dict[int, np.ndarray]  # seat -> (k,) uint64 card set: unseen cards outside its voids, + the maker's draws
    hidden: dict[int, np.ndarray]  # seat -> (k,) float: cards of its hand I cannot place
    trump_holders: (
        np.ndarray
    )  # (k,) float: hidden cards where trumps may lie (seats not void in trumps; six-card stock)
    all_holders: np.ndarray  # (k,) float: hidden cards of every hand plus the unseen cards out of every hand
    opponents_possible: np.ndarray  # (k, 52) bool: some opponent can hold the card


@dataclass(frozen=True)
class CardFacts:
    """What I know about each card in k games with their trumps named; every field (k, 52)."""

    legal: np.ndarray  # bool: I may play it now
    strength: np.ndarray  # int16: trick strength (trumps 20..33, others their rank 0..12)
    value: np.ndarray  # int16: points it counts in play
    is_trump: np.ndarray  # bool
    safe_lead: np.ndarray  # bool: no opponent can hold a card that beats it led
    beats_trick: np.ndarray  # bool: legal and would take the trick from the card now winning it
    win_chance: np.ndarray  # float: chance it wins this trick when played now (0 unless beats_trick)


class RuleBasedAgent(Agent):
    """The shared machinery of the rule-based agents: card tables, the hand estimate and the rules per phase."""

    personality: Personality = HEURISTIC

    def __init__(self, config: PedroConfig, **overrides: Any) -> None:
        """``overrides``: Personality fields to change, e.g. ``make_agent("rule:heuristic,contest_points=0")``."""
        super().__init__(config)
        self.personality = replace(self.personality, **checked_personality_options(overrides))
        self.capture = CAPTURE_MODELS[capture_model_key(config)]
        margin, allowance = BID_MARGINS.get(capture_model_key(config), DEFAULT_BID_MARGINS)
        style = self.personality
        self.bid_margin = (margin if style.bid_margin is None else style.bid_margin) + style.caution
        self.contest_allowance = allowance if style.contest_allowance is None else style.contest_allowance
        tables = RuleTables.for_variant(config.variant)
        self.tables = tables
        n, teams = config.num_players, config.num_teams
        self.is_trump = tables.is_trump  # (4, 52) bool [trump, card]
        self.strength = tables.trick_strength.astype(np.int16)  # (4, 52): trumps 20..33, others their rank 0..12
        # points a card counts in play (Low counts nothing in play with low=held) and in the estimate ([trump, card])
        self.play_value = tables.points.astype(np.int16).copy()
        if config.low == "held":  # Low scores for its holder: capturing it is worth nothing
            self.play_value[np.arange(4), tables.low_card] = 0
        self.bid_value = tables.points.astype(np.float64)
        # trumps of each suit, strongest first: (4, N) card ids
        trump_count = int(tables.is_trump[0].sum())
        order = np.argsort(-np.where(tables.is_trump, tables.trick_strength, -1), axis=1, kind="stable")
        self.trump_order = order[:, :trump_count]
        self.order_value = np.take_along_axis(self.bid_value, self.trump_order, axis=1)  # (4, N)
        # cards of the effective suits in a 4-bit void flag set: void_cards[trump, flags] (4, 16) uint64
        self.void_cards = np.zeros((4, 16), dtype=np.uint64)
        for flags in range(16):
            for suit in range(4):
                if flags >> suit & 1:
                    self.void_cards[:, flags] |= tables.suit_set[:, suit]
        # non-trump throw-away order and the "keep" value of a card when discarding (higher = keep)
        self.keep_value = np.where(
            tables.is_trump, 100 + self.strength + 10 * self.play_value, CARD_RANK[None, :].astype(np.int16)
        )
        self.team_of_seat = np.arange(n) % teams  # relative seat -> relative team (0 = mine)
        self.opponent_seats = [seat for seat in range(1, n) if self.team_of_seat[seat] != 0]

    # ------------------------------------------------------------------ entry point

    def act(self, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        masks = np.asarray(action_masks)
        masks = masks.view(bool) if masks.dtype in (np.int8, np.uint8) else masks.astype(bool)  # 0/1 entries
        return self.act_on_view(decode_observations(observations, self.config), masks)

    def act_on_view(self, view: PublicView, masks: np.ndarray) -> np.ndarray:
        """The actions for an already decoded view and (k, 133) bool masks (what :meth:`act` does after decoding)."""
        actions = masks.argmax(axis=1).astype(np.int64)  # any legal action: only kept where no rule decides
        for phase, decide in (
            (BID, self._bid),
            (TRUMP, self._name_trumps),
            (DISCARD, self._discard),
            (PLAY, self._play),
        ):
            games = np.flatnonzero(view.phase == phase)
            if games.size:
                actions[games] = decide(_select(view, games), masks[games])
        return actions

    # ------------------------------------------------------------------ bidding and trumps

    def estimate_points(self, hands: np.ndarray, dealer: np.ndarray) -> np.ndarray:
        """(k, 52) bool hands, (k,) bool "I am the dealer" -> (k, 4) float: expected points of the hand's side
        as the maker with each suit as trumps."""
        held = hands[:, self.trump_order]  # (k, 4, N) held trumps, strongest first
        features = capture_features(held, dealer[:, None, None])
        held_logit = sum(weight * feature for weight, feature in zip(self.capture.held, features))
        unheld_logit = sum(weight * feature for weight, feature in zip(self.capture.unheld, features))
        chance = 1.0 / (1.0 + np.exp(-np.where(held, held_logit, unheld_logit)))
        chance[:, :, 0] = np.where(held[:, :, 0], 1.0, chance[:, :, 0])  # the ace wins its own trick
        if self.config.low == "held":  # Low scores for whoever holds it
            chance[:, :, -1] = held[:, :, -1]
        return (chance * self.order_value[None]).sum(axis=2)

    def _bid(self, view: PublicView, masks: np.ndarray) -> np.ndarray:
        style, config = self.personality, self.config
        estimate = self.estimate_points(bits_to_cards(view.hand), view.dealer == 0).max(axis=1)  # (k,)
        high = view.high_bid.astype(np.int64)
        needed = np.maximum(high + 1, config.min_bid)
        high_side = self.team_of_seat[np.maximum(view.maker, 0)]
        partner_high = (view.maker > 0) & (high_side == 0)
        opponent_high = (view.maker > 0) & (high_side != 0)
        margin = np.where(partner_high, self.bid_margin + style.partner_overcall_margin, self.bid_margin)
        margin = np.where(opponent_high, margin - self.contest_allowance, margin)
        wants = estimate - margin >= needed
        forced = ~masks[:, PASS_ACTION]
        amount = needed.copy()
        if style.preempt_shade is not None:
            last_to_speak = view.dealer == 0
            preempt = np.floor(estimate - self.bid_margin - style.preempt_shade).astype(np.int64)
            amount = np.where(last_to_speak, needed, np.maximum(needed, np.minimum(preempt, config.total_points)))
        amount = np.minimum(amount, config.total_points)
        bid = np.where(forced, needed, np.where(wants, amount, PASS_ACTION))
        legal = masks[np.arange(bid.size), bid]
        return np.where(legal, bid, masks.argmax(axis=1))  # (never used: a bid above the total is never wanted)

    def _name_trumps(self, view: PublicView, masks: np.ndarray) -> np.ndarray:
        estimate = self.estimate_points(bits_to_cards(view.hand), view.dealer == 0)
        return TRUMP_OFFSET + estimate.argmax(axis=1)

    # ------------------------------------------------------------------ discarding

    def _discard(self, view: PublicView, masks: np.ndarray) -> np.ndarray:
        return self.discard_actions(view.trump, view.robbing, view.maker, masks)

    def discard_actions(
        self, trump: np.ndarray, robbing: np.ndarray, maker: np.ndarray, masks: np.ndarray
    ) -> np.ndarray:
        """Discard-phase actions of k games from the few public facts the discard rules read: (k,) trump suits,
        (k,) "I am the robbing dealer", (k,) the maker's relative seat, and the (k, 133) bool masks."""
        trump = trump.astype(np.intp)
        discardable = masks[:, DISCARD_OFFSET:DONE_ACTION]  # (k, 52)
        may_say_done = masks[:, DONE_ACTION]
        keep = self.keep_value[trump]  # (k, 52)
        worst = np.where(discardable, -keep, NOT_LEGAL).argmax(axis=1)  # least useful discardable card
        has_discard = discardable.any(axis=1)
        worst_is_trump = self.is_trump[trump, worst]
        # the robbing dealer throws its least useful card until 6 remain; others throw non-trumps, then stop
        discard_now = has_discard & (robbing | ~worst_is_trump | ~may_say_done)
        action = np.where(discard_now, DISCARD_OFFSET + worst, DONE_ACTION)
        if self.personality.deny:  # rule 0: a defender throws its point trumps (not the ace) out of play first
            defender = (maker >= 0) & (self.team_of_seat[np.maximum(maker, 0)] != 0) & ~robbing
            value = self.play_value[trump]
            point_trumps = discardable & self.is_trump[trump] & (value > 0)
            point_trumps[np.arange(trump.size), self.trump_order[trump, 0]] = False  # the ace takes its own trick
            richest = np.where(point_trumps, value, NOT_LEGAL).argmax(axis=1)
            action = np.where(defender & point_trumps.any(axis=1), DISCARD_OFFSET + richest, action)
        return action

    # ------------------------------------------------------------------ play

    def _play(self, view: PublicView, masks: np.ndarray) -> np.ndarray:
        """Play phase, (k,) actions: the card of the first rule that applies (leading 1-4, following 1-5)."""
        trump = view.trump.astype(np.intp)
        legal = masks[:, PLAY_OFFSET:]  # (k, 52) bool
        strength = self.strength[trump]  # (k, 52)
        value = self.play_value[trump]  # (k, 52)
        is_trump = self.is_trump[trump]  # (k, 52)
        trick = self._trick_so_far(view, trump, value)
        unseen = self._unseen_cards(view, trump)
        safe_lead, opponent_top_trump = _safe_to_lead(unseen.opponents_possible, is_trump, strength)
        chance_by_level = self._unbeaten_chance_by_level(trick, unseen)  # [game, strength + 1]
        beats_trick = legal & trick.beats_best
        cards = CardFacts(
            legal=legal,
            strength=strength,
            value=value,
            is_trump=is_trump,
            safe_lead=safe_lead,
            beats_trick=beats_trick,
            win_chance=np.where(beats_trick, np.take_along_axis(chance_by_level, trick.beats + 1, axis=1), 0.0),
        )
        partner_chance = np.where(
            trick.partner_winning, chance_by_level[np.arange(view.batch_size), trick.best + 1], 0.0
        )
        # throw-low cost: non-trumps by rank, then non-point trumps, then point cards by value
        throw_cost = np.where(is_trump, 20 + strength, strength) + 100 * value
        throw_card, _ = _pick(-throw_cost, legal)
        rules = self._leading_rules(view, cards, trick.leading, opponent_top_trump >= 0, throw_card)
        rules += self._following_rules(cards, trick, partner_chance, throw_card)
        return PLAY_OFFSET + _first_that_applies(rules, throw_card)

    def _trick_so_far(self, view: PublicView, trump: np.ndarray, value: np.ndarray) -> TrickSoFar:
        """The current trick: (k,) trump suits, (k, 52) point values of the cards -> TrickSoFar."""
        rows = np.arange(view.batch_size)
        trick = view.trick.astype(np.intp)  # (k, n), -1 not played
        in_trick = trick >= 0
        leading = np.asarray(~in_trick.any(axis=1))
        leader = np.maximum(view.trick_leader.astype(np.intp), 0)
        led_card = np.where(leading, NUM_CARDS, trick[rows, leader])
        beats = self.tables.beats[trump, led_card].astype(np.int16)  # (k, 52): strength in this trick, -1 can't win
        trick_strength = np.where(in_trick, np.take_along_axis(beats, np.maximum(trick, 0), axis=1), -1)
        best_seat = trick_strength.argmax(axis=1)
        best = trick_strength[rows, best_seat]  # -1 when leading
        points = np.where(in_trick, np.take_along_axis(value, np.maximum(trick, 0), axis=1), 0).sum(axis=1)
        return TrickSoFar(
            in_trick=in_trick,
            leading=leading,
            beats=beats,
            best=best,
            beats_best=beats > best[:, None],
            points=points,
            partner_winning=~leading & (self.team_of_seat[best_seat] == 0),
        )

    def _unseen_cards(self, view: PublicView, trump: np.ndarray) -> UnseenCards:
        """Cards each other seat can hold: unseen, outside the suits it has shown void in (the maker also its open
        draws), and how many cards of each hand, and of the stock, they may be among; (k,) trump suits."""
        k, n = view.batch_size, self.config.num_players
        unseen = view.unseen()
        played = view.played[:, 0]
        for seat in range(1, n):
            played = played | view.played[:, seat]
        open_held = view.open_draws & ~played  # the maker's face-up draws not yet played: known to be in its hand
        open_count = np.bitwise_count(open_held).astype(np.float64)
        opponents_all = np.zeros(k, dtype=np.uint64)
        possible: dict[int, np.ndarray] = {}
        hidden: dict[int, np.ndarray] = {}  # cards of each seat's hand the viewer cannot place
        trump_holders = np.zeros(k)  # hidden cards of the seats that may still hold trumps
        for seat in range(1, n):
            is_maker = view.maker == seat
            possible[seat] = (unseen & ~self.void_cards[trump, view.voids[:, seat]]) | np.where(
                is_maker, open_held, NO_CARDS
            )
            hidden[seat] = np.maximum(view.hand_sizes[:, seat] - np.where(is_maker, open_count, 0.0), 0.0)
            trump_holders += np.where(view.voids[:, seat] >> trump & 1, 0.0, hidden[seat])
            if self.team_of_seat[seat] != 0:
                opponents_all |= possible[seat]
        hidden_total = sum(hidden.values())
        stock_unknown = np.maximum(np.bitwise_count(unseen) - hidden_total, 0.0)  # unseen cards out of every hand
        if self.config.six_card:  # nothing was set aside: undealt trumps are unseen too
            trump_holders = trump_holders + stock_unknown
        return UnseenCards(
            possible=possible,
            hidden=hidden,
            trump_holders=trump_holders,
            all_holders=hidden_total + stock_unknown,
            opponents_possible=bits_to_cards(opponents_all),
        )

    def _unbeaten_chance_by_level(self, trick: TrickSoFar, unseen: UnseenCards) -> np.ndarray:
        """(k, STRENGTH_LEVELS) float [game, s + 1]: the chance that no opponent still to play holds a card beating
        strength s in this trick. Each possible beater lies in a given hand with chance (its hidden cards) / (cards
        they may be among)."""
        k = trick.beats.shape[0]
        rows = np.arange(k)
        log_miss = np.zeros((k, NUM_CARDS))  # log chance that the opponent(s) still to play do not hold the card
        trump_beater = trick.beats >= TRUMP_STRENGTH
        for seat in self.opponent_seats:
            can_hold = bits_to_cards(unseen.possible[seat]) & ~trick.in_trick[:, seat : seat + 1]
            hidden = unseen.hidden[seat]
            miss_trump = np.log(np.maximum(1.0 - hidden / np.maximum(unseen.trump_holders, 1.0), 1e-9))[:, None]
            miss_other = np.log(np.maximum(1.0 - hidden / np.maximum(unseen.all_holders, 1.0), 1e-9))[:, None]
            log_miss += np.where(can_hold, np.where(trump_beater, miss_trump, miss_other), 0.0)
        # per strength level, then summed over the levels above: a card is beaten by every card stronger than it
        flat = (rows * STRENGTH_LEVELS)[:, None] + (trick.beats + 1)  # (k, 52) into (k, levels)
        per_level = np.bincount(flat.ravel(), weights=log_miss.ravel(), minlength=k * STRENGTH_LEVELS)
        per_level = per_level.reshape(k, STRENGTH_LEVELS)
        return np.exp(per_level.sum(axis=1, keepdims=True) - np.cumsum(per_level, axis=1))

    def _leading_rules(
        self,
        view: PublicView,
        cards: CardFacts,
        leading: np.ndarray,
        opponents_have_trumps: np.ndarray,
        throw_card: np.ndarray,
    ) -> list[Rule]:
        """Leading rules 1-4 in order (pull trumps, cash, probe, lead low); each applies only where I lead."""
        style, legal, strength, value = self.personality, cards.legal, cards.strength, cards.value
        maker_side = (view.maker >= 0) & (self.team_of_seat[np.maximum(view.maker, 0)] == 0)
        rules: list[Rule] = []
        if style.pull_trumps:
            card, applies = _pick(strength, legal & cards.is_trump & cards.safe_lead)
            rules.append((card, applies & leading & opponents_have_trumps))
        card, applies = _pick(value * 100 - strength, legal & cards.safe_lead & (value > 0))
        rules.append((card, applies & leading))
        if style.probe_as_maker:
            card, applies = _pick(strength, legal & cards.is_trump & (value == 0))
            rules.append((card, applies & leading & maker_side & opponents_have_trumps))
        rules.append((throw_card, leading))
        return rules

    def _following_rules(
        self, cards: CardFacts, trick: TrickSoFar, partner_chance: np.ndarray, throw_card: np.ndarray
    ) -> list[Rule]:
        """Following rules 1-4 in order (feed, save a point card, win points cheaply, contest); rule 5 (throw low) is
        the default. Only reached when following: the last leading rule applies wherever I lead."""
        style = self.personality
        legal, strength, value, safe_lead = cards.legal, cards.strength, cards.value, cards.safe_lead
        partner_sure = partner_chance >= style.feed_chance
        at_risk_points = np.where(safe_lead, 0, value)  # points I could lose later by keeping the card
        rules: list[Rule] = []
        feed_card, can_feed = _pick(value * 100 - strength, legal & (value > 0) & ~safe_lead)
        rules.append((feed_card, partner_sure & can_feed))
        rules.append((throw_card, partner_sure))
        card, applies = _pick(
            at_risk_points * 100 - strength, (cards.win_chance >= style.save_chance) & (at_risk_points > 0)
        )
        rules.append((card, applies))
        card, applies = _pick(at_risk_points * 100 - strength, cards.win_chance >= style.win_chance)
        rules.append((card, applies & (trick.points > 0)))
        if style.contest_points > 0:
            card, applies = _pick(strength, cards.beats_trick & (value == 0))
            rules.append((card, applies & ~trick.partner_winning & (trick.points >= style.contest_points)))
        return rules


def _safe_to_lead(
    opponents_possible: np.ndarray, is_trump: np.ndarray, strength: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(k, 52) bool cards some opponent can hold, (k, 52) bool trumps, (k, 52) int16 strengths -> (k, 52) bool safe
    to lead (no opponent can hold a higher trump, or for a non-trump a higher card of its suit or a trump), (k,) the
    strength of the highest trump an opponent can hold (-1: none)."""
    k = strength.shape[0]
    opponent_top_trump = np.where(opponents_possible & is_trump, strength, -1).max(axis=1)  # (k,)
    # highest non-trump an opponent can hold per suit: a non-trump's effective suit is its printed suit (13 columns)
    top_in_suit = np.where(opponents_possible & ~is_trump, strength, -1).reshape(k, 4, 13).max(axis=2)  # (k, 4)
    safe_lead = np.where(
        is_trump,
        strength > opponent_top_trump[:, None],
        (opponent_top_trump[:, None] < 0) & (strength > np.repeat(top_in_suit, 13, axis=1)),
    )
    return safe_lead, opponent_top_trump


def _pick(score: np.ndarray, allowed: np.ndarray) -> Rule:
    """(k, 52) scores and allowed cards -> (card, applies): the allowed card of highest score in each game (ties: the
    lowest card id), and whether any is allowed."""
    choice = np.where(allowed, score, NOT_LEGAL).argmax(axis=1)
    return choice, np.asarray(allowed.any(axis=1))


def _first_that_applies(rules: list[Rule], default: np.ndarray) -> np.ndarray:
    """(k,) card of the first rule, in list order, that applies to each game; ``default`` where none does."""
    choice = default
    for card, applies in reversed(rules):
        choice = np.where(applies, card, choice)
    return choice


def _select(view: PublicView, games: np.ndarray) -> PublicView:
    """The view of a subset of the batch."""
    fields = {name: getattr(view, name) for name in view.__dataclass_fields__ if name != "config"}
    return PublicView(config=view.config, **{name: array[games] for name, array in fields.items()})


class HeuristicAgent(RuleBasedAgent):
    """``rule:heuristic``: bids its estimate (more against opponents), pulls trumps, feeds and saves Pedros."""

    personality = HEURISTIC


class CautiousAgent(RuleBasedAgent):
    """``rule:cautious``: bids only with a margin and just what is needed, keeps its high trumps, leads low."""

    personality = CAUTIOUS


__all__ = ["CAUTIOUS", "HEURISTIC", "CautiousAgent", "HeuristicAgent", "Personality", "RuleBasedAgent"]
