"""Observations: the game as one player sees it, rotated to that player (the one place seats are rotated).

Seats are relative to the viewer: ``0`` me, ``1`` my left (next to act after me), then clockwise, so
with four players ``2`` is my partner and ``3`` my right. Teams are relative: ``0`` us, ``1`` them
(with two or three players a team is a seat, ordered like the seats). The vector is ``uint8``:
flags are 0/1 and counts are small integers; cast to float and multiply by
:func:`observation_scale` to bring every entry into roughly [0, 1].

Layout for ``n`` players, ``T`` teams and ``P`` total points (cinch, four players: 1,002 entries),
offsets follow :func:`observation_pieces` in order:

==================  ===========  =====================================================================
Piece               Size         Meaning
==================  ===========  =====================================================================
phase               4            one-hot: bid, trump, discard, play (all 0 once the episode is over)
hand                52           my cards (card id = suit * 13 + rank, suits C D H S, ranks 2..A)
dealer              n            one-hot relative seat of the dealer
bids                n * (P + 2)  per relative seat, one-hot of: not yet spoken, passed, bid 1 .. P
maker               n            one-hot relative seat of the high bidder (0s before bidding ends)
trump               4            one-hot trump suit (0s before it is named)
discards            n * 52       cards each relative seat discarded face up
done                n            relative seat has said done in the discard round
drawn               n            count of cards each relative seat drew from the stock (robbed pack included)
hand_sizes          n            count of cards each relative seat holds
maker_trump_draws   52           trumps the maker drew face up (refill maker_sorted)
set_aside           52           trumps left in the stock after the refill, turned up
stock_left          1            count of cards still in the stock
robbing             1            the dealer is discarding down to 6 after robbing the pack
trick               n * 52       the card each relative seat played to the current trick
trick_leader        n            one-hot relative seat that led the current trick (0s outside play)
played              n * 52       every card each relative seat played this deal (current trick included)
captured            T * 52       cards in the tricks each relative team won this deal
tricks_done         1            count of completed tricks, 0..6
points              T            count of point values each relative team captured this deal
to_go               T            points each relative team still needs: clip(target - score, 0, 255)
target              1            min(target_score, 255)
==================  ===========  =====================================================================

Nothing here reads another player's hand, the stock's order or face-down draws, so changing any
card the viewer cannot see leaves the observation unchanged. :func:`encode_full_state` appends the
hidden part for centralized critics.
"""

from __future__ import annotations

import numpy as np

from pedro_env.cards import RuleTables
from pedro_env.config import PedroConfig
from pedro_env.state import NUM_PHASES, PedroState

MAX_COUNT = 255


def observation_pieces(config: PedroConfig) -> list[tuple[str, int]]:
    """``[(name, size), ...]`` in layout order; see the module docstring for meanings."""
    n, teams, total = config.num_players, config.num_teams, config.total_points
    return [
        ("phase", NUM_PHASES), ("hand", 52), ("dealer", n), ("bids", n * (total + 2)), ("maker", n),
        ("trump", 4), ("discards", n * 52), ("done", n), ("drawn", n), ("hand_sizes", n),
        ("maker_trump_draws", 52), ("set_aside", 52), ("stock_left", 1), ("robbing", 1),
        ("trick", n * 52), ("trick_leader", n), ("played", n * 52), ("captured", teams * 52),
        ("tricks_done", 1), ("points", teams), ("to_go", teams), ("target", 1),
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
    """Observation plus every relative seat's hand (n * 52) plus the cards still in the stock (52)."""
    return observation_size(config) + config.num_players * 52 + 52


def observation_scale(config: PedroConfig) -> np.ndarray:
    """(D,) float32 multipliers that bring counts into about [0, 1] (flags keep 1)."""
    scale = np.ones(observation_size(config), dtype=np.float32)
    offsets = observation_offsets(config)
    for name, divisor in (("drawn", 8), ("hand_sizes", 9), ("stock_left", config.stock_size), ("tricks_done", 6),
                          ("points", config.total_points), ("to_go", config.target_score), ("target", 100)):
        scale[offsets[name]] = 1.0 / divisor
    return scale


def _one_hot_seat(out: np.ndarray, rows: np.ndarray, relative: np.ndarray, present: np.ndarray) -> None:
    """out (B, n) zeroed; set out[b, relative[b]] = 1 where present[b]."""
    out[rows[present], relative[present]] = 1


class ObservationEncoder:
    """Encodes observations of one config; holds the offsets and tables so encoding only indexes."""

    def __init__(self, config: PedroConfig, tables: RuleTables) -> None:
        self.config = config
        self.tables = tables
        self.offsets = observation_offsets(config)
        self.size = observation_size(config)
        n, teams = config.num_players, config.num_teams
        self.team_of_seat = config.team_of_seat
        self.seat_steps = np.arange(n)
        self.team_steps = np.arange(teams)

    def encode(self, state: PedroState, viewer: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """(B, D) uint8 observations of ``viewer`` (B,) seats."""
        config, o = self.config, self.offsets
        b, n, teams = state.batch_size, config.num_players, config.num_teams
        if out is None:
            out = np.zeros((b, self.size), dtype=np.uint8)
        else:
            out[:] = 0
        rows = np.arange(b)
        viewer = np.asarray(viewer).astype(np.intp)
        seat_order = (viewer[:, None] + self.seat_steps[None, :]) % n  # (B, n): relative seat -> absolute seat
        my_team = self.team_of_seat[viewer]
        team_order = (my_team[:, None] + self.team_steps[None, :]) % teams  # (B, T)
        rows_col = rows[:, None]

        def relative(seat: np.ndarray) -> np.ndarray:
            return (seat.astype(np.intp) - viewer) % n

        def per_seat(name: str, values: np.ndarray) -> None:
            out[:, o[name]] = values[rows_col, seat_order].reshape(b, -1)

        acting = state.phase < NUM_PHASES
        out[rows[acting], o["phase"].start + state.phase[acting].astype(np.intp)] = 1
        out[:, o["hand"]] = state.hands[rows, viewer]
        _one_hot_seat(out[:, o["dealer"]], rows, relative(state.dealer), np.ones(b, dtype=bool))
        bid_width = config.total_points + 2
        bid_code = state.bids[rows_col, seat_order].astype(np.intp) + 1  # (B, n): 0 not yet, 1 pass, k+1 bid k
        bid_block = out[:, o["bids"]].reshape(b, n, bid_width)
        bid_block[rows_col, self.seat_steps[None, :], bid_code] = 1
        out[:, o["bids"]] = bid_block.reshape(b, -1)
        _one_hot_seat(out[:, o["maker"]], rows, relative(state.maker), state.maker >= 0)
        has_trump = state.trump >= 0
        out[rows[has_trump], o["trump"].start + state.trump[has_trump].astype(np.intp)] = 1
        per_seat("discards", state.discards)
        per_seat("done", state.done)
        per_seat("drawn", state.drawn)
        hand_sizes = state.hands.sum(axis=2, dtype=np.uint8)
        per_seat("hand_sizes", hand_sizes)
        out[:, o["maker_trump_draws"]] = state.maker_trump_draws
        out[:, o["set_aside"]] = state.set_aside
        out[:, o["stock_left"].start] = state.in_stock.sum(axis=1)
        out[:, o["robbing"].start] = state.robbing
        trick = state.trick[rows_col, seat_order]  # (B, n) card or -1
        in_trick = trick >= 0
        trick_block = out[:, o["trick"]].reshape(b, n, 52)
        trick_rows, trick_seats = np.nonzero(in_trick)
        trick_block[trick_rows, trick_seats, trick[trick_rows, trick_seats]] = 1
        out[:, o["trick"]] = trick_block.reshape(b, -1)
        _one_hot_seat(out[:, o["trick_leader"]], rows, relative(state.trick_leader), state.trick_leader >= 0)
        per_seat("played", state.played)
        captured = state.captured[rows_col, team_order]  # (B, T, 52)
        out[:, o["captured"]] = captured.reshape(b, -1)
        out[:, o["tricks_done"].start] = state.tricks_done
        values = self.tables.points[np.maximum(state.trump, 0)]  # (B, 52); no captures before trumps
        out[:, o["points"]] = (captured * values[:, None, :]).sum(axis=2)
        to_go = config.target_score - state.scores[rows_col, team_order]
        out[:, o["to_go"]] = np.clip(to_go, 0, MAX_COUNT)
        out[:, o["target"].start] = min(config.target_score, MAX_COUNT)
        return out

    def encode_full_state(self, state: PedroState, viewer: np.ndarray) -> np.ndarray:
        """(B, D + n*52 + 52) uint8: the observation, every relative seat's hand, the cards still in the stock."""
        b, n = state.batch_size, self.config.num_players
        viewer = np.asarray(viewer).astype(np.intp)
        rows = np.arange(b)
        seat_order = (viewer[:, None] + self.seat_steps[None, :]) % n
        stock_cards = np.zeros((b, 52), dtype=np.uint8)
        stock_rows, stock_cols = np.nonzero(state.in_stock)
        stock_cards[stock_rows, state.stock[stock_rows, stock_cols]] = 1
        hands = state.hands[rows[:, None], seat_order].reshape(b, -1)
        return np.concatenate([self.encode(state, viewer), hands.astype(np.uint8), stock_cards], axis=1)
