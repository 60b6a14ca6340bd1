"""Run directories: one owner at a time, no silent appending, TensorBoard logs of a killed-and-resumed run
equal to an uninterrupted one, output paths checked before the work, failures mid-run in one line."""

from __future__ import annotations

import errno
import os
import signal
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("tensorboard")

from agents.checkpoint import load_checkpoint  # noqa: E402
from train.cli import main as train_main  # noqa: E402
from train.rundir import RunDirError, RunLock, check_not_in_use  # noqa: E402

from conftest import REPO_ROOT, run_module, start_module  # noqa: E402

SMOKE = REPO_ROOT / "configs" / "smoke.yaml"
# 16 updates of 1,024 decisions: a checkpoint every 2, an evaluation every 4, a final one, every update logged
QUICK = [
    "torch_threads=1",
    "total_decisions=16384",
    "num_envs=32",
    "rollout_steps=32",
    "checkpoint_interval=2048",
    "eval_interval=4096",
    "league_interval=4096",
    "eval_opponents=[random]",
    "eval_pairs=1",
    "final_eval_pairs=2",
    "eval_partner_pairs=1",
    "final_partner_pairs=1",
    "log_interval=1",
    "eval_workers=1",
    "env.target_score=11",
    "env.max_deals=8",
]
TIMED_TAGS = {"charts/SPS"}  # wall-clock figures: the only values allowed to differ between two runs


def snapshot(directory: Path) -> dict[str, bytes]:
    return {str(path.relative_to(directory)): path.read_bytes() for path in directory.rglob("*") if path.is_file()}


def scalars(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    events.Reload()
    return {tag: [(point.step, point.value) for point in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def quick_args(runs: Path, name: str, *extra: str) -> list[str]:
    return [str(SMOKE), "--run-name", name, "--no-progress", "--set", f"runs_dir={runs}", *QUICK, *extra]


def test_a_locked_run_directory_refuses_a_second_run_and_a_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "dup"
    with RunLock(run_dir):
        before = snapshot(tmp_path)
        assert train_main(quick_args(tmp_path, "dup", "seed=2")) == 2
        assert train_main(["--resume", str(run_dir)]) == 2
        with pytest.raises(RunDirError, match="in use by another pedro-train"):
            RunLock(run_dir).acquire()
        assert snapshot(tmp_path) == before
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 2 and all("is in use by another pedro-train (pid" in line for line in errors)
    check_not_in_use(run_dir)  # released: free again


def test_the_lock_dies_with_its_process_and_stale_temporaries_are_cleaned(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / ".latest.pt.tmp-12345").write_bytes(b"half a checkpoint")
    (run_dir / ".lock").write_text('{"pid": 999999, "host": "gone", "started": "yesterday"}\n')
    with RunLock(run_dir):  # a lock file nobody holds is taken over
        assert not (run_dir / ".latest.pt.tmp-12345").exists()
        assert str(os.getpid()) in (run_dir / ".lock").read_text()


@pytest.mark.slow
def test_a_run_killed_before_its_first_checkpoint_is_refused_then_restarted_from_start(tmp_path: Path) -> None:
    # far too long to end (and checkpoint) in the second it is given: with warm kernel caches QUICK's run ends in one
    cut_short = ("checkpoint_interval=1000000000", "total_decisions=1000000000")
    process = start_module("train.cli", *quick_args(tmp_path, "cut", *cut_short), cwd=tmp_path)
    run_dir = tmp_path / "cut"
    deadline = time.time() + 120
    while time.time() < deadline and not list(run_dir.glob("events.out.tfevents.*")):
        time.sleep(0.05)
    time.sleep(1.0)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    assert not (run_dir / "latest.pt").exists()
    before = snapshot(tmp_path)
    again = run_module("train.cli", *quick_args(tmp_path, "cut"), cwd=tmp_path)
    assert again.returncode == 2 and "stopped before its first checkpoint" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1
    resumed = run_module("train.cli", "--resume", str(run_dir), cwd=tmp_path)
    assert resumed.returncode == 2 and f"--resume {run_dir} --from-start" in resumed.stderr
    assert snapshot(tmp_path) == before  # refused: nothing touched
    restarted = run_module(
        "train.cli",
        "--resume",
        str(run_dir),
        "--from-start",
        "--no-progress",
        "--set",
        "total_decisions=4096",
        cwd=tmp_path,
    )
    assert restarted.returncode == 0, restarted.stderr
    assert len(list(run_dir.glob("events.out.tfevents.*"))) == 1  # the dead run's logs went, not appended to
    assert load_checkpoint(run_dir)["counters"]["decisions"] == 4096
    assert all(
        steps == sorted(set(steps)) for steps in ([s for s, _ in points] for points in scalars(run_dir).values())
    )


@pytest.mark.slow
def test_killed_and_resumed_run_logs_exactly_what_an_uninterrupted_run_logs(tmp_path: Path) -> None:
    whole = run_module("train.cli", *quick_args(tmp_path, "whole"), cwd=tmp_path)
    assert whole.returncode == 0, whole.stderr
    run_dir = tmp_path / "cut"
    process = start_module("train.cli", *quick_args(tmp_path, "cut"), cwd=tmp_path)
    deadline = time.time() + 120
    while time.time() < deadline and not (run_dir / "latest.pt").exists():
        time.sleep(0.02)
    time.sleep(0.5)  # past the first checkpoint, with points logged after it that the resume must drop
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    cut_at = load_checkpoint(run_dir)["counters"]["decisions"]
    if cut_at >= 16384:
        pytest.skip("the run finished before the kill arrived")
    resumed = run_module("train.cli", "--resume", str(run_dir), "--no-progress", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    expected, got = scalars(tmp_path / "whole"), scalars(run_dir)
    assert sorted(got) == sorted(expected)
    for tag, points in expected.items():
        steps = [step for step, _ in got[tag]]
        assert steps == [step for step, _ in points], tag  # every step, once, in order
        if tag not in TIMED_TAGS:
            assert got[tag] == points, tag


def test_a_full_disk_mid_run_ends_in_one_line_and_keeps_the_last_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import train.run

    saves = []
    real_save = train.run.save_checkpoint

    def filling_save(payload, path):
        saves.append(path)
        if len(saves) > 1:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real_save(payload, path)

    monkeypatch.setattr(train.run, "save_checkpoint", filling_save)
    assert train_main(quick_args(tmp_path, "full", "total_decisions=8192", "final_eval_pairs=0")) == 1
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "No space left on device" in error[0]
    assert "the last checkpoint (2,048 decisions) is intact: continue with --resume" in error[0]
    assert load_checkpoint(tmp_path / "full")["counters"]["decisions"] == 2048


def test_into_a_log_file_the_progress_is_plain_lines_not_a_redrawn_bar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from train.config import make_train_config
    from train.run import run_training

    config = make_train_config(
        total_decisions=1500,  # not a multiple of the 512 decisions of an update: the last one overshoots
        num_envs=16,
        rollout_steps=32,
        hidden_sizes=[16],
        torch_threads=1,
        eval_interval=0,
        final_eval_pairs=0,
        env={"target_score": 11},
    )
    run_training(config, tmp_path / "run", progress=True)  # stderr is captured here, not a terminal
    captured = capsys.readouterr()
    assert "\r" not in captured.out + captured.err
    assert "done: 1,536 decisions" in captured.out
