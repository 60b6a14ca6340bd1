"""Discard and draw (docs/rules.md section 5): who may discard or say done, the refill from the stock, the
robbing dealer, the trumps set aside."""

from __future__ import annotations

from numba import njit

from pedro_env.actions import DISCARD_OFFSET, DONE_ACTION
from pedro_env.cards import HAND_AT_PLAY, T_IS_TRUMP
from pedro_env.kernels.bits import ZERO, card_bit, popcount, seat_after
from pedro_env.kernels.inputs import (
    F_ACTOR,
    F_DEALER,
    F_DISCARDS,
    F_DONE,
    F_DRAWN,
    F_HANDS,
    F_IN_STOCK,
    F_MAKER,
    F_OPEN_DRAWS,
    F_ROBBING,
    F_SET_ASIDE,
    F_STOCK,
    F_TRUMP,
    P_PLAYERS,
    P_REFILL,
    P_STOCK,
    REFILL_MAKER_SORTED,
    REFILL_ROBS,
)


@njit(cache=True, _nrt=False, inline="always")
def discard_options_of(hands, done, drawn, set_aside, robbing, actor, stock_size):
    """(may_discard, may_say_done) of the actor: ``hands`` (n,) card sets, ``done`` / ``drawn`` (n,)."""
    held = popcount(hands[actor])
    reserved = 0
    total_drawn = 0
    for seat in range(hands.shape[0]):
        if done[seat]:
            reserved += HAND_AT_PLAY - popcount(hands[seat])
        total_drawn += drawn[seat]
    in_stock = stock_size - total_drawn - popcount(set_aside)
    if robbing:
        return held > HAND_AT_PLAY, held == HAND_AT_PLAY
    return reserved + (HAND_AT_PLAY + 1 - held) <= in_stock, held <= HAND_AT_PLAY


@njit(cache=True, _nrt=False)
def take_into_hand(u8, i8, i16, i32, i64, u64, f32, eo, b, g, seat, taken, params):
    """Move the stock positions flagged in ``taken`` (S,) into ``seat``'s hand."""
    n, stock_size = params[P_PLAYERS], params[P_STOCK]
    cards = ZERO
    count = 0
    for i in range(stock_size):
        if taken[i]:
            cards |= card_bit(i8[eo[F_STOCK] + g * stock_size + i])
            u8[eo[F_IN_STOCK] + g * stock_size + i] = 0
            count += 1
    u64[eo[F_HANDS] + g * n + seat] |= cards
    i8[eo[F_DRAWN] + g * n + seat] = i8[eo[F_DRAWN] + g * n + seat] + count


@njit(cache=True, _nrt=False)
def refill_hands(u8, i8, i16, i32, i64, u64, f32, eo, b, g, params, tab, taken):
    """Each player from eldest round to the dealer (the dealer skipped when robbing) draws back up to 6."""
    n, stock_size, refill = params[P_PLAYERS], params[P_STOCK], params[P_REFILL]
    drawers = n - 1 if refill == REFILL_ROBS else n
    dealer = i8[eo[F_DEALER] + g]
    maker = i8[eo[F_MAKER] + g]
    trump = i8[eo[F_TRUMP] + g]
    for offset in range(1, drawers + 1):
        seat = seat_after(dealer, offset, n)
        need = HAND_AT_PLAY - popcount(u64[eo[F_HANDS] + g * n + seat])
        for i in range(stock_size):
            taken[i] = False
        if refill == REFILL_MAKER_SORTED and seat == maker:  # the maker takes the stock's trumps first, face up
            face_up = ZERO
            face_up_count = 0
            for i in range(stock_size):
                card = i8[eo[F_STOCK] + g * stock_size + i]
                if (
                    u8[eo[F_IN_STOCK] + g * stock_size + i]
                    and tab[T_IS_TRUMP + trump * 52 + card]
                    and face_up_count < need
                ):
                    taken[i] = True
                    face_up |= card_bit(card)
                    face_up_count += 1
            u64[eo[F_OPEN_DRAWS] + g] |= face_up
            need -= face_up_count
        count = 0
        for i in range(stock_size):
            if u8[eo[F_IN_STOCK] + g * stock_size + i] and not taken[i]:
                count += 1
                if count <= need:
                    taken[i] = True
        take_into_hand(u8, i8, i16, i32, i64, u64, f32, eo, b, g, seat, taken, params)


@njit(cache=True, _nrt=False, inline="always")
def apply_discard(u8, i8, i16, i32, i64, u64, f32, eo, b, g, action, params, tab, taken):
    """``discard XX`` or ``done`` (``taken``: (S,) bool scratch); returns whether play begins (the caller starts it)."""
    n = params[P_PLAYERS]
    seat = i8[eo[F_ACTOR] + g]
    if action != DONE_ACTION:
        bit = card_bit(action - DISCARD_OFFSET)
        u64[eo[F_HANDS] + g * n + seat] &= ~bit
        u64[eo[F_DISCARDS] + g * n + seat] |= bit
        return False
    if u8[eo[F_ROBBING] + g]:  # the robbing dealer is down to 6: play begins
        u8[eo[F_ROBBING] + g] = 0
        return True
    u8[eo[F_DONE] + g * n + seat] = 1
    next_seat = seat_after(seat, 1, n)
    dealer = i8[eo[F_DEALER] + g]
    robs = params[P_REFILL] == REFILL_ROBS
    last = next_seat == dealer if robs else seat == dealer
    i8[eo[F_ACTOR] + g] = next_seat
    if not last:
        return False
    refill_hands(u8, i8, i16, i32, i64, u64, f32, eo, b, g, params, tab, taken)
    stock_size = params[P_STOCK]
    if robs:  # the dealer adds the whole remaining stock, face down, then discards to 6
        for i in range(stock_size):
            taken[i] = u8[eo[F_IN_STOCK] + g * stock_size + i] != 0
        take_into_hand(u8, i8, i16, i32, i64, u64, f32, eo, b, g, dealer, taken, params)
        u8[eo[F_ROBBING] + g] = 1
        i8[eo[F_ACTOR] + g] = dealer
        return False
    # trumps left in the stock are turned face up and set aside
    trump = i8[eo[F_TRUMP] + g]
    aside = ZERO
    for i in range(stock_size):
        card = i8[eo[F_STOCK] + g * stock_size + i]
        if u8[eo[F_IN_STOCK] + g * stock_size + i] and tab[T_IS_TRUMP + trump * 52 + card]:
            aside |= card_bit(card)
            u8[eo[F_IN_STOCK] + g * stock_size + i] = 0
    u64[eo[F_SET_ASIDE] + g] = aside
    return True
