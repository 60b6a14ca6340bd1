"""Observations: the game as one player sees it, rotated to that player (the one place seats are rotated).

Seats are relative to the viewer: ``0`` me, ``1`` my left (next to act after me), then clockwise, so
with four players ``2`` is my partner and ``3`` my right. Teams are relative: ``0`` us, ``1`` them
(with two or three players a team is a seat, ordered like the seats). The vector is ``uint8``:
flags are 0/1 and counts are small integers; cast to float and multiply by
:func:`observation_scale` to bring every entry into roughly [0, 1].

Layout for ``n`` players, ``T`` teams and ``P`` total points (cinch, four players: 934 entries);
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
maker               n            one-hot relative seat of the high bidder (0s before bidding ends)
trump               4            one-hot trump suit C D H S (0s before it is named)
done                n            relative seat has said done in the discard round
drawn               n            count of cards each relative seat drew from the stock (robbed pack included)
hand_sizes          n            count of cards each relative seat holds
stock_left          1            count of cards still in the stock
robbing             1            the dealer is discarding down to 6 after robbing the pack
trick_leader        n            one-hot relative seat that led the current trick (0s outside play)
tricks_done         1            count of completed tricks, 0..6
points              T            count of the point values each relative team has captured this deal
to_go               T            points each relative team still needs: clip(target - score, 0, 255)
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
from pedro_env.state import NUM_PHASES, PedroState

MAX_COUNT = 255


def card_pieces(config: PedroConfig) -> list[tuple[str, int]]:
    """The card-set pieces, ``(name, number of 52-card sets)``, in layout order."""
    n, teams = config.num_players, config.num_teams
    return [("hand", 1), ("open_draws", 1), ("discards", n), ("set_aside", 1), ("played", n), ("trick", 1), ("won", teams)]


def observation_pieces(config: PedroConfig) -> list[tuple[str, int]]:
    """``[(name, size), ...]`` in layout order; see the module docstring for meanings."""
    n, teams, total = config.num_players, config.num_teams, config.total_points
    return [(name, sets * 52) for name, sets in card_pieces(config)] + [
        ("phase", NUM_PHASES), ("dealer", n), ("bids", n * (total + 2)), ("maker", n), ("trump", 4), ("done", n),
        ("drawn", n), ("hand_sizes", n), ("stock_left", 1), ("robbing", 1), ("trick_leader", n), ("tricks_done", 1),
        ("points", teams), ("to_go", teams), ("target", 1),
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


def observation_scale(config: PedroConfig) -> np.ndarray:
    """(D,) float32 multipliers that bring counts into about [0, 1] (flags keep 1)."""
    scale = np.ones(observation_size(config), dtype=np.float32)
    offsets = observation_offsets(config)
    for name, divisor in (("drawn", 8), ("hand_sizes", 9), ("stock_left", config.stock_size), ("tricks_done", 6),
                          ("points", config.total_points), ("to_go", config.target_score), ("target", 100)):
        scale[offsets[name]] = 1.0 / divisor
    return scale


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
        seats = np.arange(n)
        # seat_rotation[viewer, r] = absolute seat at relative seat r; relative_seat[viewer, seat] = r
        self.seat_rotation = (seats[:, None] + seats[None, :]) % n
        self.relative_seat = (seats[None, :] - seats[:, None]) % n
        team_of_seat = config.team_of_seat.astype(np.intp)
        self.team_rotation = (team_of_seat[:, None] + np.arange(teams)[None, :]) % teams  # (n viewers, T)
        self.point_values = [int(v) for v in tables.point_values]
        self._row_bases: dict[tuple[int, int], np.ndarray] = {}

    def _row_base(self, batch: int, width: int) -> np.ndarray:
        """(B, 1) intp: ``row * width``, the flat offset of each row of a (B, width) array."""
        key = (batch, width)
        if key not in self._row_bases:
            self._row_bases[key] = (np.arange(batch, dtype=np.intp) * width)[:, None]
        return self._row_bases[key]

    def encode(self, state: PedroState, viewer: np.ndarray) -> np.ndarray:
        """(B, D) uint8 observations of ``viewer`` (B,) seats."""
        config, o = self.config, self.offsets
        b, n, teams = state.batch_size, config.num_players, config.num_teams
        viewer = np.asarray(viewer).astype(np.intp)
        seat_index = self.seat_rotation.take(viewer, axis=0) + self._row_base(b, n)  # (B, n) flat into (B, n) fields
        team_index = self.team_rotation.take(viewer, axis=0) + self._row_base(b, teams)  # (B, T) flat into (B, T) fields

        def by_seat(field: np.ndarray) -> np.ndarray:
            return field.reshape(-1).take(seat_index)

        sets = np.empty((b, self.card_sets), dtype=np.uint64)
        sets[:, 0] = state.hands.reshape(-1).take(seat_index[:, 0])
        sets[:, 1] = state.open_draws
        sets[:, 2 : 2 + n] = by_seat(state.discards)
        sets[:, 2 + n] = state.set_aside
        sets[:, 3 + n : 3 + 2 * n] = by_seat(state.played)
        trick_set = np.zeros(b, dtype=np.uint64)
        for seat in range(n):
            card = state.trick[:, seat]
            trick_set |= np.where(card >= 0, CARD_BIT.take(card, mode="wrap"), NO_CARDS)
        sets[:, 3 + 2 * n] = trick_set
        won = state.won.reshape(-1).take(team_index)  # (B, T)
        sets[:, 4 + 2 * n :] = won

        out = np.empty((b, self.size), dtype=np.uint8)
        out[:, : self.card_end].reshape(b, self.card_sets, 52)[:] = bits_to_cards(sets)
        out[:, self.card_end :] = 0
        flat_out = out.reshape(-1)
        row_base = self._row_base(b, self.size)[:, 0]

        def one_hot(start: int, index: np.ndarray, present: np.ndarray | None = None) -> None:
            """out[b, start + index[b]] = 1 (where present)."""
            positions = row_base + start + index
            flat_out[positions if present is None else positions[present]] = 1

        def relative(seat: np.ndarray) -> np.ndarray:
            return self.relative_seat.reshape(-1).take(viewer * n + seat, mode="wrap")

        one_hot(o["phase"].start, state.phase.astype(np.intp), state.phase < NUM_PHASES)
        one_hot(o["dealer"].start, relative(state.dealer))
        bid_width = config.total_points + 2
        bid_code = by_seat(state.bids).astype(np.intp) + 1  # (B, n): 0 not yet, 1 pass, k+1 bid k
        flat_out[(row_base + o["bids"].start)[:, None] + np.arange(n) * bid_width + bid_code] = 1
        one_hot(o["maker"].start, relative(state.maker), state.maker >= 0)
        one_hot(o["trump"].start, state.trump.astype(np.intp), state.trump >= 0)
        one_hot(o["trick_leader"].start, relative(state.trick_leader), state.trick_leader >= 0)
        out[:, o["done"]] = by_seat(state.done)
        out[:, o["drawn"]] = by_seat(state.drawn)
        out[:, o["hand_sizes"]] = np.bitwise_count(by_seat(state.hands))
        out[:, o["stock_left"].start] = state.in_stock.view(np.uint8).sum(axis=1, dtype=np.uint8)
        out[:, o["robbing"].start] = state.robbing
        out[:, o["tricks_done"].start] = state.tricks_done
        point_sets = self.tables.point_sets.take(np.maximum(state.trump, 0), axis=0)  # (B, K); nothing is won before trumps
        points = np.zeros((b, teams), dtype=np.uint8)
        for k, value in enumerate(self.point_values):
            points += np.bitwise_count(won & point_sets[:, k : k + 1]) * np.uint8(value)
        out[:, o["points"]] = points
        to_go = config.target_score - state.scores.reshape(-1).take(team_index)
        out[:, o["to_go"]] = np.clip(to_go, 0, MAX_COUNT)
        out[:, o["target"].start] = min(config.target_score, MAX_COUNT)
        return out

    def encode_full_state(self, state: PedroState, viewer: np.ndarray) -> np.ndarray:
        """(B, D + n*52 + 52) uint8: the observation, every relative seat's hand, the unseen cards of the stock."""
        b, n = state.batch_size, self.config.num_players
        viewer = np.asarray(viewer).astype(np.intp)
        seat_order = (viewer[:, None] + self.seat_steps[None, :]) % n
        hands = state.hands[np.arange(b)[:, None], seat_order]  # (B, n)
        stock = np.bitwise_or.reduce(np.where(state.in_stock, CARD_BIT[state.stock], NO_CARDS), axis=1)
        hidden = bits_to_cards(np.concatenate([hands, stock[:, None]], axis=1)).reshape(b, -1)
        return np.concatenate([self.encode(state, viewer), hidden.view(np.uint8)], axis=1)
