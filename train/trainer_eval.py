"""The trainer's evaluations (:class:`Evaluation`, a mixin over :class:`train.trainer.Trainer`'s attributes): the
current policy through the gauntlet of :mod:`arena.gauntlet` under each rule set's rules, with the league's most
recent snapshots, on the evaluation seeds; the scalars and worst cases it keeps for logging and the progress line.
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Callable

from agents.policy import PolicyAgent, policy_bytes
from arena.gauntlet import GauntletResult, gauntlet_entries, gauntlet_headline, run_gauntlet
from train.table_group import TableGroup


class Evaluation:
    """The :class:`train.trainer.Trainer`'s evaluation methods."""

    def policy_agent(self) -> PolicyAgent:
        """A frozen CPU copy of the current policy, playing its most probable action."""
        network = copy.deepcopy(self.network).to("cpu").eval()
        agent = PolicyAgent(self.pedro_config, network, greedy=True)
        agent.name = "policy"
        return agent

    def league_names(self) -> list[tuple[str, int]]:
        """(name, pool index) of the ``eval_league`` most recent league snapshots, newest first: snapshots of
        earlier policies (not the untrained one, nor one taken at this very step, which is the policy itself)."""
        pool = self.pool
        order = sorted(range(len(pool.league)), key=lambda index: -pool.league_decisions[index])
        earlier = [index for index in order if 0 < pool.league_decisions[index] < self.decisions]
        newest = earlier[: self.config.eval_league]
        return [(f"league@{pool.league_decisions[index]}", len(pool.baselines) + index) for index in newest]

    def evaluated_groups(self, final: bool) -> list[TableGroup]:
        """The rule sets an evaluation plays: every one at the end, those of ``eval_rules`` (default all) before."""
        names = self.config.eval_rules
        return [group for group in self.groups if final or not names or group.name in names]

    def evaluate(
        self,
        pairs: int,
        search_pairs: int,
        partner_pairs: int | None = None,
        progress: Callable[[int, int], None] | None = None,
        group: TableGroup | None = None,
    ) -> GauntletResult:
        """The current policy (greedy) through the gauntlet under ``group``'s rules (default: the first rule set, a
        single-rules run's only one): every ``eval_opponents`` baseline as opponent and (``eval_partners``, at four
        players) as partner, and the most recent league snapshots, on the evaluation seeds.

        Baseline opponents get ``pairs`` pairs, partner and league entries ``partner_pairs`` (default ``pairs``;
        0 leaves the partner entries out), search agents ``search_pairs``. Plays in ``eval_workers`` processes
        (0: one per core); ``progress(done, total)`` after each batch of matches. With several ranks each plays
        a share of the matches (with its machine's cores shared among the ranks on it) and every rank gets the
        whole result: the same as one process's, since a match's deals depend only on its pair. Its scalars go to
        ``latest_eval`` (under the rule set's name in a mix), its worst cases to ``latest_headline``.
        """
        group = self.groups[0] if group is None else group
        config, rules = group.config, group.rules
        network = copy.deepcopy(self.network).to("cpu").eval()
        policies = [("policy", policy_bytes(network, rules))]
        league = []
        for name, index in self.league_names():
            agent = group.pool.agent(index)
            assert isinstance(agent, PolicyAgent)
            policies.append((name, policy_bytes(agent.network, rules)))
            league.append(name)
        partners = config.eval_partners and partner_pairs != 0
        entries = gauntlet_entries(config.eval_opponents, pairs, search_pairs, partners, league, partner_pairs)
        ranks = self.ranks
        workers = config.eval_workers or max(1, (os.cpu_count() or 1) // ranks.local_world_size)
        result = run_gauntlet(
            "policy",
            entries,
            rules,
            config.eval_seed,
            workers,
            policies=policies,
            progress=progress,
            share=(ranks.rank, ranks.world_size),
            gather=self.exchange.gather if ranks.distributed else None,
        )
        prefix = self.tag_prefix(group)
        kept = {key: value for key, value in self.latest_eval.items() if prefix and not key.startswith(prefix)}
        self.latest_eval = {**kept, **{prefix + key: value for key, value in result.scalars().items()}}
        self.headlines[group.name] = gauntlet_headline(result)
        self.latest_headline = self._headline()
        return result

    def _headline(self) -> str:
        """The latest evaluation's worst cases; in a mix those of the rule set whose worst case is the lowest."""
        if len(self.groups) == 1:
            return self.headlines.get(self.groups[0].name, "")

        def worst(name: str) -> float:
            rate = self.latest_eval.get(f"{name}/worst/win_rate", math.inf)
            return rate if math.isfinite(rate) else math.inf

        name = min(self.headlines, key=worst)
        return f"{name}: {self.headlines[name]}"
