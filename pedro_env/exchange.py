"""Discard and draw (RULES.md section 5): discards, the reservation rule, the three refills, robbing the pack.

Functions take the state and ``games``, an index array into the batch, and update those games in place.
"""

from __future__ import annotations

import numpy as np

from pedro_env.actions import DISCARD_OFFSET, DONE_ACTION
from pedro_env.cards import RuleTables
from pedro_env.config import PedroConfig
from pedro_env.state import PedroState

HAND_AT_PLAY = 6  # every player holds 6 cards when play begins


def discard_allowed(state: PedroState, config: PedroConfig) -> np.ndarray:
    """(B,) bool: the actor may discard one more card (the hand decides which cards).

    Outside robbing, a discard must leave the stock able to refill every finished player and the
    actor to 6: ``reserved + (6 - (held - 1)) <= cards in stock``. The robbing dealer discards while above 6.
    """
    rows = np.arange(state.batch_size)
    counts = state.hands.sum(axis=2, dtype=np.int16)  # (B, n)
    held = counts[rows, state.actor]
    reserved = ((HAND_AT_PLAY - counts) * state.done).sum(axis=1)
    stock_left = state.in_stock.sum(axis=1, dtype=np.int16)
    within_stock = reserved + (HAND_AT_PLAY - (held - 1)) <= stock_left
    return np.where(state.robbing, held > HAND_AT_PLAY, within_stock)


def done_allowed(state: PedroState) -> np.ndarray:
    """(B,) bool: the actor may say done (at most 6 cards; exactly 6 when robbing)."""
    held = state.hands[np.arange(state.batch_size), state.actor].sum(axis=1)
    return np.where(state.robbing, held == HAND_AT_PLAY, held <= HAND_AT_PLAY)


def apply_discard_phase(
    state: PedroState, games: np.ndarray, actions: np.ndarray, config: PedroConfig, tables: RuleTables, start_play
) -> None:
    """Apply ``discard XX`` / ``done`` for ``games``; after the last player's ``done``, refill and start play.

    ``start_play(state, games)`` is called for games whose play phase begins.
    """
    n = config.num_players
    seats = state.actor[games]
    finished = actions == DONE_ACTION
    discarding = ~finished
    d_games, d_seats, d_cards = games[discarding], seats[discarding], actions[discarding] - DISCARD_OFFSET
    state.hands[d_games, d_seats, d_cards] = False
    state.discards[d_games, d_seats, d_cards] = True

    f_games, f_seats = games[finished], seats[finished]
    robbed = state.robbing[f_games]
    state.robbing[f_games[robbed]] = False
    start_play(state, f_games[robbed])

    f_games, f_seats = f_games[~robbed], f_seats[~robbed]
    state.done[f_games, f_seats] = True
    next_seats = (f_seats + 1) % n
    dealer = state.dealer[f_games]
    robs = config.refill == "dealer_robs"
    last = next_seats == dealer if robs else f_seats == dealer
    state.actor[f_games] = next_seats
    refilling = f_games[last]
    if refilling.size:
        _refill(state, refilling, config, tables)
        if robs:
            _rob_the_pack(state, refilling)
        else:
            _set_aside_stock_trumps(state, refilling, tables)
            start_play(state, refilling)


def _refill(state: PedroState, games: np.ndarray, config: PedroConfig, tables: RuleTables) -> None:
    """Each player from eldest round to the dealer (the dealer skipped when robbing) draws back up to 6."""
    n = config.num_players
    drawers = n - 1 if config.refill == "dealer_robs" else n
    stock = state.stock[games]  # (k, S) card ids
    stock_trumps = tables.is_trump[state.trump[games][:, None], stock]  # (k, S)
    for offset in range(1, drawers + 1):
        seats = (state.dealer[games] + offset) % n
        need = HAND_AT_PLAY - state.hands[games, seats].sum(axis=1)
        available = state.in_stock[games]
        taken = np.zeros_like(available)
        if config.refill == "maker_sorted":
            # the maker takes the stock's trumps first, in stock order, face up
            open_trumps = available & stock_trumps & (seats == state.maker[games])[:, None]
            taken = open_trumps & (np.cumsum(open_trumps, axis=1) <= need[:, None])
            shown_rows, shown_cols = np.nonzero(taken)
            state.maker_trump_draws[games[shown_rows], stock[shown_rows, shown_cols]] = True
            need = need - taken.sum(axis=1)
            available = available & ~taken
        taken |= available & (np.cumsum(available, axis=1) <= need[:, None])
        _take_into_hand(state, games, seats, stock, taken)


def _take_into_hand(state: PedroState, games: np.ndarray, seats: np.ndarray, stock: np.ndarray, taken: np.ndarray) -> None:
    """Move stock positions ``taken`` (k, S) bool of each game into that game's ``seats`` hand."""
    taken_rows, taken_cols = np.nonzero(taken)
    state.hands[games[taken_rows], seats[taken_rows], stock[taken_rows, taken_cols]] = True
    state.in_stock[games] &= ~taken
    state.drawn[games, seats] += taken.sum(axis=1, dtype=np.int8)


def _rob_the_pack(state: PedroState, games: np.ndarray) -> None:
    """Refill ``dealer_robs``: the dealer adds the whole remaining stock, face down, then discards to 6."""
    dealer = state.dealer[games]
    _take_into_hand(state, games, dealer, state.stock[games], state.in_stock[games])
    state.robbing[games] = True
    state.actor[games] = dealer


def _set_aside_stock_trumps(state: PedroState, games: np.ndarray, tables: RuleTables) -> None:
    """Trumps left in the stock after the refill are turned face up and set aside (public)."""
    stock = state.stock[games]
    left_trumps = state.in_stock[games] & tables.is_trump[state.trump[games][:, None], stock]
    trump_rows, trump_cols = np.nonzero(left_trumps)
    state.set_aside[games[trump_rows], stock[trump_rows, trump_cols]] = True
    state.in_stock[games] &= ~left_trumps
