"""Discards and plays: the numbered rules of docs/agents.md, one compiled function a rule, named by its number
there (``lead_1_pull_trumps`` is "Playing: leading", rule 1). A rule returns the card it picks, or -1 when it does
not apply or finds no card; the first rule that picks a card decides. What the play rules read (the trick so far,
*can hold*, *safe to lead*, *win chance*) comes from :mod:`agents.rule_kernels.reading`."""

from __future__ import annotations

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
    A_STRENGTH,
    A_TEAM_OF_SEAT,
    A_TRUMP_ORDER,
    ALL_CARDS,
    HIDDEN,
    MAX_TRUMPS,
    NOT_LEGAL,
    RUNNING,
    STRENGTH_LEVELS,
    W_FEED_CHANCE,
    W_SAVE_CHANCE,
    W_WIN_CHANCE,
    WIN_CHANCES,
    first_set,
    holds,
)
from agents.rule_kernels.reading import (
    place_unseen,
    read_trick,
    safe_leads,
    trick_winner_so_far,
    unbeaten_levels,
    win_chance,
)
from pedro_env.actions import DISCARD_OFFSET, DONE_ACTION, PLAY_OFFSET
from pedro_env.kernels.bits import ONE, ZERO, load_card_bits, lowest_card
from pedro_env.kernels.inputs import O_MAKER, O_TRICK_LEADER, O_TRUMP

# ---------------------------------------------------------------------- discarding


@njit(cache=True)
def discard_action(trump, robbing, maker, masks, g, ints):
    """The action of the first discarding rule that applies: 0 deny (with ``deny``), 1 the robbing dealer throws
    its least useful card while it may, 2 the others their least useful non-trump, 3 done (a hand that may not
    say done yet throws its least useful trump). ``maker``: the maker's relative seat (-1: none)."""
    if ints[A_DENY] and maker >= 0 and ints[A_TEAM_OF_SEAT + maker] != 0 and not robbing:
        denied = discard_0_deny(trump, masks, g, ints)
        if denied >= 0:
            return DISCARD_OFFSET + denied
    worst = least_useful(trump, masks, g, ints)
    if worst < 0:  # no discard allowed
        return DONE_ACTION
    if robbing or ints[A_IS_TRUMP + trump * 52 + worst] == 0 or masks[g, DONE_ACTION] == 0:  # rules 1, 2, 3
        return DISCARD_OFFSET + worst
    return DONE_ACTION  # rule 3


@njit(cache=True)
def discard_0_deny(trump, masks, g, ints):
    """Discarding rule 0 (a defender, not the robbing dealer, with ``deny``): the point trump other than the ace
    that counts most in play and may be discarded (-1: none)."""
    ace = ints[A_TRUMP_ORDER + trump * MAX_TRUMPS]
    richest, richest_value = -1, NOT_LEGAL
    for card in range(52):
        value = ints[A_PLAY_VALUE + trump * 52 + card]
        is_point_trump = ints[A_IS_TRUMP + trump * 52 + card] != 0 and value > 0 and card != ace
        if masks[g, DISCARD_OFFSET + card] and is_point_trump and value > richest_value:
            richest, richest_value = card, value
    return richest


@njit(cache=True)
def least_useful(trump, masks, g, ints):
    """The card that may be discarded with the lowest keep value (ties: the lowest card), -1 when none may."""
    best_score, worst = NOT_LEGAL, -1
    row = A_KEEP_VALUE + trump * 52
    for card in range(52):
        if masks[g, DISCARD_OFFSET + card] and -ints[row + card] > best_score:
            best_score, worst = -ints[row + card], card
    return worst


# ---------------------------------------------------------------------- play


@njit(cache=True)
def play_action(observations, masks, g, pieces, ints, floats, scratch, card_scratch):
    """PLAY_OFFSET + the card of the first play rule that applies: leading rules 1-4 (:func:`leading_card`),
    following rules 1-5 (:func:`following_card`). ``scratch`` (FLOAT_SCRATCH,) float64 and ``card_scratch`` (12,)
    int64: working space (nothing allocated per game)."""
    n = ints[A_PLAYERS]
    trump = first_set(observations, g, pieces[O_TRUMP], 4)
    maker = first_set(observations, g, pieces[O_MAKER], n)
    t52 = trump * 52
    legal = load_card_bits(masks, g, PLAY_OFFSET)
    trick_cards = card_scratch[0:4]  # the card each relative seat played to this trick, -1 none
    seen, played_all = read_trick(observations, g, pieces, n, trick_cards)
    leader = max(first_set(observations, g, pieces[O_TRICK_LEADER], n), 0)
    leading = True
    for seat in range(n):
        leading = leading and trick_cards[seat] < 0
    led_card = 52 if leading else trick_cards[leader]
    beats_row = A_BEATS + (trump * 53 + led_card) * 52
    best, best_seat, trick_points = trick_winner_so_far(trick_cards, n, beats_row, t52, ints)
    possible = card_scratch[8:12].view(np.uint64)  # cards each relative seat can hold
    hidden = scratch[HIDDEN : HIDDEN + 4]  # cards of each relative seat's hand I cannot place
    trump_holders, all_holders, opponents_possible = place_unseen(
        observations, g, pieces, ints, n, trump, maker, seen, played_all, possible, hidden
    )
    safe, opponents_have_trumps = safe_leads(opponents_possible, t52, ints, card_scratch[4:8])
    low_card = throw_low(legal, t52, ints)
    if leading:
        maker_side = maker >= 0 and ints[A_TEAM_OF_SEAT + max(maker, 0)] == 0
        return PLAY_OFFSET + leading_card(legal, safe, t52, maker_side, opponents_have_trumps, low_card, ints)
    every_level = unbeaten_levels(
        trick_cards, possible, hidden, trump_holders, all_holders, n, beats_row, ints, scratch
    )
    running = scratch[RUNNING : RUNNING + STRENGTH_LEVELS]
    partner_winning = ints[A_TEAM_OF_SEAT + best_seat] == 0
    partner_chance = win_chance(best, every_level, running) if partner_winning else 0.0
    chances = scratch[WIN_CHANCES : WIN_CHANCES + 52]
    for card in range(52):  # each card's win chance: 0 for a card that may not be played or does not beat ``best``
        strength = ints[beats_row + card]
        chances[card] = win_chance(strength, every_level, running) if strength > best and holds(legal, card) else 0.0
    card = following_card(legal, safe, t52, beats_row, best, partner_winning, partner_chance, trick_points, chances,
                          low_card, ints, floats)  # fmt: skip
    return PLAY_OFFSET + card


@njit(cache=True)
def throw_low(legal, t52, ints):
    """The cheapest legal card (leading rule 4, following rule 5): non-trumps by rank, then trumps that are not
    point cards by strength, then point cards, the least valuable first."""
    low_card, low_score = 0, NOT_LEGAL
    rest = legal
    while rest != ZERO:
        card = lowest_card(rest)
        rest &= rest - ONE
        strength = ints[A_STRENGTH + t52 + card]
        cost = (20 + strength if ints[A_IS_TRUMP + t52 + card] else strength) + 100 * ints[A_PLAY_VALUE + t52 + card]
        if -cost > low_score:
            low_card, low_score = card, -cost
    return low_card


# ---------------------------------------------------------------------- play: leading


@njit(cache=True)
def leading_card(legal, safe, t52, maker_side, opponents_have_trumps, low_card, ints):
    """The card of the first leading rule that applies: 1 pull trumps, 2 cash, 3 probe, 4 lead low (``low_card``)."""
    card = lead_1_pull_trumps(legal, safe, t52, opponents_have_trumps, ints)
    if card < 0:
        card = lead_2_cash(legal, safe, t52, ints)
    if card < 0:
        card = lead_3_probe(legal, t52, maker_side, opponents_have_trumps, ints)
    return card if card >= 0 else low_card


@njit(cache=True)
def lead_1_pull_trumps(legal, safe, t52, opponents_have_trumps, ints):
    """Leading rule 1 (``pull_trumps``): while an opponent can hold a trump, my highest trump safe to lead."""
    card, score = -1, NOT_LEGAL
    rest = legal & safe if ints[A_PULL_TRUMPS] and opponents_have_trumps else ZERO
    while rest != ZERO:
        c = lowest_card(rest)
        rest &= rest - ONE
        strength = ints[A_STRENGTH + t52 + c]
        if ints[A_IS_TRUMP + t52 + c] and strength > score:
            card, score = c, strength
    return card


@njit(cache=True)
def lead_2_cash(legal, safe, t52, ints):
    """Leading rule 2: the most valuable point card safe to lead (ties: the weakest)."""
    return most_valuable_point_card(legal & safe, t52, ints)


@njit(cache=True, inline="always")  # inlined: a call in the rules' inner step costs ~5% of a decision
def most_valuable_point_card(cards, t52, ints):
    """The point card of the ``cards`` bits with the highest play value (ties: the weakest); -1 if none."""
    card, score = -1, NOT_LEGAL
    rest = cards
    while rest != ZERO:
        c = lowest_card(rest)
        rest &= rest - ONE
        value = ints[A_PLAY_VALUE + t52 + c]
        c_score = value * 100 - ints[A_STRENGTH + t52 + c]
        if value > 0 and c_score > score:
            card, score = c, c_score
    return card


@njit(cache=True)
def lead_3_probe(legal, t52, maker_side, opponents_have_trumps, ints):
    """Leading rule 3 (``probe_as_maker``): on the maker's side while an opponent can hold a trump, my highest trump
    that is not a point card."""
    card, score = -1, NOT_LEGAL
    rest = legal if ints[A_PROBE_AS_MAKER] and maker_side and opponents_have_trumps else ZERO
    while rest != ZERO:
        c = lowest_card(rest)
        rest &= rest - ONE
        strength = ints[A_STRENGTH + t52 + c]
        is_plain_trump = ints[A_IS_TRUMP + t52 + c] != 0 and ints[A_PLAY_VALUE + t52 + c] == 0
        if is_plain_trump and strength > score:
            card, score = c, strength
    return card


# ---------------------------------------------------------------------- play: following


@njit(cache=True)
def following_card(legal, safe, t52, beats_row, best, partner_winning, partner_chance, trick_points, chances,
                   low_card, ints, floats):  # fmt: skip
    """The card of the first following rule that applies: 1 feed, 2 save a point card, 3 win points cheaply, 4
    contest, 5 throw low (``low_card``). ``best``: the strength winning the trick; ``partner_chance``: the chance
    that my side's card winning it stays the winner (0 when an opponent's card wins it); ``chances`` (52,): each
    card's win chance."""
    if partner_chance >= floats[W_FEED_CHANCE]:  # rule 1 applies; with nothing to feed, rule 5
        card = follow_1_feed(legal, safe, t52, ints)
        return card if card >= 0 else low_card
    card = follow_2_save(legal, safe, t52, chances, floats[W_SAVE_CHANCE], ints)
    if card < 0:
        card = follow_3_win_cheaply(legal, safe, t52, chances, floats[W_WIN_CHANCE], trick_points, ints)
    if card < 0:
        card = follow_4_contest(legal, t52, beats_row, best, partner_winning, trick_points, ints)
    return card if card >= 0 else low_card


@njit(cache=True)
def follow_1_feed(legal, safe, t52, ints):
    """Following rule 1 (``feed_chance``, checked by the caller): the most valuable point card that is not safe to
    lead (ties: the weakest)."""
    return most_valuable_point_card(legal & ~safe, t52, ints)


@njit(cache=True, inline="always")
def at_risk_score(safe, t52, c, ints):
    """``(at_risk, score)``: the points of card ``c`` if it is a point card not safe to lead (else 0), and its
    score in rules 2 and 3: at-risk points first, then the weakest."""
    at_risk = 0 if holds(safe, c) else ints[A_PLAY_VALUE + t52 + c]
    return at_risk, at_risk * 100 - ints[A_STRENGTH + t52 + c]


@njit(cache=True, inline="always")
def chance_candidates(legal, min_chance):
    """The cards rules 2 and 3 weigh: the legal ones; every card when ``min_chance`` is 0 or less, since a card
    that may not be played has win chance 0 and then passes too (as it always has: such an option picks an
    illegal card)."""
    return legal if min_chance > 0.0 else ALL_CARDS


@njit(cache=True)
def follow_2_save(legal, safe, t52, chances, min_chance, ints):
    """Following rule 2 (``save_chance``): the most valuable point card not safe to lead that wins this trick with
    at least ``min_chance``."""
    card, score = -1, NOT_LEGAL
    rest = chance_candidates(legal, min_chance)
    while rest != ZERO:
        c = lowest_card(rest)
        rest &= rest - ONE
        at_risk, c_score = at_risk_score(safe, t52, c, ints)
        if chances[c] >= min_chance and at_risk > 0 and c_score > score:
            card, score = c, c_score
    return card


@njit(cache=True)
def follow_3_win_cheaply(legal, safe, t52, chances, min_chance, trick_points, ints):
    """Following rule 3 (``win_chance``): when the trick holds points, the cheapest card that wins it with at least
    ``min_chance`` (a point card at risk first, as in rule 2, else the weakest)."""
    card, score = -1, NOT_LEGAL
    rest = chance_candidates(legal, min_chance) if trick_points > 0 else ZERO
    while rest != ZERO:
        c = lowest_card(rest)
        rest &= rest - ONE
        c_score = at_risk_score(safe, t52, c, ints)[1]
        if chances[c] >= min_chance and c_score > score:
            card, score = c, c_score
    return card


@njit(cache=True)
def follow_4_contest(legal, t52, beats_row, best, partner_winning, trick_points, ints):
    """Following rule 4 (``contest_points``; 0: off): when an opponent is winning a trick holding at least
    ``contest_points``, my strongest card that beats the winning card and is not a point card."""
    card, score = -1, NOT_LEGAL
    contest_points = ints[A_CONTEST_POINTS]
    rest = legal if contest_points > 0 and not partner_winning and trick_points >= contest_points else ZERO
    while rest != ZERO:
        c = lowest_card(rest)
        rest &= rest - ONE
        strength = ints[A_STRENGTH + t52 + c]
        if ints[beats_row + c] > best and ints[A_PLAY_VALUE + t52 + c] == 0 and strength > score:
            card, score = c, strength
    return card
