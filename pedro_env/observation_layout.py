"""The observation's layout: the game as one player sees it, rotated to that player, piece by piece.

Seats are relative to the viewer: ``0`` me, ``1`` my left (next to act after me), then clockwise, so
with four players ``2`` is my partner and ``3`` my right. Teams are relative: ``0`` us, ``1`` them
(with two or three players a team is a seat, ordered like the seats). The vector is ``uint8``:
flags are 0/1 and counts are small integers; multiply by :func:`observation_scale` to bring every
entry into [0, 1].

One layout (version :data:`LAYOUT_VERSION`) serves every config: :data:`PIECES` in order, each piece a
number of blocks (one, one per relative seat up to :data:`MAX_PLAYERS`, or one per relative team up to
:data:`MAX_TEAMS`) of a fixed width, :data:`OBSERVATION_SIZE` entries in all. Seats, teams and bids a
config does not have stay 0, and the ``rules`` piece says which game is played (every switch of
docs/rules.md section 9; the target is the ``target`` piece), so one network reads every Pedro. Card
pieces are 52 entries in card-id order. The table of pieces: docs/environment.md, generated from
:data:`PIECES`. The compiled encoder (:func:`pedro_env.kernels.observations.encode_games`) indexes the
pieces by :data:`PIECE_INDEX`; :class:`pedro_env.encoding.ObservationEncoder` calls it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pedro_env.cards import VARIANT_TOTAL_POINTS, relabelled_cards
from pedro_env.config import ALLOWED_VALUES, PedroConfig
from pedro_env.state import NUM_PHASES, PedroState

LAYOUT_VERSION = 2
"""Version of the layout below; a saved policy records the version it reads (1: before the ``rules`` piece, sized
per config)."""
MAX_COUNT = 255
MAX_PLAYERS = 4  # seat blocks of a seat piece
MAX_TEAMS = 3  # team blocks of a team piece: three players, each alone
MAX_TOTAL_POINTS = max(VARIANT_TOTAL_POINTS.values())  # sancho's 23
BID_WIDTH = MAX_TOTAL_POINTS + 2  # a seat's bid block: not yet spoken, passed, bid 1 .. 23

CARD_SET = 52  # entries of a card piece's block: one 0/1 per card id

RULE_SWITCHES: tuple[tuple[str, object], ...] = (
    *(("num_players", players) for players in ALLOWED_VALUES["num_players"]),  # type: ignore[union-attr]
    *(("variant", variant) for variant in ALLOWED_VALUES["variant"]),  # type: ignore[union-attr]
    ("six_card", True),
    *(("refill", refill) for refill in ALLOWED_VALUES["refill"]),  # type: ignore[union-attr]
    ("scoring", "simple"),
    ("low", "held"),
    ("renege", "penalty"),
    ("all_pass", "redeal"),
)
"""The ``rules`` piece's flags in order: entry ``i`` is 1 when the config's ``key`` is ``value`` (one-hot over the
table size, the variant and the refill); its last entry, after these, is the count ``min_bid``."""
RULES_WIDTH = len(RULE_SWITCHES) + 1


@dataclass(frozen=True)
class ObservationPiece:
    """One named piece of the observation: ``blocks`` blocks of ``width`` entries."""

    name: str
    width: int
    blocks: str  # "one", "seat" (one block per relative seat) or "team" (one per relative team)
    meaning: str

    @property
    def block_count(self) -> int:
        """Blocks in the layout: 1, :data:`MAX_PLAYERS` or :data:`MAX_TEAMS`."""
        return {"one": 1, "seat": MAX_PLAYERS, "team": MAX_TEAMS}[self.blocks]

    def used_blocks(self, config: PedroConfig) -> int:
        """Blocks a game of ``config`` fills (the rest stay 0): 1, its players or its teams."""
        return {"one": 1, "seat": config.num_players, "team": config.num_teams}[self.blocks]

    @property
    def size(self) -> int:
        return self.block_count * self.width

    @property
    def is_card_set(self) -> bool:
        return self.width == CARD_SET


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
        "bids",
        BID_WIDTH,
        "seat",
        "per relative seat, one-hot of: not yet spoken, passed, bid 1 .. P (P: the variant's total points)",
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
    ObservationPiece(
        "rules",
        RULES_WIDTH,
        "one",
        "the rules: one-hot num_players 2 3 4, one-hot variant cinch sancho dom pitch, six_card, one-hot refill "
        "maker_sorted top dealer_robs, scoring simple, low held, renege penalty, all_pass redeal; then min_bid",
    ),
)
"""The observation's pieces in layout order (the one owner of the layout; offsets follow from it)."""
PIECE_INDEX = {piece.name: index for index, piece in enumerate(PIECES)}
"""Piece name -> its place in :data:`PIECES` (the kernels' ``O_*``)."""


PIECE_STARTS = np.cumsum([0] + [piece.size for piece in PIECES[:-1]]).astype(np.int64)
"""(len(PIECES),) int64: each piece's first entry, in :data:`PIECES` order (the kernels' ``pieces``, ``O_*``)."""
OBSERVATION_SIZE = int(PIECE_STARTS[-1] + PIECES[-1].size)
"""Entries of every observation, whatever the config."""
HIDDEN_SIZE = MAX_PLAYERS * CARD_SET + CARD_SET
"""Entries the full state adds to the observation: every relative seat's hand (0s past the table's seats), then the
unseen cards of the stock."""
FULL_STATE_SIZE = OBSERVATION_SIZE + HIDDEN_SIZE


def card_pieces(config: PedroConfig) -> list[tuple[str, int]]:
    """The card-set pieces a game of ``config`` fills, ``(name, number of 52-card sets)``, in layout order."""
    return [(piece.name, piece.used_blocks(config)) for piece in PIECES if piece.is_card_set]


def observation_pieces(config: PedroConfig | None = None) -> list[tuple[str, int]]:
    """``[(name, size), ...]`` in layout order (the same for every config; a saved policy records it)."""
    return [(piece.name, piece.size) for piece in PIECES]


def piece_slices() -> dict[str, slice]:
    """Piece name -> its whole slice of the observation vector (every block, used or not)."""
    return {piece.name: slice(start, start + piece.size) for piece, start in zip(PIECES, PIECE_STARTS.tolist())}


def observation_offsets(config: PedroConfig) -> dict[str, slice]:
    """Piece name -> the slice a game of ``config`` fills: the piece's first blocks, its seats', teams' or one
    (``observations[:, slice].reshape(B, blocks, width)`` reads them block by block)."""
    return {
        piece.name: slice(start, start + piece.used_blocks(config) * piece.width)
        for piece, start in zip(PIECES, PIECE_STARTS.tolist())
    }


def viewer_team_makes(observations: np.ndarray, config: PedroConfig) -> np.ndarray:
    """(B,) bool: the high bidder (the ``maker`` piece, a one-hot relative seat; all 0 before the first bid) is on
    the viewer's team, the relative seats that are multiples of ``config.num_teams``, of (B, D) ``observations``."""
    return observations[:, observation_offsets(config)["maker"]][:, :: config.num_teams].any(axis=1)


def piece_starts(config: PedroConfig | None = None) -> np.ndarray:
    """:data:`PIECE_STARTS` (the same for every config)."""
    return PIECE_STARTS


def observation_size(config: PedroConfig | None = None) -> int:
    """:data:`OBSERVATION_SIZE` (the same for every config)."""
    return OBSERVATION_SIZE


def rules_entries(config: PedroConfig) -> np.ndarray:
    """(RULES_WIDTH,) uint8: the ``rules`` piece of every game of ``config``."""
    entries = np.zeros(RULES_WIDTH, dtype=np.uint8)
    for index, (key, value) in enumerate(RULE_SWITCHES):
        entries[index] = getattr(config, key) == value
    entries[-1] = config.min_bid
    return entries


SUIT_PIECES = ("trump", "voids")
"""The pieces whose blocks are 4 entries in suit order (C D H S); card pieces are in card-id order."""


def relabelled_observation_entries(config: PedroConfig | None, suit_map: np.ndarray) -> np.ndarray:
    """(D,) int64: observation entry -> its entry once suits are relabelled by ``suit_map`` (4,) old -> new.

    Card pieces move with their cards, ``trump`` and ``voids`` with their suits, every other entry
    stays. The relabelled observation is ``new[..., relabelled_observation_entries(config, m)] = old``.
    """
    entries = np.arange(OBSERVATION_SIZE)
    cards, suits = relabelled_cards(suit_map), np.asarray(suit_map, dtype=np.int64)
    for piece, where in zip(PIECES, piece_slices().values()):
        if piece.is_card_set:
            block, moved = CARD_SET, cards
        elif piece.name in SUIT_PIECES:
            block, moved = 4, suits
        else:
            continue
        for start in range(where.start, where.stop, block):
            entries[start : start + block] = start + moved
    return entries


def full_state_size(config: PedroConfig | None = None) -> int:
    """:data:`FULL_STATE_SIZE`: the observation, then :data:`MAX_PLAYERS` hands and the unseen stock (52 each)."""
    return FULL_STATE_SIZE


def to_go_cap(config: PedroConfig) -> int:
    """Largest ``to_go`` value: a team twice the target away reads as that far (keeps entries within uint8)."""
    return min(2 * config.target_score, MAX_COUNT)


LARGEST_STOCK = 52 - 2 * 9  # two players, nine cards each: a robbing dealer draws all of it
COUNT_LARGEST = {
    "drawn": LARGEST_STOCK,
    "hand_sizes": 9 + LARGEST_STOCK,
    "stock_left": 52 - 2 * 6,  # two players of six-card Pedro
    "tricks_done": 6,
    "points": MAX_TOTAL_POINTS,
    "to_go": MAX_COUNT,
    "target": MAX_COUNT,
}
"""The count pieces and their largest value under any config (the scale divides by it)."""


def observation_scale(config: PedroConfig | None = None) -> np.ndarray:
    """(D,) float32 multipliers that bring every entry into [0, 1] (flags keep 1), the same for every config.

    Counts are divided by their largest value under any config (:data:`COUNT_LARGEST`; the rules' ``min_bid``
    by the largest total points)."""
    scale = np.ones(OBSERVATION_SIZE, dtype=np.float32)
    slices = piece_slices()
    for name, largest in COUNT_LARGEST.items():
        scale[slices[name]] = 1.0 / largest
    scale[slices["rules"].stop - 1] = 1.0 / MAX_TOTAL_POINTS
    return scale


def stock_left(state: PedroState, config: PedroConfig) -> np.ndarray:
    """(B,) int16 cards still in the stock, from public counts: the stock less every draw and the set-aside trumps."""
    drawn = state.drawn.sum(axis=1, dtype=np.int16)
    return (config.stock_size - drawn - np.bitwise_count(state.set_aside)).astype(np.int16)
