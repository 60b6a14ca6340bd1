"""Who sits at the policy's table in training: opponent and partner games, pfsp, the league in one stacked forward,
the rule baselines together, win rates and statistics, the teacher (kickstarting, margins), bidding assistants, and
the gauntlet's snapshots."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("yaml")
pytest.importorskip("tensorboard")

from agents import make_agent  # noqa: E402
from agents.networks import StackedLogits  # noqa: E402
from pedro_env import make_config  # noqa: E402
from pedro_env.vector import PedroVectorEnv  # noqa: E402
from pedro_env.view import decode_observations  # noqa: E402
from train.config import TrainConfigError, make_train_config  # noqa: E402
from train.trainer import Trainer  # noqa: E402

from conftest import tiny_config  # noqa: E402

DISCARD_BASE = 28  # the first discard action (docs/rules.md section 11)


# ---------------------------------------------------------------- opponents, partners, league and teacher


@pytest.mark.parametrize("partner_opponents", ["pool", "baselines", "partner"])
def test_opponent_and_partner_games_seat_the_right_players(partner_opponents: str) -> None:
    trainer = Trainer(
        tiny_config(num_envs=400, opponent_share=0.3, partner_share=0.3, partner_opponents=partner_opponents)
    )
    baselines = len(trainer.pool.baselines)
    assert len(trainer.pool) > baselines  # the league's first snapshot is in the pool too
    controller, team = trainer.seat_controller, trainer.learner_team
    team_of_seat = trainer.pedro_config.team_of_seat
    self_play = team < 0
    assert (controller[self_play] == -1).all()
    kinds = {"self": 0, "opponent": 0, "partner": 0}
    other_team: dict[str, set[int]] = {"opponent": set(), "partner": set()}
    for game in np.flatnonzero(~self_play):
        mine = team_of_seat == team[game]
        assert (controller[game, ~mine] >= 0).all() and len(set(controller[game, ~mine])) == 1
        policy_seats = int((controller[game, mine] < 0).sum())
        assert policy_seats in (1, 2)  # a partner game leaves the policy one seat of its team
        if policy_seats == 1:
            assert controller[game, mine].max() < baselines  # partners are baselines
            if partner_opponents == "partner":  # the other team is two of the partner's baseline
                assert controller[game, ~mine][0] == controller[game, mine].max()
        kind = "partner" if policy_seats == 1 else "opponent"
        kinds[kind] += 1
        other_team[kind].add(int(controller[game, ~mine][0]))
    kinds["self"] = int(self_play.sum())
    assert all(60 < count < 180 for count in kinds.values()), kinds
    assert other_team["opponent"] == set(range(len(trainer.pool)))
    if partner_opponents in ("baselines", "partner"):
        assert other_team["partner"] == set(range(baselines))
    else:
        assert other_team["partner"] == set(range(len(trainer.pool)))
    before = controller.copy()
    rollout = trainer.collect()
    seats = rollout.seats.astype(np.intp)
    rows = np.arange(trainer.config.num_envs)
    assert rollout.learner[0].tolist() == (before[rows, seats[0]] < 0).tolist()
    with pytest.raises(TrainConfigError, match="must sum to at most 1"):
        make_train_config(opponent_share=0.7, partner_share=0.5)


def test_pfsp_draws_the_members_the_policy_loses_to() -> None:
    trainer = Trainer(
        tiny_config(baseline_opponents=["rule:heuristic", "rule:cautious", "random"], opponent_sampling="pfsp")
    )
    pool = trainer.pool
    assert len(pool) == 4 and np.allclose(pool.opponent_weights(), 0.25)  # no match yet: every member alike
    none = np.full(3, -1)
    for _ in range(300):  # the policy beats heuristic and random every time and always loses to cautious
        pool.record_outcomes(np.array([0, 1, 2]), none, np.array([1.0, 0.0, 1.0]))
        pool.record_outcomes(none, np.array([0, 1, 2]), np.array([0.0, 1.0, 1.0]))  # partnering: heuristic fails
    weights = pool.opponent_weights()
    assert weights[1] > 0.5 and weights[1] > 10 * weights[0] and weights[0] == pytest.approx(weights[2])
    assert weights[3] > weights[0]  # the league snapshot, never met, keeps the prior
    draws = pool.sample_opponents(5000, np.random.default_rng(0))
    assert abs(np.mean(draws == 1) - weights[1]) < 0.03
    partners = pool.sample_partners(5000, np.random.default_rng(1))
    assert np.mean(partners == 0) > 0.6
    assert set(pool.sample_opponents(200, np.random.default_rng(2), baselines_only=True)) <= {0, 1, 2}
    # a snapshot that replaces a ring slot starts over from the prior
    pool.opponent_rates.record(np.array([3] * 50), np.zeros(50))
    pool.add_snapshot(trainer.network, 99)
    pool.add_snapshot(trainer.network, 100)
    assert pool.opponent_rates.matches[3:].max() == 0.0
    uniform = Trainer(tiny_config(baseline_opponents=["rule:heuristic", "rule:cautious"])).pool
    uniform.record_outcomes(np.array([0, 1]), np.full(2, -1), np.array([1.0, 0.0]))
    assert np.allclose(uniform.opponent_weights(), 1 / len(uniform))
    with pytest.raises(TrainConfigError, match="'opponent_sampling' = 'hard' is not allowed: allowed values are"):
        make_train_config(opponent_sampling="hard")


def test_the_league_acts_in_one_stacked_forward_with_each_member_own_policy() -> None:
    """OpponentPool.act runs every league member met in one batched forward (agents.networks.StackedLogits):
    each member's logits equal its own network's, every action is legal, a forced move needs no forward."""
    for shared_trunk in (False, True):
        trainer = Trainer(tiny_config(league_size=3, hidden_sizes=[32, 16], shared_trunk=shared_trunk))
        pool = trainer.pool
        generator = torch.Generator().manual_seed(1)
        for snapshot in range(3):
            for parameter in trainer.network.parameters():
                parameter.data.add_(torch.randn(parameter.shape, generator=generator) * 0.3)
            pool.add_snapshot(trainer.network, snapshot)
        venv = PedroVectorEnv(48, config=trainer.pedro_config)
        step = venv.reset(seed=3)
        observations, masks = step.observation, step.action_mask.view(bool)
        members = np.arange(48) % 3
        by_member = np.argsort(members, kind="stable")  # member 0's 16 rows, then member 1's, ...
        stacked = StackedLogits([agent.network for agent in pool.league])(
            torch.from_numpy(observations[by_member].reshape(3, 16, -1)),
            torch.from_numpy(masks[by_member].reshape(3, 16, -1)),
        )
        subset = StackedLogits([agent.network for agent in pool.league])(  # members 2 and 0 alone, in that order
            torch.from_numpy(observations[by_member].reshape(3, 16, -1)[[2, 0]]),
            torch.from_numpy(masks[by_member].reshape(3, 16, -1)[[2, 0]]),
            torch.tensor([2, 0]),
        )
        for member, agent in enumerate(pool.league):
            rows = np.flatnonzero(members == member)
            own = agent.network.logits(torch.from_numpy(observations[rows]), torch.from_numpy(masks[rows]))
            assert torch.allclose(stacked[member], own, atol=1e-5)
            if member != 1:
                assert torch.equal(subset[0 if member == 2 else 1], stacked[member])
        baselines = len(pool.baselines)
        actions = pool.act(baselines + members, observations, step.action_mask, np.random.default_rng(0))
        assert masks[np.arange(48), actions].all()
        forced = np.zeros_like(masks)
        forced[np.arange(48), actions] = True
        assert (pool.act(baselines + members, observations, forced, np.random.default_rng(0)) == actions).all()


def test_the_rule_baselines_decide_together_as_each_would_alone() -> None:
    """OpponentPool.act decides every rule baseline's games in one compiled call (agents.rule_based.RuleAgentGroup),
    each game by its own personality; other baselines act on their own."""
    specs = ["rule:heuristic", "random", "rule:cautious", "rule:heuristic,deny=true,caution=1.5"]
    pool = Trainer(tiny_config(baseline_opponents=specs)).pool
    assert pool.rule_member.tolist() == [0, -1, 1, 2]
    venv = PedroVectorEnv(64, config=pool.config)
    step = venv.reset(seed=5)
    rng = np.random.default_rng(0)
    for _ in range(30):
        members = np.arange(64) % len(specs)
        actions = pool.act(members, step.observation, step.action_mask, rng)
        for index in (0, 2, 3):
            rows = np.flatnonzero(members == index)
            alone = pool.baselines[index].act(step.observation[rows], step.action_mask[rows], rng)
            assert actions[rows].tolist() == alone.tolist()
        assert step.action_mask.view(bool)[np.arange(64), actions].all()
        step = venv.step(actions)


def test_training_matches_feed_the_win_rates_and_the_per_group_statistics() -> None:
    trainer = Trainer(
        tiny_config(
            num_envs=64,
            opponent_share=0.4,
            partner_share=0.4,
            opponent_sampling="pfsp",
            env={"target_score": 3, "max_deals": 6},
        )
    )
    for _ in range(6):
        trainer.collect()
    assert trainer.pool.opponent_rates.matches.sum() > 0 and trainer.pool.partner_rates.matches.sum() > 0
    scalars = trainer.game_stats.scalars()
    assert "game/self/contracts" not in scalars and 0.0 <= scalars["game/self/bid_made_rate"] <= 1.0
    for tag in ("game/vs_rule_heuristic/contracts", "game/with_rule_heuristic/contracts"):
        assert 0.0 <= scalars[tag] <= 1.0, tag
    assert "game/vs_rule_heuristic/match_win_rate" in scalars and "game/vs_league/points_per_deal" in scalars
    assert 1 <= scalars["game/self/avg_bid"] <= 14


def test_the_teacher_labels_the_taught_phases_and_kickstarting_pulls_the_policy_towards_it() -> None:
    from pedro_env.actions import PLAY_OFFSET

    config = tiny_config(
        teacher="rule:heuristic",
        teacher_decisions=6 * 32 * 48,
        teacher_coef=5.0,
        teacher_phases=["play"],
        lr=3e-3,
        rollout_steps=48,  # the first deal's bidding, trumps and discards take about twenty steps
    )
    trainer = Trainer(config)
    teacher = make_agent("rule:heuristic", trainer.pedro_config)
    rollout = trainer.collect()
    labelled = rollout.teacher_actions >= 0
    assert labelled.any() and not (labelled & ~rollout.learner).any()  # only the policy's own decisions
    assert (rollout.teacher_actions[labelled] >= PLAY_OFFSET).all()  # play phase only
    playing = rollout.learner & rollout.masks[:, :, PLAY_OFFSET:].any(axis=2)
    assert np.array_equal(labelled, playing)
    observations, masks = rollout.observations[labelled], rollout.masks[labelled]
    expected = teacher.act(observations, masks, np.random.default_rng(0))
    assert np.array_equal(rollout.teacher_actions[labelled], expected)
    held_out = (torch.from_numpy(observations), torch.from_numpy(masks), torch.from_numpy(expected))

    def agreement(network: torch.nn.Module) -> float:
        with torch.no_grad():
            logits = network.logits(held_out[0], held_out[1])
        return float((logits.argmax(dim=1) == held_out[2]).float().mean())

    untaught = Trainer(make_train_config(config, teacher=""))  # the same run without a teacher
    weights = []
    for _ in range(5):
        expected_weight = 5.0 * (1.0 - trainer.decisions / config.teacher_decisions)
        stats = trainer.train_step()
        untaught.train_step()
        weights.append(stats["teacher_weight"])
        assert stats["teacher_weight"] == pytest.approx(expected_weight) and 0 <= stats["teacher_agreement"] <= 1
    assert weights[0] > weights[-1] > 0
    assert agreement(trainer.network) > agreement(untaught.network) + 0.05  # measured: 0.55 against 0.44
    assert trainer.teacher_weight() == pytest.approx(0.0)  # decayed to 0 at teacher_decisions
    rollout = trainer.collect()
    assert (rollout.teacher_actions == -1).all()  # no more labels once the weight is 0
    # one side only: the defenders' decisions (the maker is an opponent: relative seat 1 or 3)
    defenders = Trainer(make_train_config(config, teacher_sides=["defender"], teacher_phases=["discard", "play"]))
    rollout = defenders.collect()
    labelled = rollout.teacher_actions >= 0
    view = decode_observations(rollout.observations[labelled], defenders.pedro_config)
    assert labelled.any() and set(view.maker.tolist()) == {1, 3}
    taught_phases = rollout.learner & rollout.masks[:, :, DISCARD_BASE:].any(axis=2)
    assert labelled.sum() < taught_phases.sum()  # the maker's side is left out
    with pytest.raises(TrainConfigError, match=r"'teacher_phases' = \['lead'\] is not allowed: it takes a list of"):
        make_train_config(teacher_phases=["lead"])


def test_a_teacher_margin_keeps_only_the_card_plays_the_search_settles() -> None:
    from train.teacher import Teacher

    config = tiny_config(teacher="search:pimc,samples=6,depth=2", teacher_phases=["trump", "play"], teacher_margin=0.5)
    rules = make_config()
    venv, heuristic = PedroVectorEnv(16, config=rules), make_agent("rule:heuristic", rules)
    rng = np.random.default_rng(4)
    step, observations, masks = venv.reset(seed=11), [], []
    for _ in range(40):  # bids, trumps, discards and most of the first deal's play
        observations.append(step.observation.copy())
        masks.append(step.action_mask.view(bool).copy())
        step = venv.step(heuristic.act(step.observation, step.action_mask, rng))
    observations, masks = np.concatenate(observations), np.concatenate(masks)
    learner = np.ones(len(observations), dtype=bool)
    games, choices = Teacher(config, rules).label(observations, masks, learner, np.random.default_rng(1))
    every = Teacher(make_train_config(config, teacher_margin=0.0), rules)
    taught, _ = every.label(observations, masks, learner, np.random.default_rng(1))
    expected, margins = every.agent.act_with_margins(observations[taught], masks[taught], np.random.default_rng(1))
    assert np.array_equal(games, taught[margins >= 0.5]) and np.array_equal(choices, expected[margins >= 0.5])
    searched = np.isfinite(margins)  # the play decisions with two legal cards or more; the trumps keep their label
    assert searched.any() and not (margins < 0).any() and (margins[searched] < 0.5).any()
    assert (masks[games].argmax(axis=1) < DISCARD_BASE).any() and ((margins >= 0.5) & searched).any()
    with pytest.raises(TrainConfigError, match="'teacher_margin' = 0.5 needs a teacher that searches the play"):
        Teacher(make_train_config(config, teacher="rule:heuristic"), rules)
    with pytest.raises(TrainConfigError, match="'teacher_margin' > 0 needs 'teacher'"):
        make_train_config(teacher_margin=1.0)


def test_assistants_bid_for_the_policy_and_those_bids_are_not_trained_on() -> None:
    trainer = Trainer(
        tiny_config(
            opponent_share=1.0,
            partner_share=0.0,
            bid_assist_share=1.0,
            bid_assistants=["rule:cautious"],
            rollout_steps=64,  # deals end within the rollout
        )
    )
    rollout = trainer.collect()
    bidding = rollout.masks[:, :, :24].any(axis=2)
    assert bidding.any()
    assert not (bidding & rollout.learner).any()  # every bid of the policy's team came from the assistant
    assert (~bidding & rollout.learner).any()  # the policy plays the rest
    assert "game/assisted/contracts" in trainer.game_stats.scalars()
    with pytest.raises(TrainConfigError, match="'bid_assist_share' > 0 needs 'bid_assistants'"):
        make_train_config(bid_assist_share=0.5, bid_assistants=[])


def test_the_gauntlet_meets_earlier_snapshots_only() -> None:
    trainer = Trainer(tiny_config(league_interval=512, league_size=3, eval_league=2))  # a snapshot every update
    assert trainer.league_names() == []  # only the untrained snapshot so far
    trainer.train_step()
    assert trainer.league_names() == []  # the snapshot just taken is the policy itself
    trainer.train_step()
    trainer.train_step()
    assert [name for name, _ in trainer.league_names()] == ["league@1024", "league@512"]  # newest first
