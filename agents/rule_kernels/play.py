"""Discards and plays: the numbered rules of docs/agents.md, each a condition per game and a score per card,
the first that applies deciding."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from agents.rule_kernels.inputs import (
    A_BEATS,
    A_CONTEST_POINTS,
    A_DENY,
    A_IS_TRUMP,
    A_KEEP_VALUE,
    A_PLAY_VALUE,
    A_PLAYERS,
    A_PROBE_AS_MAKER,
    A_PULL_TRUMPS,
    A_SIX_CARD,
    A_STRENGTH,
    A_TEAM_OF_SEAT,
    A_TRUMP_ORDER,
    A_VOID_CARDS,
    ALL_CARDS,
    HIDDEN,
    LOG_MISS,
    MAX_TRUMPS,
    NOT_LEGAL,
    PER_LEVEL,
    RUNNING,
    STRENGTH_LEVELS,
    TRUMP_STRENGTH,
    W_FEED_CHANCE,
    W_SAVE_CHANCE,
    W_WIN_CHANCE,
    first_set,
    holds,
    pairwise_sum,
)
from pedro_env.actions import DISCARD_OFFSET, DONE_ACTION, PLAY_OFFSET
from pedro_env.kernels.bits import ZERO, card_bit, load_card_bits, load_suit_bits, lowest_card, popcount
from pedro_env.kernels.inputs import (
    O_DISCARDS,
    O_HAND,
    O_HAND_SIZES,
    O_MAKER,
    O_OPEN_DRAWS,
    O_PLAYED,
    O_SET_ASIDE,
    O_TRICK,
    O_TRICK_LEADER,
    O_TRUMP,
    O_VOIDS,
)


@njit(cache=True)
def discard_action(trump, robbing, maker, masks, g, ints):
    """Throw the least useful card (the robbing dealer: until 6 remain; the others: non-trumps only), then say
    done; with ``deny`` a defender first throws its point trumps but the ace."""
    best_score, worst = NOT_LEGAL, 0
    row = A_KEEP_VALUE + trump * 52
    for card in range(52):
        if masks[g, DISCARD_OFFSET + card] and -ints[row + card] > best_score:
            best_score, worst = -ints[row + card], card
    has_discard = best_score > NOT_LEGAL
    may_say_done = masks[g, DONE_ACTION] != 0
    worst_is_trump = ints[A_IS_TRUMP + trump * 52 + worst] != 0
    action = DONE_ACTION
    if has_discard and (robbing or not worst_is_trump or not may_say_done):
        action = DISCARD_OFFSET + worst
    if ints[A_DENY] and maker >= 0 and ints[A_TEAM_OF_SEAT + maker] != 0 and not robbing:
        ace = ints[A_TRUMP_ORDER + trump * MAX_TRUMPS]
        richest, richest_value = -1, NOT_LEGAL
        for card in range(52):
            value = ints[A_PLAY_VALUE + trump * 52 + card]
            is_point_trump = ints[A_IS_TRUMP + trump * 52 + card] != 0 and value > 0 and card != ace
            if masks[g, DISCARD_OFFSET + card] and is_point_trump and value > richest_value:
                richest, richest_value = card, value
        if richest >= 0:
            action = DISCARD_OFFSET + richest
    return action


# ---------------------------------------------------------------------- play


@njit(cache=True)
def play_action(observations, masks, g, pieces, ints, floats, scratch, card_scratch):
    """The card of the first play rule that applies: leading 1-4 (pull trumps, cash, probe, lead low), following
    1-4 (feed, save a point card, win points cheaply, contest), else throw low. ``scratch`` (FLOAT_SCRATCH,) and
    ``card_scratch`` (12,) int64: working space (nothing allocated per game)."""
    n = ints[A_PLAYERS]
    trump = first_set(observations, g, pieces[O_TRUMP], 4)
    maker = first_set(observations, g, pieces[O_MAKER], n)
    t52 = trump * 52
    legal = load_card_bits(masks, g, PLAY_OFFSET)
    # ---- the trick so far (relative seats, 0 = me)
    trick_set = load_card_bits(observations, g, pieces[O_TRICK])
    seen = (
        load_card_bits(observations, g, pieces[O_HAND])
        | load_card_bits(observations, g, pieces[O_OPEN_DRAWS])
        | load_card_bits(observations, g, pieces[O_SET_ASIDE])
    )
    played_all = ZERO
    trick_cards = card_scratch[0:4]  # the card each relative seat played to this trick, -1 none
    trick_cards[:] = -1
    for seat in range(n):
        played = load_card_bits(observations, g, pieces[O_PLAYED] + 52 * seat)
        seen |= played | load_card_bits(observations, g, pieces[O_DISCARDS] + 52 * seat)
        played_all |= played
        if played & trick_set != ZERO:
            trick_cards[seat] = lowest_card(played & trick_set)
    leader = max(first_set(observations, g, pieces[O_TRICK_LEADER], n), 0)
    leading = True
    for seat in range(n):
        leading = leading and trick_cards[seat] < 0
    led_card = 52 if leading else trick_cards[leader]
    beats_row = A_BEATS + (trump * 53 + led_card) * 52
    best, best_seat, trick_points = -1, 0, 0
    for seat in range(n):
        if trick_cards[seat] >= 0:
            strength = ints[beats_row + trick_cards[seat]]
            if strength > best:
                best, best_seat = strength, seat
            trick_points += ints[A_PLAY_VALUE + t52 + trick_cards[seat]]
    partner_winning = not leading and ints[A_TEAM_OF_SEAT + best_seat] == 0
    # ---- where the unseen cards may be (relative seats 1 .. n-1)
    unseen = ALL_CARDS & ~seen
    open_held = load_card_bits(observations, g, pieces[O_OPEN_DRAWS]) & ~played_all
    open_count = float(popcount(open_held))
    possible = card_scratch[8:12].view(np.uint64)  # cards each relative seat may hold
    hidden = scratch[HIDDEN : HIDDEN + 4]  # cards of each relative seat's hand I cannot place
    trump_holders = 0.0
    hidden_total = 0.0
    opponents_possible = ZERO
    for seat in range(1, n):
        voids = load_suit_bits(observations, g, pieces[O_VOIDS] + 4 * seat)
        void_cards = np.uint64(ints[A_VOID_CARDS + trump * 16 + np.int64(voids)])
        possible[seat] = unseen & ~void_cards
        hidden_cards = float(observations[g, pieces[O_HAND_SIZES] + seat])
        if maker == seat:
            possible[seat] |= open_held
            hidden_cards -= open_count
        hidden[seat] = max(hidden_cards, 0.0)
        if not holds(voids, trump):
            trump_holders += hidden[seat]
        hidden_total += hidden[seat]
        if ints[A_TEAM_OF_SEAT + seat] != 0:
            opponents_possible |= possible[seat]
    stock_unknown = max(float(popcount(unseen)) - hidden_total, 0.0)
    if ints[A_SIX_CARD]:  # nothing was set aside: undealt trumps are unseen too
        trump_holders += stock_unknown
    all_holders = hidden_total + stock_unknown
    # ---- safe leads: no opponent can hold a higher trump (for a non-trump: a higher card of its suit, or a trump)
    opponent_top_trump = -1
    top_in_suit = card_scratch[4:8]  # the highest non-trump of each suit an opponent may hold
    top_in_suit[:] = -1
    for card in range(52):
        if holds(opponents_possible, card):
            strength = ints[A_STRENGTH + t52 + card]
            if ints[A_IS_TRUMP + t52 + card]:
                opponent_top_trump = max(opponent_top_trump, strength)
            else:
                top_in_suit[card // 13] = max(top_in_suit[card // 13], strength)
    safe = ZERO
    for card in range(52):
        strength = ints[A_STRENGTH + t52 + card]
        if ints[A_IS_TRUMP + t52 + card]:
            is_safe = strength > opponent_top_trump
        else:
            is_safe = opponent_top_trump < 0 and strength > top_in_suit[card // 13]
        if is_safe:
            safe |= card_bit(card)
    opponents_have_trumps = opponent_top_trump >= 0
    # ---- throw low: non-trumps by rank, then non-point trumps, then point cards by value
    throw_card, throw_score = 0, NOT_LEGAL
    for card in range(52):
        if holds(legal, card):
            strength = ints[A_STRENGTH + t52 + card]
            cost = (20 + strength if ints[A_IS_TRUMP + t52 + card] else strength) + 100 * ints[
                A_PLAY_VALUE + t52 + card
            ]
            if -cost > throw_score:
                throw_card, throw_score = card, -cost
    if leading:
        maker_side = maker >= 0 and ints[A_TEAM_OF_SEAT + max(maker, 0)] == 0
        return PLAY_OFFSET + leading_card(legal, safe, t52, maker_side, opponents_have_trumps, throw_card, ints)
    # ---- following: the chance that no opponent still to play beats each strength level
    per_level = scratch[PER_LEVEL : PER_LEVEL + STRENGTH_LEVELS]
    running = scratch[RUNNING : RUNNING + STRENGTH_LEVELS]
    log_miss = scratch[LOG_MISS : LOG_MISS + 52]
    log_miss[:] = 0.0
    for seat in range(1, n):
        if ints[A_TEAM_OF_SEAT + seat] == 0 or trick_cards[seat] >= 0:
            continue
        miss_trump = math.log(max(1.0 - hidden[seat] / max(trump_holders, 1.0), 1e-9))
        miss_other = math.log(max(1.0 - hidden[seat] / max(all_holders, 1.0), 1e-9))
        can_hold = possible[seat]
        while can_hold != ZERO:
            card = lowest_card(can_hold)
            can_hold &= can_hold - np.uint64(1)
            log_miss[card] += miss_trump if ints[beats_row + card] >= TRUMP_STRENGTH else miss_other
    per_level[:] = 0.0
    for card in range(52):
        per_level[ints[beats_row + card] + 1] += log_miss[card]
    level_sum = 0.0
    for level in range(STRENGTH_LEVELS):
        level_sum += per_level[level]
        running[level] = level_sum
    every_level = pairwise_sum(per_level, 0, STRENGTH_LEVELS)
    partner_chance = math.exp(every_level - running[best + 1]) if partner_winning else 0.0
    partner_sure = partner_chance >= floats[W_FEED_CHANCE]
    # rule 1 (feed) and 2 (throw low under a sure partner)
    if partner_sure:
        card, score = -1, NOT_LEGAL
        for c in range(52):
            value = ints[A_PLAY_VALUE + t52 + c]
            if holds(legal, c) and value > 0 and not holds(safe, c):
                c_score = value * 100 - ints[A_STRENGTH + t52 + c]
                if c_score > score:
                    card, score = c, c_score
        return PLAY_OFFSET + (card if card >= 0 else throw_card)
    # rules 3 (save a point card at risk) and 4 (win a trick holding points), by the win chance of each card
    save_card, save_score, win_card, win_score = -1, NOT_LEGAL, -1, NOT_LEGAL
    save_chance, win_chance = floats[W_SAVE_CHANCE], floats[W_WIN_CHANCE]
    for c in range(52):
        strength = ints[beats_row + c]
        chance = 0.0
        if strength > best and holds(legal, c):
            chance = math.exp(every_level - running[strength + 1])
        at_risk = 0 if holds(safe, c) else ints[A_PLAY_VALUE + t52 + c]
        c_score = at_risk * 100 - ints[A_STRENGTH + t52 + c]
        if chance >= save_chance and at_risk > 0 and c_score > save_score:
            save_card, save_score = c, c_score
        if chance >= win_chance and c_score > win_score:
            win_card, win_score = c, c_score
    if save_card >= 0:
        return PLAY_OFFSET + save_card
    if win_card >= 0 and trick_points > 0:
        return PLAY_OFFSET + win_card
    # rule 5 (contest a trick the opponents win holding at least contest_points, with a non-point card)
    contest_points = ints[A_CONTEST_POINTS]
    if contest_points > 0 and not partner_winning and trick_points >= contest_points:
        card, score = -1, NOT_LEGAL
        for c in range(52):
            strength = ints[beats_row + c]
            if (
                strength > best
                and holds(legal, c)
                and ints[A_PLAY_VALUE + t52 + c] == 0
                and ints[A_STRENGTH + t52 + c] > score
            ):
                card, score = c, ints[A_STRENGTH + t52 + c]
        if card >= 0:
            return PLAY_OFFSET + card
    return PLAY_OFFSET + throw_card


@njit(cache=True)
def leading_card(legal, safe, t52, maker_side, opponents_have_trumps, throw_card, ints):
    """Leading rules 1-4: pull trumps (the highest safe trump while the opponents may hold trumps), cash (the
    richest safe point card), probe (the maker's side: its highest non-point trump), lead low."""
    pull_card, pull_score, cash_card, cash_score, probe_card, probe_score = -1, NOT_LEGAL, -1, NOT_LEGAL, -1, NOT_LEGAL
    for c in range(52):
        if not holds(legal, c):
            continue
        strength = ints[A_STRENGTH + t52 + c]
        value = ints[A_PLAY_VALUE + t52 + c]
        is_trump = ints[A_IS_TRUMP + t52 + c] != 0
        is_safe = holds(safe, c)
        if is_trump and is_safe and strength > pull_score:
            pull_card, pull_score = c, strength
        if is_safe and value > 0 and value * 100 - strength > cash_score:
            cash_card, cash_score = c, value * 100 - strength
        if is_trump and value == 0 and strength > probe_score:
            probe_card, probe_score = c, strength
    if ints[A_PULL_TRUMPS] and pull_card >= 0 and opponents_have_trumps:
        return pull_card
    if cash_card >= 0:
        return cash_card
    if ints[A_PROBE_AS_MAKER] and probe_card >= 0 and maker_side and opponents_have_trumps:
        return probe_card
    return throw_card
