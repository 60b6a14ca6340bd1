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

import numpy as np
from numba import njit

from agents.search.move_order import beats, order_moves
from agents.search.tables import (
    L_POINTS,
    NO_LEAD,
    S_BID,
    S_BY_SCORE,
    S_MAKER_TEAM,
    S_PLAYERS,
    S_SIGN,
    S_SIMPLE,
    S_SIZE,
    S_TEAM_OF_SEAT,
    S_TEAMS,
    S_TRUMP,
    card_list,
    search_tables,
)
from agents.search.transposition import TABLE_ENTRY, TABLE_START, grown_table, slot_of, store_entry
from agents.search.values import POINT_BITS, DealScoring, final_value, held_points
from pedro_env.cards import RuleTables
from pedro_env.kernels.bits import card_bit, lowest_card
from pedro_env.kernels.tricks import legal_play_set, trick_winner_at

MAX_MOVES = 16  # cards of one hand a frame tries (six at play in every variant; room to spare)


# a search frame, one per card played since the root (the explicit stack of _root_values): the node's position,
# then the search at the node
FRAME = np.dtype(
    [
        ("seat", np.int64),  # the relative seat to act
        ("led", np.int64),  # the card led to this trick (NO_LEAD at a trick start)
        ("best_strength", np.int64),  # the strength of the card winning the trick so far (-1: none)
        ("best_seat", np.int64),  # the seat that played it (-1: none)
        ("trick_points", np.int64),  # trick value of the cards played to the trick
        ("in_trick", np.int64),  # cards played to the trick
        ("tricks_left", np.int64),  # tricks still to search, this one included
        ("acc", np.int64),  # objective score: the points each team captured, POINT_BITS per team
        ("alive", np.uint64),  # the cards in hands when the trick started
        ("hand", np.uint64),  # the seat's hand at the node
        ("table_key", np.uint64, 5),  # at a trick start: the four hands, then tricks_left | seat << 8 | acc << 16
        ("alpha", np.float64),  # the window, narrowed as the cards tried are answered
        ("beta", np.float64),
        ("alpha0", np.float64),  # the window the node opened with (the bound type of its table entry)
        ("beta0", np.float64),
        ("best", np.float64),  # the best value of the cards answered so far
        ("count", np.int64),  # cards to try
        ("next", np.int64),  # the next of them to try
        ("gained", np.int64),  # objective points: what the trick of the card being tried gained for my side
        ("moves", np.int64, MAX_MOVES),  # the cards to try, in search order
        ("keys", np.int64, MAX_MOVES),  # their sort keys (scratch)
    ],
    align=True,
)
MAX_PLY = 32  # cards in hands at play, plus one


# ---------------------------------------------------------------------- the search


@njit(cache=True, _nrt=False, inline="always")
def _start_trick(frame, seat, tricks_left, acc, alpha, beta):
    """Write a trick start's position into ``frame``: ``seat`` leads, ``tricks_left`` tricks to search."""
    frame.seat, frame.led, frame.best_strength, frame.best_seat = seat, NO_LEAD, -1, -1
    frame.trick_points, frame.in_trick, frame.alive = 0, 0, np.uint64(0)
    frame.tricks_left, frame.acc, frame.alpha, frame.beta = tricks_left, acc, alpha, beta


@njit(cache=True, _nrt=False, inline="always")
def _after_card(frame, child, card, n, trump, look, tab):
    """Write into ``child`` the position after ``frame``'s seat plays ``card``, as if the trick went on (the
    caller starts the next trick when ``child.in_trick == n``)."""
    if frame.in_trick == 0:
        led, strength, seat = card, beats(tab, trump, card, card), frame.seat
    else:
        led, strength, seat = frame.led, beats(tab, trump, frame.led, card), frame.seat
        if strength <= frame.best_strength:
            strength, seat = frame.best_strength, frame.best_seat
    child.seat = frame.seat + 1 if frame.seat + 1 < n else 0
    child.led, child.best_strength, child.best_seat = led, strength, seat
    child.trick_points, child.in_trick = frame.trick_points + look[L_POINTS + card], frame.in_trick + 1
    child.alive, child.tricks_left, child.acc = frame.alive, frame.tricks_left, frame.acc
    child.alpha, child.beta = frame.alpha, frame.beta


@njit(cache=True, _nrt=False, inline="always")
def _enter(frames, d, hands, table, params, look, tab, points, delta):
    """Open the node of frame ``d``, whose position the caller wrote: ``(True, value)`` when the transposition
    table or the certain / contested bounds settle it at a trick start, else ``(False, 0.0)`` with the frame's
    cards to try in its ``moves`` and its search fields reset."""
    frame = frames[d]
    hand = hands[frame.seat]
    frame.hand = hand
    if frame.in_trick:
        legal_cards = legal_play_set(hand, params[S_TRUMP], frame.led, tab)
    else:
        legal_cards = hand
        key = frame.table_key
        key[0], key[1], key[2], key[3] = hands[0], hands[1], hands[2], hands[3]
        key[4] = np.uint64(frame.tricks_left | frame.seat << 8 | frame.acc << 16)
        frame.alive = hands[0] | hands[1] | hands[2] | hands[3]
        settled, value = _settled_at_trick_start(frame, hands, table, params, look, points, delta)
        if settled:
            return True, value
    frame.count = order_moves(frame, legal_cards, params, look, tab)
    _open_window(frame, params)
    return False, 0.0


@njit(cache=True, _nrt=False, inline="always")
def _open_window(frame, params):
    """Reset ``frame``'s search: no card tried, its window kept as it opened, nothing answered yet."""
    frame.next, frame.gained = 0, 0
    frame.alpha0, frame.beta0 = frame.alpha, frame.beta
    frame.best = -np.inf if params[S_SIGN + frame.seat] > 0 else np.inf


@njit(cache=True, _nrt=False, inline="always")
def _settled_at_trick_start(frame, hands, table, params, look, points, delta):
    """``(True, value)`` when the transposition table or the bounds of the point cards still held (certain /
    contested, TrickSearch) settle ``frame``'s trick start within its window, else ``(False, 0.0)``."""
    alpha, beta, acc = frame.alpha, frame.beta, frame.acc
    entry = table[slot_of(table, frame.table_key)]
    if entry.used:
        value, bound = entry.value, entry.bound
        if bound == 0 or (bound == 1 and value >= beta) or (bound == -1 and value <= alpha):
            return True, value
    by_score = params[S_BY_SCORE] != 0
    certain, contested = held_points(hands, by_score, params, look)
    if by_score:
        if contested == 0:
            return True, final_value(acc + certain, params, points, delta)
        if params[S_TEAMS] == 2:
            upper = final_value(acc + certain + contested, params, points, delta)
            if upper <= alpha:
                return True, upper
            lower = final_value(acc + certain + (contested << POINT_BITS), params, points, delta)
            if lower >= beta:
                return True, lower
    else:
        if contested == 0:
            return True, float(certain)
        if certain + contested <= alpha:
            return True, float(certain + contested)
        if certain - contested >= beta:
            return True, float(certain - contested)
    return False, 0.0


@njit(cache=True, _nrt=False, inline="always")
def _play_next(frames, d, hands, trick_cards, counter, table, params, look, tab, spread, points, delta):
    """Play frame ``d``'s next card: ``(True, 0.0)`` when it opens frame ``d + 1`` (the search goes on there),
    else ``(False, value)``, the card's value (the deal's or the depth's end, or a node settled at once)."""
    n, trump = params[S_PLAYERS], params[S_TRUMP]
    frame, child = frames[d], frames[d + 1]
    card = frame.moves[frame.next]
    frame.next += 1
    tricks_left = frame.tricks_left
    hands[frame.seat] = frame.hand ^ card_bit(card)
    trick_cards[tricks_left * 4 + frame.seat] = card
    _after_card(frame, child, card, n, trump, look, tab)
    gained = 0
    if child.in_trick == n:  # the trick's last card: its winner takes the points and leads the next
        winner = trick_winner_at(trick_cards, tricks_left * 4, n, child.seat, trump, tab)
        if params[S_BY_SCORE]:
            acc = frame.acc + (child.trick_points << (POINT_BITS * params[S_TEAM_OF_SEAT + winner]))
            if hands[winner] == 0:
                return False, final_value(acc, params, points, delta)
            _start_trick(child, winner, tricks_left - 1, acc, frame.alpha, frame.beta)
        else:
            gained = params[S_SIGN + winner] * child.trick_points
            if hands[winner] == 0:
                return False, float(gained)
            if tricks_left == 1:
                certain, contested = held_points(hands, False, params, look)
                return False, (gained + certain) + spread * contested
            _start_trick(child, winner, tricks_left - 1, 0, frame.alpha - gained, frame.beta - gained)
    settled, value = _enter(frames, d + 1, hands, table, params, look, tab, points, delta)
    counter[0] += 1
    if settled:
        return False, gained + value
    frame.gained = gained
    return True, 0.0


@njit(cache=True, _nrt=False, inline="always")
def _answer(frame, value, params):
    """Take ``value`` for ``frame``'s last card tried into its best value and window (a cut ends the frame)."""
    if params[S_SIGN + frame.seat] > 0:
        if value > frame.best:
            frame.best = value
            if value > frame.alpha:
                frame.alpha = value
    else:
        if value < frame.best:
            frame.best = value
            if value < frame.beta:
                frame.beta = value
    if frame.alpha >= frame.beta:
        frame.next = frame.count


@njit(cache=True, _nrt=False)
def _search(frames, d, hands, trick_cards, counter, table, table_count, params, look, tab, spread, points, delta,
            out):  # fmt: skip
    """Run the search of :func:`_root_values` from frame ``d`` until the root's frame is done (returns -1) or the
    transposition table must grow before frame ``d`` can be stored (returns ``d``, to resume from there)."""
    while True:
        frame = frames[d]
        if frame.next < frame.count:
            opened, value = _play_next(frames, d, hands, trick_cards, counter, table, params, look, tab, spread,
                                       points, delta)  # fmt: skip
            if opened:
                d += 1
                continue
        else:  # frame d is done: store a trick start's value, hand it to the frame below
            if d == 0:
                return -1
            best = frame.best
            if frame.in_trick == 0:
                if 2 * (table_count[0] + 1) > table.shape[0]:
                    return d  # the table must grow first; the frame is stored when the search resumes here
                bound = 0 if frame.alpha0 < best < frame.beta0 else (1 if best >= frame.beta0 else -1)
                store_entry(table, table_count, frame.table_key, best, bound)
            d -= 1
            frame = frames[d]
            value = frame.gained + best
        # frame d's last card is answered with ``value``
        hands[frame.seat] = frame.hand
        if d == 0:
            out[frame.moves[frame.next - 1]] = value
        else:
            _answer(frame, value, params)


@njit(cache=True)
def _root_values(hands, leader, trick, legal, tricks_left, acc, counter, table, table_count, params, look, tab,
                 spread, out):  # fmt: skip
    """Fill ``out[card]`` with the exact value of every card of ``legal`` (uint64) for the seat after ``trick``'s
    cards (play order from ``leader``; -1 entries unused); returns the transposition table (TABLE_ENTRY,
    ``table_count[0]`` its entries), a new one when it had to grow; ``counter[0]`` gains the nodes visited.

    Alpha-beta (TrickSearch docstring) with an explicit stack of frames (FRAME), one per card played since the
    root: a frame tries its cards in order; a card either ends the search there (a deal's end, the depth's end,
    a settled trick start) or opens the next frame, whose best value comes back to it (plus the points its trick
    gained, objective ``points``). ``hands`` (4,) uint64 is scratch space, restored on return."""
    trick_cards = np.zeros((tricks_left + 1) * 4, dtype=np.int64)  # [tricks_left * 4 + seat]: the tricks in play
    frames = np.zeros(MAX_PLY, dtype=FRAME)
    points = np.zeros(params[S_TEAMS], dtype=np.int64)
    delta = np.zeros(params[S_TEAMS], dtype=np.int64)
    root = frames[0]
    root_seat = _root_position(root, hands, leader, trick, tricks_left, acc, trick_cards, params, look, tab)
    # every legal card in increasing order, nothing cut
    count = 0
    rest = legal
    while rest:
        card = lowest_card(rest)
        rest ^= card_bit(card)
        root.moves[count] = card
        count += 1
    root.hand, root.count = hands[root_seat], count
    root.alpha, root.beta = -np.inf, np.inf
    _open_window(root, params)
    counter[0] += 1
    d = 0
    while True:
        d = _search(frames, d, hands, trick_cards, counter, table, table_count, params, look, tab, spread, points,
                    delta, out)  # fmt: skip
        if d < 0:
            break
        table = grown_table(table)
    return table


@njit(cache=True, _nrt=False)
def _root_position(root, hands, leader, trick, tricks_left, acc, trick_cards, params, look, tab):
    """Write the root's position into frame ``root`` (the trick so far, ``trick``'s cards in play order from
    ``leader``, -1 entries unused) and the trick into ``trick_cards``; returns the seat to act."""
    n, trump = params[S_PLAYERS], params[S_TRUMP]
    led, best_strength, best_seat, trick_points = NO_LEAD, -1, -1, 0
    alive = hands[0] | hands[1] | hands[2] | hands[3]
    in_trick = 0
    for offset in range(n):
        card = trick[offset]
        if card < 0:
            break
        if offset == 0:
            led = card
        seat = (leader + offset) % n
        strength = beats(tab, trump, led, card)
        if strength > best_strength:
            best_strength, best_seat = strength, seat
        trick_points += look[L_POINTS + card]
        alive |= card_bit(card)
        trick_cards[tricks_left * 4 + seat] = card
        in_trick += 1
    root.seat = (leader + in_trick) % n
    root.led, root.best_strength, root.best_seat = led, best_strength, best_seat
    root.trick_points, root.in_trick, root.alive = trick_points, in_trick, alive
    root.tricks_left, root.acc = tricks_left, acc
    return root.seat


class TrickSearch:
    """Alpha-beta over the remaining tricks of one fully known deal (relative seats, seat 0 = the searcher).

    ``hands[seat]`` int card sets; the current trick is ``trick_cards`` (cards in play order from
    ``leader``). :meth:`root_values` returns the value of each legal card of the seat to act. The search
    is compiled (:func:`_root_values`); it reads the rules from the engine's kernels (legal plays
    :func:`~pedro_env.kernels.tricks.legal_play_set`, the trick winner
    :func:`~pedro_env.kernels.tricks.trick_winner_at`, deal scoring
    :func:`~pedro_env.kernels.scoring.score_deal_into`) and its own lookups from
    :func:`~agents.search.tables.search_tables`.

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
        self.tab = RuleTables.for_variant(variant).kernel_table
        self.look = search_tables(variant, trump, low_held)
        self.points = [int(x) for x in self.look[L_POINTS : L_POINTS + 52]]
        self.trump = trump
        self.n = num_players
        self.num_teams = num_teams
        self.team = [seat % num_teams for seat in range(num_players)]
        self.sign = [1 if team == 0 else -1 for team in self.team]
        self.depth = depth
        self.contested_share = contested_share
        self.scoring = scoring
        params = np.zeros(S_SIZE, dtype=np.int64)
        params[S_PLAYERS], params[S_TEAMS], params[S_TRUMP] = num_players, num_teams, trump
        if scoring is not None:
            params[S_MAKER_TEAM], params[S_BID] = scoring.maker_team, scoring.bid
            params[S_SIMPLE] = not scoring.difference
        params[S_TEAM_OF_SEAT : S_TEAM_OF_SEAT + num_players] = self.team
        params[S_SIGN : S_SIGN + num_players] = self.sign
        self.params = params
        self._table = np.zeros(TABLE_START, dtype=TABLE_ENTRY)
        self._table_count = np.zeros(1, dtype=np.int64)
        self._counter = np.zeros(1, dtype=np.int64)  # nodes visited by every search of this instance
        self._hands = np.zeros(4, dtype=np.uint64)
        self._trick = np.full(4, -1, dtype=np.int64)
        self._out = np.zeros(52, dtype=np.float64)

    @property
    def nodes(self) -> int:
        """Nodes visited by every search of this instance so far."""
        return int(self._counter[0])

    def root_values(
        self, hands: list[int], leader: int, trick_cards: list[int], legal: int, captured: list[int] | None = None
    ) -> dict[int, float]:
        """Value of each card of ``legal`` for the seat to act (seat ``(leader + len(trick_cards)) % n``).

        ``captured[team]``: points each team has already captured (only the ``score`` objective uses
        them)."""
        seat = (leader + len(trick_cards)) % self.n
        by_score = self.scoring is not None and self.depth >= hands[seat].bit_count()
        self.params[S_BY_SCORE] = by_score
        self._hands[: self.n] = hands
        self._trick[:] = -1
        self._trick[: len(trick_cards)] = trick_cards
        acc = 0
        if by_score:
            for team, team_points in enumerate(captured or []):
                acc += team_points << (POINT_BITS * team)
        self._table = _root_values(
            self._hands, leader, self._trick, np.uint64(legal), max(1, self.depth), acc, self._counter,
            self._table, self._table_count, self.params, self.look, self.tab, 2.0 * self.contested_share - 1.0,
            self._out,
        )  # fmt: skip
        return {card: float(self._out[card]) for card in card_list(legal)}
