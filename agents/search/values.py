"""What the trick search (:mod:`agents.search.solver`) counts: a deal's score change for the points each team
captured (:class:`DealScoring`; packed, POINT_BITS per team, in the compiled search: :func:`final_value`), and the
point cards still held, split into the certain and the contested (:func:`held_points`).

Teams are relative (0 = mine); ``params`` are the search's constant inputs (``S_*``) and ``look`` its lookups
(``L_*``), both of :mod:`agents.search.tables`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from agents.search.tables import (
    L_LEFT_PEDRO_BIT,
    L_LEFT_PEDRO_STRENGTH,
    L_POINT_CARDS,
    L_POINTS,
    L_STRENGTH,
    L_STRONGER,
    L_TRUMP_SUIT_BITS,
    S_BID,
    S_MAKER_TEAM,
    S_PLAYERS,
    S_SIMPLE,
    S_TEAMS,
)
from pedro_env.kernels.bits import card_bit, highest_card, lowest_card
from pedro_env.kernels.scoring import score_deal_into

POINT_BITS = 8  # team points packed into one int, 8 bits per team (a deal has at most 23 points)
POINT_MASK = (1 << POINT_BITS) - 1


@dataclass(frozen=True)
class DealScoring:
    """How a deal's points turn into score changes (docs/rules.md section 7), relative teams (0 = mine): the
    engine's scoring (:func:`pedro_env.kernels.scoring.score_deal_into`)."""

    num_teams: int
    maker_team: int
    bid: int
    difference: bool  # scoring "difference" (two teams) rather than "simple"

    def value(self, team_points: list[int]) -> float:
        """My team's score change minus the mean of the other teams' for a deal ending with ``team_points``."""
        points = np.asarray(team_points, dtype=np.int64)
        delta = np.zeros(self.num_teams, dtype=np.int64)
        score_deal_into(points, self.maker_team, self.bid, not self.difference, delta)
        return float(_score_value(delta))


@njit(cache=True, _nrt=False, inline="always")
def _score_value(delta):
    """Team 0's score change less the mean of the others' (delta (T,))."""
    others = 0
    for team in range(1, delta.shape[0]):
        others += delta[team]
    return delta[0] - others / (delta.shape[0] - 1)


@njit(cache=True, _nrt=False)
def final_value(packed, params, points, delta):
    """The deal's value (:func:`_score_value` of the engine's scoring) for these packed team points; ``points``
    and ``delta`` (T,) int64 scratch."""
    for team in range(points.shape[0]):
        points[team] = packed >> (POINT_BITS * team) & POINT_MASK
    score_deal_into(points, params[S_MAKER_TEAM], params[S_BID], params[S_SIMPLE] != 0, delta)
    return _score_value(delta)


@njit(cache=True, _nrt=False, inline="always")
def _point_sum(cards, look):
    """Trick value of a card set."""
    total = 0
    while cards:
        card = lowest_card(cards)
        total += look[L_POINTS + card]
        cards ^= card_bit(card)
    return total


@njit(cache=True, _nrt=False, inline="always")
def _top_trump(cards, look):
    """Strength of the highest trump in ``cards`` (-1 if none): bit order is strength order in the trump
    suit, and the left Pedro sits just below the right one."""
    suit_trumps = cards & np.uint64(look[L_TRUMP_SUIT_BITS])
    top = look[L_STRENGTH + highest_card(suit_trumps)] if suit_trumps else -1
    left = look[L_LEFT_PEDRO_STRENGTH]
    if cards & np.uint64(look[L_LEFT_PEDRO_BIT]) and top < left:
        return left
    return top


@njit(cache=True, _nrt=False)
def held_points(hands, packed, params, look):
    """``(certain, contested)`` over the point cards still held (TrickSearch docstring): ``certain`` my
    side's certain points less the others' (``packed``: each team's, POINT_BITS per team)."""
    n, teams = params[S_PLAYERS], params[S_TEAMS]
    point_cards = np.uint64(look[L_POINT_CARDS])
    if teams == 2:
        mine, theirs = hands[0], hands[1]
        if n == 4:
            mine |= hands[2]
            theirs |= hands[3]
        my_points, their_points = mine & point_cards, theirs & point_cards
        my_safe = their_safe = 0
        if my_points:
            my_safe = _point_sum(my_points & np.uint64(look[L_STRONGER + _top_trump(theirs, look) + 1]), look)
        if their_points:
            their_safe = _point_sum(their_points & np.uint64(look[L_STRONGER + _top_trump(mine, look) + 1]), look)
        contested = _point_sum(my_points, look) + _point_sum(their_points, look) - my_safe - their_safe
        if packed:
            return my_safe + (their_safe << POINT_BITS), contested
        return my_safe - their_safe, contested
    certain = contested = 0
    for team in range(teams):  # one seat a team
        held = hands[team] & point_cards
        if held:
            top_elsewhere = -1
            for other in range(teams):
                if other != team:
                    top_elsewhere = max(top_elsewhere, _top_trump(hands[other], look))
            safe = _point_sum(held & np.uint64(look[L_STRONGER + top_elsewhere + 1]), look)
            if packed:
                certain += safe << (POINT_BITS * team)
            else:
                certain += safe if team == 0 else -safe
            contested += _point_sum(held, look) - safe
    return certain, contested
