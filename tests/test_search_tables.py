"""The search agents at every table size (two, three and four players): where the look-ahead's bids do not lean on a
partner, and a seeded strength check against ``rule:heuristic`` in the field format.

Alone (two or three players, or a partner who has already spoken) a player's bid is its side's last in the auction,
and the players after it take the contract over a low bid with the bid needed: the bids searched must reach the one
the model bidder would make, and above it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pedro_env
from agents import make_agent
from agents.search import LookaheadAgent
from arena.match import play_matches
from pedro_env.actions import PASS_ACTION

from conftest import ALL_CARD_NAMES, build_deck

GOOD_HAND = ["AS", "KS", "5S", "3S", "2S", "JD", "9C", "7H", "4H"]  # five spades with both ends: worth a high bid


def table(num_players: int, **overrides: Any) -> dict[str, Any]:
    """Rule overrides of a table of ``num_players`` (three players score ``simple``, the only scoring they allow)."""
    return {"num_players": num_players, **({"scoring": "simple"} if num_players == 3 else {}), **overrides}


def bid_position(overrides: dict[str, Any], dealer: int, before: list[str]) -> tuple[Any, np.ndarray, np.ndarray]:
    """(config, observation, mask) of seat 0 holding GOOD_HAND, to bid after the scripted actions ``before``."""
    n = overrides["num_players"]
    rest = [card for card in ALL_CARD_NAMES if card not in GOOD_HAND]
    hands = {0: GOOD_HAND} | {seat: rest[9 * (seat - 1) : 9 * seat] for seat in range(1, n)}
    env = pedro_env.env(**overrides)
    env.reset(seed=0, options={"dealer": dealer, "decks": [build_deck(hands, dealer=dealer, num_players=n)]})
    for action in before:
        env.step(env.unwrapped.str_to_action(action))
    assert env.agent_selection == "player_0"
    seen = env.observe("player_0")
    return env.unwrapped.config, seen["observation"], seen["action_mask"].astype(bool)


# (players, dealer, the actions before seat 0 speaks, whether a partner of seat 0 is still to speak)
AUCTIONS = [
    (2, 1, [], False),  # eldest, the dealer answers
    (3, 2, [], False),  # eldest, two opponents answer
    (4, 3, [], True),  # eldest, the partner bids third
    (4, 1, ["pass", "pass"], False),  # third, the partner passed: only the dealer answers
]


@pytest.mark.parametrize(
    ("players", "dealer", "before", "partner_to_speak"),
    AUCTIONS,
    ids=["2p-eldest", "3p-eldest", "4p-eldest", "4p-third"],
)
def test_bids_reach_above_the_model_bid_when_no_partner_is_to_speak(
    players: int, dealer: int, before: list[str], partner_to_speak: bool
) -> None:
    """The bids searched run from the bid needed to ``bid_span`` above it, or above the model bidder's own bid when
    no partner is still to speak (the rollouts play a partner as the model bidder, who makes the side's high bid)."""
    config, observation, mask = bid_position(table(players), dealer, before)
    model_bid = int(make_agent("rule:heuristic", config).act(observation, mask[None], np.random.default_rng(0))[0])
    agent = LookaheadAgent(config, samples=2)
    needed = config.min_bid
    assert model_bid > needed + agent.bid_span, "the hand should be worth more than the bids next to the one needed"
    reach = needed if partner_to_speak else model_bid
    expected = [PASS_ACTION, *range(needed, min(config.total_points, reach + agent.bid_span) + 1)]
    assert sorted(agent.action_values(observation, mask)) == expected


@pytest.mark.parametrize("players", [2, 3], ids=["2p", "3p"])
def test_search_full_beats_a_field_of_rule_heuristic(players: int) -> None:
    """A small seeded field-format check (short matches, few worlds): ``search:full`` wins at least its parity share.
    Searching bids only up to four above the bid needed, it won 1 of 16 two-player matches here."""
    config = pedro_env.make_config(**table(players, target_score=31))
    subject = LookaheadAgent(config, samples=10, play_samples=12)
    heuristic = make_agent("rule:heuristic", config)
    lineup = [[subject]] + [[heuristic]] * (players - 1)
    results = play_matches(lineup, config, pairs=8 if players == 2 else 4, seed=0, batch_size=8)
    wins = sum(result.winner == 0 for result in results)
    assert wins >= len(results) / players, f"{wins} of {len(results)} matches"
