"""The trainer: the env, the network, the opponents, the teacher and evaluation around the PPO of :mod:`train.ppo`.

:class:`Trainer` collects rollouts (the policy at its seats, opponents and partners from
:mod:`train.league` at the others, the teacher's labels from :mod:`train.teacher`), credits and
updates (:mod:`train.ppo`), counts the games (:mod:`train.stats`) and evaluates with the harness;
its whole state round-trips through :meth:`Trainer.state_dict`, so a resumed run continues exactly.
"""

from __future__ import annotations

import copy
import math
import os
import zlib
from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from agents import PRETRAINED_PATH, make_agent
from agents.networks import ActorCritic, NetworkShape, masked_log_probs, sample_actions
from agents.policy import PolicyAgent, load_initial_weights, policy_bytes
from arena.gauntlet import GauntletResult, gauntlet_entries, gauntlet_headline, run_gauntlet
from pedro_env.actions import NUM_ACTIONS, TRUMP_OFFSET
from pedro_env.observation_layout import full_state_size, observation_scale, observation_size
from pedro_env.vector import PedroVectorEnv, VectorStep
from train.config import TrainConfig
from train.distributed import (
    SINGLE,
    Exchange,
    Ranks,
    gradient_group,
    minibatch_reducer,
    rank_device,
)
from train.league import OpponentPool
from train.ppo import Rollout, SeatCredit, ppo_update, seat_advantages
from train.stats import GameStats
from train.teacher import Teacher
from train.trainer_state import CheckpointState

ENV_SEED_STRIDE = 2**32  # training deals come from seed * 2**32 + game, far from the evaluation seeds


def resolve_device(name: str) -> torch.device:
    """``auto`` -> CUDA when available, else CPU; ``cuda`` without CUDA is an error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was asked for but torch sees no CUDA device: use device=auto or device=cpu")
    return torch.device(name)


def resolve_precision(name: str, device: torch.device) -> torch.dtype:
    """``float32`` or ``bfloat16`` as asked; ``auto`` -> bfloat16 where ``device`` multiplies it natively (a CUDA
    device with bfloat16, a CPU with AVX-512 BF16 or AMX), else float32."""
    if name == "auto":
        if device.type == "cuda":
            native = torch.cuda.is_bf16_supported()
        else:  # torch's own CPU feature checks (private; absent in some builds: then float32)
            names = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
            native = any(getattr(torch.cpu, name, None) is not None and getattr(torch.cpu, name)() for name in names)
        return torch.bfloat16 if native else torch.float32
    return torch.bfloat16 if name == "bfloat16" else torch.float32


class Trainer(CheckpointState):
    """Everything of one run: env, network, optimizer, opponents, counters and RNGs (see the module docstring)."""

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
        self.venv = PedroVectorEnv(config.num_envs, self.pedro_config, reuse_outputs=True)  # steps are read at once
        self._build_network(config, ranks, initial_weights)
        self._seed_streams(config, ranks)
        self._build_opponents(config)
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
            self.network.load_state_dict(load_initial_weights(source, config.init_from, self.shape, self.pedro_config))
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

    def _build_opponents(self, config: TrainConfig) -> None:
        """The opponent pool, the reward credit, the rollout, the statistics groups, the bidding assistants and the
        teacher."""
        size = self.shape.observation_size
        self.pool = OpponentPool(
            self.pedro_config,
            config.baseline_opponents,
            config.league_size,
            self.shape,
            self.scale,
            sampling=config.opponent_sampling,
            pfsp_exponent=config.pfsp_exponent,
            pfsp_floor=config.pfsp_floor,
            precision=self.acting_precision,
        )
        self.pool.add_snapshot(self.network, 0)
        self.team_of_seat = self.pedro_config.team_of_seat.astype(np.intp)
        self.credit = SeatCredit(config.num_envs, self.pedro_config.num_players)
        self.rollout = Rollout.empty(
            config.rollout_steps,
            config.num_envs,
            size,
            self.shape.critic_input_size if config.centralized_critic else None,
        )
        # statistics groups: self-play, each pool member (snapshots together) as opponent, each baseline as partner
        baseline_specs = list(config.baseline_opponents)
        self.stat_groups = ["self"] + [f"vs {spec}" for spec in baseline_specs] + ["vs league"]
        self.stat_groups += [f"with {spec}" for spec in baseline_specs]
        # bidding assistants (bid_assist_share): baselines that bid for the policy in some games
        self.assistants = (
            [make_agent(spec, self.pedro_config) for spec in config.bid_assistants]
            if config.bid_assist_share > 0
            else []
        )
        if self.assistants:
            self.stat_groups.append("assisted")
        self.teacher = Teacher(config, self.pedro_config) if config.teacher else None  # kickstarting (train/teacher.py)
        self.game_stats = GameStats(self.stat_groups, self.pedro_config.num_teams)

    def _start_games(self, config: TrainConfig, ranks: Ranks) -> None:
        """The counters, the first step of every game and who plays each seat."""
        self.decisions = 0
        self.updates = 0
        self.elapsed_s = 0.0  # training wall time over all sessions of the run
        self.next_league = config.league_interval
        self.next_eval = config.eval_interval if config.eval_interval else math.inf
        self.next_checkpoint = config.checkpoint_interval
        self.latest_eval: dict[str, dict[str, float]] = {}
        self.step = self.venv.reset(seed=config.seed * ENV_SEED_STRIDE + ranks.rank * config.num_envs)
        self.pending_outcomes: list[np.ndarray] = []  # several ranks: this rollout's outcomes, merged at its end
        # who plays each seat: -1 the policy, else an index into the opponent pool
        self.seat_controller = np.full((config.num_envs, self.pedro_config.num_players), -1, dtype=np.int64)
        self.learner_team = np.full(config.num_envs, -1, dtype=np.intp)  # the policy's team; -1 in self-play
        self.game_opponent = np.full(config.num_envs, -1, dtype=np.int64)  # pool member of an opponent game, else -1
        self.game_partner = np.full(config.num_envs, -1, dtype=np.int64)  # baseline partner of a partner game, else -1
        self.game_group = np.zeros(config.num_envs, dtype=np.int64)  # index into stat_groups
        # (B, n) assistant bidding for the policy at each seat (index into assistants), -1 none
        self.bid_assist = np.full((config.num_envs, self.pedro_config.num_players), -1, dtype=np.int64)
        self.latest_headline = ""  # the last evaluation's worst cases, for the progress line
        self._assign_opponents(np.arange(config.num_envs))

    # -- the games --------------------------------------------------------------------------

    def _assign_opponents(self, games: np.ndarray) -> None:
        """New matches in ``games``: who plays each seat.

        A share ``opponent_share`` is against a pool member (the other team's seats); a share
        ``partner_share`` has one seat of the policy's team played by a baseline (so the policy
        learns to partner players it has not trained with), against a pool member or, with
        ``partner_opponents: baselines``, a baseline, or with ``partner``, two of the partner's own
        baseline; the rest is self-play. Members and partners are drawn by ``opponent_sampling``
        (:mod:`train.league`).
        """
        if games.size == 0:
            return
        config, count, pool = self.config, games.size, self.pool
        draw = self.rng.random(count)
        teams = self.rng.integers(0, self.pedro_config.num_teams, size=count)
        partner_position = self.rng.integers(0, 2, size=count)
        against = (draw < config.opponent_share + config.partner_share) & (len(pool) > 0)
        partnered = against & (draw >= config.opponent_share) & (len(pool.baselines) > 0)
        opponents = pool.sample_opponents(count, self.rng)
        rows = np.flatnonzero(partnered)
        if config.partner_opponents == "baselines" and rows.size:
            opponents[rows] = pool.sample_opponents(rows.size, self.rng, baselines_only=True)
        partners = pool.sample_partners(count, self.rng)
        if config.partner_opponents == "partner":
            opponents[rows] = partners[rows]  # pool indices 0 .. len(baselines) - 1 are the baselines
        other_team = self.team_of_seat[None, :] != teams[:, None]
        controller = np.where(against[:, None] & other_team, opponents[:, None], -1).astype(np.int64)
        partner_seat = teams + 2 * partner_position  # the team's seats are t and t + 2
        controller[rows, partner_seat[rows]] = partners[rows]
        self.seat_controller[games] = controller
        self.learner_team[games] = np.where(against, teams, -1)
        self.game_opponent[games] = np.where(against & ~partnered, opponents, -1)
        self.game_partner[games] = np.where(partnered, partners, -1)
        baselines = len(pool.baselines)
        group = np.where(
            partnered,
            2 + baselines + partners,
            np.where(against, 1 + np.minimum(opponents, baselines), 0),
        )
        self.game_group[games] = group
        self.bid_assist[games] = -1
        if self.assistants:
            assisted = self.rng.random(count) < config.bid_assist_share
            # the assisted team: the policy's own in a game against opponents, either team in self-play
            team = np.where(against, teams, self.rng.integers(0, self.pedro_config.num_teams, size=count))
            helper = self.rng.integers(0, len(self.assistants), size=count)
            mine = (self.team_of_seat[None, :] == team[:, None]) & (controller < 0)
            self.bid_assist[games] = np.where(assisted[:, None] & mine, helper[:, None], -1)
            self.game_group[games] = np.where(assisted, len(self.stat_groups) - 1, group)

    def _record_outcomes(self, ended: np.ndarray) -> None:
        """Finished matches against opponents or with partners: their outcomes feed opponent sampling."""
        ended = ended[self.learner_team[ended] >= 0]
        if ended.size == 0:
            return
        step = self.step
        won = step.deals["winner"][ended] == self.learner_team[ended]
        outcomes = np.where(step.terminated[ended], won.astype(np.float64), 0.5)
        if self.ranks.distributed:  # merged with the other ranks' at the end of the rollout
            self.pending_outcomes.append(np.stack([self.game_opponent[ended], self.game_partner[ended], outcomes]))
            return
        self.pool.record_outcomes(self.game_opponent[ended], self.game_partner[ended], outcomes)

    def _critic_inputs(self, viewers: np.ndarray | None = None) -> np.ndarray:
        state = self.venv.state
        assert state is not None
        viewers = state.actor if viewers is None else viewers
        if self.config.centralized_critic:
            return self.venv.encoder.encode_full_state(state, viewers)
        return self.venv.encoder.encode(state, viewers)

    @torch.no_grad()
    def collect(self) -> Rollout:
        """Play ``rollout_steps`` steps of every game; returns the filled rollout (rewards not yet complete:
        :meth:`advantages` credits what is still pending)."""
        config, rollout, credit = self.config, self.rollout, self.credit
        rollout.rewards[:] = 0.0
        rollout.dones[:] = False
        rollout.teacher_actions[:] = -1
        teaching = self.teacher is not None and self.teacher_weight() > 0
        credit.start()
        games = np.arange(config.num_envs)
        for t in range(config.rollout_steps):
            step = self.step
            credit.on_step(step, rollout)
            masks = step.action_mask.view(bool)
            controller = self.seat_controller[games, step.actor]
            learner, assisted, assistant = self._deciders(step, controller, masks)
            actions, log_probs, values = self._policy_actions(step, masks, t, learner)
            self._others_act(step, controller, assisted, assistant, actions)
            if teaching:  # the teacher's choice where the policy decides in a taught phase and side
                taught, choices = self.teacher.label(  # type: ignore[union-attr]
                    step.observation, masks, learner, self.opponent_rng
                )
                rollout.teacher_actions[t, taught] = choices
            rollout.observations[t] = step.observation
            rollout.masks[t] = masks
            rollout.actions[t] = actions
            rollout.log_probs[t] = log_probs
            rollout.values[t] = values
            rollout.seats[t] = step.actor
            rollout.learner[t] = learner
            own = games[learner]
            credit.record(t, own, step.actor[own].astype(np.intp))
            self._advance(actions)
        if self.ranks.distributed:
            self._merge_outcomes()
        return rollout

    def _deciders(
        self, step: VectorStep, controller: np.ndarray, masks: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(B,) whether the policy decides each game's move, (B,) whether an assistant bids for it instead, and
        (B,) which assistant (None without assistants)."""
        learner = controller < 0
        assisted = np.zeros(self.config.num_envs, dtype=bool)
        assistant = None
        if self.assistants:  # an assistant bids for the policy's seat: not the policy's decision
            assistant = self.bid_assist[np.arange(self.config.num_envs), step.actor]
            assisted = learner & (assistant >= 0) & masks[:, :TRUMP_OFFSET].any(axis=1)
            learner = learner & ~assisted
        return learner, assisted, assistant

    def _policy_actions(
        self, step: VectorStep, masks: np.ndarray, t: int, learner: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(B,) actions, log-probabilities and values: the acting network's sampled action, its log-probability and
        the value where the policy decides (``learner``), 0 elsewhere (the others' moves replace those actions, and
        GAE and the update read only the policy's decisions); the centralized critic's inputs of every game go to
        the rollout's row ``t``. One forward over the policy's games."""
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
            torch.from_numpy(step.observation[games]), torch.from_numpy(masks[games]), critic_inputs
        )
        chosen = sample_actions(logits, self.sampler)
        actions[games] = chosen.cpu().numpy()
        log_probs[games] = masked_log_probs(logits).gather(1, chosen.unsqueeze(1)).squeeze(1).cpu().numpy()
        values[games] = chosen_values.cpu().numpy()
        return actions, log_probs, values

    def _others_act(
        self,
        step: VectorStep,
        controller: np.ndarray,
        assisted: np.ndarray,
        assistant: np.ndarray | None,
        actions: np.ndarray,
    ) -> None:
        """The opponents' and the bidding assistants' moves into ``actions``, in place of the policy's."""
        opponent_games = np.flatnonzero(controller >= 0)
        if opponent_games.size:
            actions[opponent_games] = self.pool.act(
                controller[opponent_games],
                step.observation[opponent_games],
                step.action_mask[opponent_games],
                self.opponent_rng,
            )
        for index in np.unique(assistant[assisted]) if assisted.any() else ():
            rows = np.flatnonzero(assisted & (assistant == index))
            actions[rows] = self.assistants[index].act(
                step.observation[rows], step.action_mask[rows], self.opponent_rng
            )

    def _advance(self, actions: np.ndarray) -> None:
        """Step every game; count the deals and matches; new opponents for the games whose match ended."""
        self.step = self.venv.step(actions)
        self.game_stats.record(self.step, self.learner_team, self.game_group)
        ended = np.flatnonzero(self.step.terminated | self.step.truncated)
        self._record_outcomes(ended)
        self._assign_opponents(ended)
        self.decisions += self.config.num_envs * self.ranks.world_size  # the job's decisions: every rank steps alike

    def _merge_outcomes(self) -> None:
        """Several ranks: every rank records the rollout's finished matches of all ranks, in rank order, so the
        opponent sampling (pfsp) stays the same on every rank."""
        mine = np.concatenate(self.pending_outcomes, axis=1) if self.pending_outcomes else np.zeros((3, 0))
        self.pending_outcomes = []
        for outcomes in self.exchange.gather(mine):
            opponents, partners = outcomes[0].astype(np.int64), outcomes[1].astype(np.int64)
            self.pool.record_outcomes(opponents, partners, outcomes[2])

    @torch.no_grad()
    def advantages(self, rollout: Rollout) -> np.ndarray:
        """Credit the rewards still pending, bootstrap every open trajectory from its seat's view, run GAE."""
        open_seats = self.credit.finish(self.step, rollout)
        bootstrap = np.zeros(open_seats.shape, dtype=np.float32)
        for seat in range(self.pedro_config.num_players):
            games = np.flatnonzero(open_seats[:, seat])
            if games.size == 0:
                continue
            viewers = np.full(self.config.num_envs, seat, dtype=np.int8)
            inputs = torch.from_numpy(self._critic_inputs(viewers)[games])
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
        return max(1, math.ceil(self.config.total_decisions / (self.config.rollout_decisions * self.ranks.world_size)))

    def learning_rate(self) -> float:
        """The learning rate of the next update (linear decay to 0 over the run with ``anneal_lr``)."""
        if not self.config.anneal_lr:
            return self.config.lr
        return self.config.lr * max(0.0, 1.0 - self.updates / self.num_updates)

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
        )

    def train_step(self) -> dict[str, float]:
        """One rollout and one update; returns the update's statistics."""
        for group in self.optimizer.param_groups:
            group["lr"] = self.learning_rate()
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
            self.pool.add_snapshot(self.network, self.decisions)
            self.next_league += self.config.league_interval
        return stats

    def check_same_parameters(self) -> None:
        """Several ranks: the network's weights are the same bytes on every rank (else the run stops)."""
        digests = self.exchange.gather(parameter_digest(self.network))
        if len(set(digests)) != 1:
            raise RuntimeError(f"the ranks' networks differ after update {self.updates + 1} (digests {digests})")

    def game_scalars(self) -> dict[str, float]:
        """The ``game/`` scalars since the last log, over every rank's games (a collective with several ranks)."""
        if not self.ranks.distributed:
            return self.game_stats.scalars()
        stats = self.game_stats
        names = list(stats.values)
        merged = GameStats(stats.groups, stats.num_teams)
        values = self.exchange.sum_array(np.array([stats.values[name] for name in names], dtype=np.float64))
        merged.values = dict(zip(names, values.tolist()))
        merged.by_group = self.exchange.sum_array(stats.by_group).reshape(stats.by_group.shape)
        return merged.scalars()

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

    # -- evaluation ------------------------------------------------------------------------

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

    def evaluate(
        self,
        pairs: int,
        search_pairs: int,
        partner_pairs: int | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> GauntletResult:
        """The current policy (greedy) through the gauntlet: every ``eval_opponents`` baseline as opponent and
        (``eval_partners``) as partner, and the most recent league snapshots, on the evaluation seeds.

        Baseline opponents get ``pairs`` pairs, partner and league entries ``partner_pairs`` (default ``pairs``;
        0 leaves the partner entries out), search agents ``search_pairs``. Plays in ``eval_workers`` processes
        (0: one per core); ``progress(done, total)`` after each batch of matches. With several ranks each plays
        a share of the matches (with its machine's cores shared among the ranks on it) and every rank gets the
        whole result: the same as one process's, since a match's deals depend only on its pair.
        """
        config = self.config
        network = copy.deepcopy(self.network).to("cpu").eval()
        policies = [("policy", policy_bytes(network, self.pedro_config))]
        league = []
        for name, index in self.league_names():
            agent = self.pool.agent(index)
            assert isinstance(agent, PolicyAgent)
            policies.append((name, policy_bytes(agent.network, self.pedro_config)))
            league.append(name)
        partners = config.eval_partners and partner_pairs != 0
        entries = gauntlet_entries(config.eval_opponents, pairs, search_pairs, partners, league, partner_pairs)
        ranks = self.ranks
        workers = config.eval_workers or max(1, (os.cpu_count() or 1) // ranks.local_world_size)
        result = run_gauntlet(
            "policy",
            entries,
            self.pedro_config,
            config.eval_seed,
            workers,
            policies=policies,
            progress=progress,
            share=(ranks.rank, ranks.world_size),
            gather=self.exchange.gather if ranks.distributed else None,
        )
        self.latest_eval = result.scalars()
        self.latest_headline = gauntlet_headline(result)
        return result

    # -- checkpoints -------------------------------------------------------------------------


def parameter_digest(network: nn.Module) -> int:
    """CRC-32 of the network's parameters' bytes (the same on every rank after every update)."""
    digest = 0
    for tensor in network.state_dict().values():
        digest = zlib.crc32(tensor.detach().cpu().contiguous().numpy().tobytes(), digest)
    return digest
