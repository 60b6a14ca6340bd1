"""The single-agent Gymnasium env (pedro_env.gym): Gymnasium's checker, seeding, opponents, rewards, masks."""

from __future__ import annotations

import doctest
import importlib
from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env, data_equivalence

import pedro_env
import pedro_env.gym as pedro_gym
from pedro_env.actions import PLAY_OFFSET, action_to_str
from pedro_env.cards import card_to_str
from pedro_env.gym import PedroGymEnv, gym_deal_summary, uniform_random_policy
from pedro_env.observation_layout import observation_offsets

# small targets and deal caps keep random matches short
EPISODE_CONFIGS = [
    {"num_players": 4, "target_score": 21},
    {"num_players": 3, "scoring": "simple", "target_score": 15},
    {"num_players": 2, "target_score": 15},
    {"num_players": 2, "six_card": True, "refill": "top", "all_pass": "redeal", "target_score": 11},
    {"num_players": 4, "refill": "dealer_robs", "variant": "sancho", "target_score": 31},
    {"num_players": 4, "episode": "deal"},
    {"num_players": 3, "scoring": "simple", "episode": "deal"},
    {"num_players": 4, "reward": "win", "target_score": 11},
    {"num_players": 2, "reward": "win", "target_score": 11},
]

Policy = Callable[[np.ndarray, np.ndarray, np.random.Generator], int]


def low_bidding_policy(observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator) -> int:
    """Random legal play that mostly passes and otherwise bids the lowest it may, so random matches reach the target."""
    legal = np.flatnonzero(action_mask)
    if legal[0] <= 23:  # bidding: pass (0) and bids (1..23) only
        if action_mask[0] and rng.random() < 0.75:
            return 0
        return int(legal[legal > 0][0])
    return int(rng.choice(legal))


def play_episode(
    env: PedroGymEnv,
    seed: int | None,
    rng: np.random.Generator,
    options: dict | None = None,
    learner: Policy = uniform_random_policy,
) -> dict[str, Any]:
    """``learner`` (masked, random by default) to the episode's end, checking the turn and mask at every decision."""
    observation, info = env.reset(seed=seed, options=options)
    observations, rewards, deals = [observation], [], []
    terminated = truncated = False
    while not (terminated or truncated):
        mask = info["action_mask"]
        assert mask.dtype == np.int8 and mask.shape == (133,) and mask.any()
        assert env.single_game.actor == env.learner_seat, "the learner was asked to act out of turn"
        assert np.array_equal(mask.astype(bool), env.action_masks())
        assert np.array_equal(np.flatnonzero(mask), env.single_game.legal_actions())
        assert observation in env.observation_space
        action = learner(observation, mask, rng)
        assert mask[action]
        observation, reward, terminated, truncated, info = env.step(action)
        assert isinstance(reward, float) and isinstance(terminated, bool) and isinstance(truncated, bool)
        observations.append(observation)
        rewards.append(reward)
        if "deal" in info:
            deals.append(info["deal"])
    assert not info["action_mask"].any() and not env.action_masks().any()
    ends = {"terminated": terminated, "truncated": truncated}
    return {"observations": observations, "rewards": rewards, "deals": deals, **ends}


def same_deals(first: list[dict[str, Any]], second: list[dict[str, Any]]) -> bool:
    """Whether two lists of Gym deal summaries (dicts holding arrays) are equal, dtypes included."""
    return len(first) == len(second) and all(data_equivalence(a, b, exact=True) for a, b in zip(first, second))


def points_reward(deal: dict[str, Any], team: int, total_points: int) -> float:
    """reward="points" of one deal for ``team``: its delta minus the other teams' mean delta, over the total points."""
    delta = np.asarray(deal["delta"], dtype=float)
    others = np.delete(delta, team)
    return float((delta[team] - others.mean()) / total_points)


# ---------------------------------------------------------------- Gymnasium conformance


CHECKED_KWARGS = [{}, {"learner_seat": "random", "num_players": 2}]


@pytest.mark.parametrize("kwargs", CHECKED_KWARGS, ids=["default", "random-seat-2p"])
def test_gymnasium_check_env(kwargs: dict, capsys: pytest.CaptureFixture) -> None:
    # check_env steps unmasked action_space.sample(); the default illegal_action="terminate" ends the episode on those
    env = gymnasium.make("Pedro-v0", **kwargs)
    check_env(env.unwrapped)  # render checks included: the spec remakes the env in "ansi" and "human"
    assert "Pedro" in capsys.readouterr().out  # the "human" remake printed the table


def test_registration_is_idempotent() -> None:
    assert gymnasium.spec("Pedro-v0").entry_point == "pedro_env.gym:PedroGymEnv"
    importlib.reload(pedro_gym)  # registering again must not fail
    pedro_gym._register()
    env = gymnasium.make("Pedro-v0", num_players=2, target_score=11)
    observation, info = env.reset(seed=0)
    assert observation.shape == env.observation_space.shape and info["action_mask"].any()


def test_spaces_match_the_aec_env() -> None:
    for num_players in (2, 3, 4):
        config: dict[str, Any] = {"num_players": num_players, "scoring": "simple"}
        env = PedroGymEnv(**config)
        aec_space = pedro_env.raw_env(**config).observation_space("player_0")["observation"]  # type: ignore[index]
        assert env.observation_space == gymnasium.spaces.Box(0, 255, aec_space.shape, np.uint8)
        assert env.action_space == gymnasium.spaces.Discrete(133)


def test_module_docstring_example_runs() -> None:
    results = doctest.testmod(pedro_gym)
    assert results.attempted > 0 and results.failed == 0


# ---------------------------------------------------------------- episodes, turns, rewards


@pytest.mark.parametrize("play", ["uniform", "low_bidding"])
@pytest.mark.parametrize("config", EPISODE_CONFIGS, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_random_masked_episodes_and_rewards(config: dict, play: str) -> None:
    # uniform random bidding is mostly set and rarely ends a match (max_deals truncates); low bidding reaches the target
    policy = uniform_random_policy if play == "uniform" else low_bidding_policy
    env = PedroGymEnv(learner_seat="random", opponents=policy, max_deals=30, **config)
    cfg = env.config
    ends = []
    for seed in range(3):
        episode = play_episode(env, seed, np.random.default_rng(seed), learner=policy)
        learner_team = env.learner_seat % cfg.num_teams
        deals, episode_return = episode["deals"], sum(episode["rewards"])
        ends.append("terminated" if episode["terminated"] else "truncated")
        assert deals, "an episode holds at least one deal"
        assert episode["terminated"] != episode["truncated"]
        if cfg.episode == "deal":
            assert len(deals) == 1 and episode["terminated"]
        if episode["truncated"]:
            assert len(deals) == cfg.max_deals
        if cfg.reward == "points":
            expected = sum(points_reward(deal, learner_team, cfg.total_points) for deal in deals)
            assert episode_return == pytest.approx(expected, abs=1e-4)
        else:
            assert all(reward == 0.0 for reward in episode["rewards"][:-1])  # the win reward comes at the end only
            final_scores = deals[-1]["scores"]
            if episode["truncated"]:
                assert episode_return == 0.0
            elif episode_return == 1.0:
                assert final_scores[learner_team] >= cfg.target_score
            else:
                assert episode_return == -1.0 and max(np.delete(final_scores, learner_team)) >= cfg.target_score
    if play == "low_bidding":
        assert "terminated" in ends, "low-bidding matches should reach the target within max_deals"


def test_learner_reward_includes_what_arrives_during_opponent_moves() -> None:
    # with points rewards every scored deal pays the learner on the step whose opponent moves end the deal
    env = PedroGymEnv(learner_seat=1, num_players=4, episode="deal")
    paid = 0
    for seed in range(6):
        episode = play_episode(env, seed, np.random.default_rng(seed))
        (deal,) = episode["deals"]
        assert episode["rewards"][-1] == pytest.approx(points_reward(deal, 1, 14), abs=1e-6)
        paid += bool(deal["delta"].any())
    assert paid > 0


def test_max_deals_truncates() -> None:
    env = PedroGymEnv(num_players=4, max_deals=2)
    episode = play_episode(env, 3, np.random.default_rng(3))
    assert episode["truncated"] and not episode["terminated"] and len(episode["deals"]) == 2


def test_step_after_the_end_or_before_reset_raises() -> None:
    env = PedroGymEnv(num_players=2, episode="deal")
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    play_episode(env, 0, np.random.default_rng(0))
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


def test_numpy_actions_are_accepted() -> None:
    env = PedroGymEnv(num_players=4)
    _, info = env.reset(seed=1)
    action = np.flatnonzero(info["action_mask"])[0]
    env.step(np.int64(action))
    _, info = env.reset(seed=1)
    env.step(np.array([action]))


# ---------------------------------------------------------------- seeding and options


@pytest.mark.parametrize("learner_seat", [0, 2, "random"])
def test_seeded_episodes_are_reproducible(learner_seat: int | str) -> None:
    config: dict[str, Any] = {"num_players": 4, "target_score": 21, "max_deals": 10}
    first, second = PedroGymEnv(learner_seat=learner_seat, **config), PedroGymEnv(learner_seat=learner_seat, **config)
    runs = []
    for env in (first, second, first):  # a fresh env, and the same env again after an episode
        rng = np.random.default_rng(11)
        # a seeded episode, then the next match of that seed via reset() without a seed
        runs.append([play_episode(env, 5, rng), play_episode(env, None, rng)])
    for run in runs[1:]:
        for episode, reference in zip(run, runs[0]):
            assert episode["rewards"] == reference["rewards"]
            assert same_deals(episode["deals"], reference["deals"])
            assert all(np.array_equal(a, b) for a, b in zip(episode["observations"], reference["observations"]))
    other = play_episode(first, 6, np.random.default_rng(11))
    assert not same_deals(other["deals"], runs[0][0]["deals"])


def test_seed_deals_like_the_aec_env() -> None:
    hand = observation_offsets(pedro_env.make_config())["hand"]
    for seed in range(3):
        observation, _ = PedroGymEnv(learner_seat=0).reset(seed=seed)
        aec = pedro_env.env()
        aec.reset(seed=seed)
        assert np.array_equal(observation[hand], aec.observe("player_0")["observation"][hand])


@pytest.mark.parametrize("seed", ["7", 1.5, -1, 2**64, 2**70, True, np.float64(3)], ids=repr)
def test_reset_rejects_a_bad_seed_with_the_seed_error(seed: Any) -> None:
    env = PedroGymEnv()
    for error in (pedro_env.SeedError, ValueError, TypeError):
        with pytest.raises(error, match=r"^seed must be an int from 0 to 2\*\*64 - 1, got "):
            env.reset(seed=seed)
    assert env.single_game.state is None, "a rejected seed starts nothing"


def test_reset_takes_every_seed_up_to_2_64_minus_1() -> None:
    hand = observation_offsets(pedro_env.make_config())["hand"]
    env = PedroGymEnv()
    for seed in (0, 2**63, 2**64 - 1):
        observation, _ = env.reset(seed=np.uint64(seed))  # numpy ints are seeds too
        aec = pedro_env.env()
        aec.reset(seed=seed)
        assert np.array_equal(observation[hand], aec.observe("player_0")["observation"][hand])


def test_reset_options_pass_through() -> None:
    deck = [card_to_str(card) for card in np.random.default_rng(0).permutation(52)]
    env = PedroGymEnv(learner_seat=0, num_players=4)
    observation, _ = env.reset(seed=0, options={"dealer": 3, "decks": [deck]})
    game = env.single_game.state
    assert game is not None
    assert int(game.dealer[0]) == 3
    # seat 0 is eldest, so it gets the first packet of 3 of every round and bids first
    expected = sorted(pedro_env.cards.str_to_card(card) for card in deck[0:3] + deck[12:15] + deck[24:27])
    held = np.flatnonzero(observation[observation_offsets(env.config)["hand"]])
    assert held.tolist() == expected
    assert (game.bids[0] == -1).all()  # nobody spoke before the learner
    with pytest.raises(ValueError, match="dealer"):
        env.reset(seed=0, options={"dealer": 7})


def test_learner_seat_random_covers_every_seat() -> None:
    env = PedroGymEnv(learner_seat="random", num_players=4)
    seats = []
    for seed in range(40):
        _, info = env.reset(seed=seed)
        seats.append(info["learner_seat"])
        assert f"player_{env.single_game.actor}" == env.learner_agent == f"player_{info['learner_seat']}"
    assert set(seats) == {0, 1, 2, 3}
    assert [env.reset(seed=seed)[1]["learner_seat"] for seed in range(40)] == seats  # the draw is seeded


# ---------------------------------------------------------------- opponents


class CountingPolicy:
    """Plays uniformly random legal actions for ``seat``, counting calls and checking it acts in turn."""

    def __init__(self, env_box: list[PedroGymEnv], seat: int) -> None:
        self.env_box, self.seat, self.calls = env_box, seat, 0

    def __call__(self, observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator) -> int:
        env = self.env_box[0]
        seat = env.single_game.actor
        assert self.seat != env.learner_seat, "an opponent policy was called for the learner's seat"
        assert seat == self.seat
        assert observation.dtype == np.uint8 and observation.shape == env.observation_space.shape
        assert action_mask.dtype == np.int8 and action_mask.shape == (133,)
        assert np.array_equal(observation, env.single_game.observe(seat))  # the opponent's own view
        assert rng is env.np_random
        self.calls += 1
        return uniform_random_policy(observation, action_mask, rng)


def test_opponents_dict_per_seat_is_used() -> None:
    env_box: list[PedroGymEnv] = []
    policies = {seat: CountingPolicy(env_box, seat) for seat in range(4)}
    env = PedroGymEnv(learner_seat=0, opponents=policies, num_players=4, episode="deal")
    env_box.append(env)
    play_episode(env, 0, np.random.default_rng(0))
    assert policies[0].calls == 0
    assert all(policies[seat].calls >= 7 for seat in (1, 2, 3))  # a bid, a done and six cards at least


def test_opponents_as_list_names_and_single_callable() -> None:
    env_box: list[PedroGymEnv] = []
    as_list = [None, CountingPolicy(env_box, 1), None]
    env = PedroGymEnv(learner_seat=0, opponents=as_list, num_players=3, scoring="simple", episode="deal")
    env_box.append(env)
    play_episode(env, 0, np.random.default_rng(0))
    assert as_list[1].calls > 0  # type: ignore[union-attr]

    by_name = {"player_1": CountingPolicy(env_box, 1)}
    env_box[0] = env = PedroGymEnv(learner_seat=0, opponents=by_name, num_players=2, episode="deal")
    play_episode(env, 0, np.random.default_rng(0))
    assert by_name["player_1"].calls > 0

    seen_seats: set[str] = set()

    def first_legal(observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator) -> int:
        seen_seats.add(f"player_{env.single_game.actor}")
        return int(np.flatnonzero(action_mask)[0])

    env = PedroGymEnv(learner_seat="random", opponents=first_legal, num_players=4, episode="deal")
    for seed in range(8):
        play_episode(env, seed, np.random.default_rng(seed))
    assert seen_seats == {"player_0", "player_1", "player_2", "player_3"}


def test_learner_seat_random_never_calls_the_learners_policy() -> None:
    env_box: list[PedroGymEnv] = []
    policies = [CountingPolicy(env_box, seat) for seat in range(4)]
    env = PedroGymEnv(learner_seat="random", opponents=policies, num_players=4, episode="deal")
    env_box.append(env)
    for seed in range(6):
        play_episode(env, seed, np.random.default_rng(seed))  # CountingPolicy asserts it is never the learner
    assert all(policy.calls > 0 for policy in policies)


# ---------------------------------------------------------------- illegal actions and bad arguments


def test_illegal_learner_action_raises_and_leaves_the_state() -> None:
    env = PedroGymEnv(learner_seat=0, num_players=4, illegal_action="raise")
    _, info = env.reset(seed=2)
    illegal = PLAY_OFFSET + 12  # playing a card during the bidding
    assert not info["action_mask"][illegal]
    with pytest.raises(pedro_env.IllegalActionError, match=action_to_str(illegal)) as error:
        env.step(illegal)
    legal = np.flatnonzero(info["action_mask"])
    assert action_to_str(legal[-1]) in str(error.value)
    with pytest.raises(pedro_env.IllegalActionError):
        env.step(999)
    env.step(int(legal[0]))  # the env is still usable


def test_illegal_action_terminate_mode() -> None:
    env = PedroGymEnv(learner_seat=0, num_players=4, illegal_action="terminate", illegal_reward=-2.0)
    env.reset(seed=2)
    _, reward, terminated, truncated, info = env.step(PLAY_OFFSET + 12)
    assert (reward, terminated, truncated, info["illegal_action"]) == (-2.0, True, False, PLAY_OFFSET + 12)
    assert not info["action_mask"].any() and not env.action_masks().any()
    with pytest.raises(RuntimeError):
        env.step(0)


def test_renege_penalty_follows_the_engine() -> None:
    env = PedroGymEnv(learner_seat=0, num_players=4, renege="penalty", episode="deal")
    hand = observation_offsets(env.config)["hand"]
    for seed in range(50):
        rng = np.random.default_rng(seed)
        observation, info = env.reset(seed=seed)
        while True:
            mask = info["action_mask"]
            held = np.flatnonzero(observation[hand])
            reneges = [PLAY_OFFSET + card for card in held if mask[PLAY_OFFSET:].any() and not mask[PLAY_OFFSET + card]]
            if reneges:
                _, reward, terminated, _, info = env.step(reneges[0])
                assert terminated and info["deal"]["renege"] == 0  # the learner's team reneged
                assert reward == pytest.approx(points_reward(info["deal"], 0, 14), abs=1e-6) and reward < 0
                return
            observation, _, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(mask))))
            if terminated or truncated:
                break
    pytest.fail("no renege chance in 50 deals")


# docs/rules.md section 11
DEAL_KEYS = ["redeal", "maker", "bid", "trump", "points", "made", "delta", "scores", "renege"]


def test_deal_summary_in_numbers_matches_the_aec_summary() -> None:
    thrown_in = {"redeal": True, "maker": None, "bid": None, "trump": None, "points": [0, 0], "made": None}
    thrown_in.update({"delta": [0, 0], "scores": [5, -3], "renege": None})
    numbers = gym_deal_summary(thrown_in)
    assert list(numbers) == DEAL_KEYS
    assert {key: numbers[key] for key in ("redeal", "maker", "bid", "trump", "made", "renege")} == {
        "redeal": True, "maker": -1, "bid": -1, "trump": -1, "made": -1, "renege": -1
    }  # fmt: skip
    assert numbers["scores"].dtype == np.int64 and numbers["scores"].tolist() == [5, -3]
    reneged = {"redeal": False, "maker": 2, "bid": 7, "trump": "H", "points": [3, 1, 0], "made": False}
    reneged.update({"delta": [-7, 0, 0], "scores": [-7, 0, 0], "renege": 0})
    numbers = gym_deal_summary(reneged)
    assert (numbers["maker"], numbers["bid"], numbers["trump"], numbers["made"], numbers["renege"]) == (2, 7, 2, 0, 0)
    assert numbers["points"].tolist() == [3, 1, 0] and numbers["delta"].tolist() == [-7, 0, 0]


@pytest.mark.parametrize(
    "config",
    [{"renege": "penalty", "episode": "deal"}, {"all_pass": "redeal", "num_players": 2, "target_score": 11}],
    ids=["renege-penalty", "thrown-in"],
)
def test_every_deal_summary_has_one_type_per_key(config: dict) -> None:
    # Gymnasium batches infos into arrays typed by the first env's value: no key may change type between deals
    env = PedroGymEnv(max_deals=20, **config)
    deals = []
    for seed in range(4):
        deals += play_episode(env, seed, np.random.default_rng(seed))["deals"]
    for deal in deals:
        assert list(deal) == DEAL_KEYS
        assert isinstance(deal["redeal"], bool)
        assert all(type(deal[key]) is int for key in ("maker", "bid", "trump", "made", "renege"))
        for key in ("points", "delta", "scores"):
            assert deal[key].dtype == np.int64 and deal[key].shape == (env.config.num_teams,), key
        assert (deal["maker"] == -1) == deal["redeal"] == (deal["trump"] == -1) == (deal["made"] == -1)
    if config.get("all_pass") == "redeal":
        assert any(deal["redeal"] for deal in deals) and not all(deal["redeal"] for deal in deals)


def test_bad_arguments_are_rejected() -> None:
    with pytest.raises(ValueError, match="learner_seat"):
        PedroGymEnv(learner_seat=4)
    with pytest.raises(ValueError, match="learner_seat"):
        PedroGymEnv(learner_seat="north")
    with pytest.raises(ValueError, match="learner_seat"):
        PedroGymEnv(learner_seat=True)
    with pytest.raises(TypeError, match="opponents"):
        PedroGymEnv(opponents=3)
    with pytest.raises(TypeError, match="opponents"):
        PedroGymEnv(opponents={1: "random"})
    with pytest.raises(ValueError, match="opponents key"):
        PedroGymEnv(opponents={4: uniform_random_policy})
    with pytest.raises(ValueError, match="one entry per seat"):
        PedroGymEnv(opponents=[uniform_random_policy] * 3)
    with pytest.raises(ValueError, match="illegal_action"):
        PedroGymEnv(illegal_action="ignore")
    with pytest.raises(ValueError, match="render_mode"):
        PedroGymEnv(render_mode="rgb_array")
    with pytest.raises(pedro_env.ConfigError, match="num_players"):
        PedroGymEnv(num_players=5)
    with pytest.raises(pedro_env.ConfigError, match="colour"):
        PedroGymEnv(colour="red")


# ---------------------------------------------------------------- rendering


def test_render_modes(capsys: pytest.CaptureFixture) -> None:
    assert PedroGymEnv().render_mode is None
    env = PedroGymEnv(num_players=2)
    env.reset(seed=0)
    assert env.render() is None

    env = PedroGymEnv(render_mode="ansi", num_players=2)
    _, info = env.reset(seed=0)
    text = env.render()
    assert isinstance(text, str) and "Pedro" in text and "> P0" in text  # the learner (P0) is to act

    env = PedroGymEnv(render_mode="human", num_players=2)
    _, info = env.reset(seed=0)
    assert "Pedro" in capsys.readouterr().out  # human mode prints on reset
    env.step(int(np.flatnonzero(info["action_mask"])[0]))
    assert "Pedro" in capsys.readouterr().out  # and on every move
    assert env.render() is None


def test_an_opponent_that_raises_ends_the_episode_until_reset() -> None:
    calls = {"n": 0}

    def failing(observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator) -> int:
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyError("the opponent's model broke")
        return int(rng.choice(np.flatnonzero(action_mask)))

    env = pedro_gym.PedroGymEnv(opponents=failing, target_score=11)
    observation, info = env.reset(seed=0)
    with pytest.raises(KeyError, match="model broke"):
        while True:
            observation, reward, terminated, truncated, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
            assert not (terminated or truncated)
    assert not env.action_masks().any()
    with pytest.raises(RuntimeError, match="reset"):  # the learner's next action never lands on another seat
        env.step(0)
    observation, info = env.reset(seed=1)  # and a reset starts cleanly
    assert info["action_mask"].any()
