"""The observation's layout: the game as one player sees it, rotated to that player, piece by piece.

Seats are relative to the viewer: ``0`` me, ``1`` my left (next to act after me), then clockwise, so
with four players ``2`` is my partner and ``3`` my right. Teams are relative: ``0`` us, ``1`` them
(with two or three players a team is a seat, ordered like the seats). The vector is ``uint8``:
flags are 0/1 and counts are small integers; multiply by :func:`observation_scale` to bring every
entry into [0, 1].

The layout is :data:`PIECES` in order, each piece a number of blocks (one, one per relative seat, or
one per relative team) of a fixed width; card pieces are 52 entries in card-id order. The default rules
(cinch, four players: 848 entries) and every other config: docs/environment.md, generated from :data:`PIECES`.
The compiled encoder (:func:`pedro_env.kernels.observations.encode_games`) indexes the pieces by
:data:`PIECE_INDEX`; :class:`pedro_env.encoding.ObservationEncoder` calls it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pedro_env.cards import relabelled_cards
from pedro_env.config import PedroConfig
from pedro_env.state import NUM_PHASES, PedroState

MAX_COUNT = 255


CARD_SET = 52  # entries of a card piece's block: one 0/1 per card id


@dataclass(frozen=True)
class ObservationPiece:
    """One named piece of the observation: ``blocks`` blocks of ``width`` entries (plus P with ``plus_points``)."""

    name: str
    width: int
    blocks: str  # "one", "seat" (one block per relative seat) or "team" (one per relative team)
    meaning: str
    plus_points: bool = False  # the width also grows by the variant's total points P

    def block_count(self, config: PedroConfig) -> int:
        return {"one": 1, "seat": config.num_players, "team": config.num_teams}[self.blocks]

    def size(self, config: PedroConfig) -> int:
        return self.block_count(config) * (self.width + (config.total_points if self.plus_points else 0))

    @property
    def is_card_set(self) -> bool:
        return self.width == CARD_SET and not self.plus_points


PIECES = (
    ObservationPiece("hand", CARD_SET, "one", "my cards"),
    ObservationPiece("open_draws", CARD_SET, "one", "trumps the maker drew face up (refill maker_sorted)"),
    ObservationPiece("discards", CARD_SET, "seat", "cards each relative seat discarded face up"),
    ObservationPiece(
        "set_aside", CARD_SET, "one", "trumps left in the stock after the refill, turned up and set aside"
    ),
    ObservationPiece("played", CARD_SET, "seat", "cards each relative seat played this deal (current trick included)"),
    ObservationPiece("trick", CARD_SET, "one", "cards in the current trick (who played each: `played`)"),
    ObservationPiece("won", CARD_SET, "team", "cards in the completed tricks each relative team won this deal"),
    ObservationPiece("phase", NUM_PHASES, "one", "one-hot: bid, trump, discard, play (all 0 once the episode is over)"),
    ObservationPiece("dealer", 1, "seat", "one-hot relative seat of the dealer"),
    ObservationPiece(
        "bids", 2, "seat", "per relative seat, one-hot of: not yet spoken, passed, bid 1 .. P", plus_points=True
    ),
    ObservationPiece(
        "maker", 1, "seat", "one-hot relative seat of the high bidder so far (the maker once bidding ends)"
    ),
    ObservationPiece("trump", 4, "one", "one-hot trump suit C D H S (0s before it is named)"),
    ObservationPiece("done", 1, "seat", "relative seat has said done in the discard round"),
    ObservationPiece(
        "drawn", 1, "seat", "count of cards each relative seat drew from the stock (robbed pack included)"
    ),
    ObservationPiece("hand_sizes", 1, "seat", "count of cards each relative seat holds"),
    ObservationPiece("stock_left", 1, "one", "count of cards still in the stock"),
    ObservationPiece("robbing", 1, "one", "the dealer is discarding down to 6 after robbing the pack"),
    ObservationPiece("trick_leader", 1, "seat", "one-hot relative seat that led the current trick (0s outside play)"),
    ObservationPiece(
        "voids",
        4,
        "seat",
        "relative seat has shown it holds no card of effective suit C D H S this deal (played off-suit without "
        "trumping; the trump suit's flag: no trumps left)",
    ),
    ObservationPiece("tricks_done", 1, "one", "count of completed tricks, 0..6"),
    ObservationPiece("points", 1, "team", "count of the point values each relative team has captured this deal"),
    ObservationPiece(
        "to_go", 1, "team", "points each relative team still needs: clip(target - score, 0, min(2 * target, 255))"
    ),
    ObservationPiece("target", 1, "one", "min(target_score, 255)"),
)
"""The observation's pieces in layout order (the one owner of the layout; offsets follow from it)."""
PIECE_INDEX = {piece.name: index for index, piece in enumerate(PIECES)}
"""Piece name -> its place in :data:`PIECES` (the kernels' ``O_*``)."""


def card_pieces(config: PedroConfig) -> list[tuple[str, int]]:
    """The card-set pieces, ``(name, number of 52-card sets)``, in layout order."""
    return [(piece.name, piece.block_count(config)) for piece in PIECES if piece.is_card_set]


def observation_pieces(config: PedroConfig) -> list[tuple[str, int]]:
    """``[(name, size), ...]`` in layout order (:data:`PIECES` under ``config``)."""
    return [(piece.name, piece.size(config)) for piece in PIECES]


def observation_offsets(config: PedroConfig) -> dict[str, slice]:
    """Piece name -> its slice of the observation vector."""
    offsets, start = {}, 0
    for name, size in observation_pieces(config):
        offsets[name] = slice(start, start + size)
        start += size
    return offsets


def viewer_team_makes(observations: np.ndarray, config: PedroConfig) -> np.ndarray:
    """(B,) bool: the high bidder (the ``maker`` piece, a one-hot relative seat; all 0 before the first bid) is on
    the viewer's team, the relative seats that are multiples of ``config.num_teams``, of (B, D) ``observations``."""
    return observations[:, observation_offsets(config)["maker"]][:, :: config.num_teams].any(axis=1)


def piece_starts(config: PedroConfig) -> np.ndarray:
    """(len(PIECES),) int64: each piece's first entry, in :data:`PIECES` order (the kernels' ``pieces``, ``O_*``)."""
    offsets = observation_offsets(config)
    return np.array([offsets[piece.name].start for piece in PIECES], dtype=np.int64)


def observation_size(config: PedroConfig) -> int:
    return sum(size for _, size in observation_pieces(config))


SUIT_PIECES = ("trump", "voids")
"""The pieces whose blocks are 4 entries in suit order (C D H S); card pieces are in card-id order."""


def relabelled_observation_entries(config: PedroConfig, suit_map: np.ndarray) -> np.ndarray:
    """(D,) int64: observation entry -> its entry once suits are relabelled by ``suit_map`` (4,) old -> new.

    Card pieces move with their cards, ``trump`` and ``voids`` with their suits, every other entry
    stays. The relabelled observation is ``new[..., relabelled_observation_entries(config, m)] = old``.
    """
    entries = np.arange(observation_size(config))
    cards, suits = relabelled_cards(suit_map), np.asarray(suit_map, dtype=np.int64)
    for piece, where in zip(PIECES, observation_offsets(config).values()):
        if piece.is_card_set:
            block, moved = CARD_SET, cards
        elif piece.name in SUIT_PIECES:
            block, moved = 4, suits
        else:
            continue
        for start in range(where.start, where.stop, block):
            entries[start : start + block] = start + moved
    return entries


def full_state_size(config: PedroConfig) -> int:
    """Observation plus every relative seat's hand (n * 52) plus the unseen cards of the stock (52)."""
    return observation_size(config) + config.num_players * 52 + 52


def to_go_cap(config: PedroConfig) -> int:
    """Largest ``to_go`` value: a team twice the target away reads as that far (keeps entries within uint8)."""
    return min(2 * config.target_score, MAX_COUNT)


def observation_scale(config: PedroConfig) -> np.ndarray:
    """(D,) float32 multipliers that bring every entry into [0, 1] (flags keep 1).

    Counts are divided by their largest possible value under the config: a robbing dealer holds
    and draws up to the whole stock, a player otherwise draws at most 6.
    """
    scale = np.ones(observation_size(config), dtype=np.float32)
    offsets = observation_offsets(config)
    robs = config.refill == "dealer_robs" and not config.six_card
    most_drawn = config.stock_size if robs else 6
    most_held = config.hand_size + (config.stock_size if robs else 0)
    for name, largest in (
        ("drawn", most_drawn),
        ("hand_sizes", most_held),
        ("stock_left", config.stock_size),
        ("tricks_done", 6),
        ("points", config.total_points),
        ("to_go", to_go_cap(config)),
        ("target", min(config.target_score, MAX_COUNT)),
    ):
        scale[offsets[name]] = 1.0 / largest
    return scale


def stock_left(state: PedroState, config: PedroConfig) -> np.ndarray:
    """(B,) int16 cards still in the stock, from public counts: the stock less every draw and the set-aside trumps."""
    drawn = state.drawn.sum(axis=1, dtype=np.int16)
    return (config.stock_size - drawn - np.bitwise_count(state.set_aside)).astype(np.int16)
