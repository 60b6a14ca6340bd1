"""Learner steps per second of the Gymnasium envs, three ways, a masked random learner against random opponents.

The single env in a Python loop, Gymnasium's SyncVectorEnv of it, and PedroGymVectorEnv over the batched engine,
default rules, each measured in the same run.

    python -m benchmarks.gym_vector --num-envs 256
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode

from pedro_env.actions import uniform_legal_actions
from pedro_env.cli import OneLineErrorParser, int_at_least, one_line_on_interrupt
from pedro_env.gym import ENV_ID


def benchmark(learner_steps: int = 20_000, num_envs: int = 256, sync_envs: int = 8, seed: int = 0) -> dict[str, float]:
    """Learner steps per second of a masked random learner against random opponents, default rules, three ways.

    ``single``: ``gymnasium.make("Pedro-v0")`` in a Python loop; ``sync``: a ``SyncVectorEnv`` of ``sync_envs``
    of those; ``vector``: :class:`PedroGymVectorEnv` of ``num_envs`` games. Each runs ``learner_steps`` steps.
    """
    rng = np.random.default_rng(seed)
    rates: dict[str, float] = {}

    env = gymnasium.make(ENV_ID)
    _, info = env.reset(seed=seed)
    start = time.perf_counter()
    for _ in range(learner_steps):
        action = int(uniform_legal_actions(info["action_mask"][None], rng)[0])
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            _, info = env.reset()
    rates["single"] = learner_steps / (time.perf_counter() - start)

    vector_envs = {
        "sync": gymnasium.make_vec(
            ENV_ID,
            num_envs=sync_envs,
            vectorization_mode="sync",
            vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP},
        ),
        "vector": gymnasium.make_vec(ENV_ID, num_envs=num_envs),
    }
    for name, venv in vector_envs.items():
        _, infos = venv.reset(seed=seed)
        steps = max(1, learner_steps // venv.num_envs)
        start = time.perf_counter()
        for _ in range(steps):
            _, _, _, _, infos = venv.step(uniform_legal_actions(infos["action_mask"], rng))
        rates[name] = steps * venv.num_envs / (time.perf_counter() - start)
        venv.close()
    return rates


@one_line_on_interrupt("python -m benchmarks.gym_vector")
def main(argv: Sequence[str] | None = None) -> None:
    parser = OneLineErrorParser(prog="python -m benchmarks.gym_vector", description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int_at_least(1), default=20_000, help="learner steps per way (>= 1)")
    parser.add_argument("--num-envs", type=int_at_least(1), default=256, help="games in PedroGymVectorEnv (>= 1)")
    parser.add_argument("--sync-envs", type=int_at_least(1), default=8, help="envs in the SyncVectorEnv (>= 1)")
    args = parser.parse_args(argv)
    rates = benchmark(args.steps, args.num_envs, args.sync_envs)
    print(f"learner steps/s over {args.steps} steps, default rules, random opponents:")
    print(f"  gymnasium.make('Pedro-v0') loop      {rates['single']:10.0f}")
    print(f"  SyncVectorEnv x {args.sync_envs:<4}                 {rates['sync']:10.0f}")
    print(f"  PedroGymVectorEnv x {args.num_envs:<4}             {rates['vector']:10.0f}")
    single, sync, vector = rates["single"], rates["sync"], rates["vector"]
    print(f"  vector / single = {vector / single:.1f}x, vector / sync = {vector / sync:.1f}x")


if __name__ == "__main__":
    raise SystemExit(main())  # None: status 0; a Ctrl-C: 130
