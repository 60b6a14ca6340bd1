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
from numba import njit

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
_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)


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


# ---------------------------------------------------------------- per-game rules


@njit(cache=True)
def popcount(x):
    """Number of set bits of a uint64."""
    x = x - ((x >> _ONE) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return np.int64((x * _H01) >> np.uint64(56))


@njit(cache=True)
def card_bit(card):
    return _ONE << np.uint64(card)


@njit(cache=True)
def splitmix64(x):
    z = x + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@njit(cache=True)
def hashed_deck_into(seed, match_index, deal_index, deck):
    """Fill ``deck`` (52,) int8 with the shuffled deck of (seed, match, deal): card ids, top first."""
    key = splitmix64(splitmix64(splitmix64(np.uint64(seed)) ^ np.uint64(match_index)) ^ np.uint64(deal_index + 1))
    card_keys = np.empty(52, dtype=np.uint64)
    for i in range(52):
        card_keys[i] = splitmix64(key + np.uint64(i) * _GOLDEN)
    order = np.argsort(card_keys)
    for i in range(52):
        deck[i] = order[i]


@njit(cache=True)
def hashed_dealer(seed, match_index, num_players):
    key = splitmix64(splitmix64(splitmix64(np.uint64(seed)) ^ np.uint64(match_index)) ^ _ZERO)
    return np.int64(key % np.uint64(num_players))


@njit(cache=True)
def legal_play_set(hand, trump, led_card, tab):
    """uint64 card set the actor may play from ``hand`` with ``led_card`` leading (-1: the actor leads)."""
    key = trump * 53 + (52 if led_card < 0 else led_card)
    follows = hand & np.uint64(tab[T_FOLLOW + key])
    if follows == _ZERO:
        return hand
    return follows | (hand & np.uint64(tab[T_TRUMP_ALLOWED + key]))


@njit(cache=True)
def trick_winner_of(trick, leader, trump, tab):
    """Seat winning a complete trick: ``trick`` (n,) card per seat, ``leader`` the seat that led."""
    base = T_BEATS + (trump * 53 + trick[leader]) * 52
    best, best_seat = -2, 0
    for seat in range(trick.shape[0]):
        strength = tab[base + trick[seat]]
        if strength > best:
            best, best_seat = strength, seat
    return best_seat


@njit(cache=True)
def team_points(won, trump, tab):
    """Points in a team's won card set for ``trump`` (Low counted as captured)."""
    points = 0
    for k in range(tab[T_NUM_POINT_VALUES]):
        points += popcount(won & np.uint64(tab[T_POINT_SETS + trump * MAX_POINT_VALUES + k])) * tab[T_POINT_VALUES + k]
    return points


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
def _start_deal(buf, off, b, g, params, deck):
    """Deal ``deck`` (52,) to game ``g`` (its dealer and deal_index set) and open the bidding."""
    n, teams, stock_size, hand_size = params[P_PLAYERS], params[P_TEAMS], params[P_STOCK], params[P_HAND]
    dealt = n * hand_size
    hands = _u64(buf, off, F_HANDS, b * n)
    dealer = _i8(buf, off, F_DEALER, b)
    eldest = (dealer[g] + 1) % n
    for seat in range(n):
        hands[g * n + seat] = _ZERO
    for position in range(dealt):
        seat = (eldest + (position // 3) % n) % n
        hands[g * n + seat] |= card_bit(deck[position])
    stock = _i8(buf, off, F_STOCK, b * stock_size)
    in_stock = _u8(buf, off, F_IN_STOCK, b * stock_size)
    for i in range(stock_size):
        stock[g * stock_size + i] = deck[dealt + i]
        in_stock[g * stock_size + i] = 1
    bids = _i8(buf, off, F_BIDS, b * n)
    discards = _u64(buf, off, F_DISCARDS, b * n)
    done = _u8(buf, off, F_DONE, b * n)
    drawn = _i8(buf, off, F_DRAWN, b * n)
    trick = _i8(buf, off, F_TRICK, b * n)
    last_trick = _i8(buf, off, F_LAST_TRICK, b * n)
    played = _u64(buf, off, F_PLAYED, b * n)
    voids = _u8(buf, off, F_VOIDS, b * n)
    for seat in range(n):
        i = g * n + seat
        bids[i] = -1
        discards[i] = _ZERO
        done[i] = 0
        drawn[i] = 0
        trick[i] = -1
        last_trick[i] = -1
        played[i] = _ZERO
        voids[i] = 0
    won = _u64(buf, off, F_WON, b * teams)
    for team in range(teams):
        won[g * teams + team] = _ZERO
    _i8(buf, off, F_HIGH_BID, b)[g] = 0
    _i8(buf, off, F_MAKER, b)[g] = -1
    _i8(buf, off, F_TRUMP, b)[g] = -1
    _u64(buf, off, F_OPEN_DRAWS, b)[g] = _ZERO
    _u64(buf, off, F_SET_ASIDE, b)[g] = _ZERO
    _u8(buf, off, F_ROBBING, b)[g] = 0
    _i8(buf, off, F_TRICK_LEADER, b)[g] = -1
    _i8(buf, off, F_TRICK_SIZE, b)[g] = 0
    _i8(buf, off, F_TRICKS_DONE, b)[g] = 0
    _i8(buf, off, F_LAST_TRICK_WINNER, b)[g] = -1
    _i8(buf, off, F_LOW_TEAM, b)[g] = -1
    _i8(buf, off, F_PHASE, b)[g] = BID
    _i8(buf, off, F_ACTOR, b)[g] = eldest


@njit(cache=True)
def deal_games(buf, off, b, params, games, decks):
    """Deal ``decks[i]`` (k, 52) to game ``games[i]`` (dealer and deal_index already set)."""
    for i in range(games.shape[0]):
        _start_deal(buf, off, b, games[i], params, decks[i])


@njit(cache=True)
def _deal_or_defer(buf, off, b, g, params, hashed, deck, pending, waiting):
    """Deal game ``g`` a hashed deck, or (not ``hashed``) append it to ``pending``; returns the pending count."""
    if not hashed:
        pending[waiting] = g
        return waiting + 1
    seed = _u64(buf, off, F_SEED, b)[g]
    hashed_deck_into(seed, _i64(buf, off, F_MATCH_INDEX, b)[g], _i32(buf, off, F_DEAL_INDEX, b)[g], deck)
    _start_deal(buf, off, b, g, params, deck)
    return waiting


@njit(cache=True)
def new_matches(buf, off, b, params, games, dealers, hashed, pending):
    """Start fresh matches in ``games`` (seed and match_index set): scores 0, first dealer (``dealers``, or
    hashed where ``dealers[i] < 0``), first deal (hashed when ``hashed``, else listed in ``pending``).
    Returns the number of games written to ``pending`` (games still to be dealt)."""
    teams = params[P_TEAMS]
    scores = _i32(buf, off, F_SCORES, b * teams)
    seed = _u64(buf, off, F_SEED, b)
    match_index = _i64(buf, off, F_MATCH_INDEX, b)
    deal_index = _i32(buf, off, F_DEAL_INDEX, b)
    dealer = _i8(buf, off, F_DEALER, b)
    winner = _i8(buf, off, F_WINNER, b)
    deck = np.empty(52, dtype=np.int8)
    waiting = 0
    for i in range(games.shape[0]):
        g = games[i]
        for team in range(teams):
            scores[g * teams + team] = 0
        deal_index[g] = 0
        winner[g] = -1
        if dealers[i] >= 0:
            dealer[g] = dealers[i]
        else:
            dealer[g] = hashed_dealer(seed[g], match_index[g], params[P_PLAYERS])
        waiting = _deal_or_defer(buf, off, b, g, params, hashed, deck, pending, waiting)
    return waiting


# ---------------------------------------------------------------- the phases of one game


@njit(cache=True)
def _start_play(buf, off, b, g, params, tab):
    """The maker leads the first trick; remember which team holds Low (for low="held")."""
    n = params[P_PLAYERS]
    maker = _i8(buf, off, F_MAKER, b)[g]
    _i8(buf, off, F_PHASE, b)[g] = PLAY
    _i8(buf, off, F_ACTOR, b)[g] = maker
    _i8(buf, off, F_TRICK_LEADER, b)[g] = maker
    hands = _u64(buf, off, F_HANDS, b * n)
    low = np.uint64(tab[T_LOW_SET + _i8(buf, off, F_TRUMP, b)[g]])
    low_team = -1
    for seat in range(n):
        if hands[g * n + seat] & low != _ZERO:
            low_team = params[P_TEAM_OF_SEAT + seat]
            break
    _i8(buf, off, F_LOW_TEAM, b)[g] = low_team


@njit(cache=True)
def _apply_bid(buf, off, b, g, action, params):
    n = params[P_PLAYERS]
    actor = _i8(buf, off, F_ACTOR, b)
    high_bid = _i8(buf, off, F_HIGH_BID, b)
    maker = _i8(buf, off, F_MAKER, b)
    seat = actor[g]
    _i8(buf, off, F_BIDS, b * n)[g * n + seat] = action
    if action != PASS_ACTION:
        high_bid[g] = action
        maker[g] = seat
    if seat == _i8(buf, off, F_DEALER, b)[g]:
        _i8(buf, off, F_PHASE, b)[g] = TRUMP
        actor[g] = maker[g]
        if high_bid[g] == 0:
            _u8(buf, off, F_DEAL_OVER, b)[g] = 1
            _u8(buf, off, F_LAST_REDEAL, b)[g] = 1
    else:
        _i8(buf, off, F_PHASE, b)[g] = BID
        actor[g] = (seat + 1) % n


@njit(cache=True)
def _take_into_hand(buf, off, b, g, seat, taken, params):
    """Move the stock positions flagged in ``taken`` (S,) into ``seat``'s hand."""
    n, stock_size = params[P_PLAYERS], params[P_STOCK]
    stock = _i8(buf, off, F_STOCK, b * stock_size)
    in_stock = _u8(buf, off, F_IN_STOCK, b * stock_size)
    cards = _ZERO
    count = 0
    for i in range(stock_size):
        if taken[i]:
            cards |= card_bit(stock[g * stock_size + i])
            in_stock[g * stock_size + i] = 0
            count += 1
    _u64(buf, off, F_HANDS, b * n)[g * n + seat] |= cards
    drawn = _i8(buf, off, F_DRAWN, b * n)
    drawn[g * n + seat] = drawn[g * n + seat] + count


@njit(cache=True)
def _refill(buf, off, b, g, params, tab):
    """Each player from eldest round to the dealer (the dealer skipped when robbing) draws back up to 6."""
    n, stock_size, refill = params[P_PLAYERS], params[P_STOCK], params[P_REFILL]
    drawers = n - 1 if refill == REFILL_ROBS else n
    stock = _i8(buf, off, F_STOCK, b * stock_size)
    in_stock = _u8(buf, off, F_IN_STOCK, b * stock_size)
    hands = _u64(buf, off, F_HANDS, b * n)
    dealer = _i8(buf, off, F_DEALER, b)[g]
    maker = _i8(buf, off, F_MAKER, b)[g]
    trump = _i8(buf, off, F_TRUMP, b)[g]
    open_draws = _u64(buf, off, F_OPEN_DRAWS, b)
    taken = np.zeros(stock_size, dtype=np.bool_)
    for offset in range(1, drawers + 1):
        seat = (dealer + offset) % n
        need = HAND_AT_PLAY - popcount(hands[g * n + seat])
        for i in range(stock_size):
            taken[i] = False
        if refill == REFILL_MAKER_SORTED and seat == maker:  # the maker takes the stock's trumps first, face up
            face_up = _ZERO
            face_up_count = 0
            for i in range(stock_size):
                card = stock[g * stock_size + i]
                if in_stock[g * stock_size + i] and tab[T_IS_TRUMP + trump * 52 + card] and face_up_count < need:
                    taken[i] = True
                    face_up |= card_bit(card)
                    face_up_count += 1
            open_draws[g] |= face_up
            need -= face_up_count
        count = 0
        for i in range(stock_size):
            if in_stock[g * stock_size + i] and not taken[i]:
                count += 1
                if count <= need:
                    taken[i] = True
        _take_into_hand(buf, off, b, g, seat, taken, params)


@njit(cache=True)
def _apply_discard(buf, off, b, g, action, params, tab):
    """``discard XX`` or ``done``; returns whether play begins (the caller starts it)."""
    n = params[P_PLAYERS]
    actor = _i8(buf, off, F_ACTOR, b)
    seat = actor[g]
    if action != DONE_ACTION:
        bit = card_bit(action - DISCARD_OFFSET)
        _u64(buf, off, F_HANDS, b * n)[g * n + seat] &= ~bit
        _u64(buf, off, F_DISCARDS, b * n)[g * n + seat] |= bit
        return False
    robbing = _u8(buf, off, F_ROBBING, b)
    if robbing[g]:  # the robbing dealer is down to 6: play begins
        robbing[g] = 0
        return True
    _u8(buf, off, F_DONE, b * n)[g * n + seat] = 1
    next_seat = (seat + 1) % n
    dealer = _i8(buf, off, F_DEALER, b)[g]
    robs = params[P_REFILL] == REFILL_ROBS
    last = next_seat == dealer if robs else seat == dealer
    actor[g] = next_seat
    if not last:
        return False
    _refill(buf, off, b, g, params, tab)
    stock_size = params[P_STOCK]
    in_stock = _u8(buf, off, F_IN_STOCK, b * stock_size)
    if robs:  # the dealer adds the whole remaining stock, face down, then discards to 6
        taken = np.zeros(stock_size, dtype=np.bool_)
        for i in range(stock_size):
            taken[i] = in_stock[g * stock_size + i] != 0
        _take_into_hand(buf, off, b, g, dealer, taken, params)
        robbing[g] = 1
        actor[g] = dealer
        return False
    # trumps left in the stock are turned face up and set aside
    stock = _i8(buf, off, F_STOCK, b * stock_size)
    trump = _i8(buf, off, F_TRUMP, b)[g]
    aside = _ZERO
    for i in range(stock_size):
        card = stock[g * stock_size + i]
        if in_stock[g * stock_size + i] and tab[T_IS_TRUMP + trump * 52 + card]:
            aside |= card_bit(card)
            in_stock[g * stock_size + i] = 0
    _u64(buf, off, F_SET_ASIDE, b)[g] = aside
    return True


@njit(cache=True)
def _apply_play(buf, off, b, g, action, params, tab):
    n = params[P_PLAYERS]
    actor = _i8(buf, off, F_ACTOR, b)
    seat = actor[g]
    card = action - PLAY_OFFSET
    hands = _u64(buf, off, F_HANDS, b * n)
    trick = _i8(buf, off, F_TRICK, b * n)
    trick_leader = _i8(buf, off, F_TRICK_LEADER, b)
    trump = _i8(buf, off, F_TRUMP, b)[g]
    leader = trick_leader[g]
    led_card = trick[g * n + leader]
    bit = card_bit(card)
    if params[P_RENEGE_PENALTY]:
        if legal_play_set(hands[g * n + seat], trump, led_card, tab) & bit == _ZERO:
            _u8(buf, off, F_DEAL_OVER, b)[g] = 1
            _i8(buf, off, F_LAST_RENEGE, b)[g] = params[P_TEAM_OF_SEAT + seat]
            return
    # a follower who neither follows the led suit nor trumps a non-trump lead shows a void in the led suit
    key = trump * 53 + (52 if led_card < 0 else led_card)
    if np.uint64(tab[T_ANSWERS + key]) & bit == _ZERO:
        voids = _u8(buf, off, F_VOIDS, b * n)
        voids[g * n + seat] |= np.uint8(tab[T_LED_SUIT_BIT + key])
    hands[g * n + seat] &= ~bit
    _u64(buf, off, F_PLAYED, b * n)[g * n + seat] |= bit
    trick[g * n + seat] = card
    trick_size = _i8(buf, off, F_TRICK_SIZE, b)
    trick_size[g] += 1
    actor[g] = (seat + 1) % n
    if trick_size[g] < n:
        return
    row = trick[g * n : (g + 1) * n]
    winner = trick_winner_of(row, leader, trump, tab)
    teams = params[P_TEAMS]
    cards = _ZERO
    last_trick = _i8(buf, off, F_LAST_TRICK, b * n)
    for s in range(n):
        cards |= card_bit(row[s])
        last_trick[g * n + s] = row[s]
        row[s] = -1
    _u64(buf, off, F_WON, b * teams)[g * teams + params[P_TEAM_OF_SEAT + winner]] |= cards
    _i8(buf, off, F_LAST_TRICK_WINNER, b)[g] = winner
    trick_size[g] = 0
    tricks_done = _i8(buf, off, F_TRICKS_DONE, b)
    tricks_done[g] += 1
    trick_leader[g] = winner
    actor[g] = winner
    if tricks_done[g] == TRICKS_PER_DEAL:
        _u8(buf, off, F_DEAL_OVER, b)[g] = 1


@njit(cache=True)
def _finish_deal(buf, off, b, g, params, tab):
    """Score the deal that ended in game ``g`` (or record it thrown in) and decide the match.
    Returns whether the match goes on (the caller deals again)."""
    n, teams = params[P_PLAYERS], params[P_TEAMS]
    thrown_in = _u8(buf, off, F_LAST_REDEAL, b)[g] != 0
    maker = _i8(buf, off, F_MAKER, b)[g]
    high_bid = _i8(buf, off, F_HIGH_BID, b)[g]
    trump = _i8(buf, off, F_TRUMP, b)[g]
    _i8(buf, off, F_LAST_MAKER, b)[g] = -1 if thrown_in else maker
    _i8(buf, off, F_LAST_BID, b)[g] = 0 if thrown_in else high_bid
    _i8(buf, off, F_LAST_TRUMP, b)[g] = -1 if thrown_in else trump
    last_points = _i16(buf, off, F_LAST_POINTS, b * teams)[g * teams : (g + 1) * teams]
    last_delta = _i32(buf, off, F_LAST_DELTA, b * teams)[g * teams : (g + 1) * teams]
    last_points[:] = 0
    last_delta[:] = 0
    last_made = _i8(buf, off, F_LAST_MADE, b)
    last_made[g] = -1
    winner = _i8(buf, off, F_WINNER, b)
    rewards = _f32(buf, off, F_REWARDS, b * n)
    won_match = False
    if not thrown_in:
        maker_team = params[P_TEAM_OF_SEAT + maker]
        bid = np.int64(high_bid)
        points = np.zeros(teams, dtype=np.int64)
        won = _u64(buf, off, F_WON, b * teams)[g * teams : (g + 1) * teams]
        deal_points_into(won, trump, _i8(buf, off, F_LOW_TEAM, b)[g], params[P_LOW_HELD] != 0, tab, points)
        delta = np.zeros(teams, dtype=np.int64)
        made = score_deal_into(points, maker_team, bid, params[P_SIMPLE] != 0, delta)
        renege_team = _i8(buf, off, F_LAST_RENEGE, b)[g]
        if params[P_RENEGE_PENALTY] and renege_team >= 0:
            made = renege_team != maker_team
            for team in range(teams):
                delta[team] = (0 if made else -bid) if team == renege_team else params[P_TOTAL]
        scores = _i32(buf, off, F_SCORES, b * teams)[g * teams : (g + 1) * teams]
        for team in range(teams):
            scores[team] += delta[team]
            last_points[team] = points[team]
            last_delta[team] = delta[team]
        last_made[g] = 1 if made else 0
        winner[g] = match_winner_of(scores, params[P_TARGET], maker_team, made)
        won_match = winner[g] >= 0
        if not params[P_REWARD_WIN]:  # each seat: (its team's delta - the opponents' mean delta) / total points
            total_delta = 0
            for team in range(teams):
                total_delta += delta[team]
            for seat in range(n):
                team = params[P_TEAM_OF_SEAT + seat]
                others_mean = (total_delta - delta[team]) / (teams - 1)
                rewards[g * n + seat] += np.float32((delta[team] - others_mean) / params[P_TOTAL])
    if params[P_REWARD_WIN] and won_match:
        for seat in range(n):
            rewards[g * n + seat] += np.float32(1.0 if params[P_TEAM_OF_SEAT + seat] == winner[g] else -1.0)
    one_deal = params[P_EPISODE_DEAL] != 0
    deal_index = _i32(buf, off, F_DEAL_INDEX, b)
    truncated = not won_match and not one_deal and deal_index[g] + 1 >= params[P_MAX_DEALS]
    if won_match or one_deal:
        _u8(buf, off, F_TERMINATED, b)[g] = 1
    if truncated:
        _u8(buf, off, F_TRUNCATED, b)[g] = 1
    if won_match or one_deal or truncated:
        _i8(buf, off, F_PHASE, b)[g] = OVER
        _i8(buf, off, F_TRICK_LEADER, b)[g] = -1  # no trick follows
        return False
    deal_index[g] += 1
    dealer = _i8(buf, off, F_DEALER, b)
    dealer[g] = (dealer[g] + 1) % n
    return True


@njit(cache=True)
def step_games(buf, off, b, params, tab, actions, hashed, pending):
    """Apply one action per game, in place (games OVER ignore theirs). Deals that end are scored and
    the next deal dealt: hashed decks when ``hashed``, else the games are listed in ``pending`` for the
    caller to deal. Returns the number of games written to ``pending``."""
    n = params[P_PLAYERS]
    deal_over = _u8(buf, off, F_DEAL_OVER, b)
    any_over = False
    for g in range(b):
        if deal_over[g]:
            any_over = True
            break
    if any_over:  # clear what the previous step's deal endings reported
        _f32(buf, off, F_REWARDS, b * n)[:] = 0.0
        deal_over[:] = 0
        _u8(buf, off, F_LAST_REDEAL, b)[:] = 0
        _i8(buf, off, F_LAST_RENEGE, b)[:] = -1
        _u8(buf, off, F_TERMINATED, b)[:] = 0
        _u8(buf, off, F_TRUNCATED, b)[:] = 0
    phase = _i8(buf, off, F_PHASE, b)
    for g in range(b):
        p = phase[g]
        action = actions[g]
        if p == BID:
            _apply_bid(buf, off, b, g, action, params)
        elif p == TRUMP:
            _i8(buf, off, F_TRUMP, b)[g] = action - TRUMP_OFFSET
            if params[P_SIX_CARD]:
                _start_play(buf, off, b, g, params, tab)
            else:
                phase[g] = DISCARD
                _i8(buf, off, F_ACTOR, b)[g] = (_i8(buf, off, F_DEALER, b)[g] + 1) % n
        elif p == DISCARD:
            if _apply_discard(buf, off, b, g, action, params, tab):
                _start_play(buf, off, b, g, params, tab)
        elif p == PLAY:
            _apply_play(buf, off, b, g, action, params, tab)
    waiting = 0
    deck = np.empty(52, dtype=np.int8)
    for g in range(b):
        if deal_over[g] and _finish_deal(buf, off, b, g, params, tab):
            waiting = _deal_or_defer(buf, off, b, g, params, hashed, deck, pending, waiting)
    return waiting


# ---------------------------------------------------------------- legal actions and observations


@njit(cache=True)
def legal_masks(buf, off, b, params, tab, mask):
    """Fill ``mask`` (B, 133) bool with the actor's legal actions (all False where the phase is OVER)."""
    n, stock_size = params[P_PLAYERS], params[P_STOCK]
    phase = _i8(buf, off, F_PHASE, b)
    actor = _i8(buf, off, F_ACTOR, b)
    hands = _u64(buf, off, F_HANDS, b * n)
    mask[:, :] = False
    for g in range(b):
        p = phase[g]
        if p == BID:
            high = _i8(buf, off, F_HIGH_BID, b)[g]
            mask[g, PASS_ACTION] = True
            for bid in range(max(high + 1, params[P_MIN_BID]), params[P_TOTAL] + 1):
                mask[g, bid] = True
            if params[P_DEALER_FORCED] and high == 0 and actor[g] == _i8(buf, off, F_DEALER, b)[g]:
                mask[g, PASS_ACTION] = False
        elif p == TRUMP:
            for suit in range(4):
                mask[g, TRUMP_OFFSET + suit] = True
        elif p == DISCARD:
            seats = hands[g * n : (g + 1) * n]
            may_discard, may_say_done = discard_options_of(
                seats,
                _u8(buf, off, F_DONE, b * n)[g * n : (g + 1) * n],
                _i8(buf, off, F_DRAWN, b * n)[g * n : (g + 1) * n],
                _u64(buf, off, F_SET_ASIDE, b)[g],
                _u8(buf, off, F_ROBBING, b)[g] != 0,
                actor[g],
                stock_size,
            )
            if may_discard:
                hand = seats[actor[g]]
                for card in range(52):
                    if hand >> np.uint64(card) & _ONE:
                        mask[g, DISCARD_OFFSET + card] = True
            mask[g, DONE_ACTION] = may_say_done
        elif p == PLAY:
            leader = _i8(buf, off, F_TRICK_LEADER, b)[g]
            led = _i8(buf, off, F_TRICK, b * n)[g * n + leader]
            legal = legal_play_set(hands[g * n + actor[g]], _i8(buf, off, F_TRUMP, b)[g], led, tab)
            for card in range(52):
                if legal >> np.uint64(card) & _ONE:
                    mask[g, PLAY_OFFSET + card] = True


@njit(cache=True)
def _card_piece(out, g, start, cards):
    for card in range(52):
        if cards >> np.uint64(card) & _ONE:
            out[g, start + card] = 1


@njit(cache=True)
def encode_games(buf, off, b, params, tab, pieces, to_go_cap, viewer, out, full):
    """Fill ``out`` (B, D) uint8 with each game's observation from seat ``viewer[g]`` (pedro_env.encoding);
    with ``full``, ``out`` is (B, D + n*52 + 52) and gets every relative seat's hand and the unseen stock."""
    n, teams, stock_size, total = params[P_PLAYERS], params[P_TEAMS], params[P_STOCK], params[P_TOTAL]
    hands = _u64(buf, off, F_HANDS, b * n)
    discards = _u64(buf, off, F_DISCARDS, b * n)
    played = _u64(buf, off, F_PLAYED, b * n)
    won = _u64(buf, off, F_WON, b * teams)
    trick = _i8(buf, off, F_TRICK, b * n)
    bids = _i8(buf, off, F_BIDS, b * n)
    done = _u8(buf, off, F_DONE, b * n)
    drawn = _i8(buf, off, F_DRAWN, b * n)
    voids = _u8(buf, off, F_VOIDS, b * n)
    scores = _i32(buf, off, F_SCORES, b * teams)
    phase = _i8(buf, off, F_PHASE, b)
    trump_of = _i8(buf, off, F_TRUMP, b)
    dealer = _i8(buf, off, F_DEALER, b)
    maker = _i8(buf, off, F_MAKER, b)
    leader = _i8(buf, off, F_TRICK_LEADER, b)
    set_aside = _u64(buf, off, F_SET_ASIDE, b)
    target = params[P_TARGET]
    size = pieces[O_TARGET] + 1
    out[:, :] = 0
    for g in range(b):
        v = viewer[g]
        my_team = params[P_TEAM_OF_SEAT + v]
        _card_piece(out, g, pieces[O_HAND], hands[g * n + v])
        _card_piece(out, g, pieces[O_OPEN_DRAWS], _u64(buf, off, F_OPEN_DRAWS, b)[g])
        _card_piece(out, g, pieces[O_SET_ASIDE], set_aside[g])
        trick_set = _ZERO
        total_drawn = 0
        for r in range(n):
            s = (v + r) % n
            i = g * n + s
            _card_piece(out, g, pieces[O_DISCARDS] + 52 * r, discards[i])
            _card_piece(out, g, pieces[O_PLAYED] + 52 * r, played[i])
            if trick[i] >= 0:
                trick_set |= card_bit(trick[i])
            out[g, pieces[O_BIDS] + r * (total + 2) + 1 + bids[i]] = 1
            out[g, pieces[O_DONE] + r] = done[i]
            out[g, pieces[O_DRAWN] + r] = drawn[i]
            out[g, pieces[O_HAND_SIZES] + r] = popcount(hands[i])
            for suit in range(4):
                out[g, pieces[O_VOIDS] + 4 * r + suit] = (voids[i] >> suit) & 1
            total_drawn += drawn[i]
        _card_piece(out, g, pieces[O_TRICK], trick_set)
        trump = trump_of[g]
        point_trump = (trump + 4) % 4  # nothing is won before trumps are named
        for t in range(teams):
            team = (my_team + t) % teams
            team_won = won[g * teams + team]
            _card_piece(out, g, pieces[O_WON] + 52 * t, team_won)
            out[g, pieces[O_POINTS] + t] = team_points(team_won, point_trump, tab)
            to_go = target - scores[g * teams + team]
            out[g, pieces[O_TO_GO] + t] = min(max(to_go, 0), to_go_cap)
        if phase[g] < OVER:
            out[g, pieces[O_PHASE] + phase[g]] = 1
        if trump >= 0:
            out[g, pieces[O_TRUMP] + trump] = 1
        out[g, pieces[O_DEALER] + (dealer[g] - v) % n] = 1
        if maker[g] >= 0:
            out[g, pieces[O_MAKER] + (maker[g] - v) % n] = 1
        if leader[g] >= 0:
            out[g, pieces[O_TRICK_LEADER] + (leader[g] - v) % n] = 1
        out[g, pieces[O_STOCK_LEFT]] = stock_size - total_drawn - popcount(set_aside[g])
        out[g, pieces[O_ROBBING]] = _u8(buf, off, F_ROBBING, b)[g]
        out[g, pieces[O_TRICKS_DONE]] = _i8(buf, off, F_TRICKS_DONE, b)[g]
        out[g, pieces[O_TARGET]] = min(target, 255)
        if full:
            for r in range(n):
                _card_piece(out, g, size + 52 * r, hands[g * n + (v + r) % n])
            stock = _i8(buf, off, F_STOCK, b * stock_size)
            in_stock = _u8(buf, off, F_IN_STOCK, b * stock_size)
            unseen = _ZERO
            for i in range(stock_size):
                if in_stock[g * stock_size + i]:
                    unseen |= card_bit(stock[g * stock_size + i])
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
    for i in range(seeds.shape[0]):
        hashed_deck_into(seeds[i], match_indices[i], deal_indices[i], decks[i])


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
