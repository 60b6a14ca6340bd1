"""Training and evaluation: self-play PPO, matches between agents, tournaments, ratings, play and replays."""

import os
import sys


def silence_stdout() -> None:
    """Point stdout at /dev/null after a BrokenPipeError (the reader of a pipe stopped early, as ``| head``
    does), so the interpreter's last flush raises nothing more."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
