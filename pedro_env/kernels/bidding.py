"""Bidding and naming trumps (docs/rules.md section 4): a bid or pass, the dealer's last word, the trump suit."""

from __future__ import annotations

from numba import njit

from pedro_env.actions import PASS_ACTION, TRUMP_OFFSET
from pedro_env.kernels.bits import seat_after
from pedro_env.kernels.inputs import (
    F_ACTOR,
    F_BIDS,
    F_DEAL_OVER,
    F_DEALER,
    F_HIGH_BID,
    F_LAST_REDEAL,
    F_MAKER,
    F_PHASE,
    F_TRUMP,
    P_PLAYERS,
    P_SIX_CARD,
)
from pedro_env.kernels.tricks import start_play
from pedro_env.state import BID, DISCARD, TRUMP


@njit(cache=True, _nrt=False, inline="always")
def apply_bid(u8, i8, i16, i32, i64, u64, f32, eo, b, g, action, params):
    n = params[P_PLAYERS]
    seat = i8[eo[F_ACTOR] + g]
    i8[eo[F_BIDS] + g * n + seat] = action
    if action != PASS_ACTION:
        i8[eo[F_HIGH_BID] + g] = action
        i8[eo[F_MAKER] + g] = seat
    if seat == i8[eo[F_DEALER] + g]:
        i8[eo[F_PHASE] + g] = TRUMP
        i8[eo[F_ACTOR] + g] = i8[eo[F_MAKER] + g]
        if i8[eo[F_HIGH_BID] + g] == 0:
            u8[eo[F_DEAL_OVER] + g] = 1
            u8[eo[F_LAST_REDEAL] + g] = 1
    else:
        i8[eo[F_PHASE] + g] = BID
        i8[eo[F_ACTOR] + g] = seat_after(seat, 1, n)


@njit(cache=True, _nrt=False, inline="always")
def name_trumps(u8, i8, i16, i32, i64, u64, f32, eo, b, g, action, params, tab):
    """``trump X``: the maker names trumps; the discard and draw follows (with ``six_card``, the play at once)."""
    n = params[P_PLAYERS]
    i8[eo[F_TRUMP] + g] = action - TRUMP_OFFSET
    if params[P_SIX_CARD]:
        start_play(u8, i8, i16, i32, i64, u64, f32, eo, b, g, params, tab)
    else:
        i8[eo[F_PHASE] + g] = DISCARD
        i8[eo[F_ACTOR] + g] = seat_after(i8[eo[F_DEALER] + g], 1, n)
