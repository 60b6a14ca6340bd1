"""Start-up benchmark: how long a new process takes to its first steps, with an empty kernel cache and from it.

    python -m benchmarks.startup              # one cold start, then one from its cache
    python -m benchmarks.startup --runs 3     # three of each, each cold one with a new empty cache

Each start is a new Python process (``python -c FIRST_STEPS``) that imports
``pedro_env``, resets ``pedro_env.env()`` and takes one step, then resets a ``PedroVectorEnv`` of 4 games and
takes one step: what a user's first script does. A cold start gets an empty temporary ``NUMBA_CACHE_DIR``
(the kernels compile and are cached there), the warm start after it the same directory. The figure is the
child's wall time from its first line to its last step, and the whole process's wall time as the
parent saw it (interpreter start and exit included). The temporary directories are removed afterwards.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

from pedro_env.cli import OneLineErrorParser, int_at_least, one_line_on_interrupt

# the timed process: its clock starts before ``import pedro_env`` (so not ``python -m`` of this module, which
# would import the package first)
FIRST_STEPS = """
import time
start = time.perf_counter()
import numpy as np
import pedro_env

env = pedro_env.env()
env.reset(seed=0)
observation, *_ = env.last()
env.step(int(np.flatnonzero(observation["action_mask"])[0]))
venv = pedro_env.PedroVectorEnv(num_envs=4)
step = venv.reset(seed=0)
venv.step(step.action_mask.argmax(axis=1))
print(f"first steps after {time.perf_counter() - start:.3f} s")
"""
CHILD_PREFIX = "first steps after "


def timed_start(cache_dir: str | None) -> tuple[float, float]:
    """(the child's seconds to its first steps, the whole process's wall seconds) with ``cache_dir`` as the kernels'
    cache (None: where this install caches them)."""
    environment = dict(os.environ)
    if cache_dir is not None:
        environment["NUMBA_CACHE_DIR"] = cache_dir
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", FIRST_STEPS],
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    lines = [line for line in done.stdout.splitlines() if line.startswith(CHILD_PREFIX)]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"the timed process failed (exit {done.returncode}): {done.stderr.strip()[-500:]}")
    return float(lines[-1][len(CHILD_PREFIX) :].split()[0]), wall


@one_line_on_interrupt("python -m benchmarks.startup")
def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineErrorParser(prog="python -m benchmarks.startup", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int_at_least(1), default=1, help="cold starts, each followed by a warm one")
    args = parser.parse_args(argv)
    print("import pedro_env, one AEC step, one PedroVectorEnv step (seconds: to the steps / whole process)")
    for run in range(1, args.runs + 1):
        cache_dir = tempfile.mkdtemp(prefix="pedro-startup-")
        try:
            cold, cold_wall = timed_start(cache_dir)
            warm, warm_wall = timed_start(cache_dir)
        finally:
            shutil.rmtree(cache_dir, ignore_errors=True)
        print(
            f"run {run}: empty cache {cold:.2f} s / {cold_wall:.2f} s, from the cache {warm:.2f} s / {warm_wall:.2f} s",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
