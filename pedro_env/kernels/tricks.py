"""Following suit and winning tricks (docs/rules.md section 6): the legal plays, a card played, the trick won,
voids shown; batch versions for Python callers (:func:`legal_plays`, :func:`trick_winner`, arrays with a
leading batch axis ``B``, ``trump`` the named suit 0..3 of each game)."""

from __future__ import annotations

import numpy as np
from numba import njit

from pedro_env.actions import PLAY_OFFSET
from pedro_env.cards import (
    T_ANSWERS,
    T_BEATS,
    T_FOLLOW,
    T_LED_SUIT_BIT,
    T_LOW_SET,
    T_TRUMP_ALLOWED,
    TRICKS_PER_DEAL,
    RuleTables,
)
from pedro_env.kernels.bits import ZERO, card_bit, seat_after
from pedro_env.kernels.inputs import (
    F_ACTOR,
    F_DEAL_OVER,
    F_HANDS,
    F_LAST_RENEGE,
    F_LAST_TRICK,
    F_LAST_TRICK_WINNER,
    F_LOW_TEAM,
    F_MAKER,
    F_PHASE,
    F_PLAYED,
    F_TRICK,
    F_TRICK_LEADER,
    F_TRICK_SIZE,
    F_TRICKS_DONE,
    F_TRUMP,
    F_VOIDS,
    F_WON,
    P_PLAYERS,
    P_RENEGE_PENALTY,
    P_TEAM_OF_SEAT,
    P_TEAMS,
)
from pedro_env.state import PLAY


@njit(cache=True, _nrt=False, inline="always")
def legal_play_set(hand, trump, led_card, tab):
    """uint64 card set the actor may play from ``hand`` with ``led_card`` leading (-1: the actor leads)."""
    key = trump * 53 + (52 if led_card < 0 else led_card)
    follows = hand & np.uint64(tab[T_FOLLOW + key])
    if follows == ZERO:
        return hand
    return follows | (hand & np.uint64(tab[T_TRUMP_ALLOWED + key]))


@njit(cache=True, _nrt=False, inline="always")
def trick_winner_at(cards, start, n, leader, trump, tab):
    """Seat winning a complete trick held at ``cards[start : start + n]`` (card per seat); ``leader`` led it."""
    base = T_BEATS + (trump * 53 + cards[start + leader]) * 52
    best, best_seat = -2, 0
    for seat in range(n):
        strength = tab[base + cards[start + seat]]
        if strength > best:
            best, best_seat = strength, seat
    return best_seat


@njit(cache=True, _nrt=False, inline="always")
def trick_winner_of(trick, leader, trump, tab):
    """Seat winning a complete trick: ``trick`` (n,) card per seat, ``leader`` the seat that led."""
    return trick_winner_at(trick, 0, trick.shape[0], leader, trump, tab)


@njit(cache=True, _nrt=False, inline="always")
def start_play(u8, i8, i16, i32, i64, u64, f32, eo, b, g, params, tab):
    """The maker leads the first trick; remember which team holds Low (for low="held")."""
    n = params[P_PLAYERS]
    maker = i8[eo[F_MAKER] + g]
    i8[eo[F_PHASE] + g] = PLAY
    i8[eo[F_ACTOR] + g] = maker
    i8[eo[F_TRICK_LEADER] + g] = maker
    low = np.uint64(tab[T_LOW_SET + i8[eo[F_TRUMP] + g]])
    low_team = -1
    for seat in range(n):
        if u64[eo[F_HANDS] + g * n + seat] & low != ZERO:
            low_team = params[P_TEAM_OF_SEAT + seat]
            break
    i8[eo[F_LOW_TEAM] + g] = low_team


@njit(cache=True, _nrt=False, inline="always")
def apply_play(u8, i8, i16, i32, i64, u64, f32, eo, b, g, action, params, tab):
    n = params[P_PLAYERS]
    seat = i8[eo[F_ACTOR] + g]
    card = action - PLAY_OFFSET
    trump = i8[eo[F_TRUMP] + g]
    leader = i8[eo[F_TRICK_LEADER] + g]
    led_card = i8[eo[F_TRICK] + g * n + leader]
    bit = card_bit(card)
    if params[P_RENEGE_PENALTY]:
        if legal_play_set(u64[eo[F_HANDS] + g * n + seat], trump, led_card, tab) & bit == ZERO:
            u8[eo[F_DEAL_OVER] + g] = 1
            i8[eo[F_LAST_RENEGE] + g] = params[P_TEAM_OF_SEAT + seat]
            return
    # a follower who neither follows the led suit nor trumps a non-trump lead shows a void in the led suit
    key = trump * 53 + (52 if led_card < 0 else led_card)
    if np.uint64(tab[T_ANSWERS + key]) & bit == ZERO:
        u8[eo[F_VOIDS] + g * n + seat] |= np.uint8(tab[T_LED_SUIT_BIT + key])
    u64[eo[F_HANDS] + g * n + seat] &= ~bit
    u64[eo[F_PLAYED] + g * n + seat] |= bit
    i8[eo[F_TRICK] + g * n + seat] = card
    i8[eo[F_TRICK_SIZE] + g] += 1
    i8[eo[F_ACTOR] + g] = seat_after(seat, 1, n)
    if i8[eo[F_TRICK_SIZE] + g] < n:
        return
    row = i8[eo[F_TRICK] + g * n : eo[F_TRICK] + (g + 1) * n]
    winner = trick_winner_of(row, leader, trump, tab)
    teams = params[P_TEAMS]
    cards = ZERO
    for s in range(n):
        cards |= card_bit(row[s])
        i8[eo[F_LAST_TRICK] + g * n + s] = row[s]
        row[s] = -1
    u64[eo[F_WON] + g * teams + params[P_TEAM_OF_SEAT + winner]] |= cards
    i8[eo[F_LAST_TRICK_WINNER] + g] = winner
    i8[eo[F_TRICK_SIZE] + g] = 0
    i8[eo[F_TRICKS_DONE] + g] += 1
    i8[eo[F_TRICK_LEADER] + g] = winner
    i8[eo[F_ACTOR] + g] = winner
    if i8[eo[F_TRICKS_DONE] + g] == TRICKS_PER_DEAL:
        u8[eo[F_DEAL_OVER] + g] = 1


@njit(cache=True)
def legal_play_sets(hands, trumps, led_cards, tab, out):
    """``out[i]`` = legal_play_set of row i (every input (k,))."""
    for i in range(hands.shape[0]):
        out[i] = legal_play_set(hands[i], trumps[i], led_cards[i], tab)


@njit(cache=True)
def trick_winners(tricks, leaders, trumps, tab, out):
    """``out[i]`` = trick_winner_of row i: ``tricks`` (k, n)."""
    for i in range(tricks.shape[0]):
        out[i] = trick_winner_of(tricks[i], leaders[i], trumps[i], tab)


def legal_plays(hand: np.ndarray, trump: np.ndarray, led_card: np.ndarray, tables: RuleTables) -> np.ndarray:
    """Card set (B,) uint64 the actor may play.

    hand (B,) uint64 card set; trump (B,) 0..3; led_card (B,) the card that led the trick, -1 when
    the actor leads. A trump lead must be followed with a trump when the actor has one; on a
    non-trump lead the actor may follow the led suit or trump; void in the led suit (or leading),
    the actor plays anything.
    """
    hand, trump, led_card = np.broadcast_arrays(hand, trump, led_card)
    out = np.empty(hand.size, dtype=np.uint64)
    legal_play_sets(
        hand.astype(np.uint64).reshape(-1),
        trump.astype(np.int64).reshape(-1),
        led_card.astype(np.int64).reshape(-1),
        tables.kernel_table,
        out,
    )
    return out.reshape(hand.shape)


def trick_winner(trick: np.ndarray, leader: np.ndarray, trump: np.ndarray, tables: RuleTables) -> np.ndarray:
    """Seat winning each complete trick, (B,) int8.

    trick (B, n) card per seat; leader (B,) seat that led. The highest trump wins; without trumps,
    the highest card of the led (effective) suit.
    """
    trick = np.ascontiguousarray(trick, dtype=np.int64)
    out = np.empty(trick.shape[0], dtype=np.int8)
    trick_winners(
        trick,
        np.asarray(leader, dtype=np.int64).reshape(-1),
        np.asarray(trump, dtype=np.int64).reshape(-1),
        tables.kernel_table,
        out,
    )
    return out
