"""The rule kernels' inputs: a config's card tables and a personality packed into two arrays, and the helpers
that read an observation row.

- ``ints`` (int64, ``A_*`` below): [trump, card] tables, the trick table, the trump order, the cards of each
  void flag set, then the config's and the personality's switches;
- ``floats`` (float64, ``W_*`` below): the capture model, the estimate's point values, the bid margins, the
  play rules' chance thresholds;
- ``pieces`` (int64, ``O_*`` of :mod:`pedro_env.kernels.inputs`): each observation piece's start.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from pedro_env.kernels.bits import ONE, ZERO

NOT_LEGAL = -32000  # score of a card a rule may not pick (scores are small ints)
TRUMP_STRENGTH = 20  # trick strengths of trumps start here
STRENGTH_LEVELS = 35  # trick strengths -1 .. 33, shifted by one to index arrays
MAX_TRUMPS = 14  # trumps of a suit: 13, plus the left Pedro where the variant has Pedros
ALL_CARDS = np.uint64((1 << 52) - 1)

# ints (int64): [trump, card] tables of (4, 52), the trick table, the trump order, void cards, then settings
A_STRENGTH = 0  # trick strength: trumps 20..33, others their rank 0..12
A_PLAY_VALUE = A_STRENGTH + 208  # points the card counts in play (Low: 0 with low=held)
A_KEEP_VALUE = A_PLAY_VALUE + 208  # how much a discarding hand wants to keep it (higher: keep)
A_IS_TRUMP = A_KEEP_VALUE + 208  # 0/1
A_BEATS = A_IS_TRUMP + 208  # [trump, led, card] of (4, 53, 52): strength in a trick led by ``led`` (52: none), -1
A_TRUMP_ORDER = A_BEATS + 4 * 53 * 52  # [trump, i] of (4, MAX_TRUMPS): the trumps, strongest first
A_VOID_CARDS = A_TRUMP_ORDER + 4 * MAX_TRUMPS  # [trump, flags] of (4, 16): the cards of a 4-bit void flag set
A_TEAM_OF_SEAT = A_VOID_CARDS + 64  # [relative seat] of 4: relative team (0 = mine)
A_PLAYERS = A_TEAM_OF_SEAT + 4
A_TRUMP_COUNT = A_PLAYERS + 1
A_MIN_BID = A_TRUMP_COUNT + 1
A_TOTAL = A_MIN_BID + 1  # the variant's total points
A_LOW_HELD = A_TOTAL + 1  # Low scores for its holder
A_SIX_CARD = A_LOW_HELD + 1
A_PULL_TRUMPS = A_SIX_CARD + 1  # Personality switches from here
A_PROBE_AS_MAKER = A_PULL_TRUMPS + 1
A_CONTEST_POINTS = A_PROBE_AS_MAKER + 1
A_DENY = A_CONTEST_POINTS + 1
A_PREEMPT = A_DENY + 1  # 1: an earlier bidder bids its estimate less the shade (preempt_shade is not None)
A_SIZE = A_PREEMPT + 1

# floats (float64): the capture model, the estimate's point values, the bidding margins and the chances
W_HELD = 0  # 6 logistic weights for a point trump I hold (CAPTURE_FEATURES order)
W_UNHELD = W_HELD + 6  # 6 for one I do not hold
W_ORDER_VALUE = W_UNHELD + 6  # [trump, i] of (4, MAX_TRUMPS): points of the i-th strongest trump
W_BID_MARGIN = W_ORDER_VALUE + 4 * MAX_TRUMPS  # the bid margin, caution included
W_CONTEST_ALLOWANCE = W_BID_MARGIN + 1
W_PARTNER_OVERCALL = W_CONTEST_ALLOWANCE + 1
W_PREEMPT_SHADE = W_PARTNER_OVERCALL + 1
W_FEED_CHANCE = W_PREEMPT_SHADE + 1
W_SAVE_CHANCE = W_FEED_CHANCE + 1
W_WIN_CHANCE = W_SAVE_CHANCE + 1
W_SIZE = W_WIN_CHANCE + 1

# a play decision's float working space: per strength level the log chance that it is not beaten, the running
# sum of those, each card's log chance that no opponent to play holds it, each relative seat's hidden cards,
# each card's win chance in this trick
PER_LEVEL = 0
RUNNING = PER_LEVEL + STRENGTH_LEVELS
LOG_MISS = RUNNING + STRENGTH_LEVELS
HIDDEN = LOG_MISS + 52
WIN_CHANCES = HIDDEN + 4
FLOAT_SCRATCH = WIN_CHANCES + 52


def pack_rule_inputs(
    tables: dict[str, np.ndarray], settings: dict[str, int], weights: dict[str, np.ndarray | float]
) -> tuple[np.ndarray, np.ndarray]:
    """(ints, floats) for the kernels, read-only. ``tables``: strength, play_value, keep_value, is_trump (4, 52),
    beats (4, 53, 52), trump_order (4, N), void_cards (4, 16) uint64, team_of_seat (n,); ``settings``: players,
    min_bid, total, low_held, six_card, pull_trumps, probe_as_maker, contest_points, deny, preempt; ``weights``:
    held, unheld (6,), order_value (4, N), bid_margin, contest_allowance, partner_overcall, preempt_shade,
    feed_chance, save_chance, win_chance."""
    ints = np.zeros(A_SIZE, dtype=np.int64)
    for name, start in (
        ("strength", A_STRENGTH),
        ("play_value", A_PLAY_VALUE),
        ("keep_value", A_KEEP_VALUE),
        ("is_trump", A_IS_TRUMP),
    ):
        ints[start : start + 208] = np.asarray(tables[name]).reshape(-1)
    ints[A_BEATS : A_BEATS + 4 * 53 * 52] = np.asarray(tables["beats"]).reshape(-1)
    order = np.asarray(tables["trump_order"])
    count = order.shape[1]
    padded = np.zeros((4, MAX_TRUMPS), dtype=np.int64)
    padded[:, :count] = order
    ints[A_TRUMP_ORDER : A_TRUMP_ORDER + 4 * MAX_TRUMPS] = padded.reshape(-1)
    ints[A_VOID_CARDS : A_VOID_CARDS + 64] = np.asarray(tables["void_cards"], dtype=np.uint64).view(np.int64).ravel()
    team_of_seat = np.asarray(tables["team_of_seat"])
    ints[A_TEAM_OF_SEAT : A_TEAM_OF_SEAT + team_of_seat.size] = team_of_seat
    ints[A_TRUMP_COUNT] = count
    for name, at in (
        ("players", A_PLAYERS),
        ("min_bid", A_MIN_BID),
        ("total", A_TOTAL),
        ("low_held", A_LOW_HELD),
        ("six_card", A_SIX_CARD),
        ("pull_trumps", A_PULL_TRUMPS),
        ("probe_as_maker", A_PROBE_AS_MAKER),
        ("contest_points", A_CONTEST_POINTS),
        ("deny", A_DENY),
        ("preempt", A_PREEMPT),
    ):
        ints[at] = int(settings[name])
    floats = np.zeros(W_SIZE, dtype=np.float64)
    floats[W_HELD : W_HELD + 6] = weights["held"]
    floats[W_UNHELD : W_UNHELD + 6] = weights["unheld"]
    order_value = np.zeros((4, MAX_TRUMPS))
    order_value[:, :count] = weights["order_value"]
    floats[W_ORDER_VALUE : W_ORDER_VALUE + 4 * MAX_TRUMPS] = order_value.reshape(-1)
    for name, at in (
        ("bid_margin", W_BID_MARGIN),
        ("contest_allowance", W_CONTEST_ALLOWANCE),
        ("partner_overcall", W_PARTNER_OVERCALL),
        ("preempt_shade", W_PREEMPT_SHADE),
        ("feed_chance", W_FEED_CHANCE),
        ("save_chance", W_SAVE_CHANCE),
        ("win_chance", W_WIN_CHANCE),
    ):
        floats[at] = float(weights[name])
    ints.setflags(write=False)
    floats.setflags(write=False)
    return ints, floats


# ---------------------------------------------------------------------- reading a row


@njit(cache=True, inline="always")
def holds(cards, card):
    """Card ``card`` is in the uint64 card set ``cards``."""
    return (cards >> np.uint64(card)) & ONE != ZERO


@njit(cache=True, inline="always")
def first_set(rows, g, start, width):
    """Index of the first nonzero entry of ``rows[g, start : start + width]`` (a one-hot piece), -1 for none."""
    for i in range(width):
        if rows[g, start + i]:
            return i
    return -1


@njit(cache=True, inline="always")
def first_legal(masks, g, start, width):
    """``start`` + the first legal entry of ``masks[g, start : start + width]`` (``start`` when none is)."""
    found = first_set(masks, g, start, width)
    return start + max(found, 0)


@njit(cache=True, inline="always")
def pairwise_sum(values, start, count):
    """``values[start : start + count].sum()`` added in numpy's order (eight running sums, then the rest), so
    the result is numpy's to the last bit (count <= 128)."""
    if count < 8:
        total = 0.0
        for i in range(count):
            total += values[start + i]
        return total
    r0, r1, r2, r3 = values[start], values[start + 1], values[start + 2], values[start + 3]
    r4, r5, r6, r7 = values[start + 4], values[start + 5], values[start + 6], values[start + 7]
    i = 8
    blocks_end = count - count % 8
    while i < blocks_end:
        r0 += values[start + i]
        r1 += values[start + i + 1]
        r2 += values[start + i + 2]
        r3 += values[start + i + 3]
        r4 += values[start + i + 4]
        r5 += values[start + i + 5]
        r6 += values[start + i + 6]
        r7 += values[start + i + 7]
        i += 8
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < count:
        total += values[start + i]
        i += 1
    return 0.0 + total
