"""Legal actions and observations (docs/environment.md): each game's mask of the actor's legal actions, and
each game as one seat sees it, rotated to that seat (the one place seats are rotated)."""

from __future__ import annotations

import numpy as np
from numba import njit

from pedro_env.actions import DISCARD_OFFSET, DONE_ACTION, NUM_ACTIONS, PASS_ACTION, PLAY_OFFSET, TRUMP_OFFSET
from pedro_env.kernels.bits import (
    ZERO,
    bits_as_bytes_store,
    card_bit,
    popcount,
    seat_after,
    seat_from,
    store_card_bytes,
    store_suit_bytes,
    typed_views,
    zero_bytes,
)
from pedro_env.kernels.exchange import discard_options_of
from pedro_env.kernels.inputs import (
    F_ACTOR,
    F_BIDS,
    F_DEALER,
    F_DISCARDS,
    F_DONE,
    F_DRAWN,
    F_HANDS,
    F_HIGH_BID,
    F_IN_STOCK,
    F_MAKER,
    F_OPEN_DRAWS,
    F_PHASE,
    F_PLAYED,
    F_ROBBING,
    F_SCORES,
    F_SET_ASIDE,
    F_STOCK,
    F_TRICK,
    F_TRICK_LEADER,
    F_TRICKS_DONE,
    F_TRUMP,
    F_VOIDS,
    F_WON,
    O_BIDS,
    O_DEALER,
    O_DONE,
    O_DRAWN,
    O_HAND,
    O_HAND_SIZES,
    O_MAKER,
    O_PHASE,
    O_POINTS,
    O_ROBBING,
    O_RULES,
    O_STOCK_LEFT,
    O_TARGET,
    O_TO_GO,
    O_TRICK_LEADER,
    O_TRICKS_DONE,
    O_TRUMP,
    O_VOIDS,
    O_WON,
    P_DEALER_FORCED,
    P_MIN_BID,
    P_PLAYERS,
    P_STOCK,
    P_TARGET,
    P_TEAM_OF_SEAT,
    P_TEAMS,
    P_TOTAL,
    unpack_statics,
)
from pedro_env.kernels.scoring import team_points
from pedro_env.kernels.tricks import legal_play_set
from pedro_env.observation_layout import BID_WIDTH, MAX_PLAYERS, OBSERVATION_SIZE, RULES_WIDTH
from pedro_env.state import BID, DISCARD, OVER, PLAY, TRUMP

RULE_FLAGS = RULES_WIDTH - 1  # the rules piece: its 0/1 flags, then min_bid
store_rule_flags = bits_as_bytes_store(RULE_FLAGS)


@njit(cache=True, _nrt=False)
def legal_masks(buf, eo, b, params, tab, mask):
    """Fill ``mask`` (B, 133) bool with the actor's legal actions (all False where the phase is OVER).
    Allocates nothing, so it runs without reference counting (the array views it takes cost 2/3 of its time)."""
    u8, i8, i16, i32, i64, u64, f32 = typed_views(buf)
    for g in range(b):
        legal_mask_of(u8, i8, u64, eo, params, tab, g, mask)


@njit(cache=True, _nrt=False, inline="always")
def legal_mask_of(u8, i8, u64, eo, params, tab, g, mask):
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
def encode_games(buf, eo, b, params, tab, pieces, to_go_cap, rules, viewer, out):
    """Fill ``out`` (B, D) uint8 with each game's observation from seat ``viewer[g]`` (pedro_env.encoding);
    an ``out`` of (B, D + n*52 + 52) also gets every relative seat's hand and the unseen stock (the full state).
    Allocates nothing, so it runs without reference counting."""
    u8, i8, i16, i32, i64, u64, f32 = typed_views(buf)
    for g in range(b):
        encode_game(u8, i8, i32, u64, eo, params, tab, pieces, to_go_cap, rules, g, viewer[g], out)


@njit(cache=True, _nrt=False, inline="always")
def encode_game(u8, i8, i32, u64, eo, params, tab, pieces, to_go_cap, rules, g, v, out):
    """Row ``g`` of :func:`encode_games`: game ``g`` seen from seat ``v``, piece by piece. Seats and teams past the
    config's are left 0 (the layout has 4 seat blocks and 3 team blocks). Each piece writer reads its offsets
    into locals before its first store into ``out`` (which might alias them), so it reads them once."""
    _store_card_pieces(i8, u64, eo, params, pieces, g, v, out)
    # the rest of the observation (the won blocks of teams the game lacks included), before the writes below
    rest = pieces[O_WON] + 52 * params[P_TEAMS]
    zero_bytes(out, g, rest, OBSERVATION_SIZE - rest)
    total_drawn = _store_seat_pieces(u8, i8, u64, eo, params, pieces, g, v, out)
    _store_team_pieces(i8, i32, u64, eo, params, tab, pieces, to_go_cap, g, v, out)
    _store_game_pieces(u8, i8, u64, eo, params, pieces, rules, total_drawn, g, v, out)
    if out.shape[1] > OBSERVATION_SIZE:
        _store_hidden_cards(u8, i8, u64, eo, params, g, v, out)


@njit(cache=True, _nrt=False, inline="always")
def _store_card_pieces(i8, u64, eo, params, pieces, g, v, out):
    """The card pieces, in layout order: hand, open draws, discards (4 seats), set aside, played (4), the trick,
    won (the game's teams)."""
    n, teams = params[P_PLAYERS], params[P_TEAMS]
    p_hand, p_won = pieces[O_HAND], pieces[O_WON]
    e_discards, e_played, e_trick, e_won = eo[F_DISCARDS], eo[F_PLAYED], eo[F_TRICK], eo[F_WON]
    my_team = params[P_TEAM_OF_SEAT + v]
    store_card_bytes(out, g, p_hand, u64[eo[F_HANDS] + g * n + v])
    store_card_bytes(out, g, p_hand + 52, u64[eo[F_OPEN_DRAWS] + g])
    store_card_bytes(out, g, p_hand + 52 * (2 + MAX_PLAYERS), u64[eo[F_SET_ASIDE] + g])
    trick_set = ZERO
    for r in range(n):
        i = g * n + seat_after(v, r, n)
        store_card_bytes(out, g, p_hand + 52 * (2 + r), u64[e_discards + i])
        store_card_bytes(out, g, p_hand + 52 * (3 + MAX_PLAYERS + r), u64[e_played + i])
        if i8[e_trick + i] >= 0:
            trick_set |= card_bit(i8[e_trick + i])
    for r in range(n, MAX_PLAYERS):
        store_card_bytes(out, g, p_hand + 52 * (2 + r), ZERO)
        store_card_bytes(out, g, p_hand + 52 * (3 + MAX_PLAYERS + r), ZERO)
    store_card_bytes(out, g, p_hand + 52 * (3 + 2 * MAX_PLAYERS), trick_set)
    for t in range(teams):
        store_card_bytes(out, g, p_won + 52 * t, u64[e_won + g * teams + seat_after(my_team, t, teams)])


@njit(cache=True, _nrt=False, inline="always")
def _store_seat_pieces(u8, i8, u64, eo, params, pieces, g, v, out):
    """Per relative seat: its bid, done, cards drawn, hand size and voids (into a zeroed row); returns the cards
    drawn in all."""
    n = params[P_PLAYERS]
    p_bids, p_done, p_drawn = pieces[O_BIDS], pieces[O_DONE], pieces[O_DRAWN]
    p_hand_sizes, p_voids = pieces[O_HAND_SIZES], pieces[O_VOIDS]
    e_bids, e_done, e_drawn, e_hands, e_voids = eo[F_BIDS], eo[F_DONE], eo[F_DRAWN], eo[F_HANDS], eo[F_VOIDS]
    total_drawn = 0
    for r in range(n):
        i = g * n + seat_after(v, r, n)
        out[g, p_bids + r * BID_WIDTH + 1 + i8[e_bids + i]] = 1
        out[g, p_done + r] = u8[e_done + i]
        out[g, p_drawn + r] = i8[e_drawn + i]
        out[g, p_hand_sizes + r] = popcount(u64[e_hands + i])
        store_suit_bytes(out, g, p_voids + 4 * r, np.uint64(u8[e_voids + i]))
        total_drawn += i8[e_drawn + i]
    return total_drawn


@njit(cache=True, _nrt=False, inline="always")
def _store_team_pieces(i8, i32, u64, eo, params, tab, pieces, to_go_cap, g, v, out):
    """Per relative team: the points of the tricks it won and the points it still needs (capped at ``to_go_cap``)."""
    teams, target = params[P_TEAMS], params[P_TARGET]
    p_points, p_to_go = pieces[O_POINTS], pieces[O_TO_GO]
    e_won, e_scores = eo[F_WON], eo[F_SCORES]
    my_team = params[P_TEAM_OF_SEAT + v]
    point_trump = i8[eo[F_TRUMP] + g] & 3  # nothing is won before trumps are named
    for t in range(teams):
        team = seat_after(my_team, t, teams)
        out[g, p_points + t] = team_points(u64[e_won + g * teams + team], point_trump, tab)
        to_go = target - i32[e_scores + g * teams + team]
        out[g, p_to_go + t] = min(max(to_go, 0), to_go_cap)


@njit(cache=True, _nrt=False, inline="always")
def _store_game_pieces(u8, i8, u64, eo, params, pieces, rules, total_drawn, g, v, out):
    """The one-hot and count pieces of the game (into a zeroed row): phase, trumps, dealer, maker and trick leader
    (relative seats), cards left in the stock, robbing, tricks done, the target and the rules."""
    n, stock_size, target = params[P_PLAYERS], params[P_STOCK], params[P_TARGET]
    p_phase, p_trump, p_dealer, p_maker = pieces[O_PHASE], pieces[O_TRUMP], pieces[O_DEALER], pieces[O_MAKER]
    p_trick_leader, p_stock_left, p_robbing = pieces[O_TRICK_LEADER], pieces[O_STOCK_LEFT], pieces[O_ROBBING]
    p_tricks_done, p_target, p_rules = pieces[O_TRICKS_DONE], pieces[O_TARGET], pieces[O_RULES]
    phase, trump = i8[eo[F_PHASE] + g], i8[eo[F_TRUMP] + g]
    maker, trick_leader = i8[eo[F_MAKER] + g], i8[eo[F_TRICK_LEADER] + g]
    if phase < OVER:
        out[g, p_phase + phase] = 1
    if trump >= 0:
        out[g, p_trump + trump] = 1
    out[g, p_dealer + seat_from(i8[eo[F_DEALER] + g], v, n)] = 1
    if maker >= 0:
        out[g, p_maker + seat_from(maker, v, n)] = 1
    if trick_leader >= 0:
        out[g, p_trick_leader + seat_from(trick_leader, v, n)] = 1
    out[g, p_stock_left] = stock_size - total_drawn - popcount(u64[eo[F_SET_ASIDE] + g])
    out[g, p_robbing] = u8[eo[F_ROBBING] + g]
    out[g, p_tricks_done] = i8[eo[F_TRICKS_DONE] + g]
    out[g, p_target] = min(target, 255)
    store_rule_flags(out, g, p_rules, np.uint64(rules[0]))
    out[g, p_rules + RULE_FLAGS] = rules[1]


@njit(cache=True, _nrt=False, inline="always")
def _store_hidden_cards(u8, i8, u64, eo, params, g, v, out):
    """The full state's hidden part, after the observation: every relative seat's hand, then the unseen stock."""
    n, stock_size = params[P_PLAYERS], params[P_STOCK]
    e_hands, e_in_stock, e_stock = eo[F_HANDS], eo[F_IN_STOCK], eo[F_STOCK]
    size = OBSERVATION_SIZE
    for r in range(n):
        store_card_bytes(out, g, size + 52 * r, u64[e_hands + g * n + seat_after(v, r, n)])
    for r in range(n, MAX_PLAYERS):
        store_card_bytes(out, g, size + 52 * r, ZERO)
    unseen = ZERO
    for i in range(stock_size):
        if u8[e_in_stock + g * stock_size + i]:
            unseen |= card_bit(i8[e_stock + g * stock_size + i])
    store_card_bytes(out, g, size + 52 * MAX_PLAYERS, unseen)


@njit(cache=True)
def encode_observations(buf, eo, b, statics, viewer, out):
    """:func:`encode_games` with the config's constant inputs in one array."""
    params, tab, pieces, to_go_cap, rules = unpack_statics(statics)
    encode_games(buf, eo, b, params, tab, pieces, to_go_cap, rules, viewer, out)


@njit(cache=True)
def aec_observe(buf, eo, statics, viewer, out):
    """The observation of a batch of one from seat ``viewer`` (1,) int64 into ``out`` (D,) uint8."""
    params, tab, pieces, to_go_cap, rules = unpack_statics(statics)
    encode_games(
        buf, eo, viewer.shape[0], params, tab, pieces, to_go_cap, rules, viewer, out.reshape((1, out.shape[0]))
    )
