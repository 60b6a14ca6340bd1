"""Self-play PPO: per-seat reward credit and GAE against plain reference loops, masked distributions,
configs, devices, the centralized critic, the CLI end to end and the learning curve."""

from __future__ import annotations

import math
import re
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("yaml")
pytest.importorskip("tensorboard")

from agents.checkpoint import load_checkpoint  # noqa: E402
from agents.networks import MASKED_LOGIT, masked_entropy, sample_actions  # noqa: E402
from pedro_env.vector import PedroVectorEnv  # noqa: E402
from train.cli import main as train_main  # noqa: E402
from train.config import TrainConfigError, load_train_config, make_train_config  # noqa: E402
from train.config_yaml import CONFIGS_DIR, shipped_configs  # noqa: E402
from train.ppo import Rollout, SeatCredit, seat_advantages  # noqa: E402
from train.trainer import Trainer  # noqa: E402

from conftest import REPO_ROOT, run_module, start_module, tiny_config  # noqa: E402

SMOKE = REPO_ROOT / "configs" / "smoke.yaml"


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
    (tmp_path / "empty.yaml").write_text("base: [3]\n")  # a scalar is text: base: 3 names the file 3
    with pytest.raises(TrainConfigError, match=r"'base' = \['3'\] is not allowed: it takes the path of another"):
        load_train_config(tmp_path / "empty.yaml")
    (tmp_path / "a.yaml").write_text("base: b.yaml\n")
    (tmp_path / "b.yaml").write_text("base: a.yaml\n")
    with pytest.raises(TrainConfigError, match="leads back to a file that names it as its base"):
        load_train_config(tmp_path / "a.yaml")


def test_a_shipped_config_is_named_wherever_the_command_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``smoke`` is configs/smoke.yaml from any folder (train/configs/ in a wheel: tests/test_wheel.py); any other
    text is a path as before; a word that is neither is one line listing the names; a base may be a name."""
    assert CONFIGS_DIR == REPO_ROOT / "configs"  # a clone reads the repository's own folder
    names = shipped_configs()
    assert names == sorted(path.stem for path in CONFIGS_DIR.glob("*.yaml")) and "ppo_selfplay" in names
    monkeypatch.chdir(tmp_path)
    for name in names:
        assert load_train_config(name) == load_train_config(REPO_ROOT / "configs" / f"{name}.yaml")
    (tmp_path / "smoke").write_text("num_envs: 8\n")
    assert load_train_config("smoke").num_envs == 64  # the name, not the file of that name here ...
    assert load_train_config("./smoke").num_envs == 8  # ... which a path reads
    (tmp_path / "own.yaml").write_text("base: individual2\nlr: 1e-4\n")
    own, shipped = load_train_config("own.yaml"), load_train_config("individual2")
    assert own == make_train_config(shipped, lr=1e-4)
    (tmp_path / "orphan.yaml").write_text("base: smokey\n")
    for config, words in (
        ("smokey", "config 'smokey' is no shipped config and no file: name one of best_response"),
        ("orphan.yaml", "config file orphan.yaml: base 'smokey' is no shipped config and no file: name one of"),
        ("configs/smoke.yaml", "config file not found: configs/smoke.yaml (or name a shipped config: best_response"),
    ):
        with pytest.raises(TrainConfigError, match=re.escape(words)):
            load_train_config(config)


def test_cli_reports_config_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert train_main([str(SMOKE), "--set", "num_envs=-3", f"runs_dir={tmp_path}"]) == 2
    assert "'num_envs' = -3 is not allowed" in capsys.readouterr().err
    assert train_main([str(SMOKE), "--set", "num_envs=-3", "--set", f"runs_dir={tmp_path}"]) == 2  # every --set counts
    assert "'num_envs' = -3 is not allowed" in capsys.readouterr().err
    assert train_main(["--resume", str(tmp_path / "nothing")]) == 2
    assert "checkpoint not found" in capsys.readouterr().err


def test_device_auto_falls_back_to_cpu_and_cuda_without_cuda_is_an_error() -> None:
    from train.devices import resolve_device

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
