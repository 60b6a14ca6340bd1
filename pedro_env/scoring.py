"""Scoring deals (docs/rules.md sections 7 and 8) for batches, over the compiled per-game kernels
(the engine scores its deals inside :func:`pedro_env.kernels.step_games`; these serve the search agents).

Teams are indexed ``0 .. T-1``; every array has a leading batch axis ``B``.
"""

from __future__ import annotations

import numpy as np

from pedro_env import kernels
from pedro_env.cards import RuleTables


def deal_points(
    won: np.ndarray, trump: np.ndarray, low_team: np.ndarray, tables: RuleTables, low_held: bool
) -> np.ndarray:
    """Points each team took, (B, T) int16.

    won (B, T) uint64 cards in the tricks each team won; trump (B,) suit; low_team (B,) team holding
    the 2 of trumps when play began (-1: not in play), used when ``low_held`` (Low is worth 1 in every variant).
    """
    won = np.ascontiguousarray(won, dtype=np.uint64)
    points = np.empty(won.shape, dtype=np.int16)
    kernels.deal_points_batch(
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
    kernels.score_deals(
        points,
        np.asarray(maker_team, dtype=np.int64),
        np.asarray(bid, dtype=np.int64),
        scoring == "simple",
        made,
        delta,
    )
    return made, delta
