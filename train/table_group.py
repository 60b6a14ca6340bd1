"""One rule set's games in a training run: a *table group* (:class:`TableGroup`) and who sits where (:class:`Seating`).

A run plays the games of each of its rule sets (``rules_mix``, train/rules_mix.py; a single-rules run has one)
side by side in one batch of ``num_envs`` games: group ``g`` owns the contiguous games ``games`` of it and all
that depends on their rules: its vector env and current step, its opponent pool (rule agents built for its
rules; the league's snapshots are shared), its bidding assistants, its teacher, its game statistics and its
part of the :class:`Seating`. The trainer (train/trainer.py) owns what the groups share: the network and its
one forward a step over every group's games, the optimizer, the counters, the random streams and the rollout,
whose seat dimension is the largest table's.

Seat arrays are ``(B, n)`` with ``n`` the largest table of the run; a smaller table uses its first seats.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from agents import make_agent
from agents.networks import NetworkShape
from pedro_env.actions import TRUMP_OFFSET
from pedro_env.vector import PedroVectorEnv, VectorStep
from train.config import PARTNER_KEYS, TrainConfig
from train.league import League, OpponentPool
from train.rules_mix import RuleSet
from train.stats import GameStats
from train.teacher import Teacher

ENV_SEED_STRIDE = 2**32  # training deals come from seed * 2**32 + game, far from the evaluation seeds


@dataclass
class Seating:
    """Who plays each seat of each game and what kind of game it is; every array ``(B, ...)``."""

    seat_controller: np.ndarray  # (B, n) int64: -1 the policy, else an index into the game's opponent pool
    learner_team: np.ndarray  # (B,) intp: the policy's team in a game against opponents; -1 in self-play
    game_opponent: np.ndarray  # (B,) int64: the pool member of an opponent game, else -1
    game_partner: np.ndarray  # (B,) int64: the baseline partner of a partner game, else -1
    game_group: np.ndarray  # (B,) int64: index into the statistics groups
    bid_assist: np.ndarray  # (B, n) int64: the assistant bidding for the policy at each seat, -1 none

    @classmethod
    def empty(cls, games: int, seats: int) -> Seating:
        return cls(
            seat_controller=np.full((games, seats), -1, dtype=np.int64),
            learner_team=np.full(games, -1, dtype=np.intp),
            game_opponent=np.full(games, -1, dtype=np.int64),
            game_partner=np.full(games, -1, dtype=np.int64),
            game_group=np.zeros(games, dtype=np.int64),
            bid_assist=np.full((games, seats), -1, dtype=np.int64),
        )

    def part(self, games: slice, seats: int) -> Seating:
        """Views of ``games`` at their first ``seats`` seats (writes go to these arrays)."""
        return Seating(
            **{name: array[games, :seats] if array.ndim == 2 else array[games] for name, array in self.arrays().items()}
        )

    def arrays(self) -> dict[str, np.ndarray]:
        """Every array by its field's name (the arrays themselves, not copies)."""
        return {item.name: getattr(self, item.name) for item in dataclasses.fields(self)}


def group_config(config: TrainConfig, rule_set: RuleSet, games: int) -> TrainConfig:
    """The run's ``config`` as one group plays it: ``env`` its rule set's rules, ``num_envs`` its ``games``, and at an
    individual table (two or three players, nobody has a partner) the partner keys of :data:`PARTNER_KEYS`, and
    ``teacher`` the rule set's own where it names one."""
    changes: dict[str, Any] = {
        "env": MappingProxyType({**config.env, **rule_set.changes}),
        "num_envs": games,
        "rules_mix": (),
        "eval_rules": (),
    }
    if rule_set.rules.num_players == rule_set.rules.num_teams:
        changes.update(PARTNER_KEYS)
    if rule_set.teacher is not None:
        changes["teacher"] = rule_set.teacher
    return dataclasses.replace(config, **changes)


class TableGroup:
    """The games of one rule set (see the module docstring)."""

    def __init__(
        self,
        rule_set: RuleSet,
        run_config: TrainConfig,
        games: slice,
        seating: Seating,
        league: League,
        shape: NetworkShape,
        scale: np.ndarray,
    ) -> None:
        """``games``: this group's games of the run's batch; ``seating``: the run's, of which it takes its part;
        ``league``: the run's ring of snapshots, which its pool shares."""
        self.name = rule_set.name
        self.rules = rule_set.rules
        self.games = games
        self.num_games = games.stop - games.start
        self.config = config = group_config(run_config, rule_set, self.num_games)
        self.venv = PedroVectorEnv(self.num_games, self.rules, reuse_outputs=True)  # steps are read at once
        self.seating = seating.part(games, self.rules.num_players)
        self.pool = OpponentPool(
            self.rules,
            config.baseline_opponents,
            config.league_size,
            shape,
            scale,
            sampling=config.opponent_sampling,
            pfsp_exponent=config.pfsp_exponent,
            pfsp_floor=config.pfsp_floor,
            league=league,
        )
        self.team_of_seat = self.rules.team_of_seat.astype(np.intp)
        # statistics groups: self-play, each pool member (snapshots together) as opponent, each baseline as partner
        baseline_specs = list(config.baseline_opponents)
        self.stat_groups = ["self"] + [f"vs {spec}" for spec in baseline_specs] + ["vs league"]
        self.stat_groups += [f"with {spec}" for spec in baseline_specs]
        # bidding assistants (bid_assist_share): baselines that bid for the policy in some games
        self.assistants = (
            [make_agent(spec, self.rules) for spec in config.bid_assistants] if config.bid_assist_share > 0 else []
        )
        if self.assistants:
            self.stat_groups.append("assisted")
        self.teacher = Teacher(config, self.rules) if config.teacher else None  # kickstarting (train/teacher.py)
        self.game_stats = GameStats(self.stat_groups, self.rules.num_teams)
        self.step: VectorStep | None = None
        self.pending_outcomes: list[np.ndarray] = []  # several ranks: this rollout's outcomes, merged at its end

    def start(self, seed: int, rank: int, run_games: int, rng: np.random.Generator) -> None:
        """The first step of every game (game ``i`` of the rank's batch on deal seed ``seed * 2**32 + rank *
        run_games + i``) and who plays each seat."""
        self.step = self.venv.reset(seed=seed * ENV_SEED_STRIDE + rank * run_games + self.games.start)
        self.assign_opponents(np.arange(self.num_games), rng)

    # -- who plays ---------------------------------------------------------------------------

    def assign_opponents(self, games: np.ndarray, rng: np.random.Generator) -> None:
        """New matches in ``games`` (of this group): who plays each seat.

        A share ``opponent_share`` is against a pool member (the other team's seats); a share
        ``partner_share`` has one seat of the policy's team played by a baseline (so the policy
        learns to partner players it has not trained with), against a pool member or, with
        ``partner_opponents: baselines``, a baseline, or with ``partner``, two of the partner's own
        baseline; the rest is self-play. Members and partners are drawn by ``opponent_sampling``
        (:mod:`train.league`).
        """
        if games.size == 0:
            return
        config, count, pool, seating = self.config, games.size, self.pool, self.seating
        draw = rng.random(count)
        teams = rng.integers(0, self.rules.num_teams, size=count)
        partner_position = rng.integers(0, 2, size=count)
        against = (draw < config.opponent_share + config.partner_share) & (len(pool) > 0)
        partnered = against & (draw >= config.opponent_share) & (len(pool.baselines) > 0)
        opponents = pool.sample_opponents(count, rng)
        rows = np.flatnonzero(partnered)
        if config.partner_opponents == "baselines" and rows.size:
            opponents[rows] = pool.sample_opponents(rows.size, rng, baselines_only=True)
        partners = pool.sample_partners(count, rng)
        if config.partner_opponents == "partner":
            opponents[rows] = partners[rows]  # pool indices 0 .. len(baselines) - 1 are the baselines
        other_team = self.team_of_seat[None, :] != teams[:, None]
        controller = np.where(against[:, None] & other_team, opponents[:, None], -1).astype(np.int64)
        partner_seat = teams + 2 * partner_position  # the team's seats are t and t + 2
        controller[rows, partner_seat[rows]] = partners[rows]
        seating.seat_controller[games] = controller
        seating.learner_team[games] = np.where(against, teams, -1)
        seating.game_opponent[games] = np.where(against & ~partnered, opponents, -1)
        seating.game_partner[games] = np.where(partnered, partners, -1)
        baselines = len(pool.baselines)
        group = np.where(
            partnered,
            2 + baselines + partners,
            np.where(against, 1 + np.minimum(opponents, baselines), 0),
        )
        seating.game_group[games] = group
        seating.bid_assist[games] = -1
        if self.assistants:
            assisted = rng.random(count) < config.bid_assist_share
            # the assisted team: the policy's own in a game against opponents, either team in self-play
            team = np.where(against, teams, rng.integers(0, self.rules.num_teams, size=count))
            helper = rng.integers(0, len(self.assistants), size=count)
            mine = (self.team_of_seat[None, :] == team[:, None]) & (controller < 0)
            seating.bid_assist[games] = np.where(assisted[:, None] & mine, helper[:, None], -1)
            seating.game_group[games] = np.where(assisted, len(self.stat_groups) - 1, group)

    def assisted(self, learner: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """(G,) whether an assistant bids for the policy's seat in each game (its ``learner`` decisions at a bid, with
        (G, A) ``masks``), and (G,) which assistant (None without assistants)."""
        if not self.assistants:
            return np.zeros(self.num_games, dtype=bool), None
        assistant = self.seating.bid_assist[np.arange(self.num_games), self.step.actor]
        return learner & (assistant >= 0) & masks[:, :TRUMP_OFFSET].any(axis=1), assistant

    def opponents_act(
        self, controller: np.ndarray, actions: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """The pool's baselines' moves into ``actions`` (G,) where they play (``controller`` (G,), this step's); returns
        the games (G rows) where a league member chooses and which member, for one :meth:`League.act` of every
        group's."""
        step = self.step
        games = np.flatnonzero(controller >= 0)
        if games.size == 0:
            return games, games
        chosen, league_rows = self.pool.act_baselines(controller[games], step.observation[games],
                                                      step.action_mask[games], rng)  # fmt: skip
        actions[games] = chosen
        league_games = games[league_rows]
        return league_games, controller[league_games] - len(self.pool.baselines)

    def assistants_act(
        self, assisted: np.ndarray, assistant: np.ndarray | None, actions: np.ndarray, rng: np.random.Generator
    ) -> None:
        """The bidding assistants' moves into ``actions`` (G,), in place of the policy's."""
        step = self.step
        for index in np.unique(assistant[assisted]) if assisted.any() else ():
            rows = np.flatnonzero(assisted & (assistant == index))
            actions[rows] = self.assistants[index].act(step.observation[rows], step.action_mask[rows], rng)

    # -- the games ---------------------------------------------------------------------------

    def advance(self, actions: np.ndarray, rng: np.random.Generator, distributed: bool) -> None:
        """Step every game with ``actions`` (G,); count the deals and matches; new opponents where a match ended."""
        self.step = self.venv.step(actions)
        self.game_stats.record(self.step, self.seating.learner_team, self.seating.game_group)
        ended = np.flatnonzero(self.step.terminated | self.step.truncated)
        self._record_outcomes(ended, distributed)
        self.assign_opponents(ended, rng)

    def _record_outcomes(self, ended: np.ndarray, distributed: bool) -> None:
        """Finished matches against opponents or with partners: their outcomes feed opponent sampling (with several
        ranks at the end of the rollout, with every rank's: :meth:`merge_outcomes`)."""
        seating = self.seating
        ended = ended[seating.learner_team[ended] >= 0]
        if ended.size == 0:
            return
        step = self.step
        won = step.deals["winner"][ended] == seating.learner_team[ended]
        outcomes = np.where(step.terminated[ended], won.astype(np.float64), 0.5)
        opponents, partners = seating.game_opponent[ended], seating.game_partner[ended]
        if distributed:
            self.pending_outcomes.append(np.stack([opponents, partners, outcomes]))
            return
        self.pool.record_outcomes(opponents, partners, outcomes)

    def take_outcomes(self) -> np.ndarray:
        """(3, M) this rank's pending outcomes of the rollout (opponent, partner, outcome), cleared."""
        mine = np.concatenate(self.pending_outcomes, axis=1) if self.pending_outcomes else np.zeros((3, 0))
        self.pending_outcomes = []
        return mine

    def merge_outcomes(self, every_rank: list[np.ndarray]) -> None:
        """Record every rank's :meth:`take_outcomes`, in rank order (so pfsp stays the same on every rank)."""
        for outcomes in every_rank:
            self.pool.record_outcomes(outcomes[0].astype(np.int64), outcomes[1].astype(np.int64), outcomes[2])

    def critic_inputs(self, centralized: bool, viewers: np.ndarray | None = None) -> np.ndarray:
        """(G, C) what the critic reads of each game from ``viewers``' seats (default: the actors'): the full state
        with a ``centralized`` critic, else the observation."""
        state = self.venv.state
        assert state is not None
        viewers = state.actor if viewers is None else viewers
        if centralized:
            return self.venv.encoder.encode_full_state(state, viewers)
        return self.venv.encoder.encode(state, viewers)
