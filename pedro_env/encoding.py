"""Observations: the game as one player sees it, rotated to that player (the one place seats are rotated).

Seats are relative to the viewer: ``0`` me, ``1`` my left (next to act after me), then clockwise, so
with four players ``2`` is my partner and ``3`` my right. Teams are relative: ``0`` us, ``1`` them
(with two or three players a team is a seat, ordered like the seats). The vector is ``uint8``:
flags are 0/1 and counts are small integers; cast to float and multiply by
:func:`observation_scale` to bring every entry into roughly [0, 1].

Layout for ``n`` players, ``T`` teams and ``P`` total points (cinch, four players: 848 entries);
offsets follow :func:`observation_pieces` in order. Card pieces are 52 entries in card-id order
(card id = suit * 13 + rank, suits C D H S, ranks 2 .. A).

==================  ===========  =====================================================================
Piece               Size         Meaning
==================  ===========  =====================================================================
hand                52           my cards
open_draws          52           trumps the maker drew face up (refill maker_sorted)
discards            n * 52       cards each relative seat discarded face up
set_aside           52           trumps left in the stock after the refill, turned up and set aside
played              n * 52       cards each relative seat played this deal (current trick included)
trick               52           cards in the current trick (who played each: ``played``)
won                 T * 52       cards in the completed tricks each relative team won this deal
phase               4            one-hot: bid, trump, discard, play (all 0 once the episode is over)
dealer              n            one-hot relative seat of the dealer
bids                n * (P + 2)  per relative seat, one-hot of: not yet spoken, passed, bid 1 .. P
maker               n            one-hot relative seat of the high bidder so far (the maker once bidding ends)
trump               4            one-hot trump suit C D H S (0s before it is named)
done                n            relative seat has said done in the discard round
drawn               n            count of cards each relative seat drew from the stock (robbed pack included)
hand_sizes          n            count of cards each relative seat holds
stock_left          1            count of cards still in the stock
robbing             1            the dealer is discarding down to 6 after robbing the pack
trick_leader        n            one-hot relative seat that led the current trick (0s outside play)
voids               n * 4        relative seat has shown it holds no card of effective suit C D H S this deal
                                 (played off-suit without trumping; the trump suit's flag: no trumps left)
tricks_done         1            count of completed tricks, 0..6
points              T            count of the point values each relative team has captured this deal
to_go               T            points each relative team still needs: clip(target - score, 0, min(2 * target, 255))
target              1            min(target_score, 255)
==================  ===========  =====================================================================

Nothing here reads another player's hand, the stock or face-down draws, so changing any card the
viewer cannot see leaves the observation unchanged. :meth:`ObservationEncoder.encode_full_state`
appends the hidden part for centralized critics.
"""

from __future__ import annotations

import numpy as np

from pedro_env.cards import CARD_BIT, NO_CARDS, RuleTables, bits_to_cards
from pedro_env.config import PedroConfig
from pedro_env.exchange import sum_seats
from pedro_env.state import NUM_PHASES, PedroState

# CARD_BIT with a 53rd entry 0 so that card -1 (no card) indexes the empty set
CARD_BIT_OR_NONE = np.append(CARD_BIT, NO_CARDS)
# a 4-bit suit set -> its 4 flags as the bytes of one uint32 (little-endian: suit 0 first)
VOID_FLAGS = (
    np.unpackbits(np.arange(16, dtype=np.uint8)[:, None], axis=1, bitorder="little")[:, :4].copy().view(np.uint32)[:, 0]
)

MAX_COUNT = 255


def card_pieces(config: PedroConfig) -> list[tuple[str, int]]:
    """The card-set pieces, ``(name, number of 52-card sets)``, in layout order."""
    n, teams = config.num_players, config.num_teams
    return [
        ("hand", 1),
        ("open_draws", 1),
        ("discards", n),
        ("set_aside", 1),
        ("played", n),
        ("trick", 1),
        ("won", teams),
    ]


def observation_pieces(config: PedroConfig) -> list[tuple[str, int]]:
    """``[(name, size), ...]`` in layout order; see the module docstring for meanings."""
    n, teams, total = config.num_players, config.num_teams, config.total_points
    return [(name, sets * 52) for name, sets in card_pieces(config)] + [
        ("phase", NUM_PHASES),
        ("dealer", n),
        ("bids", n * (total + 2)),
        ("maker", n),
        ("trump", 4),
        ("done", n),
        ("drawn", n),
        ("hand_sizes", n),
        ("stock_left", 1),
        ("robbing", 1),
        ("trick_leader", n),
        ("voids", n * 4),
        ("tricks_done", 1),
        ("points", teams),
        ("to_go", teams),
        ("target", 1),
    ]


def observation_offsets(config: PedroConfig) -> dict[str, slice]:
    """Piece name -> its slice of the observation vector."""
    offsets, start = {}, 0
    for name, size in observation_pieces(config):
        offsets[name] = slice(start, start + size)
        start += size
    return offsets


def observation_size(config: PedroConfig) -> int:
    return sum(size for _, size in observation_pieces(config))


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
    return config.stock_size - sum_seats(state.drawn.astype(np.int16)) - np.bitwise_count(state.set_aside)


class CardSetPacking:
    """Packs ``F`` 52-card sets into ``ceil(52F / 64)`` words, set ``i`` at bits ``52i .. 52i+51``.

    Unpacking those words yields the card pieces of the observation back to back, so the whole
    observation comes out of one ``np.unpackbits`` with no copy. A word holds the low part of up to
    two sets (shifted up) and the high part of at most one set that started in the word before
    (shifted down): three gathers and two ORs build every word. ``pack`` takes the sets with one
    extra all-zero row at the end, which stands for "no contribution".
    """

    def __init__(self, num_sets: int) -> None:
        first_bit = 52 * np.arange(num_sets)
        self.words = -(-52 * num_sets // 64)
        start_word, shift = first_bit // 64, first_bit % 64
        self.up_shift = np.append(shift, 0).astype(np.uint64)
        # down shift 64 - shift, split as (63 - shift) then 1: a uint64 shift by 64 is undefined
        self.down_shift = np.append(63 - shift, 0).astype(np.uint64)
        none = num_sets  # index of the zero column
        lows: list[list[int]] = [[] for _ in range(self.words)]
        high = np.full(self.words, none)
        for i in range(num_sets):
            lows[start_word[i]].append(i)
            if shift[i] + 52 > 64:
                high[start_word[i] + 1] = i
        assert max(len(sets) for sets in lows) <= 2
        self.low_first = np.array([sets[0] if sets else none for sets in lows])
        self.low_second = np.array([sets[1] if len(sets) > 1 else none for sets in lows])
        self.high = high

    def pack(self, sets: np.ndarray) -> np.ndarray:
        """(F + 1, B) uint64, set-major with the last row zero -> (B, words) uint64.

        Set-major rows make every gather a row copy; one transpose at the end gives game-major words.
        """
        low = sets << self.up_shift[:, None]
        high = (sets >> self.down_shift[:, None]) >> np.uint64(1)
        words = low.take(self.low_first, axis=0) | low.take(self.low_second, axis=0) | high.take(self.high, axis=0)
        return np.ascontiguousarray(words.T)


class ObservationEncoder:
    """Encodes observations of one config; holds the offsets and rotation tables so encoding only indexes.

    Rotations are flat ``take`` indices (``rotation[viewer, relative] = absolute``) rather than
    ``(seat + k) % n`` arithmetic: on large batches a take costs a fraction of a 2-D fancy index.
    """

    def __init__(self, config: PedroConfig, tables: RuleTables) -> None:
        self.config = config
        self.tables = tables
        self.offsets = observation_offsets(config)
        self.size = observation_size(config)
        n, teams = config.num_players, config.num_teams
        self.card_sets = sum(sets for _, sets in card_pieces(config))
        self.card_end = self.card_sets * 52
        self.packing = CardSetPacking(self.card_sets)
        seats = np.arange(n)
        # seat_rotation[viewer, r] = absolute seat at relative seat r; relative_seat[viewer, seat] = r
        self.seat_rotation = (seats[:, None] + seats[None, :]) % n
        self.relative_seat = (seats[None, :] - seats[:, None]) % n
        team_of_seat = config.team_of_seat.astype(np.intp)
        self.team_rotation = (team_of_seat[:, None] + np.arange(teams)[None, :]) % teams  # (n viewers, T)
        # one-hot entries (absent values point at the sink, the target entry, written last):
        # phase_entry[phase] (OVER absent); trump_entry[trump + 1] (-1 absent);
        # seat_entry[seat_entry_base[viewer, piece] + seat] for the pieces dealer, maker, trick_leader (-1 absent)
        sink = self.offsets["target"].start
        self.phase_entry = np.array(
            [self.offsets["phase"].start + p for p in range(NUM_PHASES)] + [sink], dtype=np.intp
        )
        self.trump_entry = np.array([sink] + [self.offsets["trump"].start + t for t in range(4)], dtype=np.intp)
        seat_pieces = ("dealer", "maker", "trick_leader")
        seat_entry = np.full((n, len(seat_pieces), n + 1), sink, dtype=np.intp)
        for viewer in range(n):
            for piece, name in enumerate(seat_pieces):
                seat_entry[viewer, piece, 1:] = self.offsets[name].start + self.relative_seat[viewer]
        self.seat_entry = seat_entry.reshape(-1)
        width = len(seat_pieces) * (n + 1)
        self.seat_entry_base = np.arange(n)[:, None] * width + np.arange(len(seat_pieces))[None, :] * (n + 1) + 1
        bid_width = config.total_points + 2
        self.bid_offset = self.offsets["bids"].start + np.arange(n) * bid_width + 1  # + bid (-1 not yet, 0 pass, k)
        # point values as uint8 scalars, the first (1 in every variant: High, Low, Jack, Game) left implicit
        self.point_values = [np.uint8(v) for v in tables.point_values]
        assert self.point_values[0] == 1
        self.to_go_cap = to_go_cap(config)
        self._row_bases: dict[tuple[int, int], np.ndarray] = {}
        self._zero_rows: dict[int, np.ndarray] = {}

    def _row_base(self, batch: int, width: int) -> np.ndarray:
        """(B, 1) intp: ``row * width``, the flat offset of each row of a (B, width) array."""
        key = (batch, width)
        if key not in self._row_bases:
            self._row_bases[key] = (np.arange(batch, dtype=np.intp) * width)[:, None]
        return self._row_bases[key]

    def _zero_row(self, batch: int) -> np.ndarray:
        """(1, B) uint64 zeros (read-only, cached)."""
        if batch not in self._zero_rows:
            zeros = np.zeros((1, batch), dtype=np.uint64)
            zeros.setflags(write=False)
            self._zero_rows[batch] = zeros
        return self._zero_rows[batch]

    def encode(self, state: PedroState, viewer: np.ndarray) -> np.ndarray:
        """(B, D) uint8 observations of ``viewer`` (B,) seats."""
        config, o = self.config, self.offsets
        b, n, teams = state.batch_size, config.num_players, config.num_teams
        viewer = np.asarray(viewer, dtype=np.intp)
        seat_index = self.seat_rotation.take(viewer, axis=0) + self._row_base(b, n)  # (B, n) flat into (B, n) fields
        team_index = self.team_rotation.take(viewer, axis=0) + self._row_base(
            b, teams
        )  # (B, T) flat into (B, T) fields
        won = state.won.reshape(-1).take(team_index)  # (B, T)
        trick_bits = CARD_BIT_OR_NONE.take(state.trick)  # (B, n), 0 for seats yet to play
        trick_set = trick_bits[:, 0]
        for seat in range(1, n):  # a loop over a small axis beats a ufunc reduce along it
            trick_set = trick_set | trick_bits[:, seat]
        seat_index_t = seat_index.T  # (n, B): set-major gathers for the packing below
        sets = np.concatenate(
            [
                state.hands.reshape(-1).take(seat_index_t[:1]),
                state.open_draws[None, :],
                state.discards.reshape(-1).take(seat_index_t),
                state.set_aside[None, :],
                state.played.reshape(-1).take(seat_index_t),
                trick_set[None, :],
                won.T,
                self._zero_row(b),
            ],
            axis=0,
        )  # (card sets + 1, B) in card_pieces order, then a zero row

        # the card pieces, 52 bits per set back to back, unpacked straight into a zero-padded observation
        out = np.unpackbits(self.packing.pack(sets).view(np.uint8), axis=1, count=self.size, bitorder="little")

        # one-hot pieces: each game's entries of phase, trump, dealer, maker, trick leader and bids, set at
        # once; an absent one (no maker yet, ...) points at the target entry, which is written last
        sink = o["target"].start
        seats = np.stack([state.dealer, state.maker, state.trick_leader], axis=1).astype(np.intp)  # (B, 3), -1 absent
        hot = np.concatenate(
            [
                self.phase_entry.take(state.phase)[:, None],
                self.trump_entry.take(state.trump + 1)[:, None],
                self.seat_entry.take(seats + self.seat_entry_base[viewer]),
                state.bids.reshape(-1).take(seat_index) + self.bid_offset,
            ],
            axis=1,
        )
        out.reshape(-1)[hot + self._row_base(b, self.size)] = 1

        small = np.concatenate(
            [
                state.done.reshape(-1).take(seat_index),
                state.drawn.reshape(-1).take(seat_index),
                np.bitwise_count(state.hands.reshape(-1).take(seat_index)),
            ],
            axis=1,
            dtype=np.uint8,
            casting="unsafe",
        )  # done, drawn, hand_sizes: adjacent pieces
        out[:, o["done"].start : o["hand_sizes"].stop] = small
        out[:, o["stock_left"].start] = stock_left(state, config)
        out[:, o["robbing"].start] = state.robbing
        voids = state.voids.reshape(-1).take(seat_index)  # (B, n) suit bits 0..15
        out[:, o["voids"]] = VOID_FLAGS.take(voids).view(np.uint8).reshape(b, 4 * n)
        out[:, o["tricks_done"].start] = state.tricks_done
        point_sets = self.tables.point_sets.take(
            state.trump, axis=0, mode="wrap"
        )  # (B, K); nothing is won before trumps
        points = np.bitwise_count(won & point_sets[:, :1])
        for k in range(1, len(self.point_values)):
            points = points + np.bitwise_count(won & point_sets[:, k : k + 1]) * self.point_values[k]
        out[:, o["points"]] = points
        to_go = config.target_score - state.scores.reshape(-1).take(team_index)
        out[:, o["to_go"]] = np.minimum(np.maximum(to_go, 0), self.to_go_cap)  # np.clip costs 10x more on small arrays
        out[:, sink] = min(config.target_score, MAX_COUNT)
        return out

    def encode_full_state(self, state: PedroState, viewer: np.ndarray) -> np.ndarray:
        """(B, D + n*52 + 52) uint8: the observation, every relative seat's hand, the unseen cards of the stock."""
        b, n = state.batch_size, self.config.num_players
        viewer = np.asarray(viewer, dtype=np.intp)
        hands = state.hands.reshape(-1).take(self.seat_rotation.take(viewer, axis=0) + self._row_base(b, n))  # (B, n)
        stock = np.bitwise_or.reduce(np.where(state.in_stock, CARD_BIT[state.stock], NO_CARDS), axis=1)
        hidden = bits_to_cards(np.concatenate([hands, stock[:, None]], axis=1)).reshape(b, -1)
        return np.concatenate([self.encode(state, viewer), hidden.view(np.uint8)], axis=1)
