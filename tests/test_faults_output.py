"""The fault suite's shared rules (issue 56): an output is written whole or not at all, never over an input of the
same command, and Ctrl-C ends a command in one line with status 130 (pedro_env/cli.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from pedro_env.cli import INTERRUPTED_STATUS, OutputPathError, atomic_output, one_line_on_interrupt, same_file


def test_an_output_cut_short_leaves_the_file_before_it_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    path.write_text("the good result")
    with pytest.raises(RuntimeError), atomic_output(path, "w") as handle:
        handle.write("half of a new")
        raise RuntimeError("the disk filled")
    assert path.read_text() == "the good result" and os.listdir(tmp_path) == ["result.json"]
    with atomic_output(path, "w") as handle:
        handle.write("the new result")
    assert path.read_text() == "the new result" and os.listdir(tmp_path) == ["result.json"]


def test_a_place_that_cannot_be_written_is_one_error_naming_the_users_path(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder" / "x.json"
    with pytest.raises(OutputPathError, match=f"^cannot write {missing}: "), atomic_output(missing) as handle:
        handle.write(b"x")
    assert not missing.parent.exists()


def test_same_file_sees_through_links_and_dots(tmp_path: Path) -> None:
    target = tmp_path / "latest.pt"
    target.write_bytes(b"")
    (tmp_path / "link.pt").symlink_to(target)
    assert same_file(tmp_path / "link.pt", tmp_path / "." / "latest.pt")
    assert not same_file(tmp_path / "other.pt", target)  # not there yet


def test_ctrl_c_is_one_line_and_status_130(capsys: pytest.CaptureFixture[str]) -> None:
    @one_line_on_interrupt("pedro-thing")
    def main(argv: list[str] | None = None) -> int:
        raise KeyboardInterrupt

    assert main([]) == INTERRUPTED_STATUS == 130
    assert capsys.readouterr().err == "pedro-thing: interrupted\n"
    assert sys.exc_info() == (None, None, None)


@pytest.mark.parametrize(
    "module",
    [
        "pedro_env.demo",
        "benchmarks.engine",
        "benchmarks.gym_vector",
        "benchmarks.play",
        "benchmarks.rule_agents",
        "benchmarks.startup",
        "benchmarks.table_load",
        "benchmarks.training",
    ],
)
def test_every_demo_and_benchmark_ends_in_one_line_on_ctrl_c(module: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Their work is a Ctrl-C away from any line of it: the parser raising it stands in for the signal."""
    import argparse
    import importlib

    main = importlib.import_module(module).main

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", interrupted)
    errors: list[str] = []
    monkeypatch.setattr(sys, "stderr", type("Capture", (), {"write": errors.append, "flush": lambda self: None})())
    assert main([]) == INTERRUPTED_STATUS
    assert "".join(errors) == f"python -m {module}: interrupted\n"
