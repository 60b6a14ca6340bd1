"""Throughput benchmark: decisions per second of the AEC env and the batched env, memory, and OpenSpiel.

Run ``python -m benchmarks.engine --help`` for the options. What is measured, in order:

=================  ===============================================================================================
AEC env            One game, ``pedro_env.env()``, driven through the standard PettingZoo loop (``agent_iter``,
                   ``last()``, ``step``) with a uniformly random legal action; ``reset()`` at episode end. The
                   timed region is the whole loop: env steps, observation and mask via ``last()``, the random
                   choice, the dead steps PettingZoo needs at episode end and the resets. Only real decisions
                   are counted.
Batched env        ``PedroVectorEnv(B, reuse_outputs=True)`` for each ``--batch-sizes`` entry (the step writes
                   into the same output arrays every step, as the trainer's does). Only ``venv.step`` is timed
                   (check and apply actions, auto-reset, legal masks, observations). Actions are drawn outside
                   the timed region by argmax over mask-weighted uniform noise in (0, 1], fresh (B, 133)
                   float32 noise drawn before every step into one reused buffer. Decisions/s = B * steps /
                   timed seconds, after a warm-up.
Memory             Peak RSS of the process (``resource.getrusage``, monotone, reported after each measurement);
                   per batch size the ``nbytes`` of ``venv.state`` and of one step's returned arrays, and the
                   tracemalloc peak of the allocations one ``venv.step`` makes (temporaries + returned arrays,
                   the largest over a few steps).
OpenSpiel          When ``pyspiel`` imports (extra ``bench``): "euchre" and "spades" with random legal play.
                   Each decision builds the actor's tensor (``observation_tensor``, or ``information_state_tensor``
                   for games that provide only that, as euchre does) and ``legal_actions()``, then applies a
                   random legal action; chance nodes are sampled by their probabilities and a new game starts
                   at terminal. Everything is timed; only player decisions are counted.
=================  ===============================================================================================

One core by default (``--threads 1``): the process is pinned to the first CPU it may use
(``os.sched_setaffinity``) and ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` are
set to 1. Those variables only take effect if set before numpy loads its BLAS, and
``python -m benchmarks.engine`` imports the ``pedro_env`` package (hence numpy) before this module runs,
so when they are not already set the command re-executes itself once with them in the environment.
The report says which happened. ``--threads 0`` leaves affinity and thread variables alone.

A mistake in the arguments (a ``--seed`` outside 0 .. 2**64 - the largest batch size, a batch size
below 1, a bad ``--set KEY=VALUE``, a ``--json`` path that cannot be written) ends in one line on
stderr and exit status 2 before any measurement (see :mod:`pedro_env.cli`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import sys
import time
import tracemalloc
from dataclasses import asdict, dataclass, fields
from importlib import metadata
from typing import Any

import numpy as np

import pedro_env
from pedro_env.actions import NUM_ACTIONS
from pedro_env.cli import (
    INTERRUPTED_STATUS,
    OneLineErrorParser,
    OutputPathError,
    add_rule_overrides,
    check_output_file,
    int_at_least,
    one_line_on_interrupt,
    positive_seconds,
    rule_config,
    seed_argument,
)
from pedro_env.config import SEED_LIMIT, ConfigError, PedroConfig, SeedError, check_seed, parse_override
from pedro_env.vector import VectorStep

THREAD_ENV_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
# set in the environment of the re-executed process so it never re-executes again
REEXEC_MARKER = "PEDRO_BENCH_REEXECUTED"
DEFAULT_BATCH_SIZES = (1, 256, 4096)
DEFAULT_SECONDS = 3.0
QUICK_SECONDS = 0.5
OPENSPIEL_GAMES = ("euchre", "spades")
# steps (with tracemalloc on) over which the per-step allocation peak is taken
TRACEMALLOC_STEPS = 8

EXAMPLES = """\
examples:
  python -m benchmarks.engine                              # full run, ~3 s per measurement, one core
  python -m benchmarks.engine --quick --skip-openspiel     # ~0.5 s per measurement, no OpenSpiel
  python -m benchmarks.engine --batch-sizes 1 64 1024 16384 --seconds 5
  python -m benchmarks.engine --set num_players=2 six_card=true variant=sancho --json bench.json
  python -m benchmarks.engine --threads 0                  # no pinning, library thread defaults
"""


# ---------------------------------------------------------------- results


@dataclass
class AecResult:
    """The AEC env measurement (one game, PettingZoo loop, random choice inside the timed region)."""

    decisions: int  # agent steps with a real action
    dead_steps: int  # steps with action None for terminated/truncated agents (timed, not counted)
    episodes: int  # episodes finished in the timed region
    seconds: float  # wall-clock seconds of the timed loop
    decisions_per_s: float
    us_per_decision: float
    peak_rss_bytes: int  # process peak RSS after this measurement


@dataclass
class VectorResult:
    """One batched env measurement (only ``venv.step`` timed)."""

    batch_size: int
    steps: int  # timed venv.step calls
    seconds: float  # summed time inside venv.step
    decisions_per_s: float  # batch_size * steps / seconds
    us_per_step: float
    episodes_finished: int  # games that terminated or were truncated during the timed steps
    state_bytes: int  # nbytes of all venv.state arrays
    step_output_bytes: int  # nbytes of all arrays one VectorStep returns (deals included)
    tracemalloc_step_peak_bytes: int  # largest tracemalloc peak of one venv.step's allocations
    peak_rss_bytes: int  # process peak RSS after this measurement


@dataclass
class OpenSpielResult:
    """One OpenSpiel game measured with random legal play (everything timed, decisions counted)."""

    game: str  # the loaded game with its parameters, as OpenSpiel prints it
    tensor: str  # which per-decision tensor was built
    tensor_size: int
    decisions: int  # player decisions (chance nodes excluded)
    chance_nodes: int
    games: int  # games finished in the timed region
    seconds: float
    decisions_per_s: float
    us_per_decision: float


# ---------------------------------------------------------------- setup


def parse_config_overrides(items: list[str]) -> dict[str, Any]:
    """``["KEY=VALUE", ...]`` -> typed config overrides; ConfigError (a ValueError) for a malformed item.

    (The command reads its ``--set KEY=VALUE`` through :func:`pedro_env.cli.rule_config`.)"""
    return dict(parse_override(item) for item in items)


def thread_vars_already_set(threads: int) -> bool:
    """Whether every BLAS/OpenMP thread variable already equals ``threads`` in this process's environment."""
    return all(os.environ.get(name) == str(threads) for name in THREAD_ENV_VARS)


def reexec_with_thread_vars(threads: int) -> None:
    """Replace this process by ``python -m benchmarks.engine`` with the thread variables set (never returns)."""
    environment = dict(os.environ)
    environment.update({name: str(threads) for name in THREAD_ENV_VARS})
    environment[REEXEC_MARKER] = "1"
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", "benchmarks.engine", *sys.argv[1:]], environment)


def limit_threads(threads: int) -> dict[str, Any]:
    """Pin to the first ``threads`` allowed CPUs and set the thread variables; returns what was done."""
    report: dict[str, Any] = {"threads": threads, "pinned_cpus": None, "thread_vars": None}
    if threads <= 0:
        report["thread_vars"] = "left alone (--threads 0)"
        return report
    if thread_vars_already_set(threads):
        how = "re-executed with them" if os.environ.get(REEXEC_MARKER) else "already in the environment"
        report["thread_vars"] = f"{'/'.join(THREAD_ENV_VARS)}={threads}, set before numpy import ({how})"
    else:
        for name in THREAD_ENV_VARS:
            os.environ[name] = str(threads)
        report["thread_vars"] = (
            f"{'/'.join(THREAD_ENV_VARS)}={threads}, set after numpy import (no effect on numpy's loaded BLAS)"
        )
    if hasattr(os, "sched_setaffinity"):
        allowed = sorted(os.sched_getaffinity(0))
        chosen = allowed[:threads]
        os.sched_setaffinity(0, chosen)
        report["pinned_cpus"] = chosen
    return report


def cpu_model() -> str:
    """The CPU model from /proc/cpuinfo ("model name"), or platform.processor() elsewhere."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith(("model name", "Processor", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def package_version(name: str) -> str | None:
    """Installed version of a distribution, None when it is not installed."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def machine_info() -> dict[str, Any]:
    """CPU model, core counts and the versions that matter for the figures."""
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "cpu_model": cpu_model(),
        "logical_cores": os.cpu_count(),
        "allowed_cpus_at_start": allowed,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "pettingzoo": package_version("pettingzoo"),
        "open_spiel": package_version("open_spiel"),
        "pedro_env": pedro_env.__version__,
    }


def peak_rss_bytes() -> int:
    """Peak resident set size of this process so far (ru_maxrss is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


# ---------------------------------------------------------------- measurements


def measure_aec(config: PedroConfig, seconds: float, seed: int, warmup_seconds: float) -> AecResult:
    """Decisions/s of one AEC game under random legal play (see the module docstring for what is timed)."""
    aec_env = pedro_env.env(config=config)
    chooser = random.Random(seed)

    def play(budget: float, first_seed: int) -> tuple[int, int, int, float]:
        decisions = dead_steps = episodes = 0
        aec_env.reset(seed=first_seed)
        start = time.perf_counter()
        deadline = start + budget
        while True:
            out_of_time = False
            for _agent in aec_env.agent_iter():
                observation, _reward, termination, truncation, _info = aec_env.last()
                if termination or truncation:
                    action = None
                    dead_steps += 1
                else:
                    legal = np.flatnonzero(observation["action_mask"])
                    action = int(legal[chooser.randrange(legal.size)])
                    decisions += 1
                aec_env.step(action)
                if time.perf_counter() >= deadline:
                    out_of_time = True
                    break
            if out_of_time:
                return decisions, dead_steps, episodes, time.perf_counter() - start
            episodes += 1
            aec_env.reset()  # the next match on the same seed

    play(warmup_seconds, (seed + 1_000_000) % SEED_LIMIT)  # another match for the untimed warm-up
    decisions, dead_steps, episodes, elapsed = play(seconds, seed)
    return AecResult(
        decisions=decisions,
        dead_steps=dead_steps,
        episodes=episodes,
        seconds=elapsed,
        decisions_per_s=decisions / elapsed,
        us_per_decision=1e6 * elapsed / max(decisions, 1),
        peak_rss_bytes=peak_rss_bytes(),
    )


def step_output_bytes(result: VectorStep) -> int:
    """Sum of ``nbytes`` over every array a VectorStep holds (the ``deals`` dict included)."""
    total = 0
    for field in fields(result):
        value = getattr(result, field.name)
        arrays = value.values() if isinstance(value, dict) else [value]
        total += sum(array.nbytes for array in arrays if isinstance(array, np.ndarray))
    return total


def state_bytes(venv: pedro_env.PedroVectorEnv) -> int:
    """Sum of ``nbytes`` over the arrays of ``venv.state``."""
    assert venv.state is not None
    return sum(getattr(venv.state, field.name).nbytes for field in fields(venv.state))


def measure_vector(
    config: PedroConfig, batch_size: int, seconds: float, seed: int, warmup_seconds: float
) -> VectorResult:
    """Decisions/s of ``PedroVectorEnv(batch_size, reuse_outputs=True)``, only ``venv.step`` timed, and its memory."""
    venv = pedro_env.PedroVectorEnv(batch_size, config=config, reuse_outputs=True)
    rng = np.random.default_rng(seed)
    noise = np.empty((batch_size, NUM_ACTIONS), dtype=np.float32)  # reused: the sampler adds no RSS per step

    def random_legal_actions(action_mask: np.ndarray) -> np.ndarray:
        """(B,) uniformly random legal actions: argmax of (0, 1] noise times the 0/1 mask (ties have measure 0)."""
        rng.random(out=noise, dtype=np.float32)
        np.subtract(1.0, noise, out=noise)  # [0, 1) -> (0, 1]: a legal action always beats the masked zeros
        np.multiply(noise, action_mask, out=noise)
        return np.argmax(noise, axis=1)

    result = venv.reset(seed=seed)
    warmup_end = time.perf_counter() + warmup_seconds
    while time.perf_counter() < warmup_end:
        result = venv.step(random_legal_actions(result.action_mask))

    steps = episodes_finished = 0
    elapsed = 0.0
    while elapsed < seconds:
        actions = random_legal_actions(result.action_mask)
        start = time.perf_counter()
        result = venv.step(actions)
        elapsed += time.perf_counter() - start
        steps += 1
        episodes_finished += int(np.count_nonzero(result.terminated | result.truncated))

    # memory, outside the timed region: tracemalloc sees numpy's allocations made while it runs
    tracemalloc.start()
    step_peak = 0
    for _ in range(TRACEMALLOC_STEPS):
        actions = random_legal_actions(result.action_mask)
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        result = venv.step(actions)
        step_peak = max(step_peak, tracemalloc.get_traced_memory()[1] - before)
    tracemalloc.stop()

    return VectorResult(
        batch_size=batch_size,
        steps=steps,
        seconds=elapsed,
        decisions_per_s=batch_size * steps / elapsed,
        us_per_step=1e6 * elapsed / steps,
        episodes_finished=episodes_finished,
        state_bytes=state_bytes(venv),
        step_output_bytes=step_output_bytes(result),
        tracemalloc_step_peak_bytes=step_peak,
        peak_rss_bytes=peak_rss_bytes(),
    )


def sample_chance_outcome(outcomes: list[tuple[int, float]], uniform: float) -> int:
    """The outcome whose cumulative probability interval holds ``uniform`` in [0, 1)."""
    cumulative = 0.0
    for action, probability in outcomes:
        cumulative += probability
        if uniform < cumulative:
            return action
    return outcomes[-1][0]  # rounding left the sum just under 1


def measure_openspiel(game_name: str, seconds: float, seed: int, warmup_seconds: float) -> OpenSpielResult:
    """Decisions/s of an OpenSpiel game under random legal play (needs pyspiel; see the module docstring)."""
    import pyspiel  # the optional extra "bench"

    game = pyspiel.load_game(game_name)
    game_type = game.get_type()
    if game_type.provides_observation_tensor:
        tensor_name = "observation_tensor"
    elif game_type.provides_information_state_tensor:
        tensor_name = "information_state_tensor"
    else:
        raise ValueError(f"OpenSpiel game {game_name!r} provides neither an observation nor an info state tensor")
    chooser = random.Random(seed)

    def play(budget: float) -> tuple[int, int, int, float, int]:
        decisions = chance_nodes = games = tensor_size = 0
        state = game.new_initial_state()
        start = time.perf_counter()
        deadline = start + budget
        while True:
            if state.is_terminal():
                games += 1
                state = game.new_initial_state()
            elif state.is_chance_node():
                state.apply_action(sample_chance_outcome(state.chance_outcomes(), chooser.random()))
                chance_nodes += 1
            else:
                player = state.current_player()
                tensor = getattr(state, tensor_name)(player)
                legal = state.legal_actions()
                state.apply_action(legal[chooser.randrange(len(legal))])
                tensor_size = len(tensor)
                decisions += 1
                if time.perf_counter() >= deadline:
                    return decisions, chance_nodes, games, time.perf_counter() - start, tensor_size

    play(warmup_seconds)
    decisions, chance_nodes, games, elapsed, tensor_size = play(seconds)
    return OpenSpielResult(
        game=str(game),
        tensor=tensor_name,
        tensor_size=tensor_size,
        decisions=decisions,
        chance_nodes=chance_nodes,
        games=games,
        seconds=elapsed,
        decisions_per_s=decisions / elapsed,
        us_per_decision=1e6 * elapsed / max(decisions, 1),
    )


def speed_ratios(aec: AecResult, vector: list[VectorResult], openspiel: dict[str, OpenSpielResult]) -> dict[str, float]:
    """Our decisions/s over OpenSpiel's: AEC vs each game, and the batched env at B=4096 (else the largest B)."""
    if not vector:
        return {}
    by_size = {result.batch_size: result for result in vector}
    batched = by_size.get(4096) or max(vector, key=lambda result: result.batch_size)
    ratios = {f"aec/{name}": aec.decisions_per_s / theirs.decisions_per_s for name, theirs in openspiel.items()}
    for name, theirs in openspiel.items():
        ratios[f"batched_B{batched.batch_size}/{name}"] = batched.decisions_per_s / theirs.decisions_per_s
    return ratios


# ---------------------------------------------------------------- report


def human_bytes(num_bytes: int) -> str:
    """Bytes in B, KiB or MiB, whichever reads best."""
    if num_bytes < 2**10:
        return f"{num_bytes} B"
    if num_bytes < 2**20:
        return f"{num_bytes / 2**10:,.1f} KiB"
    return f"{num_bytes / 2**20:,.2f} MiB"


def format_report(report: dict[str, Any]) -> str:
    """The printed tables (every figure also lands in the JSON)."""
    machine, threads, options = report["machine"], report["threads"], report["options"]
    aec: AecResult = report["aec_result"]
    vector: list[VectorResult] = report["vector_results"]
    openspiel: dict[str, OpenSpielResult] = report["openspiel_results"]
    overrides = options["config_overrides"]
    pinning = f"pinned to cpus {threads['pinned_cpus']}" if threads["pinned_cpus"] is not None else "not pinned"
    lines = [
        "pedro-rl benchmark (decisions per second, higher is better)",
        (
            f"machine    {machine['cpu_model']}; {machine['logical_cores']} logical cores, "
            f"allowed at start {machine['allowed_cpus_at_start']}; {machine['platform']}"
        ),
        (
            f"software   Python {machine['python']}, numpy {machine['numpy']}, pettingzoo {machine['pettingzoo']}, "
            f"open_spiel {machine['open_spiel'] or 'not installed'}, pedro_env {machine['pedro_env']}"
        ),
        f"threads    --threads {threads['threads']}: {pinning}; {threads['thread_vars']}",
        (
            f"config     {', '.join(f'{k}={v}' for k, v in overrides.items()) if overrides else 'default rules'} "
            f"({report['config']['num_players']} players, {report['config']['variant']}, target "
            f"{report['config']['target_score']}, episode={report['config']['episode']})"
        ),
        (
            f"timing     {options['seconds']:g} s per measurement after {options['warmup_seconds']:g} s warm-up; "
            f"time.perf_counter; seed {options['seed']}"
        ),
        "",
        f"{'measurement':<36}{'decisions/s':>14}{'decisions':>12}{'seconds':>9}{'us/step':>10}  timed region",
        (
            f"{'AEC env, one game':<36}{aec.decisions_per_s:>14,.0f}{aec.decisions:>12,}{aec.seconds:>9.2f}"
            f"{aec.us_per_decision:>10.1f}  whole PettingZoo loop incl. last() and the random choice"
        ),
    ]
    for result in vector:
        lines.append(
            f"{f'PedroVectorEnv B={result.batch_size}':<36}{result.decisions_per_s:>14,.0f}"
            f"{result.batch_size * result.steps:>12,}{result.seconds:>9.2f}{result.us_per_step:>10.1f}"
            f"  venv.step only ({result.steps:,} steps; sampling untimed)"
        )
    lines += [
        "",
        "memory (state and step outputs: nbytes sums; step allocations: tracemalloc peak during one venv.step,",
        "        max over a few steps; peak RSS: ru_maxrss of the whole process so far, it never goes down)",
        f"{'measurement':<36}{'state':>14}{'step outputs':>14}{'step allocs':>14}{'peak RSS':>16}",
        f"{'after imports':<36}{'':>14}{'':>14}{'':>14}{human_bytes(report['baseline_peak_rss_bytes']):>16}",
        f"{'AEC env':<36}{'':>14}{'':>14}{'':>14}{human_bytes(aec.peak_rss_bytes):>16}",
    ]
    for result in vector:
        lines.append(
            f"{f'PedroVectorEnv B={result.batch_size}':<36}{human_bytes(result.state_bytes):>14}"
            f"{human_bytes(result.step_output_bytes):>14}{human_bytes(result.tracemalloc_step_peak_bytes):>14}"
            f"{human_bytes(result.peak_rss_bytes):>16}"
        )
    lines.append("")
    if not openspiel:
        lines.append(f"OpenSpiel: {report['openspiel_skipped']}")
        return "\n".join(lines)
    lines += [
        "OpenSpiel (random legal play; each decision builds the actor's tensor and legal_actions(); chance nodes",
        "           sampled by probability and new games included in the time, only player decisions counted)",
        f"{'game':<36}{'decisions/s':>14}{'decisions':>12}{'seconds':>9}{'us/step':>10}  tensor",
    ]
    for theirs in openspiel.values():
        lines.append(
            f"{theirs.game:<36}{theirs.decisions_per_s:>14,.0f}{theirs.decisions:>12,}{theirs.seconds:>9.2f}"
            f"{theirs.us_per_decision:>10.1f}  {theirs.tensor} ({theirs.tensor_size}), {theirs.games:,} games"
        )
    lines += ["", "ratios (our decisions/s over OpenSpiel's)"]
    for name, ratio in report["ratios"].items():
        ours, theirs = name.split("/")
        label = "AEC env" if ours == "aec" else f"PedroVectorEnv B={ours.removeprefix('batched_B')}"
        lines.append(f"  {label:<28} vs {theirs:<8} {ratio:>10.2f}x")
    return "\n".join(lines)


def json_report(report: dict[str, Any]) -> dict[str, Any]:
    """The figures as plain JSON types (bytes, seconds, decisions per second)."""
    return {
        "machine": report["machine"],
        "threads": report["threads"],
        "options": report["options"],
        "config": report["config"],
        "aec": asdict(report["aec_result"]),
        "vector": [asdict(result) for result in report["vector_results"]],
        "memory": {
            "baseline_peak_rss_bytes": report["baseline_peak_rss_bytes"],
            "peak_rss_bytes": peak_rss_bytes(),
            "state_and_outputs": "nbytes sums; step allocations: tracemalloc peak during one venv.step",
        },
        "openspiel": {
            "skipped": report["openspiel_skipped"],
            "games": {name: asdict(result) for name, result in report["openspiel_results"].items()},
        },
        "ratios": report["ratios"],
    }


# ---------------------------------------------------------------- command line


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog="python -m benchmarks.engine",
        description="Decisions per second of the Pedro AEC env and batched env (one core by default), memory, "
        "and a comparison with OpenSpiel's euchre and spades when pyspiel is installed.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--seconds",
        type=positive_seconds,
        default=None,
        help=f"timed seconds per measurement (default {DEFAULT_SECONDS:g}, {QUICK_SECONDS:g} with --quick)",
    )
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_SECONDS:g} s per measurement (smoke tests)")
    parser.add_argument(
        "--batch-sizes",
        type=int_at_least(1),
        nargs="+",
        default=list(DEFAULT_BATCH_SIZES),
        metavar="B",
        help="batch sizes for PedroVectorEnv (default: 1 256 4096)",
    )
    add_rule_overrides(parser)
    parser.add_argument(
        "--threads",
        type=int_at_least(0),
        default=1,
        help="pin to this many cores and set OMP/OPENBLAS/MKL threads to it (default 1; "
        "0 leaves affinity and thread variables alone)",
    )
    parser.add_argument("--skip-openspiel", action="store_true", help="do not measure OpenSpiel even if installed")
    parser.add_argument(
        "--seed",
        type=seed_argument,
        default=0,
        help="seed of the games and of the random players: 0 to 2**64 - the largest batch size (default 0)",
    )
    parser.add_argument(
        "--json", metavar="PATH", default=None, help="also write the figures to this JSON file (checked first)"
    )
    return parser


@dataclass(frozen=True)
class BenchSettings:
    """The checked command line of one benchmark run."""

    args: argparse.Namespace  # as parsed (batch_sizes, threads, seed, skip_openspiel, json, ...)
    prog: str  # the command's name, for one-line errors
    config: PedroConfig  # the rules measured
    overrides: dict[str, Any]  # the --set keys as given, reported in "options"
    seconds: float  # timed seconds per measurement
    warmup_seconds: float  # untimed seconds before each measurement


def checked_settings(argv: list[str] | None, allow_reexec: bool) -> BenchSettings:
    """Parse and check the arguments before any measurement: a mistake ends in one line on stderr and exit status 2.
    May re-execute the process first (see :func:`main`)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    needs_thread_vars = args.threads > 0 and not thread_vars_already_set(args.threads)
    if allow_reexec and needs_thread_vars and not os.environ.get(REEXEC_MARKER):
        # before the checks below, so the re-executed process alone reports (its messages once)
        reexec_with_thread_vars(args.threads)
    try:
        config, overrides = rule_config(args)
    except ConfigError as error:
        parser.error(f"--set: {error}")
    try:
        # PedroVectorEnv(B).reset(seed) seeds its games seed .. seed + B - 1, each below 2**64
        check_seed(args.seed, games=max(args.batch_sizes), name="--seed")
        if args.json:
            check_output_file(args.json, "--json file")
    except (SeedError, OutputPathError) as error:
        parser.error(str(error))
    seconds = args.seconds if args.seconds is not None else (QUICK_SECONDS if args.quick else DEFAULT_SECONDS)
    return BenchSettings(args, parser.prog, config, overrides, seconds, warmup_seconds=min(0.5, seconds / 4))


def measure_openspiel_games(settings: BenchSettings) -> tuple[dict[str, OpenSpielResult], str | None]:
    """OpenSpiel's games measured -> (results by game name, why they were skipped or None)."""
    if settings.args.skip_openspiel:
        return {}, "skipped (--skip-openspiel)"
    try:
        import pyspiel  # noqa: F401  (only probing that the optional extra is installed)
    except ImportError:
        return {}, "pyspiel is not importable (pip install 'pedro-rl[bench]'); comparison skipped"
    seconds, seed, warmup_seconds = settings.seconds, settings.args.seed, settings.warmup_seconds
    return {name: measure_openspiel(name, seconds, seed, warmup_seconds) for name in OPENSPIEL_GAMES}, None


def run_benchmark(settings: BenchSettings) -> dict[str, Any]:
    """Every measurement, in order (module docstring) -> the report :func:`format_report` and :func:`json_report`
    read. A batch size that does not fit in memory ends in one line on stderr and exit status 1."""
    args, config, seconds, warmup_seconds = settings.args, settings.config, settings.seconds, settings.warmup_seconds
    machine = machine_info()
    threads = limit_threads(args.threads)
    baseline_rss = peak_rss_bytes()
    aec = measure_aec(config, seconds, args.seed, warmup_seconds)
    vector = []
    for size in args.batch_sizes:
        try:
            vector.append(measure_vector(config, size, seconds, args.seed, warmup_seconds))
        except MemoryError:
            print(
                f"{settings.prog}: error: batch size {size} does not fit in memory; try a smaller one", file=sys.stderr
            )
            raise SystemExit(1) from None
    openspiel, skipped = measure_openspiel_games(settings)
    return {
        "machine": machine,
        "threads": threads,
        "config": asdict(config),
        "options": {
            "seconds": seconds,
            "warmup_seconds": warmup_seconds,
            "seed": args.seed,
            "batch_sizes": args.batch_sizes,
            "config_overrides": settings.overrides,
            "aec_timed_region": "whole PettingZoo loop incl. last() and the random choice",
            "vector_timed_region": "venv.step only; actions sampled outside",
        },
        "baseline_peak_rss_bytes": baseline_rss,
        "aec_result": aec,
        "vector_results": vector,
        "openspiel_results": openspiel,
        "openspiel_skipped": skipped,
        "ratios": speed_ratios(aec, vector, openspiel),
    }


def write_figures(path: str, figures: dict[str, Any], prog: str) -> None:
    """Write the JSON figures to ``path``; a failure (the disk may have filled up since the check) ends in one line
    on stderr and exit status 1."""
    try:
        with open(path, "w", encoding="utf-8") as json_file:
            json.dump(figures, json_file, indent=2)
            json_file.write("\n")
    except OSError as error:
        print(f"{prog}: error: cannot write {path}: {error.strerror or error}", file=sys.stderr)
        raise SystemExit(1) from None


@one_line_on_interrupt("python -m benchmarks.engine")
def main(argv: list[str] | None = None, allow_reexec: bool = False) -> dict[str, Any]:
    """Run the benchmark, print the tables and return the JSON figures.

    ``allow_reexec`` (only when run as ``python -m benchmarks.engine``) lets the command restart itself once
    so the thread variables are in place before numpy loads.
    """
    settings = checked_settings(argv, allow_reexec)
    report = run_benchmark(settings)
    print(format_report(report), flush=True)
    figures = json_report(report)
    if settings.args.json:
        write_figures(settings.args.json, figures, settings.prog)
    return figures


if __name__ == "__main__":
    outcome = main(allow_reexec=True)  # the figures, or the status of a Ctrl-C
    raise SystemExit(INTERRUPTED_STATUS if outcome == INTERRUPTED_STATUS else 0)
