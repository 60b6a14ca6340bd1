"""torchrun for ``--nproc``: ``python -m train.launcher PROG TORCHRUN_ARGUMENTS``, torchrun's launcher without its
report of a failed rank.

A rank that stops on a mistake, a failed write or Ctrl-C has already said so in one line (status 2, 1 or 130); torchrun
would add a traceback, a log line and a table of the failure after it. Here the job ends with the first failed rank's
status and nothing more, or, where that rank ended without a word of its own (a signal, another status), one line
``PROG: error: rank R ...`` naming how it ended. A hangup or SIGTERM to the launcher itself stops the ranks
(torchrun's way) and is one line too."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

from pedro_env.cli import INTERRUPTED_STATUS

SPOKEN_STATUSES = (1, 2, INTERRUPTED_STATUS)  # a rank that ends with one of these printed its own line
QUIET_LOGGERS = ("torch.distributed.elastic.multiprocessing.api", "torch.distributed.elastic.agent.server.api")


def main(argv: Sequence[str] | None = None) -> int:
    """Run torchrun with ``argv[1:]``; ``argv[0]`` names the command in a line of our own. Returns the status."""
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import parse_args, run

    given = list(sys.argv[1:] if argv is None else argv)
    if not given:
        print(
            "usage: python -m train.launcher PROG TORCHRUN_ARGUMENTS (pedro-train --nproc N runs it)", file=sys.stderr
        )
        return 2
    prog, *arguments = given
    for name in QUIET_LOGGERS:  # their "failed (exitcode: N)" lines: the ending is said once, below or by the rank
        logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        run(parse_args(arguments))
    except ChildFailedError as failed:
        rank, failure = failed.get_first_failure()
        if failure.exitcode not in SPOKEN_STATUSES:
            how = f"signal {failure.signal_name()}" if failure.exitcode < 0 else f"status {failure.exitcode}"
            print(f"{prog}: error: rank {rank} ended with {how}; the job stopped", file=sys.stderr)
        return failure.exitcode if failure.exitcode > 0 else 1
    except SignalException as stopped:  # SIGHUP or SIGTERM to this process: torchrun has stopped the ranks
        print(f"{prog}: stopped by {stopped.sigval.name}; so were the ranks", file=sys.stderr)
        return 128 + int(stopped.sigval)
    return 0


if __name__ == "__main__":
    sys.exit(main())
