"""The fault suite's arena cases (issue 56, items 2, 10, 12 and 13): every count ``pedro-eval`` takes is bounded
before the work, its files are written whole or not at all, Ctrl-C in ``pedro-eval``, ``pedro-play`` and
``pedro-replay`` is one line and status 130, and ``pedro-replay`` reads only a regular file of bounded size.

The cases that would take memory or time without the bounds run in a subprocess under a memory limit and a
timeout; a full disk is a file-size limit (RLIMIT_FSIZE) on the subprocess, or a failing ``fsync`` in-process.
"""

from __future__ import annotations

import errno
import io
import json
import os
import re
import resource
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from arena import eval_cli
from arena.eval_cli import main as eval_main
from arena.evaluate import MAX_BATCH_SIZE, MAX_MATCHES, MAX_SEED, MAX_WORKERS, EvaluationError, evaluate
from arena.play import main as play_main
from arena.replay import MAX_RECORD_BYTES, MatchRecord, ReplayError
from arena.replay import main as replay_main
from arena.reports import save_replays, to_csv, to_json
from pedro_env.cli import INTERRUPTED_STATUS, OutputPathError

from conftest import module_env, run_python

MEMORY_LIMIT = 3 << 29  # 1.5 GiB: the unbounded cases took 2-3 GB in seconds; a refusal takes a fraction
FILE_LIMIT = 4096  # bytes a process may write to one file in the full-disk case: less than one result's JSON
HUGE = "99999999999999999999999"


def _limit_file_size() -> None:
    """A disk that fills after FILE_LIMIT bytes of any one file: writes past it fail with EFBIG, not a signal."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))


def _bounded_run(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python ARGUMENTS`` under the memory limit and a timeout that fails the test; output captured as text."""
    return run_python(*arguments, stdin="", cwd=cwd, timeout=60, memory_bytes=MEMORY_LIMIT)


def _one_error_line(result: subprocess.CompletedProcess[str], prog: str) -> str:
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(f"{prog}: error: "), result.stderr[-2000:]
    return result.stderr


# ---------------------------------------------------------------- item 2: every count bounded before the work

# (arguments, words of the one-line error): each count past its bound, then runs within each bound but too big whole
COUNT_CASES = [
    (["random", "random", "--pairs", HUGE, "--workers", "1"], f"pairs must be >= 1 and <= {MAX_MATCHES}, got {HUGE}"),
    (["random", "random", "--matches", HUGE], f"matches must be >= 1 and <= {MAX_MATCHES}"),
    (["random", "--gauntlet", "--pairs", HUGE], f"pairs must be >= 1 and <= {MAX_MATCHES}"),
    (["random", "--gauntlet", "--search-pairs", HUGE], f"--search-pairs must be >= 0 and <= {MAX_MATCHES}"),
    (["random", "random", "--batch-size", HUGE], f"batch size must be >= 1 and <= {MAX_BATCH_SIZE}"),
    (["random", "random", "--pairs", "600000", "--batch-size", "1", "--workers", HUGE], f"<= {MAX_WORKERS}"),
    (["random", "rule:cautious", "rule:heuristic", "--round-robin", "--pairs", "300000"], "would play 1800000"),
    (["random", "random", "--set", "num_players=3", "scoring=simple", "--pairs", "400000"], "would play 1200000"),
    (["random", "--gauntlet", "--pairs", "200000", "--baselines", "random", "rule:heuristic"], "would play"),
    (["random", "random", "--pairs", "5001", "--save-replays", "replays"], "at most 10000 recorded (--save-replays)"),
]
# runs every case in one process (one start-up, not nine), one JSON line [status, stderr] per case
RUN_CASES = """
import contextlib, io, json, sys
from arena.eval_cli import main
for arguments in json.loads(sys.argv[1]):
    error = io.StringIO()
    with contextlib.redirect_stderr(error):
        status = main(arguments)
    print(json.dumps([status, error.getvalue()]), flush=True)
"""


def test_a_count_past_its_bound_is_one_line_before_any_work(tmp_path: Path) -> None:
    out = ["--out", str(tmp_path / "out" / "x")]
    cases = json.dumps([[*arguments, *out] for arguments, _ in COUNT_CASES])
    result = _bounded_run("-c", RUN_CASES, cases, cwd=tmp_path)
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(answers) == len(COUNT_CASES), result.stderr[-2000:]  # a case that ran out of memory ends the list
    for (arguments, words), (status, error) in zip(COUNT_CASES, answers):
        assert status == 2 and error.count("\n") == 1 and error.startswith("pedro-eval: error: "), (arguments, error)
        assert words in error, (arguments, error)
    assert not (tmp_path / "out").exists() and not (tmp_path / "replays").exists()  # refused before folders are made


@pytest.mark.parametrize("gauntlet", [False, True])
def test_the_deal_seeds_stay_within_the_seed_range(gauntlet: bool, capsys: pytest.CaptureFixture[str]) -> None:
    sides = ["random", "--gauntlet", "--baselines", "random"] if gauntlet else ["random", "random"]
    assert eval_main([*sides, "--seed", str(MAX_SEED - 1), "--pairs", "3", "--no-progress"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and f"a seed from 0 to {MAX_SEED - 2}" in error
    with pytest.raises(EvaluationError, match="past 2\\*\\*62"):
        evaluate("random", "random", pairs=3, seed=MAX_SEED - 1)


def test_the_last_seed_in_range_is_played() -> None:
    head = evaluate("random", "random", config={"max_deals": 2}, pairs=2, seed=MAX_SEED - 1)
    assert max(match.seed for match in head.results) == MAX_SEED


# ---------------------------------------------------------------- item 10: outputs written whole or not at all


def test_a_full_disk_keeps_the_previous_results_whole(tmp_path: Path) -> None:
    prefix = tmp_path / "x"
    common = ["random", "random", "--pairs", "10", "--set", "max_deals=3", "--no-progress", "--out", str(prefix)]
    assert eval_main([*common, "--seed", "1"]) == 0
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    assert len(before[f"{prefix.name}.json"]) > FILE_LIMIT  # the rerun's JSON cannot fit
    full = subprocess.run(
        [sys.executable, "-m", "arena.eval_cli", *common, "--seed", "2"],
        capture_output=True,
        text=True,
        env=module_env(),
        timeout=60,
        preexec_fn=_limit_file_size,
    )
    assert full.returncode == 1, full.stderr[-2000:]
    assert full.stderr.count("\n") == 1 and f"cannot write {prefix}.json" in full.stderr, full.stderr
    assert "the table above is the result" in full.stderr and "win rate" in full.stdout
    after = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    assert after == before  # the first run's files as they were, and no temporary file left


def _no_space(*_: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_every_file_a_report_writes_goes_through_a_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = evaluate("random", "random", config={"max_deals": 2}, pairs=1, record=True)
    targets = [tmp_path / "h.json", tmp_path / "h.csv", tmp_path / "h.png", tmp_path / "replays"]
    to_json(head, targets[0])
    to_csv(head, targets[1])
    replays = save_replays(head, targets[3])
    writers = [lambda: to_json(head, targets[0]), lambda: to_csv(head, targets[1])]
    writers.append(lambda: save_replays(head, targets[3]))
    try:
        from arena.plots import plot

        plot(head, targets[2])
        writers.append(lambda: plot(head, targets[2]))
    except ImportError:  # no matplotlib: no chart to check
        pass
    before = {path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()}
    assert len(before) == 2 + len(replays) + (len(writers) == 4)
    monkeypatch.setattr(os, "fsync", _no_space)  # the disk fills as each file is finished
    for write in writers:
        with pytest.raises(OutputPathError, match=rf"cannot write {tmp_path}/\S+: No space left on device"):
            write()
    assert {path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()} == before


def test_a_full_disk_in_pedro_play_leaves_the_earlier_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    wanted = tmp_path / "match.json"
    wanted.write_text("an earlier match\n")
    monkeypatch.setattr(os, "fsync", _no_space)  # here and in the temporary directory it falls back to
    monkeypatch.setattr(sys, "stdin", io.StringIO("q\n"))
    assert play_main(["--seed", "3", "--save", str(wanted)]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith(f"pedro-play: error: cannot write {wanted}: No space left")
    assert wanted.read_text() == "an earlier match\n" and sorted(tmp_path.iterdir()) == [wanted]


# ---------------------------------------------------------------- item 12: Ctrl-C is one line and status 130


def _read_until(process: subprocess.Popen, marker: bytes, timeout: float = 30) -> bytes:
    """Read the process's stdout until ``marker`` appears (a prompt may end without a newline)."""
    seen = b""
    deadline = time.monotonic() + timeout
    while marker not in seen:
        assert time.monotonic() < deadline, f"no {marker!r} in {seen[-500:]!r}"
        ready, _, _ = select.select([process.stdout], [], [], 0.1)
        if ready:
            chunk = os.read(process.stdout.fileno(), 65536)
            assert chunk, f"stdout ended before {marker!r}: {seen[-500:]!r}"
            seen += chunk
    return seen


def _interrupt(process: subprocess.Popen, group: bool = False) -> tuple[int, str]:
    """SIGINT to the process (to its process group, as a terminal's Ctrl-C does, with ``group``); its status and
    stderr."""
    if group:
        os.killpg(process.pid, signal.SIGINT)
    else:
        process.send_signal(signal.SIGINT)
    _, error = process.communicate(timeout=30)
    return process.returncode, error.decode()


READY = "import sys; from {module} import main; print('ready', flush=True); raise SystemExit(main(sys.argv[1:]))"


@pytest.mark.parametrize("workers", ["1", "2"])
def test_ctrl_c_in_pedro_eval_is_one_line_and_status_130(tmp_path: Path, workers: str) -> None:
    arguments = ["random", "random", "--pairs", "100000", "--set", "max_deals=3", "--batch-size", "8"]
    arguments += ["--workers", workers, "--no-progress", "--out", str(tmp_path / "x")]
    process = subprocess.Popen(
        [sys.executable, "-c", READY.format(module="arena.eval_cli"), *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=module_env(),
        start_new_session=True,  # its own process group, which the Ctrl-C below reaches whole (workers too)
    )
    _read_until(process, b"ready\n")
    time.sleep(1.0)  # into the play
    status, error = _interrupt(process, group=True)
    assert status == INTERRUPTED_STATUS, error[-2000:]
    assert re.fullmatch(r"pedro-eval: interrupted \(\d+ of 200000 matches played\); no file written\n", error), error
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_in_a_gauntlet_says_what_was_played(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*_: object, progress: Callable[[int, int], None], **__: object) -> None:
        progress(6, 8)
        raise KeyboardInterrupt

    monkeypatch.setattr(eval_cli, "run_gauntlet", interrupted)
    arguments = ["random", "--gauntlet", "--baselines", "random", "--pairs", "2", "--out", str(tmp_path / "g")]
    assert eval_main(arguments) == INTERRUPTED_STATUS
    assert capsys.readouterr().err == "pedro-eval: interrupted (6 of 8 matches played); no file written\n"


def test_ctrl_c_while_writing_still_gives_the_table(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(eval_cli, "to_csv", interrupted)
    arguments = ["random", "random", "--pairs", "1", "--set", "max_deals=2", "--out", str(tmp_path / "x")]
    assert eval_main([*arguments, "--no-progress"]) == INTERRUPTED_STATUS
    captured = capsys.readouterr()
    assert "win rate" in captured.out
    assert captured.err == (
        f"pedro-eval: interrupted while writing the files; the table above is the result (wrote {tmp_path}/x.json)\n"
    )


def test_ctrl_c_in_pedro_play_is_one_line_and_status_130(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "arena.play", "--seed", "3", "--save", str(tmp_path / "m.json")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=module_env(),
    )
    _read_until(process, b"Your move")
    status, error = _interrupt(process)
    assert status == INTERRUPTED_STATUS and error == "pedro-play: interrupted\n", error[-2000:]


def test_ctrl_c_in_pedro_replay_is_one_line_and_status_130(tmp_path: Path) -> None:
    head = evaluate("random", "random", config={"max_deals": 2}, pairs=1, record=True)
    record = save_replays(head, tmp_path)[0]
    process = subprocess.Popen(
        [sys.executable, "-m", "arena.replay", str(record), "--step"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=module_env(),
    )
    process.stdin.write(b"\n")  # one step, then wait at the prompt
    process.stdin.flush()
    _read_until(process, b"[Enter: next, q: quit] ")
    status, error = _interrupt(process)
    assert status == INTERRUPTED_STATUS and error == "pedro-replay: interrupted\n", error[-2000:]


# ---------------------------------------------------------------- item 13: pedro-replay reads a bounded regular file


@pytest.mark.parametrize("kind", ["/dev/zero", "fifo"])
def test_pedro_replay_refuses_a_file_that_is_not_regular(tmp_path: Path, kind: str) -> None:
    path = "/dev/zero"
    if kind == "fifo":
        path = str(tmp_path / "pipe")
        os.mkfifo(path)  # opened without a writer, a read would wait for ever
    result = _bounded_run("-m", "arena.replay", path, cwd=tmp_path)
    assert "is not a regular file" in _one_error_line(result, "pedro-replay")


def test_pedro_replay_refuses_a_record_past_the_size_cap(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "big.json"
    with path.open("wb") as handle:
        handle.truncate(MAX_RECORD_BYTES + 1)  # sparse: no disk used
    assert replay_main([str(path)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and f"larger than {MAX_RECORD_BYTES:,} bytes" in error
    with pytest.raises(ReplayError, match="larger than"):
        MatchRecord.load(path)


def test_evaluation_workers_start_with_ctrl_c_ignored() -> None:
    """A worker still importing torch when Ctrl-C comes must not print a traceback: the pool starts while this
    process ignores SIGINT, which a child inherits from its first instruction (then the handler is restored)."""
    from arena.shards import _ctrl_c_ignored_while_starting

    handler = signal.getsignal(signal.SIGINT)
    probe = "import signal; print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)"
    with _ctrl_c_ignored_while_starting():
        child = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert child.stdout == "True\n" and signal.getsignal(signal.SIGINT) is handler
