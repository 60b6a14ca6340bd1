"""End-to-end training throughput: decisions per second of rollout + update with a config's network.

    python -m benchmarks.training configs/ppo_selfplay.yaml --updates 10 [--set num_envs=1024 ...]
    python -m benchmarks.training configs/ppo_selfplay.yaml --ranks 1 2     # scaling: 1 rank, then 2, one run
    python -m benchmarks.training configs/mixed_rules.yaml --against-single --rounds 3   # a mix vs its first set

Runs the trainer's own loop (opponent games, the league filled to ``league_size`` as for most of a run; no
evaluation, no checkpoints) and
prints decisions/s overall and the split between collecting rollouts and updating the network,
after one warm-up update. Prints the machine it ran on. With ``--ranks`` it runs the same loop as
N ranks under torchrun (train/distributed.py, one torch thread per rank unless --set says otherwise)
for each N in turn and prints the job's decisions/s and the speed-up over the first N. With
``--against-single`` it times a config with ``rules_mix`` and the same config on the mix's first rule
set alone (a mix of that one entry: its rules and its teacher; a single-rules run) in turn,
``--rounds`` times each, and prints the mix's decisions/s over the single rules'.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from pedro_env.cli import OneLineErrorParser, one_line_on_interrupt
from train import distributed
from train.config import TrainConfig, TrainConfigError, load_train_config, make_train_config
from train.trainer import Trainer

RESULT_PREFIX = "benchmarks.training result: "  # the line a rank-0 run prints for --ranks to read


@one_line_on_interrupt("python -m benchmarks.training")
def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineErrorParser(prog="python -m benchmarks.training", description=__doc__.split("\n\n")[0])
    parser.add_argument("config", help="a shipped config's name (ppo_selfplay) or a YAML file's path")
    parser.add_argument("--updates", type=int, default=10, help="timed updates after one warm-up update")
    parser.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE", help="config overrides")
    parser.add_argument(
        "--ranks", nargs="+", type=int, metavar="N", help="run as N ranks under torchrun, for each N given in turn"
    )
    parser.add_argument(
        "--against-single",
        action="store_true",
        help="a config with rules_mix: time it and its first rule set alone in turn; print the ratio",
    )
    parser.add_argument("--rounds", type=int, default=1, help="with --against-single: timings of each, in turn")
    args = parser.parse_args(argv)
    try:
        if args.updates < 1:
            raise TrainConfigError(f"--updates must be an int >= 1, got {args.updates}")
        if args.ranks and min(args.ranks) < 1:
            raise TrainConfigError(f"--ranks takes ints >= 1, got {' '.join(map(str, args.ranks))}")
        if args.rounds < 1:
            raise TrainConfigError(f"--rounds must be an int >= 1, got {args.rounds}")
        config = load_train_config(args.config, args.set)
        if args.against_single:
            if args.ranks or not config.rules_mix:
                raise TrainConfigError("--against-single times a config with rules_mix, in one process (no --ranks)")
            return _against_single(args, config)
        if args.ranks:
            return _compare_ranks(args)
        ranks = distributed.ranks_from_environment()
        exchange = distributed.join(ranks)
        trainer = Trainer(config, ranks=ranks, exchange=exchange)
    except (TrainConfigError, ValueError) as error:
        print(f"python -m benchmarks.training: error: {error}", file=sys.stderr)
        return 2
    timing = _time_updates(trainer, args.updates)
    distributed.leave()
    if not ranks.main:
        return 0
    _print_figures(args, config, trainer, timing)
    return 0


def _time_updates(trainer: Trainer, updates: int) -> dict[str, Any]:
    """One warm-up update, a full league, then ``updates`` timed rollouts and updates: decisions, wall, collecting
    and updating seconds, the rows of every forward pass of the updates and the load average before them."""
    trainer.train_step()  # warm-up: allocations, the first league snapshot
    while len(trainer.league) < trainer.league.size:  # a full league, as for most of a run
        trainer.add_snapshot()
    load_before = _load_average()
    rows_forward: list[int] = []  # rows of every forward pass of the updates (collection calls no forward)
    hook = trainer.network.register_forward_hook(lambda module, inputs, output: rows_forward.append(len(inputs[0])))
    collect_s = update_s = 0.0
    decisions = 0
    trainer.exchange.barrier()
    started = time.perf_counter()
    for _ in range(updates):
        start = time.perf_counter()
        before = trainer.decisions
        rollout = trainer.collect()
        advantages = trainer.advantages(rollout)
        middle = time.perf_counter()
        trainer.update(rollout, advantages, teacher_weight=0.0)  # without the teacher's loss, as this bench always ran
        trainer.updates += 1
        end = time.perf_counter()
        collect_s += middle - start
        update_s += end - middle
        decisions += trainer.decisions - before
    trainer.exchange.barrier()
    wall = time.perf_counter() - started
    hook.remove()
    return {
        "decisions": decisions,
        "wall": wall,
        "collect_s": collect_s,
        "update_s": update_s,
        "rows": rows_forward,
        "load_before": load_before,
    }


def _print_figures(args, config: TrainConfig, trainer: Trainer, timing: dict[str, Any]) -> None:
    """The machine, the config and the figures of one timing (rank 0's)."""
    ranks = trainer.ranks
    decisions, wall, collect_s, update_s = (timing[key] for key in ("decisions", "wall", "collect_s", "update_s"))
    rows_forward, load_before = timing["rows"], timing["load_before"]
    update_flops = 3 * forward_flops_per_row(trainer.network) * sum(rows_forward)  # backward: about 2x the forward
    total = collect_s + update_s
    learner_share = float(np.mean(trainer.rollout.learner))
    threads = torch.get_num_threads()
    precision = dtype_name(trainer.precision)
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__} "
        f"({threads} thread{'s' if threads != 1 else ''}: torch_threads={config.torch_threads}), "
        f"device {trainer.device}, "
        f"load average {load_before:.2f} before, {_load_average():.2f} after"
    )
    print(
        f"config: {args.config} {' '.join(args.set)}: num_envs {config.num_envs}, "
        f"rollout_steps {config.rollout_steps}, "
        f"hidden {list(config.hidden_sizes)}, epochs {config.update_epochs}, minibatches {config.num_minibatches}, "
        f"opponent_share {config.opponent_share}, precision {config.precision} ({precision})"
    )
    where = f" over {ranks.world_size} ranks (the job's; rank 0's split)" if ranks.distributed else ""
    print(f"decisions: {decisions:,} in {args.updates} updates{where} ({100 * learner_share:.0f}% the policy's)")
    print(f"end to end: {decisions / wall:,.0f} decisions/s")
    print(f"  collecting: {decisions / collect_s:,.0f} decisions/s ({100 * collect_s / total:.0f}% of the time)")
    print(f"  updating:   {decisions / update_s:,.0f} decisions/s ({100 * update_s / total:.0f}% of the time)")
    matmul = "x".join(str(size) for size in MATMUL_SHAPE)
    dtypes = (torch.float32,) if trainer.precision == torch.float32 else (torch.float32, trainer.precision)
    matmuls = ", ".join(f"{matmul_gflops(dtype=dtype):.1f} GFLOP/s in {dtype_name(dtype)}" for dtype in dtypes)
    print(
        f"  the update's arithmetic: {update_flops / update_s / 1e9:.1f} GFLOP/s ({update_flops / 1e9:.1f} GFLOP: "
        f"forward and backward of {sum(rows_forward):,} rows in {precision}); a {matmul} matmul in "
        f"this run: {matmuls}"
    )
    print(RESULT_PREFIX + json.dumps({"ranks": ranks.world_size, "decisions_per_s": decisions / wall}))


def _against_single(args, config: TrainConfig) -> int:
    """``--against-single``: the mix, then its first rule set alone (that entry's rules and teacher: a single-rules
    run), ``--rounds`` times, each timing on a fresh trainer in this process; then each one's decisions/s and the
    mix's over the single rules'."""
    single = make_train_config(config, rules_mix=[dict(config.rules_mix[0])], eval_rules=[])
    rates: dict[str, list[float]] = {"mixed": [], "single": []}
    for round_number in range(1, args.rounds + 1):
        for label, own in (("mixed", config), ("single", single)):
            trainer = Trainer(own)
            timing = _time_updates(trainer, args.updates)
            sets = f"{len(trainer.groups)} rule sets" if label == "mixed" else f"{trainer.groups[0].name} alone"
            print(f"== round {round_number}, {label} ({sets})")
            _print_figures(args, own, trainer, timing)
            rates[label].append(timing["decisions"] / timing["wall"])
            del trainer
    print(f"\n{'round':>5}  {'mixed':>11}  {'single':>11}  mixed / single")
    for number, (mixed, alone) in enumerate(zip(rates["mixed"], rates["single"]), start=1):
        print(f"{number:>5}  {mixed:11,.0f}  {alone:11,.0f}  {mixed / alone:.2f}x")
    mixed, alone = float(np.mean(rates["mixed"])), float(np.mean(rates["single"]))
    print(f"{'mean':>5}  {mixed:11,.0f}  {alone:11,.0f}  {mixed / alone:.2f}x")
    return 0


MATMUL_SHAPE = (4096, 256, 256)  # the size of the default network's widest layer product at a minibatch's scale


def forward_flops_per_row(network: torch.nn.Module) -> int:
    """Multiply-adds (2 FLOP each) of one row through every linear layer of ``network``."""
    return sum(
        2 * layer.in_features * layer.out_features for layer in network.modules() if isinstance(layer, torch.nn.Linear)
    )


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.bfloat16`` -> ``bfloat16``."""
    return str(dtype).removeprefix("torch.")


def matmul_gflops(seconds: float = 1.0, dtype: torch.dtype = torch.float32) -> float:
    """This machine's pace at a (4096, 256) x (256, 256) matmul in ``dtype`` with torch's threads, for comparison."""
    rows, inner, columns = MATMUL_SHAPE
    a, b = torch.randn(rows, inner, dtype=dtype), torch.randn(inner, columns, dtype=dtype)
    torch.matmul(a, b)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        torch.matmul(a, b)
        count += 1
    return 2 * rows * inner * columns * count / (time.perf_counter() - start) / 1e9


def _compare_ranks(args) -> int:
    """Each --ranks N in turn under torchrun (nothing else running meanwhile), then the speed-ups over the first.

    For each N > 1 it also runs N independent one-process benchmarks at the same time (other seeds) and sums
    their decisions/s: what the machine gives N processes that never wait for each other, the ceiling of
    the N-rank figure measured in the same run.
    """
    settings = ["--set", *args.set] if args.set else []
    figures: list[tuple[str, int, float]] = []
    for nproc in args.ranks:
        outputs = _run_benches(
            [
                distributed.launch_command(
                    nproc, "benchmarks.training", [args.config, "--updates", str(args.updates), *settings]
                )
            ]
        )
        if outputs is None:
            return 1
        print(f"== {nproc} rank{'s' if nproc != 1 else ''}")
        print("\n".join(line for line in outputs[0][0] if not line.startswith(RESULT_PREFIX)))
        figures.append((f"{nproc} rank{'s' if nproc != 1 else ''}", nproc, outputs[0][1]))
        if nproc > 1:
            commands = [
                distributed.launch_command(
                    1,
                    "benchmarks.training",
                    [args.config, "--updates", str(args.updates), "--set", *args.set, f"seed={100 + copy}"],
                )
                for copy in range(nproc)
            ]
            outputs = _run_benches(commands)
            if outputs is None:
                return 1
            figures.append((f"{nproc} independent processes", nproc, sum(rate for _, rate in outputs)))
    base = figures[0][2]
    print(f"\n{'':28s} decisions/s  vs {figures[0][0]}")
    for label, _, rate in figures:
        print(f"{label:28s} {rate:11,.0f}  {rate / base:.2f}x")
    return 0


def _run_benches(commands: list[list[str]]) -> list[tuple[list[str], float]] | None:
    """Start every command at once and wait for all; each one's output lines and decisions/s (None: one failed)."""
    environment = distributed.launch_environment()
    processes = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)
        for command in commands
    ]
    results = []
    for process in processes:
        out, err = process.communicate()
        if process.returncode != 0:
            last = (err.strip().splitlines() or ["(no output)"])[-1]
            print(f"python -m benchmarks.training: error: a benchmark run failed: {last}", file=sys.stderr)
            return None
        lines = out.splitlines()
        rate = next(
            json.loads(line[len(RESULT_PREFIX) :])["decisions_per_s"]
            for line in lines
            if line.startswith(RESULT_PREFIX)
        )
        results.append((lines, rate))
    return results


def _load_average() -> float:
    """The machine's 1-minute load average (runnable processes; NaN where the OS has none): other work shares the
    cores when it is above 0."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return float("nan")


if __name__ == "__main__":
    raise SystemExit(main())
