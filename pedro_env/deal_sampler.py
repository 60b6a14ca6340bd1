"""Deals of the unseen cards drawn uniformly among those consistent with a :class:`HiddenCards`.

A deal is ``hands[seat]`` for relative seats 0..n-1 (int card sets, seat 0 left empty: the viewer's
own hand is not sampled); the cards not in a hand lie in the dead stock. :class:`HandSampler`
counts the completions of a class-by-location table to sample exactly uniformly, with a
constructive fallback for positions too big to count; :class:`SamplingError` says no deal fits.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from pedro_env.cards import set_to_list as card_list
from pedro_env.knowledge import HiddenCards


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


def relaxed_sampler(hidden: HiddenCards, relaxed: dict[str, int]) -> HandSampler:
    """A sampler for ``hidden``; constraints that leave no deal are dropped one kind at a time, each drop
    counted in ``relaxed`` (kind -> count)."""
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
        relaxed[name] = relaxed.get(name, 0) + 1
        relax(hidden)
        try:
            return HandSampler(hidden)
        except SamplingError:
            continue
    raise SamplingError("the unseen cards cannot fill the hands even without constraints")
