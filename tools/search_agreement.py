"""Where an agent's card play departs from a search's, by how clearly the search prefers its card; prints a table.

    python -m tools.search_agreement pretrained                        # 3,000 play decisions of pretrained's self-play
    python -m tools.search_agreement ckpt:runs/NAME/latest.pt --search "search:pimc,samples=32" --decisions 1000

The agent plays itself at every seat of ``--games`` games (the match seed ``--seed``). At a sampled share
(``--share``) of its play decisions with two legal cards or more, the search (``--search``, a ``search:pimc``
spec) values every legal card (:meth:`agents.search.PimcAgent.action_values`: the mean over the deals it
samples, in points of the deal's score). Each decision has a *margin*, the search's best value minus its
second best, and a *loss*, the search's best value minus the value of the agent's card. The table bins the
decisions by margin: their share, how often the agent's card is the search's best, the mean loss and each
bin's share of the total loss. The search's values are estimates; give the search itself as the agent to
see their noise (its own decisions are drawn from other samples). docs/training.md, "The teacher at the
settled card plays", reads the figures.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import numpy as np

from agents import AgentSpecError, make_agent
from pedro_env.actions import PLAY_OFFSET
from pedro_env.config import make_config
from pedro_env.vector import PedroVectorEnv

MARGIN_EDGES = (0.0, 1e-9, 0.25, 0.5, 1.0, 2.0, np.inf)  # points; the first bin holds the ties


def measure(
    agent_spec: str, search_spec: str, decisions: int, games: int, seed: int, share: float
) -> np.ndarray:
    """(N, 3) float64: per sampled play decision its margin, the agent's loss (points) and 1.0 where they agree."""
    config = make_config()
    agent, search = make_agent(agent_spec, config), make_agent(search_spec, config)
    if not hasattr(search, "action_values"):
        raise AgentSpecError(f"--search {search_spec!r} does not value cards: give a search:pimc spec")
    rng = np.random.default_rng(seed)
    venv = PedroVectorEnv(games, config=config)
    step = venv.reset(seed=seed)
    rows: list[tuple[float, float, float]] = []
    while len(rows) < decisions:
        masks = step.action_mask.view(bool)
        actions = agent.act(step.observation, masks, rng)
        searched = (actions >= PLAY_OFFSET) & (masks[:, PLAY_OFFSET:].sum(axis=1) > 1)
        for game in np.flatnonzero(searched & (rng.random(games) < share)):
            values = search.action_values(step.observation[game], masks[game], rng)
            ordered = sorted(values.values(), reverse=True)
            chosen = int(actions[game])
            rows.append((ordered[0] - ordered[1], ordered[0] - values[chosen], float(values[chosen] == ordered[0])))
        step = venv.step(actions)
    return np.array(rows[:decisions])


def table(rows: np.ndarray) -> str:
    """The report of :func:`measure`'s rows, one line per margin bin and a total."""
    margin, loss, agree = rows.T
    lines = [f"{'margin (points)':<16} {'share':>7} {'agree':>7} {'loss/decision':>14} {'share of loss':>14}"]
    total = max(loss.sum(), 1e-12)
    for low, high in zip(MARGIN_EDGES[:-1], MARGIN_EDGES[1:]):
        inside = (margin >= low) & (margin < high)
        if not inside.any():
            continue
        name = "0 (tie)" if high == 1e-9 else f"{low:g} to {high:g}" if np.isfinite(high) else f">= {low:g}"
        lines.append(
            f"{name:<16} {inside.mean():>7.3f} {agree[inside].mean():>7.3f} {loss[inside].mean():>14.3f} "
            f"{loss[inside].sum() / total:>14.3f}"
        )
    lines.append(f"{'all':<16} {1.0:>7.3f} {agree.mean():>7.3f} {loss.mean():>14.3f} {1.0:>14.3f}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.search_agreement", description=__doc__.split("\n")[0])
    parser.add_argument("agent", help="agent spec whose card play is measured, e.g. pretrained or ckpt:PATH")
    parser.add_argument("--search", default="search:pimc,samples=16", help="the search:pimc spec that values the cards")
    parser.add_argument("--decisions", type=int, default=3000, help="play decisions measured (default 3000)")
    parser.add_argument("--games", type=int, default=64, help="games played at once (default 64)")
    parser.add_argument("--seed", type=int, default=777, help="deals and sampling seed (default 777)")
    parser.add_argument("--share", type=float, default=0.25, help="share of the play decisions measured (default 0.25)")
    args = parser.parse_args(argv)
    if args.decisions < 1 or args.games < 1 or not 0 < args.share <= 1:
        parser.error("--decisions and --games must be >= 1 and --share in (0, 1]")
    try:
        rows = measure(args.agent, args.search, args.decisions, args.games, args.seed, args.share)
    except AgentSpecError as error:
        parser.error(str(error))
    print(f"{args.agent}'s card play against {args.search}'s values, {len(rows)} decisions (seed {args.seed}):")
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
