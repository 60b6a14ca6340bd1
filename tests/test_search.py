"""search:pimc: one set of play rules, sound and satisfied sampling constraints, legal and reproducible play."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

import pedro_env
from agents import make_agent
from agents.search import HandSampler, hidden_cards, play_tables
from pedro_env.rules import rule_tables
from pedro_env.state import PLAY
from pedro_env.tricks import legal_plays, trick_winner
from pedro_env.view import decode_observations

CONFIGS: dict[str, dict[str, Any]] = {
    "default": {},
    "two-players": {"num_players": 2},
    "three-players": {"num_players": 3, "scoring": "simple"},
    "sancho-robs": {"variant": "sancho", "refill": "dealer_robs"},
    "pitch-six-card": {"variant": "pitch", "six_card": True},
    "dom-top-held": {"variant": "dom", "refill": "top", "low": "held"},
    "renege-penalty": {"renege": "penalty"},
}


@pytest.mark.parametrize("variant", ["cinch", "sancho", "dom", "pitch"])
def test_move_generator_and_trick_winner_agree_with_the_engine(variant: str) -> None:
    tables, engine = play_tables(variant), rule_tables(pedro_env.make_config(variant=variant))
    rng = np.random.default_rng(1)
    for _ in range(300):
        deck = rng.permutation(52)
        hand = sum(1 << int(c) for c in deck[:8])
        trump = int(rng.integers(4))
        led = -1 if rng.random() < 0.2 else int(deck[8])
        mine = tables.legal_plays(hand, trump, led)
        theirs = legal_plays(np.array([hand], np.uint64), np.array([trump]), np.array([led]), engine)[0]
        assert mine == int(theirs)
        trick = [int(c) for c in deck[10:14]]
        leader = int(rng.integers(4))
        expected = trick_winner(np.array([trick], np.int8), np.array([leader]), np.array([trump]), engine)[0]
        assert tables.trick_winner(trick, leader, trump) == int(expected)


def play_positions(config: dict[str, Any], steps: int = 400, games: int = 16):
    """Observations and true states of acting games in the play phase, from random play."""
    venv = pedro_env.PedroVectorEnv(games, **config)
    result = venv.reset(seed=3)
    rng = np.random.default_rng(3)
    for _ in range(steps):
        state = venv.state
        playing = np.flatnonzero(state.phase == PLAY)
        if playing.size:
            yield venv.config, result.observation[playing], state.select(playing)
        noise = rng.random(result.action_mask.shape) * result.action_mask
        result = venv.step(noise.argmax(axis=1))


@pytest.mark.parametrize("name", list(CONFIGS))
def test_constraints_hold_for_the_true_hands_and_every_sample(name: str) -> None:
    checked = 0
    for config, observations, state in play_positions(CONFIGS[name], steps=200):
        view = decode_observations(observations, config)
        tables = play_tables(config.variant)
        n = config.num_players
        for game in range(view.batch_size)[:4]:
            hidden = hidden_cards(view, game, tables)
            actor = int(state.actor[game])
            true_hands = [0] + [int(state.hands[game, (actor + seat) % n]) for seat in range(1, n)]
            assert hidden.violations(true_hands) == [], "an inference contradicts the real deal"
            rnd = random.Random(game)
            for _ in range(3):
                assert hidden.violations(HandSampler(hidden).sample(rnd)) == []
            checked += 1
    assert checked > 20


@pytest.mark.parametrize("name", list(CONFIGS))
def test_pimc_plays_legally_in_every_config(name: str) -> None:
    venv = pedro_env.PedroVectorEnv(6, **CONFIGS[name])
    agent = make_agent("search:pimc,samples=2,depth=1", venv.config)
    result = venv.reset(seed=11)
    rng = np.random.default_rng(11)
    plays = 0
    for _ in range(120):
        actions = agent.act(result.observation, result.action_mask, rng)
        assert result.action_mask[np.arange(6), actions].all()
        plays += int((venv.state.phase == PLAY).sum())
        result = venv.step(actions)  # raises on an illegal action
    assert plays > 50


def test_pimc_is_reproducible_with_a_seed() -> None:
    config = pedro_env.make_config()
    venv = pedro_env.PedroVectorEnv(8)
    result = venv.reset(seed=3)
    rng = np.random.default_rng(3)
    for _ in range(60):
        noise = rng.random(result.action_mask.shape) * result.action_mask
        result = venv.step(noise.argmax(axis=1))
    observations, masks = result.observation, result.action_mask
    first = make_agent("search:pimc,samples=4,depth=2", config).act(observations, masks, np.random.default_rng(5))
    second = make_agent("search:pimc,samples=4,depth=2", config).act(observations, masks, np.random.default_rng(5))
    assert np.array_equal(first, second)
