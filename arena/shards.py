"""Shards: an evaluation cut into reproducible units of work, played here or in worker processes.

A shard is a range of duplicate pairs of one pairing of sides (:class:`Shard`), played in one
batch by :func:`arena.match.play_matches` with its own agent RNG seeded ``(seed, shard index)``.
:func:`shard_bounds` depends only on the number of pairs and the batch size, never on the number of
workers, and :func:`run_shards` returns results in the order of the shards, so the same seed gives
the same results for any number of workers. Workers are processes (one thread each; forked on Linux
while torch is not imported, else spawned: :func:`worker_start_method`) that report
``[(pairing, winner side), ...]`` batches through a queue.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import queue as queue_module
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.base import Agent
from arena.match import MatchResult, Side, build_agent, field_lineup, play_matches
from pedro_env.config import PedroConfig

SHARD_MULTIPLE = 2  # a shard count above 1 is rounded up to a multiple of this, so 2 workers share work evenly


def shard_bounds(pairs: int, batch_size: int, matches_per_pair: int) -> list[tuple[int, int]]:
    """(first_pair, pairs) of each shard, sizes as even as possible.

    One shard when every match fits in one batch of ``batch_size``; otherwise an even number of
    shards of at most ``batch_size`` matches, so two workers get equal shares (more workers need a
    smaller batch size to get more shards). Depends only on ``pairs`` and ``batch_size``, never on
    the worker count, so the results do not either. Big batches matter more than many shards for
    fast agents: a step of the engine or an agent costs much the same for 100 games as for 1000.
    """
    count = shard_count(pairs, batch_size, matches_per_pair)
    edges = [round(index * pairs / count) for index in range(count + 1)]
    return [(edges[index], edges[index + 1] - edges[index]) for index in range(count)]


def shard_count(pairs: int, batch_size: int, matches_per_pair: int) -> int:
    """How many shards :func:`shard_bounds` cuts ``pairs`` into, without building them."""
    per_shard = max(1, batch_size // matches_per_pair)
    count = math.ceil(pairs / per_shard)
    if count > 1:
        count = min(pairs, SHARD_MULTIPLE * math.ceil(count / SHARD_MULTIPLE))
    return count


@dataclass(frozen=True)
class Shard:
    """Pairs ``first_pair .. first_pair + pairs - 1`` of one pairing of sides, with agent RNG ``(seed, index)``."""

    pairing: int  # which pairing of a round robin (0 for a head to head)
    sides: tuple[Side, ...]  # one side per team, or (A, B) for A against a field of B: agent specs by position
    first_pair: int
    pairs: int
    index: int  # shard number within the pairing: seeds the agents' RNG
    batch_size: int = 0  # matches played at once; 0: the run's (RunSettings.batch_size)


@dataclass(frozen=True)
class RunSettings:
    """What every shard of a run shares."""

    config: PedroConfig
    seed: int  # match pair p deals from seed + p; the agents' RNG of shard i is seeded (seed, i)
    batch_size: int
    duplicate: bool
    record: bool = False  # keep every match's actions (for replay files)
    policies: tuple[tuple[str, bytes], ...] = ()  # in-memory policies (name, agents.policy.policy_bytes) sides may name


ProgressReport = Callable[[list[tuple[int, int]]], None]  # called with [(pairing, winner side), ...] of new results
REPORT_EVERY_S = 0.2  # a shard batches its progress reports (they cross a process boundary with workers)


def play_shard(shard: Shard, settings: RunSettings, report: ProgressReport | None = None) -> list[MatchResult]:
    """Play one shard in this process; its results depend only on the shard and the settings."""
    inline = dict(settings.policies)
    built: dict[str, Agent] = {}

    def agent_for(spec: str) -> Agent:
        if spec not in inline:
            return build_agent(spec, settings.config)
        if spec not in built:  # one instance per name, so a policy named twice acts in one call
            from agents.policy import policy_agent_from_bytes

            built[spec] = policy_agent_from_bytes(inline[spec], settings.config, name=spec)
        return built[spec]

    lineup = [[agent_for(spec) for spec in side] for side in field_lineup(shard.sides, settings.config.num_teams)]
    unreported: list[tuple[int, int]] = []
    last_report = time.monotonic()

    def on_match(match: MatchResult) -> None:
        nonlocal last_report
        unreported.append((shard.pairing, match.winner))
        if report is not None and time.monotonic() - last_report > REPORT_EVERY_S:
            report(unreported.copy())
            unreported.clear()
            last_report = time.monotonic()

    results = play_matches(
        lineup,
        settings.config,
        pairs=shard.pairs,
        seed=settings.seed,
        batch_size=shard.batch_size or settings.batch_size,
        rng=np.random.default_rng([settings.seed, shard.index]),
        progress=on_match,
        first_pair=shard.first_pair,
        duplicate=settings.duplicate,
        record=settings.record,
    )
    if report is not None and unreported:
        report(unreported)
    return results


def run_shards(
    shards: Sequence[Shard], settings: RunSettings, workers: int = 1, report: ProgressReport | None = None
) -> list[list[MatchResult]]:
    """Every shard's results, in the order of ``shards``: here when ``workers`` is 1, else here and in
    ``workers - 1`` worker processes.

    This process plays too. A forked worker takes a shard at once. A spawned one first imports everything
    (about 0.6 s, most of a small run), so until it has played a shard it takes one only while two or more
    wait: the last one is this process's. Workers report progress through a queue that this process drains
    into ``report``, also while it plays. A worker's exception is raised here.
    """
    if workers <= 1 or len(shards) <= 1:
        return [play_shard(shard, settings, report) for shard in shards]
    start_method = worker_start_method()
    context = multiprocessing.get_context(start_method)
    progress_queue = context.Queue()
    pool_size = min(workers - 1, len(shards) - 1)
    results: list[list[MatchResult] | None] = [None] * len(shards)
    pending = list(range(len(shards)))[::-1]  # positions not started, the next one last
    running: dict[int, Any] = {}  # position -> its job in the pool
    # idle workers: started but not played yet, and ready for any shard (a forked one is from the start)
    fresh, warm = [0], [pool_size if start_method == "fork" else 0]

    def dispatch(timeout: float) -> None:
        """Drain the queue (progress, and workers announcing they have started), collect finished shards and
        hand the next shards to idle workers."""
        started = _drain(progress_queue, report, timeout)
        if start_method != "fork":
            fresh[0] += started
        for position in [position for position, job in running.items() if job.ready()]:
            results[position] = running.pop(position).get()
            warm[0] += 1
        while pending and (warm[0] or (fresh[0] and len(pending) > 1)):
            position = pending.pop()
            running[position] = pool.apply_async(_worker_play, (shards[position], settings))
            if warm[0]:
                warm[0] -= 1
            else:
                fresh[0] -= 1

    def report_here(batch: list[tuple[int, int]]) -> None:
        if report is not None:
            report(batch)
        dispatch(0.0)

    with _ctrl_c_ignored_while_starting():  # a worker still importing torch must not print a traceback on Ctrl-C
        pool = context.Pool(pool_size, initializer=_worker_init, initargs=(progress_queue,))
    with pool:
        dispatch(0.0)
        with _one_torch_thread():  # this process is one of the workers now
            while pending:
                position = pending.pop()
                results[position] = play_shard(shards[position], settings, report_here)
                dispatch(0.0)
        while running:
            dispatch(0.01)
        _drain(progress_queue, report, timeout=0.0)
    return [shard_results for shard_results in results if shard_results is not None]


def worker_start_method() -> str:
    """How workers start: "fork" on Linux while torch is not imported here (a forked worker is ready at once,
    with this process's modules), else "spawn" (no forked copy of torch's thread pools or of a GPU context)."""
    if sys.platform.startswith("linux") and "torch" not in sys.modules:
        return "fork"
    return "spawn"


@contextlib.contextmanager
def _one_torch_thread() -> Iterator[None]:
    """torch (when imported) on one thread for the block, as in a worker; its thread count is restored after."""
    torch = sys.modules.get("torch")
    threads = torch.get_num_threads() if torch is not None else 0
    if torch is not None:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if torch is not None:
            torch.set_num_threads(threads)


_WORKER_QUEUE: Any = None  # in a worker process: where progress reports go
WORKER_STARTED = "started"  # what a worker puts on the queue once it is ready for a shard


@contextlib.contextmanager
def _ctrl_c_ignored_while_starting() -> Iterator[None]:
    """Ignore SIGINT in this process while workers start: they inherit the ignored signal from their first
    instruction (their initializer, which ignores it for good, runs only after their imports), and Ctrl-C reaches
    this process alone. Outside the main thread signals cannot be changed, and nothing is done."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _worker_init(progress_queue: Any) -> None:
    global _WORKER_QUEUE
    _WORKER_QUEUE = progress_queue
    # one thread per worker: torch would otherwise start one per core in each, and the workers' threads would
    # spin against each other. The variables reach a torch imported later; a spawned worker has often imported
    # it already (it re-imports the parent's main module: pedro-train's imports torch), so it is told directly.
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = "1"
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)
    # Ctrl-C is the parent's to handle (pedro-train stops at the next update; pedro-eval ends the pool)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if progress_queue is not None:
        progress_queue.put(WORKER_STARTED)


def _worker_play(shard: Shard, settings: RunSettings) -> list[MatchResult]:
    return play_shard(shard, settings, _WORKER_QUEUE.put)


def _drain(progress_queue: Any, report: ProgressReport | None, timeout: float) -> int:
    """Pass every progress batch waiting in the queue to ``report`` (waiting up to ``timeout`` for the first);
    the number of workers that announced they have started."""
    started = 0
    try:
        while True:
            batch = progress_queue.get(timeout=timeout) if timeout > 0 else progress_queue.get_nowait()
            if batch == WORKER_STARTED:
                started += 1
            elif report is not None:
                report(batch)
            timeout = 0.0
    except queue_module.Empty:
        pass
    return started
