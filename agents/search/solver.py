"""Alpha-beta over the remaining tricks of one fully known deal: :class:`TrickSearch`.

Seats are relative to the searcher (``0`` = me, ``1`` my left, ...), teams likewise (``0`` = mine;
with two or three players a team is a seat). Value of a search (the *objective*):

- ``points``: points my team captures from here on minus points the other teams capture (with
  three players, me against the rest: the two others act as one side);
- ``score`` (used when the search reaches the end of the deal; ``points`` otherwise): the deal's
  score change for my team minus the others' mean under the config's scoring (made or set against
  the bid, :class:`DealScoring`), from the points already captured plus those to come, so the search
  sees the cliff of a bid made or set by one point.

Beyond ``depth`` tricks the point cards still held are valued statically: a card no other team can
beat (no higher trump held elsewhere) counts for its holder's side; a contested one is shared
``contested_share`` : ``1 - contested_share`` between the holder's side and the rest.

``low="held"``: Low scores for the team whose player held the 2 of trumps when play began. Play never
moves a card between hands, so the search gives the 2 no trick value and the caller adds Low to that
team's captured points up front. This is exact, not an approximation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agents.search.tables import NO_LEAD, card_list, play_tables, trump_tables

POINT_BITS = 8  # team points packed into one int, 8 bits per team (a deal has at most 23 points)
INFINITY = float("inf")


@dataclass(frozen=True)
class DealScoring:
    """How a deal's points turn into score changes (docs/rules.md section 7), relative teams (0 = mine)."""

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
        seat = (leader + len(trick_cards)) % self.n
        by_score = self.scoring is not None and self.depth >= hands[seat].bit_count()
        counter = [0]
        node = self._node_function(hands, legal, by_score, counter)
        led, best_strength, best_seat, trick_points, alive = self._trick_so_far(hands, leader, trick_cards)
        acc = self._packed_points(captured) if by_score else 0
        values: dict[int, float] = {}
        node(
            seat, led, best_strength, best_seat, trick_points, len(trick_cards), alive, max(1, self.depth), acc,
            -INFINITY, INFINITY, values,
        )  # fmt: skip
        self.nodes += counter[0]
        return values

    def _trick_so_far(self, hands: list[int], leader: int, trick_cards: list[int]) -> tuple[int, int, int, int, int]:
        """The current trick as :meth:`_node_function`'s ``node`` takes it: ``(led, best_strength, best_seat,
        trick_points, alive)``, ``led`` :data:`NO_LEAD` and the best -1 before anyone plays, ``alive`` the
        cards in hands or in the trick."""
        beats = self.tables.beats[self.trump]
        points = self.lookups.points
        led = trick_cards[0] if trick_cards else NO_LEAD
        best_strength, best_seat, trick_points, alive = -1, -1, 0, 0
        for offset, card in enumerate(trick_cards):
            if beats[led][card] > best_strength:
                best_strength, best_seat = beats[led][card], (leader + offset) % self.n
            trick_points += points[card]
            alive |= 1 << card
        for hand in hands:
            alive |= hand
        return led, best_strength, best_seat, trick_points, alive

    def _packed_points(self, captured: list[int] | None) -> int:
        """``captured[team]`` packed into one int, :data:`POINT_BITS` per team (0 when None)."""
        packed = 0
        for team, team_points in enumerate(captured or []):
            packed += team_points << (POINT_BITS * team)
        return packed

    def _node_function(self, hands: list[int], legal: int, by_score: bool, counter: list[int]) -> Callable[..., float]:
        """The alpha-beta recursion ``node(...) -> value`` over ``hands`` (scratch space, restored on return).

        Its helpers are closures over the same lists, so the inner loop reads only local names:
        ``moves`` (:meth:`_moves_function`), ``cutoff`` at trick starts (:meth:`_cutoff_function`) and
        ``trick_end`` after a trick's last card (:meth:`_trick_end_function`, which recurses into
        ``node``). ``legal`` the root's cards; ``counter[0]`` counts the nodes visited.
        """
        n = self.n
        follow = self.tables.follow[self.trump]
        allowed = self.tables.trump_allowed[self.trump]
        beats = self.tables.beats[self.trump]
        points = self.lookups.points
        sign = self.sign
        tt = self.transpositions
        moves = self._moves_function()
        cutoff = self._cutoff_function(hands, by_score)
        key_shift = 5 + 52 * n  # the packed points go above the hands in a table key

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
            if in_trick:
                follows = hand & follow[led]
                legal_cards = follows | (hand & allowed[led]) if follows else hand
            else:
                legal_cards = hand
                if record is None:
                    key = tricks_left | seat << 3 | acc << key_shift
                    offset = 5
                    alive = 0
                    for h in hands:
                        key |= h << offset
                        offset += 52
                        alive |= h
                    settled = cutoff(key, acc, alpha, beta)
                    if settled is not None:
                        return settled
            maximizing = sign[seat] > 0
            alpha0, beta0 = alpha, beta
            best = -INFINITY if maximizing else INFINITY
            last_card = in_trick + 1 == n
            next_seat = (seat + 1) % n
            if record is not None:
                cards = card_list(legal)
            else:
                cards = moves(legal_cards, alive, seat, led, best_strength, best_seat)
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
                if last_card:
                    value = trick_end(seat_now, points_now, tricks_left, acc, alpha, beta)
                else:
                    value = node(
                        next_seat, led_now, strength_now, seat_now, points_now, in_trick + 1, alive, tricks_left,
                        acc, alpha, beta,
                    )  # fmt: skip
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

        trick_end = self._trick_end_function(hands, by_score, node)  # bound after node: the two recurse
        return node

    def _cutoff_function(self, hands: list[int], by_score: bool) -> Callable[[int, int, float, float], float | None]:
        """``cutoff(key, acc, alpha, beta)`` at a trick start with ``hands`` dealt: the value when the
        transposition table entry ``key`` or the certain / contested bounds (class docstring) settle it,
        else None. ``acc`` the packed points captured so far."""
        tt = self.transpositions
        held_points = self._held_points_function()
        final_value = self._final_value
        two_teams = self.num_teams == 2

        def cutoff(key: int, acc: int, alpha: float, beta: float) -> float | None:
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
                return None
            if contested == 0:
                return certain
            if certain + contested <= alpha:
                return certain + contested
            if certain - contested >= beta:
                return certain - contested
            return None

        return cutoff

    def _trick_end_function(
        self, hands: list[int], by_score: bool, node: Callable[..., float]
    ) -> Callable[[int, int, int, int, float, float], float]:
        """``trick_end(winner, trick_points, tricks_left, acc, alpha, beta)``: the value once a trick's last
        card is played (``tricks_left`` counting that trick): ``winner`` takes ``trick_points`` and leads
        the next trick (searched by ``node``), unless the deal ends or, objective ``points``, the depth
        runs out and the static estimate values the cards still held."""
        sign = self.sign
        shift = [POINT_BITS * t for t in self.team]  # seat -> bit offset of its team's points in the packed int
        held_points = self._held_points_function()
        final_value = self._final_value
        contested_share = 2.0 * self.contested_share - 1.0

        def trick_end(winner: int, trick_points: int, tricks_left: int, acc: int, alpha: float, beta: float) -> float:
            if by_score:
                acc_now = acc + (trick_points << shift[winner])
                if hands[winner] == 0:
                    return final_value(acc_now)
                return node(winner, NO_LEAD, -1, -1, 0, 0, 0, tricks_left - 1, acc_now, alpha, beta)
            gained = sign[winner] * trick_points
            if hands[winner] == 0:
                return gained
            if tricks_left == 1:
                certain, contested = held_points(hands, False)
                return gained + certain + contested_share * contested
            return gained + node(winner, NO_LEAD, -1, -1, 0, 0, 0, tricks_left - 1, 0, alpha - gained, beta - gained)

        return trick_end

    def _moves_function(self) -> Callable[[int, int, int, int, int, int], list[int]]:
        """``moves(legal_cards, alive, seat, led, best_strength, best_seat)``: the legal cards worth trying,
        in the class docstring's order (interchangeable cards skipped, memoised on the legal cards and
        ``alive``, the cards in hands or in the current trick)."""
        beats = self.tables.beats[self.trump]
        strength = self.lookups.strength
        feed_order = self.lookups.feed_order
        duck_order = self.lookups.duck_order
        team = self.team
        distinct = self.distinct_moves
        distinct_cards = self._distinct_cards_function()

        def moves(legal_cards: int, alive: int, seat: int, led: int, best_strength: int, best_seat: int) -> list[int]:
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

        return moves

    def _distinct_cards_function(self) -> Callable[[int, int], list[int]]:
        """``distinct_cards(legal_cards, alive)``: the cards of ``legal_cards`` less those interchangeable
        with the next card up among ``alive`` (class docstring). Cards of one effective suit are all legal
        or all not, so "next card up is in the hand" is "is legal"."""
        lookups = self.lookups
        strength = lookups.strength
        points = lookups.points
        above = lookups.above
        left_pedro_above = lookups.left_pedro_above
        left_pedro_bit = lookups.left_pedro_bit
        left_pedro_strength = lookups.left_pedro_strength

        def distinct_cards(legal_cards: int, alive: int) -> list[int]:
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

        return distinct_cards

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
