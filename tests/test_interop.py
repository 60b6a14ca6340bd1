"""Interop with what users bring: Stable-Baselines3, sb3-contrib's MaskablePPO, Gymnasium's checkers and vector API."""

from __future__ import annotations

import functools
import warnings
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gymnasium_check_env
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import benchmarks.gym_vector as gym_vector_benchmark
import pedro_env
import pedro_env.gym_vector as gym_vector
from pedro_env.actions import PLAY_OFFSET
from pedro_env.gym import PedroGymEnv, RenderModeError
from pedro_env.gym_vector import PedroGymVectorEnv

SHORT = {"target_score": 11, "max_deals": 4}  # short matches, so episodes end and restart within a few hundred steps


class FirstLegalAgent:
    """A batched agent playing each game's lowest legal action (deterministic, so two envs can be compared)."""

    name = "first-legal"

    def __init__(self) -> None:
        self.calls, self.largest_batch = 0, 0

    def act(self, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        self.calls += 1
        self.largest_batch = max(self.largest_batch, len(action_masks))
        return np.argmax(action_masks, axis=1).astype(np.int64)


def first_legal_policy(observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator) -> int:
    """FirstLegalAgent as a single-env opponent policy."""
    return int(np.flatnonzero(action_mask)[0])


def chosen_by_view(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """(B,) a legal action per game picked by a hash of its observation: deterministic, yet varied."""
    actions = np.zeros(len(masks), dtype=np.int64)
    for game, (observation, mask) in enumerate(zip(observations, masks)):
        legal = np.flatnonzero(mask)
        actions[game] = legal[int(observation.astype(np.int64).sum()) % legal.size]
    return actions


# ---------------------------------------------------------------- Stable-Baselines3 and the single env


def test_sb3_make_vec_env_builds_pedro() -> None:
    pytest.importorskip("stable_baselines3")  # the dev extra (it needs torch)
    from stable_baselines3.common.env_util import make_vec_env

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Gymnasium warns that rgb_array is not among the env's render modes
        venv = make_vec_env("Pedro-v0", n_envs=4)
    observations = venv.reset()
    assert observations.shape == (4, *PedroGymEnv().observation_space.shape)
    masks = np.stack(venv.env_method("action_masks"))
    assert masks.shape == (4, 133) and masks.dtype == bool and masks.any(axis=1).all()
    assert all(render_mode is None for render_mode in venv.get_attr("render_mode"))


def test_an_unsupported_render_mode_is_a_type_error_and_a_value_error() -> None:
    for error in (TypeError, ValueError):
        with pytest.raises(error, match="rgb_array"):
            PedroGymEnv(render_mode="rgb_array")
    assert issubclass(RenderModeError, TypeError) and issubclass(RenderModeError, ValueError)


@pytest.mark.parametrize("checker", ["gymnasium", "sb3"])
def test_checkers_pass_on_the_default_env(checker: str) -> None:
    # both step action_space.sample(), mostly illegal: the default env ends the episode on those
    if checker == "gymnasium":
        env, check = gymnasium.make("Pedro-v0").unwrapped, gymnasium_check_env  # Gymnasium checks the bare env
    else:
        env, check = gymnasium.make("Pedro-v0"), pytest.importorskip("stable_baselines3.common.env_checker").check_env
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and without a warning
        check(env)


def test_default_illegal_action_ends_the_episode() -> None:
    env = gymnasium.make("Pedro-v0")
    _, info = env.reset(seed=2)
    illegal = PLAY_OFFSET + 12  # playing a card during the bidding
    assert not info["action_mask"][illegal]
    _, reward, terminated, truncated, info = env.step(illegal)
    assert (reward, terminated, truncated, info["illegal_action"]) == (-1.0, True, False, illegal)
    assert not info["action_mask"].any()


@pytest.mark.parametrize("text", ["flap", "bid", "play 1Z", ""])
def test_unreadable_text_action_is_an_illegal_action(text: str) -> None:
    env = PedroGymEnv(illegal_action="terminate")
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step(text)
    assert (reward, terminated, truncated, info["illegal_action"]) == (-1.0, True, False, text)

    env = PedroGymEnv(illegal_action="raise")
    _, info = env.reset(seed=0)
    with pytest.raises(pedro_env.IllegalActionError, match="cannot read action"):
        env.step(text)
    _, _, terminated, _, _ = env.step("pass")  # the state is untouched and a readable text is an action
    assert not terminated


def test_maskable_ppo_trains_on_make_vec_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("sb3_contrib")  # the dev extra (it needs torch)
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path))  # its logger's folder, else a new SB3-<time> in /tmp every run
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import get_action_masks
    from stable_baselines3.common.env_util import make_vec_env

    torch.set_num_threads(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the rgb_array render mode warning, once per env
        # illegal_action="raise": a single unmasked action would stop the run
        venv = make_vec_env("Pedro-v0", n_envs=4, seed=0, env_kwargs={"illegal_action": "raise", **SHORT})
    assert get_action_masks(venv).shape == (4, 133)
    model = MaskablePPO(
        "MlpPolicy", venv, n_steps=64, batch_size=64, n_epochs=2, seed=0, policy_kwargs={"net_arch": [32]}
    )
    model.learn(total_timesteps=512)
    assert model.num_timesteps == 512
    assert len(model.ep_info_buffer) > 0, "short matches end within the run"
    observations = venv.reset()
    actions, _ = model.predict(observations, action_masks=get_action_masks(venv))
    assert get_action_masks(venv)[np.arange(4), actions].all()


def passing_policy(observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator) -> int:
    """Pass whenever allowed, else the lowest legal action (with all_pass="redeal" all passing throws the deal in)."""
    return 0 if action_mask[0] else int(np.flatnonzero(action_mask)[0])


def lowest_bid_policy(observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator) -> int:
    """The lowest bid whenever one is allowed, else the lowest legal action."""
    bids = np.flatnonzero(action_mask[1:24])
    return int(bids[0] + 1) if bids.size else int(np.flatnonzero(action_mask)[0])


def test_sync_vector_env_batches_a_renege_and_a_thrown_in_deal_ending_together() -> None:
    # both learners pass. Env 0's opponent bids and leads, and its learner reneges at its first chance; env 1's
    # opponent passes too, so each of its steps throws a deal in. On the renege's step Gymnasium batches both
    # summaries: docs/rules.md's Nones against the other env's ints once crashed it (TypeError in _add_info).
    config: dict[str, Any] = {"num_players": 2, "all_pass": "redeal", "renege": "penalty"}
    sync = SyncVectorEnv(
        [
            functools.partial(gymnasium.make, "Pedro-v0", opponents=policy, **config)
            for policy in (lowest_bid_policy, passing_policy)
        ]
    )
    hand = pedro_env.observation_layout.observation_offsets(pedro_env.make_config(**config))["hand"]
    observations, infos = sync.reset(seed=3)
    for _ in range(60):
        masks = infos["action_mask"]
        plays = masks[0][PLAY_OFFSET:]
        reneges = [
            PLAY_OFFSET + card for card in np.flatnonzero(observations[0][hand]) if plays.any() and not plays[card]
        ]
        first = reneges[0] if reneges else passing_policy(observations[0], masks[0], None)
        observations, _, terminated, truncated, infos = sync.step(np.array([first, 0]))
        assert not (terminated | truncated).any()
        if reneges:
            break
    else:
        pytest.fail("no renege chance in 60 steps")
    deal = infos["deal"]
    assert infos["_deal"].all()
    assert deal["renege"].tolist() == [0, -1]  # the learner's team reneged; the thrown-in deal has no renege
    assert deal["redeal"].tolist() == [False, True]
    assert deal["maker"].tolist() == [1, -1] and deal["made"].tolist() == [1, -1]  # the maker's opponent reneged
    assert deal["bid"][1] == deal["trump"][1] == -1 and 0 <= deal["trump"][0] < 4
    assert deal["points"].shape == deal["delta"].shape == deal["scores"].shape == (2, 2)
    assert deal["delta"][1].tolist() == [0, 0]
    sync.close()


# ---------------------------------------------------------------- the Gymnasium VectorEnv


def test_make_vec_builds_the_vector_env() -> None:
    venv = gymnasium.make_vec("Pedro-v0", num_envs=3, num_players=2)
    assert isinstance(venv.unwrapped, PedroGymVectorEnv) and venv.num_envs == 3
    assert venv.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    single = PedroGymEnv(num_players=2)
    assert venv.single_observation_space == single.observation_space
    assert venv.single_action_space == single.action_space
    assert venv.observation_space == gymnasium.spaces.Box(0, 255, (3, *single.observation_space.shape), np.uint8)
    assert venv.action_space == gymnasium.spaces.MultiDiscrete([133] * 3)
    sync = gymnasium.make_vec("Pedro-v0", num_envs=2, vectorization_mode="sync")
    assert isinstance(sync, SyncVectorEnv)


@pytest.mark.parametrize(
    ("config", "learner_seat", "unmasked"),
    [({"num_players": 4}, 1, False), ({"num_players": 2, "reward": "win"}, 0, False), ({"num_players": 4}, 3, True)],
    ids=["4p-seat1", "2p-win", "4p-unmasked"],
)
def test_vector_env_matches_gymnasium_sync_vector_env(config: dict, learner_seat: int, unmasked: bool) -> None:
    # the same games as Gymnasium's own SyncVectorEnv (SAME_STEP autoreset) over the single env, step by step,
    # across episode ends; unmasked: action_space samples, mostly illegal, end episodes
    num_envs, steps = 3, 120
    kwargs: dict[str, Any] = {"learner_seat": learner_seat, **SHORT, **config}
    venv = PedroGymVectorEnv(num_envs, opponents=FirstLegalAgent(), **kwargs)
    sync = SyncVectorEnv(
        [lambda: PedroGymEnv(opponents=first_legal_policy, **kwargs)] * num_envs,
        autoreset_mode=AutoresetMode.SAME_STEP,
    )
    observations, infos = venv.reset(seed=40)
    sync_observations, sync_infos = sync.reset(seed=40)
    venv.action_space.seed(0)
    ended = 0
    for _ in range(steps):
        assert data_equivalence(observations, sync_observations, exact=True)
        assert data_equivalence(infos["action_mask"], sync_infos["action_mask"], exact=True)
        actions = venv.action_space.sample() if unmasked else chosen_by_view(observations, infos["action_mask"])
        observations, rewards, terminated, truncated, infos = venv.step(actions)
        sync_observations, sync_rewards, sync_terminated, sync_truncated, sync_infos = sync.step(actions)
        assert data_equivalence(rewards, sync_rewards, exact=True)
        assert np.array_equal(terminated, sync_terminated) and np.array_equal(truncated, sync_truncated)
        done = terminated | truncated
        if done.any():
            ended += int(done.sum())
            assert np.array_equal(infos["_final_obs"], sync_infos["_final_obs"])
            for game in np.flatnonzero(done):
                assert np.array_equal(infos["final_obs"][game], sync_infos["final_obs"][game])
            if "illegal_action" in sync_infos["final_info"]:
                flagged = sync_infos["final_info"]["_illegal_action"]
                assert np.array_equal(infos["final_info"]["_illegal_action"], flagged)
                assert np.array_equal(
                    infos["final_info"]["illegal_action"][flagged], sync_infos["final_info"]["illegal_action"][flagged]
                )
    assert ended >= num_envs, "every game should finish an episode in the run"


def rollout(venv: PedroGymVectorEnv, seed: int, steps: int) -> dict[str, list]:
    """A seeded masked random learner for ``steps`` steps, checking masks, autoreset and info layout."""
    rng = np.random.default_rng(seed)
    observations, infos = venv.reset(seed=seed)
    record: dict[str, list] = {"observations": [observations], "rewards": [], "done": [], "seats": [], "returns": []}
    episode_return = np.zeros(venv.num_envs)
    every = np.ones(venv.num_envs, dtype=bool)
    for _ in range(steps):
        masks = infos["action_mask"]
        assert masks.shape == (venv.num_envs, 133) and masks.dtype == np.int8 and masks.any(axis=1).all()
        assert np.array_equal(masks.astype(bool), venv.action_masks()) and infos["_action_mask"].all()
        assert observations in venv.observation_space
        actions = np.array([rng.choice(np.flatnonzero(mask)) for mask in masks])
        observations, rewards, terminated, truncated, infos = venv.step(actions)
        assert rewards.dtype == np.float64 and terminated.dtype == bool and truncated.dtype == bool
        assert not (terminated & truncated).any()
        done = terminated | truncated
        episode_return += rewards
        if done.any():
            assert np.array_equal(infos["_final_obs"], done) and np.array_equal(infos["_final_info"], done)
            final = infos["final_info"]
            assert not final["action_mask"][done].any()
            assert all(infos["final_obs"][game] in venv.single_observation_space for game in np.flatnonzero(done))
            assert all(infos["final_obs"][game] is None for game in np.flatnonzero(~done))
            record["returns"].extend(episode_return[done].tolist())
            record["seats"].extend(final["learner_seat"][done].tolist())
            episode_return[done] = 0.0
        else:
            assert "final_obs" not in infos
        assert np.array_equal(infos["_learner_seat"], every)
        record["observations"].append(observations)
        record["rewards"].append(rewards)
        record["done"].append(done)
    return record


def test_seeded_random_rollout_is_reproducible_and_autoresets() -> None:
    config: dict[str, Any] = {"learner_seat": "random", "reward": "win", "illegal_action": "raise", **SHORT}
    first = rollout(PedroGymVectorEnv(8, **config), seed=5, steps=150)
    again = rollout(PedroGymVectorEnv(8, **config), seed=5, steps=150)
    other = rollout(PedroGymVectorEnv(8, **config), seed=6, steps=150)
    for key in ("observations", "rewards", "done"):
        assert all(np.array_equal(a, b) for a, b in zip(first[key], again[key]))
    assert first["returns"] == again["returns"] and first["seats"] == again["seats"]
    assert not all(np.array_equal(a, b) for a, b in zip(first["observations"], other["observations"]))
    assert len(first["returns"]) >= 8 and set(first["returns"]) <= {-1.0, 0.0, 1.0}
    assert set(first["seats"]) == {0, 1, 2, 3}


def test_reset_without_seed_plays_the_next_matches() -> None:
    venv = PedroGymVectorEnv(2, **SHORT)
    first, _ = venv.reset(seed=9)
    second, _ = venv.reset()
    assert not np.array_equal(first, second)
    single = PedroGymEnv(opponents=first_legal_policy, **SHORT)
    hand = pedro_env.observation_layout.observation_offsets(single.config)["hand"]
    for game in range(2):
        single.reset(seed=9 + game)
        observation, _ = single.reset()  # the seed's next match deals the same hands
        assert np.array_equal(observation[hand], second[game][hand])


def test_record_episode_statistics_counts_episodes() -> None:
    venv = gymnasium.wrappers.vector.RecordEpisodeStatistics(PedroGymVectorEnv(4, **SHORT))
    _, infos = venv.reset(seed=0)
    episodes = 0
    for _ in range(150):
        _, _, terminated, truncated, infos = venv.step(np.argmax(infos["action_mask"], axis=1))
        done = terminated | truncated
        episodes += int(done.sum())
        if done.any():
            assert np.array_equal(infos["_episode"], done) and (infos["episode"]["l"][done] > 0).all()
    assert episodes > 0


def test_opponents_per_seat_play_in_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    from agents import make_agent

    engine_steps = []
    engine_step = gym_vector.step
    monkeypatch.setattr(gym_vector, "step", lambda *args: engine_steps.append(1) or engine_step(*args))
    partner = FirstLegalAgent()
    heuristic = make_agent("rule:heuristic", pedro_env.make_config())
    venv = PedroGymVectorEnv(6, learner_seat=0, opponents={1: heuristic, 2: partner, "player_3": None})
    assert [type(agent).__name__ for agent in venv.agents] == [
        "UniformRandomAgent",
        "HeuristicAgent",
        "FirstLegalAgent",
    ]
    with pytest.raises(TypeError, match=r"opponents are agents, not specs: pass agents.make_agent\('rule:heuristic'"):
        PedroGymVectorEnv(2, opponents="rule:heuristic")
    observations, infos = venv.reset(seed=1)
    for _ in range(30):
        observations, _, _, _, infos = venv.step(chosen_by_view(observations, infos["action_mask"]))
    assert 0 < partner.calls < len(engine_steps)  # one call per engine step at most, never one per game
    assert partner.largest_batch > 1

    class Cheater(FirstLegalAgent):
        name = "cheater"

        def act(self, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
            return np.full(len(action_masks), PLAY_OFFSET)  # a card play, whatever the phase

    with pytest.raises(pedro_env.IllegalActionError, match="cheater"):
        PedroGymVectorEnv(2, opponents=Cheater()).reset(seed=0)


def test_vector_illegal_action_raise_leaves_the_state() -> None:
    venv = PedroGymVectorEnv(3, illegal_action="raise")
    observations, infos = venv.reset(seed=4)
    actions = np.argmax(infos["action_mask"], axis=1)
    bad = actions.copy()
    bad[1] = PLAY_OFFSET + 12
    with pytest.raises(pedro_env.IllegalActionError, match="game 1"):
        venv.step(bad)
    assert np.array_equal(venv.action_masks(), infos["action_mask"].astype(bool))
    venv.step(actions)


def test_vector_bad_arguments_are_rejected() -> None:
    with pytest.raises(ValueError, match="num_envs"):
        PedroGymVectorEnv(0)
    with pytest.raises(ValueError, match="learner_seat"):
        PedroGymVectorEnv(2, learner_seat=4)
    with pytest.raises(ValueError, match="illegal_action"):
        PedroGymVectorEnv(2, illegal_action="ignore")
    with pytest.raises(TypeError, match="render_mode"):
        PedroGymVectorEnv(2, render_mode="rgb_array")
    with pytest.raises(TypeError, match="opponent"):
        PedroGymVectorEnv(2, opponents=3)
    with pytest.raises(ValueError, match="opponents key"):
        PedroGymVectorEnv(2, opponents={7: "random"})
    with pytest.raises(pedro_env.ConfigError):
        PedroGymVectorEnv(2, num_players=5)
    venv = PedroGymVectorEnv(2)
    with pytest.raises(RuntimeError, match="reset"):
        venv.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(ValueError, match="options"):
        venv.reset(seed=0, options={"dealer": 1})
    venv.reset(seed=0)
    with pytest.raises(ValueError, match="shape"):
        venv.step(np.zeros(3, dtype=np.int64))


@pytest.mark.parametrize("seed", ["7", 1.5, -1, 2**64 - 3, 2**70, True], ids=repr)
def test_vector_reset_rejects_a_seed_whose_games_would_wrap(seed: Any) -> None:
    venv = PedroGymVectorEnv(4)
    for error in (pedro_env.SeedError, ValueError, TypeError):
        with pytest.raises(error, match=r"^seed must be an int from 0 to 2\*\*64 - 4, got "):
            venv.reset(seed=seed)
    assert venv.state is None, "a rejected seed starts nothing"


def test_vector_reset_takes_seeds_up_to_2_64_minus_num_envs() -> None:
    # game i plays seed + i: the last game of the highest seed plays seed 2**64 - 1, as the single env does
    seed = 2**64 - 2
    observations, _ = PedroGymVectorEnv(2, opponents=FirstLegalAgent(), **SHORT).reset(seed=np.uint64(seed))
    single = PedroGymEnv(opponents=first_legal_policy, **SHORT)
    for game in range(2):
        observation, _ = single.reset(seed=seed + game)
        assert np.array_equal(observation, observations[game])


def test_benchmark_rejects_bad_numbers_in_one_line(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exit_info:
        gym_vector_benchmark.main(["--num-envs", "0"])
    out, err = capsys.readouterr()
    assert exit_info.value.code == 2 and out == ""
    assert err.count("\n") == 1 and "--num-envs: must be an int >= 1, got '0'" in err


def test_benchmark_prints_the_three_paths(capsys: pytest.CaptureFixture) -> None:
    gym_vector_benchmark.main(["--steps", "32", "--num-envs", "8", "--sync-envs", "2"])
    out = capsys.readouterr().out
    assert "Pedro-v0" in out and "SyncVectorEnv" in out and "vector / single" in out
