"""PedroVectorEnv: a batch plays exactly like separate AEC games, is deterministic, and rewards add up."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pedro_env

from conftest import PASS, random_legal_actions

CONFIGS: dict[str, dict[str, Any]] = {
    "default-to-7": {"target_score": 7},
    "two-players": {"num_players": 2, "target_score": 7},
    "three-players": {"num_players": 3, "scoring": "simple", "target_score": 7, "low": "held"},
    "six-card-redeal": {"six_card": True, "all_pass": "redeal", "target_score": 7},
    "dealer-robs-dom": {"refill": "dealer_robs", "variant": "dom", "target_score": 9},
    "pitch-top": {"variant": "pitch", "refill": "top", "target_score": 3},
    "renege-penalty": {"renege": "penalty", "target_score": 9},
    "episode-deal": {"episode": "deal"},
    "reward-win": {"reward": "win", "target_score": 7},
    "truncated": {"max_deals": 2},
}
SUITS = "CDHS"


def choose_actions(
    mask: np.ndarray, hands: np.ndarray, actor: np.ndarray, phase: np.ndarray, rng: np.random.Generator, renege: bool
) -> np.ndarray:
    """Random legal actions (passing often); with ``renege`` a held illegal card is sometimes played instead."""
    actions = random_legal_actions(mask, rng)
    passes = (mask[:, PASS] == 1) & (rng.random(mask.shape[0]) < 0.6)
    actions = np.where(passes, PASS, actions)
    if renege:
        for game in np.flatnonzero((phase == 3) & (rng.random(mask.shape[0]) < 0.05)):
            held = [c for c in range(52) if int(hands[game, actor[game]]) >> c & 1 and not mask[game, 81 + c]]
            if held:
                actions[game] = 81 + held[int(rng.integers(len(held)))]
    return actions


def vector_deal(deals: dict[str, np.ndarray], game: int) -> dict[str, Any]:
    """A vector env deal summary in the AEC info form (docs/rules.md section 11)."""
    redeal = bool(deals["redeal"][game])
    made, renege, trump = int(deals["made"][game]), int(deals["renege"][game]), int(deals["trump"][game])
    return {
        "redeal": redeal,
        "maker": None if redeal else int(deals["maker"][game]),
        "bid": None if redeal else int(deals["bid"][game]),
        "trump": None if redeal else SUITS[trump],
        "points": [int(p) for p in deals["points"][game]],
        "made": None if made < 0 else bool(made),
        "delta": [int(d) for d in deals["delta"][game]],
        "scores": [int(s) for s in deals["scores"][game]],
        "renege": None if renege < 0 else renege,
    }


@pytest.mark.parametrize("name", list(CONFIGS))
def test_batch_equals_single_games(name: str) -> None:
    config, num_envs, seed, steps = CONFIGS[name], 4, 100, 400
    venv = pedro_env.PedroVectorEnv(num_envs, **config)
    envs = [pedro_env.env(**config) for _ in range(num_envs)]
    for index, env in enumerate(envs):
        env.reset(seed=seed + index)
    out = venv.reset(seed=seed)
    rng = np.random.default_rng(seed)
    n = venv.config.num_players
    episodes = 0
    for step in range(steps + 1):
        for game, env in enumerate(envs):
            where = f"{name} step {step} game {game}"
            agent = env.agent_selection
            assert agent == f"player_{out.actor[game]}", where
            observation = env.observe(agent)
            assert np.array_equal(out.observation[game], observation["observation"]), where
            assert np.array_equal(out.action_mask[game], observation["action_mask"]), where
            assert out.observation.dtype == np.uint8 and out.action_mask.dtype == np.int8
            if not (out.terminated[game] or out.truncated[game]):  # else the rewards close the old episode
                assert out.rewards[game, out.actor[game]] == pytest.approx(env.last()[1]), where
        if step == steps:
            break
        actions = choose_actions(
            out.action_mask, venv.state.hands, out.actor, venv.state.phase, rng, config.get("renege") == "penalty"
        )
        out = venv.step(actions)
        for game, env in enumerate(envs):
            where = f"{name} step {step} game {game}"
            agent = env.agent_selection
            env.step(int(actions[game]))
            info = env.infos[agent]
            assert bool(out.deal_over[game]) == ("deal" in info), where
            if out.deal_over[game]:
                assert vector_deal(out.deals, game) == info["deal"], where
            ended = any(env.terminations.values()) or any(env.truncations.values())
            assert bool(out.terminated[game]) == any(env.terminations.values()), where
            assert bool(out.truncated[game]) == any(env.truncations.values()), where
            if ended:
                # at the end every seat's entry is credited to its last decision
                for seat in range(n):
                    assert out.rewards[game, seat] == pytest.approx(env._cumulative_rewards[f"player_{seat}"]), where
                env.reset()
                episodes += 1
    assert episodes >= 2, "the run should cross match ends (auto-reset)"


def run_vector(config: dict[str, Any], seed: int, steps: int, num_envs: int = 6) -> list[tuple]:
    venv = pedro_env.PedroVectorEnv(num_envs, **config)
    out = venv.reset(seed=seed)
    rng = np.random.default_rng(seed)
    trace = []
    for _ in range(steps):
        actions = random_legal_actions(out.action_mask, rng)
        out = venv.step(actions)
        trace.append(
            (
                actions.copy(),
                out.actor.copy(),
                out.observation.copy(),
                out.action_mask.copy(),
                out.rewards.copy(),
                out.terminated.copy(),
                out.deal_over.copy(),
                {key: value.copy() for key, value in out.deals.items()},
            )
        )
    return trace


def traces_equal(first: list[tuple], second: list[tuple]) -> bool:
    for a, b in zip(first, second, strict=True):
        for x, y in zip(a[:-1], b[:-1]):
            if not np.array_equal(x, y):
                return False
        if a[-1].keys() != b[-1].keys() or not all(np.array_equal(a[-1][k], b[-1][k]) for k in a[-1]):
            return False
    return True


def test_same_seed_same_run() -> None:
    config = {"target_score": 11, "refill": "dealer_robs"}
    assert traces_equal(run_vector(config, 7, 200), run_vector(config, 7, 200))
    assert not traces_equal(run_vector(config, 7, 200), run_vector(config, 8, 200))


def test_games_differ_within_a_batch() -> None:
    venv = pedro_env.PedroVectorEnv(8)
    venv.reset(seed=0)
    hands = {tuple(int(h) for h in venv.state.hands[game]) for game in range(8)}
    assert len(hands) == 8


def credited_rewards(config: dict[str, Any], num_envs: int, steps: int, seed: int) -> tuple[list, Any]:
    """Per finished episode: each seat's total reward (credited as the VectorStep docstring says) and the deals."""
    venv = pedro_env.PedroVectorEnv(num_envs, **config)
    out = venv.reset(seed=seed)
    rng = np.random.default_rng(seed)
    n = venv.config.num_players
    totals = np.zeros((num_envs, n))
    deal_lists: list[list[dict]] = [[] for _ in range(num_envs)]
    episodes = []
    for _ in range(steps):
        out = venv.step(choose_actions(out.action_mask, venv.state.hands, out.actor, venv.state.phase, rng, False))
        for game in range(num_envs):
            if out.deal_over[game]:
                deal_lists[game].append(vector_deal(out.deals, game) | {"winner": int(out.deals["winner"][game])})
            if out.terminated[game] or out.truncated[game]:
                episodes.append((totals[game] + out.rewards[game], deal_lists[game], bool(out.terminated[game])))
                totals[game] = 0
                deal_lists[game] = []
            else:
                totals[game, out.actor[game]] += out.rewards[game, out.actor[game]]
    return episodes, venv.config


@pytest.mark.parametrize(
    "config",
    [
        {"target_score": 5},
        {"num_players": 2, "target_score": 11},
        {"num_players": 3, "scoring": "simple", "target_score": 11},
        {"variant": "sancho", "renege": "penalty", "target_score": 15},
    ],
)
def test_points_rewards_are_zero_sum_and_follow_deltas(config: dict[str, Any]) -> None:
    episodes, resolved = credited_rewards(config, num_envs=6, steps=1500, seed=3)
    assert len(episodes) >= 3
    teams = resolved.num_teams
    for totals, deals, _ in episodes:
        assert totals.sum() == pytest.approx(0.0, abs=1e-4)
        expected = np.zeros(teams)
        for deal in deals:
            delta = np.array(deal["delta"], dtype=float)
            expected += (delta - (delta.sum() - delta) / (teams - 1)) / resolved.total_points
        for seat, total in enumerate(totals):
            assert total == pytest.approx(expected[seat % teams], abs=1e-4)


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_points_rewards_zero_sum_every_deal(num_players: int) -> None:
    env = pedro_env.env(num_players=num_players, scoring="simple", target_score=1000)
    env.reset(seed=num_players)
    rng = np.random.default_rng(num_players)
    teams = env.unwrapped.config.num_teams
    deals = 0
    while deals < 12:
        agent = env.agent_selection
        mask = env.observe(agent)["action_mask"]
        env.step(int(random_legal_actions(mask[None], rng)[0]))
        if "deal" not in env.infos[agent]:
            assert all(reward == 0 for reward in env.rewards.values())
            continue
        deals += 1
        delta = np.array(env.infos[agent]["deal"]["delta"], dtype=float)
        team_reward = (delta - (delta.sum() - delta) / (teams - 1)) / env.unwrapped.config.total_points
        assert sum(env.rewards.values()) == pytest.approx(0.0, abs=1e-5)
        for seat in range(num_players):
            assert env.rewards[f"player_{seat}"] == pytest.approx(team_reward[seat % teams], abs=1e-6)


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_win_rewards_are_plus_minus_one(num_players: int) -> None:
    config = {"num_players": num_players, "scoring": "simple", "reward": "win", "target_score": 7}
    episodes, resolved = credited_rewards(config, num_envs=6, steps=500, seed=4)
    assert len(episodes) >= 3
    for totals, deals, terminated in episodes:
        assert terminated
        winner = deals[-1]["winner"]
        assert winner >= 0
        for seat, total in enumerate(totals):
            assert total == (1.0 if seat % resolved.num_teams == winner else -1.0)


def test_truncation_at_max_deals_gives_no_win_reward() -> None:
    episodes, _ = credited_rewards({"reward": "win", "max_deals": 1}, num_envs=4, steps=200, seed=5)
    truncated = [totals for totals, deals, terminated in episodes if not terminated]
    assert truncated
    for totals in truncated:
        assert np.all(totals == 0.0)


def test_episode_deal_restarts_a_fresh_match() -> None:
    venv = pedro_env.PedroVectorEnv(4, episode="deal")
    out = venv.reset(seed=9)
    rng = np.random.default_rng(9)
    ends = 0
    for _ in range(300):
        out = venv.step(random_legal_actions(out.action_mask, rng))
        assert np.array_equal(out.terminated, out.deal_over)
        for game in np.flatnonzero(out.terminated):
            ends += 1
            assert np.all(venv.state.scores[game] == 0)
            assert int(venv.state.phase[game]) == 0  # bidding of the next episode
    assert ends >= 4


def test_full_state_shape() -> None:
    venv = pedro_env.PedroVectorEnv(3)
    venv.reset(seed=0)
    env = pedro_env.env()
    assert venv.full_state().shape == (3, env.unwrapped.state_space.shape[0])


def step_rows(out: Any, rows: np.ndarray | slice) -> list[Any]:
    """What a VectorStep says about the games ``rows``, for comparing two envs."""
    parts = [out.actor, out.observation, out.action_mask, out.rewards, out.terminated, out.truncated, out.deal_over]
    return [part[rows] for part in parts] + [
        {key: value[rows] for key, value in out.deals.items()} if out.deal_over[rows].any() else None
    ]


def rows_equal(first: list[Any], second: list[Any]) -> bool:
    for x, y in zip(first[:-1], second[:-1], strict=True):
        if not np.array_equal(x, y):
            return False
    deals, other = first[-1], second[-1]
    if deals is None or other is None:
        return deals is None and other is None
    return deals.keys() == other.keys() and all(np.array_equal(deals[key], other[key]) for key in deals)


@pytest.mark.parametrize("name", ["default-to-7", "renege-penalty", "dealer-robs-dom", "reward-win", "truncated"])
def test_selected_games_step_like_the_originals(name: str) -> None:
    config, seed = CONFIGS[name], 31
    venv = pedro_env.PedroVectorEnv(6, **config)
    out = venv.reset(seed=seed)
    rng = np.random.default_rng(seed)
    renege = config.get("renege") == "penalty"

    def actions_for(env: Any, out: Any) -> np.ndarray:
        return choose_actions(out.action_mask, env.state.hands, out.actor, env.state.phase, rng, renege)

    # select right after a step that ended a deal, so rewards not yet credited and deal flags travel along
    for _ in range(2000):
        out = venv.step(actions_for(venv, out))
        if out.deal_over[[4, 1]].any():
            break
    assert out.deal_over[[4, 1]].any()
    games = np.array([4, 1, 3])
    selected = venv.select(games)
    assert selected.num_envs == 3 and selected.config == venv.config
    current = selected.current_step()
    for part, original in zip(step_rows(current, slice(None))[:3], step_rows(out, games)[:3], strict=True):
        assert np.array_equal(part, original)  # actor, observation, mask
    going_on = ~(out.terminated | out.truncated)[games]  # an ended episode's rewards went with its end
    assert np.array_equal(current.rewards[going_on], out.rewards[games][going_on])
    assert np.all(current.rewards[~going_on] == 0.0)
    assert not (current.terminated.any() or current.truncated.any() or current.deal_over.any())

    ends = 0
    for step in range(600):
        actions = actions_for(venv, out)
        out = venv.step(actions)
        mine = selected.step(actions[games])
        assert rows_equal(step_rows(mine, slice(None)), step_rows(out, games)), f"{name} step {step}"
        ends += int((out.terminated | out.truncated)[games].sum())
    assert ends >= 1, "the run should cross a match end (auto-reset)"
    # the copy is independent: the original's state is not shared
    assert not np.shares_memory(selected.state.hands, venv.state.hands)


def test_select_checks_its_games() -> None:
    venv = pedro_env.PedroVectorEnv(3)
    with pytest.raises(RuntimeError, match="reset"):
        venv.select(np.array([0]))
    venv.reset(seed=0)
    with pytest.raises(ValueError, match="0..2"):
        venv.select(np.array([3]))
    with pytest.raises(ValueError, match="at least one"):
        venv.select(np.zeros(0, dtype=np.intp))


@pytest.mark.parametrize("name", ["default-to-7", "renege-penalty", "six-card-redeal"])
def test_restore_continues_exactly_after_a_deal_end(name: str) -> None:
    config, seed = CONFIGS[name], 5
    venv = pedro_env.PedroVectorEnv(4, **config)
    out = venv.reset(seed=seed)
    rng = np.random.default_rng(seed)
    renege = config.get("renege") == "penalty"
    while not out.deal_over.any():  # snapshot right after a deal ended: its rewards and flags are in the state
        out = venv.step(choose_actions(out.action_mask, venv.state.hands, out.actor, venv.state.phase, rng, renege))
    restored = pedro_env.PedroVectorEnv(4, **config)
    again = restored.restore(venv.snapshot())
    for part, original in zip(step_rows(again, slice(None))[:3], step_rows(out, slice(None))[:3], strict=True):
        assert np.array_equal(part, original)  # actor, observation, mask
    for step in range(300):
        actions = choose_actions(out.action_mask, venv.state.hands, out.actor, venv.state.phase, rng, renege)
        out = venv.step(actions)
        again = restored.step(actions)
        assert rows_equal(step_rows(again, slice(None)), step_rows(out, slice(None))), f"{name} step {step}"
