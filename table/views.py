"""The table as JSON: one seat's view of a game (or every hand open), the decisions, the deal summaries.

Everything here reads a :class:`pedro_env.single_game.SingleGame`: its state (a batch of one) and its
legal moves; nothing decides a rule. Layouts (docs/table.md): cards are two-character strings
(``AH``), actions docs/rules.md section 11's text form, seats absolute, teams ``seat % num_teams``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pedro_env.actions import action_to_str
from pedro_env.cards import CARD_NAMES, SUITS, RuleTables, set_to_list
from pedro_env.render import sorted_cards
from pedro_env.single_game import SingleGame
from pedro_env.state import NOT_BID, PASS, PLAY, Phase

PHASE_NAMES = {Phase.BID: "bid", Phase.TRUMP: "trump", Phase.DISCARD: "discard", Phase.PLAY: "play", Phase.OVER: "over"}


def _names(cards: list[int]) -> list[str]:
    return [CARD_NAMES[card] for card in cards]


def table_view(game: SingleGame, viewer: int | None, deals: list[dict[str, Any]], over: bool = False) -> dict[str, Any]:
    """The table of ``game`` as seat ``viewer`` sees it (None: every hand open), ``deals`` the summaries
    of the deals played so far (:func:`deal_summary`); ``over`` ends a match the engine has not ended (a
    resignation). Keys as docs/table.md's ``View``, one expression each (hence the length)."""
    config, state = game.config, game.started("table_view")
    tables = RuleTables.for_variant(config.variant)
    n, over = config.num_players, over or game.over
    phase = int(state.phase[0])
    trump = int(state.trump[0])
    actor = None if over or phase == Phase.OVER else int(state.actor[0])
    hands = [set_to_list(state.hands[0, seat]) for seat in range(n)]
    leader = int(state.trick_leader[0])
    trick = []
    if phase == PLAY:
        for offset in range(int(state.trick_size[0])):
            seat = (leader + offset) % n
            trick.append({"seat": seat, "card": CARD_NAMES[int(state.trick[0, seat])]})
    last_winner = int(state.last_trick_winner[0])
    last_trick = None
    if last_winner >= 0 and phase == PLAY:
        cards = [{"seat": seat, "card": CARD_NAMES[int(card)]} for seat, card in enumerate(state.last_trick[0])]
        last_trick = {"cards": cards, "winner": last_winner}
    won = [set_to_list(state.won[0, team]) for team in range(config.num_teams)]
    values = tables.points[max(trump, 0)]
    discards = [set_to_list(state.discards[0, seat]) for seat in range(n)]
    set_aside = set_to_list(state.set_aside[0])
    stock = [int(card) for card, left in zip(state.stock[0], state.in_stock[0]) if left]
    sees_actor = actor is not None and viewer in (None, actor)
    winner = int(state.winner[0])
    return {
        "viewer": viewer,
        "deal": int(state.deal_index[0]) + 1,
        "dealer": int(state.dealer[0]),
        "phase": PHASE_NAMES[Phase.OVER if over else Phase(phase)],
        "actor": actor,
        "hands": [
            _names(sorted_cards(cards, trump, tables)) if viewer in (None, seat) else None
            for seat, cards in enumerate(hands)
        ],
        "hand_sizes": [len(cards) for cards in hands],
        "bids": [None if bid == NOT_BID else "pass" if bid == PASS else int(bid) for bid in state.bids[0].tolist()],
        "high_bid": int(state.high_bid[0]),
        "maker": None if state.maker[0] < 0 else int(state.maker[0]),
        "trump": SUITS[trump] if trump >= 0 else None,
        "discards": [_names(cards) for cards in discards],
        "drawn": [int(count) for count in state.drawn[0]],
        "out_of_play": _names(sorted(sum(discards, []) + set_aside)),
        "stock": _names(stock) if viewer is None else None,
        "stock_size": len(stock),
        "trick": trick,
        "last_trick": last_trick,
        "tricks_done": int(state.tricks_done[0]),
        "won": [_names(cards) for cards in won],
        "points_won": [int(values[np.array(cards, dtype=int)].sum()) if trump >= 0 else 0 for cards in won],
        "scores": [int(score) for score in state.scores[0]],
        "legal": [action_to_str(action) for action in game.legal_actions()] if sees_actor else [],
        "deals": list(deals),
        "over": over,
        "winner": winner if over and winner >= 0 else None,
    }


def deal_summary(number: int, info: dict[str, Any]) -> dict[str, Any]:
    """The env's ``"deal"`` info of the ``number``-th deal (1 = the first) with its number: redeal, maker, bid,
    trump, made, points, delta, scores (per team), renege."""
    return {"number": number, **info}


def decision_entry(game: SingleGame, index: int, action: int) -> dict[str, Any]:
    """Decision ``index``: who acts in ``game`` now, the ``action`` they take, and where in the match it falls
    (deal from 1; trick from 0 in the play, -1 before it). Read before the action is stepped."""
    state = game.started("decision_entry")
    in_play = int(state.phase[0]) == PLAY
    return {
        "index": index,
        "seat": int(state.actor[0]),
        "action": action_to_str(action),
        "deal": int(state.deal_index[0]) + 1,
        "trick": int(state.tricks_done[0]) if in_play else -1,
        "thoughts": None,
    }
