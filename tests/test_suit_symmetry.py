"""Suit symmetry: a deal with its suits relabelled (colour pairs kept) plays alike, so the relabelled
observations and masks are the originals moved by ``relabelled_observation_entries`` and ``relabelled_actions``
(what the search distillation's augmentation relies on, docs/training.md)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pedro_env
from pedro_env.actions import PLAY_OFFSET, TRUMP_OFFSET, action_to_str, relabelled_actions
from pedro_env.cards import CARD_NAMES, SAME_COLOUR_SUIT, SUIT_SYMMETRIES, relabelled_cards, str_to_card
from pedro_env.config import make_config
from pedro_env.observation_layout import observation_offsets, relabelled_observation_entries

CONFIGS: dict[str, dict[str, Any]] = {
    "cinch": {"target_score": 21},
    "sancho-dealer-robs": {"refill": "dealer_robs", "variant": "sancho", "target_score": 21},
    "three-players-dom": {"num_players": 3, "scoring": "simple", "target_score": 21, "variant": "dom"},
}


def test_the_symmetries_are_the_eight_colour_preserving_relabellings() -> None:
    assert SUIT_SYMMETRIES.shape == (8, 4)
    assert len({tuple(row) for row in SUIT_SYMMETRIES}) == 8
    assert list(SUIT_SYMMETRIES[0]) == [0, 1, 2, 3]
    for suit_map in SUIT_SYMMETRIES:
        assert sorted(suit_map) == [0, 1, 2, 3]
        for suit in range(4):
            assert suit_map[SAME_COLOUR_SUIT[suit]] == SAME_COLOUR_SUIT[suit_map[suit]]


def test_relabelled_cards_and_actions_move_with_their_suit() -> None:
    swap_reds = np.array([0, 2, 1, 3])  # diamonds <-> hearts
    cards = relabelled_cards(swap_reds)
    assert CARD_NAMES[cards[str_to_card("5D")]] == "5H" and CARD_NAMES[cards[str_to_card("AS")]] == "AS"
    actions = relabelled_actions(swap_reds)
    assert sorted(actions) == list(range(len(actions)))
    assert action_to_str(actions[PLAY_OFFSET + str_to_card("JH")]) == "play JD"
    assert action_to_str(actions[TRUMP_OFFSET + 1]) == "trump H"
    assert action_to_str(actions[0]) == "pass" and action_to_str(actions[5]) == "bid 5"


def test_relabelled_observation_entries_are_a_permutation_that_moves_only_cards_and_suits() -> None:
    config = make_config()
    offsets = observation_offsets(config)
    for suit_map in SUIT_SYMMETRIES:
        entries = relabelled_observation_entries(config, suit_map)
        assert sorted(entries) == list(range(len(entries)))
        for name in ("phase", "bids", "points", "to_go", "hand_sizes"):
            where = offsets[name]
            assert list(entries[where]) == list(range(where.start, where.stop))


def _random_deck(rng: np.random.Generator) -> list[str]:
    return [CARD_NAMES[card] for card in rng.permutation(52)]


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("symmetry", range(1, 8))
def test_a_relabelled_deal_observes_and_allows_the_relabelled_entries(name: str, symmetry: int) -> None:
    settings = CONFIGS[name]
    config = make_config(**settings)
    suit_map = SUIT_SYMMETRIES[symmetry]
    entries = relabelled_observation_entries(config, suit_map)
    actions = relabelled_actions(suit_map)
    cards = relabelled_cards(suit_map)
    rng = np.random.default_rng(symmetry)
    decks = [_random_deck(rng) for _ in range(3)]
    relabelled_decks = [[CARD_NAMES[cards[str_to_card(card)]] for card in deck] for deck in decks]
    original, relabelled = pedro_env.env(**settings), pedro_env.env(**settings)
    original.reset(seed=0, options={"dealer": 1, "decks": decks})
    relabelled.reset(seed=0, options={"dealer": 1, "decks": relabelled_decks})
    deals = 0
    for _ in range(400):
        seen, seen_relabelled = original.observe(original.agent_selection), relabelled.observe(original.agent_selection)
        assert relabelled.agent_selection == original.agent_selection
        observation = np.empty_like(seen["observation"])
        observation[entries] = seen["observation"]
        np.testing.assert_array_equal(seen_relabelled["observation"], observation)
        mask = np.empty_like(seen["action_mask"])
        mask[actions] = seen["action_mask"]
        np.testing.assert_array_equal(seen_relabelled["action_mask"], mask)
        action = int(rng.choice(np.flatnonzero(seen["action_mask"])))
        agent = original.agent_selection
        original.step(action)
        relabelled.step(int(actions[action]))
        deals += "deal" in original.infos[agent]
        if deals == len(decks) or all(original.terminations.values()):
            break
    assert deals >= 1
