"""Scoring a deal and deciding the match (docs/rules.md sections 6 renege, 7 and 8). Pure functions over batches.

Teams are indexed ``0 .. T-1``; every array has a leading batch axis ``B``.
"""

from __future__ import annotations

import numpy as np

from pedro_env.cards import RuleTables


def deal_points(
    won: np.ndarray, trump: np.ndarray, low_team: np.ndarray, tables: RuleTables, low_held: bool
) -> np.ndarray:
    """Points each team took, (B, T) int16.

    won (B, T) uint64 cards in the tricks each team won; trump (B,) suit; low_team (B,) team holding
    the 2 of trumps when play began (-1: not in play), used when ``low_held`` (Low is worth 1 in every variant).
    """
    point_sets = tables.point_sets[trump]  # (B, K)
    counts = np.bitwise_count(won[:, :, None] & point_sets[:, None, :]).astype(np.int16)  # (B, T, K)
    points = (counts * tables.point_values).sum(axis=2, dtype=np.int16)
    if low_held:
        points -= np.bitwise_count(won & tables.low_set[trump][:, None]).astype(np.int16)
        points += np.arange(won.shape[1])[None, :] == low_team[:, None]
    return points


def score_deal(
    points: np.ndarray, maker_team: np.ndarray, bid: np.ndarray, scoring: str
) -> tuple[np.ndarray, np.ndarray]:
    """(made (B,) bool, delta (B, T) int32) of scored deals.

    ``difference`` (two teams): made, the team with more points scores the difference, the other 0;
    ``simple``: made, every team scores its points. Set (either way): the maker's team loses the bid
    and the others score their points.
    """
    rows = np.arange(points.shape[0])
    teams = np.arange(points.shape[1])
    is_maker_team = teams[None, :] == maker_team[:, None]
    made = points[rows, maker_team] >= bid
    delta = points.astype(np.int32)
    if scoring == "difference":
        lead = points[:, 0].astype(np.int32) - points[:, 1]
        margin = np.stack([np.maximum(lead, 0), np.maximum(-lead, 0)], axis=1)
        delta = np.where(made[:, None], margin, delta)
    delta = np.where(~made[:, None] & is_maker_team, -bid[:, None].astype(np.int32), delta)
    return made, delta


def score_renege(
    offender_team: np.ndarray, maker_team: np.ndarray, bid: np.ndarray, num_teams: int, total_points: int
) -> tuple[np.ndarray, np.ndarray]:
    """(made, delta) of a deal ended by a renege: the offenders score 0 (minus the bid if they are
    the maker's team), every other team scores the variant's total; made = the offenders are not the maker's team."""
    teams = np.arange(num_teams)
    offenders = teams[None, :] == offender_team[:, None]
    made = offender_team != maker_team
    penalty = np.where(made, 0, -bid.astype(np.int32))[:, None]
    delta = np.where(offenders, penalty, np.int32(total_points))
    return made, delta.astype(np.int32)


def match_winner(scores: np.ndarray, target: int, maker_team: np.ndarray, made: np.ndarray) -> np.ndarray:
    """Winning team after a scored deal, (B,) int8, -1 if the match goes on.

    One team at or above target wins. Several: the maker's team wins if among them and it made its
    bid; otherwise the highest of the others, and an exact tie there plays another deal.
    """
    teams = np.arange(scores.shape[1])
    reached = scores >= target
    is_maker_team = teams[None, :] == maker_team[:, None]
    maker_wins = (reached & is_maker_team).any(axis=1) & made
    others = reached & ~is_maker_team
    best = np.where(others, scores, np.iinfo(np.int32).min).max(axis=1)
    leaders = others & (scores == best[:, None])
    other_wins = leaders.sum(axis=1) == 1
    winner = np.where(other_wins, leaders.argmax(axis=1), -1)
    winner = np.where(maker_wins, maker_team, winner)
    alone = reached.sum(axis=1) == 1
    winner = np.where(alone, reached.argmax(axis=1), winner)
    return winner.astype(np.int8)
