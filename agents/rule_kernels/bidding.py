"""Bids and trumps: the hand estimate (the capture model's chance of taking each trump, times its points) and
the bid it makes."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from agents.rule_kernels.inputs import (
    A_LOW_HELD,
    A_MIN_BID,
    A_PLAYERS,
    A_PREEMPT,
    A_TEAM_OF_SEAT,
    A_TOTAL,
    A_TRUMP_COUNT,
    A_TRUMP_ORDER,
    MAX_TRUMPS,
    W_BID_MARGIN,
    W_CONTEST_ALLOWANCE,
    W_HELD,
    W_ORDER_VALUE,
    W_PARTNER_OVERCALL,
    W_PREEMPT_SHADE,
    W_UNHELD,
    first_legal,
    first_set,
    holds,
)
from pedro_env.actions import NUM_ACTIONS, PASS_ACTION, TRUMP_OFFSET
from pedro_env.kernels.bits import ZERO, load_card_bits, popcount
from pedro_env.kernels.inputs import O_BIDS, O_DEALER, O_HAND, O_MAKER
from pedro_env.observation_layout import BID_WIDTH


@njit(cache=True, inline="always")
def capture_features(held, i, count, dealer_flag):
    """The CAPTURE_FEATURES of :mod:`agents.rule_based` for the ``i``-th strongest of ``count`` trumps: 1, trumps I
    hold above it, trumps above it I do not hold, trumps I hold, it is Low (the 2), I deal (``dealer_flag`` 1.0
    or 0.0). ``held``: bit ``i`` set for each trump I hold, strongest first."""
    above_held = popcount(held & ((np.uint64(1) << np.uint64(i)) - np.uint64(1)))
    return 1.0, above_held, i - above_held, popcount(held), 1.0 if i == count - 1 else 0.0, dealer_flag


@njit(cache=True)
def capture_feature_rows(held, count, dealer, out):
    """Fill ``out`` (count, 6) float64 with :func:`capture_features` of every trump of a suit, strongest first."""
    dealer_flag = 1.0 if dealer else 0.0
    for i in range(count):
        bias, above_held, above_missing, length, is_low, dealer_feature = capture_features(held, i, count, dealer_flag)
        out[i, 0], out[i, 1], out[i, 2] = bias, above_held, above_missing
        out[i, 3], out[i, 4], out[i, 5] = length, is_low, dealer_feature


@njit(cache=True, inline="always")
def trump_term(held, i, count, dealer_flag, trump, ints, floats):
    """The estimate's term of the ``i``-th strongest trump: its points times the capture model's chance that the
    maker's side takes it (an ace held: 1; Low with low=held: held or not). ``held``: bit ``i`` set for each trump
    I hold, strongest first."""
    is_held = holds(held, i)
    _, above_held, above_missing, length, is_low, _ = capture_features(held, i, count, dealer_flag)
    w = W_HELD if is_held else W_UNHELD
    logit = floats[w]  # times the bias feature, 1.0
    logit = logit + floats[w + 1] * above_held
    logit = logit + floats[w + 2] * above_missing
    logit = logit + floats[w + 3] * length
    logit = logit + floats[w + 4] * is_low
    logit = logit + floats[w + 5] * dealer_flag
    chance = 1.0 / (1.0 + math.exp(-logit))
    if i == 0 and is_held:  # the ace wins its own trick
        chance = 1.0
    if i == count - 1 and ints[A_LOW_HELD]:  # Low scores for whoever holds it
        chance = 1.0 if is_held else 0.0
    return chance * floats[W_ORDER_VALUE + trump * MAX_TRUMPS + i]


@njit(cache=True)
def suit_estimate(hand, trump, dealer, ints, floats):
    """Expected points of the hand's side as the maker with ``trump`` as trumps: the sum of the :func:`trump_term`
    of its 13 or 14 trumps, added in numpy's order (eight running sums, then the rest: see :func:`pairwise_sum`)."""
    count = ints[A_TRUMP_COUNT]
    order = A_TRUMP_ORDER + trump * MAX_TRUMPS
    held = ZERO
    for i in range(count):
        if (hand >> np.uint64(ints[order + i])) & np.uint64(1) != ZERO:
            held |= np.uint64(1) << np.uint64(i)
    d = 1.0 if dealer else 0.0
    r0 = trump_term(held, 0, count, d, trump, ints, floats)
    r1 = trump_term(held, 1, count, d, trump, ints, floats)
    r2 = trump_term(held, 2, count, d, trump, ints, floats)
    r3 = trump_term(held, 3, count, d, trump, ints, floats)
    r4 = trump_term(held, 4, count, d, trump, ints, floats)
    r5 = trump_term(held, 5, count, d, trump, ints, floats)
    r6 = trump_term(held, 6, count, d, trump, ints, floats)
    r7 = trump_term(held, 7, count, d, trump, ints, floats)
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for i in range(8, count):  # 8 <= count < 16: numpy adds the rest one by one
        total += trump_term(held, i, count, d, trump, ints, floats)
    return 0.0 + total


@njit(cache=True)
def best_estimate(hand, dealer, ints, floats):
    """(points, suit): the hand's best :func:`suit_estimate` and its suit (ties: the lowest suit)."""
    best, best_suit = suit_estimate(hand, 0, dealer, ints, floats), 0
    for trump in range(1, 4):
        estimate = suit_estimate(hand, trump, dealer, ints, floats)
        if estimate > best:
            best, best_suit = estimate, trump
    return best, best_suit


@njit(cache=True)
def bid_action(observations, masks, g, pieces, ints, floats):
    """Bid the needed amount (or, before the last to speak, the estimate less margin and shade) when the estimate
    less the margin reaches it; the margin grows over my partner's high bid and shrinks against an opponent's."""
    n, total = ints[A_PLAYERS], ints[A_TOTAL]
    hand = load_card_bits(observations, g, pieces[O_HAND])
    dealer = first_set(observations, g, pieces[O_DEALER], n)
    estimate, _ = best_estimate(hand, dealer == 0, ints, floats)
    width = BID_WIDTH  # one-hot per seat: not yet spoken, passed, bid 1 .. total (0s past it)
    high = 0
    for seat in range(n):
        high = max(high, first_set(observations, g, pieces[O_BIDS] + seat * width, width) - 1)
    needed = max(high + 1, ints[A_MIN_BID])
    maker = first_set(observations, g, pieces[O_MAKER], n)
    high_side = ints[A_TEAM_OF_SEAT + max(maker, 0)]
    margin = floats[W_BID_MARGIN]
    if maker > 0 and high_side == 0:
        margin = floats[W_BID_MARGIN] + floats[W_PARTNER_OVERCALL]
    if maker > 0 and high_side != 0:
        margin = margin - floats[W_CONTEST_ALLOWANCE]
    wants = estimate - margin >= needed
    amount = needed
    if ints[A_PREEMPT] and dealer != 0:  # not the last to speak
        preempt = np.int64(math.floor(estimate - floats[W_BID_MARGIN] - floats[W_PREEMPT_SHADE]))
        amount = max(needed, min(preempt, total))
    amount = min(amount, total)
    if not masks[g, PASS_ACTION]:
        bid = needed
    elif wants:
        bid = amount
    else:
        bid = PASS_ACTION
    if masks[g, bid]:
        return bid
    return first_legal(masks, g, 0, NUM_ACTIONS)


@njit(cache=True)
def trump_action(observations, g, pieces, ints, floats):
    """Name the suit of the best estimate."""
    hand = load_card_bits(observations, g, pieces[O_HAND])
    dealer = first_set(observations, g, pieces[O_DEALER], ints[A_PLAYERS])
    _, suit = best_estimate(hand, dealer == 0, ints, floats)
    return TRUMP_OFFSET + suit
