"""Decks of the current deal consistent with what one player knows: the deals the OpenSpiel face resamples.

:func:`consistent_deck` draws a deck (52 card ids, top first) for the deal a :class:`SingleGame` is in, such
that dealing it and replaying the deal's decisions reproduces the player's observation exactly:

1. the hidden cards of the other hands now: before the refill the unseen cards shuffled into the other hands
   (their sizes are public) and the stock; after it (in play, or while the dealer robs) a
   :class:`~pedro_env.deal_sampler.HandSampler` draw, exactly uniform among the hands consistent with
   :func:`~pedro_env.knowledge.hidden_cards` (voids shown, the maker's face-up trumps, the trumps the refill
   rules exclude; no belief about the players);
2. which of each hand's cards it drew (a uniform choice among those the refill rules allow: the maker's face-up
   trumps, no trump drawn face down once the maker found none left); the player's own dealt hand is its own;
3. the deck that deals those hands: dealt hands in the dealing order (three at a time from the eldest), the
   draws in the drawing order (eldest to dealer, the maker's face-up trumps first), the dead stock shuffled.

:func:`replay_deal` checks a deck by replaying; :func:`consistent_deck` retries a deck that fails (none should:
tests/test_consistent_decks.py allows no retry). Seats are absolute unless named relative; card sets are Python ints.
"""

from __future__ import annotations

import random

import numpy as np

from pedro_env.cards import set_to_list
from pedro_env.config import PedroConfig
from pedro_env.deal_sampler import HandSampler
from pedro_env.knowledge import hidden_cards
from pedro_env.rules import IllegalActionError
from pedro_env.single_game import SingleGame
from pedro_env.state import PLAY
from pedro_env.view import decode_observations

MAX_TRIES = 100  # decks drawn before giving up on a position (each failure is a bug: the tests expect none)


def dealt_seats(num_players: int, hand_size: int, dealer: int) -> list[int]:
    """The seat each of the first ``num_players * hand_size`` deck positions goes to: three at a time, eldest first
    (as the engine's ``start_deal`` deals)."""
    eldest = (dealer + 1) % num_players
    return [(eldest + (position // 3) % num_players) % num_players for position in range(num_players * hand_size)]


def replay_deal(deal_start: SingleGame, deck: list[int], decisions: bytes) -> SingleGame | None:
    """A copy of ``deal_start`` (a match as its deal began) dealt ``deck`` and stepped through ``decisions`` (the
    deal's actions so far, one byte each); None if a decision is illegal with that deck."""
    match = deal_start.copy()
    match.redeal(deck)
    try:
        for action in decisions:
            match.step(action)
    except IllegalActionError:
        return None
    return match


def consistent_deck(
    match: SingleGame, deal_start: SingleGame, decisions: bytes, own_dealt: int, player: int, rnd: random.Random
) -> tuple[list[int], SingleGame]:
    """A deck for the current deal of ``match`` consistent with ``player``'s knowledge (module docstring) and the
    match replayed with it. ``own_dealt``: the player's dealt hand (int card set); ``decisions``: the deal's actions
    so far; ``deal_start``: the match as the deal began. RuntimeError if no deck fits in MAX_TRIES draws."""
    target = match.observe(player)
    for _ in range(MAX_TRIES):
        deck = _draw_deck(match, own_dealt, player, rnd)
        if deck is None:
            continue
        replayed = replay_deal(deal_start, deck, decisions)
        if replayed is not None and np.array_equal(replayed.observe(player), target):
            return deck, replayed
    raise RuntimeError(f"no deck consistent with player {player}'s view in {MAX_TRIES} draws")


def _draw_deck(match: SingleGame, own_dealt: int, player: int, rnd: random.Random) -> list[int] | None:
    """One deck drawn as the module docstring says (None when a step finds no fit)."""
    state, config = match.state, match.config
    n = config.num_players
    view = decode_observations(match.observe(player), config)
    refilled = bool(view.phase[0] == PLAY or view.robbing[0])
    hands = [0] * n
    hands[player] = int(state.hands[0, player])
    if refilled:
        relative = HandSampler(hidden_cards(view, 0, match.tables)).sample(rnd)
        for rel in range(1, n):
            hands[(player + rel) % n] = relative[rel]
        dead = (int(view.unseen()[0]) & ~sum(relative[1:])) | int(state.set_aside[0])
    else:
        unseen = set_to_list(view.unseen()[0])
        rnd.shuffle(unseen)
        cursor = 0
        for rel in range(1, n):
            size = int(view.hand_sizes[0, rel])
            hands[(player + rel) % n] = sum(1 << card for card in unseen[cursor : cursor + size])
            cursor += size
        dead = sum(1 << card for card in unseen[cursor:])
    discards = [int(cards) for cards in state.discards[0]]
    played = [int(cards) for cards in state.played[0]]
    draws = _draws(match, hands, played, discards, own_dealt, player, rnd) if refilled else [[] for _ in range(n)]
    if draws is None:
        return None
    dealt = [0] * n
    for seat in range(n):
        drawn = sum(1 << card for card in draws[seat])
        dealt[seat] = own_dealt if seat == player else (hands[seat] | played[seat] | discards[seat]) & ~drawn
    return _deck(config, int(state.dealer[0]), dealt, draws, dead, rnd)


def _draws(
    match: SingleGame,
    hands: list[int],
    played: list[int],
    discards: list[int],
    own_dealt: int,
    player: int,
    rnd: random.Random,
) -> list[list[int]] | None:
    """Per seat, the cards it drew from the stock in the order it drew them (the maker's face-up trumps first)."""
    state, config = match.state, match.config
    n = config.num_players
    dealer, maker = int(state.dealer[0]), int(state.maker[0])
    trumps = int(match.tables.trump_set[int(state.trump[0])])
    face_up = set_to_list(state.open_draws[0])
    no_trump_left = config.refill == "maker_sorted" and maker >= 0 and int(state.drawn[0, maker]) > len(face_up)
    draws: list[list[int]] = [[] for _ in range(n)]
    for offset in range(1, n + 1):  # the drawing order: eldest first, the dealer last
        seat = (dealer + offset) % n
        count = int(state.drawn[0, seat])
        held = hands[seat] | played[seat]
        if config.refill == "dealer_robs" and seat == dealer:
            held |= discards[seat]  # the robbing dealer may have thrown a card it robbed
        if seat == player:
            own = held & ~own_dealt
            first = [card for card in face_up if seat == maker]
            draws[seat] = first + [card for card in set_to_list(own) if card not in first]
            continue
        first = face_up if seat == maker and config.refill == "maker_sorted" else []
        choices = set_to_list(held & ~sum(1 << card for card in first))
        after_maker = offset >= (maker - dealer - 1) % n + 1
        if no_trump_left and after_maker:
            choices = [card for card in choices if not trumps >> card & 1]
        if len(choices) < count - len(first):
            return None
        draws[seat] = list(first) + rnd.sample(choices, count - len(first))
    return draws


def _deck(
    config: PedroConfig, dealer: int, dealt: list[int], draws: list[list[int]], dead: int, rnd: random.Random
) -> list[int]:
    """The deck that deals ``dealt`` (per seat), then holds ``draws`` in drawing order and the ``dead`` cards."""
    n = config.num_players
    seats = dealt_seats(n, config.hand_size, dealer)
    cards = {seat: set_to_list(dealt[seat]) for seat in range(n)}
    for seat in range(n):
        rnd.shuffle(cards[seat])
    deck = [cards[seat].pop() for seat in seats]
    for offset in range(1, n + 1):
        deck += draws[(dealer + offset) % n]
    rest = set_to_list(dead)
    rnd.shuffle(rest)
    return deck + rest


def own_dealt_hand(deck: list[int], config: PedroConfig, dealer: int, player: int) -> int:
    """The card set ``player`` was dealt from ``deck``."""
    seats = dealt_seats(config.num_players, config.hand_size, dealer)
    return sum(1 << deck[position] for position, seat in enumerate(seats) if seat == player)
