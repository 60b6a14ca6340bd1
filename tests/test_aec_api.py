"""PettingZoo's own conformance suites on the AEC env, plus render, state and space checks."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from pettingzoo.test import api_test, render_test, seed_test

import pedro_env

from conftest import cards_of, random_legal_actions

# api_test warns that a Dict observation space is unusual; it is PettingZoo's own action-mask convention
pytestmark = [
    pytest.mark.filterwarnings("ignore:Observation space for each agent probably should be"),
    pytest.mark.filterwarnings("ignore:Observation is not a NumPy array"),
]

CONFIGS: dict[str, dict[str, Any]] = {
    "default": {},
    "default-to-11": {"target_score": 11},
    "two-players": {"num_players": 2, "target_score": 11},
    "three-players-simple": {"num_players": 3, "scoring": "simple", "target_score": 11},
    "six-card": {"six_card": True, "target_score": 11},
    "dealer-robs": {"refill": "dealer_robs", "target_score": 11},
    "sancho": {"variant": "sancho", "target_score": 21},
    "renege-penalty": {"renege": "penalty", "target_score": 11},
    "episode-deal": {"episode": "deal"},
    "reward-win": {"reward": "win", "target_score": 11},
    "truncated": {"max_deals": 2},
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_pettingzoo_api(name: str) -> None:
    # api_test probes reset(options={"options": 1}); the env warns that it ignores that key
    with pytest.warns(UserWarning, match="ignoring unknown reset option"):
        api_test(pedro_env.env(**CONFIGS[name]), num_cycles=200)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_pettingzoo_seed(name: str) -> None:
    seed_test(lambda: pedro_env.env(**CONFIGS[name]), num_cycles=200)


def test_reset_with_seed_repeats_the_match() -> None:
    env = pedro_env.env()
    first = []
    for _ in range(2):
        env.reset(seed=123)
        rng = np.random.default_rng(0)
        trace = []
        for _ in range(150):
            observation = env.observe(env.agent_selection)
            action = int(random_legal_actions(observation["action_mask"][None], rng)[0])
            trace.append((env.agent_selection, observation["observation"].tobytes(), action))
            env.step(action)
        if first:
            assert trace == first
        first = trace
    env.reset(seed=124)
    other_start = (env.agent_selection, env.observe(env.agent_selection)["observation"].tobytes())
    assert other_start != first[0][:2]


def test_render_ansi_shows_scores_and_hands() -> None:
    env = pedro_env.env(render_mode="ansi")
    env.reset(seed=3)
    text = env.render()
    assert isinstance(text, str)
    assert "Scores" in text
    game = env.unwrapped.game
    from pedro_env.cards import card_to_str, set_to_list

    for seat in range(4):
        for card in set_to_list(game.hands[0, seat]):
            assert card_to_str(card) in text
    rng = np.random.default_rng(1)
    while not env.infos[env.agent_selection].get("deal"):
        mask = env.observe(env.agent_selection)["action_mask"]
        env.step(int(random_legal_actions(mask[None], rng)[0]))
    scores = env.infos[env.agent_selection]["deal"]["scores"]
    text = env.render()
    score_line = next(line for line in text.splitlines() if line.startswith("Scores"))
    assert [int(value) for value in re.findall(r"\) (-?\d+)", score_line)] == scores


def test_pettingzoo_render() -> None:
    render_test(
        lambda render_mode=None: pedro_env.env(render_mode=render_mode),
        custom_tests={"ansi": lambda text: "Scores" in text and "Bids" in text},
    )


def test_render_human_prints(capsys: pytest.CaptureFixture[str]) -> None:
    env = pedro_env.env(render_mode="human")
    env.reset(seed=3)
    assert env.render() is None
    assert "Scores" in capsys.readouterr().out


def test_render_without_mode_returns_none() -> None:
    env = pedro_env.env()
    env.reset(seed=3)
    assert env.render() is None


@pytest.mark.parametrize("name", ["default", "two-players", "three-players-simple", "dealer-robs"])
def test_state_matches_state_space(name: str) -> None:
    env = pedro_env.env(**CONFIGS[name])
    env.reset(seed=5)
    unwrapped = env.unwrapped
    rng = np.random.default_rng(5)
    for _ in range(60):
        state = unwrapped.state()
        assert state.shape == unwrapped.state_space.shape
        assert unwrapped.state_space.contains(state)
        # the full state starts with the acting agent's observation
        observation = env.observe(env.agent_selection)["observation"]
        assert np.array_equal(state[: observation.size], observation)
        # then a hand for each of 4 seats, from the actor clockwise (0s past the table's seats), then the stock
        game, n, actor = unwrapped.game, unwrapped.config.num_players, int(unwrapped.game.actor[0])
        hidden = state[observation.size :].reshape(5, 52)
        for relative in range(n):
            assert list(np.flatnonzero(hidden[relative])) == cards_of(game.hands[0, (actor + relative) % n])
        assert not hidden[n:4].any()
        assert list(np.flatnonzero(hidden[4])) == sorted(int(c) for c in game.stock[0][game.in_stock[0]])
        mask = env.observe(env.agent_selection)["action_mask"]
        env.step(int(random_legal_actions(mask[None], rng)[0]))


@pytest.mark.parametrize("name", ["default", "two-players", "three-players-simple", "sancho", "dealer-robs"])
def test_observations_in_space_and_masks_only_for_the_actor(name: str) -> None:
    env = pedro_env.env(**CONFIGS[name])
    env.reset(seed=8)
    rng = np.random.default_rng(8)
    for _ in range(200):
        if any(env.terminations.values()) or any(env.truncations.values()):
            env.reset()
        for agent in env.agents:
            observation = env.observe(agent)
            assert env.observation_space(agent).contains(observation)
            assert observation["observation"].dtype == np.uint8 and observation["action_mask"].dtype == np.int8
            assert observation["action_mask"].any() == (agent == env.agent_selection)
        mask = env.observe(env.agent_selection)["action_mask"]
        assert sorted(env.unwrapped.legal_actions()) == list(np.flatnonzero(mask))
        env.step(int(random_legal_actions(mask[None], rng)[0]))


def test_agents_and_spaces() -> None:
    for n in (2, 3, 4):
        env = pedro_env.env(num_players=n, scoring="simple")
        env.reset(seed=0)
        assert env.possible_agents == [f"player_{seat}" for seat in range(n)]
        assert env.agents == env.possible_agents
        for agent in env.agents:
            assert env.action_space(agent).n == 133
            assert env.observation_space(agent)["action_mask"].shape == (133,)


def test_order_enforcement_matches_pettingzoos_wrapper() -> None:
    """env()'s order enforcement (its own agent_iter, last and step) keeps PettingZoo's errors and results."""
    from pettingzoo.utils.wrappers import OrderEnforcingWrapper

    ours, theirs = pedro_env.env(), OrderEnforcingWrapper(pedro_env.raw_env())
    assert isinstance(ours, OrderEnforcingWrapper)
    for env in (ours, theirs):
        with pytest.raises(AttributeError, match="agent_selection cannot be accessed before reset"):
            env.last()
        with pytest.raises(AssertionError, match=r"reset\(\) needs to be called before step"):
            env.step(0)
        with pytest.raises(AssertionError, match=r"reset\(\) needs to be called before agent_iter"):
            env.agent_iter()
    traces = []
    for env in (ours, theirs):
        env.reset(seed=5, options={"dealer": 1})
        rng, trace = np.random.default_rng(3), []
        for agent in env.agent_iter(max_iter=600):
            observation, reward, termination, truncation, info = env.last()
            action = None
            if not (termination or truncation):
                action = int(random_legal_actions(observation["action_mask"][None], rng)[0])
            trace.append((agent, observation["observation"].tobytes(), reward, termination, truncation, str(info)))
            env.step(action)
        traces.append(trace)
        iterator = iter(env.agent_iter())
        if env.agents:
            next(iterator)
            with pytest.raises(AssertionError, match="need to call step"):
                next(iterator)
    assert traces[0] == traces[1] and len(traces[0]) > 100
