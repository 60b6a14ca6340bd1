"""The cards a node of the trick search (:mod:`agents.search.solver`) tries, in search order.

A node's frame (``FRAME`` of the solver) gives the position: the seat to act, the card led, the card winning the
trick so far and the cards still in play; ``params`` are the search's constant inputs (``S_*``), ``look`` its
lookups (``L_*``, :mod:`agents.search.tables`), ``tab`` the engine's rule table.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from agents.search.tables import (
    L_ABOVE,
    L_LEFT_PEDRO_ABOVE,
    L_LEFT_PEDRO_BIT,
    L_LEFT_PEDRO_STRENGTH,
    L_POINTS,
    L_STRENGTH,
    S_TEAM_OF_SEAT,
    S_TRUMP,
)
from pedro_env.cards import T_BEATS
from pedro_env.kernels.bits import card_bit, lowest_card


@njit(cache=True, _nrt=False, inline="always")
def beats(tab, trump, led, card):
    """Strength of ``card`` in a trick led by ``led`` (-1: it cannot win), the engine's trick table."""
    return tab[T_BEATS + (trump * 53 + led) * 52 + card]


@njit(cache=True, _nrt=False)
def order_moves(frame, legal_cards, params, look, tab):
    """The legal cards worth trying into ``frame.moves``, in search order; returns their count (TrickSearch:
    interchangeable cards skipped; leading, the strongest first; feeding my side's trick, point cards first, then
    the weakest; against the other side, the cheapest winner first, then the weakest losers, point cards last).
    Sorts are stable (ties keep increasing card order)."""
    moves, keys = frame.moves, frame.keys
    if not legal_cards & (legal_cards - np.uint64(1)):
        moves[0] = lowest_card(legal_cards)
        return 1
    count = _distinct_cards(moves, legal_cards, frame.alive, look)
    if count < 2:
        return count
    trump, led, best_seat = params[S_TRUMP], frame.led, frame.best_seat
    winners = 0
    if best_seat < 0:
        for i in range(count):
            keys[i] = look[L_STRENGTH + moves[i]]
    elif params[S_TEAM_OF_SEAT + best_seat] == params[S_TEAM_OF_SEAT + frame.seat]:
        for i in range(count):
            keys[i] = 64 * look[L_POINTS + moves[i]] - beats(tab, trump, led, moves[i])
    else:
        winners = _cheapest_winners_first(moves, count, frame.best_strength, trump, led, tab)
        for i in range(winners, count):
            keys[i] = -beats(tab, trump, led, moves[i]) - 64 * look[L_POINTS + moves[i]]
    # descending keys, stable, over moves[winners:count]
    for i in range(winners + 1, count):
        card, key = moves[i], keys[i]
        j = i - 1
        while j >= winners and keys[j] < key:
            moves[j + 1], keys[j + 1] = moves[j], keys[j]
            j -= 1
        moves[j + 1], keys[j + 1] = card, key
    return count


@njit(cache=True, _nrt=False, inline="always")
def _distinct_cards(moves, legal_cards, alive, look):
    """The cards of ``legal_cards`` into ``moves`` in increasing order but one of each interchangeable run: a card
    without points is skipped when the next card above it in its effective suit among the cards ``alive`` is
    also legal and also without points. Returns their count."""
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
        moves[count] = card
        count += 1
    return count


@njit(cache=True, _nrt=False, inline="always")
def _cheapest_winners_first(moves, count, best_strength, trump, led, tab):
    """Move the cards of ``moves[:count]`` that beat ``best_strength`` to the front, the cheapest first (stable),
    the losers after them in their order; returns how many win."""
    winners = 0
    for i in range(count):
        if beats(tab, trump, led, moves[i]) > best_strength:
            card = moves[i]
            for j in range(i, winners, -1):
                moves[j] = moves[j - 1]
            moves[winners] = card
            winners += 1
    for i in range(1, winners):
        card = moves[i]
        key = beats(tab, trump, led, card)
        j = i - 1
        while j >= 0 and beats(tab, trump, led, moves[j]) > key:
            moves[j + 1] = moves[j]
            j -= 1
        moves[j + 1] = card
    return winners
