"""pedro-train's part of the fault suite (issue 56): nothing lost and nothing unbounded.

``--export`` never writes over a run's checkpoint; a full disk while a checkpoint is written is one line that
names the file and says the previous checkpoint is intact; a non-finite or absurd ``--dist-timeout`` is a
usage error before torchrun starts; Ctrl-C in training or in the final evaluation is one line saying what was
kept, status 130; a checkpoint whose counters or arrays were edited is refused on resume in one line.
"""

from __future__ import annotations

import errno
import io
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("yaml")
pytest.importorskip("tensorboard")

from agents.checkpoint import CheckpointError, load_checkpoint, pack_array, save_checkpoint, unpack_array  # noqa: E402
from pedro_env.cli import INTERRUPTED_STATUS, OutputPathError  # noqa: E402
from train.cli import main as train_main  # noqa: E402
from train.run import run_training  # noqa: E402

from conftest import REPO_ROOT, killed_on_failure, module_env, tiny_config  # noqa: E402

SMOKE = str(REPO_ROOT / "configs" / "smoke.yaml")
# a CLI run of four updates of 512 decisions, a checkpoint after each, no evaluation
TINY_CLI = [
    "torch_threads=1",
    "total_decisions=2048",
    "num_envs=32",
    "rollout_steps=16",
    "hidden_sizes=[16]",
    "checkpoint_interval=512",
    "eval_interval=0",
    "final_eval_pairs=0",
    "eval_opponents=[random]",
    "eval_workers=1",
    "env.target_score=11",
    "env.max_deals=8",
]


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


def stopped_run(run_dir: Path, **overrides: Any) -> Path:
    """A tiny run stopped after its first update (so ``--resume`` has work left); its checkpoint."""
    run_training(tiny_config(**overrides), run_dir, progress=False, max_updates=1)
    return run_dir / "latest.pt"


# ---------------------------------------------------------------- --export never writes over a run


def test_export_onto_a_runs_own_checkpoint_is_refused_and_the_run_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "r"
    checkpoint = stopped_run(run_dir)
    before = checkpoint.read_bytes()
    other = stopped_run(tmp_path / "other")
    kept = tmp_path / "kept-checkpoint.pt"  # a training checkpoint under any name
    kept.write_bytes(before)
    for source, destination, words in [
        (run_dir, checkpoint, f"own checkpoint {checkpoint}"),
        (checkpoint, tmp_path / "r" / ".." / "r" / "latest.pt", "own checkpoint"),
        (run_dir, other, f"{other} is the checkpoint of run {other.parent}"),
        (run_dir, kept, f"{kept} is a training checkpoint"),
    ]:
        assert train_main(["--export", str(source), str(destination)]) == 2
        assert words in one_line(capsys.readouterr().err)
    assert checkpoint.read_bytes() == before and kept.read_bytes() == before
    assert load_checkpoint(other)["counters"]["decisions"] == 512
    # an export beside it is fine, and so is exporting again over that export
    policy = tmp_path / "policy.pt"
    for _ in range(2):
        assert train_main(["--export", str(run_dir), str(policy)]) == 0
        assert "optimizer" not in load_checkpoint(policy)
    capsys.readouterr()
    assert train_main(["--resume", str(run_dir), "--no-progress"]) == 0, capsys.readouterr().err
    assert load_checkpoint(run_dir)["counters"]["decisions"] == tiny_config().total_decisions


def test_export_errors_name_the_output_not_a_temporary_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "r"
    stopped_run(run_dir)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert train_main(["--export", str(run_dir), str(blocker / "policy.pt")]) == 2
    assert f"{blocker / 'policy.pt'}: {blocker} is a file" in one_line(capsys.readouterr().err)
    full_disk(monkeypatch, after_bytes=0)
    out = tmp_path / "policy.pt"
    out.write_bytes(b"an earlier export")
    assert train_main(["--export", str(run_dir), str(out)]) == 1
    line = one_line(capsys.readouterr().err)
    assert f"cannot write {out}: No space left on device" in line and ".tmp-" not in line
    assert out.read_bytes() == b"an earlier export" and sorted(p.name for p in tmp_path.iterdir()) == [
        "file",
        "policy.pt",
        "r",
    ]


# ---------------------------------------------------------------- a full disk while writing a checkpoint


class FullDisk(io.RawIOBase):
    """A file handle on a disk that fills after ``room`` bytes: the writes past it fail with ENOSPC."""

    def __init__(self, handle: Any, room: int) -> None:
        self.handle, self.room = handle, room

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        if len(data) > self.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.room -= len(data)
        return self.handle.write(data)


def full_disk(monkeypatch: pytest.MonkeyPatch, after_bytes: int, from_save: int = 1) -> None:
    """From the ``from_save``-th torch.save on, the disk fills ``after_bytes`` into the file (torch's zip writer
    then raises a RuntimeError over the OSError, as it does on a real full disk)."""
    real_save, saves = torch.save, []

    def save(payload: Any, handle: Any, *args: Any, **kwargs: Any) -> None:
        saves.append(handle)
        if len(saves) >= from_save:
            handle = FullDisk(handle, after_bytes)
        real_save(payload, handle, *args, **kwargs)

    monkeypatch.setattr(torch, "save", save)


def test_a_full_disk_mid_write_leaves_the_previous_checkpoint_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "latest.pt"
    save_checkpoint({"config": {}, "network": {}, "model": {"w": torch.ones(4)}}, path)
    before = path.read_bytes()
    full_disk(monkeypatch, after_bytes=4096)
    with pytest.raises(OutputPathError, match=f"^cannot write {path}: No space left on device$"):
        save_checkpoint({"config": {}, "network": {}, "model": {"w": torch.zeros(100_000)}}, path)
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["latest.pt"]


def test_a_full_disk_mid_run_is_one_line_status_1_and_the_run_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "full"
    arguments = [SMOKE, "--run-name", "full", "--no-progress", "--set", f"runs_dir={tmp_path}", *TINY_CLI]
    with monkeypatch.context() as patch:
        full_disk(patch, after_bytes=10_000, from_save=3)  # the first two checkpoints are written
        assert train_main(arguments) == 1
    line = one_line(capsys.readouterr().err)
    assert line.startswith(f"pedro-train: error: cannot write {run_dir / 'latest.pt'}: No space left on device")
    assert f"the last checkpoint (1,024 decisions) is intact: continue with --resume {run_dir}" in line
    assert load_checkpoint(run_dir)["counters"]["decisions"] == 1024
    assert not list(run_dir.glob(".*.tmp-*"))
    assert train_main(["--resume", str(run_dir), "--no-progress"]) == 0
    assert load_checkpoint(run_dir)["counters"]["decisions"] == 2048


# ---------------------------------------------------------------- --dist-timeout


@pytest.fixture
def no_torchrun(monkeypatch: pytest.MonkeyPatch) -> None:
    """pedro-train --nproc must refuse before it starts torchrun: starting it fails the test."""
    import train.cli

    def started(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("torchrun was started")

    monkeypatch.setattr(train.cli.subprocess, "Popen", started)


@pytest.mark.parametrize("timeout", ["nan", "inf", "-inf", "1e300", "0", "-5", "ten"])
def test_a_non_finite_or_absurd_dist_timeout_is_one_line_before_torchrun(
    timeout: str, tmp_path: Path, no_torchrun: None, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        status = train_main([SMOKE, "--nproc", "2", "--dist-timeout", timeout, "--set", f"runs_dir={tmp_path}"])
    except SystemExit as stop:  # argparse's usage error
        status = stop.code
    assert status == 2
    assert "--dist-timeout" in one_line(capsys.readouterr().err)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("nproc", ["0", "257", "100000000"])
def test_a_rank_count_past_its_bound_is_one_line_before_torchrun(
    nproc: str, tmp_path: Path, no_torchrun: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert train_main([SMOKE, "--nproc", nproc, "--set", f"runs_dir={tmp_path}"]) == 2
    assert one_line(capsys.readouterr().err) == (
        f"pedro-train: error: --nproc must be an int from 1 to 256 (ranks on this machine), got {nproc}"
    )
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- Ctrl-C


def interrupt_when(
    process: Any, ready: Any, what: str, timeout: float = 120, number: int = signal.SIGINT
) -> tuple[str, str]:
    """Signal ``number`` (Ctrl-C's SIGINT unless given) to ``process`` once ``ready()``; its stdout and stderr. A
    failure kills the process first (:func:`killed_on_failure`)."""
    with killed_on_failure(process):
        deadline = time.time() + timeout
        while not ready():
            if process.poll() is not None or time.time() > deadline:
                raise AssertionError(f"never {what} in {timeout} s")  # its output: after the kill, below
            time.sleep(0.02)
        process.send_signal(number)
        return process.communicate(timeout=120)


def start_train(tmp_path: Path, name: str, *settings: str, session: bool = False) -> Any:
    """pedro-train on TINY_CLI and ``settings`` in a subprocess, its stdout in ``NAME.out`` (so the test can watch
    the run's progress); ``session``: in a session of its own, as a terminal's foreground job."""
    import subprocess

    log = open(tmp_path / f"{name}.out", "w")
    arguments = [SMOKE, "--run-name", name, "--no-progress", "--set", f"runs_dir={tmp_path}", *TINY_CLI, *settings]
    process = subprocess.Popen(
        [sys.executable, "-m", "train.cli", *arguments],
        stdout=log,
        stderr=subprocess.PIPE,
        text=True,
        env=module_env(),
        cwd=tmp_path,
        start_new_session=session,
    )
    log.close()
    return process


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_in_training_stops_at_a_checkpoint_in_one_line_with_status_130(tmp_path: Path, number: int) -> None:
    """Ctrl-C, or SIGTERM as ``kill`` and job schedulers send it."""
    run_dir = tmp_path / "cut"
    process = start_train(tmp_path, "cut", "total_decisions=20000000")
    _, err = interrupt_when(process, (run_dir / "latest.pt").exists, "checkpointed", number=number)
    assert process.returncode == INTERRUPTED_STATUS, err
    line = one_line(err)
    assert line.startswith("pedro-train: interrupted: stopped at ")
    assert line.endswith(f"; continue with: pedro-train --resume {run_dir}")
    decisions = load_checkpoint(run_dir)["counters"]["decisions"]
    assert f"stopped at {decisions:,} decisions; checkpoint {run_dir / 'latest.pt'}" in line


def test_ctrl_c_in_the_final_evaluation_keeps_the_checkpoint_in_one_line_and_resume_evaluates(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "ev"
    process = start_train(tmp_path, "ev", "final_eval_pairs=1000000")
    _, err = interrupt_when(process, lambda: "final evaluation" in (tmp_path / "ev.out").read_text(), "evaluated")
    assert process.returncode == INTERRUPTED_STATUS, err
    line = one_line(err)
    assert line == (
        f"pedro-train: interrupted before the final evaluation; the checkpoint of 2,048 decisions is intact in "
        f"{run_dir / 'latest.pt'}; evaluate it with: pedro-train --resume {run_dir}"
    )
    assert not (run_dir / "eval.json").exists()
    assert train_main(["--resume", str(run_dir), "--no-progress", "--set", "final_eval_pairs=1"]) == 0
    assert (run_dir / "eval.json").is_file()


# ---------------------------------------------------------------- an edited checkpoint


def edited(checkpoint: Path, edit: Any) -> Path:
    payload = load_checkpoint(checkpoint)
    edit(payload)
    save_checkpoint(payload, checkpoint)
    return checkpoint.parent


def set_counter(name: str, value: Any) -> Any:
    return lambda payload: payload["counters"].__setitem__(name, value)


def cut_games(payload: dict[str, Any]) -> None:
    games = payload["games"]
    games["seat_controller"] = pack_array(unpack_array(games["seat_controller"])[:3])


def foreign_group(payload: dict[str, Any]) -> None:
    games = payload["games"]
    groups = unpack_array(games["game_group"])
    groups[0] = 99
    games["game_group"] = pack_array(groups)


def wrong_optimizer_state(payload: dict[str, Any]) -> None:
    state = next(iter(payload["optimizer"]["state"].values()))
    state["exp_avg"] = torch.zeros(7)


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (set_counter("decisions", -5), "counter 'decisions' = -5 is not allowed: it takes an int >= 0"),
        (set_counter("decisions", 1000), "counter 'decisions' = 1,000 is not its 1 updates of 512 decisions"),
        (set_counter("updates", "1"), "counter 'updates' = '1' is not allowed"),
        (set_counter("elapsed_s", float("nan")), "counter 'elapsed_s' = nan"),
        (set_counter("next_checkpoint", 0), "counter 'next_checkpoint' = 0"),
    ],
)
def test_a_checkpoint_with_edited_counters_is_refused_on_resume_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: Any, words: str
) -> None:
    run_dir = edited(stopped_run(tmp_path / "r"), edit)
    before = (run_dir / "latest.pt").read_bytes()
    assert train_main(["--resume", str(run_dir), "--no-progress"]) == 2
    line = one_line(capsys.readouterr().err)
    assert f"checkpoint {run_dir} was edited or is damaged: {words}" in line
    assert (run_dir / "latest.pt").read_bytes() == before


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (set_counter("decisions", -5), "counter 'decisions' = -5"),
        (cut_games, "'seat_controller' array has shape (3, 4); this run's is (32, 4)"),
        (foreign_group, "'game_group' array holds values outside 0 .. "),
        (wrong_optimizer_state, "optimizer state 'exp_avg' has shape (7,)"),
    ],
)
def test_a_checkpoint_whose_state_does_not_fit_is_refused_before_training(
    tmp_path: Path, edit: Any, words: str
) -> None:
    run_dir = edited(stopped_run(tmp_path / "r"), edit)
    with pytest.raises(CheckpointError, match="edited or damaged") as refused:
        run_training(tiny_config(), run_dir, load_checkpoint(run_dir), progress=False)
    assert words in str(refused.value)


@pytest.mark.slow
@pytest.mark.parametrize("stop", ["ctrl-c", "sigterm"])
def test_ctrl_c_at_the_terminal_of_a_two_rank_run_is_one_line_with_status_130(tmp_path: Path, stop: str) -> None:
    """Ctrl-C at the terminal, or SIGTERM to pedro-train alone (``kill PID``, a job scheduler)."""
    run_dir = tmp_path / "two"
    process = start_train(tmp_path, "two", "total_decisions=20000000", "--nproc", "2", session=True)
    with killed_on_failure(process, group=True):
        deadline = time.time() + 120
        while not (run_dir / "latest.pt").exists():  # training is under way
            if process.poll() is not None or time.time() > deadline:
                raise AssertionError("no checkpoint in 120 s")
            time.sleep(0.05)
        if stop == "ctrl-c":
            os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C does: the terminal's foreground group gets it
        else:
            process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=120)
    assert process.returncode == INTERRUPTED_STATUS, err
    line = one_line(err)  # no traceback from torchrun
    assert line.startswith("pedro-train: interrupted: stopped at ") and line.endswith(f"--resume {run_dir} --nproc 2")
    assert load_checkpoint(run_dir)["world_size"] == 2
