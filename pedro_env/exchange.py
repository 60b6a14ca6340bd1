"""Discard and draw (docs/rules.md section 5): discards, the reservation rule, the three refills, robbing the pack.

Functions take the state and ``games``, an index array into the batch, and update those games in place.
The phase ends when play begins, which :mod:`pedro_env.rules` starts (this module sits below it).
"""

from __future__ import annotations

import numpy as np

from pedro_env.actions import DISCARD_OFFSET, DONE_ACTION
from pedro_env.cards import CARD_BIT, NO_CARDS, RuleTables
from pedro_env.config import PedroConfig
from pedro_env.state import PedroState

HAND_AT_PLAY = 6  # every player holds 6 cards when play begins
_NO_GAMES = np.zeros(0, dtype=np.intp)
_NO_GAMES.setflags(write=False)


def sum_seats(per_seat: np.ndarray) -> np.ndarray:
    """(k, n) -> (k,): the sum over the seat axis. On large batches a loop over the few seats is several
    times faster than a reduction along that short axis; on small ones the single reduction is."""
    if per_seat.shape[0] < 64:
        return per_seat.sum(axis=1, dtype=per_seat.dtype)
    total = per_seat[:, 0]
    for seat in range(1, per_seat.shape[1]):
        total = total + per_seat[:, seat]
    return total


def discard_options(state: PedroState, games: np.ndarray, config: PedroConfig) -> tuple[np.ndarray, np.ndarray]:
    """(may_discard, may_say_done), each (k,) bool, for the actor of each of ``games``.

    Outside robbing, a discard must leave the stock able to refill every finished player and the
    actor to 6: ``reserved + (6 - (held - 1)) <= cards in stock``, and done needs at most 6 cards.
    The robbing dealer discards while above 6 and says done at exactly 6.
    """
    counts = np.bitwise_count(state.hands[games]).astype(np.int16)  # (k, n)
    held = counts[np.arange(games.size), state.actor[games]]
    reserved = sum_seats(np.where(state.done[games], HAND_AT_PLAY - counts, 0))
    in_stock = (
        config.stock_size - sum_seats(state.drawn[games].astype(np.int16)) - np.bitwise_count(state.set_aside[games])
    )
    robbing = state.robbing[games]
    may_discard = np.where(robbing, held > HAND_AT_PLAY, reserved + (HAND_AT_PLAY + 1 - held) <= in_stock)
    may_say_done = np.where(robbing, held == HAND_AT_PLAY, held <= HAND_AT_PLAY)
    return may_discard, may_say_done


def apply_discard_phase(
    state: PedroState, games: np.ndarray, actions: np.ndarray, config: PedroConfig, tables: RuleTables
) -> np.ndarray:
    """Apply ``discard XX`` / ``done`` for ``games``; after the last player's ``done``, refill (or rob the pack).

    Returns the index array of the games whose discarding is over: :func:`pedro_env.rules.step` starts
    their play (the maker leads), after this phase is done with them.
    """
    n = config.num_players
    seats = state.actor[games]
    finished = actions == DONE_ACTION
    if not finished.all():
        discarding = ~finished
        d_games, d_seats = games[discarding], seats[discarding]
        card_bits = CARD_BIT[actions[discarding] - DISCARD_OFFSET]
        state.hands[d_games, d_seats] &= ~card_bits
        state.discards[d_games, d_seats] |= card_bits
    if not finished.any():
        return _NO_GAMES

    f_games, f_seats = games[finished], seats[finished]
    robbed = state.robbing[f_games]
    if robbed.any():  # the robbing dealer is down to 6: play begins
        state.robbing[f_games[robbed]] = False
        # robbing only happens with refill "dealer_robs", where the refill below never starts play
        play_begins = f_games[robbed]
        f_games, f_seats = f_games[~robbed], f_seats[~robbed]
    else:
        play_begins = _NO_GAMES
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
            play_begins = refilling
    return play_begins


def _stock_set(stock: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """(k,) uint64: the set of the cards at ``positions`` (k, S) bool of each game's ``stock`` (k, S)."""
    return np.bitwise_or.reduce(np.where(positions, CARD_BIT[stock], NO_CARDS), axis=1)


def _refill(state: PedroState, games: np.ndarray, config: PedroConfig, tables: RuleTables) -> None:
    """Each player from eldest round to the dealer (the dealer skipped when robbing) draws back up to 6."""
    n = config.num_players
    drawers = n - 1 if config.refill == "dealer_robs" else n
    stock = state.stock[games]  # (k, S) card ids
    stock_trumps = tables.is_trump[state.trump[games][:, None], stock]  # (k, S)
    for offset in range(1, drawers + 1):
        seats = (state.dealer[games] + offset) % n
        need = HAND_AT_PLAY - np.bitwise_count(state.hands[games, seats]).astype(np.int16)
        available = state.in_stock[games]
        taken = np.zeros_like(available)
        if config.refill == "maker_sorted":
            # the maker takes the stock's trumps first, in stock order, face up
            open_trumps = available & stock_trumps & (seats == state.maker[games])[:, None]
            taken = open_trumps & (np.cumsum(open_trumps, axis=1) <= need[:, None])
            state.open_draws[games] |= _stock_set(stock, taken)
            need = need - taken.sum(axis=1)
            available = available & ~taken
        taken |= available & (np.cumsum(available, axis=1) <= need[:, None])
        _take_into_hand(state, games, seats, stock, taken)


def _take_into_hand(
    state: PedroState, games: np.ndarray, seats: np.ndarray, stock: np.ndarray, taken: np.ndarray
) -> None:
    """Move stock positions ``taken`` (k, S) bool of each game into the hand of that game's seat in ``seats``."""
    state.hands[games, seats] |= _stock_set(stock, taken)
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
    state.set_aside[games] = _stock_set(stock, left_trumps)
    state.in_stock[games] &= ~left_trumps
