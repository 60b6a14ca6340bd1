"""The rule agents' pace beside the engine's, in one process: decisions per second of ``act`` and of a step.

    python -m benchmarks.rule_agents                       # rule:heuristic and rule:cautious, B = 4096 and 64
    python -m benchmarks.rule_agents --batch-sizes 1 8 --seconds 1

For each batch size ``B`` the positions are ``--steps`` consecutive steps of ``B`` games of
``rule:heuristic`` self-play (default rules). Timed, each for ``--seconds``: every agent's ``act`` over those
positions in turn (the decisions it makes per second), and ``PedroVectorEnv.step`` with ``B`` games and
uniformly random legal actions (the engine's decisions per second; sampling untimed). The last column is
how many times slower the agent is than the engine. The process is pinned to one core when it can be.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence

import numpy as np

from agents import AgentSpecError, make_agent
from pedro_env.actions import uniform_legal_actions
from pedro_env.cli import one_line_on_interrupt
from pedro_env.vector import PedroVectorEnv


def recorded_positions(b: int, steps: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(observations, masks) of ``steps`` consecutive steps of ``b`` games of rule:heuristic self-play."""
    venv = PedroVectorEnv(b)
    heuristic = make_agent("rule:heuristic", venv.config)
    rng = np.random.default_rng(seed)
    step = venv.reset(seed=seed)
    found = []
    for _ in range(steps):
        found.append((step.observation.copy(), step.action_mask.copy()))
        step = venv.step(heuristic.act(step.observation, step.action_mask, rng))
    return found


def agent_rate(spec: str, positions: list[tuple[np.ndarray, np.ndarray]], seconds: float) -> float:
    """Decisions per second of ``spec``'s ``act`` over ``positions``, repeated for ``seconds``."""
    agent = make_agent(spec)
    rng = np.random.default_rng(0)
    agent.act(*positions[0], rng)  # warm-up (tables built, caches filled)
    decisions, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for observations, masks in positions:
            agent.act(observations, masks, rng)
            decisions += observations.shape[0]
    return decisions / (time.perf_counter() - start)


def engine_rate(b: int, seconds: float, seed: int) -> float:
    """Decisions per second of ``PedroVectorEnv.step`` with ``b`` games (random legal actions, not timed)."""
    venv = PedroVectorEnv(b, reuse_outputs=True)
    rng = np.random.default_rng(seed)
    step = venv.reset(seed=seed)
    timed, decisions, start = 0.0, 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        actions = uniform_legal_actions(step.action_mask, rng)
        before = time.perf_counter()
        step = venv.step(actions)
        timed += time.perf_counter() - before
        decisions += b
    return decisions / timed


@one_line_on_interrupt("python -m benchmarks.rule_agents")
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.rule_agents", description=__doc__.split("\n\n")[0])
    parser.add_argument("--specs", nargs="+", default=["rule:heuristic", "rule:cautious"], help="agent specs")
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[4096, 64], help="games per call (4096 64)")
    parser.add_argument("--steps", type=int, default=20, help="consecutive steps of positions per batch size (20)")
    parser.add_argument("--seconds", type=float, default=3.0, help="timed seconds per measurement (3)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if min(args.batch_sizes) < 1 or args.steps < 1 or args.seconds <= 0:
        parser.error("--batch-sizes and --steps must be >= 1 and --seconds > 0")
    try:
        for spec in args.specs:
            make_agent(spec)
    except AgentSpecError as error:
        parser.error(str(error))
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    print(f"{'what':<34} {'B':>6} {'decisions/s':>14} {'x slower than a step':>22}")
    for b in args.batch_sizes:
        engine = engine_rate(b, args.seconds, args.seed)
        print(f"{'PedroVectorEnv.step':<34} {b:>6} {engine:>14,.0f} {'':>22}")
        positions = recorded_positions(b, args.steps, args.seed)
        for spec in args.specs:
            rate = agent_rate(spec, positions, args.seconds)
            print(f"{spec + ' act':<34} {b:>6} {rate:>14,.0f} {engine / rate:>21.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
