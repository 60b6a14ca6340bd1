"""What the agents think of a decision of a recorded match: a policy's action probabilities and value, and
the search's value of each legal action, both from the acting seat's information only.

The search values are deal values in points (the team's score change less the opponents', the
search agents' objective): ``search:pimc``'s mean over sampled deals for a card to play,
``search:full``'s look-ahead for a bid, trump or discard (``search:pimc`` bids, names trumps and
discards with the rule agent, which has no values). A decision is a mistake when the chosen action's
value is :data:`MISTAKE_POINTS` or more below the best. Search agents keep caches, so the analyst
holds its own, one search at a time (a lock); waiting requests sit in the server's thread pool and
block no other session.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from agents import Agent, AgentSpecError, make_agent
from arena.replay import MatchRecord, replay_steps
from pedro_env.actions import action_to_str, str_to_action
from pedro_env.config import PedroConfig
from pedro_env.single_game import SingleGame
from pedro_env.state import PLAY
from table.roster import Roster, UnknownAgentError

MISTAKE_POINTS = 1.0  # a chosen action this many deal points below the best is marked
TOP_ACTIONS = 5  # a policy's most probable actions shown


def positions(record: MatchRecord) -> Iterator[tuple[int, SingleGame]]:
    """``(k, game)`` for every decision ``k`` of ``record`` with the game as it stands before it (the record's
    last yield is the end of the match, ``k == len(record.actions)``)."""
    for index, (game, _, _) in enumerate(replay_steps(record)):
        yield index, game


def position(record: MatchRecord, decision: int) -> SingleGame:
    """The game before decision ``decision`` of ``record`` (0 <= decision <= len(actions))."""
    for index, game in positions(record):
        if index == decision:
            return game
    raise IndexError(decision)


class Analyst:
    """Policy thoughts and search values of decisions, for games of any config (agents built per config)."""

    def __init__(self, roster: Roster) -> None:
        self.roster = roster
        self._search_lock = threading.Lock()
        self._searchers: dict[tuple[str, PedroConfig], Agent] = {}

    def policy_thoughts(self, game: SingleGame, name: str) -> dict[str, Any]:
        """The policy ``name``'s thoughts at the acting seat of ``game``: ``{"agent", "top", "value"}``."""
        agent = self.roster.build(name, game.config)
        return agent.decision_thoughts(game.observe(game.actor), game.mask_bytes.copy(), TOP_ACTIONS)

    def search_values(self, game: SingleGame, chosen: str | None, seed: int) -> dict[str, Any] | None:
        """The search's value of each action it weighs at the acting seat of ``game`` (``chosen``, if legal, among
        them), best first: ``{"agent", "values": [[action, value]], "best", "chosen", "loss"}``; None with a single
        legal action. ``seed`` fixes the play search's samples."""
        observation, mask = game.observe(game.actor), game.mask_bytes.copy()
        if int(mask.sum()) < 2:
            return None
        in_play = int(game.started("search_values").phase[0]) == PLAY
        spec = "search:pimc" if in_play else "search:full"
        with self._search_lock:
            searcher = self._searcher(spec, game.config)
            if in_play:
                values = searcher.action_values(observation, mask, np.random.default_rng(seed))
            else:
                include = (str_to_action(chosen),) if chosen is not None else ()
                values = searcher.action_values(observation, mask, include=include)
        ranked = sorted(values.items(), key=lambda item: -item[1])
        best = action_to_str(ranked[0][0]) if ranked else None
        loss = None
        if chosen is not None and ranked and str_to_action(chosen) in values:
            loss = round(ranked[0][1] - values[str_to_action(chosen)], 3)
        return {
            "agent": spec,
            "values": [[action_to_str(action), round(value, 3)] for action, value in ranked],
            "best": best,
            "chosen": chosen,
            "loss": loss,
        }

    def _searcher(self, spec: str, config: PedroConfig) -> Any:
        key = (spec, config)
        if key not in self._searchers:
            self._searchers[key] = make_agent(spec, config)
        return self._searchers[key]


def analyse(
    analyst: Analyst,
    record: MatchRecord,
    decision: int,
    policy: str | None,
    search: bool,
    players: list[str],
) -> dict[str, Any]:
    """docs/table.md's ``Analysis`` of decision ``decision`` of ``record``: the recorded thoughts of a policy that
    moved there, else ``policy``'s (default: the mover's own if it is a policy on the roster, else the first
    policy on the roster that plays this table size; none when no policy does) computed now; the search values when
    ``search``. UnknownAgentError or AgentSpecError when the policy named cannot be built (the default's failure
    leaves ``policy`` None)."""
    game = position(record, decision)
    seat = game.actor
    chosen = record.actions[decision] if decision < len(record.actions) else None
    answer: dict[str, Any] = {
        "decision": decision,
        "seat": seat,
        "chosen": chosen,
        "legal": [action_to_str(action) for action in game.legal_actions()],
        "policy": None,
        "search": None,
    }
    recorded = record.thoughts[decision] if decision < len(record.thoughts) else None
    if recorded is not None and policy in (None, recorded["agent"]):
        answer["policy"] = {**recorded, "recorded": True}
    else:
        mover = players[seat] if seat < len(players) else ""
        names = analyst.roster.policy_names(game.config.num_players)
        name = policy or (mover if mover in names else names[0] if names else None)
        if name is not None:
            try:
                answer["policy"] = {**analyst.policy_thoughts(game, name), "recorded": False}
            except (UnknownAgentError, AgentSpecError):
                if policy is not None:
                    raise  # the client named it: the table answers why it cannot play (422)
                # the default policy cannot read these rules (or its file no longer loads): no policy's view
    if search:
        answer["search"] = analyst.search_values(game, chosen, seed=decision)
    return answer


def scan(analyst: Analyst, record: MatchRecord, seats: set[int] | None = None) -> dict[str, Any]:
    """Search values of every decision with a choice (of ``seats``, default all): ``{"marks": [{"decision", "seat",
    "action", "best", "loss"}], "scanned", "values": {decision: search answer}}``; marks where the loss is
    :data:`MISTAKE_POINTS` or more."""
    marks, values = [], {}
    for index, game in positions(record):
        if index >= len(record.actions):
            break
        seat = game.actor
        if seats is not None and seat not in seats:
            continue
        found = analyst.search_values(game, record.actions[index], seed=index)
        if found is None:
            continue
        values[index] = found
        if found["loss"] is not None and found["loss"] >= MISTAKE_POINTS:
            marks.append(
                {
                    "decision": index,
                    "seat": seat,
                    "action": found["chosen"],
                    "best": found["best"],
                    "loss": found["loss"],
                }
            )
    return {"marks": marks, "scanned": len(values), "values": values}
