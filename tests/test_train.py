"""Self-play PPO: per-seat reward credit and GAE against plain reference loops, masked distributions,
configs, checkpoints, exact resume, the CLI end to end, and ckpt: agents."""

from __future__ import annotations

import math
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("yaml")
pytest.importorskip("tensorboard")

from agents import AgentSpecError, make_agent  # noqa: E402
from agents.checkpoint import CheckpointError, load_checkpoint, save_checkpoint  # noqa: E402
from agents.networks import MASKED_LOGIT, StackedLogits, masked_entropy, sample_actions  # noqa: E402
from arena.match import play_matches  # noqa: E402
from pedro_env import make_config  # noqa: E402
from pedro_env.vector import PedroVectorEnv  # noqa: E402
from pedro_env.view import decode_observations  # noqa: E402
from train.cli import main as train_main  # noqa: E402
from train.config import TrainConfigError, load_train_config, make_train_config  # noqa: E402
from train.ppo import Rollout, SeatCredit, seat_advantages  # noqa: E402
from train.run import run_training  # noqa: E402
from train.trainer import Trainer  # noqa: E402

from conftest import REPO_ROOT, run_module, start_module, tiny_config, whole_and_resumed  # noqa: E402

SMOKE = REPO_ROOT / "configs" / "smoke.yaml"
DISCARD_BASE = 28  # the first discard action (docs/rules.md section 11)


# ---------------------------------------------------------------- rewards and GAE per seat


def reference_credit(steps, increments, actors, learner):
    """Plain loop: each decision's reward = its seat's reward increments until that seat's next decision
    or its episode's end; ``done`` when the episode ended first. Open trajectories take what arrived."""
    horizon, games = len(actors), actors[0].shape[0]
    rewards = np.zeros((horizon, games), dtype=np.float64)
    dones = np.zeros((horizon, games), dtype=bool)
    for b in range(games):
        open_decision: dict[int, int] = {}
        for t in range(horizon):
            seat = int(actors[t][b])
            if learner[t][b]:
                open_decision[seat] = t
            after = steps[t]  # the step taken at t
            for s, value in enumerate(increments[t][b]):
                if s in open_decision:
                    rewards[open_decision[s], b] += value
            if after.terminated[b] or after.truncated[b]:
                for d in open_decision.values():
                    dones[d, b] = True
                open_decision = {}
    return rewards, dones


@pytest.mark.parametrize("episode", ["deal", "match"])
def test_rewards_go_to_the_seat_that_earned_them(episode: str) -> None:
    """SeatCredit against a loop over the engine's per-step reward increments (state.rewards), which never
    mixes seats: the classic pitfall (one seat's reward with another seat's observation) would differ."""
    games, horizon = 24, 400
    venv = PedroVectorEnv(games, episode=episode, target_score=11)
    step = venv.reset(seed=5)
    rng = np.random.default_rng(0)
    rollout = Rollout.empty(horizon, games, venv.observation_size, None)
    credit = SeatCredit(games, venv.num_players)
    learner_seats = rng.random((games, venv.num_players)) < 0.7  # the other seats are an opponent's, not tracked
    steps, increments, actors, learner = [], [], [], []
    for t in range(horizon):
        credit.on_step(step, rollout)
        learner_now = learner_seats[np.arange(games), step.actor]
        rows = np.flatnonzero(learner_now)
        credit.record(t, rows, step.actor[rows].astype(np.intp))
        actors.append(step.actor.copy())
        learner.append([bool(x) for x in learner_now])
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in step.action_mask])
        step = venv.step(actions)
        steps.append(step)
        increments.append(venv.state.rewards.copy())
    credit.finish(step, rollout)
    expected_rewards, expected_dones = reference_credit(steps, increments, actors, learner)
    tracked = np.array(learner)
    assert np.allclose(rollout.rewards[tracked], expected_rewards[tracked], atol=1e-6)
    assert np.array_equal(rollout.dones[tracked], expected_dones[tracked])
    assert np.any(rollout.rewards[tracked] != 0) and rollout.dones[tracked].any()


def reference_gae(rewards, values, dones, seats, learner, bootstrap, gamma, lam):
    """Per (game, seat): list that seat's decisions in time order and run textbook GAE backwards."""
    horizon, games = rewards.shape
    out = np.zeros((horizon, games))
    for b in range(games):
        for s in range(bootstrap.shape[1]):
            decisions = [t for t in range(horizon) if learner[t, b] and seats[t, b] == s]
            advantage, next_value = 0.0, bootstrap[b, s]
            for t in reversed(decisions):
                live = 0.0 if dones[t, b] else 1.0
                delta = rewards[t, b] + gamma * next_value * live - values[t, b]
                advantage = delta + gamma * lam * live * advantage
                out[t, b] = advantage
                next_value = values[t, b]
    return out


def test_seat_gae_equals_a_plain_reference_loop() -> None:
    rng = np.random.default_rng(3)
    horizon, games, seats = 50, 7, 4
    rewards = rng.normal(size=(horizon, games)).astype(np.float32) * (rng.random((horizon, games)) < 0.3)
    values = rng.normal(size=(horizon, games)).astype(np.float32)
    dones = rng.random((horizon, games)) < 0.05
    seat = rng.integers(0, seats, size=(horizon, games)).astype(np.int8)
    learner = rng.random((horizon, games)) < 0.85
    bootstrap = rng.normal(size=(games, seats)).astype(np.float32)
    got = seat_advantages(rewards, values, dones, seat, learner, bootstrap, 0.97, 0.9)
    want = reference_gae(rewards, values, dones, seat, learner, bootstrap, 0.97, 0.9)
    assert np.allclose(got, want, atol=1e-5)
    # a seat's advantage does not depend on another seat's rewards
    other = rewards.copy()
    other[seat != 0] += 5.0
    moved = seat_advantages(other, values, dones, seat, learner, bootstrap, 0.97, 0.9)
    assert np.allclose(moved[seat == 0], got[seat == 0])


# ---------------------------------------------------------------- the masked distribution


def test_masked_sampling_never_draws_an_illegal_action_and_entropy_ignores_masked_ones() -> None:
    generator = torch.Generator().manual_seed(0)
    raw = torch.randn(2000, 133, generator=generator) * 10
    masks = torch.rand(2000, 133, generator=generator) < 0.05
    masks[:, 7] = True
    logits = raw.masked_fill(~masks, MASKED_LOGIT)
    for _ in range(5):
        actions = sample_actions(logits, generator)
        assert masks[torch.arange(2000), actions].all()
    entropy = masked_entropy(logits, masks)
    for row in range(20):
        legal = raw[row][masks[row]]
        p = torch.softmax(legal, dim=0)
        assert math.isclose(float(entropy[row]), float(-(p * p.log()).sum()), rel_tol=1e-4, abs_tol=1e-5)
    # the raw values of masked logits change nothing
    other = (raw + 100 * (~masks)).masked_fill(~masks, MASKED_LOGIT)
    assert torch.allclose(masked_entropy(other, masks), entropy)
    # a single legal action: zero entropy, always drawn
    single = torch.zeros(1, 133, dtype=torch.bool)
    single[0, 42] = True
    logits = torch.randn(1, 133, generator=generator).masked_fill(~single, MASKED_LOGIT)
    assert float(masked_entropy(logits, single)) == pytest.approx(0.0, abs=1e-6)
    assert int(sample_actions(logits, generator)) == 42


# ---------------------------------------------------------------- configs


def test_config_errors_name_the_key_and_the_allowed_values(tmp_path: Path) -> None:
    with pytest.raises(TrainConfigError, match=r"unknown config key 'learning_rate': known keys are .*lr"):
        make_train_config(learning_rate=1e-3)
    with pytest.raises(TrainConfigError, match=r"'num_envs' = 0 is not allowed: it takes an int from 1 to 2\*\*20"):
        make_train_config(num_envs=0)
    with pytest.raises(TrainConfigError, match=r"'lr' = 'fast'"):
        make_train_config(lr="fast")
    with pytest.raises(TrainConfigError, match=r"'device' = 'tpu' is not allowed: allowed values are auto, cpu, cuda"):
        make_train_config(device="tpu")
    with pytest.raises(TrainConfigError, match=r"'partner_opponents' = 'all' is not allowed: allowed values are pool"):
        make_train_config(partner_opponents="all")
    with pytest.raises(TrainConfigError, match=r"config key 'env': .*'variant' = 'euchre'"):
        make_train_config(env={"variant": "euchre"})
    with pytest.raises(TrainConfigError, match=r"unknown agent spec 'rule:clever'"):
        make_train_config(eval_opponents=["rule:clever"])
    with pytest.raises(TrainConfigError, match="config file not found"):
        load_train_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("- just\n- a list\n")
    with pytest.raises(TrainConfigError, match="must hold a mapping"):
        load_train_config(bad)
    config = load_train_config(SMOKE, ["lr=1e-4", "env.target_score=31", "hidden_sizes=[16, 8]"])
    assert config.lr == 1e-4 and config.pedro_config.target_score == 31 and config.hidden_sizes == (16, 8)
    for name in ("smoke.yaml", "ppo_selfplay.yaml", "ppo_long.yaml", "ppo_long_finetune.yaml", "best_response.yaml"):
        load_train_config(REPO_ROOT / "configs" / name)  # every shipped config is valid
    for name in ("../../x", "a/b", "..", "a\\b"):
        with pytest.raises(TrainConfigError, match=r"'run_name' = .* names one directory under runs_dir"):
            make_train_config(run_name=name)
    numbers = tmp_path / "numbers.yaml"
    numbers.write_text("lr: 1e-4\ntotal_decisions: 2e6\n")  # PyYAML reads both as strings
    config = load_train_config(numbers)
    assert config.lr == 1e-4 and config.total_decisions == 2_000_000
    numbers.write_text("lr: 1e-4x\n")
    with pytest.raises(TrainConfigError, match=r"'lr' = '1e-4x' is not allowed: it takes a number"):
        load_train_config(numbers)


def test_a_config_file_builds_on_its_base(tmp_path: Path) -> None:
    first = load_train_config(REPO_ROOT / "configs" / "ppo_long.yaml").to_dict()
    second = load_train_config(REPO_ROOT / "configs" / "ppo_long_finetune.yaml").to_dict()
    changed = {key for key in first if first[key] != second[key]}
    assert changed == {"total_decisions", "init_from", "seed", "lr", "teacher_coef", "teacher_decisions"}
    (tmp_path / "base.yaml").write_text("lr: 1e-4\nnum_envs: 8\nenv: {target_score: 21, variant: cinch}\n")
    (tmp_path / "child.yaml").write_text("base: base.yaml\nnum_envs: 16\nenv: {target_score: 31}\n")
    child = load_train_config(tmp_path / "child.yaml")
    assert (child.lr, child.num_envs) == (1e-4, 16)
    assert (child.pedro_config.target_score, child.pedro_config.variant) == (31, "cinch")  # env merged key by key
    (tmp_path / "orphan.yaml").write_text("base: missing.yaml\n")
    with pytest.raises(TrainConfigError, match="config file not found: .*missing.yaml"):
        load_train_config(tmp_path / "orphan.yaml")
    (tmp_path / "empty.yaml").write_text("base: 3\n")
    with pytest.raises(TrainConfigError, match=r"'base' = 3 is not allowed: it takes the path of another config file"):
        load_train_config(tmp_path / "empty.yaml")
    (tmp_path / "a.yaml").write_text("base: b.yaml\n")
    (tmp_path / "b.yaml").write_text("base: a.yaml\n")
    with pytest.raises(TrainConfigError, match="leads back to a file that names it as its base"):
        load_train_config(tmp_path / "a.yaml")


def test_cli_reports_config_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert train_main([str(SMOKE), "--set", "num_envs=-3", f"runs_dir={tmp_path}"]) == 2
    assert "'num_envs' = -3 is not allowed" in capsys.readouterr().err
    assert train_main(["--resume", str(tmp_path / "nothing")]) == 2
    assert "checkpoint not found" in capsys.readouterr().err


# ---------------------------------------------------------------- checkpoints and resume


def model_tensors(trainer: Trainer) -> dict[str, torch.Tensor]:
    return {name: tensor.clone() for name, tensor in trainer.network.state_dict().items()}


@pytest.mark.parametrize(("sampling", "precision"), [("uniform", "float32"), ("pfsp", "float32"), ("pfsp", "bfloat16")])
def test_interrupted_then_resumed_run_equals_an_uninterrupted_one(
    tmp_path: Path, sampling: str, precision: str
) -> None:
    config = tiny_config(opponent_sampling=sampling, partner_share=0.3, bid_entropy_boost=3.0, precision=precision)
    whole, resumed = whole_and_resumed(config, tmp_path)
    assert np.array_equal(whole.venv.state.hands, resumed.venv.state.hands)
    assert whole.pool.league_decisions == resumed.pool.league_decisions
    assert whole.rng.bit_generator.state == resumed.rng.bit_generator.state
    assert np.array_equal(whole.pool.opponent_rates.matches, resumed.pool.opponent_rates.matches)
    assert np.array_equal(whole.pool.partner_rates.wins, resumed.pool.partner_rates.wins)
    whole_optimizer, resumed_optimizer = whole.optimizer.state_dict(), resumed.optimizer.state_dict()
    for key, state in whole_optimizer["state"].items():
        assert torch.equal(state["exp_avg"], resumed_optimizer["state"][key]["exp_avg"])


def test_a_resume_keeps_every_point_logged_up_to_its_checkpoint(tmp_path: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    def steps(tag: str) -> list[int]:
        events = EventAccumulator(str(tmp_path / "run"), size_guidance={"scalars": 0})
        events.Reload()
        return sorted({point.step for point in events.Scalars(tag)})

    config = tiny_config(final_eval_pairs=2)
    run_training(config, tmp_path / "run", progress=False)  # to the end, with its final evaluation
    finished = {tag: steps(tag) for tag in ("eval/vs_random/win_rate", "charts/SPS")}
    assert finished["eval/vs_random/win_rate"][-1] == config.total_decisions
    longer = make_train_config(config, total_decisions=config.total_decisions + 2 * 32 * 16)
    run_training(longer, tmp_path / "run", load_checkpoint(tmp_path / "run"), progress=False)  # extended
    for tag, before in finished.items():
        after = steps(tag)
        assert after[: len(before)] == before, tag  # nothing up to the checkpoint was purged
    assert steps("charts/SPS")[-1] == longer.total_decisions


def test_periodic_evaluations_and_no_periodic_one_where_the_final_one_follows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    evaluated: list[tuple[int, int]] = []
    evaluate = Trainer.evaluate

    def recording_evaluate(self: Trainer, pairs: int, *args, **kwargs):
        evaluated.append((self.decisions, pairs))
        return evaluate(self, pairs, *args, **kwargs)

    monkeypatch.setattr(Trainer, "evaluate", recording_evaluate)
    per_update = 32 * 16
    run_training(tiny_config(final_eval_pairs=3), tmp_path / "final", progress=False)
    assert evaluated == [(2 * per_update, 2), (4 * per_update, 3)]
    assert "policy vs random" in (tmp_path / "final" / "eval.txt").read_text(encoding="utf-8")
    evaluated.clear()
    run_training(tiny_config(), tmp_path / "no-final", progress=False)  # final_eval_pairs 0: the periodic one stays
    assert evaluated == [(2 * per_update, 2), (4 * per_update, 2)]


def test_checkpoint_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="checkpoint not found"):
        load_checkpoint(tmp_path / "nope.pt")
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(b"\x80\x02" + bytes(range(256)) * 8)
    with pytest.raises(CheckpointError, match="corrupt or not a torch checkpoint"):
        load_checkpoint(corrupt)
    foreign = tmp_path / "foreign.pt"
    torch.save({"state_dict": {"w": torch.zeros(3)}}, foreign)
    with pytest.raises(CheckpointError, match="not a pedro-train checkpoint"):
        load_checkpoint(foreign)
    unsafe = tmp_path / "unsafe.pt"
    torch.save({"format": "pedro-rl/ppo-checkpoint", "version": 1, "thing": Path("x")}, unsafe)
    with pytest.raises(CheckpointError, match="cannot read checkpoint"):
        load_checkpoint(unsafe)  # weights_only refuses pickled classes
    truncated = tmp_path / "truncated.pt"
    save_checkpoint(Trainer(tiny_config()).state_dict(), tmp_path / "good.pt")
    truncated.write_bytes((tmp_path / "good.pt").read_bytes()[:5000])
    with pytest.raises(CheckpointError, match="cannot read checkpoint"):
        load_checkpoint(truncated)
    for path in (corrupt, foreign, truncated):
        with pytest.raises(AgentSpecError, match=f"ckpt:{path}"):
            make_agent(f"ckpt:{path}")
    with pytest.raises(AgentSpecError, match="checkpoint not found"):
        make_agent(f"ckpt:{tmp_path / 'missing.pt'}")


def test_init_from_starts_from_a_checkpoints_weights_and_refuses_another_network(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = run_training(tiny_config(), tmp_path / "first", progress=False)
    weights = model_tensors(first)
    for source in (tmp_path / "first", tmp_path / "first" / "latest.pt"):  # a run directory or its checkpoint
        second = Trainer(tiny_config(init_from=str(source), seed=2))
        for name, tensor in second.network.state_dict().items():
            assert torch.equal(tensor, weights[name]), name
        assert not second.optimizer.state_dict()["state"]  # a fresh optimizer
    exported = tmp_path / "policy.pt"
    assert train_main(["--export", str(tmp_path / "first"), str(exported)]) == 0
    from_export = Trainer(tiny_config(init_from=str(exported)))
    assert all(torch.equal(t, weights[n]) for n, t in from_export.network.state_dict().items())
    with pytest.raises(CheckpointError, match=r"holds another network: hidden_sizes \(32,\) \(this config: \(16,\)\)"):
        Trainer(tiny_config(init_from=str(exported), hidden_sizes=[16]))
    Trainer(tiny_config(init_from=str(exported), env={"target_score": 11, "variant": "sancho"}))  # one layout
    with pytest.raises(CheckpointError, match="was trained for 4 players; these games have 2"):
        Trainer(tiny_config(init_from=str(exported), env={"target_score": 11, "num_players": 2}))
    with pytest.raises(CheckpointError, match="checkpoint not found"):
        Trainer(tiny_config(init_from=str(tmp_path / "missing.pt")))
    # the CLI: a one-line error before any file of the run is written
    assert train_main([str(SMOKE), "--set", f"runs_dir={tmp_path}", "init_from=nowhere.pt", "--run-name", "x"]) == 2
    assert "checkpoint not found: nowhere.pt" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    # a resume reads its own checkpoint's weights: the starting file may be gone by then
    run_training(tiny_config(init_from=str(exported)), tmp_path / "tuned", progress=False, max_updates=1)
    exported.unlink()
    resumed = run_training(
        tiny_config(init_from=str(exported)), tmp_path / "tuned", load_checkpoint(tmp_path / "tuned"), progress=False
    )
    assert resumed.decisions == resumed.config.total_decisions


def test_init_from_pretrained_loads_the_shipped_policy() -> None:
    from agents import PPO_POLICY_PATH, PRETRAINED_PATH
    from agents.policy import migrated_payload

    shipped = load_checkpoint(PRETRAINED_PATH)
    hidden = shipped["network"]["hidden_sizes"]  # the distilled policy is wider than the default network
    trainer = Trainer(make_train_config(init_from="pretrained", hidden_sizes=hidden, num_envs=4, torch_threads=1))
    migrated = migrated_payload(shipped)["model"]  # saved in layout version 1
    for name, tensor in trainer.network.state_dict().items():
        assert torch.equal(tensor, migrated[name]), name
    with pytest.raises(CheckpointError, match="init_from pretrained holds another network: hidden_sizes"):
        Trainer(make_train_config(init_from="pretrained", num_envs=4, torch_threads=1))
    # the long recipe's second stage starts where its config says: a quarter of the learning rate, the teacher's floor
    second = Trainer(
        load_train_config(
            REPO_ROOT / "configs" / "ppo_long_finetune.yaml", [f"init_from={PPO_POLICY_PATH}", "num_envs=4"]
        )
    )
    assert second.learning_rate() == 7.5e-5 and second.teacher_weight() == 0.2
    first = load_train_config(REPO_ROOT / "configs" / "ppo_long.yaml")
    assert second.learning_rate() == first.lr * (1 - 60 / 80) and second.teacher_weight() == first.teacher_floor


def test_damaged_checkpoints_always_raise_checkpoint_error(tmp_path: Path) -> None:
    """Random bytes make torch.load raise many kinds of error (IndexError, KeyError, ...); all are reported."""
    rng = np.random.default_rng(20261130)
    good = tmp_path / "good.pt"
    save_checkpoint(Trainer(tiny_config()).state_dict(), good)
    good_bytes = good.read_bytes()
    damaged = tmp_path / "damaged.pt"
    for trial in range(400):
        if trial % 2:
            blob = rng.bytes(int(rng.integers(1, 4000)))
        else:  # a real checkpoint with a run of bytes overwritten
            start = int(rng.integers(0, len(good_bytes) - 64))
            blob = good_bytes[:start] + rng.bytes(64) + good_bytes[start + 64 :]
        damaged.write_bytes(blob)
        try:
            load_checkpoint(damaged)
        except CheckpointError as error:
            assert str(damaged) in str(error)
        else:  # overwritten tensor data still unpickles; the structure must then be intact
            assert trial % 2 == 0


def test_checkpoint_agent_plays_legal_actions(tmp_path: Path) -> None:
    trainer = Trainer(tiny_config())
    trainer.train_step()
    save_checkpoint(trainer.state_dict(), tmp_path / "run" / "latest.pt")
    config = make_config(target_score=11)
    for spec in (f"ckpt:{tmp_path / 'run' / 'latest.pt'}", f"ckpt:{tmp_path / 'run'},greedy=false"):
        agent = make_agent(spec, config)
        results = play_matches([[agent], [make_agent("random", config)]], config, pairs=3, seed=9)
        assert len(results) == 6  # an illegal action would have raised
    three = make_config(num_players=3, scoring="simple")
    with pytest.raises(AgentSpecError, match="was trained for 4 players; these games have 3"):
        make_agent(f"ckpt:{tmp_path / 'run'}", three)
    sancho = make_config(variant="sancho")  # one layout reads every variant: it plays, saying where it trained
    assert "variant 'cinch' (here 'sancho')" in make_agent(f"ckpt:{tmp_path / 'run'}", sancho).trained_rules_note
    older = {key: value for key, value in trainer.state_dict().items() if key != "observation_layout"}
    save_checkpoint(older, tmp_path / "older.pt")  # written before layouts were recorded: its size tells the layout
    assert make_agent(f"ckpt:{tmp_path / 'older.pt'}", sancho).network.shape.observation_size == 954


def test_a_policy_played_under_other_rules_than_its_training_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from arena.eval_cli import main as eval_main

    trainer = Trainer(tiny_config())  # target_score 11
    save_checkpoint(trainer.state_dict(), tmp_path / "run" / "latest.pt")
    spec = f"ckpt:{tmp_path / 'run'}"
    assert make_agent(spec, make_config(target_score=11)).trained_rules_note == ""
    assert make_agent(spec, make_config(target_score=21)).trained_rules_note == "target_score 11 (here 21)"
    out = str(tmp_path / "ev")
    arguments = [spec, "random", "--pairs", "1", "--workers", "1", "--no-progress", "--out", out, "--set"]
    assert eval_main([*arguments, "target_score=21", "max_deals=5"]) == 0
    assert (
        f"pedro-eval: note: {spec} was trained under other rules: target_score 11 (here 21)" in capsys.readouterr().err
    )
    assert eval_main([*arguments, "target_score=11", "max_deals=5"]) == 0
    assert "note" not in capsys.readouterr().err


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
    with pytest.raises(TrainConfigError, match="'teacher_phases': 'lead' is not a phase: allowed are bid, trump"):
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


def test_device_auto_falls_back_to_cpu_and_cuda_without_cuda_is_an_error() -> None:
    from train.trainer import resolve_device

    if torch.cuda.is_available():
        assert resolve_device("auto").type == "cuda"
    else:
        assert resolve_device("auto").type == "cpu"
        with pytest.raises(ValueError, match="no CUDA device: use device=auto or device=cpu"):
            resolve_device("cuda")
    assert resolve_device("cpu").type == "cpu"


def test_centralized_critic_trains(tmp_path: Path) -> None:
    trainer = Trainer(tiny_config(centralized_critic=True))
    stats = trainer.train_step()
    assert trainer.rollout.critic_inputs is not None
    assert trainer.network.shape.critic_input_size > trainer.network.shape.observation_size
    assert all(math.isfinite(stats[key]) for key in ("policy_loss", "value_loss", "entropy"))


# ---------------------------------------------------------------- the CLI, end to end


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_module("train.cli", *args, cwd=cwd)


@pytest.mark.slow
def test_smoke_config_runs_end_to_end_from_the_cli(tmp_path: Path) -> None:
    done = run_cli(str(SMOKE), "--run-name", "smoke", "--no-progress", "--set", f"runs_dir={tmp_path}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run_dir = tmp_path / "smoke"
    assert list(run_dir.glob("events.out.tfevents.*"))
    assert (run_dir / "latest.pt").is_file() and (run_dir / "config.yaml").is_file()
    table = (run_dir / "eval.txt").read_text()
    assert "policy vs random" in table and "policy vs rule:heuristic" in table

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    for tag in (
        "charts/SPS",
        "charts/learning_rate",
        "losses/policy_loss",
        "losses/value_loss",
        "losses/entropy",
        "losses/approx_kl",
        "losses/clipfrac",
        "losses/explained_variance",
        "game/avg_bid",
        "game/bid_made_rate",
        "game/points_per_deal",
        "eval/vs_random/win_rate",
        "eval/vs_random/win_rate_low",
        "eval/vs_rule_heuristic/points_per_deal",
        "eval/vs_rule_heuristic/contracts",
        "eval/with_rule_heuristic/win_rate",
        "eval/worst/win_rate",
        "eval/worst_partner/win_rate",
        "game/vs_rule_heuristic/contracts",
        "opponents/rule_heuristic/weight",
    ):
        assert tag in tags, tag
    assert "WORST as opponent" in table and "(league)" in table
    # the checkpoint plays in the harness
    evaluated = run_module(
        "arena.eval_cli",
        f"ckpt:{run_dir / 'latest.pt'}",
        "random",
        "--pairs",
        "2",
        "--set",
        "target_score=21",
        "--out",
        str(tmp_path / "ev"),
        "--no-progress",
        cwd=tmp_path,
        timeout=300,
    )
    assert evaluated.returncode == 0, evaluated.stderr
    # a second run into the same directory is refused, resuming a finished run is a no-op that keeps it
    again = run_cli(str(SMOKE), "--run-name", "smoke", "--set", f"runs_dir={tmp_path}", cwd=tmp_path)
    assert again.returncode == 2 and "--resume" in again.stderr
    fixed = run_cli("--resume", str(run_dir), "--set", "num_envs=8", cwd=tmp_path)
    assert fixed.returncode == 2 and "cannot change num_envs when resuming" in fixed.stderr


@pytest.mark.slow
def test_ctrl_c_saves_a_checkpoint_and_resume_finishes_like_an_uninterrupted_run(tmp_path: Path) -> None:
    settings = [
        "--no-progress",
        "--set",
        f"runs_dir={tmp_path}",
        "torch_threads=1",
        "total_decisions=40960",
        "eval_interval=0",
        "final_eval_pairs=0",
    ]
    whole = run_cli(str(SMOKE), "--run-name", "whole", *settings, cwd=tmp_path)
    assert whole.returncode == 0, whole.stderr
    process = start_module("train.cli", str(SMOKE), "--run-name", "cut", *settings, cwd=tmp_path, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and not (tmp_path / "cut" / "latest.pt").exists():
        time.sleep(0.05)  # the first interval checkpoint: training is under way
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=300)
    cut = load_checkpoint(tmp_path / "cut")
    if cut["counters"]["decisions"] >= 40960:
        pytest.skip("the run finished before the interrupt arrived")
    assert process.returncode == 130 and "pedro-train --resume" in err, err  # one line saying what was kept
    resumed = run_cli("--resume", str(tmp_path / "cut"), "--no-progress", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    final_whole, final_cut = load_checkpoint(tmp_path / "whole"), load_checkpoint(tmp_path / "cut")
    assert final_cut["counters"]["decisions"] == final_whole["counters"]["decisions"]
    for name, tensor in final_whole["model"].items():
        assert torch.equal(tensor, final_cut["model"][name]), name


def test_learning_curve_keeps_one_point_per_step_the_last_evaluation(tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    from train.curve import plot_curves, read_curves

    writer = SummaryWriter(str(tmp_path))
    # periodic evaluations at 10 and 20, then the final one (more pairs, a tighter interval) at 20 again
    for step, (rate, low, high) in [(10, (0.4, 0.3, 0.5)), (20, (0.6, 0.5, 0.7)), (20, (0.62, 0.59, 0.65))]:
        for name, value in (("win_rate", rate), ("win_rate_low", low), ("win_rate_high", high)):
            writer.add_scalar(f"eval/vs_random/{name}", value, step)
    writer.add_scalar("charts/SPS", 1.0, 10)
    writer.close()
    curve = read_curves(tmp_path)["vs_random"]
    assert curve["decisions"].tolist() == [10, 20]
    assert np.allclose(curve["win_rate"], [0.4, 0.62]) and np.allclose(curve["low"], [0.3, 0.59])
    assert np.allclose(curve["high"], [0.5, 0.65]) and (np.diff(curve["minutes"]) >= 0).all()
    assert plot_curves({"vs_random": curve}, tmp_path / "curve.png", "test").stat().st_size > 0


def test_learning_curve_leaves_out_the_pause_before_a_resume(tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    from train.curve import read_curves

    day = 86_400.0
    # the resumed session opens its own events file a day later; its evaluations are 5 and 10 minutes in
    for session in [[(0.0, None), (600.0, 10)], [(day + 30.0, None), (day + 330.0, 20), (day + 630.0, 30)]]:
        writer = SummaryWriter(str(tmp_path))
        for wall_time, step in session:
            writer.add_scalar("charts/SPS", 1.0, step or 0, walltime=wall_time)
            if step is not None:
                for name in ("win_rate", "win_rate_low", "win_rate_high"):
                    writer.add_scalar(f"eval/vs_random/{name}", step / 100, step, walltime=wall_time)
        writer.close()
    curve = read_curves(tmp_path)["vs_random"]
    assert curve["decisions"].tolist() == [10, 20, 30]
    assert np.allclose(curve["minutes"], [10.0, 15.0, 20.0]) and np.allclose(curve["win_rate"], [0.1, 0.2, 0.3])


def test_learning_curve_reads_the_gauntlet_worst_cases_and_leaves_the_league_out(tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    from train.curve import plot_curves, read_curves

    writer = SummaryWriter(str(tmp_path))
    for step in (10, 20):
        for entry in ("vs_random", "with_random", "worst", "worst_partner", "vs_league1", "with_league1"):
            for name, value in (("win_rate", 0.5), ("win_rate_low", 0.4), ("win_rate_high", 0.6)):
                writer.add_scalar(f"eval/{entry}/{name}", value + step / 100, step)
        writer.add_scalar("eval/vs_random/contracts", 0.3, step)
    writer.close()
    curves = read_curves(tmp_path)
    assert set(curves) == {"vs_random", "with_random", "worst", "worst_partner"}
    assert np.allclose(curves["worst"]["win_rate"], [0.6, 0.7])
    assert plot_curves(curves, tmp_path / "curve.png", "test").stat().st_size > 0
