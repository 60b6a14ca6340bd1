"""The trainer: the games, the network, the opponents, the teacher and evaluation around the PPO of :mod:`train.ppo`.

:class:`Trainer` collects rollouts (the policy at its seats, opponents and partners from
:mod:`train.league` at the others, the teacher's labels from :mod:`train.teacher`), credits and
updates (:mod:`train.ppo`), counts the games (:mod:`train.stats`, logged by :mod:`train.trainer_scalars`) and
evaluates with the harness (:mod:`train.trainer_eval`); its whole state round-trips through :meth:`Trainer.state_dict`
(:mod:`train.trainer_state`), so a resumed run continues exactly.
The games are those of one :class:`train.table_group.TableGroup` per rule set (``rules_mix``; one for
a single-rules run), side by side in one batch: group ``g`` owns a contiguous slice of the rollout's
games, and the policy decides for every group in one forward a step.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from agents import PRETRAINED_PATH
from agents.networks import ActorCritic, NetworkShape, masked_log_probs, sample_actions
from agents.policy import load_initial_weights
from pedro_env.actions import NUM_ACTIONS
from pedro_env.observation_layout import full_state_size, observation_scale, observation_size
from pedro_env.vector import PedroVectorEnv
from train.config import TrainConfig
from train.devices import resolve_device, resolve_precision
from train.distributed import (
    SINGLE,
    Exchange,
    Ranks,
    gradient_group,
    minibatch_reducer,
    parameter_digest,
    rank_device,
)
from train.league import League, OpponentPool
from train.ppo import Rollout, SeatCredit, ppo_update, seat_advantages
from train.rules_mix import allot_games, teacher_scales
from train.schedule import LearningRateSchedule
from train.stats import GameStats
from train.table_group import Seating, TableGroup
from train.teacher import DeferredLabels, Teacher, share_policy_agents
from train.trainer_eval import Evaluation
from train.trainer_scalars import RunScalars
from train.trainer_state import CheckpointState


@dataclass
class JoinedStep:
    """What the reward credit reads of the current step of every group's games, as one batch of ``B`` games."""

    actor: np.ndarray  # (B,) int8: the seat to act now
    rewards: np.ndarray  # (B, n) float32: each seat's reward since its own last decision (0 at seats a table lacks)
    terminated: np.ndarray  # (B,) bool
    truncated: np.ndarray  # (B,) bool


class Trainer(CheckpointState, Evaluation, RunScalars):
    """Everything of one run: games, network, optimizer, opponents, counters and RNGs (see the module docstring)."""

    def __init__(
        self,
        config: TrainConfig,
        device: torch.device | None = None,
        ranks: Ranks = SINGLE,
        exchange: Exchange | None = None,
        initial_weights: bool = True,
    ) -> None:
        """``ranks`` and ``exchange`` (:mod:`train.distributed`): this process's place in a torchrun job and the
        collectives over its ranks; the defaults are the one process of a plain run. ``initial_weights=False``
        skips ``init_from`` (a resume loads its checkpoint's weights instead)."""
        self.config = config
        self.pedro_config = config.pedro_config
        self.ranks = ranks
        self.exchange = exchange if exchange is not None else Exchange(ranks)
        if device is None:
            device = rank_device(config.device, ranks) if ranks.distributed else resolve_device(config.device)
        self.device = device
        # the network's arithmetic in training: the update's on its device, the games' on the CPU
        self.precision = resolve_precision(config.precision, device)
        self.acting_precision = resolve_precision(config.precision, torch.device("cpu"))
        if config.torch_threads:
            torch.set_num_threads(config.torch_threads)
        torch.manual_seed(config.seed)  # the network's initial weights (DistributedDataParallel also sends rank 0's)
        self._build_network(config, ranks, initial_weights)
        self._seed_streams(config, ranks)
        self._build_groups(config)
        self._start_games(config, ranks)

    def _build_network(self, config: TrainConfig, ranks: Ranks, initial_weights: bool) -> None:
        """The actor-critic (from ``init_from`` when asked), its acting copy on the CPU, its DDP wrapper with several
        ranks, and the optimizer."""
        size = observation_size(self.pedro_config)
        self.shape = NetworkShape(
            observation_size=size,
            critic_input_size=full_state_size(self.pedro_config) if config.centralized_critic else size,
            num_actions=NUM_ACTIONS,
            hidden_sizes=tuple(config.hidden_sizes),
            shared_trunk=config.shared_trunk and not config.centralized_critic,
        )
        self.scale = observation_scale(self.pedro_config)
        self.network = ActorCritic(self.shape, self.scale)
        if config.init_from and initial_weights:
            source = PRETRAINED_PATH if config.init_from == "pretrained" else config.init_from
            self.network.load_state_dict(load_initial_weights(source, config.init_from, self.shape))
        self.network = self.network.to(self.device)
        # the games are played on the CPU: on a GPU the network learns, and a CPU copy acts (weights move once
        # per update, the rollout once to the GPU), instead of a round trip to the GPU at every step
        # (in bfloat16 a copy in bfloat16: the weights are cast once an update, not at every step)
        own = self.device.type == "cpu" and self.acting_precision == torch.float32
        self.acting_network = self.network if own else copy.deepcopy(self.network).to("cpu", self.acting_precision)
        self.learner_network: nn.Module = self.network
        if ranks.distributed:
            self.learner_network = nn.parallel.DistributedDataParallel(
                self.network,
                device_ids=[self.device.index] if self.device.type == "cuda" else None,
                forward_sync_buffers=False,  # the buffers are the observation scales: constants
                process_group=gradient_group(self.device),
            )
        self.batch = minibatch_reducer(self.exchange)
        self.optimizer = torch.optim.Adam(self.network.parameters(), lr=config.lr, eps=1e-5)

    def _seed_streams(self, config: TrainConfig, ranks: Ranks) -> None:
        """The run's random streams: opponent assignment and minibatch order, the opponents' choices, the policy's
        sampling."""
        # each rank its own streams; rank 0 (the only one of a plain run) keeps the seeds of a one-process run
        rank_key = [ranks.rank] if ranks.rank else []
        self.rng = np.random.default_rng([config.seed, 0, *rank_key])  # opponent assignment, minibatch order
        self.opponent_rng = np.random.default_rng([config.seed, 1, *rank_key])  # the opponents' own choices
        self.sampler = torch.Generator(device="cpu")  # the games are stepped on the CPU, so their policy runs there
        rank_seed = int(np.random.SeedSequence([config.seed, 2, ranks.rank]).generate_state(1)[0])
        self.sampler.manual_seed(rank_seed if ranks.rank else config.seed)

    def _build_groups(self, config: TrainConfig) -> None:
        """A table group per rule set, each with its share of the games (train/rules_mix.py), around one league; the
        reward credit and the rollout over all of them (seats: the largest table's)."""
        sets = config.rule_sets
        self.league = League(config.league_size, self.pedro_config, self.shape, self.scale, self.acting_precision)
        self.num_seats = max(rule_set.rules.num_players for rule_set in sets)
        self.seating = Seating.empty(config.num_envs, self.num_seats)
        ends = np.cumsum(allot_games(config.num_envs, [rule_set.weight for rule_set in sets])).tolist()
        self.groups = [
            TableGroup(rule_set, config, slice(end - count, end), self.seating, self.league, self.shape, self.scale)
            for rule_set, count, end in zip(sets, np.diff([0, *ends]).tolist(), ends)
        ]
        share_policy_agents([group.teacher for group in self.groups], self.acting_precision)
        self.teacher_scales = teacher_scales(sets, [group.num_games for group in self.groups])
        self.credit = SeatCredit(config.num_envs, self.num_seats)
        self.rollout = Rollout.empty(
            config.rollout_steps,
            config.num_envs,
            self.shape.observation_size,
            self.shape.critic_input_size if config.centralized_critic else None,
        )

    def _start_games(self, config: TrainConfig, ranks: Ranks) -> None:
        """The counters, the first step of every game and who plays each seat."""
        self.decisions = 0
        self.updates = 0
        self.elapsed_s = 0.0  # training wall time over all sessions of the run
        self.next_league = config.league_interval
        self.next_eval = config.eval_interval if config.eval_interval else math.inf
        self.next_checkpoint = config.checkpoint_interval
        self.latest_eval: dict[str, float] = {}
        self.latest_headline = ""  # the last evaluation's worst cases, for the progress line
        self.headlines: dict[str, str] = {}  # with several rule sets: each one's latest worst cases
        self.add_snapshot()  # the untrained policy: the league's first member
        for group in self.groups:
            group.start(config.seed, ranks.rank, config.num_envs, self.rng)

    # -- a single-rules run's one group (the first of a mix) ----------------------------------

    @property
    def pool(self) -> OpponentPool:
        """The opponent pool of a single-rules run (of a mix's first rule set; see ``groups``)."""
        return self.groups[0].pool

    @property
    def venv(self) -> PedroVectorEnv:
        """The games of a single-rules run (of a mix's first rule set)."""
        return self.groups[0].venv

    @property
    def game_stats(self) -> GameStats:
        """The game statistics of a single-rules run (of a mix's first rule set)."""
        return self.groups[0].game_stats

    @property
    def teacher(self) -> Teacher | None:
        """The teacher of a single-rules run (of a mix, the first rule set's that has one: every one's weighs
        alike); None when no rule set has one."""
        return next((group.teacher for group in self.groups if group.teacher is not None), None)

    @property
    def seat_controller(self) -> np.ndarray:
        """(B, n) who plays each seat of every game: -1 the policy, else an index into its group's pool."""
        return self.seating.seat_controller

    @property
    def learner_team(self) -> np.ndarray:
        """(B,) the policy's team in every game against opponents; -1 in self-play."""
        return self.seating.learner_team

    def add_snapshot(self) -> None:
        """A snapshot of the policy into the league, which every group's pool meets."""
        member = self.league.add(self.network, self.decisions)
        for group in self.groups:
            group.pool.snapshot_taken(member)

    # -- the games --------------------------------------------------------------------------

    def _joined_step(self) -> JoinedStep:
        """The current step of every group's games, as one batch (seats padded to the largest table)."""
        rewards = np.zeros((self.config.num_envs, self.num_seats), dtype=np.float32)
        for group in self.groups:
            rewards[group.games, : group.rules.num_players] = group.step.rewards
        return JoinedStep(
            actor=np.concatenate([group.step.actor for group in self.groups]),
            rewards=rewards,
            terminated=np.concatenate([group.step.terminated for group in self.groups]),
            truncated=np.concatenate([group.step.truncated for group in self.groups]),
        )

    def _write_inputs(self, rollout: Rollout, t: int) -> None:
        """Every group's current observations, legal masks and actors into the rollout's row ``t``."""
        for group in self.groups:
            step = group.step
            rollout.observations[t, group.games] = step.observation
            rollout.masks[t, group.games] = step.action_mask.view(bool)
            rollout.seats[t, group.games] = step.actor

    def _critic_inputs(self, seat: int | None = None) -> np.ndarray:
        """(B, C) what the critic reads of every game: from the actor's seat, or from ``seat`` (zeros at the tables
        that lack it)."""
        centralized = self.config.centralized_critic
        parts = []
        for group in self.groups:
            if seat is None:
                parts.append(group.critic_inputs(centralized))
            elif seat < group.rules.num_players:
                parts.append(group.critic_inputs(centralized, np.full(group.num_games, seat, dtype=np.int8)))
            else:
                parts.append(np.zeros((group.num_games, self.shape.critic_input_size), dtype=np.uint8))
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    @torch.no_grad()
    def collect(self) -> Rollout:
        """Play ``rollout_steps`` steps of every game; returns the filled rollout (rewards not yet complete:
        :meth:`advantages` credits what is still pending)."""
        config, rollout, credit = self.config, self.rollout, self.credit
        rollout.rewards[:] = 0.0
        rollout.dones[:] = False
        rollout.teacher_actions[:] = -1
        teaching = self.teacher is not None and self.teacher_weight() > 0
        deferred = DeferredLabels()  # frozen greedy policies label the whole rollout at its end
        credit.start()
        games = np.arange(config.num_envs)
        for t in range(config.rollout_steps):
            self._write_inputs(rollout, t)
            step = self._joined_step()
            credit.on_step(step, rollout)
            observations, masks = rollout.observations[t], rollout.masks[t]
            controller = self.seating.seat_controller[games, step.actor]
            learner, assisted, assistant = self._deciders(controller, masks)
            actions, log_probs, values = self._policy_actions(observations, masks, t, learner)
            self._others_act(controller, assisted, assistant, observations, masks, actions)
            if teaching:  # the teacher's choice where the policy decides in a taught phase and side
                self._teach(t, observations, masks, learner, deferred)
            rollout.actions[t] = actions
            rollout.log_probs[t] = log_probs
            rollout.values[t] = values
            rollout.learner[t] = learner
            own = games[learner]
            credit.record(t, own, step.actor[own].astype(np.intp))
            self._advance(actions)
        deferred.fill(rollout, self.opponent_rng)
        if self.ranks.distributed:
            self._merge_outcomes()
        return rollout

    def _teach(
        self, t: int, observations: np.ndarray, masks: np.ndarray, learner: np.ndarray, deferred: DeferredLabels
    ) -> None:
        """The teachers' choices at the policy's decisions they teach, into the rollout's row ``t``: each teacher
        agent asked once for every rule set it teaches (a frozen greedy policy once a rollout, :class:`DeferredLabels`),
        a searching teacher with a margin per rule set; a rule set without a teacher (``teacher: ''``) is left."""
        asked: dict[int, tuple[Any, list[np.ndarray]]] = {}
        for group in self.groups:
            teacher, rows = group.teacher, group.games
            if teacher is None:
                continue
            if teacher.margin > 0:
                taught, choices = teacher.label(observations[rows], masks[rows], learner[rows], self.opponent_rng)
                self.rollout.teacher_actions[t, rows.start + taught] = choices
                continue
            games = rows.start + teacher.taught(observations[rows], masks[rows], learner[rows])
            asked.setdefault(id(teacher.agent), (teacher.agent, []))[1].append(games)
        for agent, parts in asked.values():
            games = np.concatenate(parts)
            if DeferredLabels.deferrable(agent):  # a frozen greedy policy: one forward at the rollout's end
                deferred.add(agent, t, games)
            elif games.size:
                self.rollout.teacher_actions[t, games] = agent.act(observations[games], masks[games], self.opponent_rng)

    def _deciders(self, controller: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(B,) whether the policy decides each game's move, (B,) whether an assistant bids for it instead, and
        (B,) which assistant of its group (-1 none)."""
        learner = controller < 0
        assisted = np.zeros(self.config.num_envs, dtype=bool)
        assistant = np.full(self.config.num_envs, -1, dtype=np.int64)
        for group in self.groups:  # an assistant bids for the policy's seat: not the policy's decision
            own, which = group.assisted(learner[group.games], masks[group.games])
            if which is not None:
                assisted[group.games], assistant[group.games] = own, which
        return learner & ~assisted, assisted, assistant

    def _policy_actions(
        self, observations: np.ndarray, masks: np.ndarray, t: int, learner: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(B,) actions, log-probabilities and values: the acting network's sampled action, its log-probability and
        the value where the policy decides (``learner``), 0 elsewhere (the others' moves replace those actions, and
        GAE and the update read only the policy's decisions); the centralized critic's inputs of every game go to
        the rollout's row ``t``. One forward over the policy's games of every rule set."""
        games = np.flatnonzero(learner)
        actions = np.zeros(learner.shape[0], dtype=np.int64)
        log_probs = np.zeros(learner.shape[0], dtype=np.float32)
        values = np.zeros(learner.shape[0], dtype=np.float32)
        critic_inputs = None
        if self.config.centralized_critic:
            critic_inputs = self._critic_inputs()
            self.rollout.critic_inputs[t] = critic_inputs  # type: ignore[index]
            critic_inputs = torch.from_numpy(critic_inputs[games])
        if games.size == 0:
            return actions, log_probs, values
        logits, chosen_values = self.acting_network.logits_and_value(
            torch.from_numpy(observations[games]), torch.from_numpy(masks[games]), critic_inputs
        )
        chosen = sample_actions(logits, self.sampler)
        actions[games] = chosen.cpu().numpy()
        log_probs[games] = masked_log_probs(logits).gather(1, chosen.unsqueeze(1)).squeeze(1).cpu().numpy()
        values[games] = chosen_values.cpu().numpy()
        return actions, log_probs, values

    def _others_act(
        self,
        controller: np.ndarray,
        assisted: np.ndarray,
        assistant: np.ndarray,
        observations: np.ndarray,
        masks: np.ndarray,
        actions: np.ndarray,
    ) -> None:
        """The opponents' and the bidding assistants' moves into ``actions``, in place of the policy's: each group's
        baselines, then the league's members in one forward over every group's games, then the assistants."""
        league_games, members = [], []
        for group in self.groups:
            rows = group.games
            games, member = group.opponents_act(controller[rows], actions[rows], self.opponent_rng)
            league_games.append(rows.start + games)
            members.append(member)
        chosen = np.concatenate(league_games)
        if chosen.size:
            actions[chosen] = self.league.act(
                np.concatenate(members), observations[chosen], masks[chosen], self.opponent_rng
            )
        for group in self.groups:
            rows = group.games
            group.assistants_act(assisted[rows], assistant[rows], actions[rows], self.opponent_rng)

    def _advance(self, actions: np.ndarray) -> None:
        """Step every game; count the deals and matches; new opponents for the games whose match ended."""
        for group in self.groups:
            group.advance(actions[group.games], self.rng, self.ranks.distributed)
        self.decisions += self.config.num_envs * self.ranks.world_size  # the job's decisions: every rank steps alike

    def _merge_outcomes(self) -> None:
        """Several ranks: every rank records the rollout's finished matches of all ranks, in rank order, so the
        opponent sampling (pfsp) stays the same on every rank."""
        every_rank = self.exchange.gather([group.take_outcomes() for group in self.groups])
        for index, group in enumerate(self.groups):
            group.merge_outcomes([outcomes[index] for outcomes in every_rank])

    @torch.no_grad()
    def advantages(self, rollout: Rollout) -> np.ndarray:
        """Credit the rewards still pending, bootstrap every open trajectory from its seat's view, run GAE."""
        open_seats = self.credit.finish(self._joined_step(), rollout)
        bootstrap = np.zeros(open_seats.shape, dtype=np.float32)
        for seat in range(self.num_seats):
            games = np.flatnonzero(open_seats[:, seat])
            if games.size == 0:
                continue
            inputs = torch.from_numpy(self._critic_inputs(seat)[games])
            bootstrap[games, seat] = self.acting_network.value(inputs).numpy()
        return seat_advantages(
            rollout.rewards,
            rollout.values,
            rollout.dones,
            rollout.seats,
            rollout.learner,
            bootstrap,
            self.config.gamma,
            self.config.gae_lambda,
        )

    def teacher_weight(self) -> float:
        """Weight of the teacher's cross-entropy in the next update (0 without a teacher)."""
        return 0.0 if self.teacher is None else self.teacher.weight(self.decisions)

    @property
    def num_updates(self) -> int:
        """Updates in the run, over the job's rollouts (``world_size`` ranks each add one per update)."""
        return max(1, math.ceil(self.config.total_decisions / self.decisions_per_update))

    @property
    def decisions_per_update(self) -> int:
        """Decisions the job plays per update: every rank's rollout."""
        return self.config.rollout_decisions * self.ranks.world_size

    @property
    def lr_schedule(self) -> LearningRateSchedule:
        """The learning rate of every update: linear decay to 0 with ``anneal_lr`` over each ``lr_restarts`` segment."""
        config, per_update = self.config, self.decisions_per_update
        return LearningRateSchedule.of_run(
            config.lr, config.lr_restarts, config.lr_restart, per_update, self.num_updates, config.anneal_lr
        )

    def learning_rate(self) -> float:
        """The learning rate of the next update."""
        return self.lr_schedule.rate(self.updates)

    def update(self, rollout: Rollout, advantages: np.ndarray, teacher_weight: float) -> dict[str, float]:
        """The PPO update on ``rollout`` (:func:`train.ppo.ppo_update` with this run's network and precision)."""
        return ppo_update(
            self.learner_network,
            self.optimizer,
            rollout,
            advantages,
            self.config,
            self.rng,
            self.device,
            teacher_weight,
            self.batch,
            self.precision,
            self.teacher_scales,
        )

    def train_step(self) -> dict[str, float]:
        """One rollout and one update; returns the update's statistics."""
        schedule = self.lr_schedule
        if schedule.restarts_at(self.updates):
            self.optimizer.state.clear()  # a warm restart: Adam's moment estimates and step counts start afresh
        for group in self.optimizer.param_groups:
            group["lr"] = schedule.rate(self.updates)
        teacher_weight = self.teacher_weight()
        rollout = self.collect()
        stats = self.update(rollout, self.advantages(rollout), teacher_weight)
        if self.acting_network is not self.network:
            self.acting_network.load_state_dict(self.network.state_dict())
        if self.ranks.distributed:
            self.check_same_parameters()
        if self.teacher is not None:
            stats["teacher_weight"] = teacher_weight
        self.updates += 1
        stats["learning_rate"] = self.optimizer.param_groups[0]["lr"]
        if self.decisions >= self.next_league:
            self.add_snapshot()
            self.next_league += self.config.league_interval
        return stats

    def check_same_parameters(self) -> None:
        """Several ranks: the network's weights are the same bytes on every rank (else the run stops)."""
        digests = self.exchange.gather(parameter_digest(self.network))
        if len(set(digests)) != 1:
            raise RuntimeError(f"the ranks' networks differ after update {self.updates + 1} (digests {digests})")

    # -- the schedule: every interval of the run is kept here ---------------------------------

    def evaluation_due(self) -> bool:
        """Whether the decisions passed the next evaluation point (every ``eval_interval``); moves it past now."""
        if self.decisions < self.next_eval:
            return False
        while self.next_eval <= self.decisions:
            self.next_eval += self.config.eval_interval
        return True

    def checkpoint_due(self) -> bool:
        """Whether the decisions passed the next checkpoint point (every ``checkpoint_interval``); moves it past now."""
        if self.decisions < self.next_checkpoint:
            return False
        while self.next_checkpoint <= self.decisions:
            self.next_checkpoint += self.config.checkpoint_interval
        return True
