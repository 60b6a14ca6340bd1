"""What a play decision reads from the observation row before the rules of :mod:`agents.rule_kernels.play` decide:
the trick so far and the words of docs/agents.md, "Words used in the rules" (seen cards, *can hold*, *safe to
lead*, *win chance*).

Seats are relative (0 = me); card sets are uint64 (bit ``c`` = card ``c``); ``t52`` is ``trump * 52``, the start
of the trump's row in the ``[trump, card]`` tables of ``ints``; ``beats_row`` the start of the trick table's row
for the card led (:mod:`agents.rule_kernels.inputs`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from agents.rule_kernels.inputs import (
    A_IS_TRUMP,
    A_PLAY_VALUE,
    A_SIX_CARD,
    A_STRENGTH,
    A_TEAM_OF_SEAT,
    A_VOID_CARDS,
    ALL_CARDS,
    LOG_MISS,
    PER_LEVEL,
    RUNNING,
    STRENGTH_LEVELS,
    TRUMP_STRENGTH,
    holds,
    pairwise_sum,
)
from pedro_env.kernels.bits import ZERO, card_bit, load_card_bits, load_suit_bits, lowest_card, popcount
from pedro_env.kernels.inputs import (
    O_DISCARDS,
    O_HAND,
    O_HAND_SIZES,
    O_OPEN_DRAWS,
    O_PLAYED,
    O_SET_ASIDE,
    O_TRICK,
    O_VOIDS,
)


@njit(cache=True)
def read_trick(observations, g, pieces, n, trick_cards):
    """``(seen, played)``: the cards I have seen (my hand, the open draws, the cards set aside, every card played
    or discarded) and every card played; fills ``trick_cards`` (4,) int64 with the card each relative seat played
    to this trick (-1: none)."""
    trick_set = load_card_bits(observations, g, pieces[O_TRICK])
    seen = (
        load_card_bits(observations, g, pieces[O_HAND])
        | load_card_bits(observations, g, pieces[O_OPEN_DRAWS])
        | load_card_bits(observations, g, pieces[O_SET_ASIDE])
    )
    played_all = ZERO
    trick_cards[:] = -1
    for seat in range(n):
        played = load_card_bits(observations, g, pieces[O_PLAYED] + 52 * seat)
        seen |= played | load_card_bits(observations, g, pieces[O_DISCARDS] + 52 * seat)
        played_all |= played
        if played & trick_set != ZERO:
            trick_cards[seat] = lowest_card(played & trick_set)
    return seen, played_all


@njit(cache=True)
def trick_winner_so_far(trick_cards, n, beats_row, t52, ints):
    """``(best, best_seat, trick_points)``: the strength of the card winning the trick so far (-1: no card yet),
    the relative seat that played it (0 when none) and the points in play of the trick's cards."""
    best, best_seat, trick_points = -1, 0, 0
    for seat in range(n):
        if trick_cards[seat] >= 0:
            strength = ints[beats_row + trick_cards[seat]]
            if strength > best:
                best, best_seat = strength, seat
            trick_points += ints[A_PLAY_VALUE + t52 + trick_cards[seat]]
    return best, best_seat, trick_points


@njit(cache=True)
def place_unseen(observations, g, pieces, ints, n, trump, maker, seen, played_all, possible, hidden):
    """Where the cards I have not seen may be (*can hold*): fills ``possible`` (4,) uint64 with the cards each
    relative seat 1 .. n-1 can hold (none of a suit it showed void in; the maker also its open draws not yet
    played) and ``hidden`` (4,) float64 with how many of that seat's cards I cannot place. Returns
    ``(trump_holders, all_holders, opponents_possible)``: the hidden cards that may be trumps (seats not void in
    trumps; in six-card games the undealt cards too), every hidden or undealt card, and the cards some opponent
    can hold."""
    unseen = ALL_CARDS & ~seen
    open_held = load_card_bits(observations, g, pieces[O_OPEN_DRAWS]) & ~played_all
    open_count = float(popcount(open_held))
    trump_holders = 0.0
    hidden_total = 0.0
    opponents_possible = ZERO
    for seat in range(1, n):
        voids = load_suit_bits(observations, g, pieces[O_VOIDS] + 4 * seat)
        void_cards = np.uint64(ints[A_VOID_CARDS + trump * 16 + np.int64(voids)])
        possible[seat] = unseen & ~void_cards
        hidden_cards = float(observations[g, pieces[O_HAND_SIZES] + seat])
        if maker == seat:
            possible[seat] |= open_held
            hidden_cards -= open_count
        hidden[seat] = max(hidden_cards, 0.0)
        if not holds(voids, trump):
            trump_holders += hidden[seat]
        hidden_total += hidden[seat]
        if ints[A_TEAM_OF_SEAT + seat] != 0:
            opponents_possible |= possible[seat]
    stock_unknown = max(float(popcount(unseen)) - hidden_total, 0.0)
    if ints[A_SIX_CARD]:  # nothing was set aside: undealt trumps are unseen too
        trump_holders += stock_unknown
    return trump_holders, hidden_total + stock_unknown, opponents_possible


@njit(cache=True)
def safe_leads(opponents_possible, t52, ints, top_in_suit):
    """``(safe, opponents_have_trumps)``: the cards *safe to lead* (a trump: no opponent can hold a higher trump;
    a non-trump: no opponent can hold a trump or a higher card of its suit) as a uint64 set, and whether an
    opponent can hold a trump. ``top_in_suit`` (4,) int64: scratch."""
    opponent_top_trump = -1
    top_in_suit[:] = -1  # the strongest non-trump of each suit an opponent can hold
    for card in range(52):
        if holds(opponents_possible, card):
            strength = ints[A_STRENGTH + t52 + card]
            if ints[A_IS_TRUMP + t52 + card]:
                opponent_top_trump = max(opponent_top_trump, strength)
            else:
                top_in_suit[card // 13] = max(top_in_suit[card // 13], strength)
    safe = ZERO
    for card in range(52):
        strength = ints[A_STRENGTH + t52 + card]
        if ints[A_IS_TRUMP + t52 + card]:
            is_safe = strength > opponent_top_trump
        else:
            is_safe = opponent_top_trump < 0 and strength > top_in_suit[card // 13]
        if is_safe:
            safe |= card_bit(card)
    return safe, opponent_top_trump >= 0


@njit(cache=True)
def unbeaten_levels(trick_cards, possible, hidden, trump_holders, all_holders, n, beats_row, ints, scratch):
    """The log chances behind the *win chance*: each card an opponent still to play can hold misses that opponent
    with chance ``1 - hidden / holders`` (a trump over the trump holders, another card over every holder). Fills
    ``scratch[RUNNING : RUNNING + STRENGTH_LEVELS]`` with, at ``s + 1``, the summed log chances of the cards of
    trick strength at most ``s`` (-1: cannot win), and returns the sum over every card; :func:`win_chance` turns
    them into the chance that no stronger card is held."""
    per_level = scratch[PER_LEVEL : PER_LEVEL + STRENGTH_LEVELS]
    running = scratch[RUNNING : RUNNING + STRENGTH_LEVELS]
    log_miss = scratch[LOG_MISS : LOG_MISS + 52]
    log_miss[:] = 0.0
    for seat in range(1, n):
        if ints[A_TEAM_OF_SEAT + seat] == 0 or trick_cards[seat] >= 0:
            continue
        miss_trump = math.log(max(1.0 - hidden[seat] / max(trump_holders, 1.0), 1e-9))
        miss_other = math.log(max(1.0 - hidden[seat] / max(all_holders, 1.0), 1e-9))
        can_hold = possible[seat]
        while can_hold != ZERO:
            card = lowest_card(can_hold)
            can_hold &= can_hold - np.uint64(1)
            log_miss[card] += miss_trump if ints[beats_row + card] >= TRUMP_STRENGTH else miss_other
    per_level[:] = 0.0
    for card in range(52):
        per_level[ints[beats_row + card] + 1] += log_miss[card]
    level_sum = 0.0
    for level in range(STRENGTH_LEVELS):
        level_sum += per_level[level]
        running[level] = level_sum
    return pairwise_sum(per_level, 0, STRENGTH_LEVELS)


@njit(cache=True, inline="always")
def win_chance(strength, every_level, running):
    """The chance that no opponent still to play beats a card of trick strength ``strength`` (the sums of
    :func:`unbeaten_levels`)."""
    return math.exp(every_level - running[strength + 1])
