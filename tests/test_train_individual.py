"""Training individual Pedro (two and three players, each alone): partner keys refused in one line, who sits where
in opponent games, the game statistics against several teams, exact resume, and the CLI end to end."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("yaml")
pytest.importorskip("tensorboard")

from train.config import TrainConfigError, load_train_config, make_train_config  # noqa: E402
from train.stats import GameStats  # noqa: E402
from train.trainer import Trainer  # noqa: E402

from conftest import REPO_ROOT, run_module, tiny_config, whole_and_resumed  # noqa: E402

INDIVIDUAL_RULES = {
    2: {"num_players": 2, "target_score": 11},
    3: {"num_players": 3, "scoring": "simple", "target_score": 11},
}
TABLE_SIZES = sorted(INDIVIDUAL_RULES)


@pytest.mark.parametrize("players", TABLE_SIZES)
def test_individual_games_seat_no_partner_and_refuse_every_partner_key_in_one_line(players: int) -> None:
    rules = INDIVIDUAL_RULES[players]
    config = make_train_config(env=rules)  # the defaults' partner share and partner entries do not apply
    assert config.partner_share == 0.0 and not config.eval_partners and config.partner_opponents == "pool"
    with pytest.raises(TrainConfigError) as error:
        make_train_config(env=rules, partner_share=0.3, eval_partners=True, partner_opponents="baselines")
    message = str(error.value)
    assert "\n" not in message and f"env.num_players={players}" in message
    for given in ("partner_share=0.3", "eval_partners=true", "partner_opponents=baselines"):
        assert given in message
    assert "set partner_share=0 partner_opponents=pool eval_partners=false" in message
    with pytest.raises(TrainConfigError, match="partner_share=0.3 seat partners"):  # the default run's file sets it
        load_train_config(
            REPO_ROOT / "configs" / "ppo_selfplay.yaml", [f"env.num_players={players}", "env.scoring=simple"]
        )
    shipped = load_train_config(REPO_ROOT / "configs" / f"individual{players}.yaml")
    assert shipped.pedro_config.num_players == players and shipped.partner_share == 0.0


@pytest.mark.parametrize("players", TABLE_SIZES)
def test_opponent_games_seat_the_policy_alone_and_one_pool_member_at_every_other_seat(players: int) -> None:
    trainer = Trainer(tiny_config(num_envs=300, opponent_share=0.5, env=INDIVIDUAL_RULES[players]))
    controller, team = trainer.seat_controller, trainer.learner_team
    self_play = team < 0
    assert (controller[self_play] == -1).all() and 100 < self_play.sum() < 200
    for game in np.flatnonzero(~self_play):
        policy_seats = np.flatnonzero(controller[game] < 0)
        assert policy_seats.tolist() == [team[game]]  # team = seat: the policy holds one seat
        others = np.delete(controller[game], team[game])
        assert (others >= 0).all() and len(set(others.tolist())) == 1
    assert set(team[~self_play].tolist()) == set(range(players))  # every seat is the policy's in some game
    before = controller.copy()
    rollout = trainer.collect()  # the policy decides exactly at its own seats
    rows, seats = np.arange(trainer.config.num_envs), rollout.seats[0].astype(np.intp)
    assert rollout.learner[0].tolist() == (before[rows, seats] < 0).tolist()


def test_the_points_per_deal_of_a_team_are_its_change_less_the_mean_of_the_other_teams() -> None:
    deals = {
        "redeal": np.array([False, False]),
        "maker": np.array([0, 2]),
        "bid": np.array([5, 7]),
        "made": np.array([1, 0]),
        "delta": np.array([[6, 3, 1], [-7, 4, 2]], dtype=np.int32),  # per team (three players)
        "winner": np.array([-1, -1]),
    }
    step = SimpleNamespace(
        deal_over=np.array([True, True]),
        deals=deals,
        terminated=np.array([False, False]),
        truncated=np.array([False, False]),
    )
    stats = GameStats(["self", "vs rule:heuristic"], num_teams=3)
    stats.record(step, learner_team=np.array([0, 2]), group=np.array([1, 1]))
    scalars = stats.scalars()
    # game 0: team 0 gained 6, the others 3 and 1 (mean 2): +4; game 1: team 2 gained 2, the others -7 and 4: +3.5
    assert scalars["game/points_per_deal"] == pytest.approx((4.0 + 3.5) / 2)
    assert scalars["game/vs_rule_heuristic/points_per_deal"] == pytest.approx((4.0 + 3.5) / 2)
    assert scalars["game/vs_rule_heuristic/contracts"] == pytest.approx(1.0)  # seat 0 made, seat 2 was set
    assert scalars["game/vs_rule_heuristic/bid_made_rate"] == pytest.approx(0.5)


@pytest.mark.parametrize("players", TABLE_SIZES)
def test_an_interrupted_then_resumed_individual_run_equals_an_uninterrupted_one(tmp_path: Path, players: int) -> None:
    config = tiny_config(
        env=INDIVIDUAL_RULES[players],
        opponent_sampling="pfsp",
        teacher="rule:heuristic,deny=true",
        teacher_decisions=1024,
        bid_assist_share=0.2,
        eval_league=1,
    )
    whole, resumed = whole_and_resumed(config, tmp_path)
    assert np.array_equal(whole.venv.state.hands, resumed.venv.state.hands)
    assert whole.rng.bit_generator.state == resumed.rng.bit_generator.state
    assert np.array_equal(whole.pool.opponent_rates.matches, resumed.pool.opponent_rates.matches)
    assert whole.pool.opponent_rates.matches.sum() > 0  # matches against the pool were played and counted
    assert set(whole.latest_eval) >= {"vs_random/win_rate", "worst/win_rate"}
    assert not any(tag.startswith(("with_", "worst_partner")) for tag in whole.latest_eval)


@pytest.mark.slow
def test_a_three_player_run_from_the_cli_logs_checkpoints_and_evaluates_in_the_field_format(tmp_path: Path) -> None:
    done = run_module(
        "train.cli",
        str(REPO_ROOT / "configs" / "smoke.yaml"),
        "--run-name",
        "three",
        "--no-progress",
        "--set",
        f"runs_dir={tmp_path}",
        "env.num_players=3",
        "env.scoring=simple",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    run_dir = tmp_path / "three"
    assert list(run_dir.glob("events.out.tfevents.*")) and (run_dir / "latest.pt").is_file()
    table = (run_dir / "eval.txt").read_text()
    assert "field format (the subject at one of 3 seats, the baseline at the others; parity 33.3%)" in table
    assert "policy vs rule:heuristic" in table and "with rule:heuristic" not in table

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"eval/vs_random/win_rate", "eval/worst/win_rate", "game/points_per_deal"} <= tags
    assert not any(tag.startswith(("eval/with_", "eval/worst_partner")) for tag in tags)
    evaluated = run_module(
        "arena.eval_cli",
        f"ckpt:{run_dir / 'latest.pt'}",
        "random",
        "--pairs",
        "2",
        "--set",
        "num_players=3",
        "scoring=simple",
        "target_score=21",
        "--out",
        str(tmp_path / "ev"),
        "--no-progress",
        cwd=tmp_path,
    )
    assert evaluated.returncode == 0, evaluated.stderr
    assert "field format: 2 rotation sets of 3 seats" in evaluated.stdout
