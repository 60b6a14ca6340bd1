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

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import njit

from agents.search.tables import (
    L_ABOVE,
    L_LEFT_PEDRO_ABOVE,
    L_LEFT_PEDRO_BIT,
    L_LEFT_PEDRO_STRENGTH,
    L_POINT_CARDS,
    L_POINTS,
    L_STRENGTH,
    L_STRONGER,
    L_TRUMP_SUIT_BITS,
    NO_LEAD,
    card_list,
    search_tables,
)
from pedro_env.cards import T_BEATS, RuleTables
from pedro_env.kernels.bits import card_bit, highest_card, lowest_card
from pedro_env.kernels.cache import register_kernel_sources
from pedro_env.kernels.dealing import splitmix64
from pedro_env.kernels.scoring import score_deal_into
from pedro_env.kernels.tricks import legal_play_set, trick_winner_at

register_kernel_sources(__file__, depends_on=(Path(__file__).with_name("tables.py"),))  # before its first kernel

POINT_BITS = 8  # team points packed into one int, 8 bits per team (a deal has at most 23 points)
POINT_MASK = (1 << POINT_BITS) - 1
MAX_MOVES = 16  # cards of one hand a frame tries (six at play in every variant; room to spare)

# the search's constant inputs, one int64 array (TrickSearch.params)
S_PLAYERS, S_TEAMS, S_TRUMP, S_BY_SCORE, S_MAKER_TEAM, S_BID, S_SIMPLE, S_TEAM_OF_SEAT = range(8)  # 4 entries
S_SIGN = S_TEAM_OF_SEAT + 4  # 4 entries: +1 my side, -1 the others
S_SIZE = S_SIGN + 4

# transposition table: key the four hands, then tricks_left | seat << 8 | acc << 16; value, bound (0 exact,
# 1 lower, -1 upper); the hash multipliers of the key's words
_HASH = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93], dtype=np.uint64)


@dataclass(frozen=True)
class DealScoring:
    """How a deal's points turn into score changes (docs/rules.md section 7), relative teams (0 = mine): the
    engine's scoring (:func:`pedro_env.kernels.scoring.score_deal_into`)."""

    num_teams: int
    maker_team: int
    bid: int
    difference: bool  # scoring "difference" (two teams) rather than "simple"

    def value(self, team_points: list[int]) -> float:
        """My team's score change minus the mean of the other teams' for a deal ending with ``team_points``."""
        points = np.asarray(team_points, dtype=np.int64)
        delta = np.zeros(self.num_teams, dtype=np.int64)
        score_deal_into(points, self.maker_team, self.bid, not self.difference, delta)
        return float(_score_value(delta))


@njit(cache=True, _nrt=False, inline="always")
def _score_value(delta):
    """Team 0's score change less the mean of the others' (delta (T,))."""
    others = 0
    for team in range(1, delta.shape[0]):
        others += delta[team]
    return delta[0] - others / (delta.shape[0] - 1)


@njit(cache=True, _nrt=False)
def _final_value(packed, params, points, delta):
    """The deal's value (:func:`_score_value` of the engine's scoring) for these packed team points; ``points``
    and ``delta`` (T,) int64 scratch."""
    for team in range(points.shape[0]):
        points[team] = packed >> (POINT_BITS * team) & POINT_MASK
    score_deal_into(points, params[S_MAKER_TEAM], params[S_BID], params[S_SIMPLE] != 0, delta)
    return _score_value(delta)


@njit(cache=True, _nrt=False, inline="always")
def _point_sum(cards, look):
    """Trick value of a card set."""
    total = 0
    while cards:
        card = lowest_card(cards)
        total += look[L_POINTS + card]
        cards ^= card_bit(card)
    return total


@njit(cache=True, _nrt=False, inline="always")
def _top_trump(cards, look):
    """Strength of the highest trump in ``cards`` (-1 if none): bit order is strength order in the trump
    suit, and the left Pedro sits just below the right one."""
    suit_trumps = cards & np.uint64(look[L_TRUMP_SUIT_BITS])
    top = look[L_STRENGTH + highest_card(suit_trumps)] if suit_trumps else -1
    left = look[L_LEFT_PEDRO_STRENGTH]
    if cards & np.uint64(look[L_LEFT_PEDRO_BIT]) and top < left:
        return left
    return top


@njit(cache=True, _nrt=False)
def _held_points(hands, packed, params, look):
    """``(certain, contested)`` over the point cards still held (TrickSearch docstring): ``certain`` my
    side's certain points less the others' (``packed``: each team's, POINT_BITS per team)."""
    n, teams = params[S_PLAYERS], params[S_TEAMS]
    point_cards = np.uint64(look[L_POINT_CARDS])
    if teams == 2:
        mine, theirs = hands[0], hands[1]
        if n == 4:
            mine |= hands[2]
            theirs |= hands[3]
        my_points, their_points = mine & point_cards, theirs & point_cards
        my_safe = their_safe = 0
        if my_points:
            my_safe = _point_sum(my_points & np.uint64(look[L_STRONGER + _top_trump(theirs, look) + 1]), look)
        if their_points:
            their_safe = _point_sum(their_points & np.uint64(look[L_STRONGER + _top_trump(mine, look) + 1]), look)
        contested = _point_sum(my_points, look) + _point_sum(their_points, look) - my_safe - their_safe
        if packed:
            return my_safe + (their_safe << POINT_BITS), contested
        return my_safe - their_safe, contested
    certain = contested = 0
    for team in range(teams):  # one seat a team
        held = hands[team] & point_cards
        if held:
            top_elsewhere = -1
            for other in range(teams):
                if other != team:
                    top_elsewhere = max(top_elsewhere, _top_trump(hands[other], look))
            safe = _point_sum(held & np.uint64(look[L_STRONGER + top_elsewhere + 1]), look)
            if packed:
                certain += safe << (POINT_BITS * team)
            else:
                certain += safe if team == 0 else -safe
            contested += _point_sum(held, look) - safe
    return certain, contested


@njit(cache=True, _nrt=False, inline="always")
def _beats(tab, trump, led, card):
    """Strength of ``card`` in a trick led by ``led`` (-1: it cannot win), the engine's trick table."""
    return tab[T_BEATS + (trump * 53 + led) * 52 + card]


@njit(cache=True, _nrt=False)
def _order_moves(moves, keys, d, legal_cards, alive, seat, led, best_strength, best_seat, params, look, tab):
    """The legal cards worth trying into ``moves[d]``, in search order (``keys[d]`` scratch); returns their count
    (class docstring of TrickSearch: interchangeable cards skipped; leading the strongest first; feeding my side's trick
    point cards first, then the weakest; against the other side the cheapest winner first, then the
    weakest losers, point cards last). Sorts are stable (ties keep increasing card order)."""
    if not legal_cards & (legal_cards - np.uint64(1)):
        moves[d, 0] = lowest_card(legal_cards)
        return 1
    count = 0
    rest = legal_cards
    left_bit = np.uint64(look[L_LEFT_PEDRO_BIT])
    while rest:
        card = lowest_card(rest)
        rest ^= card_bit(card)
        if look[L_POINTS + card] == 0:
            higher = alive & np.uint64(look[L_ABOVE + card])
            next_bit = higher & (~higher + np.uint64(1))
            if look[L_LEFT_PEDRO_ABOVE + card] and alive & left_bit:
                if not next_bit or look[L_STRENGTH + lowest_card(next_bit)] > look[L_LEFT_PEDRO_STRENGTH]:
                    next_bit = left_bit
            if next_bit & legal_cards and look[L_POINTS + lowest_card(next_bit)] == 0:
                continue
        moves[d, count] = card
        count += 1
    if count < 2:
        return count
    trump = params[S_TRUMP]
    winners = 0
    if best_seat < 0:
        for i in range(count):
            keys[d, i] = look[L_STRENGTH + moves[d, i]]
    elif params[S_TEAM_OF_SEAT + best_seat] == params[S_TEAM_OF_SEAT + seat]:
        for i in range(count):
            card = moves[d, i]
            keys[d, i] = 64 * look[L_POINTS + card] - _beats(tab, trump, led, card)
    else:
        # winners first (in card order), the losers after them
        write = 0
        for i in range(count):
            if _beats(tab, trump, led, moves[d, i]) > best_strength:
                card = moves[d, i]
                for j in range(i, write, -1):
                    moves[d, j] = moves[d, j - 1]
                moves[d, write] = card
                write += 1
        winners = write
        # the cheapest winner first (ascending strength, stable)
        for i in range(1, winners):
            card = moves[d, i]
            key = _beats(tab, trump, led, card)
            j = i - 1
            while j >= 0 and _beats(tab, trump, led, moves[d, j]) > key:
                moves[d, j + 1] = moves[d, j]
                j -= 1
            moves[d, j + 1] = card
        for i in range(winners, count):
            card = moves[d, i]
            keys[d, i] = -_beats(tab, trump, led, card) - 64 * look[L_POINTS + card]
    # descending keys, stable, over moves[d, winners:count]
    for i in range(winners + 1, count):
        card, key = moves[d, i], keys[d, i]
        j = i - 1
        while j >= winners and keys[d, j] < key:
            moves[d, j + 1], keys[d, j + 1] = moves[d, j], keys[d, j]
            j -= 1
        moves[d, j + 1], keys[d, j + 1] = card, key
    return count


# a search frame (one per card played since the root), fields of its three rows
(F_SEAT, F_LED, F_BEST_STRENGTH, F_BEST_SEAT, F_TRICK_POINTS, F_IN_TRICK, F_TRICKS_LEFT, F_ACC, F_COUNT, F_NEXT,
 F_GAINED) = range(11)  # fmt: skip  # int64 row
F_ALIVE, F_HAND = 5, 6  # uint64 row: the table key (five words), then these
F_ALPHA, F_BETA, F_ALPHA0, F_BETA0, F_BEST = range(5)  # float64 row
MAX_PLY = 32  # cards in hands at play, plus one


@njit(cache=True, _nrt=False, inline="always")
def _store_frame(d, seat, led, best_strength, best_seat, trick_points, in_trick, alive, tricks_left, acc, alpha, beta,
                 count, fi, fu, ff, params):  # fmt: skip
    fi[d, F_SEAT], fi[d, F_LED], fi[d, F_BEST_STRENGTH], fi[d, F_BEST_SEAT] = seat, led, best_strength, best_seat
    fi[d, F_TRICK_POINTS], fi[d, F_IN_TRICK] = trick_points, in_trick
    fi[d, F_TRICKS_LEFT], fi[d, F_ACC] = tricks_left, acc
    fi[d, F_COUNT], fi[d, F_NEXT], fi[d, F_GAINED] = count, 0, 0
    fu[d, F_ALIVE] = alive
    ff[d, F_ALPHA], ff[d, F_BETA], ff[d, F_ALPHA0], ff[d, F_BETA0] = alpha, beta, alpha, beta
    ff[d, F_BEST] = -np.inf if params[S_SIGN + seat] > 0 else np.inf


@njit(cache=True, _nrt=False, inline="always")
def _enter(d, seat, led, best_strength, best_seat, trick_points, in_trick, alive, tricks_left, acc, alpha, beta,
           hands, fi, fu, ff, moves, keys, table_keys, table_values, table_used, params, look, tab, points,
           delta):  # fmt: skip
    """Open the node with ``seat`` to act as frame ``d``: ``(True, value)`` when the transposition table or the
    certain / contested bounds settle it at a trick start, else ``(False, 0.0)`` with the frame's cards to try
    in ``moves[d]``. Arguments as the frame fields (:func:`_root_values`)."""
    hand = hands[seat]
    fu[d, F_HAND] = hand
    if in_trick:
        legal_cards = legal_play_set(hand, params[S_TRUMP], led, tab)
    else:
        legal_cards = hand
        word = np.uint64(tricks_left | seat << 8 | acc << 16)
        fu[d, 0], fu[d, 1], fu[d, 2], fu[d, 3], fu[d, 4] = hands[0], hands[1], hands[2], hands[3], word
        alive = hands[0] | hands[1] | hands[2] | hands[3]
        slot = _slot_of(table_keys, table_used, hands[0], hands[1], hands[2], hands[3], word)
        if table_used[slot]:
            value, bound = table_values[slot, 0], table_values[slot, 1]
            if bound == 0.0 or (bound == 1.0 and value >= beta) or (bound == -1.0 and value <= alpha):
                return True, value
        by_score = params[S_BY_SCORE] != 0
        certain, contested = _held_points(hands, by_score, params, look)
        if by_score:
            if contested == 0:
                return True, _final_value(acc + certain, params, points, delta)
            if params[S_TEAMS] == 2:
                upper = _final_value(acc + certain + contested, params, points, delta)
                if upper <= alpha:
                    return True, upper
                lower = _final_value(acc + certain + (contested << POINT_BITS), params, points, delta)
                if lower >= beta:
                    return True, lower
        else:
            if contested == 0:
                return True, float(certain)
            if certain + contested <= alpha:
                return True, float(certain + contested)
            if certain - contested >= beta:
                return True, float(certain - contested)
    count = _order_moves(moves, keys, d, legal_cards, alive, seat, led, best_strength, best_seat, params, look, tab)
    _store_frame(d, seat, led, best_strength, best_seat, trick_points, in_trick, alive, tricks_left, acc, alpha, beta,
                 count, fi, fu, ff, params)  # fmt: skip
    return False, 0.0


TABLE_START = 1 << 12  # first capacity of a transposition table (slots, a power of two; it doubles at half full)


@njit(cache=True, _nrt=False, inline="always")
def _slot_of(table_keys, table_used, w0, w1, w2, w3, w4):
    """The slot of the key ``(w0 .. w4)`` in an open-addressing table: where it is, else the free slot where it
    would go (linear probing; the capacity is a power of two)."""
    mask = np.uint64(table_keys.shape[0] - 1)
    mixed = w0 * _HASH[0] ^ w1 * _HASH[1] ^ w2 * _HASH[2] ^ w3 * _HASH[3] ^ w4
    slot = splitmix64(mixed) & mask
    while table_used[slot]:
        if (
            table_keys[slot, 0] == w0
            and table_keys[slot, 1] == w1
            and table_keys[slot, 2] == w2
            and table_keys[slot, 3] == w3
            and table_keys[slot, 4] == w4
        ):
            return slot
        slot = (slot + np.uint64(1)) & mask
    return slot


@njit(cache=True)
def _grown(table_keys, table_values, table_used):
    """The table's entries in one of twice the capacity."""
    keys = np.zeros((2 * table_keys.shape[0], 5), dtype=np.uint64)
    values = np.zeros((2 * table_keys.shape[0], 2), dtype=np.float64)
    used = np.zeros(2 * table_keys.shape[0], dtype=np.uint8)
    for old in range(table_keys.shape[0]):
        if table_used[old]:
            w = table_keys[old]
            slot = _slot_of(keys, used, w[0], w[1], w[2], w[3], w[4])
            keys[slot] = w
            values[slot] = table_values[old]
            used[slot] = 1
    return keys, values, used


@njit(cache=True, _nrt=False)
def _search(d, hands, trick_cards, moves, keys, fi, fu, ff, counter, table_keys, table_values, table_used,
            table_count, params, look, tab, spread, points, delta, out):  # fmt: skip
    """Run the search of :func:`_root_values` from frame ``d`` until the root's frame is done (returns -1) or the
    transposition table must grow before frame ``d`` can be stored (returns ``d``, to resume from there)."""
    n = params[S_PLAYERS]
    trump = params[S_TRUMP]
    by_score = params[S_BY_SCORE] != 0
    while True:
        value = 0.0
        if fi[d, F_NEXT] < fi[d, F_COUNT]:
            card = moves[d, fi[d, F_NEXT]]
            fi[d, F_NEXT] += 1
            seat, in_trick, tl = fi[d, F_SEAT], fi[d, F_IN_TRICK], fi[d, F_TRICKS_LEFT]
            hands[seat] = fu[d, F_HAND] ^ card_bit(card)
            trick_cards[tl * 4 + seat] = card
            if in_trick == 0:
                led_now, strength_now, seat_now = card, _beats(tab, trump, card, card), seat
            else:
                led_now = fi[d, F_LED]
                strength_now = _beats(tab, trump, led_now, card)
                seat_now = seat
                if strength_now <= fi[d, F_BEST_STRENGTH]:
                    strength_now, seat_now = fi[d, F_BEST_STRENGTH], fi[d, F_BEST_SEAT]
            points_now = fi[d, F_TRICK_POINTS] + look[L_POINTS + card]
            alpha, beta = ff[d, F_ALPHA], ff[d, F_BETA]
            next_seat = seat + 1 if seat + 1 < n else 0
            gained = 0
            settled, child = False, 0.0
            opens = True  # whether the card opens a node (else ``value`` is its value already)
            if in_trick + 1 == n:  # the trick's last card: its winner takes the points and leads the next
                winner = trick_winner_at(trick_cards, tl * 4, n, next_seat, trump, tab)
                if by_score:
                    acc_now = fi[d, F_ACC] + (points_now << (POINT_BITS * params[S_TEAM_OF_SEAT + winner]))
                    if hands[winner] == 0:
                        value, opens = _final_value(acc_now, params, points, delta), False
                    else:
                        settled, child = _enter(d + 1, winner, NO_LEAD, -1, -1, 0, 0, np.uint64(0), tl - 1, acc_now,
                                                alpha, beta, hands, fi, fu, ff, moves, keys, table_keys,
                                                table_values, table_used, params, look, tab, points,
                                                delta)  # fmt: skip
                else:
                    gained = params[S_SIGN + winner] * points_now
                    if hands[winner] == 0:
                        value, opens = float(gained), False
                    elif tl == 1:
                        certain, contested = _held_points(hands, False, params, look)
                        value, opens = (gained + certain) + spread * contested, False
                    else:
                        settled, child = _enter(d + 1, winner, NO_LEAD, -1, -1, 0, 0, np.uint64(0), tl - 1, 0,
                                                alpha - gained, beta - gained, hands, fi, fu, ff, moves, keys,
                                                table_keys, table_values, table_used, params, look, tab, points,
                                                delta)  # fmt: skip
            else:
                settled, child = _enter(d + 1, next_seat, led_now, strength_now, seat_now, points_now, in_trick + 1,
                                        fu[d, F_ALIVE], tl, fi[d, F_ACC], alpha, beta, hands, fi, fu, ff, moves, keys,
                                        table_keys, table_values, table_used, params, look, tab, points,
                                        delta)  # fmt: skip
            if opens:
                counter[0] += 1
                if settled:
                    value = gained + child
                else:
                    fi[d, F_GAINED] = gained
                    d += 1
                    continue
        else:  # frame d is done: store a trick start's value, hand it to the frame below
            best = ff[d, F_BEST]
            if d == 0:
                return -1
            if fi[d, F_IN_TRICK] == 0:
                if 2 * (table_count[0] + 1) > table_keys.shape[0]:
                    return d  # the table must grow first; the frame is stored when the search resumes here
                alpha0, beta0 = ff[d, F_ALPHA0], ff[d, F_BETA0]
                slot = _slot_of(table_keys, table_used, fu[d, 0], fu[d, 1], fu[d, 2], fu[d, 3], fu[d, 4])
                if not table_used[slot]:
                    table_used[slot] = 1
                    for word in range(5):
                        table_keys[slot, word] = fu[d, word]
                    table_count[0] += 1
                table_values[slot, 0] = best
                table_values[slot, 1] = 0.0 if alpha0 < best < beta0 else (1.0 if best >= beta0 else -1.0)
            d -= 1
            value = fi[d, F_GAINED] + best
        # frame d's last card is answered with ``value``
        hands[fi[d, F_SEAT]] = fu[d, F_HAND]
        if d == 0:
            out[moves[0, fi[0, F_NEXT] - 1]] = value
            continue
        if params[S_SIGN + fi[d, F_SEAT]] > 0:
            if value > ff[d, F_BEST]:
                ff[d, F_BEST] = value
                if value > ff[d, F_ALPHA]:
                    ff[d, F_ALPHA] = value
        else:
            if value < ff[d, F_BEST]:
                ff[d, F_BEST] = value
                if value < ff[d, F_BETA]:
                    ff[d, F_BETA] = value
        if ff[d, F_ALPHA] >= ff[d, F_BETA]:
            fi[d, F_NEXT] = fi[d, F_COUNT]


@njit(cache=True)
def _root_values(hands, leader, trick, legal, tricks_left, acc, counter, table_keys, table_values, table_used,
                 table_count, params, look, tab, spread, out):  # fmt: skip
    """Fill ``out[card]`` with the exact value of every card of ``legal`` (uint64) for the seat after ``trick``'s
    cards (play order from ``leader``; -1 entries unused); returns the transposition table (keys (C, 5) uint64,
    values (C, 2) value and bound, used (C,) uint8; ``table_count[0]`` its entries), a new one when it had to
    grow; ``counter[0]`` gains the nodes visited.

    Alpha-beta (TrickSearch docstring) with an explicit stack of frames, one per card played since the root
    (``fi`` / ``fu`` / ``ff`` rows, fields ``F_*``): a frame tries its cards in order; a card either ends the
    search there (a deal's end, the depth's end, a settled trick start) or opens the next frame, whose best
    value comes back to it (plus the points its trick gained, objective ``points``). ``hands`` (4,) uint64 is
    scratch space, restored on return; ``counter[0]`` counts the nodes visited."""
    n = params[S_PLAYERS]
    trump = params[S_TRUMP]
    trick_cards = np.zeros((tricks_left + 1) * 4, dtype=np.int64)  # [tricks_left * 4 + seat]: the tricks in play
    moves = np.zeros((MAX_PLY, MAX_MOVES), dtype=np.int64)
    keys = np.zeros((MAX_PLY, MAX_MOVES), dtype=np.int64)
    fi = np.zeros((MAX_PLY, 11), dtype=np.int64)
    fu = np.zeros((MAX_PLY, 7), dtype=np.uint64)
    ff = np.zeros((MAX_PLY, 5), dtype=np.float64)
    points = np.zeros(params[S_TEAMS], dtype=np.int64)
    delta = np.zeros(params[S_TEAMS], dtype=np.int64)
    # the root: the trick so far, then every legal card in increasing order, nothing cut
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
        strength = _beats(tab, trump, led, card)
        if strength > best_strength:
            best_strength, best_seat = strength, seat
        trick_points += look[L_POINTS + card]
        alive |= card_bit(card)
        trick_cards[tricks_left * 4 + seat] = card
        in_trick += 1
    count = 0
    rest = legal
    while rest:
        card = lowest_card(rest)
        rest ^= card_bit(card)
        moves[0, count] = card
        count += 1
    root_seat = (leader + in_trick) % n
    fu[0, F_HAND] = hands[root_seat]
    _store_frame(0, root_seat, led, best_strength, best_seat, trick_points, in_trick, alive, tricks_left, acc,
                 -np.inf, np.inf, count, fi, fu, ff, params)  # fmt: skip
    counter[0] += 1
    d = 0
    while True:
        d = _search(d, hands, trick_cards, moves, keys, fi, fu, ff, counter, table_keys, table_values, table_used,
                    table_count, params, look, tab, spread, points, delta, out)  # fmt: skip
        if d < 0:
            break
        table_keys, table_values, table_used = _grown(table_keys, table_values, table_used)
    return table_keys, table_values, table_used


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
        self._table = (
            np.zeros((TABLE_START, 5), dtype=np.uint64),
            np.zeros((TABLE_START, 2), dtype=np.float64),
            np.zeros(TABLE_START, dtype=np.uint8),
        )
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
            *self._table, self._table_count, self.params, self.look, self.tab, 2.0 * self.contested_share - 1.0,
            self._out,
        )  # fmt: skip
        return {card: float(self._out[card]) for card in card_list(legal)}
