"""Checks shared by every command (``python -m benchmarks.engine``, ``.demo``, ``.gym_vector``, and train's CLIs).

Every mistake in a command's arguments ends in one line on stderr, ``PROG: error: MESSAGE (see --help)``,
naming the argument and its allowed values, with exit status 2 and before any work starts: the argparse
``type`` functions here give the messages, :class:`OneLineErrorParser` prints them, and
:func:`check_output_file` / :func:`check_output_dir` / :func:`check_output_prefix` prove output paths
writable up front (a mistake costs a second, not the minutes of work it would otherwise throw away).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import math
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

from pedro_env.config import PedroConfig, SeedError, check_seed, make_config, parse_override, short_repr


class OneLineErrorParser(argparse.ArgumentParser):
    """An ArgumentParser whose every error is one line on stderr, ``PROG: error: MESSAGE``, and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def int_at_least(low: int) -> Callable[[str], int]:
    """An argparse ``type``: an int >= ``low``, else a message naming the allowed values."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low:
            raise argparse.ArgumentTypeError(f"must be an int >= {low}, got {text!r}")
        return value

    return parse


def int_between(low: int, high: int, why: str = "") -> Callable[[str], int]:
    """An argparse ``type``: an int from ``low`` to ``high``, else a message naming them (and ``why``)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be an int from {low:,} to {high:,}{why}, got {short_repr(text)}")
        return value

    return parse


def positive_seconds(text: str) -> float:
    """An argparse ``type``: a finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text!r}")
    return value


def seed_argument(text: str) -> int:
    """An argparse ``type``: a seed, an int from 0 to 2**64 - 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an int from 0 to 2**64 - 1, got {text!r}") from None
    try:
        return check_seed(value)
    except SeedError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("seed ")) from None


class OutputPathError(ValueError):
    """An output path that cannot be written (a directory where a file belongs, read-only, or its folder cannot
    be made)."""


def _file_in_the_way(path: Path) -> Path | None:
    """The nearest existing ancestor of ``path`` when it is a file (so nothing can be made below it)."""
    blocking = next((folder for folder in path.parents if folder.exists()), None)
    return blocking if blocking is not None and not blocking.is_dir() else None


def check_output_dir(path: str | Path, what: str = "output directory") -> Path:
    """Make ``path`` (and its parents) if needed and prove a file can be written in it."""
    path = Path(path)
    blocking = path if path.exists() and not path.is_dir() else _file_in_the_way(path)
    if blocking is not None:
        raise OutputPathError(f"cannot write {what} {path}: {blocking} is a file, not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".write-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise OutputPathError(f"cannot write to {what} {path}: {error.strerror or type(error).__name__}") from None
    return path


def check_output_file(path: str | Path, what: str = "output file") -> Path:
    """Prove ``path`` can be written (its folder made if needed) before any work, leaving a file already there as is."""
    if str(path).endswith(("/", os.sep)) or Path(path).is_dir():  # before Path() drops a trailing slash
        raise OutputPathError(f"{what} {path} is a directory; give a file name")
    path = Path(path)
    blocking = _file_in_the_way(path)
    if blocking is not None:
        raise OutputPathError(f"cannot write {what} {path}: {blocking} is a file, not a directory")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            if not os.access(path, os.W_OK):
                raise PermissionError(13, "permission denied")
        else:
            path.touch(exist_ok=False)
            path.unlink()
    except OSError as error:
        raise OutputPathError(f"cannot write {what} {path}: {error.strerror or type(error).__name__}") from None
    return path


def check_output_prefix(prefix: str | Path, suffixes: tuple[str, ...], what: str = "output") -> Path:
    """Check ``PREFIX<suffix>`` for every suffix (``.json``, ``.csv``, ``.png``): the files a report writes."""
    if str(prefix).endswith(("/", os.sep)) or Path(prefix).is_dir():
        raise OutputPathError(
            f"{what} prefix {prefix} is a directory; give a file prefix such as {Path(prefix) / 'result'}"
        )
    for suffix in suffixes:
        check_output_file(Path(f"{prefix}{suffix}"), f"{what} file")
    return Path(prefix)


def same_file(first: str | Path, second: str | Path) -> bool:
    """Whether two paths name one file (after links and ``..``); False when either does not exist yet."""
    try:
        return os.path.samefile(first, second)
    except OSError:
        return False


@contextlib.contextmanager
def atomic_output(path: str | Path, mode: str = "wb") -> Iterator[IO[Any]]:
    """Write ``path`` whole or not at all: yield a temporary file beside it, then flush, fsync and rename it over
    ``path``. On any error (a full disk, an exception in the block, Ctrl-C) the temporary file is removed and a
    file already at ``path`` is left as it was; an OSError is raised as :class:`OutputPathError` naming ``path``."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(temporary, mode) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except OSError as error:
        raise OutputPathError(f"cannot write {path}: {error.strerror or type(error).__name__}") from None
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()


INTERRUPTED_STATUS = 130  # the shell's status for a command ended by SIGINT (128 + 2)


def one_line_on_interrupt(prog: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Wrap a CLI ``main`` so that Ctrl-C ends it with one line on stderr, ``PROG: interrupted``, and status 130
    (a command that saves its work on Ctrl-C catches KeyboardInterrupt itself and says what it kept)."""

    def wrap(main: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(main)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return main(*args, **kwargs)
            except KeyboardInterrupt:
                print(f"{prog}: interrupted", file=sys.stderr)
                return INTERRUPTED_STATUS

        return wrapper

    return wrap


def silence_stdout() -> None:
    """Point stdout at /dev/null after a BrokenPipeError (the reader of a pipe stopped early, as ``| head``
    does), so the interpreter's last flush raises nothing more."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def quiet_on_broken_pipe(main: Callable[[Sequence[str] | None], int]) -> Callable[[Sequence[str] | None], int]:
    """Wrap a CLI ``main`` so that a reader that stops early (``| head``) ends it quietly, status 0."""

    @functools.wraps(main)
    def wrapper(argv: Sequence[str] | None = None) -> int:
        try:
            return main(argv)
        except BrokenPipeError:
            silence_stdout()
            return 0

    return wrapper


def add_rule_overrides(parser: argparse.ArgumentParser) -> None:
    """``--set KEY=VALUE ...``: rule and episode keys (docs/rules.md section 9), the spelling pedro-train uses
    (``env.KEY=VALUE`` is accepted too, so one line works in every command)."""
    parser.add_argument(
        "--set",
        dest="rule_overrides",
        nargs="+",
        action="extend",
        default=[],
        metavar="KEY=VALUE",
        help="rule and episode keys (docs/rules.md section 9), e.g. --set target_score=21 variant=sancho",
    )


def rule_config(args: argparse.Namespace) -> tuple[PedroConfig, dict[str, Any]]:
    """The games' config from the ``--set`` assignments, and those assignments as typed keyword arguments;
    ConfigError for a bad one or a bad combination."""
    overrides = dict(parse_override(text.removeprefix("env.")) for text in args.rule_overrides)
    return make_config(**overrides), overrides
