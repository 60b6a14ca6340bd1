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

    @property
    def batch_size(self) -> int:
        return int(self.phase.shape[0])

    def copy(self) -> PedroState:
        """A deep copy (the engine mutates states in place)."""
        return PedroState(**{f.name: getattr(self, f.name).copy() for f in fields(self)})

    def select(self, games: np.ndarray | slice) -> PedroState:
        """A copy holding only the given games (index array or slice along the batch axis)."""
        return PedroState(**{f.name: getattr(self, f.name)[games].copy() for f in fields(self)})

    @staticmethod
    def empty(config: PedroConfig, batch_size: int) -> PedroState:
        """Zeroed arrays of the right shapes and dtypes; :func:`pedro_env.rules.new_match` fills them."""
        n, teams, stock = config.num_players, config.num_teams, config.stock_size
        b = batch_size

        def z(shape: tuple[int, ...], dtype: type) -> np.ndarray:
            return np.zeros((b, *shape), dtype=dtype)

        state = PedroState(
            seed=z((), np.uint64),
            match_index=z((), np.int64),
            deal_index=z((), np.int32),
            phase=z((), np.int8),
            actor=z((), np.int8),
            dealer=z((), np.int8),
            hands=z((n,), np.uint64),
            stock=z((stock,), np.int8),
            in_stock=z((stock,), bool),
            bids=z((n,), np.int8),
            high_bid=z((), np.int8),
            maker=z((), np.int8),
            trump=z((), np.int8),
            discards=z((n,), np.uint64),
            done=z((n,), bool),
            drawn=z((n,), np.int8),
            open_draws=z((), np.uint64),
            set_aside=z((), np.uint64),
            robbing=z((), bool),
            trick=z((n,), np.int8),
            trick_leader=z((), np.int8),
            trick_size=z((), np.int8),
            tricks_done=z((), np.int8),
            last_trick=z((n,), np.int8),
            last_trick_winner=z((), np.int8),
            played=z((n,), np.uint64),
            voids=z((n,), np.uint8),
            won=z((teams,), np.uint64),
            low_team=z((), np.int8),
            scores=z((teams,), np.int32),
            deal_over=z((), bool),
            last_redeal=z((), bool),
            last_maker=z((), np.int8),
            last_bid=z((), np.int8),
            last_trump=z((), np.int8),
            last_points=z((teams,), np.int16),
            last_made=z((), np.int8),
            last_delta=z((teams,), np.int32),
            last_renege=z((), np.int8),
            rewards=z((n,), np.float32),
            terminated=z((), bool),
            truncated=z((), bool),
            winner=z((), np.int8),
        )
        for no_seat_yet in (state.last_maker, state.last_trump, state.last_made, state.last_renege, state.winner):
            no_seat_yet[:] = -1
        return state
