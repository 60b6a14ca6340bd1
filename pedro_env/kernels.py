"""The compiled rules: numba kernels that deal, step, list legal actions and encode observations.

Every kernel loops over the games of a batch, one game at a time, in compiled code; the same
kernels serve a batch of one (the AEC env) and a batch of a million. With ``NUMBA_DISABLE_JIT=1`` they
run as plain Python (slowly), for a debugger. Inputs are flat numpy arrays:

- ``buf`` (bytes) and ``off`` (int64 per state field, a byte offset): the state, every field one
  contiguous block of ``buf`` in :class:`pedro_env.state.PedroState` field order (``F_*`` below);
  the kernels view each block as its field's dtype and shape ``(B, ...)``.
- ``params`` (int64, ``P_*`` below): the config's rule switches and sizes, from :func:`config_params`.
- ``tab`` (int64, ``T_*`` below): the variant's lookup tables flattened, from :func:`pack_tables`;
  card sets are stored as their (non-negative, below 2**52) integer values.

Per-game helpers (``legal_play_set``, ``trick_winner_of``, ``team_points``, ...) are compiled
functions callable from other kernels (the search agents' solver uses them).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import config, njit, types
from numba.core import cgutils
from numba.extending import intrinsic

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
NUM_FIELDS = 43

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


@njit(cache=True)
def _u64(buf, off, field, count):
    return buf[off[field] : off[field] + 8 * count].view(np.uint64)


@njit(cache=True)
def _i64(buf, off, field, count):
    return buf[off[field] : off[field] + 8 * count].view(np.int64)


@njit(cache=True)
def _i32(buf, off, field, count):
    return buf[off[field] : off[field] + 4 * count].view(np.int32)


@njit(cache=True)
def _i16(buf, off, field, count):
    return buf[off[field] : off[field] + 2 * count].view(np.int16)


@njit(cache=True)
def _i8(buf, off, field, count):
    return buf[off[field] : off[field] + count].view(np.int8)


@njit(cache=True)
def _u8(buf, off, field, count):
    return buf[off[field] : off[field] + count]


@njit(cache=True)
def _f32(buf, off, field, count):
    return buf[off[field] : off[field] + 4 * count].view(np.float32)


@njit(cache=True)
def _views(buf, off, b, params):
    """Every state field as a flat view of ``buf``, in field order (index with ``F_*``; seat, team and
    stock fields are game-major: ``s_hands[g * n + seat]``)."""
    n, teams, stock = params[P_PLAYERS], params[P_TEAMS], params[P_STOCK]
    return (
        _u64(buf, off, F_SEED, b),
        _i64(buf, off, F_MATCH_INDEX, b),
        _i32(buf, off, F_DEAL_INDEX, b),
        _i8(buf, off, F_PHASE, b),
        _i8(buf, off, F_ACTOR, b),
        _i8(buf, off, F_DEALER, b),
        _u64(buf, off, F_HANDS, b * n),
        _i8(buf, off, F_STOCK, b * stock),
        _u8(buf, off, F_IN_STOCK, b * stock),
        _i8(buf, off, F_BIDS, b * n),
        _i8(buf, off, F_HIGH_BID, b),
        _i8(buf, off, F_MAKER, b),
        _i8(buf, off, F_TRUMP, b),
        _u64(buf, off, F_DISCARDS, b * n),
        _u8(buf, off, F_DONE, b * n),
        _i8(buf, off, F_DRAWN, b * n),
        _u64(buf, off, F_OPEN_DRAWS, b),
        _u64(buf, off, F_SET_ASIDE, b),
        _u8(buf, off, F_ROBBING, b),
        _i8(buf, off, F_TRICK, b * n),
        _i8(buf, off, F_TRICK_LEADER, b),
        _i8(buf, off, F_TRICK_SIZE, b),
        _i8(buf, off, F_TRICKS_DONE, b),
        _i8(buf, off, F_LAST_TRICK, b * n),
        _i8(buf, off, F_LAST_TRICK_WINNER, b),
        _u64(buf, off, F_PLAYED, b * n),
        _u8(buf, off, F_VOIDS, b * n),
        _u64(buf, off, F_WON, b * teams),
        _i8(buf, off, F_LOW_TEAM, b),
        _i32(buf, off, F_SCORES, b * teams),
        _u8(buf, off, F_DEAL_OVER, b),
        _u8(buf, off, F_LAST_REDEAL, b),
        _i8(buf, off, F_LAST_MAKER, b),
        _i8(buf, off, F_LAST_BID, b),
        _i8(buf, off, F_LAST_TRUMP, b),
        _i16(buf, off, F_LAST_POINTS, b * teams),
        _i8(buf, off, F_LAST_MADE, b),
        _i32(buf, off, F_LAST_DELTA, b * teams),
        _i8(buf, off, F_LAST_RENEGE, b),
        _f32(buf, off, F_REWARDS, b * n),
        _u8(buf, off, F_TERMINATED, b),
        _u8(buf, off, F_TRUNCATED, b),
        _i8(buf, off, F_WINNER, b),
    )


# ---------------------------------------------------------------- per-game rules


def _bit_intrinsic(name):
    """A compiled ``llvm.<name>`` (ctpop, cttz) of a uint64, as an int64 (one instruction on x86-64 and arm64)."""

    @intrinsic
    def bit_count(typingctx, x):
        def codegen(context, builder, signature, args):
            (value,) = args
            flag = [ir.IntType(1)] if name == "cttz" else []  # cttz: is a zero input poison (no: 0)
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

else:
    popcount = _bit_intrinsic("ctpop")
    lowest_card = _bit_intrinsic("cttz")


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
def trick_winner_of(trick, leader, trump, tab):
    """Seat winning a complete trick: ``trick`` (n,) card per seat, ``leader`` the seat that led."""
    base = T_BEATS + (trump * 53 + trick[leader]) * 52
    best, best_seat = -2, 0
    for seat in range(trick.shape[0]):
        strength = tab[base + trick[seat]]
        if strength > best:
            best, best_seat = strength, seat
    return best_seat


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


@njit(cache=True, _nrt=False)
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
def _start_deal(
    s_phase,
    s_actor,
    s_dealer,
    s_hands,
    s_stock,
    s_in_stock,
    s_bids,
    s_high_bid,
    s_maker,
    s_trump,
    s_discards,
    s_done,
    s_drawn,
    s_open_draws,
    s_set_aside,
    s_robbing,
    s_trick,
    s_trick_leader,
    s_trick_size,
    s_tricks_done,
    s_last_trick,
    s_last_trick_winner,
    s_played,
    s_voids,
    s_won,
    s_low_team,
    b,
    g,
    params,
    deck,
):
    """Deal ``deck`` (52,) to game ``g`` (its dealer and deal_index set) and open the bidding."""
    n, teams, stock_size, hand_size = params[P_PLAYERS], params[P_TEAMS], params[P_STOCK], params[P_HAND]
    dealt = n * hand_size
    eldest = seat_after(s_dealer[g], 1, n)
    for seat in range(n):
        s_hands[g * n + seat] = _ZERO
    for position in range(dealt):
        seat = seat_after(eldest, (position // 3) % n, n)
        s_hands[g * n + seat] |= card_bit(deck[position])
    for i in range(stock_size):
        s_stock[g * stock_size + i] = deck[dealt + i]
        s_in_stock[g * stock_size + i] = 1
    for seat in range(n):
        i = g * n + seat
        s_bids[i] = -1
        s_discards[i] = _ZERO
        s_done[i] = 0
        s_drawn[i] = 0
        s_trick[i] = -1
        s_last_trick[i] = -1
        s_played[i] = _ZERO
        s_voids[i] = 0
    for team in range(teams):
        s_won[g * teams + team] = _ZERO
    s_high_bid[g] = 0
    s_maker[g] = -1
    s_trump[g] = -1
    s_open_draws[g] = _ZERO
    s_set_aside[g] = _ZERO
    s_robbing[g] = 0
    s_trick_leader[g] = -1
    s_trick_size[g] = 0
    s_tricks_done[g] = 0
    s_last_trick_winner[g] = -1
    s_low_team[g] = -1
    s_phase[g] = BID
    s_actor[g] = eldest


@njit(cache=True)
def deal_games(buf, off, b, params, games, decks):
    """Deal ``decks[i]`` (k, 52) to game ``games[i]`` (dealer and deal_index already set)."""
    (
        s_seed,
        s_match_index,
        s_deal_index,
        s_phase,
        s_actor,
        s_dealer,
        s_hands,
        s_stock,
        s_in_stock,
        s_bids,
        s_high_bid,
        s_maker,
        s_trump,
        s_discards,
        s_done,
        s_drawn,
        s_open_draws,
        s_set_aside,
        s_robbing,
        s_trick,
        s_trick_leader,
        s_trick_size,
        s_tricks_done,
        s_last_trick,
        s_last_trick_winner,
        s_played,
        s_voids,
        s_won,
        s_low_team,
        s_scores,
        s_deal_over,
        s_last_redeal,
        s_last_maker,
        s_last_bid,
        s_last_trump,
        s_last_points,
        s_last_made,
        s_last_delta,
        s_last_renege,
        s_rewards,
        s_terminated,
        s_truncated,
        s_winner,
    ) = _views(buf, off, b, params)
    for i in range(games.shape[0]):
        _start_deal(
            s_phase,
            s_actor,
            s_dealer,
            s_hands,
            s_stock,
            s_in_stock,
            s_bids,
            s_high_bid,
            s_maker,
            s_trump,
            s_discards,
            s_done,
            s_drawn,
            s_open_draws,
            s_set_aside,
            s_robbing,
            s_trick,
            s_trick_leader,
            s_trick_size,
            s_tricks_done,
            s_last_trick,
            s_last_trick_winner,
            s_played,
            s_voids,
            s_won,
            s_low_team,
            b,
            games[i],
            params,
            decks[i],
        )


@njit(cache=True, _nrt=False)
def _deal_or_defer(
    s_seed,
    s_match_index,
    s_deal_index,
    s_phase,
    s_actor,
    s_dealer,
    s_hands,
    s_stock,
    s_in_stock,
    s_bids,
    s_high_bid,
    s_maker,
    s_trump,
    s_discards,
    s_done,
    s_drawn,
    s_open_draws,
    s_set_aside,
    s_robbing,
    s_trick,
    s_trick_leader,
    s_trick_size,
    s_tricks_done,
    s_last_trick,
    s_last_trick_winner,
    s_played,
    s_voids,
    s_won,
    s_low_team,
    b,
    g,
    params,
    hashed,
    deck,
    keys,
    pending,
    waiting,
):
    """Deal game ``g`` a hashed deck, or (not ``hashed``) append it to ``pending``; returns the pending count."""
    if not hashed:
        pending[waiting] = g
        return waiting + 1
    seed = s_seed[g]
    hashed_deck_into(seed, s_match_index[g], s_deal_index[g], deck, keys)
    _start_deal(
        s_phase,
        s_actor,
        s_dealer,
        s_hands,
        s_stock,
        s_in_stock,
        s_bids,
        s_high_bid,
        s_maker,
        s_trump,
        s_discards,
        s_done,
        s_drawn,
        s_open_draws,
        s_set_aside,
        s_robbing,
        s_trick,
        s_trick_leader,
        s_trick_size,
        s_tricks_done,
        s_last_trick,
        s_last_trick_winner,
        s_played,
        s_voids,
        s_won,
        s_low_team,
        b,
        g,
        params,
        deck,
    )
    return waiting


@njit(cache=True)
def new_matches(buf, off, b, params, games, dealers, hashed, pending):
    """Start fresh matches in ``games`` (seed and match_index set): scores 0, first dealer (``dealers``, or
    hashed where ``dealers[i] < 0``), first deal (hashed when ``hashed``, else listed in ``pending``).
    Returns the number of games written to ``pending`` (games still to be dealt)."""
    (
        s_seed,
        s_match_index,
        s_deal_index,
        s_phase,
        s_actor,
        s_dealer,
        s_hands,
        s_stock,
        s_in_stock,
        s_bids,
        s_high_bid,
        s_maker,
        s_trump,
        s_discards,
        s_done,
        s_drawn,
        s_open_draws,
        s_set_aside,
        s_robbing,
        s_trick,
        s_trick_leader,
        s_trick_size,
        s_tricks_done,
        s_last_trick,
        s_last_trick_winner,
        s_played,
        s_voids,
        s_won,
        s_low_team,
        s_scores,
        s_deal_over,
        s_last_redeal,
        s_last_maker,
        s_last_bid,
        s_last_trump,
        s_last_points,
        s_last_made,
        s_last_delta,
        s_last_renege,
        s_rewards,
        s_terminated,
        s_truncated,
        s_winner,
    ) = _views(buf, off, b, params)
    teams = params[P_TEAMS]
    deck = np.empty(52, dtype=np.int8)
    keys = np.empty(52, dtype=np.uint64)
    waiting = 0
    for i in range(games.shape[0]):
        g = games[i]
        for team in range(teams):
            s_scores[g * teams + team] = 0
        s_deal_index[g] = 0
        s_winner[g] = -1
        if dealers[i] >= 0:
            s_dealer[g] = dealers[i]
        else:
            s_dealer[g] = hashed_dealer(s_seed[g], s_match_index[g], params[P_PLAYERS])
        waiting = _deal_or_defer(
            s_seed,
            s_match_index,
            s_deal_index,
            s_phase,
            s_actor,
            s_dealer,
            s_hands,
            s_stock,
            s_in_stock,
            s_bids,
            s_high_bid,
            s_maker,
            s_trump,
            s_discards,
            s_done,
            s_drawn,
            s_open_draws,
            s_set_aside,
            s_robbing,
            s_trick,
            s_trick_leader,
            s_trick_size,
            s_tricks_done,
            s_last_trick,
            s_last_trick_winner,
            s_played,
            s_voids,
            s_won,
            s_low_team,
            b,
            g,
            params,
            hashed,
            deck,
            keys,
            pending,
            waiting,
        )
    return waiting


# ---------------------------------------------------------------- the phases of one game


@njit(cache=True, _nrt=False)
def _start_play(s_phase, s_actor, s_hands, s_maker, s_trump, s_trick_leader, s_low_team, b, g, params, tab):
    """The maker leads the first trick; remember which team holds Low (for low="held")."""
    n = params[P_PLAYERS]
    maker = s_maker[g]
    s_phase[g] = PLAY
    s_actor[g] = maker
    s_trick_leader[g] = maker
    low = np.uint64(tab[T_LOW_SET + s_trump[g]])
    low_team = -1
    for seat in range(n):
        if s_hands[g * n + seat] & low != _ZERO:
            low_team = params[P_TEAM_OF_SEAT + seat]
            break
    s_low_team[g] = low_team


@njit(cache=True, _nrt=False)
def _apply_bid(
    s_phase, s_actor, s_dealer, s_bids, s_high_bid, s_maker, s_deal_over, s_last_redeal, b, g, action, params
):
    n = params[P_PLAYERS]
    seat = s_actor[g]
    s_bids[g * n + seat] = action
    if action != PASS_ACTION:
        s_high_bid[g] = action
        s_maker[g] = seat
    if seat == s_dealer[g]:
        s_phase[g] = TRUMP
        s_actor[g] = s_maker[g]
        if s_high_bid[g] == 0:
            s_deal_over[g] = 1
            s_last_redeal[g] = 1
    else:
        s_phase[g] = BID
        s_actor[g] = seat_after(seat, 1, n)


@njit(cache=True, _nrt=False)
def _take_into_hand(s_hands, s_stock, s_in_stock, s_drawn, b, g, seat, taken, params):
    """Move the stock positions flagged in ``taken`` (S,) into ``seat``'s hand."""
    n, stock_size = params[P_PLAYERS], params[P_STOCK]
    cards = _ZERO
    count = 0
    for i in range(stock_size):
        if taken[i]:
            cards |= card_bit(s_stock[g * stock_size + i])
            s_in_stock[g * stock_size + i] = 0
            count += 1
    s_hands[g * n + seat] |= cards
    s_drawn[g * n + seat] = s_drawn[g * n + seat] + count


@njit(cache=True, _nrt=False)
def _refill(s_dealer, s_hands, s_stock, s_in_stock, s_maker, s_trump, s_drawn, s_open_draws, b, g, params, tab, taken):
    """Each player from eldest round to the dealer (the dealer skipped when robbing) draws back up to 6."""
    n, stock_size, refill = params[P_PLAYERS], params[P_STOCK], params[P_REFILL]
    drawers = n - 1 if refill == REFILL_ROBS else n
    dealer = s_dealer[g]
    maker = s_maker[g]
    trump = s_trump[g]
    for offset in range(1, drawers + 1):
        seat = seat_after(dealer, offset, n)
        need = HAND_AT_PLAY - popcount(s_hands[g * n + seat])
        for i in range(stock_size):
            taken[i] = False
        if refill == REFILL_MAKER_SORTED and seat == maker:  # the maker takes the stock's trumps first, face up
            face_up = _ZERO
            face_up_count = 0
            for i in range(stock_size):
                card = s_stock[g * stock_size + i]
                if s_in_stock[g * stock_size + i] and tab[T_IS_TRUMP + trump * 52 + card] and face_up_count < need:
                    taken[i] = True
                    face_up |= card_bit(card)
                    face_up_count += 1
            s_open_draws[g] |= face_up
            need -= face_up_count
        count = 0
        for i in range(stock_size):
            if s_in_stock[g * stock_size + i] and not taken[i]:
                count += 1
                if count <= need:
                    taken[i] = True
        _take_into_hand(s_hands, s_stock, s_in_stock, s_drawn, b, g, seat, taken, params)


@njit(cache=True, _nrt=False)
def _apply_discard(
    s_actor,
    s_dealer,
    s_hands,
    s_stock,
    s_in_stock,
    s_maker,
    s_trump,
    s_discards,
    s_done,
    s_drawn,
    s_open_draws,
    s_set_aside,
    s_robbing,
    b,
    g,
    action,
    params,
    tab,
    taken,
):
    """``discard XX`` or ``done`` (``taken``: (S,) bool scratch); returns whether play begins (the caller starts it)."""
    n = params[P_PLAYERS]
    seat = s_actor[g]
    if action != DONE_ACTION:
        bit = card_bit(action - DISCARD_OFFSET)
        s_hands[g * n + seat] &= ~bit
        s_discards[g * n + seat] |= bit
        return False
    if s_robbing[g]:  # the robbing dealer is down to 6: play begins
        s_robbing[g] = 0
        return True
    s_done[g * n + seat] = 1
    next_seat = seat_after(seat, 1, n)
    dealer = s_dealer[g]
    robs = params[P_REFILL] == REFILL_ROBS
    last = next_seat == dealer if robs else seat == dealer
    s_actor[g] = next_seat
    if not last:
        return False
    _refill(s_dealer, s_hands, s_stock, s_in_stock, s_maker, s_trump, s_drawn, s_open_draws, b, g, params, tab, taken)
    stock_size = params[P_STOCK]
    if robs:  # the dealer adds the whole remaining stock, face down, then discards to 6
        for i in range(stock_size):
            taken[i] = s_in_stock[g * stock_size + i] != 0
        _take_into_hand(s_hands, s_stock, s_in_stock, s_drawn, b, g, dealer, taken, params)
        s_robbing[g] = 1
        s_actor[g] = dealer
        return False
    # trumps left in the stock are turned face up and set aside
    trump = s_trump[g]
    aside = _ZERO
    for i in range(stock_size):
        card = s_stock[g * stock_size + i]
        if s_in_stock[g * stock_size + i] and tab[T_IS_TRUMP + trump * 52 + card]:
            aside |= card_bit(card)
            s_in_stock[g * stock_size + i] = 0
    s_set_aside[g] = aside
    return True


@njit(cache=True, _nrt=False)
def _apply_play(
    s_actor,
    s_hands,
    s_trump,
    s_trick,
    s_trick_leader,
    s_trick_size,
    s_tricks_done,
    s_last_trick,
    s_last_trick_winner,
    s_played,
    s_voids,
    s_won,
    s_deal_over,
    s_last_renege,
    b,
    g,
    action,
    params,
    tab,
):
    n = params[P_PLAYERS]
    seat = s_actor[g]
    card = action - PLAY_OFFSET
    trump = s_trump[g]
    leader = s_trick_leader[g]
    led_card = s_trick[g * n + leader]
    bit = card_bit(card)
    if params[P_RENEGE_PENALTY]:
        if legal_play_set(s_hands[g * n + seat], trump, led_card, tab) & bit == _ZERO:
            s_deal_over[g] = 1
            s_last_renege[g] = params[P_TEAM_OF_SEAT + seat]
            return
    # a follower who neither follows the led suit nor trumps a non-trump lead shows a void in the led suit
    key = trump * 53 + (52 if led_card < 0 else led_card)
    if np.uint64(tab[T_ANSWERS + key]) & bit == _ZERO:
        s_voids[g * n + seat] |= np.uint8(tab[T_LED_SUIT_BIT + key])
    s_hands[g * n + seat] &= ~bit
    s_played[g * n + seat] |= bit
    s_trick[g * n + seat] = card
    s_trick_size[g] += 1
    s_actor[g] = seat_after(seat, 1, n)
    if s_trick_size[g] < n:
        return
    row = s_trick[g * n : (g + 1) * n]
    winner = trick_winner_of(row, leader, trump, tab)
    teams = params[P_TEAMS]
    cards = _ZERO
    for s in range(n):
        cards |= card_bit(row[s])
        s_last_trick[g * n + s] = row[s]
        row[s] = -1
    s_won[g * teams + params[P_TEAM_OF_SEAT + winner]] |= cards
    s_last_trick_winner[g] = winner
    s_trick_size[g] = 0
    s_tricks_done[g] += 1
    s_trick_leader[g] = winner
    s_actor[g] = winner
    if s_tricks_done[g] == TRICKS_PER_DEAL:
        s_deal_over[g] = 1


@njit(cache=True, _nrt=False)
def _finish_deal(
    s_deal_index,
    s_phase,
    s_dealer,
    s_high_bid,
    s_maker,
    s_trump,
    s_trick_leader,
    s_won,
    s_low_team,
    s_scores,
    s_last_redeal,
    s_last_maker,
    s_last_bid,
    s_last_trump,
    s_last_points,
    s_last_made,
    s_last_delta,
    s_last_renege,
    s_rewards,
    s_terminated,
    s_truncated,
    s_winner,
    b,
    g,
    params,
    tab,
    points,
    delta,
):
    """Score the deal that ended in game ``g`` (or record it thrown in) and decide the match
    (``points``, ``delta``: (T,) int64 scratch). Returns whether the match goes on (the caller deals again)."""
    n, teams = params[P_PLAYERS], params[P_TEAMS]
    thrown_in = s_last_redeal[g] != 0
    maker = s_maker[g]
    high_bid = s_high_bid[g]
    trump = s_trump[g]
    s_last_maker[g] = -1 if thrown_in else maker
    s_last_bid[g] = 0 if thrown_in else high_bid
    s_last_trump[g] = -1 if thrown_in else trump
    last_points = s_last_points[g * teams : (g + 1) * teams]
    last_delta = s_last_delta[g * teams : (g + 1) * teams]
    last_points[:] = 0
    last_delta[:] = 0
    s_last_made[g] = -1
    won_match = False
    if not thrown_in:
        maker_team = params[P_TEAM_OF_SEAT + maker]
        bid = np.int64(high_bid)
        won = s_won[g * teams : (g + 1) * teams]
        deal_points_into(won, trump, s_low_team[g], params[P_LOW_HELD] != 0, tab, points)
        made = score_deal_into(points, maker_team, bid, params[P_SIMPLE] != 0, delta)
        renege_team = s_last_renege[g]
        if params[P_RENEGE_PENALTY] and renege_team >= 0:
            made = renege_team != maker_team
            for team in range(teams):
                delta[team] = (0 if made else -bid) if team == renege_team else params[P_TOTAL]
        scores = s_scores[g * teams : (g + 1) * teams]
        for team in range(teams):
            scores[team] += delta[team]
            last_points[team] = points[team]
            last_delta[team] = delta[team]
        s_last_made[g] = 1 if made else 0
        s_winner[g] = match_winner_of(scores, params[P_TARGET], maker_team, made)
        won_match = s_winner[g] >= 0
        if not params[P_REWARD_WIN]:  # each seat: (its team's delta - the opponents' mean delta) / total points
            total_delta = 0
            for team in range(teams):
                total_delta += delta[team]
            for seat in range(n):
                team = params[P_TEAM_OF_SEAT + seat]
                others_mean = (total_delta - delta[team]) / (teams - 1)
                s_rewards[g * n + seat] += np.float32((delta[team] - others_mean) / params[P_TOTAL])
    if params[P_REWARD_WIN] and won_match:
        for seat in range(n):
            s_rewards[g * n + seat] += np.float32(1.0 if params[P_TEAM_OF_SEAT + seat] == s_winner[g] else -1.0)
    one_deal = params[P_EPISODE_DEAL] != 0
    truncated = not won_match and not one_deal and s_deal_index[g] + 1 >= params[P_MAX_DEALS]
    if won_match or one_deal:
        s_terminated[g] = 1
    if truncated:
        s_truncated[g] = 1
    if won_match or one_deal or truncated:
        s_phase[g] = OVER
        s_trick_leader[g] = -1  # no trick follows
        return False
    s_deal_index[g] += 1
    s_dealer[g] = seat_after(s_dealer[g], 1, n)
    return True


@njit(cache=True)
def step_games(buf, off, b, params, tab, actions, hashed, pending):
    """Apply one action per game, in place (games OVER ignore theirs). Deals that end are scored and
    the next deal dealt: hashed decks when ``hashed``, else the games are listed in ``pending`` for the
    caller to deal. Returns the number of games written to ``pending``."""
    (
        s_seed,
        s_match_index,
        s_deal_index,
        s_phase,
        s_actor,
        s_dealer,
        s_hands,
        s_stock,
        s_in_stock,
        s_bids,
        s_high_bid,
        s_maker,
        s_trump,
        s_discards,
        s_done,
        s_drawn,
        s_open_draws,
        s_set_aside,
        s_robbing,
        s_trick,
        s_trick_leader,
        s_trick_size,
        s_tricks_done,
        s_last_trick,
        s_last_trick_winner,
        s_played,
        s_voids,
        s_won,
        s_low_team,
        s_scores,
        s_deal_over,
        s_last_redeal,
        s_last_maker,
        s_last_bid,
        s_last_trump,
        s_last_points,
        s_last_made,
        s_last_delta,
        s_last_renege,
        s_rewards,
        s_terminated,
        s_truncated,
        s_winner,
    ) = _views(buf, off, b, params)
    taken = np.zeros(params[P_STOCK], dtype=np.bool_)
    n = params[P_PLAYERS]
    any_over = False
    for g in range(b):
        if s_deal_over[g]:
            any_over = True
            break
    if any_over:  # clear what the previous step's deal endings reported
        s_rewards[:] = 0.0
        s_deal_over[:] = 0
        s_last_redeal[:] = 0
        s_last_renege[:] = -1
        s_terminated[:] = 0
        s_truncated[:] = 0
    for g in range(b):
        p = s_phase[g]
        action = actions[g]
        if p == BID:
            _apply_bid(
                s_phase,
                s_actor,
                s_dealer,
                s_bids,
                s_high_bid,
                s_maker,
                s_deal_over,
                s_last_redeal,
                b,
                g,
                action,
                params,
            )
        elif p == TRUMP:
            s_trump[g] = action - TRUMP_OFFSET
            if params[P_SIX_CARD]:
                _start_play(s_phase, s_actor, s_hands, s_maker, s_trump, s_trick_leader, s_low_team, b, g, params, tab)
            else:
                s_phase[g] = DISCARD
                s_actor[g] = seat_after(s_dealer[g], 1, n)
        elif p == DISCARD:
            if _apply_discard(
                s_actor,
                s_dealer,
                s_hands,
                s_stock,
                s_in_stock,
                s_maker,
                s_trump,
                s_discards,
                s_done,
                s_drawn,
                s_open_draws,
                s_set_aside,
                s_robbing,
                b,
                g,
                action,
                params,
                tab,
                taken,
            ):
                _start_play(s_phase, s_actor, s_hands, s_maker, s_trump, s_trick_leader, s_low_team, b, g, params, tab)
        elif p == PLAY:
            _apply_play(
                s_actor,
                s_hands,
                s_trump,
                s_trick,
                s_trick_leader,
                s_trick_size,
                s_tricks_done,
                s_last_trick,
                s_last_trick_winner,
                s_played,
                s_voids,
                s_won,
                s_deal_over,
                s_last_renege,
                b,
                g,
                action,
                params,
                tab,
            )
    waiting = 0
    deck = np.empty(52, dtype=np.int8)
    keys = np.empty(52, dtype=np.uint64)
    points = np.zeros(params[P_TEAMS], dtype=np.int64)
    delta = np.zeros(params[P_TEAMS], dtype=np.int64)
    for g in range(b):
        if s_deal_over[g] and _finish_deal(
            s_deal_index,
            s_phase,
            s_dealer,
            s_high_bid,
            s_maker,
            s_trump,
            s_trick_leader,
            s_won,
            s_low_team,
            s_scores,
            s_last_redeal,
            s_last_maker,
            s_last_bid,
            s_last_trump,
            s_last_points,
            s_last_made,
            s_last_delta,
            s_last_renege,
            s_rewards,
            s_terminated,
            s_truncated,
            s_winner,
            b,
            g,
            params,
            tab,
            points,
            delta,
        ):
            waiting = _deal_or_defer(
                s_seed,
                s_match_index,
                s_deal_index,
                s_phase,
                s_actor,
                s_dealer,
                s_hands,
                s_stock,
                s_in_stock,
                s_bids,
                s_high_bid,
                s_maker,
                s_trump,
                s_discards,
                s_done,
                s_drawn,
                s_open_draws,
                s_set_aside,
                s_robbing,
                s_trick,
                s_trick_leader,
                s_trick_size,
                s_tricks_done,
                s_last_trick,
                s_last_trick_winner,
                s_played,
                s_voids,
                s_won,
                s_low_team,
                b,
                g,
                params,
                hashed,
                deck,
                keys,
                pending,
                waiting,
            )
    return waiting


# ---------------------------------------------------------------- legal actions and observations


@njit(cache=True)
def legal_masks(buf, off, b, params, tab, mask):
    """Fill ``mask`` (B, 133) bool with the actor's legal actions (all False where the phase is OVER)."""
    (
        s_seed,
        s_match_index,
        s_deal_index,
        s_phase,
        s_actor,
        s_dealer,
        s_hands,
        s_stock,
        s_in_stock,
        s_bids,
        s_high_bid,
        s_maker,
        s_trump,
        s_discards,
        s_done,
        s_drawn,
        s_open_draws,
        s_set_aside,
        s_robbing,
        s_trick,
        s_trick_leader,
        s_trick_size,
        s_tricks_done,
        s_last_trick,
        s_last_trick_winner,
        s_played,
        s_voids,
        s_won,
        s_low_team,
        s_scores,
        s_deal_over,
        s_last_redeal,
        s_last_maker,
        s_last_bid,
        s_last_trump,
        s_last_points,
        s_last_made,
        s_last_delta,
        s_last_renege,
        s_rewards,
        s_terminated,
        s_truncated,
        s_winner,
    ) = _views(buf, off, b, params)
    n, stock_size = params[P_PLAYERS], params[P_STOCK]
    for g in range(b):
        mask[g, :] = False
        p = s_phase[g]
        if p == BID:
            high = s_high_bid[g]
            mask[g, PASS_ACTION] = True
            for bid in range(max(high + 1, params[P_MIN_BID]), params[P_TOTAL] + 1):
                mask[g, bid] = True
            if params[P_DEALER_FORCED] and high == 0 and s_actor[g] == s_dealer[g]:
                mask[g, PASS_ACTION] = False
        elif p == TRUMP:
            for suit in range(4):
                mask[g, TRUMP_OFFSET + suit] = True
        elif p == DISCARD:
            seats = s_hands[g * n : (g + 1) * n]
            may_discard, may_say_done = discard_options_of(
                seats,
                s_done[g * n : (g + 1) * n],
                s_drawn[g * n : (g + 1) * n],
                s_set_aside[g],
                s_robbing[g] != 0,
                s_actor[g],
                stock_size,
            )
            if may_discard:
                _card_piece(mask, g, DISCARD_OFFSET, seats[s_actor[g]])
            mask[g, DONE_ACTION] = may_say_done
        elif p == PLAY:
            leader = s_trick_leader[g]
            led = s_trick[g * n + leader]
            legal = legal_play_set(s_hands[g * n + s_actor[g]], s_trump[g], led, tab)
            _card_piece(mask, g, PLAY_OFFSET, legal)


@njit(cache=True, _nrt=False, inline="always")
def _card_piece(out, g, start, cards):
    """Set ``out[g, start + card]`` for every card of the set ``cards`` (the rest of the piece is left as it is)."""
    while cards != _ZERO:
        out[g, start + lowest_card(cards)] = 1
        cards &= cards - _ONE


@njit(cache=True)
def encode_games(buf, off, b, params, tab, pieces, to_go_cap, viewer, out, full):
    """Fill ``out`` (B, D) uint8 with each game's observation from seat ``viewer[g]`` (pedro_env.encoding);
    with ``full``, ``out`` is (B, D + n*52 + 52) and gets every relative seat's hand and the unseen stock."""
    (
        s_seed,
        s_match_index,
        s_deal_index,
        s_phase,
        s_actor,
        s_dealer,
        s_hands,
        s_stock,
        s_in_stock,
        s_bids,
        s_high_bid,
        s_maker,
        s_trump,
        s_discards,
        s_done,
        s_drawn,
        s_open_draws,
        s_set_aside,
        s_robbing,
        s_trick,
        s_trick_leader,
        s_trick_size,
        s_tricks_done,
        s_last_trick,
        s_last_trick_winner,
        s_played,
        s_voids,
        s_won,
        s_low_team,
        s_scores,
        s_deal_over,
        s_last_redeal,
        s_last_maker,
        s_last_bid,
        s_last_trump,
        s_last_points,
        s_last_made,
        s_last_delta,
        s_last_renege,
        s_rewards,
        s_terminated,
        s_truncated,
        s_winner,
    ) = _views(buf, off, b, params)
    n, teams, stock_size, total = params[P_PLAYERS], params[P_TEAMS], params[P_STOCK], params[P_TOTAL]
    target = params[P_TARGET]
    size = pieces[O_TARGET] + 1
    for g in range(b):
        out[g, :] = 0  # row by row, so the row is in cache for the writes below
        v = viewer[g]
        my_team = params[P_TEAM_OF_SEAT + v]
        _card_piece(out, g, pieces[O_HAND], s_hands[g * n + v])
        _card_piece(out, g, pieces[O_OPEN_DRAWS], s_open_draws[g])
        _card_piece(out, g, pieces[O_SET_ASIDE], s_set_aside[g])
        trick_set = _ZERO
        total_drawn = 0
        for r in range(n):
            s = seat_after(v, r, n)
            i = g * n + s
            _card_piece(out, g, pieces[O_DISCARDS] + 52 * r, s_discards[i])
            _card_piece(out, g, pieces[O_PLAYED] + 52 * r, s_played[i])
            if s_trick[i] >= 0:
                trick_set |= card_bit(s_trick[i])
            out[g, pieces[O_BIDS] + r * (total + 2) + 1 + s_bids[i]] = 1
            out[g, pieces[O_DONE] + r] = s_done[i]
            out[g, pieces[O_DRAWN] + r] = s_drawn[i]
            out[g, pieces[O_HAND_SIZES] + r] = popcount(s_hands[i])
            for suit in range(4):
                out[g, pieces[O_VOIDS] + 4 * r + suit] = (s_voids[i] >> suit) & 1
            total_drawn += s_drawn[i]
        _card_piece(out, g, pieces[O_TRICK], trick_set)
        trump = s_trump[g]
        point_trump = trump & 3  # nothing is won before trumps are named
        for t in range(teams):
            team = seat_after(my_team, t, teams)
            team_won = s_won[g * teams + team]
            _card_piece(out, g, pieces[O_WON] + 52 * t, team_won)
            out[g, pieces[O_POINTS] + t] = team_points(team_won, point_trump, tab)
            to_go = target - s_scores[g * teams + team]
            out[g, pieces[O_TO_GO] + t] = min(max(to_go, 0), to_go_cap)
        if s_phase[g] < OVER:
            out[g, pieces[O_PHASE] + s_phase[g]] = 1
        if trump >= 0:
            out[g, pieces[O_TRUMP] + trump] = 1
        out[g, pieces[O_DEALER] + seat_from(s_dealer[g], v, n)] = 1
        if s_maker[g] >= 0:
            out[g, pieces[O_MAKER] + seat_from(s_maker[g], v, n)] = 1
        if s_trick_leader[g] >= 0:
            out[g, pieces[O_TRICK_LEADER] + seat_from(s_trick_leader[g], v, n)] = 1
        out[g, pieces[O_STOCK_LEFT]] = stock_size - total_drawn - popcount(s_set_aside[g])
        out[g, pieces[O_ROBBING]] = s_robbing[g]
        out[g, pieces[O_TRICKS_DONE]] = s_tricks_done[g]
        out[g, pieces[O_TARGET]] = min(target, 255)
        if full:
            for r in range(n):
                _card_piece(out, g, size + 52 * r, s_hands[g * n + seat_after(v, r, n)])
            unseen = _ZERO
            for i in range(stock_size):
                if s_in_stock[g * stock_size + i]:
                    unseen |= card_bit(s_stock[g * stock_size + i])
            _card_piece(out, g, size + 52 * n, unseen)


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
    """(NUM_PARAMS,) int64 of a PedroConfig, for the kernels."""
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


# ---------------------------------------------------------------- fused steps of the environments


@njit(cache=True)
def step_and_mask(buf, off, b, params, tab, actions, hashed, pending, mask):
    """:func:`step_games`, then :func:`legal_masks` into ``mask``: one call per AEC step."""
    waiting = step_games(buf, off, b, params, tab, actions, hashed, pending)
    legal_masks(buf, off, b, params, tab, mask)
    return waiting


@njit(cache=True)
def vector_step(
    buf,
    off,
    b,
    params,
    tab,
    pieces,
    to_go_cap,
    actions,
    mask,
    owed,
    rewards,
    obs,
    next_mask,
    flags,
    scores,
    winner,
):
    """One step of PedroVectorEnv, checked and whole, in one call.

    ``actions`` (B,) int64 are checked against ``mask`` (B, 133) bool (a renege the config allows is legal);
    an illegal one returns ``-(game + 1)`` of the first and changes nothing. Otherwise: each game steps;
    ``owed`` (B, n) float32 keeps each seat's reward since its own last decision, ``rewards`` gets a copy
    (then a restarted game owes nothing); ``flags`` (3, B)
    bool gets terminated, truncated, deal_over; ``scores`` (B, T) and ``winner`` (B,) the scores and
    winners before finished matches restart (the next match on the same seed); then ``next_mask`` and ``obs``
    (B, D) uint8 of every actor are written (``next_mask`` may be ``mask``). Returns 1 if a deal ended, else 0.
    """
    (
        s_seed,
        s_match_index,
        s_deal_index,
        s_phase,
        s_actor,
        s_dealer,
        s_hands,
        s_stock,
        s_in_stock,
        s_bids,
        s_high_bid,
        s_maker,
        s_trump,
        s_discards,
        s_done,
        s_drawn,
        s_open_draws,
        s_set_aside,
        s_robbing,
        s_trick,
        s_trick_leader,
        s_trick_size,
        s_tricks_done,
        s_last_trick,
        s_last_trick_winner,
        s_played,
        s_voids,
        s_won,
        s_low_team,
        s_scores,
        s_deal_over,
        s_last_redeal,
        s_last_maker,
        s_last_bid,
        s_last_trump,
        s_last_points,
        s_last_made,
        s_last_delta,
        s_last_renege,
        s_rewards,
        s_terminated,
        s_truncated,
        s_winner,
    ) = _views(buf, off, b, params)
    n, teams = params[P_PLAYERS], params[P_TEAMS]
    for g in range(b):
        action = actions[g]
        if 0 <= action < NUM_ACTIONS and mask[g, action]:
            continue
        card = action - PLAY_OFFSET
        held = (
            params[P_RENEGE_PENALTY]
            and s_phase[g] == PLAY
            and 0 <= card < 52
            and s_hands[g * n + s_actor[g]] & card_bit(card) != _ZERO
        )
        if not held:
            return -(g + 1)
    for g in range(b):
        owed[g, s_actor[g]] = 0.0
    pending = np.empty(b, dtype=np.int64)
    step_games(buf, off, b, params, tab, actions, True, pending)
    any_deal = 0
    restarting = 0
    for g in range(b):
        for seat in range(n):
            owed[g, seat] += s_rewards[g * n + seat]
            rewards[g, seat] = owed[g, seat]
        flags[0, g] = s_terminated[g]
        flags[1, g] = s_truncated[g]
        flags[2, g] = s_deal_over[g]
        any_deal |= s_deal_over[g]
        for team in range(teams):
            scores[g, team] = s_scores[g * teams + team]
        winner[g] = s_winner[g]
        if s_phase[g] == OVER:
            s_match_index[g] += 1
            pending[restarting] = g
            restarting += 1
    if restarting:
        dealers = np.full(restarting, -1, dtype=np.int64)
        new_matches(buf, off, b, params, pending[:restarting], dealers, True, pending[restarting:])
        for i in range(restarting):
            for seat in range(n):
                owed[pending[i], seat] = 0.0
    legal_masks(buf, off, b, params, tab, next_mask)
    viewer = np.empty(b, dtype=np.int64)
    for g in range(b):
        viewer[g] = s_actor[g]
    encode_games(buf, off, b, params, tab, pieces, to_go_cap, viewer, obs, False)
    return 1 if any_deal else 0
