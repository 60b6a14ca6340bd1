"""Training and evaluation: self-play PPO, matches between agents, tournaments, ratings, play and replays."""

import functools
import os
import sys
from collections.abc import Callable, Sequence


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
