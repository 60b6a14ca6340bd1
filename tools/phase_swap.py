"""Where a policy loses to its teacher, phase by phase: the teacher's choices swapped in for the policy's; a table.

    python -m tools.phase_swap pretrained "rule:heuristic,deny=true" --set refill=top     # 200 pairs vs rule:heuristic
    python -m tools.phase_swap ckpt:runs/NAME/latest.pt rule:heuristic --opponent rule:cautious --pairs 100

Duplicate matches of the policy against ``--opponent`` (``--pairs`` pairs from ``--seed``, under the rules of
``--set``; the field format at three players), five times on the same deals: the policy alone; with the teacher
deciding the bids; the bids and the trumps; the bids, trumps and discards; the teacher alone. A row's win rate
against the row above is what the phase it adds is worth. Beside it, from the policy's own matches: the share of
its decisions with a choice in each phase where the teacher would choose the same (asked on the same observation,
with a random stream of its own, so that the matches are unchanged).
docs/studies/2026-12-07-teacher-scales-and-the-refills.md reads the figures for the refills.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import numpy as np

from agents import AgentSpecError, make_agent
from agents.base import Agent
from arena.gauntlet import head_scalars
from arena.match import field_lineup, play_matches
from arena.ratings import HeadToHead
from pedro_env.actions import DISCARD_OFFSET, PLAY_OFFSET, TRUMP_OFFSET
from pedro_env.cli import add_rule_overrides, int_at_least, rule_config
from pedro_env.config import ConfigError, PedroConfig

PHASES = ("bid", "trump", "discard", "play")
PHASE_ENDS = np.array([TRUMP_OFFSET, DISCARD_OFFSET, PLAY_OFFSET])  # a decision's phase: its first legal action's


def phase_of(masks: np.ndarray) -> np.ndarray:
    """(B,) int64: the phase (index into PHASES) of each decision of (B, A) legal masks."""
    return np.searchsorted(PHASE_ENDS, masks.argmax(axis=1), side="right")


class PhaseSwap(Agent):
    """``teacher`` decides the phases before ``phases`` (an index into PHASES), ``policy`` the others. With
    ``agreement`` (a (4, 2) int64 array) it counts, per phase of the policy's decisions with a choice, how often the
    teacher (asked with ``teacher_rng``) would choose the same, and how many there were."""

    def __init__(
        self,
        policy: Agent,
        teacher: Agent,
        phases: int,
        agreement: np.ndarray | None = None,
        teacher_rng: np.random.Generator | None = None,
    ) -> None:
        super().__init__(policy.config)
        self.policy, self.teacher, self.phases = policy, teacher, phases
        self.agreement, self.teacher_rng = agreement, teacher_rng
        self.name = f"{policy.name} with {teacher.name} in {phases} phases"

    def act(self, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        phase = phase_of(action_masks)
        taught = phase < self.phases
        actions = np.zeros(len(action_masks), dtype=np.int64)
        for chooser, games in ((self.teacher, taught), (self.policy, ~taught)):
            if games.any():
                actions[games] = chooser.act(observations[games], action_masks[games], rng)
        if self.agreement is not None:
            choice = (action_masks.astype(bool).sum(axis=1) > 1) & ~taught
            if choice.any():
                rng_of_teacher = self.teacher_rng if self.teacher_rng is not None else rng
                asked = self.teacher.act(observations[choice], action_masks[choice], rng_of_teacher)
                same = asked == actions[choice]
                np.add.at(self.agreement, (phase[choice], 0), same.astype(np.int64))
                np.add.at(self.agreement, (phase[choice], 1), 1)
        return actions


def measure(
    policy_spec: str, teacher_spec: str, opponent_spec: str, config: PedroConfig, pairs: int, seed: int
) -> tuple[list[tuple[str, HeadToHead]], np.ndarray]:
    """([(row label, its matches against the opponent)] for the five rows, (4, 2) agreement counts of the
    policy-alone row)."""
    policy, teacher, opponent = (make_agent(spec, config) for spec in (policy_spec, teacher_spec, opponent_spec))
    agreement = np.zeros((len(PHASES), 2), dtype=np.int64)
    sides = [
        ("the policy", PhaseSwap(policy, teacher, 0, agreement, np.random.default_rng(seed + 1))),
        ("+ the teacher's bids", PhaseSwap(policy, teacher, 1)),
        ("+ its trumps", PhaseSwap(policy, teacher, 2)),
        ("+ its discards", PhaseSwap(policy, teacher, 3)),
        ("the teacher", teacher),
    ]
    rows = []
    for label, side in sides:
        lineup = field_lineup([[side], [opponent]], config.num_teams)  # three players: the field format
        results = play_matches(lineup, config, pairs, seed=seed)
        head = HeadToHead(
            label, opponent_spec, config, seed, duplicate=True, pairs=pairs, batch_size=1024, results=results
        )
        rows.append((label, head))
    return rows, agreement


def table(rows: list[tuple[str, HeadToHead]], agreement: np.ndarray) -> str:
    """The report of :func:`measure`: a line per row (win rate of decided matches, 95% Wilson interval, the side's
    share of the contracts and how many it made), then the agreement per phase."""
    lines = [f"{'side':<22} {'win rate [95%]':<22} {'contracts':>9} {'made':>6}"]
    for label, head in rows:
        scalars, (low, high) = head_scalars(head), head.win_rate_ci
        rate = f"{100 * head.win_rate:.1f}% [{100 * low:.1f}, {100 * high:.1f}]"
        lines.append(f"{label:<22} {rate:<22} {scalars['contracts']:>9.1%} {scalars['bid_made_rate']:>6.1%}")
    parity = f" (parity {100 * rows[0][1].parity:.1f}%)" if rows[0][1].seats > 2 else ""
    lines.append(f"{'':<22} win rates of decided matches{parity}")
    shares = [f"{name} {same / total:.1%} of {total:,}" for name, (same, total) in zip(PHASES, agreement) if total]
    lines.append("the teacher chooses as the policy does, per phase (decisions with a choice): " + "; ".join(shares))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.phase_swap", description=__doc__.split("\n")[0])
    parser.add_argument("policy", help="the agent measured, e.g. pretrained or ckpt:PATH")
    parser.add_argument("teacher", help="the agent whose choices are swapped in, e.g. 'rule:heuristic,deny=true'")
    parser.add_argument("--opponent", default="rule:heuristic", help="the other side (default rule:heuristic)")
    add_rule_overrides(parser)
    parser.add_argument("--pairs", type=int_at_least(1), default=200, help="duplicate pairs per row (default 200)")
    parser.add_argument("--seed", type=int, default=57_000_000, help="the first pair's seed (default 57,000,000)")
    args = parser.parse_args(argv)
    try:
        config, _ = rule_config(args)
        rows, agreement = measure(args.policy, args.teacher, args.opponent, config, args.pairs, args.seed)
    except (AgentSpecError, ConfigError) as error:
        parser.error(str(error))
    rules = " ".join(args.rule_overrides) or "the default rules"
    print(f"{args.policy} and {args.teacher} against {args.opponent}, {args.pairs} pairs (seed {args.seed}), {rules}:")
    print(table(rows, agreement))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
