"""Engine states consistent with one player's view, before play: the worlds the look-ahead search plays out.

:func:`sample_worlds` turns one game of a :class:`~pedro_env.view.PublicView` in the bid, trump or
discard phase into ``count`` complete :class:`~pedro_env.state.PedroState` games (batch axis = the
worlds) in which the viewer sits at absolute seat ``0``: relative seats become absolute ones, so
the viewer's team is team ``0``. Everything public is copied from the view; the cards the viewer
has not seen are dealt at random to the other hands (their sizes are public) and to the stock (in a
random order).

Beliefs, each from public facts only:

- the ``kept_trumps`` belief of :func:`pedro_env.knowledge.hidden_cards`, in the discard
  phase: a player who said done while the reservation rule still allowed another discard (or who
  discarded a trump) kept only trumps, so its kept cards are drawn from the unseen trumps first
  (when too few trumps are unseen the belief is dropped for that world);
- ``infer`` (:func:`auction_weights`): each world is weighted by how well a model player (the
  rule-based bidder) explains the bids and passes already made, so strong bids make strong hands
  more likely (exactly so against players who bid like the model, as ``search:pimc`` does).
"""

from __future__ import annotations

import numpy as np

from agents.base import Agent
from pedro_env.actions import PASS_ACTION
from pedro_env.cards import CARD_BIT, NO_CARDS, RuleTables
from pedro_env.config import PedroConfig
from pedro_env.encoding import ObservationEncoder
from pedro_env.knowledge import _kept_trump_counts, _unseen
from pedro_env.observation_layout import to_go_cap
from pedro_env.rules import legal_action_mask
from pedro_env.state import BID, DISCARD, NOT_BID, PedroState
from pedro_env.view import PublicView


def _card_ids(card_set: int) -> np.ndarray:
    """(k,) int8 ids of the members of an int card set, ascending."""
    return np.array([card for card in range(52) if card_set >> card & 1], dtype=np.int8)


def _set_of(cards: np.ndarray) -> np.uint64:
    return np.bitwise_or.reduce(CARD_BIT[cards], initial=NO_CARDS) if cards.size else NO_CARDS


def unseen_before_play(view: PublicView, game: int) -> int:
    """Cards of game ``game`` the viewer has not seen (before play: its hand and the discards are all it saw)."""
    return _unseen(view, game)


def kept_trump_floors(view: PublicView, game: int, tables: RuleTables) -> list[int]:
    """Per relative seat, the trumps its hand must hold under the ``kept_trumps`` belief (0 where it says
    nothing): only seats that have said done in this discard round, and never the viewer."""
    n = view.config.num_players
    if view.phase[game] != DISCARD or view.config.six_card:
        return [0] * n
    trumps = int(tables.trump_set[int(view.trump[game])])
    counts = _kept_trump_counts(view, game, trumps)
    return [counts[seat] if seat > 0 and view.done[game, seat] else 0 for seat in range(n)]


def sample_worlds(
    view: PublicView, game: int, config: PedroConfig, count: int, rng: np.random.Generator
) -> tuple[PedroState, int]:
    """``count`` engine states consistent with game ``game`` of ``view`` (phase BID, TRUMP or DISCARD), the
    viewer at seat 0 and to act; and how many of them had to drop the ``kept_trumps`` belief.

    ``config`` is the config the worlds are played under (the view's, usually with ``episode="deal"``).
    """
    n, stock_size = config.num_players, config.stock_size
    tables = RuleTables.for_variant(config.variant)
    unseen = _card_ids(unseen_before_play(view, game))
    sizes = [int(x) for x in view.hand_sizes[game]]
    stock_left = int(view.stock_left[game])
    if sum(sizes[1:]) + stock_left != unseen.size:
        raise ValueError(
            f"the view's hand sizes {sizes[1:]} and stock ({stock_left}) do not add up to "
            f"its {unseen.size} unseen cards"
        )
    floors = kept_trump_floors(view, game, tables)
    trump = int(view.trump[game])
    unseen_trump = tables.is_trump[trump, unseen] if trump >= 0 else np.zeros(unseen.size, dtype=bool)

    state = PedroState.empty(config, count)
    hands = np.zeros((count, n), dtype=np.uint64)
    hands[:, 0] = view.hand[game]
    stock = np.zeros((count, stock_size), dtype=np.int8)
    in_stock = np.zeros((count, stock_size), dtype=bool)
    in_stock[:, stock_size - stock_left :] = True  # drawn positions come first: the stock is drawn top first
    relaxed = 0
    believing = [seat for seat in range(1, n) if floors[seat] > 0]
    for world in range(count):
        order = unseen[rng.permutation(unseen.size)]
        rest = _place_kept_trumps(order, unseen, unseen_trump, believing, floors, hands[world]) if believing else order
        if rest is None:  # too few unseen trumps for the belief: dealt without it
            relaxed += 1
            rest = order
        cursor = 0
        for seat in range(1, n):
            need = sizes[seat] - int(np.bitwise_count(hands[world, seat]))
            hands[world, seat] |= _set_of(rest[cursor : cursor + need])
            cursor += need
        stock[world, stock_size - stock_left :] = rest[cursor:]

    state.hands[:] = hands
    state.stock[:] = stock
    state.in_stock[:] = in_stock
    copy_public(state, view, game, config)
    state.trick[:] = -1
    state.trick_leader[:] = -1
    state.low_team[:] = -1
    return state, relaxed


def _place_kept_trumps(
    order: np.ndarray,
    unseen: np.ndarray,
    unseen_trump: np.ndarray,
    believing: list[int],
    floors: list[int],
    hands: np.ndarray,
) -> np.ndarray | None:
    """Give each seat of ``believing`` its ``floors[seat]`` kept trumps, the first unseen trumps of the shuffled
    ``order`` in turn, into ``hands`` (n,) uint64; returns the cards of ``order`` left to deal, or None (nothing
    placed) when the unseen trumps are too few for the belief."""
    trump_positions = np.flatnonzero(unseen_trump[np.searchsorted(unseen, order)])
    if sum(floors[seat] for seat in believing) > trump_positions.size:
        return None
    placed = np.zeros(order.size, dtype=bool)
    used = 0
    for seat in believing:
        chosen = trump_positions[used : used + floors[seat]]
        used += floors[seat]
        placed[chosen] = True
        hands[seat] = _set_of(order[chosen])
    return order[~placed]


def copy_public(state: PedroState, view: PublicView, game: int, config: PedroConfig) -> None:
    """Write game ``game``'s public facts of ``view`` into every game of ``state`` (relative seats become absolute:
    the viewer sits at seat 0, to act), the match score from ``to_go``; the last trick is not in a view (-1)."""
    state.phase[:] = view.phase[game]
    state.actor[:] = 0
    state.dealer[:] = view.dealer[game]
    state.bids[:] = view.bids[game]
    state.high_bid[:] = max(0, int(view.bids[game].max()))
    state.maker[:] = view.maker[game]
    state.trump[:] = view.trump[game]
    state.discards[:] = view.discards[game]
    state.done[:] = view.done[game]
    state.drawn[:] = view.drawn[game]
    state.open_draws[:] = view.open_draws[game]
    state.set_aside[:] = view.set_aside[game]
    state.robbing[:] = view.robbing[game]
    state.last_trick[:] = -1
    state.last_trick_winner[:] = -1
    state.scores[:] = config.target_score - np.minimum(view.to_go[game], to_go_cap(config)).astype(np.int32)


def auction_start(worlds: PedroState, dealt: np.ndarray) -> PedroState:
    """A copy of ``worlds`` as their deal began: ``dealt`` (W, n) uint64 hands, nobody has spoken, the stock whole."""
    auction = worlds.copy()
    auction.hands[:] = dealt
    auction.phase[:] = BID
    auction.trump[:] = -1
    auction.discards[:] = NO_CARDS
    auction.done[:] = False
    auction.drawn[:] = 0
    auction.robbing[:] = False
    auction.in_stock[:] = True
    auction.bids[:] = NOT_BID
    return auction


def auction_weights(
    worlds: PedroState, view: PublicView, game: int, config: PedroConfig, model: Agent, strictness: float
) -> np.ndarray:
    """(W,) float weights of the worlds: ``strictness ** mismatches``, where a spoken seat adds 1 to the
    mismatches when the model bidder, with that world's hand, would have passed where it bid or bid where it
    passed, and 0.5 when it would have bid another amount; ``strictness`` 1 weighs every world alike."""
    weights = np.ones(worlds.batch_size)
    if strictness >= 1.0 or view.robbing[game]:  # the robbing dealer's opponents hold draws: no hand as dealt
        return weights
    n = config.num_players
    tables = RuleTables.for_variant(config.variant)
    encoder = ObservationEncoder(config, tables)
    dealer = int(view.dealer[game])
    bids = [int(x) for x in view.bids[game]]
    # the hands as dealt: the discards go back where they came from (the viewer's own hand matters to nobody)
    auction = auction_start(worlds, worlds.hands | view.discards[game][None, :])
    high, maker = 0, -1
    mismatches = np.zeros(worlds.batch_size)
    for offset in range(1, n + 1):  # eldest first, the dealer last
        seat = (dealer + offset) % n
        if bids[seat] == NOT_BID:
            break
        if seat != 0:
            auction.actor[:] = seat
            auction.high_bid[:] = high
            auction.maker[:] = maker
            observations = encoder.encode(auction, np.full(worlds.batch_size, seat))
            masks = legal_action_mask(auction, config, tables)
            modelled = model.act(observations, masks, np.random.default_rng(0))
            passed, modelled_pass = bids[seat] == PASS_ACTION, modelled == PASS_ACTION
            mismatches += np.where(modelled_pass != passed, 1.0, np.where(modelled != bids[seat], 0.5, 0.0))
        auction.bids[:, seat] = bids[seat]
        if bids[seat] > high:
            high, maker = bids[seat], seat
    return strictness**mismatches


def play_worlds(view: PublicView, game: int, config: PedroConfig, deals: list[list[int]]) -> PedroState:
    """Engine states of game ``game`` of ``view`` in the play phase, one per sampled deal (``deals[w][seat]``: the
    int card set of relative seat ``seat``, seat 0 ignored: the viewer holds its own hand), the viewer at seat 0
    and to act. The unseen cards no hand holds make the dead stock. Everything public is copied from the view."""
    n, stock_size = config.num_players, config.stock_size
    tables = RuleTables.for_variant(config.variant)
    count = len(deals)
    hands = np.array([[int(view.hand[game])] + [int(h) for h in deal[1:n]] for deal in deals], dtype=np.uint64)
    unseen = np.uint64(_unseen(view, game))
    dead = unseen & ~np.bitwise_or.reduce(hands[:, 1:], axis=1)
    stock_left = int(view.stock_left[game])
    state = PedroState.empty(config, count)
    state.hands[:] = hands
    for world in range(count):
        cards = _card_ids(int(dead[world]))[:stock_left]
        state.stock[world, stock_size - cards.size :] = cards
        state.in_stock[world, stock_size - stock_left :] = True
    copy_public(state, view, game, config)
    trump = int(view.trump[game])
    state.trick[:] = view.trick[game]
    state.trick_leader[:] = view.trick_leader[game]
    state.trick_size[:] = int((view.trick[game] >= 0).sum())
    state.tricks_done[:] = view.tricks_done[game]
    state.played[:] = view.played[game]
    state.voids[:] = view.voids[game]
    state.won[:] = view.won[game]
    low = np.uint64(1) << np.uint64(int(tables.low_card[trump]))
    at_play_start = hands | view.played[game][None, :]
    state.low_team[:] = -1
    for world in range(count):
        seats = np.flatnonzero(at_play_start[world] & low)
        if seats.size:
            state.low_team[world] = config.team_of_seat[seats[0]]
    return state
