"""Scoring (docs/rules.md sections 7 and 8): the points of a deal, made or set, the score changes and rewards,
the match's winner, the next deal or the end; batch versions for Python callers (:func:`deal_points`,
:func:`score_deal`)."""

from __future__ import annotations

import numpy as np
from numba import njit

from pedro_env.cards import MAX_POINT_VALUES, T_LOW_SET, T_NUM_POINT_VALUES, T_POINT_SETS, T_POINT_VALUES, RuleTables
from pedro_env.kernels.bits import popcount, seat_after
from pedro_env.kernels.inputs import (
    F_DEAL_INDEX,
    F_DEALER,
    F_HIGH_BID,
    F_LAST_BID,
    F_LAST_DELTA,
    F_LAST_MADE,
    F_LAST_MAKER,
    F_LAST_POINTS,
    F_LAST_REDEAL,
    F_LAST_RENEGE,
    F_LAST_TRUMP,
    F_LOW_TEAM,
    F_MAKER,
    F_PHASE,
    F_REWARDS,
    F_SCORES,
    F_TERMINATED,
    F_TRICK_LEADER,
    F_TRUMP,
    F_TRUNCATED,
    F_WINNER,
    F_WON,
    P_EPISODE_DEAL,
    P_LOW_HELD,
    P_MAX_DEALS,
    P_PLAYERS,
    P_RENEGE_PENALTY,
    P_REWARD_WIN,
    P_SIMPLE,
    P_TARGET,
    P_TEAM_OF_SEAT,
    P_TEAMS,
    P_TOTAL,
)
from pedro_env.state import OVER


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
def finish_deal(u8, i8, i16, i32, i64, u64, f32, eo, b, g, params, tab, points, delta):
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
    i16[eo[F_LAST_POINTS] + g * teams : eo[F_LAST_POINTS] + (g + 1) * teams] = 0
    i32[eo[F_LAST_DELTA] + g * teams : eo[F_LAST_DELTA] + (g + 1) * teams] = 0
    i8[eo[F_LAST_MADE] + g] = -1
    won_match = False
    if not thrown_in:
        won_match = score_played_deal(i8, i16, i32, u64, f32, eo, g, params, tab, points, delta)
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


@njit(cache=True, _nrt=False, inline="always")
def score_played_deal(i8, i16, i32, u64, f32, eo, g, params, tab, points, delta):
    """The played deal of game ``g`` scored into its scores and last-deal fields (a renege under
    ``renege="penalty"``: the reneging team is set, the others get the variant's total), the winner decided,
    and with deal rewards each seat's (its team's delta - the opponents' mean delta) / total points added.
    Returns whether a team won the match."""
    n, teams = params[P_PLAYERS], params[P_TEAMS]
    maker_team = params[P_TEAM_OF_SEAT + i8[eo[F_MAKER] + g]]
    bid = np.int64(i8[eo[F_HIGH_BID] + g])
    won = u64[eo[F_WON] + g * teams : eo[F_WON] + (g + 1) * teams]
    deal_points_into(won, i8[eo[F_TRUMP] + g], i8[eo[F_LOW_TEAM] + g], params[P_LOW_HELD] != 0, tab, points)
    made = score_deal_into(points, maker_team, bid, params[P_SIMPLE] != 0, delta)
    renege_team = i8[eo[F_LAST_RENEGE] + g]
    if params[P_RENEGE_PENALTY] and renege_team >= 0:
        made = renege_team != maker_team
        for team in range(teams):
            delta[team] = (0 if made else -bid) if team == renege_team else params[P_TOTAL]
    scores = i32[eo[F_SCORES] + g * teams : eo[F_SCORES] + (g + 1) * teams]
    for team in range(teams):
        scores[team] += delta[team]
        i16[eo[F_LAST_POINTS] + g * teams + team] = points[team]
        i32[eo[F_LAST_DELTA] + g * teams + team] = delta[team]
    i8[eo[F_LAST_MADE] + g] = 1 if made else 0
    i8[eo[F_WINNER] + g] = match_winner_of(scores, params[P_TARGET], maker_team, made)
    if not params[P_REWARD_WIN]:
        total_delta = 0
        for team in range(teams):
            total_delta += delta[team]
        for seat in range(n):
            team = params[P_TEAM_OF_SEAT + seat]
            others_mean = (total_delta - delta[team]) / (teams - 1)
            f32[eo[F_REWARDS] + g * n + seat] += np.float32((delta[team] - others_mean) / params[P_TOTAL])
    return i8[eo[F_WINNER] + g] >= 0


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


def deal_points(
    won: np.ndarray, trump: np.ndarray, low_team: np.ndarray, tables: RuleTables, low_held: bool
) -> np.ndarray:
    """Points each team took, (B, T) int16.

    won (B, T) uint64 cards in the tricks each team won; trump (B,) suit; low_team (B,) team holding
    the 2 of trumps when play began (-1: not in play), used when ``low_held`` (Low is worth 1 in every variant).
    """
    won = np.ascontiguousarray(won, dtype=np.uint64)
    points = np.empty(won.shape, dtype=np.int16)
    deal_points_batch(
        won,
        np.asarray(trump, dtype=np.int64),
        np.asarray(low_team, dtype=np.int64),
        bool(low_held),
        tables.kernel_table,
        points,
    )
    return points


def score_deal(
    points: np.ndarray, maker_team: np.ndarray, bid: np.ndarray, scoring: str
) -> tuple[np.ndarray, np.ndarray]:
    """(made (B,) bool, delta (B, T) int32) of scored deals.

    ``difference`` (two teams): made, the team with more points scores the difference, the other 0;
    ``simple``: made, every team scores its points. Set (either way): the maker's team loses the bid
    and the others score their points.
    """
    points = np.ascontiguousarray(points, dtype=np.int64)
    made = np.empty(points.shape[0], dtype=bool)
    delta = np.empty(points.shape, dtype=np.int32)
    score_deals(
        points,
        np.asarray(maker_team, dtype=np.int64),
        np.asarray(bid, dtype=np.int64),
        scoring == "simple",
        made,
        delta,
    )
    return made, delta
