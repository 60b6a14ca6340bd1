"""The decks the OpenSpiel face resamples (pedro_env/consistent_decks.py): at random points of random matches over
rule sets and table sizes, the first deck drawn always replays to the player's exact view (no retry is needed), and
the other players' hidden hands vary from deck to deck instead of following the true ones."""

from __future__ import annotations

import random

import numpy as np
import pytest

from pedro_env import consistent_decks
from pedro_env.consistent_decks import consistent_deck, own_dealt_hand
from pedro_env.single_game import SingleGame
from pedro_env.state import PLAY

RULE_SETS = [
    {},
    {"num_players": 2, "target_score": 21},
    {"num_players": 3, "scoring": "simple", "target_score": 21},
    {"variant": "sancho", "refill": "dealer_robs"},
    {"num_players": 3, "scoring": "simple", "refill": "dealer_robs", "target_score": 21},
    {"refill": "top", "variant": "pitch", "all_pass": "redeal", "renege": "penalty"},
    {"num_players": 2, "six_card": True, "target_score": 21},
]
IDS = [",".join(f"{key}={value}" for key, value in rules.items()) or "default" for rules in RULE_SETS]


class DealRecord:
    """A match played at random with what consistent_deck needs of its current deal: the match as the deal began,
    the deal's decisions so far (one byte each) and every seat's dealt hand (int card sets)."""

    def __init__(self, rules: dict, seed: int) -> None:
        self.match = SingleGame(max_deals=3, **rules)
        self.match.reset(seed=seed)
        self._begin_deal()

    def _begin_deal(self) -> None:
        self.deal_start, self.decisions = self.match.copy(), b""
        self.dealt = [int(hand) for hand in self.match.state.hands[0]]

    def step(self, action: int) -> None:
        self.match.step(action)
        self.decisions += bytes([action])
        if self.match.deal_ended and not self.match.over:
            self._begin_deal()

    def resample(self, player: int, rnd: random.Random) -> tuple[list[int], SingleGame]:
        return consistent_deck(self.match, self.deal_start, self.decisions, self.dealt[player], player, rnd)


@pytest.mark.parametrize("rules", RULE_SETS, ids=IDS)
def test_the_first_deck_drawn_replays_to_the_players_view(rules: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(consistent_decks, "MAX_TRIES", 1)  # a deck that needs a retry raises
    rnd, checked = random.Random(5), 0
    for seed in range(3):
        record = DealRecord(rules, seed)
        while not record.match.over:
            if rnd.random() < 0.3:
                player = rnd.randrange(record.match.config.num_players)
                deck, replayed = record.resample(player, rnd)
                dealer = int(record.match.state.dealer[0])
                assert own_dealt_hand(deck, record.match.config, dealer, player) == record.dealt[player]
                assert np.array_equal(replayed.observe(player), record.match.observe(player))
                checked += 1
            record.step(rnd.choice(record.match.legal_actions()))
    assert checked > 30


@pytest.mark.parametrize("rules", RULE_SETS[:3], ids=IDS[:3])
def test_the_other_hands_vary_from_deck_to_deck(rules: dict) -> None:
    """At the first bid and the first play of a deal, each other seat with at least three cards the player cannot
    know gets many different hands over 30 decks, and its true hand in few of them."""
    rnd = random.Random(8)
    record = DealRecord(rules, seed=2)
    n = record.match.config.num_players
    looked = 0
    while not record.match.over and looked < 2:
        state = record.match.state
        if not record.decisions or (state.phase[0] == PLAY and not state.played[0].any()):
            player = record.match.actor
            samples = [record.resample(player, rnd)[1].state.hands[0] for _ in range(30)]
            for seat in range(n):
                true_hand, known = int(state.hands[0, seat]), int(state.open_draws[0])
                if seat == player or (true_hand & ~known).bit_count() < 3:
                    continue
                hands = [int(hands_now[seat]) for hands_now in samples]
                assert len(set(hands)) >= 15 and hands.count(true_hand) <= 5, (seat, hands.count(true_hand))
            assert all(int(hands_now[player]) == int(state.hands[0, player]) for hands_now in samples)
            looked += 1
        record.step(rnd.choice(record.match.legal_actions()))
    assert looked == 2
