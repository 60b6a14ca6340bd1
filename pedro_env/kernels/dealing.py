"""Dealing (docs/rules.md section 3): the hashed decks and first dealers, a deal laid out, a match started.

A deck is a pure function of (seed, match, deal): :func:`hashed_deck_into` orders the 52 cards by
splitmix64 keys, so every env, worker and replay deals the same cards.
"""

from __future__ import annotations

import numpy as np
from numba import config, njit

from pedro_env.kernels.bits import ZERO, card_bit, seat_after, typed_views
from pedro_env.kernels.inputs import (
    F_ACTOR,
    F_BIDS,
    F_DEAL_INDEX,
    F_DEALER,
    F_DISCARDS,
    F_DONE,
    F_DRAWN,
    F_HANDS,
    F_HIGH_BID,
    F_IN_STOCK,
    F_LAST_TRICK,
    F_LAST_TRICK_WINNER,
    F_LOW_TEAM,
    F_MAKER,
    F_MATCH_INDEX,
    F_OPEN_DRAWS,
    F_PHASE,
    F_PLAYED,
    F_ROBBING,
    F_SCORES,
    F_SEED,
    F_SET_ASIDE,
    F_STOCK,
    F_TRICK,
    F_TRICK_LEADER,
    F_TRICK_SIZE,
    F_TRICKS_DONE,
    F_TRUMP,
    F_VOIDS,
    F_WINNER,
    F_WON,
    P_HAND,
    P_PLAYERS,
    P_STOCK,
    P_TEAMS,
)
from pedro_env.state import BID

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@njit(cache=True, inline="always")
def splitmix64(x):
    z = x + GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, _nrt=False)
def hashed_deck_into(seed, match_index, deal_index, deck, keys):
    """Fill ``deck`` (52,) int8 with the shuffled deck of (seed, match, deal): card ids, top first, in the
    order of their hashed keys (``keys``, (52,) uint64 scratch; the keys are distinct, so the order is unique)."""
    key = splitmix64(splitmix64(splitmix64(np.uint64(seed)) ^ np.uint64(match_index)) ^ np.uint64(deal_index + 1))
    for card in range(52):
        keys[card] = splitmix64(key + np.uint64(card) * GOLDEN)
        position = card  # insertion sort of the cards by key
        while position > 0 and keys[deck[position - 1]] > keys[card]:
            deck[position] = deck[position - 1]
            position -= 1
        deck[position] = card


if config.DISABLE_JIT:  # plain Python: the hashes wrap round on purpose, as compiled uint64 arithmetic does

    def _wrapping(function):
        def wrapped(*args):
            with np.errstate(over="ignore"):
                return function(*args)

        return wrapped

    splitmix64 = _wrapping(splitmix64)
    hashed_deck_into = _wrapping(hashed_deck_into)


@njit(cache=True)
def hashed_dealer(seed, match_index, num_players):
    key = splitmix64(splitmix64(splitmix64(np.uint64(seed)) ^ np.uint64(match_index)) ^ ZERO)
    return np.int64(key % np.uint64(num_players))


@njit(cache=True, _nrt=False)
def start_deal(u8, i8, i16, i32, i64, u64, f32, eo, b, g, params, deck):
    """Deal ``deck`` (52,) to game ``g`` (its dealer and deal_index set) and open the bidding."""
    n, teams, stock_size, hand_size = params[P_PLAYERS], params[P_TEAMS], params[P_STOCK], params[P_HAND]
    dealt = n * hand_size
    eldest = seat_after(i8[eo[F_DEALER] + g], 1, n)
    for seat in range(n):
        u64[eo[F_HANDS] + g * n + seat] = ZERO
    for position in range(dealt):
        seat = seat_after(eldest, (position // 3) % n, n)
        u64[eo[F_HANDS] + g * n + seat] |= card_bit(deck[position])
    for i in range(stock_size):
        i8[eo[F_STOCK] + g * stock_size + i] = deck[dealt + i]
        u8[eo[F_IN_STOCK] + g * stock_size + i] = 1
    for seat in range(n):
        i = g * n + seat
        i8[eo[F_BIDS] + i] = -1
        u64[eo[F_DISCARDS] + i] = ZERO
        u8[eo[F_DONE] + i] = 0
        i8[eo[F_DRAWN] + i] = 0
        i8[eo[F_TRICK] + i] = -1
        i8[eo[F_LAST_TRICK] + i] = -1
        u64[eo[F_PLAYED] + i] = ZERO
        u8[eo[F_VOIDS] + i] = 0
    for team in range(teams):
        u64[eo[F_WON] + g * teams + team] = ZERO
    i8[eo[F_HIGH_BID] + g] = 0
    i8[eo[F_MAKER] + g] = -1
    i8[eo[F_TRUMP] + g] = -1
    u64[eo[F_OPEN_DRAWS] + g] = ZERO
    u64[eo[F_SET_ASIDE] + g] = ZERO
    u8[eo[F_ROBBING] + g] = 0
    i8[eo[F_TRICK_LEADER] + g] = -1
    i8[eo[F_TRICK_SIZE] + g] = 0
    i8[eo[F_TRICKS_DONE] + g] = 0
    i8[eo[F_LAST_TRICK_WINNER] + g] = -1
    i8[eo[F_LOW_TEAM] + g] = -1
    i8[eo[F_PHASE] + g] = BID
    i8[eo[F_ACTOR] + g] = eldest


@njit(cache=True)
def deal_games(buf, eo, b, params, games, decks):
    """Deal ``decks[i]`` (k, 52) to game ``games[i]`` (dealer and deal_index already set)."""
    u8, i8, i16, i32, i64, u64, f32 = typed_views(buf)
    for i in range(games.shape[0]):
        start_deal(u8, i8, i16, i32, i64, u64, f32, eo, b, games[i], params, decks[i])


@njit(cache=True, _nrt=False)
def deal_or_defer(u8, i8, i16, i32, i64, u64, f32, eo, b, g, params, hashed, deck, keys, pending, waiting):
    """Deal game ``g`` a hashed deck, or (not ``hashed``) append it to ``pending``; returns the pending count."""
    if not hashed:
        pending[waiting] = g
        return waiting + 1
    seed = u64[eo[F_SEED] + g]
    hashed_deck_into(seed, i64[eo[F_MATCH_INDEX] + g], i32[eo[F_DEAL_INDEX] + g], deck, keys)
    start_deal(u8, i8, i16, i32, i64, u64, f32, eo, b, g, params, deck)
    return waiting


@njit(cache=True)
def new_matches(buf, eo, b, params, games, dealers, hashed, pending):
    """Start fresh matches in ``games`` (seed and match_index set): scores 0, first dealer (``dealers``, or
    hashed where ``dealers[i] < 0``), first deal (hashed when ``hashed``, else listed in ``pending``).
    Returns the number of games written to ``pending`` (games still to be dealt)."""
    u8, i8, i16, i32, i64, u64, f32 = typed_views(buf)
    teams = params[P_TEAMS]
    deck = np.empty(52, dtype=np.int8)
    keys = np.empty(52, dtype=np.uint64)
    waiting = np.int64(0)  # not a literal 0: deal_or_defer would be compiled again for it
    for i in range(games.shape[0]):
        g = games[i]
        for team in range(teams):
            i32[eo[F_SCORES] + g * teams + team] = 0
        i32[eo[F_DEAL_INDEX] + g] = 0
        i8[eo[F_WINNER] + g] = -1
        if dealers[i] >= 0:
            i8[eo[F_DEALER] + g] = dealers[i]
        else:
            i8[eo[F_DEALER] + g] = hashed_dealer(u64[eo[F_SEED] + g], i64[eo[F_MATCH_INDEX] + g], params[P_PLAYERS])
        waiting = deal_or_defer(u8, i8, i16, i32, i64, u64, f32, eo, b, g, params, hashed, deck, keys, pending, waiting)
    return waiting


@njit(cache=True)
def hashed_decks_into(seeds, match_indices, deal_indices, decks):
    keys = np.empty(52, dtype=np.uint64)
    for i in range(seeds.shape[0]):
        hashed_deck_into(seeds[i], match_indices[i], deal_indices[i], decks[i], keys)


@njit(cache=True)
def hashed_dealers_into(seeds, match_indices, num_players, out):
    for i in range(seeds.shape[0]):
        out[i] = hashed_dealer(seeds[i], match_indices[i], num_players)
