"""Perfect-information Monte Carlo search for the play phase: the ``search:pimc`` agent.

For every play decision with more than one legal card the agent

1. reads what it knows from the public view (:func:`pedro_env.view.decode_observations`, nothing
   else) and turns it into :class:`HiddenCards` constraints: the cards it has not seen, how many
   unknown cards each other seat holds, the cards it knows a seat holds (the maker's face-up draws),
   the effective suits each seat has shown void in, which cards the dead stock can hold, and how
   many trumps a seat's unknown cards can include (at most / at least; :func:`hidden_cards`);
2. draws up to ``samples`` deals of the unseen cards that satisfy all of them (:class:`HandSampler`:
   exactly uniform over the consistent deals, by counting the completions of a class-by-location
   table; a constructive fallback for positions too big to count), stopping early once the choice
   is clear or the node budget is spent;
3. solves each deal with alpha-beta over the remaining cards (:class:`TrickSearch`): to the end of
   the deal when at most ``exact`` tricks are left, else ``depth`` tricks ahead and a static
   estimate beyond, giving a value for every legal card;
4. plays the legal card with the best mean value (ties: the card with fewer points, then the weaker).

Bids, trumps and discards are delegated to ``rule:heuristic`` (:mod:`agents.rule_based`) in one
batched call. All randomness comes from the ``rng`` given to :meth:`PimcAgent.act` (one draw seeds
a ``random.Random`` for the decisions of that call), so a seeded evaluation is reproducible.

Card sets are Python ints (bit ``card`` set per member, card = suit * 13 + rank as in
:mod:`pedro_env.cards`) and the engine's :class:`~pedro_env.cards.RuleTables` are copied into Python
lists (:class:`PlayTables`, :class:`TrumpTables`), so the inner loop never touches numpy; the test
suite checks this move generator and trick winner against :mod:`pedro_env.tricks`. Seats are relative
to the viewer (``0`` = me, ``1`` my left, ...), teams likewise (``0`` = mine; with two or three players
a team is a seat).

Value of a search (the *objective*):

- ``points``: points my team captures from here on minus points the other teams capture (with
  three players, me against the rest: the two others act as one side);
- ``score`` (default, used when the search reaches the end of the deal; ``points`` otherwise): the
  deal's score change for my team minus the others' mean under the config's scoring (made or set
  against the bid), from the points already captured plus those to come, so the search sees the
  cliff of a bid made or set by one point. The transposition table then keys on the points
  captured so far.

Beyond ``depth`` tricks the point cards still held are valued statically: a card no other team can
beat (no higher trump held elsewhere) counts for its holder's side; a contested one is shared
``contested_share`` : ``1 - contested_share`` between the holder's side and the rest.

``low="held"``: Low scores for the team whose player held the 2 of trumps when play began. Play never
moves a card between hands, so that player is the one who played it or (in a sample) holds it: the
search gives the 2 no trick value, and the ``score`` objective adds Low to that team's points up
front. This is exact, not an approximation.

``renege="penalty"``: the agent never reneges; it only plays cards of the legal set (the action mask).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from agents import make_agent  # agents/__init__ imports this module only on demand, so there is no cycle
from agents.base import Agent
from pedro_env.actions import PLAY_OFFSET
from pedro_env.cards import RuleTables
from pedro_env.config import PedroConfig
from pedro_env.state import PLAY
from pedro_env.view import PublicView, decode_observations

HAND_AT_PLAY = 6  # cards every player holds when play begins
NO_LEAD = 52  # the led-card index of the trick tables when nobody has led
INFINITY = float("inf")


def card_list(card_set: int) -> list[int]:
    """Python-int card set -> its cards in increasing id order."""
    cards = []
    while card_set:
        low_bit = card_set & -card_set
        cards.append(low_bit.bit_length() - 1)
        card_set ^= low_bit
    return cards


# ---------------------------------------------------------------- rule tables as Python lists


@dataclass(frozen=True)
class PlayTables:
    """The engine's trick tables for one variant as nested Python lists, indexed ``[trump]...``.

    ``follow[t][led]`` / ``trump_allowed[t][led]`` int card sets (led 52 = nobody led);
    ``beats[t][led][card]`` strength of ``card`` in a trick led by ``led`` (-1: cannot win it);
    ``strength[t][card]`` trick strength (trumps 20..33); ``points[t][card]`` point value;
    ``trump_set[t]`` int; ``suit_set[t][s]`` int, the cards of effective suit ``s``;
    ``effective_suit[t][card]``; ``low_card[t]`` the 2 of trumps.
    """

    follow: list[list[int]]
    trump_allowed: list[list[int]]
    beats: list[list[list[int]]]
    strength: list[list[int]]
    points: list[list[int]]
    trump_set: list[int]
    suit_set: list[list[int]]
    effective_suit: list[list[int]]
    low_card: list[int]

    @staticmethod
    def from_rule_tables(tables: RuleTables) -> PlayTables:
        return PlayTables(
            follow=[[int(x) for x in row] for row in tables.follow_set],
            trump_allowed=[[int(x) for x in row] for row in tables.trump_allowed],
            beats=tables.beats.astype(int).tolist(),
            strength=tables.trick_strength.astype(int).tolist(),
            points=tables.points.astype(int).tolist(),
            trump_set=[int(x) for x in tables.trump_set],
            suit_set=[[int(x) for x in row] for row in tables.suit_set],
            effective_suit=tables.effective_suit.astype(int).tolist(),
            low_card=tables.low_card.astype(int).tolist(),
        )

    def legal_plays(self, hand: int, trump: int, led_card: int) -> int:
        """Card set the holder of ``hand`` may play; ``led_card`` -1 when leading (RULES.md section 6)."""
        led = NO_LEAD if led_card < 0 else led_card
        follows = hand & self.follow[trump][led]
        return follows | (hand & self.trump_allowed[trump][led]) if follows else hand

    def trick_winner(self, cards: list[int], leader: int, trump: int) -> int:
        """Seat winning a complete trick: ``cards[seat]`` the card each seat played, ``leader`` the seat that led."""
        strengths = self.beats[trump][cards[leader]]
        best = max(range(len(cards)), key=lambda seat: strengths[cards[seat]])
        return best


_PLAY_TABLES: dict[str, PlayTables] = {}


def play_tables(variant: str) -> PlayTables:
    """The (cached) :class:`PlayTables` of a variant."""
    if variant not in _PLAY_TABLES:
        _PLAY_TABLES[variant] = PlayTables.from_rule_tables(RuleTables.build(variant))
    return _PLAY_TABLES[variant]


# ---------------------------------------------------------------- what the viewer knows


@dataclass
class HiddenCards:
    """Constraints on the cards the viewer has not seen, for one game in the play phase.

    Locations are the other seats ``1 .. n-1`` (relative) and the dead stock (cards that never came
    into play). Lists indexed by relative seat have an unused entry 0 (the viewer's own hand is known).
    """

    unseen: int  # card set: every card the viewer has not seen (other hands' unknown cards + dead stock)
    known: list[int]  # per seat: cards known to be in that hand (the maker's unplayed face-up draws)
    hidden_counts: list[int]  # per seat: unknown cards in that hand (hand size minus known cards)
    forbidden: list[int]  # per seat: cards the seat cannot hold (effective suits it has shown void in)
    trump_caps: list[int]  # per seat: the most trumps its unknown cards can include
    trump_floors: list[int]  # per seat: the fewest trumps its unknown cards can include (the kept_trumps belief)
    dead_count: int  # cards in the dead stock
    dead_forbidden: int  # cards the dead stock cannot hold (every trump when the refill set them aside)
    trumps: int  # the trump set of this deal
    suit_sets: list[int]  # the card set of each effective suit 0..3

    @property
    def num_players(self) -> int:
        return len(self.known)

    def violations(self, hands: list[int]) -> list[str]:
        """Every constraint a full deal breaks (``hands[seat]`` for seats 1..n-1, the own hand ignored), [] if none."""
        problems = []
        n = self.num_players
        placed = 0
        for seat in range(1, n):
            hand = hands[seat]
            if hand & placed:
                problems.append(f"seat {seat} shares cards with another hand")
            placed |= hand
            if self.known[seat] & ~hand:
                problems.append(f"seat {seat} lacks a known card")
            unknown = hand & ~self.known[seat]
            if unknown & ~self.unseen:
                problems.append(f"seat {seat} holds a seen card")
            if unknown.bit_count() != self.hidden_counts[seat]:
                problems.append(
                    f"seat {seat} holds {unknown.bit_count()} unknown cards, not {self.hidden_counts[seat]}"
                )
            if hand & self.forbidden[seat]:
                problems.append(f"seat {seat} holds a card of a suit it showed void in")
            if (unknown & self.trumps).bit_count() > self.trump_caps[seat]:
                problems.append(f"seat {seat} holds more than {self.trump_caps[seat]} unknown trumps")
            if (unknown & self.trumps).bit_count() < self.trump_floors[seat]:
                problems.append(f"seat {seat} holds fewer than {self.trump_floors[seat]} unknown trumps")
        dead = self.unseen & ~placed
        if dead & self.dead_forbidden:
            problems.append("the dead stock holds a card it cannot hold")
        if dead.bit_count() != self.dead_count:
            problems.append(f"the dead stock holds {dead.bit_count()} cards, not {self.dead_count}")
        return problems


def hidden_cards(view: PublicView, game: int, tables: PlayTables, kept_trumps: bool = False) -> HiddenCards:
    """The :class:`HiddenCards` of game ``game`` of a view in the play phase (relative seats).

    Inferences, each from public facts only:

    - the maker's face-up draws (``open_draws``) stay in the maker's hand until played;
    - a seat that played off-suit without trumping holds no card of that effective suit (``voids``);
    - refill ``maker_sorted``/``top`` (not ``six_card``): every trump left in the stock after the
      refill was set aside face up, so the dead stock holds no trump; ``dealer_robs``: the dealer took
      the whole stock, so there is no dead stock (the counts give 0); ``six_card``: the stock was
      never seen and may hold anything;
    - refill ``maker_sorted``: if the maker drew more cards than its face-up trumps, the stock had no
      trump left when the maker drew, so the maker's face-down draws and every later drawer's draws
      (turn order eldest .. dealer) are non-trumps: such a seat's hand at play start held at least that
      many non-trumps, which caps the trumps among its unknown cards.

    With ``kept_trumps`` one belief about the players is added (not a rule: it holds for players who
    discard their non-trumps first, as the rule-based agents and sensible people do): a player who
    said done while the reservation rule still allowed another discard, or who discarded a trump,
    kept only trumps, so its hand at play start held at least its kept cards in trumps (the robbing
    dealer who discarded a trump kept six trumps). That floors the trumps among its unknown cards.
    """
    config = view.config
    n = config.num_players
    trump = int(view.trump[game])
    trumps = tables.trump_set[trump]
    suit_sets = tables.suit_set[trump]
    unseen = _unseen(view, game)
    maker = int(view.maker[game])
    played = [int(x) for x in view.played[game]]
    open_draws = int(view.open_draws[game])
    known = [0] * n
    if maker > 0:
        known[maker] = open_draws & ~played[maker]
    sizes = [int(x) for x in view.hand_sizes[game]]
    hidden_counts = [0] + [sizes[seat] - known[seat].bit_count() for seat in range(1, n)]
    void_bits = [int(x) for x in view.voids[game]]
    forbidden = [0] * n
    for seat in range(1, n):
        for suit in range(4):
            if void_bits[seat] >> suit & 1:
                forbidden[seat] |= suit_sets[suit]
    trump_caps = list(hidden_counts)
    if config.refill == "maker_sorted" and not config.six_card and maker >= 0:
        drawn = [int(x) for x in view.drawn[game]]
        face_up = open_draws.bit_count()
        if drawn[maker] > face_up:  # the maker found no more trumps in the stock
            dealer = int(view.dealer[game])
            draw_turn = [(seat - dealer - 1) % n for seat in range(n)]  # eldest draws first
            for seat in range(1, n):
                if draw_turn[seat] < draw_turn[maker]:
                    continue
                face_down_non_trumps = drawn[seat] - (face_up if seat == maker else 0)
                non_trumps_played = (played[seat] & ~trumps).bit_count()
                still_hidden = max(0, face_down_non_trumps - non_trumps_played)
                trump_caps[seat] = max(0, hidden_counts[seat] - still_hidden)
    trump_floors = [0] * n
    if kept_trumps and not config.six_card and maker >= 0:
        floors = _kept_trump_counts(view, game, trumps)
        for seat in range(1, n):
            from_start_hand = (played[seat] & trumps & ~open_draws).bit_count()
            trump_floors[seat] = max(0, min(floors[seat] - from_start_hand, trump_caps[seat]))
    dead_count = unseen.bit_count() - sum(hidden_counts)
    dead_forbidden = trumps if (config.refill != "dealer_robs" and not config.six_card) else 0
    return HiddenCards(
        unseen=unseen,
        known=known,
        hidden_counts=hidden_counts,
        forbidden=forbidden,
        trump_caps=trump_caps,
        trump_floors=trump_floors,
        dead_count=dead_count,
        dead_forbidden=dead_forbidden,
        trumps=trumps,
        suit_sets=list(suit_sets),
    )


def _kept_trump_counts(view: PublicView, game: int, trumps: int) -> list[int]:
    """Per relative seat, the trumps its hand kept through the discard under the ``kept_trumps`` belief
    (see :func:`hidden_cards`); 0 where the belief says nothing. The reservation rule is replayed from
    the public discard counts: no card is drawn before everyone (the robbing dealer apart) is done."""
    config = view.config
    n = config.num_players
    dealer = int(view.dealer[game])
    discards = [int(x) for x in view.discards[game]]
    kept_trumps = [0] * n
    reserved = 0
    for offset in range(1, n + 1):  # eldest first, the dealer last
        seat = (dealer + offset) % n
        if config.refill == "dealer_robs" and seat == dealer:
            kept_trumps[seat] = HAND_AT_PLAY if discards[seat] & trumps else 0
            continue
        kept = config.hand_size - discards[seat].bit_count()
        could_discard_more = kept > 0 and reserved + (HAND_AT_PLAY - (kept - 1)) <= config.stock_size
        if could_discard_more or discards[seat] & trumps:
            kept_trumps[seat] = kept
        reserved += HAND_AT_PLAY - kept
    return kept_trumps


def _unseen(view: PublicView, game: int) -> int:
    """Cards of game ``game`` the viewer has not seen (as :meth:`PublicView.unseen`, for one game)."""
    seen = int(view.hand[game]) | int(view.open_draws[game]) | int(view.set_aside[game])
    for seat in range(view.config.num_players):
        seen |= int(view.discards[game, seat]) | int(view.played[game, seat])
    return ((1 << 52) - 1) & ~seen


# ---------------------------------------------------------------- sampling consistent deals


class SamplingError(RuntimeError):
    """No deal satisfies the constraints (an inconsistency; the caller relaxes and counts it)."""


@dataclass
class _CardClass:
    """Unseen cards that may go to the same locations: ``caps[location]`` the most it may put there,
    ``floors[location]`` the fewest."""

    cards: list[int]
    caps: list[int]
    floors: list[int]


class HandSampler:
    """Uniform samples of the deals of the unseen cards that satisfy a :class:`HiddenCards`.

    The unseen cards fall into a few classes (the trump suit, and the other effective suits merged
    when the same locations may hold them). A deal is then a table ``x[class][location]`` of counts
    plus an assignment of cards within each class, and the number of deals behind one table is the
    product of the classes' multinomial coefficients. :meth:`sample` counts the completions of the
    table class by class (memoised on the locations' remaining room), draws a table with the right
    probability and shuffles each class into it: exactly uniform over the consistent deals.

    When the table has too many cells to count (``work_limit`` split evaluations), a constructive
    fallback places the cards one at a time, most constrained class first, each into a random
    location with room weighted by that room, checking after each class that the rest can still be
    placed (feasible, not exactly uniform); ``fallbacks`` counts those samples.
    """

    def __init__(self, hidden: HiddenCards, work_limit: int = 200_000) -> None:
        self.hidden = hidden
        n = hidden.num_players
        self.locations = n  # seats 1..n-1 are locations 0..n-2, the dead stock is location n-1
        self.room = tuple(hidden.hidden_counts[1:]) + (hidden.dead_count,)
        self.classes = self._classes()
        self.work_limit = work_limit
        self.work = 0
        self.fallbacks = 0
        self._completions: dict[tuple[int, tuple[int, ...]], float] = {}
        self._choices: dict[tuple[int, tuple[int, ...]], tuple[list[float], list[tuple[int, ...]]]] = {}
        self._factorial = [math.factorial(k) for k in range(53)]
        if hidden.dead_count < 0 or sum(len(c.cards) for c in self.classes) != sum(self.room):
            raise SamplingError("the unseen cards do not fill the hidden hands and the dead stock")
        self.countable = True
        try:
            total = self._count(0, self.room)
        except _TooMuchWork:
            self.countable = False
        else:
            if total == 0:
                raise SamplingError("no deal satisfies the constraints")

    def _classes(self) -> list[_CardClass]:
        hidden = self.hidden
        n = hidden.num_players
        forbidden = [hidden.forbidden[seat] for seat in range(1, n)] + [hidden.dead_forbidden]
        classes: dict[tuple[int, ...], list[int]] = {}
        trump_class: _CardClass | None = None
        for suit_set in hidden.suit_sets:
            cards = hidden.unseen & suit_set
            if not cards:
                continue
            caps = [0 if forbidden[loc] & cards else self.room[loc] for loc in range(self.locations)]
            if suit_set == hidden.trumps:
                for loc in range(n - 1):
                    caps[loc] = min(caps[loc], hidden.trump_caps[loc + 1])
                floors = [hidden.trump_floors[loc + 1] for loc in range(n - 1)] + [0]
                trump_class = _CardClass(card_list(cards), caps, floors)
            else:
                classes.setdefault(tuple(caps), []).extend(card_list(cards))
        merged = [_CardClass(cards, list(caps), [0] * self.locations) for caps, cards in classes.items()]
        if trump_class is None and any(hidden.trump_floors):
            raise SamplingError("a seat must hold trumps but no trump is unseen")
        if trump_class is not None:
            merged.append(trump_class)
        # most constrained first (fewest places, then fewest cards); the last class is placed by what is left
        merged.sort(key=lambda c: (sum(1 for cap in c.caps if cap > 0), len(c.cards)))
        return merged

    # -- counting

    def _splits(self, index: int, room: tuple[int, ...]) -> list[tuple[int, ...]]:
        """Every way to put class ``index``'s cards into locations with ``room`` (and the class's caps)."""
        card_class = self.classes[index]
        count = len(card_class.cards)
        limits = [min(cap, r) for cap, r in zip(card_class.caps, room)]
        floors = card_class.floors
        last = len(limits) - 1
        splits: list[tuple[int, ...]] = []

        def place(loc: int, left: int, prefix: list[int]) -> None:
            if loc == last:
                if floors[last] <= left <= limits[last]:
                    splits.append((*prefix, left))
                return
            rest_limit = sum(limits[loc + 1 :])
            rest_floor = sum(floors[loc + 1 :])
            for x in range(max(floors[loc], left - rest_limit), min(limits[loc], left - rest_floor) + 1):
                prefix.append(x)
                place(loc + 1, left - x, prefix)
                prefix.pop()

        place(0, count, [])
        self.work += len(splits) + 1
        if self.work > self.work_limit:
            raise _TooMuchWork
        return splits

    def _weight(self, index: int, split: tuple[int, ...]) -> float:
        """Multinomial coefficient: ways to send class ``index``'s cards to the locations in ``split``."""
        ways = self._factorial[len(self.classes[index].cards)]
        for x in split:
            ways //= self._factorial[x]
        return float(ways)

    def _count(self, index: int, room: tuple[int, ...]) -> float:
        """Number of deals of classes ``index ..`` into ``room``."""
        if index == len(self.classes):
            return 1.0 if not any(room) else 0.0
        key = (index, room)
        if key in self._completions:
            return self._completions[key]
        weights, splits = [], []
        total = 0.0
        for split in self._splits(index, room):
            rest = tuple(r - x for r, x in zip(room, split))
            ways = self._weight(index, split) * self._count(index + 1, rest)
            if ways > 0:
                total += ways
                weights.append(total)
                splits.append(split)
        self._completions[key] = total
        self._choices[key] = (weights, splits)
        return total

    # -- drawing

    def sample(self, rnd: random.Random) -> list[int]:
        """One deal: ``hands[seat]`` for seats 0..n-1 (seat 0 empty: the viewer's own cards are not sampled;
        known cards included), drawn uniformly among the consistent deals."""
        counts = self._draw_table(rnd) if self.countable else self._constructive_table(rnd)
        n = self.hidden.num_players
        hands = [0] + [self.hidden.known[seat] for seat in range(1, n)]
        for card_class, split in zip(self.classes, counts):
            cards = card_class.cards[:]
            rnd.shuffle(cards)
            start = 0
            for loc in range(n - 1):
                for card in cards[start : start + split[loc]]:
                    hands[loc + 1] |= 1 << card
                start += split[loc]
        return hands

    def _draw_table(self, rnd: random.Random) -> list[tuple[int, ...]]:
        room = self.room
        table = []
        for index in range(len(self.classes)):
            weights, splits = self._choices[(index, room)]
            pick = rnd.random() * weights[-1]
            lo, hi = 0, len(weights) - 1
            while lo < hi:  # first cumulative weight above pick
                mid = (lo + hi) // 2
                if weights[mid] > pick:
                    hi = mid
                else:
                    lo = mid + 1
            split = splits[lo]
            table.append(split)
            room = tuple(r - x for r, x in zip(room, split))
        return table

    def _constructive_table(self, rnd: random.Random) -> list[tuple[int, ...]]:
        """A feasible table placed card by card (not exactly uniform); retried until every class fits."""
        self.fallbacks += 1
        for _ in range(1000):
            room = list(self.room)
            table = []
            ok = True
            for index, card_class in enumerate(self.classes):
                split = list(card_class.floors)
                if sum(split) > len(card_class.cards) or any(
                    f > min(c, r) for f, c, r in zip(split, card_class.caps, room)
                ):
                    ok = False
                    break
                for _card in card_class.cards[sum(split) :]:
                    options = [loc for loc in range(len(room)) if split[loc] < min(card_class.caps[loc], room[loc])]
                    if not options:
                        ok = False
                        break
                    weights = [room[loc] - split[loc] for loc in options]
                    loc = rnd.choices(options, weights)[0]
                    split[loc] += 1
                if not ok:
                    break
                room = [r - x for r, x in zip(room, split)]
                table.append(tuple(split))
                if not self._feasible(index + 1, room):
                    ok = False
                    break
            if ok:
                return table
        raise SamplingError("the constructive sampler found no deal in 1000 tries")

    def _feasible(self, index: int, room: list[int]) -> bool:
        """Can classes ``index ..`` still fill ``room`` exactly? (Max-flow by Hall's condition over class subsets.)"""
        rest = self.classes[index:]
        if sum(len(c.cards) for c in rest) != sum(room):
            return False
        for mask in range(1, 1 << len(rest)):
            members = [c for bit, c in enumerate(rest) if mask >> bit & 1]
            need = sum(len(c.cards) for c in members)
            capacity = sum(min(room[loc], sum(c.caps[loc] for c in members)) for loc in range(len(room)))
            if need > capacity:
                return False
        return True


class _TooMuchWork(Exception):
    """Counting the table would take more than the work limit."""


# ---------------------------------------------------------------- solving one deal


@dataclass
class SearchStats:
    """Counters of the agent's searches (for tuning and for the report)."""

    decisions: int = 0
    samples: int = 0
    nodes: int = 0
    fallback_samples: int = 0
    relaxed: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class DealScoring:
    """How a deal's points turn into score changes (RULES.md section 7), relative teams (0 = mine)."""

    num_teams: int
    maker_team: int
    bid: int
    difference: bool  # scoring "difference" (two teams) rather than "simple"

    def value(self, team_points: list[int]) -> float:
        """My team's score change minus the mean of the other teams' for a deal ending with ``team_points``."""
        maker = self.maker_team
        if team_points[maker] >= self.bid:
            if self.difference:
                return float(team_points[0] - team_points[1])
            deltas = list(team_points)
        else:
            deltas = list(team_points)
            deltas[maker] = -self.bid
        return deltas[0] - sum(deltas[1:]) / (self.num_teams - 1)


POINT_BITS = 8  # team points packed into one int, 8 bits per team (a deal has at most 23 points)


@dataclass(frozen=True)
class TrumpTables:
    """Per (variant, trump, Low rule) lookups for the search, built once (see :func:`trump_tables`).

    ``points[card]`` trick value (0 for Low under ``low="held"``); ``point_cards`` the cards with
    points; ``point_sum`` subset of ``point_cards`` -> its points; ``strength[card]`` trick strength;
    ``trump_suit_bits`` the trumps in the trump suit's bits, where bit order is strength order;
    ``left_pedro_bit`` / ``left_pedro_strength`` the one trump outside them (0 / -1 in pitch);
    ``stronger_than[s + 1]`` the trumps stronger than strength ``s`` (s = -1 .. 33); ``above[card]``
    the cards of its effective suit stronger than it, the left Pedro left out, and
    ``left_pedro_above[card]`` whether the left Pedro is stronger too; ``feed_order[led][card]`` the
    move-order key of a card thrown to a trick led by ``led`` that my side is winning (points first,
    then the weakest); ``duck_order[led][card]`` the key of a card that loses it (weakest first,
    points last).
    """

    points: list[int]
    point_cards: int
    point_sum: dict[int, int]
    strength: list[int]
    trump_suit_bits: int
    left_pedro_bit: int
    left_pedro_strength: int
    stronger_than: list[int]
    above: list[int]
    left_pedro_above: list[bool]
    feed_order: list[list[int]]
    duck_order: list[list[int]]


_TRUMP_TABLES: dict[tuple[str, int, bool], TrumpTables] = {}


def trump_tables(variant: str, trump: int, low_held: bool) -> TrumpTables:
    """The (cached) :class:`TrumpTables` of a variant, trump suit and Low rule."""
    key = (variant, trump, low_held)
    if key in _TRUMP_TABLES:
        return _TRUMP_TABLES[key]
    tables = play_tables(variant)
    points = list(tables.points[trump])
    if low_held:
        points[tables.low_card[trump]] = 0  # Low was decided when play began
    strength = tables.strength[trump]
    trumps = tables.trump_set[trump]
    suit_of = tables.effective_suit[trump]
    left_pedro = [card for card in card_list(trumps) if card // 13 != trump]
    left_pedro_bit = 1 << left_pedro[0] if left_pedro else 0
    point_cards = sum(1 << card for card in range(52) if points[card])
    point_list = card_list(point_cards)
    point_sum: dict[int, int] = {}
    for subset in range(1 << len(point_list)):
        members = [card for k, card in enumerate(point_list) if subset >> k & 1]
        point_sum[sum(1 << card for card in members)] = sum(points[card] for card in members)
    above = [0] * 52
    left_pedro_above = [False] * 52
    for card in range(52):
        for other in card_list(tables.suit_set[trump][suit_of[card]]):
            if strength[other] > strength[card]:
                if 1 << other == left_pedro_bit:
                    left_pedro_above[card] = True
                else:
                    above[card] |= 1 << other
    beats = tables.beats[trump]
    result = TrumpTables(
        points=points,
        point_cards=point_cards,
        point_sum=point_sum,
        strength=strength,
        trump_suit_bits=trumps & ~left_pedro_bit,
        left_pedro_bit=left_pedro_bit,
        left_pedro_strength=strength[left_pedro[0]] if left_pedro else -1,
        stronger_than=[sum(1 << c for c in card_list(trumps) if strength[c] > s) for s in range(-1, 34)],
        above=above,
        left_pedro_above=left_pedro_above,
        feed_order=[[64 * points[card] - beats[led][card] for card in range(52)] for led in range(53)],
        duck_order=[[-beats[led][card] - 64 * points[card] for card in range(52)] for led in range(53)],
    )
    _TRUMP_TABLES[key] = result
    return result


class TrickSearch:
    """Alpha-beta over the remaining tricks of one fully known deal (relative seats, seat 0 = the searcher).

    ``hands[seat]`` int card sets; the current trick is ``trick_cards`` (cards in play order from
    ``leader``). :meth:`root_values` returns the value of each legal card of the seat to act.

    Objectives (module docstring): ``points`` searches ``depth`` tricks (the current one counts) and
    adds the static estimate beyond; the value is additive (points to come), so the transposition
    table (values at trick starts with their bound type) is keyed on the hands alone. ``score``, used
    when ``scoring`` is given and the search reaches the deal's end, carries the points each team has
    captured (packed ints, :data:`POINT_BITS` per team) and scores the final points with
    :class:`DealScoring`; the table is keyed on those points too. One instance serves every sample of
    a decision (the table is shared).

    Pruning, all exact: at a trick start, the point cards still held are split into *certain* ones
    (no other team holds a higher trump, so the holder's side captures them) and *contested* ones;
    the value lies between giving every contested card to the other side and giving it to mine (the
    value only grows with my side's points and falls with the others'), and is exact when nothing
    is contested: that ends or cuts the search there. Among a seat's legal cards, a card without
    points is skipped when the next card above it in its effective suit, among the cards still in
    play, is also in that hand and also without points (the two are interchangeable).

    Move order: leading, the strongest card first; following while my side wins the trick, point
    cards first (feeding), then the weakest; while the other side wins, the cheapest winning card
    first, then the weakest losing cards, point cards last.
    """

    def __init__(
        self,
        variant: str,
        trump: int,
        num_players: int,
        num_teams: int,
        depth: int,
        contested_share: float = 0.5,
        low_held: bool = False,
        scoring: DealScoring | None = None,
    ) -> None:
        self.tables = play_tables(variant)
        self.lookups = trump_tables(variant, trump, low_held)
        self.points = self.lookups.points
        self.trump = trump
        self.n = num_players
        self.num_teams = num_teams
        self.team = [seat % num_teams for seat in range(num_players)]
        self.sign = [1 if team == 0 else -1 for team in self.team]
        self.depth = depth
        self.contested_share = contested_share
        self.scoring = scoring
        self.transpositions: dict[int, tuple[float, int]] = {}
        self.final_values: dict[int, float] = {}
        self.distinct_moves: dict[int, list[int]] = {}  # (legal cards, cards in play) -> cards worth trying
        self.nodes = 0

    def root_values(
        self, hands: list[int], leader: int, trick_cards: list[int], legal: int, captured: list[int] | None = None
    ) -> dict[int, float]:
        """Value of each card of ``legal`` for the seat to act (seat ``(leader + len(trick_cards)) % n``).

        ``captured[team]``: points each team has already captured (only the ``score`` objective uses
        them). ``hands`` is used as scratch space and restored.
        """
        n = self.n
        trump = self.trump
        follow = self.tables.follow[trump]
        allowed = self.tables.trump_allowed[trump]
        beats = self.tables.beats[trump]
        lookups = self.lookups
        strength = lookups.strength
        points = lookups.points
        above = lookups.above
        left_pedro_above = lookups.left_pedro_above
        left_pedro_bit = lookups.left_pedro_bit
        left_pedro_strength = lookups.left_pedro_strength
        feed_order = lookups.feed_order
        duck_order = lookups.duck_order
        sign = self.sign
        team = self.team
        tt = self.transpositions
        held_points = self._held_points_function()
        final_value = self._final_value
        contested_share = 2.0 * self.contested_share - 1.0
        counter = [0]
        distinct = self.distinct_moves
        tricks_to_play = hands[(leader + len(trick_cards)) % n].bit_count()
        by_score = self.scoring is not None and self.depth >= tricks_to_play
        two_teams = self.num_teams == 2
        shift = [POINT_BITS * t for t in team]  # seat -> bit offset of its team's points in the packed int
        key_shift = 5 + 52 * n  # the packed points go above the hands in a table key

        def moves(
            legal_cards: int, hand: int, alive: int, seat: int, led: int, best_strength: int, best_seat: int
        ) -> list[int]:
            """The legal cards worth trying, in the class docstring's order (interchangeable cards skipped)."""
            if not legal_cards & (legal_cards - 1):
                return [legal_cards.bit_length() - 1]
            cache_key = legal_cards | alive << 52
            cards = distinct.get(cache_key)
            if cards is None:
                cards = distinct[cache_key] = distinct_cards(legal_cards, alive)
            if len(cards) > 1:
                if best_seat < 0:
                    return sorted(cards, key=strength.__getitem__, reverse=True)
                if team[best_seat] == team[seat]:
                    return sorted(cards, key=feed_order[led].__getitem__, reverse=True)
                order = beats[led]
                winners = [card for card in cards if order[card] > best_strength]
                losers = sorted(
                    (card for card in cards if order[card] <= best_strength) if winners else cards,
                    key=duck_order[led].__getitem__,
                    reverse=True,
                )
                if winners:
                    winners.sort(key=order.__getitem__)
                    return winners + losers
                return losers
            return cards

        def distinct_cards(legal_cards: int, alive: int) -> list[int]:
            """The cards of ``legal_cards`` less those interchangeable with the next card up (see the class
            docstring). Cards of one effective suit are all legal or all not, so "next card up is in the
            hand" is "is legal"."""
            cards = []
            rest = legal_cards
            while rest:
                bit = rest & -rest
                rest ^= bit
                card = bit.bit_length() - 1
                if not points[card]:
                    higher = alive & above[card]
                    next_bit = higher & -higher
                    if left_pedro_above[card] and alive & left_pedro_bit:
                        if not next_bit or strength[next_bit.bit_length() - 1] > left_pedro_strength:
                            next_bit = left_pedro_bit
                    if next_bit & legal_cards and not points[next_bit.bit_length() - 1]:
                        continue
                cards.append(card)
            return cards

        def node(
            seat: int,
            led: int,
            best_strength: int,
            best_seat: int,
            trick_points: int,
            in_trick: int,
            alive: int,
            tricks_left: int,
            acc: int,
            alpha: float,
            beta: float,
            record: dict[int, float] | None = None,
        ) -> float:
            """Value with ``seat`` to act; ``led`` the led card (NO_LEAD at a trick start), ``best_*`` the
            trick's winning strength and seat so far, ``alive`` the cards in hands or in the current trick,
            ``acc`` the packed points captured so far (``score`` objective; 0 otherwise). With ``record``
            (the root) every card of ``legal`` gets its exact value stored there and nothing is cut."""
            counter[0] += 1
            hand = hands[seat]
            key = 0
            if in_trick == 0 and record is None:
                key = tricks_left | seat << 3 | acc << key_shift
                offset = 5
                alive = 0
                for h in hands:
                    key |= h << offset
                    offset += 52
                    alive |= h
                entry = tt.get(key)
                if entry is not None:
                    value, bound = entry
                    if bound == 0 or (bound > 0 and value >= beta) or (bound < 0 and value <= alpha):
                        return value
                certain, contested = held_points(hands, by_score)
                if by_score:
                    if contested == 0:
                        return final_value(acc + certain)
                    if two_teams:
                        upper = final_value(acc + certain + contested)
                        if upper <= alpha:
                            return upper
                        lower = final_value(acc + certain + (contested << POINT_BITS))
                        if lower >= beta:
                            return lower
                else:
                    if contested == 0:
                        return certain
                    if certain + contested <= alpha:
                        return certain + contested
                    if certain - contested >= beta:
                        return certain - contested
                legal_cards = hand
            elif in_trick == 0:
                legal_cards = hand
            else:
                follows = hand & follow[led]
                legal_cards = follows | (hand & allowed[led]) if follows else hand
            maximizing = sign[seat] > 0
            alpha0, beta0 = alpha, beta
            best = -INFINITY if maximizing else INFINITY
            last_card = in_trick + 1 == n
            next_seat = (seat + 1) % n
            if record is not None:
                cards = card_list(legal)
            else:
                cards = moves(legal_cards, hand, alive, seat, led, best_strength, best_seat)
            for card in cards:
                hands[seat] = hand ^ (1 << card)
                # play the card: update the trick's led card, winner and points
                if in_trick == 0:
                    led_now, strength_now, seat_now = card, beats[card][card], seat
                else:
                    led_now = led
                    strength_now = beats[led][card]
                    if strength_now > best_strength:
                        seat_now = seat
                    else:
                        strength_now, seat_now = best_strength, best_seat
                points_now = trick_points + points[card]
                if not last_card:
                    value = node(
                        next_seat, led_now, strength_now, seat_now, points_now, in_trick + 1, alive, tricks_left,
                        acc, alpha, beta,
                    )  # fmt: skip
                elif by_score:
                    acc_now = acc + (points_now << shift[seat_now])
                    if hands[seat_now] == 0:
                        value = final_value(acc_now)
                    else:
                        value = node(seat_now, NO_LEAD, -1, -1, 0, 0, 0, tricks_left - 1, acc_now, alpha, beta)
                else:
                    gained = sign[seat_now] * points_now
                    if hands[seat_now] == 0:
                        value = gained
                    elif tricks_left == 1:
                        certain, contested = held_points(hands, False)
                        value = gained + certain + contested_share * contested
                    else:
                        value = gained + node(
                            seat_now, NO_LEAD, -1, -1, 0, 0, 0, tricks_left - 1, 0, alpha - gained, beta - gained
                        )
                hands[seat] = hand
                if record is not None:
                    record[card] = value
                    continue
                if maximizing:
                    if value > best:
                        best = value
                        if best > alpha:
                            alpha = best
                else:
                    if value < best:
                        best = value
                        if best < beta:
                            beta = best
                if alpha >= beta:
                    break
            if in_trick == 0 and record is None:
                tt[key] = (best, 0 if alpha0 < best < beta0 else (1 if best >= beta0 else -1))
            return best

        seat = (leader + len(trick_cards)) % n
        tricks_left = max(1, self.depth)
        led = trick_cards[0] if trick_cards else NO_LEAD
        best_strength, best_seat, trick_points, alive = -1, -1, 0, 0
        for offset, card in enumerate(trick_cards):
            if beats[led][card] > best_strength:
                best_strength, best_seat = beats[led][card], (leader + offset) % n
            trick_points += points[card]
            alive |= 1 << card
        for h in hands:
            alive |= h
        acc = 0
        if by_score:
            for t, team_points in enumerate(captured or [0] * self.num_teams):
                acc += team_points << (POINT_BITS * t)
        values: dict[int, float] = {}
        node(
            seat, led, best_strength, best_seat, trick_points, len(trick_cards), alive, tricks_left, acc,
            -INFINITY, INFINITY, values,
        )  # fmt: skip
        self.nodes += counter[0]
        return values

    def _final_value(self, packed_points: int) -> float:
        """The :class:`DealScoring` value of a deal ending with these packed team points (memoised)."""
        value = self.final_values.get(packed_points)
        if value is None:
            assert self.scoring is not None
            mask = (1 << POINT_BITS) - 1
            team_points = [packed_points >> (POINT_BITS * t) & mask for t in range(self.num_teams)]
            value = self.final_values[packed_points] = self.scoring.value(team_points)
        return value

    def _held_points_function(self) -> Callable[[list[int], bool], tuple[int, int]]:
        """``held_points(hands, packed) -> (certain, contested)`` over the point cards still held.

        A point card is *certain* for its holder's team when no other team holds a higher trump (its trick
        is won by that team), else *contested*. ``certain`` is my side's certain points minus the others'
        (``packed``: each team's certain points packed, :data:`POINT_BITS` per team); ``contested`` the
        points that may go either way.
        """
        lookups = self.lookups
        strength = lookups.strength
        suit_bits = lookups.trump_suit_bits
        left_pedro_bit = lookups.left_pedro_bit
        left_pedro_strength = lookups.left_pedro_strength
        stronger_than = lookups.stronger_than
        point_sum = lookups.point_sum
        point_cards = lookups.point_cards
        teams = self.num_teams
        n = self.n

        def top_trump(cards: int) -> int:
            """Strength of the highest trump in ``cards`` (-1 if none): bit order is strength order in the
            trump suit, and the left Pedro sits just below the right one."""
            suit_trumps = cards & suit_bits
            top = strength[suit_trumps.bit_length() - 1] if suit_trumps else -1
            return left_pedro_strength if cards & left_pedro_bit and top < left_pedro_strength else top

        def two_teams(hands: list[int], packed: bool) -> tuple[int, int]:
            mine, theirs = (hands[0] | hands[2], hands[1] | hands[3]) if n == 4 else (hands[0], hands[1])
            my_points, their_points = mine & point_cards, theirs & point_cards
            my_safe = point_sum[my_points & stronger_than[top_trump(theirs) + 1]] if my_points else 0
            their_safe = point_sum[their_points & stronger_than[top_trump(mine) + 1]] if their_points else 0
            contested = point_sum[my_points] + point_sum[their_points] - my_safe - their_safe
            return (my_safe + (their_safe << POINT_BITS) if packed else my_safe - their_safe), contested

        def any_teams(hands: list[int], packed: bool) -> tuple[int, int]:
            tops = [top_trump(hand) for hand in hands]  # one seat per team
            certain = contested = 0
            for team, hand in enumerate(hands):
                held = hand & point_cards
                if held:
                    safe = point_sum[held & stronger_than[max(tops[:team] + tops[team + 1 :]) + 1]]
                    certain += safe << (POINT_BITS * team) if packed else (safe if team == 0 else -safe)
                    contested += point_sum[held] - safe
            return certain, contested

        return two_teams if teams == 2 else any_teams


# ---------------------------------------------------------------- the agent


class PimcAgent(Agent):
    """``search:pimc``: perfect-information Monte Carlo in the play phase, the heuristic agent elsewhere.

    Options (spec ``search:pimc,samples=24,depth=3,...``; the defaults were tuned against
    ``rule:heuristic`` in duplicate and keep a match to 62 well under 30 s on one core):

    - ``samples`` (24): most deals drawn per decision;
    - ``min_samples`` (4) and ``confidence`` (2.0): stop drawing once the best card beats every other
      by ``confidence`` standard errors of their mean paired difference (or ties it in every sample);
      ``confidence=0`` always draws ``samples``;
    - ``max_nodes`` (150000): also stop once the searches of a decision have visited this many nodes
      (after ``min_samples``), which bounds the rare very hard positions;
    - ``depth`` (3): tricks searched (the current one counts), the static estimate beyond;
    - ``exact`` (5): search to the end of the deal whenever at most this many tricks are left;
    - ``objective`` (``score``): ``score`` or ``points`` (module docstring); ``score`` applies when the
      search reaches the end of the deal, ``points`` otherwise;
    - ``kept_trumps`` (true): the discard belief of :func:`hidden_cards`;
    - ``contested_share`` (0.5): the share of a contested point card the static estimate gives its
      holder's side (0.5: contested cards count for nobody);
    - ``heuristic`` (``rule:heuristic``): the agent spec for bids, trumps and discards.

    ``stats`` (:class:`SearchStats`) counts decisions, samples, nodes, constructive-fallback samples and
    relaxed constraints.
    """

    def __init__(
        self,
        config: PedroConfig,
        samples: int = 24,
        depth: int = 3,
        exact: int = 5,
        objective: str = "score",
        kept_trumps: bool = True,
        min_samples: int = 4,
        confidence: float = 2.0,
        max_nodes: int = 150_000,
        contested_share: float = 0.5,
        heuristic: str = "rule:heuristic",
    ) -> None:
        super().__init__(config)
        if int(samples) < 1 or int(depth) < 1:
            raise ValueError(f"samples and depth must be >= 1, got samples={samples}, depth={depth}")
        if objective not in ("points", "score"):
            raise ValueError(f"objective must be 'points' or 'score', got {objective!r}")
        self.samples = int(samples)
        self.depth = int(depth)
        self.exact = max(int(exact), self.depth)
        self.objective = objective
        self.kept_trumps = bool(kept_trumps)
        self.min_samples = max(2, int(min_samples))
        self.confidence = float(confidence)
        self.max_nodes = int(max_nodes)
        self.contested_share = float(contested_share)
        self.tables = play_tables(config.variant)
        self.stats = SearchStats()
        self.heuristic = make_agent(heuristic, config)

    def act(self, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        observations = np.asarray(observations)
        if observations.ndim == 1:
            observations = observations[None, :]
        action_masks = np.asarray(action_masks).reshape(observations.shape[0], -1)
        view = decode_observations(observations, self.config)
        actions = np.zeros(observations.shape[0], dtype=np.int64)
        playing = view.phase == PLAY
        others = np.flatnonzero(~playing)
        if others.size:
            actions[others] = self.heuristic.act(observations[others], action_masks[others], rng)
        games = np.flatnonzero(playing)
        if games.size:
            rnd = random.Random(int(rng.integers(2**63)))
            for game in games:
                actions[game] = PLAY_OFFSET + self.choose_card(view, int(game), action_masks[game], rnd)
        return actions

    def choose_card(self, view: PublicView, game: int, action_mask: np.ndarray, rnd: random.Random) -> int:
        """The card to play in game ``game`` of ``view`` (its phase is PLAY)."""
        legal = sum(1 << int(card) for card in np.flatnonzero(action_mask[PLAY_OFFSET:]))
        cards = card_list(legal)
        if len(cards) == 1:
            return cards[0]
        self.stats.decisions += 1
        trump = int(view.trump[game])
        n = self.config.num_players
        hidden = hidden_cards(view, game, self.tables, self.kept_trumps)
        sampler = self._sampler(hidden)
        leader = int(view.trick_leader[game])
        trick_cards: list[int] = []
        for offset in range(n):
            seat = (leader + offset) % n
            card = int(view.trick[game, seat])
            if card < 0:
                break
            trick_cards.append(card)
        teams = self.config.num_teams
        low_held = self.config.low == "held"
        scoring = None
        if self.objective == "score":
            maker = int(view.maker[game])
            scoring = DealScoring(teams, maker % teams, int(view.high_bid[game]), self.config.scoring == "difference")
        my_hand = int(view.hand[game])
        tricks_left = my_hand.bit_count()  # counting the current trick: I have not played to it yet
        depth = tricks_left if tricks_left <= self.exact else self.depth
        search = TrickSearch(self.config.variant, trump, n, teams, depth, self.contested_share, low_held, scoring)
        captured = [sum(search.points[card] for card in card_list(int(won))) for won in view.won[game]]
        low_bit = 1 << self.tables.low_card[trump]
        low_played_by = [seat for seat in range(n) if int(view.played[game, seat]) & low_bit]
        history: dict[int, list[float]] = {card: [] for card in cards}
        used = 0
        for used in range(1, self.samples + 1):
            hands = sampler.sample(rnd)
            hands[0] = my_hand
            deal_points = captured
            if low_held and scoring is not None:  # Low scores for the team of the seat that held it at play start
                holders = low_played_by or [seat for seat in range(n) if hands[seat] & low_bit]
                if holders:
                    deal_points = list(captured)
                    deal_points[holders[0] % teams] += 1
            values = search.root_values(hands, leader, trick_cards, legal, deal_points)
            for card, value in values.items():
                history[card].append(value)
            if used >= self.min_samples and (search.nodes >= self.max_nodes or self._settled(history)):
                break
        self.stats.samples += used
        self.stats.nodes += search.nodes
        self.stats.fallback_samples += sampler.fallbacks
        strength = self.tables.strength[trump]
        points = self.tables.points[trump]
        # best mean value; ties to the card that gives away the least (fewest points, then weakest)
        return max(cards, key=lambda card: (round(sum(history[card]), 6), -points[card], -strength[card]))

    def _settled(self, history: dict[int, list[float]]) -> bool:
        """Whether more samples would hardly change the choice: the best card's values beat every other card's,
        paired by sample, by ``confidence`` standard errors of the mean difference (or equal them in every sample)."""
        if self.confidence <= 0:
            return False
        best = max(history, key=lambda card: sum(history[card]))
        best_values = history[best]
        count = len(best_values)
        for card, values in history.items():
            if card == best:
                continue
            differences = [b - v for b, v in zip(best_values, values)]
            mean = sum(differences) / count
            if mean == 0 and not any(differences):
                continue  # interchangeable in every sample so far
            variance = sum((d - mean) ** 2 for d in differences) / (count - 1)
            if mean <= self.confidence * math.sqrt(variance / count):
                return False
        return True

    def _sampler(self, hidden: HiddenCards) -> HandSampler:
        """A sampler for ``hidden``; constraints that leave no deal are dropped one kind at a time (counted)."""
        try:
            return HandSampler(hidden)
        except SamplingError:
            pass
        relaxations = [
            ("kept_trumps", lambda h: setattr(h, "trump_floors", [0] * h.num_players)),
            ("trump_caps", lambda h: setattr(h, "trump_caps", list(h.hidden_counts))),
            ("dead_stock", lambda h: setattr(h, "dead_forbidden", 0)),
            ("voids", lambda h: setattr(h, "forbidden", [0] * h.num_players)),
        ]
        for name, relax in relaxations:
            self.stats.relaxed[name] = self.stats.relaxed.get(name, 0) + 1
            relax(hidden)
            try:
                return HandSampler(hidden)
            except SamplingError:
                continue
        raise SamplingError("the unseen cards cannot fill the hands even without constraints")
