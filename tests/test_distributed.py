"""Training across processes (train/distributed.py): the ranks' settings, the averaged gradient against one
process on the concatenated batch, identical parameters on every rank, an evaluation split over the
ranks equal to one process's, and 2-rank runs through torchrun: one writer, exact resume, a clear
refusal at another world size, Ctrl-C and a dead rank ending the job with the checkpoint intact."""

from __future__ import annotations

import copy
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("yaml")
pytest.importorskip("tensorboard")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as torch_multiprocessing  # noqa: E402

from agents.checkpoint import load_checkpoint  # noqa: E402
from agents.networks import ActorCritic, NetworkShape  # noqa: E402
from agents.policy import policy_bytes  # noqa: E402
from arena.gauntlet import gauntlet_entries, run_gauntlet  # noqa: E402
from pedro_env import make_config  # noqa: E402
from pedro_env.actions import NUM_ACTIONS  # noqa: E402
from pedro_env.observation_layout import observation_scale, observation_size  # noqa: E402
from train.cli import _without_nproc  # noqa: E402
from train.config import make_train_config  # noqa: E402
from train.distributed import (  # noqa: E402
    Exchange,
    LocalBatch,
    RankBatch,
    Ranks,
    RanksError,
    leave,
    rank_device,
    ranks_from_environment,
)
from train.ppo import Rollout, ppo_update  # noqa: E402
from train.trainer import Trainer  # noqa: E402

from conftest import REPO_ROOT, killed_on_failure, module_env, run_module, tiny_config  # noqa: E402

SMOKE = REPO_ROOT / "configs" / "smoke.yaml"


# ---------------------------------------------------------------- settings


def test_ranks_come_from_torchruns_variables() -> None:
    assert not ranks_from_environment({}).distributed
    ranks = ranks_from_environment({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"})
    assert ranks == Ranks(3, 4, 1, 2) and ranks.distributed and not ranks.main
    with pytest.raises(RanksError, match="inconsistent"):
        ranks_from_environment({"RANK": "4", "WORLD_SIZE": "4"})
    with pytest.raises(RanksError, match="integers"):
        ranks_from_environment({"RANK": "x", "WORLD_SIZE": "2"})


def test_each_rank_gets_its_own_gpu_and_mistakes_are_clear() -> None:
    two_here = Ranks(1, 4, 1, 2)
    assert rank_device("auto", two_here, cuda_count=0) == torch.device("cpu")
    assert rank_device("cpu", two_here, cuda_count=2) == torch.device("cpu")
    assert rank_device("auto", two_here, cuda_count=2) == torch.device("cuda", 1)
    assert rank_device("cuda", two_here, cuda_count=8) == torch.device("cuda", 1)
    with pytest.raises(RanksError, match="no CUDA device"):
        rank_device("cuda", two_here, cuda_count=0)
    with pytest.raises(RanksError, match="one GPU per rank"):
        rank_device("auto", two_here, cuda_count=1)


def test_nproc_is_taken_out_of_the_command_the_ranks_run() -> None:
    assert _without_nproc(["c.yaml", "--nproc", "2", "--run-name", "x"]) == ["c.yaml", "--run-name", "x"]
    assert _without_nproc(["--nproc=4", "c.yaml"]) == ["c.yaml"]


# ---------------------------------------------------------------- two gloo ranks in spawned processes


def _spawn(function, tmp_path: Path, *args) -> None:
    """Run ``function(rank, world_size, init_file, *args)`` on two gloo ranks; a rank's failure fails the test."""
    init_file = tmp_path / "rendezvous"
    torch_multiprocessing.spawn(function, args=(2, str(init_file), *args), nprocs=2, join=True)


def _join(rank: int, world_size: int, init_file: str) -> Exchange:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size)
    return Exchange(Ranks(rank, world_size, rank, world_size))


def _leave(exchange: Exchange) -> None:
    """The ranks leave together, as pedro-train's do, through its ``leave`` (the caller has dropped its
    DistributedDataParallel wrapper: one that outlives its group aborts the process at exit)."""
    exchange.barrier()
    leave()


def _synthetic_rollout(games: int, seed: int) -> tuple[Rollout, np.ndarray]:
    """A rollout of random decisions (legal actions, labels for the teacher on some) and its advantages."""
    config = make_config()
    rng = np.random.default_rng(seed)
    steps = 6
    rollout = Rollout.empty(steps, games, observation_size(config), None)
    rollout.observations[:] = rng.integers(0, 3, size=rollout.observations.shape)
    rollout.masks[:] = rng.random(rollout.masks.shape) < 0.2
    rollout.masks[:, :, 0] = True
    legal = [np.flatnonzero(mask) for mask in rollout.masks.reshape(-1, NUM_ACTIONS)]
    rollout.actions[:] = np.array([rng.choice(actions) for actions in legal]).reshape(steps, games)
    taught = np.array([rng.choice(actions) for actions in legal]).reshape(steps, games)
    rollout.teacher_actions[:] = np.where(rng.random((steps, games)) < 0.5, taught, -1)
    rollout.log_probs[:] = -rng.random((steps, games)).astype(np.float32) * 3
    rollout.values[:] = rng.normal(size=(steps, games)).astype(np.float32)
    rollout.learner[:] = rng.random((steps, games)) < 0.6
    advantages = rng.normal(size=(steps, games)).astype(np.float32)
    return rollout, advantages


def _split(rollout: Rollout, advantages: np.ndarray, games: slice) -> tuple[Rollout, np.ndarray]:
    parts = {name: None if value is None else value[:, games].copy() for name, value in vars(rollout).items()}
    return Rollout(**parts), advantages[:, games].copy()


UPDATE = {"update_epochs": 1, "num_minibatches": 1, "max_grad_norm": 1e9}


def _gradients(network: torch.nn.Module) -> list[np.ndarray]:
    return [parameter.grad.detach().numpy().copy() for parameter in network.parameters()]


def _network() -> ActorCritic:
    config = make_config()
    torch.manual_seed(5)
    shape = NetworkShape(observation_size(config), observation_size(config), NUM_ACTIONS, (16,), True)
    return ActorCritic(shape, observation_scale(config))


def _gradient_rank(rank: int, world_size: int, init_file: str, games: int, cut: int, out: str) -> None:
    exchange = _join(rank, world_size, init_file)
    rollout, advantages = _synthetic_rollout(games, seed=3)
    own, own_advantages = _split(rollout, advantages, slice(0, cut) if rank == 0 else slice(cut, games))
    network = _network()
    learner = torch.nn.parallel.DistributedDataParallel(network, forward_sync_buffers=False)
    optimizer = torch.optim.SGD(network.parameters(), lr=0.0)
    config = make_train_config(**UPDATE)
    rng = np.random.default_rng(0)
    ppo_update(learner, optimizer, own, own_advantages, config, rng, torch.device("cpu"), 0.5, RankBatch(exchange))
    if rank == 0:
        np.savez(out, *_gradients(network))
    del learner
    _leave(exchange)


def test_the_averaged_gradient_is_the_gradient_of_the_concatenated_batch(tmp_path: Path) -> None:
    games, cut = 12, 4  # ranks of unequal sizes: 4 and 8 games, and unequal numbers of the policy's decisions
    out = tmp_path / "gradients.npz"
    _spawn(_gradient_rank, tmp_path, games, cut, str(out))
    rollout, advantages = _synthetic_rollout(games, seed=3)
    network = _network()
    optimizer = torch.optim.SGD(network.parameters(), lr=0.0)
    rng = np.random.default_rng(0)
    config = make_train_config(**UPDATE)
    ppo_update(network, optimizer, rollout, advantages, config, rng, torch.device("cpu"), 0.5, LocalBatch())
    distributed = np.load(out)
    for index, expected in enumerate(_gradients(network)):
        np.testing.assert_allclose(distributed[f"arr_{index}"], expected, rtol=2e-5, atol=1e-7)
    assert any(np.abs(gradient).max() > 0 for gradient in _gradients(network))


def _tiny_config(**overrides):
    """conftest's tiny run on 16 games, with partners, pfsp and two evaluation baselines."""
    values = {
        "total_decisions": 8 * 16 * 16,
        "num_envs": 16,
        "partner_share": 0.3,
        "opponent_sampling": "pfsp",
        "eval_opponents": ["random", "rule:heuristic"],
        "eval_partners": True,
    }
    return tiny_config(**{**values, **overrides})


def _match_results(result) -> list[list[dict]]:
    return [[match.to_dict() for match in head.results] for head in result.heads]


# four players with partners; three players alone (no partner keys, the field format in the evaluation)
TABLES = {4: {}, 3: {"env": {"num_players": 3, "scoring": "simple"}, "partner_share": 0.0, "eval_partners": False}}


def _trainer_rank(rank: int, world_size: int, init_file: str, out: str, players: int) -> None:
    exchange = _join(rank, world_size, init_file)
    trainer = Trainer(_tiny_config(**TABLES[players]), ranks=exchange.ranks, exchange=exchange)
    for _ in range(4):
        trainer.train_step()
    weights = {name: tensor.numpy() for name, tensor in trainer.network.state_dict().items()}
    everyone = exchange.gather(weights)
    rates = exchange.gather(trainer.pool.opponent_rates.state_dict())
    result = trainer.evaluate(pairs=3, search_pairs=0, partner_pairs=2)  # each rank plays a share of it
    payload = trainer.state_dict()
    if rank == 0:
        config = trainer.config
        policies = [("policy", policy_bytes(copy.deepcopy(trainer.network).eval(), trainer.pedro_config))]
        entries = gauntlet_entries(config.eval_opponents, 3, 0, config.eval_partners, [], 2)
        alone = run_gauntlet("policy", entries, trainer.pedro_config, config.eval_seed, 1, policies=policies)
        torch.save(
            {
                "identical": all(np.array_equal(everyone[0][name], everyone[1][name]) for name in weights),
                "same_rates": rates[0] == rates[1],
                "decisions": trainer.decisions,
                "observations_differ": not np.array_equal(
                    payload["step"]["observation"]["bytes"].numpy(),
                    payload["rank_states"][0]["step"]["observation"]["bytes"].numpy(),
                ),
                "world_size": payload["world_size"],
                "same_evaluation": _match_results(result) == _match_results(alone),
            },
            out,
        )
    del trainer
    _leave(exchange)


@pytest.mark.parametrize("players", sorted(TABLES))
def test_two_ranks_keep_identical_parameters_and_evaluate_like_one_process(tmp_path: Path, players: int) -> None:
    out = tmp_path / "trainer.pt"
    _spawn(_trainer_rank, tmp_path, str(out), players)
    found = torch.load(out, weights_only=False)
    assert found["identical"] and found["same_rates"]
    assert found["decisions"] == 4 * 2 * 16 * 16  # the job's decisions: both ranks' games
    assert found["observations_differ"] and found["world_size"] == 2  # each rank plays its own deals
    assert found["same_evaluation"]  # the gauntlet split over two ranks = the same gauntlet in one process


# ---------------------------------------------------------------- through torchrun


def _train(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return run_module("train.cli", *args, cwd=cwd, timeout=timeout)


def _smoke(tmp_path: Path, name: str, *extra: str) -> list[str]:
    return [str(SMOKE), "--run-name", name, "--no-progress", "--set", f"runs_dir={tmp_path / 'runs'}", *extra]


@pytest.mark.slow
def test_a_two_rank_run_writes_once_and_resumes_exactly(tmp_path: Path) -> None:
    # the learning rate stays put, so a run extended to 32,768 decisions learns as one planned for them
    first = _train(*_smoke(tmp_path, "cut", "anneal_lr=false"), "--nproc", "2", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    runs = tmp_path / "runs"
    assert [path.name for path in runs.iterdir()] == ["cut"]  # one run directory: rank 1 made none of its own
    run_dir = runs / "cut"
    assert len(list(run_dir.glob("events.out.tfevents.*"))) == 1
    assert sorted(path.name for path in run_dir.iterdir() if not path.name.startswith("events")) == [
        ".lock",
        "config.yaml",
        "eval.json",
        "eval.txt",
        "latest.pt",
    ]
    assert first.stdout.count("final evaluation") == 1 and "2 ranks" in first.stdout  # rank 0 alone reports
    saved = load_checkpoint(run_dir)
    assert saved["world_size"] == 2 and len(saved["rank_states"]) == 1
    assert saved["counters"]["decisions"] == 16384

    # one process cannot continue it: each rank holds its own games
    alone = _train("--resume", str(run_dir), "--no-progress", cwd=tmp_path)
    assert alone.returncode == 2 and len(alone.stderr.strip().splitlines()) == 1
    assert "written by 2 ranks" in alone.stderr and "--nproc 2" in alone.stderr

    longer = ["--set", "total_decisions=32768"]
    resumed = _train("--resume", str(run_dir), "--no-progress", "--nproc", "2", *longer, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    whole = _train(*_smoke(tmp_path, "whole", "total_decisions=32768", "anneal_lr=false"), "--nproc", "2", cwd=tmp_path)
    assert whole.returncode == 0, whole.stderr
    cut_model, whole_model = load_checkpoint(run_dir)["model"], load_checkpoint(runs / "whole")["model"]
    for name, tensor in whole_model.items():  # reproducible for a world size, and resumed exactly
        assert torch.equal(tensor, cut_model[name]), name


def test_nproc_mistakes_are_one_line_before_torchrun_starts(tmp_path: Path) -> None:
    missing = _train(str(tmp_path / "missing.yaml"), "--nproc", "2", cwd=tmp_path)
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1, missing.stderr
    unknown = _train(*_smoke(tmp_path, "x", "no_such_key=1"), "--nproc", "2", cwd=tmp_path)
    assert unknown.returncode == 2 and "no_such_key" in unknown.stderr
    assert len(unknown.stderr.strip().splitlines()) == 1, unknown.stderr
    assert not (tmp_path / "runs").exists()


def test_a_mistake_only_the_ranks_find_is_one_line(tmp_path: Path) -> None:
    # the network init_from holds is read when the trainer is built, in the ranks: still one line, no traceback
    other = _train(*_smoke(tmp_path, "x", "init_from=pretrained"), "--nproc", "2", cwd=tmp_path)
    assert other.returncode == 2 and len(other.stderr.strip().splitlines()) == 1, other.stderr
    assert other.stderr.startswith("pedro-train: error: init_from pretrained holds another network")
    assert not (tmp_path / "runs").exists()


def _failed_rank(rank: int, status: int) -> Exception:
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError, ProcessFailure

    return ChildFailedError("train.cli", {rank: ProcessFailure(rank, 1000 + rank, status, "<N/A>")})


@pytest.mark.parametrize(
    ("ending", "status", "line"),
    [
        (None, 0, ""),
        (_failed_rank(0, 2), 2, ""),  # the rank said why in its own line
        (_failed_rank(1, 130), 130, ""),
        (_failed_rank(1, -signal.SIGKILL), 1, "pedro-train: error: rank 1 ended with signal SIGKILL; the job stopped"),
        (_failed_rank(0, 3), 3, "pedro-train: error: rank 0 ended with status 3; the job stopped"),
    ],
)
def test_the_launcher_ends_with_the_ranks_status_and_at_most_one_line(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    ending: Exception | None,
    status: int,
    line: str,
) -> None:
    import torch.distributed.run as torchrun

    from train import launcher

    def run(args: object) -> None:
        if ending is not None:
            raise ending

    monkeypatch.setattr(torchrun, "run", run)
    assert launcher.main(["pedro-train", "--standalone", "--nproc_per_node=2", "-m", "train.cli", "smoke"]) == status
    assert capsys.readouterr().err.strip() == line


def test_a_signal_to_the_launcher_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import torch.distributed.run as torchrun
    from torch.distributed.elastic.multiprocessing.api import SignalException

    from train import launcher

    def run(args: object) -> None:
        raise SignalException("hangup", signal.SIGHUP)

    monkeypatch.setattr(torchrun, "run", run)
    assert launcher.main(["pedro-train", "--standalone", "-m", "train.cli", "smoke"]) == 128 + signal.SIGHUP
    assert capsys.readouterr().err.strip() == "pedro-train: stopped by SIGHUP; so were the ranks"
    assert launcher.main([]) == 2 and capsys.readouterr().err.startswith("usage: python -m train.launcher PROG")


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return found


def _processes_running(run_name: str) -> list[int]:
    """Processes whose command line names ``run_name`` (a run's ranks and launcher), zombies left out."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                arguments = (entry / "cmdline").read_bytes().split(b"\0")
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if run_name.encode() in arguments and state != "Z":
                found.append(int(entry.name))
    return found


def _rank_pid(launcher: int, rank: int) -> int | None:
    for child in _children(launcher):
        try:
            environ = (Path("/proc") / str(child) / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"RANK={rank}".encode() in environ:
            return child
    return None


def _start_long_run(tmp_path: Path, name: str) -> subprocess.Popen:
    """torchrun and its two ranks training for a while, in a session of their own (so that a failing test can kill
    them all: :func:`killed_on_failure`)."""
    command = _smoke(tmp_path, name, "total_decisions=4000000", "eval_interval=0", "final_eval_pairs=0")
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    return subprocess.Popen(
        [*torchrun, "-m", "train.cli", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=module_env(),
        cwd=tmp_path,
        start_new_session=True,
    )


def _wait_for_checkpoint(path: Path, process: subprocess.Popen) -> None:
    deadline = time.time() + 120
    while time.time() < deadline and not path.exists() and process.poll() is None:
        time.sleep(0.05)
    assert path.exists(), "the run ended first" if process.poll() is not None else "no checkpoint in 120 s"


@pytest.mark.slow
def test_ctrl_c_stops_every_rank_at_one_checkpoint_and_a_dead_rank_ends_the_job(tmp_path: Path) -> None:
    # Ctrl-C to torchrun: the ranks stop together at an update boundary and rank 0 checkpoints
    process = _start_long_run(tmp_path, "stopped")
    checkpoint = tmp_path / "runs" / "stopped" / "latest.pt"
    with killed_on_failure(process, group=True):
        _wait_for_checkpoint(checkpoint, process)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
    assert "stopped at" in err and "--nproc 2" in err, err
    stopped = load_checkpoint(checkpoint)
    assert 0 < stopped["counters"]["decisions"] < 4_000_000 and stopped["world_size"] == 2
    assert stopped["counters"]["decisions"] % (2 * 64 * 64) == 0  # a whole number of the job's updates

    # a rank killed outright: the others fail fast, torchrun exits non-zero, the last checkpoint loads
    process = _start_long_run(tmp_path, "killed")
    checkpoint = tmp_path / "runs" / "killed" / "latest.pt"
    with killed_on_failure(process, group=True):
        _wait_for_checkpoint(checkpoint, process)
        victim = _rank_pid(process.pid, 1)
        assert victim is not None
        os.kill(victim, signal.SIGKILL)
        start = time.time()
        process.communicate(timeout=120)
    assert process.returncode != 0 and time.time() - start < 120
    assert _processes_running("killed") == []  # no rank left behind
    assert load_checkpoint(checkpoint)["world_size"] == 2
