"""Observations encoded by the compiled kernel: :class:`ObservationEncoder` for one config.

The layout (pieces, sizes, offsets, scale) is :mod:`pedro_env.observation_layout`. Nothing the
encoder writes reads another player's hand, the stock or face-down draws, so changing any card the
viewer cannot see leaves the observation unchanged. :meth:`ObservationEncoder.encode_full_state`
appends the hidden part for centralized critics.
"""

from __future__ import annotations

import numpy as np

from pedro_env.cards import RuleTables
from pedro_env.config import PedroConfig
from pedro_env.kernels.inputs import config_params, pack_statics, rules_statics
from pedro_env.kernels.observations import encode_observations
from pedro_env.observation_layout import (
    CARD_SET,
    PIECE_STARTS,
    PIECES,
    full_state_size,
    observation_offsets,
    observation_size,
    piece_slices,
    rules_entries,
    to_go_cap,
)
from pedro_env.state import PedroState


class ObservationEncoder:
    """Encodes observations of one config with the compiled :func:`pedro_env.kernels.observations.encode_games`."""

    def __init__(self, config: PedroConfig, tables: RuleTables) -> None:
        self.config = config
        self.tables = tables
        self.offsets = observation_offsets(config)
        self.size = observation_size(config)
        self.full_size = full_state_size(config)
        # the kernel writes the card pieces as one run of 52-byte blocks from the hand's start
        assert PIECE_STARTS[0] == 0 and piece_slices()["won"].stop == CARD_SET * sum(
            piece.block_count for piece in PIECES if piece.is_card_set
        )
        self.piece_starts = PIECE_STARTS
        self.params, self.kernel_table = config_params(config), tables.kernel_table
        self.to_go_cap = to_go_cap(config)
        self.statics = pack_statics(
            self.params, self.piece_starts, self.to_go_cap, rules_statics(rules_entries(config)), self.kernel_table
        )

    def _encode(self, state: PedroState, viewer: np.ndarray, width: int, out: np.ndarray | None) -> np.ndarray:
        b = state.batch_size
        if not (isinstance(viewer, np.ndarray) and viewer.dtype == np.int64 and viewer.shape == (b,)):
            viewer = np.ascontiguousarray(np.broadcast_to(np.asarray(viewer), (b,)), dtype=np.int64)
        if out is None:
            out = np.empty((b, width), dtype=np.uint8)
        elif out.shape != (b, width) or out.dtype != np.uint8:
            raise ValueError(f"out must be a ({b}, {width}) uint8 array, got {out.dtype} {out.shape}")
        encode_observations(state.buffer, state.element_offsets, b, self.statics, viewer, out)
        return out

    def encode(self, state: PedroState, viewer: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """(B, D) uint8 observations of ``viewer`` (B,) seats (into ``out`` when given)."""
        return self._encode(state, viewer, self.size, out)

    def encode_full_state(self, state: PedroState, viewer: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """(B, D + 4*52 + 52) uint8: the observation, every relative seat's hand (0s past the table's seats), the
        unseen cards of the stock."""
        return self._encode(state, viewer, self.full_size, out)
