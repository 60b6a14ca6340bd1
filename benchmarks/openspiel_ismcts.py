"""OpenSpiel's ISMCTS as our agent: CPU seconds per decision at each simulation budget and rollout.

    python -m benchmarks.openspiel_ismcts                                  # 100 and 1,000 simulations
    python -m benchmarks.openspiel_ismcts --specs openspiel:ismcts,simulations=100,rollout=openspiel

The positions are every decision with more than one legal action of ``--deals`` random one-deal games (4
players, default rules, seeds 3, 4, ...); each spec decides at every ``--every``-th of them for budgets of
1,000 simulations and more (every one below), and the process CPU time per decision is printed.
Needs the openspiel extra.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from agents import AgentSpecError, make_agent
from agents.base import RandomAgent
from pedro_env.cli import OneLineErrorParser, int_at_least, one_line_on_interrupt
from pedro_env.config import make_config
from pedro_env.vector import PedroVectorEnv

SPECS = ["openspiel:ismcts,simulations=100", "openspiel:ismcts,simulations=1000"]


def decision_points(deals: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(observation, mask) of every decision with a choice in ``deals`` random one-deal games."""
    config = make_config(episode="deal")
    env, rng, player = PedroVectorEnv(1, config=config), np.random.default_rng(0), RandomAgent(config)
    points = []
    for seed in range(3, 3 + deals):
        step = env.reset(seed=seed)
        while not (step.terminated.any() or step.truncated.any()):
            if step.action_mask.sum() > 1:
                points.append((step.observation.copy(), step.action_mask.copy()))
            step = env.step(player.act(step.observation, step.action_mask, rng))
    return points


@one_line_on_interrupt("python -m benchmarks.openspiel_ismcts")
def main(argv: Sequence[str] | None = None) -> None:
    parser = OneLineErrorParser(prog="python -m benchmarks.openspiel_ismcts", description=__doc__.splitlines()[0])
    parser.add_argument("--specs", nargs="+", default=SPECS, help="openspiel:ismcts specs to time")
    parser.add_argument("--deals", type=int_at_least(1), default=6, help="random deals whose decisions are timed")
    parser.add_argument(
        "--every", type=int_at_least(1), default=4, help="time every k-th decision from 1,000 simulations up"
    )
    args = parser.parse_args(argv)
    config, rng = make_config(episode="deal"), np.random.default_rng(0)
    agents = {}
    for spec in args.specs:  # every spec checked before any work
        try:
            agents[spec] = make_agent(spec, config)
        except AgentSpecError as error:
            parser.error(str(error))
        if not spec.startswith("openspiel:ismcts"):
            parser.error(f"--specs takes openspiel:ismcts specs (openspiel:ismcts,simulations=1000), got {spec!r}")
    points = decision_points(args.deals)
    print(f"{len(points)} decisions of {args.deals} random deals (4 players, default rules)")
    for spec, agent in agents.items():
        timed = points[:: args.every] if agent.simulations >= 1000 else points
        started = time.process_time()
        for observation, mask in timed:
            agent.act(observation, mask, rng)
        print(f"{spec:55} {(time.process_time() - started) / len(timed):.3f} CPU s per decision ({len(timed)} timed)")


if __name__ == "__main__":
    main()
