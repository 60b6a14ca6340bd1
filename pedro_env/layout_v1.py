"""Layout version 1 (before 2026-12-06): the observation sized per config, kept to read the policies saved in it.

Version 1 had the pieces of :data:`pedro_env.observation_layout.PIECES` but ``rules``, in the same order, each
with the config's own block count (its players or teams, not the layout's largest) and bid blocks of the
variant's total points plus 2; its counts were scaled by their largest value under the config. Every version-1
entry is a version-2 entry with the same value (:func:`v1_entries`), so a network that read version 1 reads
version 2 exactly once its first layer's columns move there and are rescaled (:mod:`agents.policy`).
"""

from __future__ import annotations

import numpy as np

from pedro_env.config import PedroConfig
from pedro_env.observation_layout import (
    CARD_SET,
    MAX_COUNT,
    MAX_PLAYERS,
    OBSERVATION_SIZE,
    PIECES,
    piece_slices,
    to_go_cap,
)

V1_PIECES = tuple(piece for piece in PIECES if piece.name != "rules")


def v1_block_width(piece_name: str, width: int, config: PedroConfig) -> int:
    """A version-1 block's width: the bids' was the variant's total points plus 2."""
    return config.total_points + 2 if piece_name == "bids" else width


def v1_pieces(config: PedroConfig) -> list[tuple[str, int]]:
    """``[(name, size), ...]`` of version 1 under ``config`` (what policies of version 1 recorded)."""
    return [
        (piece.name, piece.used_blocks(config) * v1_block_width(piece.name, piece.width, config)) for piece in V1_PIECES
    ]


def v1_entries(config: PedroConfig) -> np.ndarray:
    """(D1,) int64: each version-1 entry's place in version 2 (block ``b``, entry ``i`` of a piece -> the same
    block and entry of the version-2 piece)."""
    slices, moved = piece_slices(), []
    for piece in V1_PIECES:
        width = v1_block_width(piece.name, piece.width, config)
        start = slices[piece.name].start
        for block in range(piece.used_blocks(config)):
            moved.extend(range(start + block * piece.width, start + block * piece.width + width))
    return np.array(moved, dtype=np.int64)


def v1_scale(config: PedroConfig) -> np.ndarray:
    """(D1,) float32: version 1's scale (counts over their largest value under ``config``)."""
    sizes = v1_pieces(config)
    scale = np.ones(sum(size for _, size in sizes), dtype=np.float32)
    starts = np.cumsum([0] + [size for _, size in sizes])
    where = {name: slice(int(start), int(start) + size) for (name, size), start in zip(sizes, starts)}
    robs = config.refill == "dealer_robs" and not config.six_card
    for name, largest in (
        ("drawn", config.stock_size if robs else 6),
        ("hand_sizes", config.hand_size + (config.stock_size if robs else 0)),
        ("stock_left", config.stock_size),
        ("tricks_done", 6),
        ("points", config.total_points),
        ("to_go", to_go_cap(config)),
        ("target", min(config.target_score, MAX_COUNT)),
    ):
        scale[where[name]] = 1.0 / largest
    return scale


def v1_size(config: PedroConfig) -> int:
    return sum(size for _, size in v1_pieces(config))


def v1_full_state_entries(config: PedroConfig) -> np.ndarray:
    """(D1 + n*52 + 52,) int64: each entry of a version-1 full state (observation, n hands, the unseen stock) in the
    version-2 full state (observation, 4 hands, the unseen stock)."""
    hands = [OBSERVATION_SIZE + np.arange(CARD_SET * config.num_players)]
    stock = [OBSERVATION_SIZE + CARD_SET * MAX_PLAYERS + np.arange(CARD_SET)]
    return np.concatenate([v1_entries(config), *hands, *stock]).astype(np.int64)
