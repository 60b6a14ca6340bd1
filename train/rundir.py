"""A run directory has one owner: an exclusive lock held while ``pedro-train`` writes into it.

The lock is ``RUN_DIR/.lock``, held with an OS file lock (``fcntl.flock``; ``msvcrt.locking`` on Windows)
for as long as the process lives, and holding ``pid``, ``host`` and the start time for the message a
second process gets. The OS drops the lock when its process ends, however it ends (kill -9 included), so
a lock is never stale: a file left behind by a dead process is taken over silently.

What a run directory may hold when a run starts (:func:`check_new_run_dir`): nothing, or only files a
previous owner left with no checkpoint (a run that crashed before its first one) when the caller starts
it again from decision 0 explicitly (``pedro-train --resume RUN_DIR --from-start``).
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import IO

from agents.checkpoint import LATEST_NAME, latest_checkpoint

LOCK_NAME = ".lock"
# what a run writes; --from-start clears these from a directory that has no checkpoint
RUN_FILE_PATTERNS = ("events.out.tfevents.*", "config.yaml", "eval.txt", "eval.json", "checkpoint-*.pt")


class RunDirError(ValueError):
    """A run directory another process owns, or one whose contents do not fit what was asked."""


def _try_lock(handle: IO[str]) -> bool:
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        try:
            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


class RunLock:
    """``with RunLock(run_dir):`` owns ``run_dir`` (made if needed) or raises :class:`RunDirError` at once."""

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LOCK_NAME
        self.handle: IO[str] | None = None

    def acquire(self) -> RunLock:
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            handle = open(self.path, "a+", encoding="utf-8")
        except OSError as error:
            raise RunDirError(f"cannot write run directory {self.run_dir}: {error.strerror or error}") from None
        if not _try_lock(handle):
            handle.seek(0)
            owner = _describe_owner(handle.read())
            handle.close()
            raise RunDirError(
                f"run directory {self.run_dir} is in use by {owner}: wait for it to end, or choose another --run-name"
            )
        try:
            handle.seek(0)
            handle.truncate()
            owner = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
            handle.write(json.dumps(owner) + "\n")
            handle.flush()
        except OSError as error:
            handle.close()
            raise RunDirError(f"cannot write run directory {self.run_dir}: {error.strerror or error}") from None
        self.handle = handle
        remove_stale_temporaries(self.run_dir)
        return self

    def release(self) -> None:
        """Let go of the directory (the lock file stays: removing it would race with a process opening it)."""
        if self.handle is not None:
            self.handle.close()
            self.handle = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def check_not_in_use(run_dir: str | Path) -> None:
    """Raise RunDirError if a live process owns ``run_dir`` now (a quick look that writes nothing)."""
    path = Path(run_dir) / LOCK_NAME
    try:
        handle = open(path, encoding="utf-8")
    except OSError:
        return  # no lock file: nobody has owned the directory
    with handle:
        if not _try_lock(handle):
            raise RunDirError(
                f"run directory {run_dir} is in use by {_describe_owner(handle.read())}: wait for it to end"
            )


def _describe_owner(text: str) -> str:
    try:
        owner = json.loads(text)
        return f"another pedro-train (pid {owner['pid']} on {owner['host']}, since {owner['started']})"
    except (ValueError, KeyError, TypeError):
        return "another pedro-train"


def remove_stale_temporaries(run_dir: Path) -> list[Path]:
    """Delete the ``.NAME.tmp-PID`` files a killed checkpoint write left; only the directory's owner calls this."""
    removed = []
    for path in run_dir.glob(".*.tmp-*"):
        try:
            path.unlink()
            removed.append(path)
        except OSError:
            pass
    return removed


def previous_run_files(run_dir: Path) -> list[Path]:
    """Files of an earlier run in ``run_dir`` (logs, config, tables, checkpoints), sorted."""
    found: set[Path] = set()
    for pattern in RUN_FILE_PATTERNS + (LATEST_NAME,):
        found.update(run_dir.glob(pattern))
    return sorted(found)


def check_new_run_dir(run_dir: Path, from_start: bool) -> None:
    """A new run (decision 0) may start in ``run_dir``: raise RunDirError if that would mix it with another.

    With ``from_start`` a directory whose earlier run left no checkpoint is cleared of that run's files.
    """
    if latest_checkpoint(run_dir).exists():
        raise RunDirError(
            f"run directory {run_dir} already holds a run: continue it with --resume {run_dir} "
            "or choose another --run-name"
        )
    leftovers = previous_run_files(run_dir)
    if not leftovers:
        return
    if not from_start:
        names = ", ".join(sorted({_kind(path) for path in leftovers}))
        raise RunDirError(
            f"run directory {run_dir} holds a run that stopped before its first checkpoint ({names}): "
            f"start it again from decision 0 with --resume {run_dir} --from-start, or choose another --run-name"
        )
    for path in leftovers:
        path.unlink()


def _kind(path: Path) -> str:
    return "event files" if path.name.startswith("events.out.tfevents.") else path.name
