"""The public-information view: an observation decoded back into named arrays.

Rule-based and search agents reason about the cards seen. They get that information from
:func:`decode_observations`, which reads nothing but the observation vector, so an agent built on
it can never see hidden state (the observation itself passes the leak test). Seats and teams stay
relative to the viewer: seat ``0`` is the viewer, ``1`` its left, ...; team ``0`` is the viewer's.

Every field has a leading batch axis ``B``. Card sets are ``uint64`` bit sets (bit ``card`` set for
each member; see :mod:`pedro_env.cards`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from pedro_env.cards import NO_CARDS, cards_to_bits
from pedro_env.config import PedroConfig
from pedro_env.observation_layout import BID_WIDTH, OBSERVATION_SIZE, card_pieces, observation_offsets
from pedro_env.state import OVER

ALL_CARDS = np.uint64((1 << 52) - 1)


@dataclass
class PublicView:
    """What one player knows, for a batch of observations. Seats and teams relative to the viewer."""

    config: PedroConfig
    phase: np.ndarray  # (B,) int8: Phase value 0..3, 4 (OVER) when the episode is over
    hand: np.ndarray  # (B,) uint64: my cards
    open_draws: np.ndarray  # (B,) uint64: trumps the maker drew face up (held by the maker until played)
    discards: np.ndarray  # (B, n) uint64: cards each relative seat discarded
    set_aside: np.ndarray  # (B,) uint64: trumps turned up from the stock after the refill
    played: np.ndarray  # (B, n) uint64: cards each relative seat played this deal (current trick included)
    trick: np.ndarray  # (B, n) int8: card each relative seat played to the current trick, -1 none yet
    trick_leader: np.ndarray  # (B,) int8: relative seat that led the current trick, -1 outside play
    won: np.ndarray  # (B, T) uint64: cards in completed tricks won by each relative team
    dealer: np.ndarray  # (B,) int8: relative seat of the dealer
    bids: np.ndarray  # (B, n) int8: -1 not yet spoken, 0 passed, k bid k
    maker: np.ndarray  # (B,) int8: relative seat of the high bidder so far, -1 none
    trump: np.ndarray  # (B,) int8: trump suit 0..3 (C D H S), -1 not named yet
    done: np.ndarray  # (B, n) bool: relative seat has said done in the discard round
    drawn: np.ndarray  # (B, n) int16: cards each relative seat drew from the stock
    hand_sizes: np.ndarray  # (B, n) int16: cards each relative seat holds now
    stock_left: np.ndarray  # (B,) int16: cards still in the stock
    robbing: np.ndarray  # (B,) bool: the dealer is discarding after robbing the pack
    voids: np.ndarray  # (B, n) uint8: bit s = relative seat has shown no card of effective suit s
    tricks_done: np.ndarray  # (B,) int8: completed tricks this deal
    points: np.ndarray  # (B, T) int16: points each relative team has captured this deal
    to_go: np.ndarray  # (B, T) int16: points each relative team still needs (capped at 2 * target)

    @property
    def batch_size(self) -> int:
        return int(self.phase.shape[0])

    @property
    def high_bid(self) -> np.ndarray:
        """(B,) int8: the highest bid so far, 0 for none."""
        return self.bids.max(axis=1).clip(0)

    def unseen(self) -> np.ndarray:
        """(B,) uint64: cards the viewer has not seen: in other hands (face down) or never turned up in the stock."""
        seen = self.hand | self.open_draws | self.set_aside
        for seat in range(self.config.num_players):
            seen = seen | self.discards[:, seat] | self.played[:, seat]
        return ALL_CARDS & ~seen


@functools.lru_cache(maxsize=64)
def _layout(config: PedroConfig) -> tuple[dict[str, slice], tuple[tuple[str, int], ...], int]:
    """A config's piece slices, card pieces and observation size (read at every decode: kept per config)."""
    offsets = observation_offsets(config)
    return offsets, tuple(card_pieces(config)), OBSERVATION_SIZE


def decode_observations(observations: np.ndarray, config: PedroConfig) -> PublicView:
    """(B, D) uint8 observations of ``config`` -> a :class:`PublicView` (raises ValueError on a wrong size)."""
    observations = np.asarray(observations)
    if observations.ndim == 1:
        observations = observations[None, :]
    o, pieces, size = _layout(config)
    if observations.shape[1] != size:
        raise ValueError(f"observations have {observations.shape[1]} entries; config {config} needs {size}")
    b, n = observations.shape[0], config.num_players
    sets = {name: cards_to_bits(observations[:, o[name]].reshape(b, count, 52).astype(bool)) for name, count in pieces}

    def one_hot(name: str) -> np.ndarray:
        block = observations[:, o[name]]
        return np.where(block.any(axis=1), block.argmax(axis=1), -1).astype(np.int8)

    phase = one_hot("phase")
    bid_codes = observations[:, o["bids"]].reshape(b, n, BID_WIDTH).argmax(axis=2)
    played = sets["played"]
    trick_set = sets["trick"][:, 0]
    trick = np.full((b, n), -1, dtype=np.int8)
    for seat in range(n):
        in_trick = played[:, seat] & trick_set  # at most one card: a power of two 2**card, or 0
        present = in_trick != NO_CARDS
        trick[present, seat] = np.bitwise_count(in_trick[present] - np.uint64(1))  # 2**card - 1 has card ones
    return PublicView(
        config=config,
        phase=np.where(phase < 0, OVER, phase).astype(np.int8),
        hand=sets["hand"][:, 0],
        open_draws=sets["open_draws"][:, 0],
        discards=sets["discards"],
        set_aside=sets["set_aside"][:, 0],
        played=played,
        trick=trick,
        trick_leader=one_hot("trick_leader"),
        won=sets["won"],
        dealer=one_hot("dealer"),
        bids=(bid_codes - 1).astype(np.int8),
        maker=one_hot("maker"),
        trump=one_hot("trump"),
        done=observations[:, o["done"]].astype(bool),
        drawn=observations[:, o["drawn"]].astype(np.int16),
        hand_sizes=observations[:, o["hand_sizes"]].astype(np.int16),
        stock_left=observations[:, o["stock_left"].start].astype(np.int16),
        robbing=observations[:, o["robbing"].start].astype(bool),
        voids=np.packbits(observations[:, o["voids"]].reshape(b, n, 4), axis=2, bitorder="little")[:, :, 0],
        tricks_done=observations[:, o["tricks_done"].start].astype(np.int8),
        points=observations[:, o["points"]].astype(np.int16),
        to_go=observations[:, o["to_go"]].astype(np.int16),
    )
