"""The table as JSON: one seat's view of a game (or every hand open), the decisions, the deal summaries.

Everything here reads the engine's state (:class:`pedro_env.state.PedroState`, batch of one) and the
env's legal moves; nothing decides a rule. Layouts (docs/table.md): cards are two-character strings
(``AH``), actions docs/rules.md section 11's text form, seats absolute, teams ``seat % num_teams``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pedro_env.actions import action_to_str
from pedro_env.aec import raw_env
from pedro_env.cards import CARD_NAMES, SUITS, RuleTables, set_to_list
from pedro_env.render import sorted_cards
from pedro_env.state import NOT_BID, PASS, PLAY, Phase

PHASE_NAMES = {Phase.BID: "bid", Phase.TRUMP: "trump", Phase.DISCARD: "discard", Phase.PLAY: "play", Phase.OVER: "over"}


def _names(cards: list[int]) -> list[str]:
    return [CARD_NAMES[card] for card in cards]


def is_over(env: raw_env) -> bool:
    """Whether the env's match has ended (won, truncated, or a one-deal episode done)."""
    agent = env.agent_selection
    return bool(env.terminations.get(agent) or env.truncations.get(agent))


def table_view(env: raw_env, viewer: int | None, deals: list[dict[str, Any]], over: bool = False) -> dict[str, Any]:
    """The table of ``env``'s game as seat ``viewer`` sees it (None: every hand open), ``deals`` the summaries
    of the deals played so far (:func:`deal_summary`); ``over`` ends a match the engine has not ended (a
    resignation). Keys as docs/table.md's ``View``, one expression each (hence the length)."""
    game, config = env.game, env.config
    assert game is not None
    tables = RuleTables.for_variant(config.variant)
    n, over = config.num_players, over or is_over(env)
    phase = int(game.phase[0])
    trump = int(game.trump[0])
    actor = None if over or phase == Phase.OVER else int(game.actor[0])
    hands = [set_to_list(game.hands[0, seat]) for seat in range(n)]
    leader = int(game.trick_leader[0])
    trick = []
    if phase == PLAY:
        for offset in range(int(game.trick_size[0])):
            seat = (leader + offset) % n
            trick.append({"seat": seat, "card": CARD_NAMES[int(game.trick[0, seat])]})
    last_winner = int(game.last_trick_winner[0])
    last_trick = None
    if last_winner >= 0 and phase == PLAY:
        cards = [{"seat": seat, "card": CARD_NAMES[int(card)]} for seat, card in enumerate(game.last_trick[0])]
        last_trick = {"cards": cards, "winner": last_winner}
    won = [set_to_list(game.won[0, team]) for team in range(config.num_teams)]
    values = tables.points[max(trump, 0)]
    discards = [set_to_list(game.discards[0, seat]) for seat in range(n)]
    set_aside = set_to_list(game.set_aside[0])
    stock = [int(card) for card, left in zip(game.stock[0], game.in_stock[0]) if left]
    sees_actor = actor is not None and viewer in (None, actor)
    winner = int(game.winner[0])
    return {
        "viewer": viewer,
        "deal": int(game.deal_index[0]) + 1,
        "dealer": int(game.dealer[0]),
        "phase": PHASE_NAMES[Phase.OVER if over else Phase(phase)],
        "actor": actor,
        "hands": [
            _names(sorted_cards(cards, trump, tables)) if viewer in (None, seat) else None
            for seat, cards in enumerate(hands)
        ],
        "hand_sizes": [len(cards) for cards in hands],
        "bids": [None if bid == NOT_BID else "pass" if bid == PASS else int(bid) for bid in game.bids[0].tolist()],
        "high_bid": int(game.high_bid[0]),
        "maker": None if game.maker[0] < 0 else int(game.maker[0]),
        "trump": SUITS[trump] if trump >= 0 else None,
        "discards": [_names(cards) for cards in discards],
        "drawn": [int(count) for count in game.drawn[0]],
        "out_of_play": _names(sorted(sum(discards, []) + set_aside)),
        "stock": _names(stock) if viewer is None else None,
        "stock_size": len(stock),
        "trick": trick,
        "last_trick": last_trick,
        "tricks_done": int(game.tricks_done[0]),
        "won": [_names(cards) for cards in won],
        "points_won": [int(values[np.array(cards, dtype=int)].sum()) if trump >= 0 else 0 for cards in won],
        "scores": [int(score) for score in game.scores[0]],
        "legal": [action_to_str(action) for action in env.legal_actions()] if sees_actor else [],
        "deals": list(deals),
        "over": over,
        "winner": winner if over and winner >= 0 else None,
    }


def deal_summary(number: int, info: dict[str, Any]) -> dict[str, Any]:
    """The env's ``"deal"`` info of the ``number``-th deal (1 = the first) with its number: redeal, maker, bid,
    trump, made, points, delta, scores (per team), renege."""
    return {"number": number, **info}


def decision_entry(env: raw_env, index: int, action: int) -> dict[str, Any]:
    """Decision ``index``: who acts in ``env`` now, the ``action`` they take, and where in the match it falls
    (deal from 1; trick from 0 in the play, -1 before it). Read before the action is stepped."""
    game = env.game
    assert game is not None
    in_play = int(game.phase[0]) == PLAY
    return {
        "index": index,
        "seat": int(game.actor[0]),
        "action": action_to_str(action),
        "deal": int(game.deal_index[0]) + 1,
        "trick": int(game.tricks_done[0]) if in_play else -1,
        "thoughts": None,
    }
