"""Training checkpoints: exact resume, the points a resume keeps, clear errors for bad or damaged files, init_from,
and ckpt: agents from a run (under its rules and others)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("yaml")
pytest.importorskip("tensorboard")

from agents import AgentSpecError, make_agent  # noqa: E402
from agents.checkpoint import CheckpointError, load_checkpoint, save_checkpoint  # noqa: E402
from arena.match import play_matches  # noqa: E402
from pedro_env import make_config  # noqa: E402
from train.cli import main as train_main  # noqa: E402
from train.config import load_train_config, make_train_config  # noqa: E402
from train.run import run_training  # noqa: E402
from train.trainer import Trainer  # noqa: E402

from conftest import REPO_ROOT, tiny_config, whole_and_resumed  # noqa: E402

SMOKE = REPO_ROOT / "configs" / "smoke.yaml"


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
    for env in ({"variant": "sancho"}, {"num_players": 2}, {"num_players": 3, "scoring": "simple"}):  # one layout
        other_rules = Trainer(tiny_config(init_from=str(exported), env={"target_score": 11, **env}))
        assert all(torch.equal(t, weights[n]) for n, t in other_rules.network.state_dict().items()), env
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
    hidden = shipped["network"]["hidden_sizes"]
    trainer = Trainer(make_train_config(init_from="pretrained", hidden_sizes=hidden, num_envs=4, torch_threads=1))
    migrated = migrated_payload(shipped)["model"]  # in the layout of today
    for name, tensor in trainer.network.state_dict().items():
        assert torch.equal(tensor, migrated[name]), name
    with pytest.raises(CheckpointError, match="init_from pretrained holds another network: hidden_sizes"):
        Trainer(make_train_config(init_from="pretrained", hidden_sizes=[64], num_envs=4, torch_threads=1))
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
