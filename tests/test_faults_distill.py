"""The fault suite for ``python -m train.distill`` and ``python -m train.curve`` (issue 56, items 8, 11, 12, 16): a
labelling that could never end, and every usage error, is refused in one line with status 2 before any work; Ctrl-C
is one line and status 130; an output is written whole or not at all, never over an input of the same command, and
the line that reports it names the file written."""

from __future__ import annotations

import errno
import shutil
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import train.curve as curve  # noqa: E402
import train.distill as distill  # noqa: E402
import train.distill_labels as distill_labels  # noqa: E402
from agents import PPO_POLICY_PATH  # noqa: E402
from pedro_env.cli import INTERRUPTED_STATUS  # noqa: E402

from conftest import run_module  # noqa: E402

LABELS = ["labels", "--positions", "2", "--seed", "1", "--policy", "random", "--search", "search:pimc,samples=1"]


def snapshot(directory: Path) -> dict[str, bytes]:
    return {str(path.relative_to(directory)): path.read_bytes() for path in directory.rglob("*") if path.is_file()}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Label files good and bad, a copy of the shipped policy (also under an ``.npz`` name), a run's events."""
    root = tmp_path_factory.mktemp("faults-distill")
    good = distill_labels.label_positions(4, seed=1, policy="random", search="search:pimc,samples=1")
    np.savez_compressed(root / "good.npz", **good)
    np.savez(root / "wide.npz", **{**good, "masks": np.ones((4, 100), bool)})
    np.savez(root / "empty.npz", **{key: array[:0] for key, array in good.items()})
    np.savez(root / "nan.npz", **{**good, "values": np.full_like(good["values"], np.nan)})
    (root / "cut.npz").write_bytes((root / "good.npz").read_bytes()[:200])
    with zipfile.ZipFile(root / "huge.npz", "w") as archive:  # headers claiming 12M rows, no data behind them
        for key, descr, width in (("observations", "|u1", 954), ("masks", "|b1", 133), ("values", "<f4", 133)):
            with archive.open(f"{key}.npy", "w") as member:
                header = {"descr": descr, "fortran_order": False, "shape": (12_000_000, width)}
                np.lib.format.write_array_header_1_0(member, header)
    shutil.copy(PPO_POLICY_PATH, root / "policy.pt")
    shutil.copy(PPO_POLICY_PATH, root / "policy.npz")
    (root / "policy-link.pt").symlink_to(root / "policy.pt")
    (root / "taken.npz").mkdir()
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(root / "run")) as writer:
        for name in ("win_rate", "win_rate_low", "win_rate_high"):
            writer.add_scalar(f"eval/vs_random/{name}", 0.5, 10)
    return root


def test_labels_with_every_seat_beside_is_refused_at_once_not_a_loop(tmp_path: Path) -> None:
    argv = ["labels", str(tmp_path / "out.npz"), "--positions", "20", "--seed", "1", "--beside", "random"]
    done = run_module("train.distill", *argv, "--beside-seats", "0", "1", "2", "3", timeout=30)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "--beside-seats 0 1 2 3 leaves no seat to label" in done.stderr
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(distill.DistillError, match="leaves no seat to label"):  # the library says so too
        distill.label_positions(5, 1, "random", beside="random", beside_seats=(3, 2, 1, 0))


DISTILL_CASES: list[tuple[list[str], str]] = [
    (["labels", "{tmp}/out.npz", "--positions", "5", "--seed", "-1"], "--seed: must be an int from 0 to "),
    (["labels", "{tmp}/out.npz", "--positions", "5", "--seed", "1" * 23], "--seed: must be an int from 0 to "),
    (["labels", "{tmp}/out.npz", "--positions", "99999999999", "--seed", "1"], "from 1 to 10,000,000"),
    (["labels", "{tmp}/out.npz", "--positions", "0", "--seed", "1"], "--positions: must be an int from 1"),
    (["labels", "{tmp}/taken", "--positions", "5", "--seed", "1"], "label file {tmp}/taken.npz is a directory"),
    (["labels", "{tmp}/", "--positions", "5", "--seed", "1"], "is a directory"),
    (["labels", "{tmp}/policy", "--positions", "5", "--seed", "1", "--policy", "ckpt:{tmp}/policy.npz"], "--policy"),
    (["fit", "{tmp}/out.pt", "{tmp}/wide.npz"], "masks must be (4, 133) bool"),
    (["fit", "{tmp}/out.pt", "{tmp}/empty.npz"], "holds no positions"),
    (["fit", "{tmp}/out.pt", "{tmp}/nan.npz"], "4 of 4 positions have values that are not finite"),
    (["fit", "{tmp}/out.pt", "{tmp}/cut.npz"], "damaged or not a label file"),
    (["fit", "{tmp}/out.pt", "{tmp}/huge.npz"], "more than 10,000,000 positions"),
    (["fit", "{tmp}/out.pt", "{tmp}/good.npz", "--lr", "nan"], "--lr: must be a number > 0 and <= 1, got 'nan'"),
    (["fit", "{tmp}/out.pt", "{tmp}/good.npz", "--lr", "1e400"], "--lr: must be a number > 0"),
    (["fit", "{tmp}/out.pt", "{tmp}/good.npz", "--play-units", "-5"], "-1 (train the whole network) or an int"),
    (["fit", "{tmp}/out.pt", "{tmp}/good.npz", "--seed", "-1"], "--seed: must be an int from 0 to 2**64 - 256"),
    (["fit", "{tmp}/out.pt", "{tmp}/good.npz", "--anchors", "10000000000"], "--anchors: must be an int from 1"),
    (["fit", "{tmp}/out.pt", "{tmp}/good.npz", "--held-out", "1"], "--held-out: must be a number > 0 and < 1"),
    (["fit", "{tmp}/good.npz", "{tmp}/good.npz"], "is the label file"),
    (["fit", "{tmp}/policy.pt", "{tmp}/good.npz", "--init", "{tmp}/policy-link.pt"], "is the --init checkpoint"),
]


@pytest.mark.parametrize("argv, words", DISTILL_CASES, ids=[f"distill-{i}" for i in range(len(DISTILL_CASES))])
def test_a_usage_error_of_distill_is_one_line_status_2_and_changes_nothing(
    argv: list[str], words: str, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(workspace)
    with pytest.raises(SystemExit) as stopped:
        distill.main([part.replace("{tmp}", str(workspace)) for part in argv])
    captured = capsys.readouterr()
    assert stopped.value.code == 2 and captured.out == ""
    assert captured.err.count("\n") == 1 and words.replace("{tmp}", str(workspace)) in captured.err
    assert snapshot(workspace) == before


@pytest.mark.parametrize("out", ["curve.txt", "curve"])
def test_a_chart_file_of_no_chart_format_is_one_line_naming_the_formats(
    out: str, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert curve.main([str(workspace / "run"), "--out", str(workspace / out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert f"chart file {workspace / out}: its suffix names the format, one of" in captured.err
    assert ".png" in captured.err and ".svg" in captured.err and not (workspace / out).exists()


def test_labels_names_the_file_it_wrote(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert distill.main([LABELS[0], str(tmp_path / "out"), *LABELS[1:]]) == 0
    assert capsys.readouterr().out == f"wrote {tmp_path / 'out.npz'}: 2 labelled play decisions\n"
    assert [path.name for path in tmp_path.iterdir()] == ["out.npz"]


def test_a_labelling_whose_search_values_nothing_gives_up_in_bounded_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    class ValuesNothing:
        def action_values(self, observation: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> dict:
            return {}

    real = distill_labels.make_agent
    monkeypatch.setattr(distill_labels, "STALL_STEPS", 20)
    monkeypatch.setattr(distill_labels, "make_agent", lambda spec, _: ValuesNothing() if spec == "x" else real(spec))
    with pytest.raises(distill.DistillError, match="no position labelled in 20 steps"):
        distill_labels.label_positions(5, 1, "random", search="x")


def test_fit_settings_out_of_range_are_refused_in_the_library_too() -> None:
    for knob, value in (("lr", float("nan")), ("play_units", -5), ("epochs", 0), ("beta", float("inf"))):
        with pytest.raises(distill.DistillError, match=f"^{knob} must be "):
            distill.FitSettings(**{knob: value})


def _one_interrupted_line(capsys: pytest.CaptureFixture[str], prog: str) -> None:
    captured = capsys.readouterr()
    assert captured.err == f"{prog}: interrupted\n" and "Traceback" not in captured.out


def test_ctrl_c_while_labelling_or_fitting_is_one_line_and_status_130(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(distill, "label_positions", interrupted)
    monkeypatch.setattr(distill, "fit", interrupted)
    assert distill.main([LABELS[0], str(tmp_path / "out"), *LABELS[1:]]) == INTERRUPTED_STATUS
    _one_interrupted_line(capsys, "python -m train.distill")
    fit_argv = ["fit", str(tmp_path / "out.pt"), str(workspace / "good.npz"), "--init", str(workspace / "policy.pt")]
    assert distill.main(fit_argv) == INTERRUPTED_STATUS
    _one_interrupted_line(capsys, "python -m train.distill")
    monkeypatch.setattr(curve, "read_curves", interrupted)
    assert curve.main([str(workspace / "run"), "--out", str(tmp_path / "curve.png")]) == INTERRUPTED_STATUS
    _one_interrupted_line(capsys, "python -m train.curve")
    assert list(tmp_path.iterdir()) == []


def test_labels_cut_short_while_writing_leave_the_file_before_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.npz"
    out.write_bytes(b"the good labels")

    def cut(handle: object, **arrays: object) -> None:
        handle.write(b"half")  # type: ignore[attr-defined]
        raise KeyboardInterrupt

    arrays = {"values": np.zeros((1, 133), np.float32)}
    monkeypatch.setattr(distill, "label_positions", lambda *args: arrays)
    monkeypatch.setattr(distill_labels.np, "savez_compressed", cut)
    assert distill.main([LABELS[0], str(out), *LABELS[1:]]) == INTERRUPTED_STATUS
    _one_interrupted_line(capsys, "python -m train.distill")
    assert out.read_bytes() == b"the good labels" and [path.name for path in tmp_path.iterdir()] == ["out.npz"]


def test_a_full_disk_while_writing_the_policy_or_the_chart_is_one_line_naming_it(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(distill, "fit", lambda reference, *args: reference)
    monkeypatch.setattr(distill, "save_checkpoint", disk_full)
    out = tmp_path / "policy.pt"
    with pytest.raises(SystemExit) as stopped:
        distill.main(["fit", str(out), str(workspace / "good.npz"), "--init", str(workspace / "policy.pt")])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.count("\n") == 1
    assert f"cannot write policy file {out}: No space left on device" in err

    chart = tmp_path / "curve.png"
    chart.write_bytes(b"the good chart")
    from matplotlib.figure import Figure

    def half_then_full(self: object, handle: object, **kwargs: object) -> None:
        handle.write(b"half")  # type: ignore[attr-defined]
        disk_full()

    monkeypatch.setattr(Figure, "savefig", half_then_full)
    assert curve.main([str(workspace / "run"), "--out", str(chart)]) == 2
    err = capsys.readouterr().err
    assert err == f"python -m train.curve: error: cannot write {chart}: No space left on device\n"
    assert chart.read_bytes() == b"the good chart" and [path.name for path in tmp_path.iterdir()] == ["curve.png"]


def test_the_curve_reads_a_runs_config_within_the_bounds_of_any_config_file(tmp_path: Path) -> None:
    """The curve reads a run's table size with the reader of every config file (bounded, aliases refused): a
    config.yaml of aliases nested nine deep is not read, and the curve falls back to two teams."""
    run_teams = curve.run_teams

    levels = ["a: &a [x, x, x, x, x, x, x, x, x]"] + [
        f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]" for previous, name in zip("abcdefgh", "bcdefghi")
    ]
    (tmp_path / "config.yaml").write_text("\n".join(levels) + "\nenv: {num_players: 3}\n")
    started = time.monotonic()
    assert run_teams(tmp_path) == 2 and time.monotonic() - started < 5
    (tmp_path / "config.yaml").write_text("env: {num_players: 3}\n")
    assert run_teams(tmp_path) == 3
