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
    """Row ``g`` of :func:`encode_games`: game ``g`` seen from seat ``v``. Seats and teams past the config's are
    left 0 (the layout has 4 seat blocks and 3 team blocks)."""
    n, teams, stock_size = params[P_PLAYERS], params[P_TEAMS], params[P_STOCK]
    target = params[P_TARGET]
    size = OBSERVATION_SIZE
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
    p_rules = pieces[O_RULES]
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
    my_team = params[P_TEAM_OF_SEAT + v]
    # the card pieces, in layout order: hand, open draws, discards (4), set aside, played (4), trick, won (3)
    store_card_bytes(out, g, p_hand, u64[e_hands + g * n + v])
    store_card_bytes(out, g, p_hand + 52, u64[e_open_draws + g])
    store_card_bytes(out, g, p_hand + 52 * (2 + MAX_PLAYERS), u64[e_set_aside + g])
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
    # the rest of the observation (the won blocks of teams the game lacks included), before the writes below
    zero_bytes(out, g, p_won + 52 * teams, size - (p_won + 52 * teams))
    total_drawn = 0
    for r in range(n):
        i = g * n + seat_after(v, r, n)
        out[g, p_bids + r * BID_WIDTH + 1 + i8[e_bids + i]] = 1
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
    store_rule_flags(out, g, p_rules, np.uint64(rules[0]))
    out[g, p_rules + RULE_FLAGS] = rules[1]
    if full:
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
