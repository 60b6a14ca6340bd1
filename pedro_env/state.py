"""The batched game state: one dataclass of numpy arrays, every field with a leading batch axis ``B``.

Seats are absolute (``0 .. n-1`` clockwise); teams are ``seat % num_teams``. Cards are ids ``0 .. 51``
and sets of cards are ``uint64`` bit sets (see :mod:`pedro_env.cards`). ``n`` = players,
``T`` = teams, ``S`` = stock size of the config. The engine (:mod:`pedro_env.rules`) updates a state in
place; :meth:`PedroState.copy` snapshots one.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import IntEnum

import numpy as np

from pedro_env.config import PedroConfig


class Phase(IntEnum):
    """What the acting player decides now (plain ints BID..OVER below are the same values, for hot paths)."""

    BID = 0  # pass or bid
    TRUMP = 1  # the maker names trumps
    DISCARD = 2  # discard one card or say done (also the dealer's discard after robbing the pack)
    PLAY = 3  # play a card to the trick
    OVER = 4  # the episode ended (match won, truncated, or a one-deal episode done); no one acts


BID, TRUMP, DISCARD, PLAY, OVER = 0, 1, 2, 3, 4
NUM_PHASES = 4  # phases in which someone acts

NOT_BID = -1  # bids[b, seat] before the seat has spoken
PASS = 0  # bids[b, seat] after a pass


@dataclass
class PedroState:
    """State of ``B`` independent matches. Field comments give shape, dtype and meaning."""

    # --- randomness and counters ---
    seed: np.ndarray  # (B,) uint64: the game's seed; decks and first dealers are hashes of (seed, match, deal)
    match_index: np.ndarray  # (B,) int64: matches started on this seed (0 for the first)
    deal_index: np.ndarray  # (B,) int32: deals started in this match, thrown-in ones included (0 for the first)
    # --- whose turn ---
    phase: np.ndarray  # (B,) int8: a Phase
    actor: np.ndarray  # (B,) int8: seat to act (meaningless when phase is OVER)
    dealer: np.ndarray  # (B,) int8: seat dealing this deal
    # --- cards ---
    hands: np.ndarray  # (B, n) uint64: card set each seat holds
    stock: np.ndarray  # (B, S) int8: the stock's cards, top first
    in_stock: np.ndarray  # (B, S) bool: stock[b, i] has not been drawn yet
    # --- bidding ---
    bids: np.ndarray  # (B, n) int8: NOT_BID, PASS or the bid 1..total
    high_bid: np.ndarray  # (B,) int8: highest bid so far, 0 for none
    maker: np.ndarray  # (B,) int8: high bidder's seat, -1 for none
    trump: np.ndarray  # (B,) int8: trump suit 0..3, -1 before it is named
    # --- discard and draw (all public) ---
    discards: np.ndarray  # (B, n) uint64: card set each seat discarded face up
    done: np.ndarray  # (B, n) bool: seat has said done in this deal's discard round
    drawn: np.ndarray  # (B, n) int8: cards each seat drew from the stock (the robbed pack for the dealer)
    open_draws: np.ndarray  # (B,) uint64: trumps the maker drew face up (refill maker_sorted)
    set_aside: np.ndarray  # (B,) uint64: trumps left in the stock after the refill, turned face up
    robbing: np.ndarray  # (B,) bool: the dealer is discarding down to 6 after robbing the pack
    # --- play ---
    trick: np.ndarray  # (B, n) int8: card each seat played to the current trick, -1 for none yet
    trick_leader: np.ndarray  # (B,) int8: seat that led the current trick
    trick_size: np.ndarray  # (B,) int8: cards in the current trick
    tricks_done: np.ndarray  # (B,) int8: tricks completed this deal, 0..6
    last_trick: np.ndarray  # (B, n) int8: cards of the last completed trick by seat, -1 before the first
    last_trick_winner: np.ndarray  # (B,) int8: its winner's seat, -1 before the first
    played: np.ndarray  # (B, n) uint64: card set each seat played this deal (current trick included)
    voids: np.ndarray  # (B, n) uint8: bit s set = the seat has shown it holds no card of effective suit s this deal
    won: np.ndarray  # (B, T) uint64: cards in the completed tricks each team won
    low_team: np.ndarray  # (B,) int8: team holding the 2 of trumps when play began, -1 if out of play
    # --- match ---
    scores: np.ndarray  # (B, T) int32: cumulative match score per team
    # --- what the last step did (valid until the next step) ---
    deal_over: np.ndarray  # (B,) bool: a deal ended (scored or thrown in) during the last step
    last_redeal: np.ndarray  # (B,) bool: that deal was thrown in (all passed, all_pass=redeal)
    last_maker: np.ndarray  # (B,) int8: its maker seat, -1 for none
    last_bid: np.ndarray  # (B,) int8: its winning bid, 0 for none
    last_trump: np.ndarray  # (B,) int8: its trump suit, -1 for none
    last_points: np.ndarray  # (B, T) int16: points each team captured in it
    last_made: np.ndarray  # (B,) int8: 1 made, 0 set, -1 no bid (thrown in)
    last_delta: np.ndarray  # (B, T) int32: score change per team
    last_renege: np.ndarray  # (B,) int8: team that reneged, -1 for none
    rewards: np.ndarray  # (B, n) float32: reward each seat earned during the last step
    terminated: np.ndarray  # (B,) bool: the episode ended with a result during the last step
    truncated: np.ndarray  # (B,) bool: the episode was cut off at max_deals during the last step
    winner: np.ndarray  # (B,) int8: winning team of a finished match, -1 otherwise

    def __post_init__(self) -> None:
        """Copy the given arrays into one buffer, each field a contiguous block of it (see :func:`state_layout`)."""
        given = {name: np.asarray(self.__dict__.pop("_given_" + name)) for name in _FIELD_SPECS}
        b, n, teams, stock = (
            given["phase"].shape[0],
            given["hands"].shape[1],
            given["won"].shape[1],
            given["stock"].shape[1],
        )
        layout = state_layout(b, n, teams, stock)
        _bind(self, np.zeros(layout.size, dtype=np.uint8), layout)
        for name, dtype, shape, _, _ in layout.fields:
            if given[name].shape != shape:
                raise ValueError(f"state field {name} has shape {given[name].shape}, expected {shape}")
            self.__dict__[name][...] = given[name].astype(dtype, copy=False)

    def __setattr__(self, name: str, value: object) -> None:
        if name in _FIELD_SPECS and "_buffer" not in self.__dict__:  # the dataclass __init__: keep until packed
            self.__dict__["_given_" + name] = value
        elif name in _FIELD_SPECS and value is not self.__dict__[name]:  # (``state.x += 1`` sets x to itself)
            raise AttributeError(
                f"state field {name} is a view of the state buffer: write into it (state.{name}[...] = x)"
            )
        else:
            object.__setattr__(self, name, value)

    def __reduce__(self) -> tuple:
        return _from_buffer, (self._buffer, *self._layout.dims)

    @property
    def batch_size(self) -> int:
        return int(self.phase.shape[0])

    @property
    def buffer(self) -> np.ndarray:
        """(bytes,) uint8: every field's data; the kernels read and write the state through it."""
        return self._buffer

    @property
    def element_offsets(self) -> np.ndarray:
        """(fields,) int64: where each field's block starts in :attr:`buffer`, in elements of the field's dtype
        (every block starts at a multiple of 8 bytes), in field order: what the kernels index with."""
        return self._layout.element_offsets

    def copy(self) -> PedroState:
        """A deep copy (the engine mutates states in place)."""
        return _from_buffer(self._buffer.copy(), *self._layout.dims)

    def select(self, games: np.ndarray | slice) -> PedroState:
        """A copy holding only the given games (index array or slice along the batch axis)."""
        return PedroState(**{f.name: getattr(self, f.name)[games] for f in fields(self)})

    @staticmethod
    def empty(config: PedroConfig, batch_size: int) -> PedroState:
        """Zeroed arrays of the right shapes and dtypes; :func:`pedro_env.rules.new_match` fills them."""
        layout = state_layout(batch_size, config.num_players, config.num_teams, config.stock_size)
        state = _from_buffer(np.zeros(layout.size, dtype=np.uint8), *layout.dims)
        for no_seat_yet in (state.last_maker, state.last_trump, state.last_made, state.last_renege, state.winner):
            no_seat_yet[:] = -1
        return state


# field -> (dtype, trailing axis: "" none, "n" seats, "T" teams, "S" stock positions), in PedroState order
_FIELD_SPECS: dict[str, tuple[type, str]] = {
    "seed": (np.uint64, ""),
    "match_index": (np.int64, ""),
    "deal_index": (np.int32, ""),
    "phase": (np.int8, ""),
    "actor": (np.int8, ""),
    "dealer": (np.int8, ""),
    "hands": (np.uint64, "n"),
    "stock": (np.int8, "S"),
    "in_stock": (np.bool_, "S"),
    "bids": (np.int8, "n"),
    "high_bid": (np.int8, ""),
    "maker": (np.int8, ""),
    "trump": (np.int8, ""),
    "discards": (np.uint64, "n"),
    "done": (np.bool_, "n"),
    "drawn": (np.int8, "n"),
    "open_draws": (np.uint64, ""),
    "set_aside": (np.uint64, ""),
    "robbing": (np.bool_, ""),
    "trick": (np.int8, "n"),
    "trick_leader": (np.int8, ""),
    "trick_size": (np.int8, ""),
    "tricks_done": (np.int8, ""),
    "last_trick": (np.int8, "n"),
    "last_trick_winner": (np.int8, ""),
    "played": (np.uint64, "n"),
    "voids": (np.uint8, "n"),
    "won": (np.uint64, "T"),
    "low_team": (np.int8, ""),
    "scores": (np.int32, "T"),
    "deal_over": (np.bool_, ""),
    "last_redeal": (np.bool_, ""),
    "last_maker": (np.int8, ""),
    "last_bid": (np.int8, ""),
    "last_trump": (np.int8, ""),
    "last_points": (np.int16, "T"),
    "last_made": (np.int8, ""),
    "last_delta": (np.int32, "T"),
    "last_renege": (np.int8, ""),
    "rewards": (np.float32, "n"),
    "terminated": (np.bool_, ""),
    "truncated": (np.bool_, ""),
    "winner": (np.int8, ""),
}
assert list(_FIELD_SPECS) == [f.name for f in fields(PedroState)]
FIELD_INDEX = {name: index for index, name in enumerate(_FIELD_SPECS)}
"""Field name -> its index in field order: the kernels' ``F_*`` and the state's element offsets follow it."""


@dataclass(frozen=True)
class StateLayout:
    """Where each field of a batch of states lies in its buffer: blocks in field order, each 8-byte aligned."""

    dims: tuple[int, int, int, int]  # (B, n, T, S)
    fields: tuple[tuple[str, np.dtype, tuple[int, ...], int, int], ...]  # (name, dtype, shape, start, bytes)
    element_offsets: np.ndarray  # (fields,) int64: each block's start in elements of its field's dtype
    size: int  # bytes in all


_LAYOUTS: dict[tuple[int, int, int, int], StateLayout] = {}


def state_layout(batch_size: int, num_players: int, num_teams: int, stock_size: int) -> StateLayout:
    """The buffer layout of ``batch_size`` games of a config's sizes (cached)."""
    dims = (batch_size, num_players, num_teams, stock_size)
    layout = _LAYOUTS.get(dims)
    if layout is None:
        trailing = {"": (), "n": (num_players,), "T": (num_teams,), "S": (stock_size,)}
        entries, start = [], 0
        for name, (dtype, axis) in _FIELD_SPECS.items():
            shape = (batch_size, *trailing[axis])
            nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
            entries.append((name, np.dtype(dtype), shape, start, nbytes))
            start += -(-nbytes // 8) * 8
        element_offsets = np.array([entry[3] // entry[1].itemsize for entry in entries], dtype=np.int64)
        element_offsets.setflags(write=False)
        layout = _LAYOUTS[dims] = StateLayout(dims, tuple(entries), element_offsets, max(start, 8))
    return layout


def _bind(state: PedroState, buffer: np.ndarray, layout: StateLayout) -> None:
    """Point every field of ``state`` at its block of ``buffer``."""
    state.__dict__["_buffer"] = buffer
    state.__dict__["_layout"] = layout
    for name, dtype, shape, start, nbytes in layout.fields:
        state.__dict__[name] = buffer[start : start + nbytes].view(dtype).reshape(shape)


def _from_buffer(buffer: np.ndarray, batch_size: int, num_players: int, num_teams: int, stock_size: int) -> PedroState:
    """A state whose fields are views of ``buffer`` (not copied)."""
    state = object.__new__(PedroState)
    _bind(state, buffer, state_layout(batch_size, num_players, num_teams, stock_size))
    return state
