"""End-to-end training throughput: decisions per second of rollout + update with a config's network.

    python -m train.bench configs/ppo_selfplay.yaml --updates 10 [--set num_envs=1024 ...]

Runs the trainer's own loop (opponent games, league and all; no evaluation, no checkpoints) and
prints decisions/s overall and the split between collecting rollouts and updating the network,
after one warm-up update. Prints the machine it ran on.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Sequence

import numpy as np
import torch

from pedro_env.cli import OneLineErrorParser
from train.config import TrainConfigError, load_train_config
from train.ppo import Trainer, ppo_update


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineErrorParser(prog="python -m train.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("config", help="YAML config (e.g. configs/ppo_selfplay.yaml)")
    parser.add_argument("--updates", type=int, default=10, help="timed updates after one warm-up update")
    parser.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE", help="config overrides")
    args = parser.parse_args(argv)
    try:
        if args.updates < 1:
            raise TrainConfigError(f"--updates must be an int >= 1, got {args.updates}")
        config = load_train_config(args.config, args.set)
        trainer = Trainer(config)
    except (TrainConfigError, ValueError) as error:
        print(f"python -m train.bench: error: {error}", file=sys.stderr)
        return 2
    trainer.train_step()  # warm-up: allocations, the first league snapshot

    load_before = _load_average()
    collect_s = update_s = 0.0
    decisions = 0
    for _ in range(args.updates):
        start = time.perf_counter()
        before = trainer.decisions
        rollout = trainer.collect()
        advantages = trainer.advantages(rollout)
        middle = time.perf_counter()
        ppo_update(trainer.network, trainer.optimizer, rollout, advantages, config, trainer.rng, trainer.device)
        trainer.updates += 1
        end = time.perf_counter()
        collect_s += middle - start
        update_s += end - middle
        decisions += trainer.decisions - before
    total = collect_s + update_s
    learner_share = float(np.mean(trainer.rollout.learner))
    threads = torch.get_num_threads()
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
        f"opponent_share {config.opponent_share}"
    )
    print(f"decisions: {decisions:,} in {args.updates} updates ({100 * learner_share:.0f}% the policy's)")
    print(f"end to end: {decisions / total:,.0f} decisions/s")
    print(f"  collecting: {decisions / collect_s:,.0f} decisions/s ({100 * collect_s / total:.0f}% of the time)")
    print(f"  updating:   {decisions / update_s:,.0f} decisions/s ({100 * update_s / total:.0f}% of the time)")
    return 0


def _load_average() -> float:
    """The machine's 1-minute load average (runnable processes; NaN where the OS has none): other work shares the
    cores when it is above 0."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return float("nan")


if __name__ == "__main__":
    raise SystemExit(main())
