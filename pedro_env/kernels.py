"""The compiled rules: numba kernels that deal, step, list legal actions and encode observations.

Every kernel loops over the games of a batch, one game at a time, in compiled code; the same
kernels serve a batch of one (the AEC env) and a batch of a million. With ``NUMBA_DISABLE_JIT=1`` they
run as plain Python (slowly), for a debugger. Inputs are flat numpy arrays:

- ``buf`` (bytes) and ``eo`` (int64 per state field): the state, every field one contiguous block of
  ``buf`` in :class:`pedro_env.state.PedroState` field order (``F_*`` below), starting at element
  ``eo[F]`` of the buffer viewed as that field's dtype (see :func:`_typed_views`).
- ``params`` (int64, ``P_*`` below): the config's rule switches and sizes, from :func:`config_params`.
- ``tab`` (int64, ``T_*`` below): the variant's lookup tables flattened, from :func:`pack_tables`;
  card sets are stored as their (non-negative, below 2**52) integer values.

Per-game helpers (``legal_play_set``, ``trick_winner_of``, ``team_points``, ...) are compiled
functions callable from other kernels (the search agents' solver uses them). How the envs keep a call
cheap (entry points without dispatch, loops without reference counting, no literal arguments between
kernels): docs/engine.md.
"""

from __future__ import annotations

import os
import sys
import tempfile

import numpy as np
from llvmlite import ir
from numba import config, njit, types
from numba.core import cgutils
from numba.core.caching import InTreeCacheLocator, UserWideCacheLocator
from numba.extending import intrinsic


def _cache_locator_found() -> bool:
    """Whether numba can cache these kernels beside this file or in the user's cache directory."""
    probe = _cache_locator_found  # any function of this file will do
    return any(
        locator.from_function(probe, __file__) is not None for locator in (InTreeCacheLocator, UserWideCacheLocator)
    )


if not config.CACHE_DIR and not _cache_locator_found():  # a read-only install and home: cache in the temp dir
    config.CACHE_DIR = os.path.join(
        tempfile.gettempdir(), f"pedro_env-numba-{os.getuid() if hasattr(os, 'getuid') else 0}"
    )

# ---------------------------------------------------------------- layouts shared with Python

# state fields, in PedroState order
(
    F_SEED,
    F_MATCH_INDEX,
    F_DEAL_INDEX,
    F_PHASE,
    F_ACTOR,
    F_DEALER,
    F_HANDS,
    F_STOCK,
    F_IN_STOCK,
    F_BIDS,
    F_HIGH_BID,
    F_MAKER,
    F_TRUMP,
    F_DISCARDS,
    F_DONE,
    F_DRAWN,
    F_OPEN_DRAWS,
    F_SET_ASIDE,
    F_ROBBING,
    F_TRICK,
    F_TRICK_LEADER,
    F_TRICK_SIZE,
    F_TRICKS_DONE,
    F_LAST_TRICK,
    F_LAST_TRICK_WINNER,
    F_PLAYED,
    F_VOIDS,
    F_WON,
    F_LOW_TEAM,
    F_SCORES,
    F_DEAL_OVER,
    F_LAST_REDEAL,
    F_LAST_MAKER,
    F_LAST_BID,
    F_LAST_TRUMP,
    F_LAST_POINTS,
    F_LAST_MADE,
    F_LAST_DELTA,
    F_LAST_RENEGE,
    F_REWARDS,
    F_TERMINATED,
    F_TRUNCATED,
    F_WINNER,
) = range(43)

# config params
(
    P_PLAYERS,
    P_TEAMS,
    P_STOCK,
    P_HAND,
    P_MIN_BID,
    P_TOTAL,
    P_DEALER_FORCED,
    P_SIX_CARD,
    P_REFILL,
    P_SIMPLE,
    P_LOW_HELD,
    P_RENEGE_PENALTY,
    P_REWARD_WIN,
    P_EPISODE_DEAL,
    P_MAX_DEALS,
    P_TARGET,
) = range(16)
P_TEAM_OF_SEAT = 16  # n entries
NUM_PARAMS = 20
REFILL_CODES = {"maker_sorted": 0, "top": 1, "dealer_robs": 2}
REFILL_MAKER_SORTED, REFILL_TOP, REFILL_ROBS = 0, 1, 2

# variant tables, flattened (index [trump, led] of the (4, 53) trick tables: trump * 53 + led, led 52 = none)
MAX_POINT_VALUES = 5
T_FOLLOW = 0
T_TRUMP_ALLOWED = T_FOLLOW + 4 * 53
T_ANSWERS = T_TRUMP_ALLOWED + 4 * 53
T_LED_SUIT_BIT = T_ANSWERS + 4 * 53
T_BEATS = T_LED_SUIT_BIT + 4 * 53  # [trump, led, card] of (4, 53, 52)
T_IS_TRUMP = T_BEATS + 4 * 53 * 52  # [trump, card] of (4, 52)
T_LOW_SET = T_IS_TRUMP + 4 * 52  # [trump]
T_POINT_SETS = T_LOW_SET + 4  # [trump, k] of (4, MAX_POINT_VALUES)
T_POINT_VALUES = T_POINT_SETS + 4 * MAX_POINT_VALUES  # [k]
T_NUM_POINT_VALUES = T_POINT_VALUES + MAX_POINT_VALUES
T_SIZE = T_NUM_POINT_VALUES + 1

# action layout (pedro_env.actions)
PASS_ACTION, TRUMP_OFFSET, DISCARD_OFFSET, DONE_ACTION, PLAY_OFFSET, NUM_ACTIONS = 0, 24, 28, 80, 81, 133
MAX_TOTAL_POINTS = 23
BID, TRUMP, DISCARD, PLAY, OVER = 0, 1, 2, 3, 4
HAND_AT_PLAY = 6
TRICKS_PER_DEAL = 6

# observation piece starts (pedro_env.encoding), indices into the ``pieces`` array
(
    O_HAND,
    O_OPEN_DRAWS,
    O_DISCARDS,
    O_SET_ASIDE,
    O_PLAYED,
    O_TRICK,
    O_WON,
    O_PHASE,
    O_DEALER,
    O_BIDS,
    O_MAKER,
    O_TRUMP,
    O_DONE,
    O_DRAWN,
    O_HAND_SIZES,
    O_STOCK_LEFT,
    O_ROBBING,
    O_TRICK_LEADER,
    O_VOIDS,
    O_TRICKS_DONE,
    O_POINTS,
    O_TO_GO,
    O_TARGET,
) = range(23)
NUM_PIECES = 23

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_ZERO = np.uint64(0)
_ONE = np.uint64(1)


# ---------------------------------------------------------------- views of the state buffer


@njit(cache=True, inline="always")
def _typed_views(buf):
    """The state buffer as each dtype its fields use: (u8, i8, i16, i32, i64, u64, f32). Field ``F`` of game
    ``g`` (seat ``s``) is ``view[eo[F] + g]`` (``view[eo[F] + g * n + s]``), ``eo`` the element offsets of
    :attr:`pedro_env.state.PedroState.element_offsets`; bool fields are read through u8."""
    return (
        buf,
        buf.view(np.int8),
        buf.view(np.int16),
        buf.view(np.int32),
        buf.view(np.int64),
        buf.view(np.uint64),
        buf.view(np.float32),
    )


if config.DISABLE_JIT:  # plain Python: reads give Python ints, so small dtypes do not wrap in index arithmetic

    class _PythonView:
        """An integer view of the state buffer whose scalar reads are Python ints (numba widens them too)."""

        def __init__(self, array):
            self.array = array
            self.shape = array.shape

        def __getitem__(self, key):
            value = self.array[key]
            return _PythonView(value) if isinstance(value, np.ndarray) else int(value)

        def __setitem__(self, key, value):
            self.array[key] = value

    _compiled_typed_views = _typed_views

    def _typed_views(buf):
        views = _compiled_typed_views(buf)
        return (*(_PythonView(view) for view in views[:6]), views[6])


def _bit_intrinsic(name):
    """A compiled ``llvm.<name>`` (ctpop, cttz) of a uint64, as an int64 (one instruction on x86-64 and arm64)."""

    @intrinsic
    def bit_count(typingctx, x):
        def codegen(context, builder, signature, args):
            (value,) = args
            flag = [ir.IntType(1)] if name in ("cttz", "ctlz") else []  # is a zero input poison (no: 0)
            function_type = ir.FunctionType(value.type, [value.type, *flag])
            function = cgutils.get_or_insert_function(builder.module, function_type, f"llvm.{name}.i64")
            return builder.call(function, [value, *(ir.Constant(t, 0) for t in flag)])

        return types.int64(types.uint64), codegen

    return bit_count


if config.DISABLE_JIT:  # plain Python, for a debugger

    def popcount(x):
        """Number of set bits of a uint64."""
        return int(x).bit_count()

    def lowest_card(x):
        """Index of the lowest set bit of a nonzero uint64 (the lowest card of a card set)."""
        return (int(x) & -int(x)).bit_length() - 1

    def _leading_zeros(x):
        return 64 - int(x).bit_length()

else:
    popcount = _bit_intrinsic("ctpop")
    lowest_card = _bit_intrinsic("cttz")
    _leading_zeros = _bit_intrinsic("ctlz")


@njit(cache=True, _nrt=False, inline="always")
def highest_card(x):
    """Index of the highest set bit of a nonzero uint64 (the highest card id of a card set)."""
    return 63 - _leading_zeros(x)


def _bits_as_bytes_store(width):
    """A compiled ``store(out, g, start, bits)``: the low ``width`` bits of uint64 ``bits`` as ``width`` bytes of
    0/1 into ``out[g, start : start + width]`` (C-contiguous 2D bytes, uint8 or bool; byte ``i`` = bit ``i``): the
    bits as a mask of 64 lanes widened to bytes (one masked move with AVX-512, a few shuffles with AVX2), and
    one store of ``width`` bytes; no bounds check."""
    if config.DISABLE_JIT:  # plain Python, for a debugger

        def store(out, g, start, bits):
            out[g, start : start + width] = [(int(bits) >> i) & 1 for i in range(width)]

        return store

    @intrinsic
    def store(typingctx, out, g, start, bits):
        def codegen(context, builder, signature, args):
            array = context.make_array(signature.args[0])(context, builder, args[0])
            row_stride = cgutils.unpack_tuple(builder, array.strides)[0]
            offset = builder.add(builder.mul(args[1], row_stride), args[2])
            lanes = builder.bitcast(args[3], ir.VectorType(ir.IntType(1), 64))
            as_bytes = builder.zext(lanes, ir.VectorType(ir.IntType(8), 64))
            first = ir.Constant(ir.VectorType(ir.IntType(32), width), list(range(width)))
            piece = builder.shuffle_vector(as_bytes, ir.Constant(as_bytes.type, None), first)
            pointer = builder.bitcast(builder.gep(array.data, [offset]), piece.type.as_pointer())
            builder.store(piece, pointer, align=1)
            return context.get_dummy_value()

        return types.void(out, types.intp, types.intp, types.uint64), codegen

    return store


store_card_bytes = _bits_as_bytes_store(52)  # a card set as a 52-byte piece
store_suit_bytes = _bits_as_bytes_store(4)  # a 4-bit suit set (voids) as 4 bytes
_store_64_bytes = _bits_as_bytes_store(64)


@njit(cache=True, _nrt=False, inline="always")
def zero_bytes(out, g, start, length):
    """Zero ``out[g, start : start + length]`` (bytes) with 64-byte stores, the last one overlapping the one
    before it (instead of a call to memset)."""
    if length < 64:
        out[g, start : start + length] = 0
        return
    end = start + length - 64
    while start < end:
        _store_64_bytes(out, g, start, _ZERO)
        start += 64
    _store_64_bytes(out, g, end, _ZERO)


@njit(cache=True, inline="always")
def seat_after(seat, steps, n):
    """``(seat + steps) % n`` for seat in 0..n-1 and steps in 0..n (no division: this sits in every loop)."""
    later = seat + steps
    return later - n if later >= n else later


@njit(cache=True, inline="always")
def seat_from(seat, viewer, n):
    """``(seat - viewer) % n``, the seat relative to ``viewer``, for both in 0..n-1."""
    relative = seat - viewer
    return relative + n if relative < 0 else relative


@njit(cache=True, inline="always")
def card_bit(card):
    return _ONE << np.uint64(card)


@njit(cache=True, inline="always")
def splitmix64(x):
    z = x + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, _nrt=False)
def hashed_deck_into(seed, match_index, deal_index, deck, keys):
    """Fill ``deck`` (52,) int8 with the shuffled deck of (seed, match, deal): card ids, top first, in the
    order of their hashed keys (``keys``, (52,) uint64 scratch; the keys are distinct, so the order is unique)."""
    key = splitmix64(splitmix64(splitmix64(np.uint64(seed)) ^ np.uint64(match_index)) ^ np.uint64(deal_index + 1))
    for card in range(52):
        keys[card] = splitmix64(key + np.uint64(card) * _GOLDEN)
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
    key = splitmix64(splitmix64(splitmix64(np.uint64(seed)) ^ np.uint64(match_index)) ^ _ZERO)
    return np.int64(key % np.uint64(num_players))


@njit(cache=True, _nrt=False, inline="always")
def legal_play_set(hand, trump, led_card, tab):
    """uint64 card set the actor may play from ``hand`` with ``led_card`` leading (-1: the actor leads)."""
    key = trump * 53 + (52 if led_card < 0 else led_card)
    follows = hand & np.uint64(tab[T_FOLLOW + key])
    if follows == _ZERO:
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
def team_points(won, trump, tab):
    """Points in a team's won card set for ``trump`` (Low counted as captured)."""
    points = 0
    for k in range(tab[T_NUM_POINT_VALUES]):
        points += popcount(won & np.uint64(tab[T_POINT_SETS + trump * MAX_POINT_VALUES + k])) * tab[T_POINT_VALUES + k]
    return points


@njit(cache=True, _nrt=False)
def deal_points_into(won, trump, low_team, low_held, tab, points):
    """Points each team took, into ``points`` (T,): ``won`` (T,) card sets; ``low_held`` counts Low for its holder."""
    low = np.uint64(tab[T_LOW_SET + trump])
    for team in range(won.shape[0]):
        value = team_points(won[team], trump, tab)
        if low_held:
            value -= popcount(won[team] & low)
            if team == low_team:
                value += 1
        points[team] = value


@njit(cache=True, _nrt=False)
def score_deal_into(points, maker_team, bid, simple, delta):
    """Score change per team into ``delta`` (T,); returns whether the bid was made."""
    made = points[maker_team] >= bid
    teams = points.shape[0]
    for team in range(teams):
        delta[team] = points[team]
    if made and not simple:
        lead = points[0] - points[1]
        delta[0] = max(lead, 0)
        delta[1] = max(-lead, 0)
    if not made:
        delta[maker_team] = -bid
    return made


@njit(cache=True, _nrt=False)
def match_winner_of(scores, target, maker_team, made):
    """Winning team after a scored deal, -1 while the match goes on (docs/rules.md section 8)."""
    teams = scores.shape[0]
    reached = 0
    last_reached = -1
    for team in range(teams):
        if scores[team] >= target:
            reached += 1
            last_reached = team
    if reached == 1:
        return last_reached
    if reached == 0:
        return -1
    if made and scores[maker_team] >= target:
        return maker_team
    best = -(2**31)
    for team in range(teams):
        if team != maker_team and scores[team] >= target and scores[team] > best:
            best = scores[team]
    leader, leaders = -1, 0
    for team in range(teams):
        if team != maker_team and scores[team] >= target and scores[team] == best:
            leaders += 1
            if leader < 0:
                leader = team
    return leader if leaders == 1 else -1


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


# ---------------------------------------------------------------- dealing


@njit(cache=True, _nrt=False)
def _start_deal(u8, i8, i16, i32, i64, u64, f32, eo, b, g, params, deck):
    """Deal ``deck`` (52,) to game ``g`` (its dealer and deal_index set) and open the bidding."""
    n, teams, stock_size, hand_size = params[P_PLAYERS], params[P_TEAMS], params[P_STOCK], params[P_HAND]
    dealt = n * hand_size
    eldest = seat_after(i8[eo[F_DEALER] + g], 1, n)
    for seat in range(n):
        u64[eo[F_HANDS] + g * n + seat] = _ZERO
    for position in range(dealt):
        seat = seat_after(eldest, (position // 3) % n, n)
        u64[eo[F_HANDS] + g * n + seat] |= card_bit(deck[position])
    for i in range(stock_size):
        i8[eo[F_STOCK] + g * stock_size + i] = deck[dealt + i]
        u8[eo[F_IN_STOCK] + g * stock_size + i] = 1
    for seat in range(n):
        i = g * n + seat
        i8[eo[F_BIDS] + i] = -1
        u64[eo[F_DISCARDS] + i] = _ZERO
        u8[eo[F_DONE] + i] = 0
        i8[eo[F_DRAWN] + i] = 0
        i8[eo[F_TRICK] + i] = -1
        i8[eo[F_LAST_TRICK] + i] = -1
        u64[eo[F_PLAYED] + i] = _ZERO
        u8[eo[F_VOIDS] + i] = 0
    for team in range(teams):
        u64[eo[F_WON] + g * teams + team] = _ZERO
    i8[eo[F_HIGH_BID] + g] = 0
    i8[eo[F_MAKER] + g] = -1
    i8[eo[F_TRUMP] + g] = -1
    u64[eo[F_OPEN_DRAWS] + g] = _ZERO
    u64[eo[F_SET_ASIDE] + g] = _ZERO
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
    u8, i8, i16, i32, i64, u64, f32 = _typed_views(buf)
    for i in range(games.shape[0]):
        _start_deal(u8, i8, i16, i32, i64, u64, f32, eo, b, games[i], params, decks[i])


@njit(cache=True, _nrt=False)
def _deal_or_defer(u8, i8, i16, i32, i64, u64, f32, eo, b, g, params, hashed, deck, keys, pending, waiting):
    """Deal game ``g`` a hashed deck, or (not ``hashed``) append it to ``pending``; returns the pending count."""
    if not hashed:
        pending[waiting] = g
        return waiting + 1
    seed = u64[eo[F_SEED] + g]
    hashed_deck_into(seed, i64[eo[F_MATCH_INDEX] + g], i32[eo[F_DEAL_INDEX] + g], deck, keys)
    _start_deal(u8, i8, i16, i32, i64, u64, f32, eo, b, g, params, deck)
    return waiting


@njit(cache=True)
def new_matches(buf, eo, b, params, games, dealers, hashed, pending):
    """Start fresh matches in ``games`` (seed and match_index set): scores 0, first dealer (``dealers``, or
    hashed where ``dealers[i] < 0``), first deal (hashed when ``hashed``, else listed in ``pending``).
    Returns the number of games written to ``pending`` (games still to be dealt)."""
    u8, i8, i16, i32, i64, u64, f32 = _typed_views(buf)
    teams = params[P_TEAMS]
    deck = np.empty(52, dtype=np.int8)
    keys = np.empty(52, dtype=np.uint64)
    waiting = np.int64(0)  # not a literal 0: _deal_or_defer would be compiled again for it
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
        waiting = _deal_or_defer(
            u8, i8, i16, i32, i64, u64, f32, eo, b, g, params, hashed, deck, keys, pending, waiting
        )
    return waiting


# ---------------------------------------------------------------- the phases of one game


@njit(cache=True, _nrt=False, inline="always")
def _start_play(u8, i8, i16, i32, i64, u64, f32, eo, b, g, params, tab):
    """The maker leads the first trick; remember which team holds Low (for low="held")."""
    n = params[P_PLAYERS]
    maker = i8[eo[F_MAKER] + g]
    i8[eo[F_PHASE] + g] = PLAY
    i8[eo[F_ACTOR] + g] = maker
    i8[eo[F_TRICK_LEADER] + g] = maker
    low = np.uint64(tab[T_LOW_SET + i8[eo[F_TRUMP] + g]])
    low_team = -1
    for seat in range(n):
        if u64[eo[F_HANDS] + g * n + seat] & low != _ZERO:
            low_team = params[P_TEAM_OF_SEAT + seat]
            break
    i8[eo[F_LOW_TEAM] + g] = low_team


@njit(cache=True, _nrt=False, inline="always")
def _apply_bid(u8, i8, i16, i32, i64, u64, f32, eo, b, g, action, params):
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


@njit(cache=True, _nrt=False)
def _take_into_hand(u8, i8, i16, i32, i64, u64, f32, eo, b, g, seat, taken, params):
    """Move the stock positions flagged in ``taken`` (S,) into ``seat``'s hand."""
    n, stock_size = params[P_PLAYERS], params[P_STOCK]
    cards = _ZERO
    count = 0
    for i in range(stock_size):
        if taken[i]:
            cards |= card_bit(i8[eo[F_STOCK] + g * stock_size + i])
            u8[eo[F_IN_STOCK] + g * stock_size + i] = 0
            count += 1
    u64[eo[F_HANDS] + g * n + seat] |= cards
    i8[eo[F_DRAWN] + g * n + seat] = i8[eo[F_DRAWN] + g * n + seat] + count


@njit(cache=True, _nrt=False)
def _refill(u8, i8, i16, i32, i64, u64, f32, eo, b, g, params, tab, taken):
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
            face_up = _ZERO
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
        _take_into_hand(u8, i8, i16, i32, i64, u64, f32, eo, b, g, seat, taken, params)


@njit(cache=True, _nrt=False, inline="always")
def _apply_discard(u8, i8, i16, i32, i64, u64, f32, eo, b, g, action, params, tab, taken):
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
    _refill(u8, i8, i16, i32, i64, u64, f32, eo, b, g, params, tab, taken)
    stock_size = params[P_STOCK]
    if robs:  # the dealer adds the whole remaining stock, face down, then discards to 6
        for i in range(stock_size):
            taken[i] = u8[eo[F_IN_STOCK] + g * stock_size + i] != 0
        _take_into_hand(u8, i8, i16, i32, i64, u64, f32, eo, b, g, dealer, taken, params)
        u8[eo[F_ROBBING] + g] = 1
        i8[eo[F_ACTOR] + g] = dealer
        return False
    # trumps left in the stock are turned face up and set aside
    trump = i8[eo[F_TRUMP] + g]
    aside = _ZERO
    for i in range(stock_size):
        card = i8[eo[F_STOCK] + g * stock_size + i]
        if u8[eo[F_IN_STOCK] + g * stock_size + i] and tab[T_IS_TRUMP + trump * 52 + card]:
            aside |= card_bit(card)
            u8[eo[F_IN_STOCK] + g * stock_size + i] = 0
    u64[eo[F_SET_ASIDE] + g] = aside
    return True


@njit(cache=True, _nrt=False, inline="always")
def _apply_play(u8, i8, i16, i32, i64, u64, f32, eo, b, g, action, params, tab):
    n = params[P_PLAYERS]
    seat = i8[eo[F_ACTOR] + g]
    card = action - PLAY_OFFSET
    trump = i8[eo[F_TRUMP] + g]
    leader = i8[eo[F_TRICK_LEADER] + g]
    led_card = i8[eo[F_TRICK] + g * n + leader]
    bit = card_bit(card)
    if params[P_RENEGE_PENALTY]:
        if legal_play_set(u64[eo[F_HANDS] + g * n + seat], trump, led_card, tab) & bit == _ZERO:
            u8[eo[F_DEAL_OVER] + g] = 1
            i8[eo[F_LAST_RENEGE] + g] = params[P_TEAM_OF_SEAT + seat]
            return
    # a follower who neither follows the led suit nor trumps a non-trump lead shows a void in the led suit
    key = trump * 53 + (52 if led_card < 0 else led_card)
    if np.uint64(tab[T_ANSWERS + key]) & bit == _ZERO:
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
    cards = _ZERO
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


@njit(cache=True, _nrt=False)
def _finish_deal(u8, i8, i16, i32, i64, u64, f32, eo, b, g, params, tab, points, delta):
    """Score the deal that ended in game ``g`` (or record it thrown in) and decide the match
    (``points``, ``delta``: (T,) int64 scratch). Returns whether the match goes on (the caller deals again)."""
    n, teams = params[P_PLAYERS], params[P_TEAMS]
    thrown_in = u8[eo[F_LAST_REDEAL] + g] != 0
    maker = i8[eo[F_MAKER] + g]
    high_bid = i8[eo[F_HIGH_BID] + g]
    trump = i8[eo[F_TRUMP] + g]
    i8[eo[F_LAST_MAKER] + g] = -1 if thrown_in else maker
    i8[eo[F_LAST_BID] + g] = 0 if thrown_in else high_bid
    i8[eo[F_LAST_TRUMP] + g] = -1 if thrown_in else trump
    last_points = i16[eo[F_LAST_POINTS] + g * teams : eo[F_LAST_POINTS] + (g + 1) * teams]
    last_delta = i32[eo[F_LAST_DELTA] + g * teams : eo[F_LAST_DELTA] + (g + 1) * teams]
    last_points[:] = 0
    last_delta[:] = 0
    i8[eo[F_LAST_MADE] + g] = -1
    won_match = False
    if not thrown_in:
        maker_team = params[P_TEAM_OF_SEAT + maker]
        bid = np.int64(high_bid)
        won = u64[eo[F_WON] + g * teams : eo[F_WON] + (g + 1) * teams]
        deal_points_into(won, trump, i8[eo[F_LOW_TEAM] + g], params[P_LOW_HELD] != 0, tab, points)
        made = score_deal_into(points, maker_team, bid, params[P_SIMPLE] != 0, delta)
        renege_team = i8[eo[F_LAST_RENEGE] + g]
        if params[P_RENEGE_PENALTY] and renege_team >= 0:
            made = renege_team != maker_team
            for team in range(teams):
                delta[team] = (0 if made else -bid) if team == renege_team else params[P_TOTAL]
        scores = i32[eo[F_SCORES] + g * teams : eo[F_SCORES] + (g + 1) * teams]
        for team in range(teams):
            scores[team] += delta[team]
            last_points[team] = points[team]
            last_delta[team] = delta[team]
        i8[eo[F_LAST_MADE] + g] = 1 if made else 0
        i8[eo[F_WINNER] + g] = match_winner_of(scores, params[P_TARGET], maker_team, made)
        won_match = i8[eo[F_WINNER] + g] >= 0
        if not params[P_REWARD_WIN]:  # each seat: (its team's delta - the opponents' mean delta) / total points
            total_delta = 0
            for team in range(teams):
                total_delta += delta[team]
            for seat in range(n):
                team = params[P_TEAM_OF_SEAT + seat]
                others_mean = (total_delta - delta[team]) / (teams - 1)
                f32[eo[F_REWARDS] + g * n + seat] += np.float32((delta[team] - others_mean) / params[P_TOTAL])
    if params[P_REWARD_WIN] and won_match:
        for seat in range(n):
            f32[eo[F_REWARDS] + g * n + seat] += np.float32(
                1.0 if params[P_TEAM_OF_SEAT + seat] == i8[eo[F_WINNER] + g] else -1.0
            )
    one_deal = params[P_EPISODE_DEAL] != 0
    truncated = not won_match and not one_deal and i32[eo[F_DEAL_INDEX] + g] + 1 >= params[P_MAX_DEALS]
    if won_match or one_deal:
        u8[eo[F_TERMINATED] + g] = 1
    if truncated:
        u8[eo[F_TRUNCATED] + g] = 1
    if won_match or one_deal or truncated:
        i8[eo[F_PHASE] + g] = OVER
        i8[eo[F_TRICK_LEADER] + g] = -1  # no trick follows
        return False
    i32[eo[F_DEAL_INDEX] + g] += 1
    i8[eo[F_DEALER] + g] = seat_after(i8[eo[F_DEALER] + g], 1, n)
    return True


def step_scratch(params: np.ndarray) -> tuple:
    """The scratch arrays of :func:`step_games` (and of the env steps built on it): taken (stock,) bool,
    deck (52,) int8, keys (52,) uint64, points and delta (teams,) int64. Made once by the caller, so a step
    allocates nothing."""
    teams = int(params[P_TEAMS])
    return (
        np.zeros(int(params[P_STOCK]), dtype=np.bool_),
        np.zeros(52, dtype=np.int8),
        np.zeros(52, dtype=np.uint64),
        np.zeros(teams, dtype=np.int64),
        np.zeros(teams, dtype=np.int64),
    )


@njit(cache=True, _nrt=False)
def step_games(buf, eo, b, params, tab, actions, hashed, pending, taken, deck, keys, points, delta):
    """Apply one action per game, in place (games OVER ignore theirs). Deals that end are scored and
    the next deal dealt: hashed decks when ``hashed``, else the games are listed in ``pending`` for the
    caller to deal. ``taken`` .. ``delta``: scratch from :func:`step_scratch` (no reference counting here).
    Returns the number of games written to ``pending``."""
    u8, i8, i16, i32, i64, u64, f32 = _typed_views(buf)
    waiting = np.int64(0)  # not a literal 0: _step_game would be compiled again for it
    for g in range(b):
        waiting = _step_game(
            u8, i8, i16, i32, i64, u64, f32, eo, b, g, actions[g], params, tab, hashed, pending, waiting,
            taken, deck, keys, points, delta,
        )  # fmt: skip
    return waiting


@njit(cache=True, _nrt=False, inline="always")
def _step_game(
    u8, i8, i16, i32, i64, u64, f32, eo, b, g, action, params, tab, hashed, pending, waiting,
    taken, deck, keys, points, delta,
):  # fmt: skip
    """Game ``g`` takes ``action`` (a game OVER ignores it): what the last step's deal ending reported is
    cleared first; a deal that ends is scored and the next one dealt (or ``g`` appended to ``pending``, see
    :func:`step_games`). Returns the new count of ``pending``."""
    n = params[P_PLAYERS]
    if u8[eo[F_DEAL_OVER] + g]:  # only a deal's end sets these
        for seat in range(n):
            f32[eo[F_REWARDS] + g * n + seat] = 0.0
        u8[eo[F_DEAL_OVER] + g] = 0
        u8[eo[F_LAST_REDEAL] + g] = 0
        i8[eo[F_LAST_RENEGE] + g] = -1
        u8[eo[F_TERMINATED] + g] = 0
        u8[eo[F_TRUNCATED] + g] = 0
    p = i8[eo[F_PHASE] + g]
    if p == PLAY:
        _apply_play(u8, i8, i16, i32, i64, u64, f32, eo, b, g, action, params, tab)
    elif p == BID:
        _apply_bid(u8, i8, i16, i32, i64, u64, f32, eo, b, g, action, params)
    elif p == TRUMP:
        i8[eo[F_TRUMP] + g] = action - TRUMP_OFFSET
        if params[P_SIX_CARD]:
            _start_play(u8, i8, i16, i32, i64, u64, f32, eo, b, g, params, tab)
        else:
            i8[eo[F_PHASE] + g] = DISCARD
            i8[eo[F_ACTOR] + g] = seat_after(i8[eo[F_DEALER] + g], 1, n)
    elif p == DISCARD:
        if _apply_discard(u8, i8, i16, i32, i64, u64, f32, eo, b, g, action, params, tab, taken):
            _start_play(u8, i8, i16, i32, i64, u64, f32, eo, b, g, params, tab)
    if u8[eo[F_DEAL_OVER] + g] and _finish_deal(u8, i8, i16, i32, i64, u64, f32, eo, b, g, params, tab, points, delta):
        waiting = _deal_or_defer(
            u8, i8, i16, i32, i64, u64, f32, eo, b, g, params, hashed, deck, keys, pending, waiting
        )
    return waiting


# ---------------------------------------------------------------- legal actions and observations


@njit(cache=True, _nrt=False)
def legal_masks(buf, eo, b, params, tab, mask):
    """Fill ``mask`` (B, 133) bool with the actor's legal actions (all False where the phase is OVER).
    Allocates nothing, so it runs without reference counting (the array views it takes cost 2/3 of its time)."""
    u8, i8, i16, i32, i64, u64, f32 = _typed_views(buf)
    for g in range(b):
        _legal_mask_of(u8, i8, u64, eo, params, tab, g, mask)


@njit(cache=True, _nrt=False, inline="always")
def _legal_mask_of(u8, i8, u64, eo, params, tab, g, mask):
    """Row ``g`` of :func:`legal_masks`."""
    n, stock_size = params[P_PLAYERS], params[P_STOCK]
    zero_bytes(mask, g, 0, NUM_ACTIONS)
    p = i8[eo[F_PHASE] + g]
    if p == BID:
        high = i8[eo[F_HIGH_BID] + g]
        mask[g, PASS_ACTION] = True
        for bid in range(max(high + 1, params[P_MIN_BID]), params[P_TOTAL] + 1):
            mask[g, bid] = True
        if params[P_DEALER_FORCED] and high == 0 and i8[eo[F_ACTOR] + g] == i8[eo[F_DEALER] + g]:
            mask[g, PASS_ACTION] = False
    elif p == TRUMP:
        for suit in range(4):
            mask[g, TRUMP_OFFSET + suit] = True
    elif p == DISCARD:
        seats = u64[eo[F_HANDS] + g * n : eo[F_HANDS] + (g + 1) * n]
        may_discard, may_say_done = discard_options_of(
            seats,
            u8[eo[F_DONE] + g * n : eo[F_DONE] + (g + 1) * n],
            i8[eo[F_DRAWN] + g * n : eo[F_DRAWN] + (g + 1) * n],
            u64[eo[F_SET_ASIDE] + g],
            u8[eo[F_ROBBING] + g] != 0,
            i8[eo[F_ACTOR] + g],
            stock_size,
        )
        if may_discard:
            store_card_bytes(mask, g, DISCARD_OFFSET, seats[i8[eo[F_ACTOR] + g]])
        mask[g, DONE_ACTION] = may_say_done
    elif p == PLAY:
        leader = i8[eo[F_TRICK_LEADER] + g]
        led = i8[eo[F_TRICK] + g * n + leader]
        legal = legal_play_set(u64[eo[F_HANDS] + g * n + i8[eo[F_ACTOR] + g]], i8[eo[F_TRUMP] + g], led, tab)
        store_card_bytes(mask, g, PLAY_OFFSET, legal)


@njit(cache=True, _nrt=False)
def encode_games(buf, eo, b, params, tab, pieces, to_go_cap, viewer, out):
    """Fill ``out`` (B, D) uint8 with each game's observation from seat ``viewer[g]`` (pedro_env.encoding);
    an ``out`` of (B, D + n*52 + 52) also gets every relative seat's hand and the unseen stock (the full state).
    Allocates nothing, so it runs without reference counting."""
    u8, i8, i16, i32, i64, u64, f32 = _typed_views(buf)
    for g in range(b):
        _encode_game(u8, i8, i32, u64, eo, params, tab, pieces, to_go_cap, g, viewer[g], out)


@njit(cache=True, _nrt=False, inline="always")
def _encode_game(u8, i8, i32, u64, eo, params, tab, pieces, to_go_cap, g, v, out):
    """Row ``g`` of :func:`encode_games`: game ``g`` seen from seat ``v``."""
    n, teams, stock_size, total = params[P_PLAYERS], params[P_TEAMS], params[P_STOCK], params[P_TOTAL]
    target = params[P_TARGET]
    size = pieces[O_TARGET] + 1
    full = out.shape[1] > size
    # offsets as locals: read once, not again after every store into ``out`` (which might alias them)
    p_target = pieces[O_TARGET]
    p_hand = pieces[O_HAND]
    p_bids = pieces[O_BIDS]
    p_done = pieces[O_DONE]
    p_drawn = pieces[O_DRAWN]
    p_hand_sizes = pieces[O_HAND_SIZES]
    p_voids = pieces[O_VOIDS]
    p_won = pieces[O_WON]
    p_points = pieces[O_POINTS]
    p_to_go = pieces[O_TO_GO]
    p_phase = pieces[O_PHASE]
    p_trump = pieces[O_TRUMP]
    p_dealer = pieces[O_DEALER]
    p_maker = pieces[O_MAKER]
    p_trick_leader = pieces[O_TRICK_LEADER]
    p_stock_left = pieces[O_STOCK_LEFT]
    p_robbing = pieces[O_ROBBING]
    p_tricks_done = pieces[O_TRICKS_DONE]
    e_hands = eo[F_HANDS]
    e_open_draws = eo[F_OPEN_DRAWS]
    e_set_aside = eo[F_SET_ASIDE]
    e_discards = eo[F_DISCARDS]
    e_played = eo[F_PLAYED]
    e_trick = eo[F_TRICK]
    e_bids = eo[F_BIDS]
    e_done = eo[F_DONE]
    e_drawn = eo[F_DRAWN]
    e_voids = eo[F_VOIDS]
    e_trump = eo[F_TRUMP]
    e_won = eo[F_WON]
    e_scores = eo[F_SCORES]
    e_phase = eo[F_PHASE]
    e_dealer = eo[F_DEALER]
    e_maker = eo[F_MAKER]
    e_trick_leader = eo[F_TRICK_LEADER]
    e_robbing = eo[F_ROBBING]
    e_tricks_done = eo[F_TRICKS_DONE]
    e_in_stock = eo[F_IN_STOCK]
    e_stock = eo[F_STOCK]
    cards_end = p_won + 52 * teams  # the card pieces are the first ones, hand .. won, one after another
    my_team = params[P_TEAM_OF_SEAT + v]
    # the card pieces, in layout order: hand, open draws, discards (n), set aside, played (n), trick, won (T)
    store_card_bytes(out, g, p_hand, u64[e_hands + g * n + v])
    store_card_bytes(out, g, p_hand + 52, u64[e_open_draws + g])
    store_card_bytes(out, g, p_hand + 52 * (2 + n), u64[e_set_aside + g])
    trick_set = _ZERO
    for r in range(n):
        i = g * n + seat_after(v, r, n)
        store_card_bytes(out, g, p_hand + 52 * (2 + r), u64[e_discards + i])
        store_card_bytes(out, g, p_hand + 52 * (3 + n + r), u64[e_played + i])
        if i8[e_trick + i] >= 0:
            trick_set |= card_bit(i8[e_trick + i])
    store_card_bytes(out, g, p_hand + 52 * (3 + 2 * n), trick_set)
    for t in range(teams):
        store_card_bytes(out, g, p_won + 52 * t, u64[e_won + g * teams + seat_after(my_team, t, teams)])
    zero_bytes(out, g, cards_end, size - cards_end)  # the rest of the observation, before the writes below
    total_drawn = 0
    for r in range(n):
        i = g * n + seat_after(v, r, n)
        out[g, p_bids + r * (total + 2) + 1 + i8[e_bids + i]] = 1
        out[g, p_done + r] = u8[e_done + i]
        out[g, p_drawn + r] = i8[e_drawn + i]
        out[g, p_hand_sizes + r] = popcount(u64[e_hands + i])
        store_suit_bytes(out, g, p_voids + 4 * r, np.uint64(u8[e_voids + i]))
        total_drawn += i8[e_drawn + i]
    trump = i8[e_trump + g]
    point_trump = trump & 3  # nothing is won before trumps are named
    for t in range(teams):
        team = seat_after(my_team, t, teams)
        out[g, p_points + t] = team_points(u64[e_won + g * teams + team], point_trump, tab)
        to_go = target - i32[e_scores + g * teams + team]
        out[g, p_to_go + t] = min(max(to_go, 0), to_go_cap)
    if i8[e_phase + g] < OVER:
        out[g, p_phase + i8[e_phase + g]] = 1
    if trump >= 0:
        out[g, p_trump + trump] = 1
    out[g, p_dealer + seat_from(i8[e_dealer + g], v, n)] = 1
    if i8[e_maker + g] >= 0:
        out[g, p_maker + seat_from(i8[e_maker + g], v, n)] = 1
    if i8[e_trick_leader + g] >= 0:
        out[g, p_trick_leader + seat_from(i8[e_trick_leader + g], v, n)] = 1
    out[g, p_stock_left] = stock_size - total_drawn - popcount(u64[e_set_aside + g])
    out[g, p_robbing] = u8[e_robbing + g]
    out[g, p_tricks_done] = i8[e_tricks_done + g]
    out[g, p_target] = min(target, 255)
    if full:
        for r in range(n):
            store_card_bytes(out, g, size + 52 * r, u64[e_hands + g * n + seat_after(v, r, n)])
        unseen = _ZERO
        for i in range(stock_size):
            if u8[e_in_stock + g * stock_size + i]:
                unseen |= card_bit(i8[e_stock + g * stock_size + i])
        store_card_bytes(out, g, size + 52 * n, unseen)


# ---------------------------------------------------------------- batch helpers for Python callers


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


@njit(cache=True)
def hashed_decks_into(seeds, match_indices, deal_indices, decks):
    keys = np.empty(52, dtype=np.uint64)
    for i in range(seeds.shape[0]):
        hashed_deck_into(seeds[i], match_indices[i], deal_indices[i], decks[i], keys)


@njit(cache=True)
def hashed_dealers_into(seeds, match_indices, num_players, out):
    for i in range(seeds.shape[0]):
        out[i] = hashed_dealer(seeds[i], match_indices[i], num_players)


# ---------------------------------------------------------------- building the inputs


def config_params(config) -> np.ndarray:
    """(NUM_PARAMS,) int64 of a PedroConfig, for the kernels (every env builds these before its first step)."""
    announce_compiling()
    params = np.zeros(NUM_PARAMS, dtype=np.int64)
    params[P_PLAYERS] = config.num_players
    params[P_TEAMS] = config.num_teams
    params[P_STOCK] = config.stock_size
    params[P_HAND] = config.hand_size
    params[P_MIN_BID] = config.min_bid
    params[P_TOTAL] = config.total_points
    params[P_DEALER_FORCED] = config.all_pass == "dealer_forced"
    params[P_SIX_CARD] = config.six_card
    params[P_REFILL] = REFILL_CODES[config.refill]
    params[P_SIMPLE] = config.scoring == "simple"
    params[P_LOW_HELD] = config.low == "held"
    params[P_RENEGE_PENALTY] = config.renege == "penalty"
    params[P_REWARD_WIN] = config.reward == "win"
    params[P_EPISODE_DEAL] = config.episode == "deal"
    params[P_MAX_DEALS] = config.max_deals
    params[P_TARGET] = config.target_score
    params[P_TEAM_OF_SEAT : P_TEAM_OF_SEAT + config.num_players] = config.team_of_seat
    params.setflags(write=False)
    return params


def pack_tables(tables) -> np.ndarray:
    """(T_SIZE,) int64 of a RuleTables, for the kernels."""
    tab = np.zeros(T_SIZE, dtype=np.int64)
    tab[T_FOLLOW : T_FOLLOW + 212] = tables.follow_set.reshape(-1)
    tab[T_TRUMP_ALLOWED : T_TRUMP_ALLOWED + 212] = tables.trump_allowed.reshape(-1)
    tab[T_ANSWERS : T_ANSWERS + 212] = tables.answers.reshape(-1)
    tab[T_LED_SUIT_BIT : T_LED_SUIT_BIT + 212] = tables.led_suit_bit.reshape(-1)
    tab[T_BEATS : T_BEATS + 4 * 53 * 52] = tables.beats.reshape(-1)
    tab[T_IS_TRUMP : T_IS_TRUMP + 208] = tables.is_trump.reshape(-1)
    tab[T_LOW_SET : T_LOW_SET + 4] = tables.low_set
    count = tables.point_values.size
    assert count <= MAX_POINT_VALUES
    point_sets = np.zeros((4, MAX_POINT_VALUES), dtype=np.int64)
    point_sets[:, :count] = tables.point_sets
    tab[T_POINT_SETS : T_POINT_SETS + 4 * MAX_POINT_VALUES] = point_sets.reshape(-1)
    tab[T_POINT_VALUES : T_POINT_VALUES + count] = tables.point_values
    tab[T_NUM_POINT_VALUES] = count
    tab.setflags(write=False)
    return tab


@njit(cache=True)
def deal_points_batch(won, trumps, low_teams, low_held, tab, out):
    """``out[i]`` (T,) = deal points of row i: ``won`` (k, T)."""
    points = np.zeros(won.shape[1], dtype=np.int64)
    for i in range(won.shape[0]):
        deal_points_into(won[i], trumps[i], low_teams[i], low_held, tab, points)
        for team in range(won.shape[1]):
            out[i, team] = points[team]


@njit(cache=True)
def score_deals(points, maker_teams, bids, simple, made, delta):
    """``made[i]``, ``delta[i]`` (T,) of row i: ``points`` (k, T)."""
    row = np.zeros(points.shape[1], dtype=np.int64)
    for i in range(points.shape[0]):
        made[i] = score_deal_into(points[i], maker_teams[i], bids[i], simple, row)
        for team in range(points.shape[1]):
            delta[i, team] = row[team]


# ---------------------------------------------------------------- one array of a config's constant inputs


S_PIECES = NUM_PARAMS  # statics: params, then the observation's piece starts, the to_go cap, the tables
S_TO_GO_CAP = S_PIECES + NUM_PIECES
S_TABLE = S_TO_GO_CAP + 1


def pack_statics(params: np.ndarray, pieces: np.ndarray, to_go_cap: int, tab: np.ndarray) -> np.ndarray:
    """Everything a config fixes, in one int64 array (one kernel argument instead of four)."""
    statics = np.concatenate([params, pieces, np.array([to_go_cap], dtype=np.int64), tab]).astype(np.int64)
    statics.setflags(write=False)
    return statics


@njit(cache=True, inline="always")
def unpack_statics(statics):
    """(params, tab, pieces, to_go_cap) views of :func:`pack_statics`'s array."""
    return statics[:NUM_PARAMS], statics[S_TABLE:], statics[S_PIECES:S_TO_GO_CAP], statics[S_TO_GO_CAP]


@njit(cache=True)
def encode_observations(buf, eo, b, statics, viewer, out):
    """:func:`encode_games` with the config's constant inputs in one array."""
    params, tab, pieces, to_go_cap = unpack_statics(statics)
    encode_games(buf, eo, b, params, tab, pieces, to_go_cap, viewer, out)


# ---------------------------------------------------------------- fused steps of the environments


# the status word :func:`aec_step` returns (bits)
AEC_WAITING = 1  # the next deal waits for a deck from the caller (its mask is not written)
AEC_DEAL_OVER = 2  # a deal ended in this step
AEC_TERMINATED = 4
AEC_TRUNCATED = 8
AEC_OVER = 16  # the match is over (phase OVER)
AEC_ACTOR_SHIFT = 8  # the seat to act next, in the bits from here up


@njit(cache=True, _nrt=False)
def aec_step(buf, eo, statics, actions, hashed, pending, mask, taken, deck, keys, points, delta):
    """One AEC step of a batch of one: :func:`step_games` (``actions`` (1,) int64; ``taken`` .. ``delta`` its
    scratch), then :func:`legal_masks` into ``mask`` (1, 133) bool, and what the env reads after a step as one
    status word (``AEC_*`` bits, the next actor above them), so the caller reads no state field. A deal
    waiting for the caller's deck leaves the mask to the caller."""
    params, tab, _, _ = unpack_statics(statics)
    u8, i8, _, _, _, _, _ = _typed_views(buf)
    b = actions.shape[0]  # 1, as a runtime int: a literal 1 would compile step_games and its helpers again for it
    waiting = step_games(buf, eo, b, params, tab, actions, hashed, pending, taken, deck, keys, points, delta)
    status = np.int64(i8[eo[F_ACTOR]]) << AEC_ACTOR_SHIFT
    if waiting:
        status |= AEC_WAITING
    else:
        legal_masks(buf, eo, b, params, tab, mask)
    if u8[eo[F_DEAL_OVER]]:
        status |= AEC_DEAL_OVER
    if u8[eo[F_TERMINATED]]:
        status |= AEC_TERMINATED
    if u8[eo[F_TRUNCATED]]:
        status |= AEC_TRUNCATED
    if i8[eo[F_PHASE]] == OVER:
        status |= AEC_OVER
    return status


@njit(cache=True)
def aec_observe(buf, eo, statics, viewer, out):
    """The observation of a batch of one from seat ``viewer`` (1,) int64 into ``out`` (D,) uint8."""
    params, tab, pieces, to_go_cap = unpack_statics(statics)
    encode_games(buf, eo, viewer.shape[0], params, tab, pieces, to_go_cap, viewer, out.reshape((1, out.shape[0])))


def vector_step_scratch(params: np.ndarray, b: int) -> tuple:
    """The scratch arrays of :func:`vector_step` for ``b`` games: ``games`` (2B,) int64, then :func:`step_scratch`'s."""
    return (np.zeros(2 * b, dtype=np.int64), *step_scratch(params))


@njit(cache=True, _nrt=False)
def vector_step(
    buf, eo, b, statics, actions, mask, owed, rewards, obs, next_mask, flags, scores, winner, actor,
    games, taken, deck, keys, points, delta,
):  # fmt: skip
    """One step of PedroVectorEnv, checked and whole, in one call.

    ``actions`` (B,) int64 are checked against ``mask`` (B, 133) bool (a renege the config allows is legal);
    an illegal one returns ``-(game + 1)`` of the first and changes nothing. Otherwise: each game steps;
    ``owed`` (B, n) float32 keeps each seat's reward since its own last decision, ``rewards`` gets a copy
    (then a restarted game owes nothing); ``flags`` (3, B)
    bool gets terminated, truncated, deal_over; ``scores`` (B, T) and ``winner`` (B,) the scores and
    winners before finished matches restart (the next match on the same seed); then ``next_mask`` and ``obs``
    (B, D) uint8 of every actor are written (``next_mask`` may be ``mask``), and ``actor`` (B,) int8.
    ``statics``: :func:`pack_statics`; ``games`` .. ``delta``: scratch from :func:`vector_step_scratch`, so the
    step allocates nothing itself (a restarted match's deal does) and runs without reference counting.
    Returns 1 if a deal ended, else 0.
    """
    params, tab, pieces, to_go_cap = unpack_statics(statics)
    u8, i8, i16, i32, i64, u64, f32 = _typed_views(buf)
    n, teams = params[P_PLAYERS], params[P_TEAMS]
    for g in range(b):
        action = actions[g]
        if 0 <= action < NUM_ACTIONS and mask[g, action]:
            continue
        card = action - PLAY_OFFSET
        held = (
            params[P_RENEGE_PENALTY]
            and i8[eo[F_PHASE] + g] == PLAY
            and 0 <= card < 52
            and u64[eo[F_HANDS] + g * n + i8[eo[F_ACTOR] + g]] & card_bit(card) != _ZERO
        )
        if not held:
            return -(g + 1)
    for g in range(b):
        owed[g, i8[eo[F_ACTOR] + g]] = 0.0
    pending, viewer = games[:b], games[b:]
    hashed = b > 0  # True, as a runtime bool: a literal True would compile the helpers again for it
    step_games(buf, eo, b, params, tab, actions, hashed, pending, taken, deck, keys, points, delta)
    any_deal = 0
    restarting = 0
    for g in range(b):
        for seat in range(n):
            owed[g, seat] += f32[eo[F_REWARDS] + g * n + seat]
            rewards[g, seat] = owed[g, seat]
        flags[0, g] = u8[eo[F_TERMINATED] + g]
        flags[1, g] = u8[eo[F_TRUNCATED] + g]
        flags[2, g] = u8[eo[F_DEAL_OVER] + g]
        any_deal |= u8[eo[F_DEAL_OVER] + g]
        for team in range(teams):
            scores[g, team] = i32[eo[F_SCORES] + g * teams + team]
        winner[g] = i8[eo[F_WINNER] + g]
        if i8[eo[F_PHASE] + g] == OVER:
            i64[eo[F_MATCH_INDEX] + g] += 1
            pending[restarting] = g
            restarting += 1
    if restarting:
        dealers = viewer[:restarting]
        dealers[:] = -1
        new_matches(buf, eo, b, params, pending[:restarting], dealers, hashed, pending[restarting:])
        for i in range(restarting):
            for seat in range(n):
                owed[pending[i], seat] = 0.0
    legal_masks(buf, eo, b, params, tab, next_mask)
    for g in range(b):
        viewer[g] = actor[g] = i8[eo[F_ACTOR] + g]
    encode_games(buf, eo, b, params, tab, pieces, to_go_cap, viewer, obs)
    return 1 if any_deal else 0


def entry_point(kernel, *args):
    """The compiled function of ``kernel`` for the numba types of ``args`` (from the cache, or compiled now), to
    call without numba's dispatch, which types every argument on every call (about 0.1 us each). The caller
    must pass arguments of exactly these types every time (dtypes, dimensions, layouts, Python int or bool):
    the entry point converts them without checking. Under ``NUMBA_DISABLE_JIT`` the plain function."""
    if config.DISABLE_JIT:
        return kernel
    return kernel.compile(tuple(kernel.typeof_pyval(arg) for arg in args))


# ---------------------------------------------------------------- the first compile


_ANNOUNCED = False


def announce_compiling() -> None:
    """Say once per process, on stderr, when the kernels are about to be compiled (no cache for this machine yet)."""
    global _ANNOUNCED
    if _ANNOUNCED or config.DISABLE_JIT:
        return
    _ANNOUNCED = True
    try:
        cached = os.path.exists(vector_step._cache._cache_file._index_path)
    except AttributeError:  # another numba's internals: say nothing
        return
    if not cached:
        print(
            "pedro_env: compiling the rules kernels for this machine (once: about 20 s, then cached)",
            file=sys.stderr,
            flush=True,
        )
