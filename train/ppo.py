"""Self-play PPO with action masking: one shared actor-critic plays every seat of ``num_envs`` games.

Reads top to bottom:

1. :class:`Rollout` holds ``rollout_steps`` environment steps of every game, one decision per
   (step, game); ``learner[t, b]`` says whether the policy made it (the other team of a game against
   an opponent is played by the opponent and is not trained on).
2. :class:`SeatCredit` gives every reward to the decision of the seat that earned it. The batched
   env reports ``rewards[b, s]`` as seat ``s``'s reward since its own last decision; it reaches the
   learner when ``s`` acts again (credited to its previous decision) or when the episode ends
   (credited to every seat's last decision, which closes that seat's trajectory). A reward is never
   paired with another seat's observation.
3. :func:`seat_advantages` runs GAE over each seat's own sequence of decisions, a backward scan
   with one carry per (game, seat). At the end of a rollout each seat's last decision is bootstrapped
   with the value of the current position seen from that seat. A truncated match (``max_deals``)
   ends the trajectory like a finished one.
4. :func:`ppo_update` is CleanRL's clipped PPO on the learner's decisions, with the masks stored in
   the rollout reused for the new logits and the entropy taken over legal actions only.
5. :class:`Trainer` wires the env, the network, the opponents (:mod:`train.league`), evaluation with
   the harness, TensorBoard and checkpoints; its whole state round-trips through
   :meth:`Trainer.state_dict`, so a resumed run continues exactly.
"""

from __future__ import annotations

import copy
import math
import os
import signal
import zlib
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import torch
from torch import nn

from agents import PRETRAINED_PATH, make_agent
from agents.checkpoint import CheckpointError, load_checkpoint, pack_arrays, unpack_arrays
from agents.networks import ActorCritic, NetworkShape, masked_entropy, masked_log_probs, sample_actions
from agents.policy import PolicyAgent, check_layout, observation_layout, policy_bytes
from arena.gauntlet import GauntletResult, entry_rate, gauntlet_entries, run_gauntlet
from pedro_env.actions import NUM_ACTIONS, TRUMP_OFFSET
from pedro_env.config import PedroConfig
from pedro_env.observation_layout import full_state_size, observation_scale, observation_size
from pedro_env.vector import PedroVectorEnv, VectorStep
from train.config import TrainConfig
from train.distributed import (
    SINGLE,
    Exchange,
    LocalBatch,
    Ranks,
    gradient_group,
    minibatch_reducer,
    rank_device,
)
from train.league import OpponentPool
from train.teacher import Teacher

ENV_SEED_STRIDE = 2**32  # training deals come from seed * 2**32 + game, far from the evaluation seeds


# ---------------------------------------------------------------- 1. the rollout


@dataclass
class Rollout:
    """One rollout, every array ``(T, B, ...)``: step ``t`` of game ``b`` is one decision."""

    observations: np.ndarray  # (T, B, D) uint8: the actor's observation
    critic_inputs: np.ndarray | None  # (T, B, C) uint8: the full state (centralized critic), else None
    masks: np.ndarray  # (T, B, A) bool: legal actions
    actions: np.ndarray  # (T, B) int64
    log_probs: np.ndarray  # (T, B) float32: log-probability of the action under the acting policy
    values: np.ndarray  # (T, B) float32: critic value of the decision's position
    seats: np.ndarray  # (T, B) int8: absolute seat that decided
    learner: np.ndarray  # (T, B) bool: the policy decided (False: an opponent's decision, not trained on)
    rewards: np.ndarray  # (T, B) float32: reward credited to the decision (until the seat's next decision)
    dones: np.ndarray  # (T, B) bool: the seat's trajectory ended after this decision (episode over)
    teacher_actions: np.ndarray  # (T, B) int64: the teacher's action for the decision (kickstarting), -1 none

    @classmethod
    def empty(cls, steps: int, games: int, observation_size: int, critic_size: int | None) -> Rollout:
        return cls(
            observations=np.zeros((steps, games, observation_size), dtype=np.uint8),
            critic_inputs=None if critic_size is None else np.zeros((steps, games, critic_size), dtype=np.uint8),
            masks=np.zeros((steps, games, NUM_ACTIONS), dtype=bool),
            actions=np.zeros((steps, games), dtype=np.int64),
            log_probs=np.zeros((steps, games), dtype=np.float32),
            values=np.zeros((steps, games), dtype=np.float32),
            seats=np.zeros((steps, games), dtype=np.int8),
            learner=np.zeros((steps, games), dtype=bool),
            rewards=np.zeros((steps, games), dtype=np.float32),
            dones=np.zeros((steps, games), dtype=bool),
            teacher_actions=np.full((steps, games), -1, dtype=np.int64),
        )


# ---------------------------------------------------------------- 2. rewards to the seat that earned them


class SeatCredit:
    """Tracks each (game, seat)'s latest policy decision in the rollout and credits arriving rewards to it."""

    def __init__(self, num_envs: int, num_players: int) -> None:
        self.last = np.full((num_envs, num_players), -1, dtype=np.int64)  # rollout step of the latest decision, -1 none

    def start(self) -> None:
        """A new rollout: rewards for decisions of the previous one were covered by its bootstrap and are dropped."""
        self.last[:] = -1

    def _close_episodes(self, step: VectorStep, rollout: Rollout) -> np.ndarray:
        ended = step.terminated | step.truncated
        if ended.any():
            games, seats = np.nonzero(ended[:, None] & (self.last >= 0))
            index = self.last[games, seats]
            rollout.rewards[index, games] += step.rewards[games, seats]
            rollout.dones[index, games] = True
            self.last[ended] = -1
        return ended

    def on_step(self, step: VectorStep, rollout: Rollout) -> None:
        """Before ``step``'s actors decide: close ended episodes, credit each actor's reward since its last decision."""
        ended = self._close_episodes(step, rollout)
        games = np.flatnonzero(~ended)
        actors = step.actor[games].astype(np.intp)
        index = self.last[games, actors]
        known = index >= 0
        rollout.rewards[index[known], games[known]] += step.rewards[games[known], actors[known]]

    def record(self, t: int, games: np.ndarray, seats: np.ndarray) -> None:
        """The policy decided at step ``t`` for ``seats`` of ``games``."""
        self.last[games, seats] = t

    def finish(self, step: VectorStep, rollout: Rollout) -> np.ndarray:
        """End of the rollout: credit every seat's rewards so far; returns (B, n) bool, seats to bootstrap."""
        self._close_episodes(step, rollout)
        games, seats = np.nonzero(self.last >= 0)
        rollout.rewards[self.last[games, seats], games] += step.rewards[games, seats]
        return self.last >= 0


# ---------------------------------------------------------------- 3. GAE per seat


def seat_advantages(
    rewards: np.ndarray,
    values: np.ndarray,
    dones: np.ndarray,
    seats: np.ndarray,
    learner: np.ndarray,
    bootstrap: np.ndarray,
    gamma: float,
    gae_lambda: float,
) -> np.ndarray:
    """(T, B) GAE advantages, each decision's "next" being the same seat's next decision in the same game.

    ``bootstrap`` (B, n): value after each seat's last decision of the rollout (ignored where that
    decision is ``done``). Entries where ``learner`` is False are 0 and carry nothing.
    """
    steps, games = rewards.shape
    rows = np.arange(games)
    next_value = bootstrap.astype(np.float32, copy=True)
    next_advantage = np.zeros_like(next_value)
    advantages = np.zeros((steps, games), dtype=np.float32)
    for t in range(steps - 1, -1, -1):
        seat = seats[t].astype(np.intp)
        live = 1.0 - dones[t].astype(np.float32)
        delta = rewards[t] + gamma * next_value[rows, seat] * live - values[t]
        advantage = delta + gamma * gae_lambda * live * next_advantage[rows, seat]
        own = learner[t]
        advantages[t] = np.where(own, advantage, 0.0)
        next_value[rows[own], seat[own]] = values[t][own]
        next_advantage[rows[own], seat[own]] = advantage[own]
    return advantages


# ---------------------------------------------------------------- 4. the PPO update


def ppo_update(
    network: nn.Module,
    optimizer: torch.optim.Optimizer,
    rollout: Rollout,
    advantages: np.ndarray,
    config: TrainConfig,
    rng: np.random.Generator,
    device: torch.device,
    teacher_weight: float = 0.0,
    batch: LocalBatch | None = None,
) -> dict[str, float]:
    """Clipped PPO over the learner's decisions of ``rollout``; returns the last minibatch's losses and KL figures.

    ``network`` is an :class:`ActorCritic` or its DistributedDataParallel wrapper; with several ranks
    ``batch`` is a :class:`train.distributed.RankBatch`, and every minibatch is the union of the ranks'
    parts (each rank splits its own decisions into ``num_minibatches``). With ``teacher_weight`` > 0 the
    loss adds that weight times the cross-entropy of the policy to the teacher's actions
    (``rollout.teacher_actions``, where given): kickstarting.
    """
    batch = batch or LocalBatch()
    chosen = np.flatnonzero(rollout.learner.reshape(-1))
    if batch.total(chosen.size) == 0:
        return {}
    pinned = device.type == "cuda"  # one copy of the rollout to the GPU per update, from pinned memory

    def gather(array: np.ndarray) -> torch.Tensor:
        flat = array.reshape(array.shape[0] * array.shape[1], *array.shape[2:])
        tensor = torch.from_numpy(flat[chosen])
        return tensor.pin_memory().to(device, non_blocking=True) if pinned else tensor.to(device)

    observations = gather(rollout.observations)
    critic_inputs = observations if rollout.critic_inputs is None else gather(rollout.critic_inputs)
    masks, actions = gather(rollout.masks), gather(rollout.actions)
    # bidding decisions (legal actions among pass and the bids) may get a larger entropy bonus: they are one
    # decision in ten, so the mean entropy hardly sees them collapse (and a policy that stops trying bids
    # cannot learn when bidding pays)
    bidding = masks[:, :TRUMP_OFFSET].any(dim=1)
    entropy_weight = torch.where(bidding, config.bid_entropy_boost, 1.0).float()
    teacher_actions = gather(rollout.teacher_actions) if teacher_weight > 0 else None
    old_log_probs, old_values = gather(rollout.log_probs), gather(rollout.values)
    flat_advantages = gather(advantages)
    returns = flat_advantages + old_values

    rows = chosen.size
    # every rank must run as many minibatches (each is a collective); one process keeps at most one per row
    minibatches = config.num_minibatches if batch.world_size > 1 else min(config.num_minibatches, rows)
    local_advantages = advantages.reshape(-1)[chosen]
    local_labelled = None if teacher_weight <= 0 else rollout.teacher_actions.reshape(-1)[chosen] >= 0
    clip_fractions: list[float] = []
    stats: dict[str, float] = {}
    kl_terms = torch.zeros(1)
    teacher_terms: tuple[torch.Tensor, torch.Tensor] | None = None
    for _ in range(config.update_epochs):
        order = rng.permutation(rows)
        parts = np.array_split(order, minibatches)
        batch.plan(parts, local_advantages, local_labelled)  # with several ranks: one exchange for the epoch
        for part_number, part in enumerate(parts):
            index = torch.from_numpy(part).to(device)
            part_rows = batch.rows(part.size, part_number)
            logits, new_value = network(
                observations[index], masks[index], None if rollout.critic_inputs is None else critic_inputs[index]
            )
            log_probs = masked_log_probs(logits)
            new_log_prob = log_probs.gather(1, actions[index].unsqueeze(1)).squeeze(1)
            entropy = masked_entropy(logits, masks[index])

            log_ratio = new_log_prob - old_log_probs[index]
            ratio = log_ratio.exp()
            with torch.no_grad():
                kl_terms = (ratio - 1) - log_ratio
                clip_fractions.append(((ratio - 1.0).abs() > config.clip_coef).float().mean().item())

            policy_loss = _clipped_policy_loss(flat_advantages[index], ratio, config, batch, part_rows, part_number)
            value_loss = _value_loss(new_value, old_values[index], returns[index], config, batch, part_rows)
            entropy_loss = entropy.mean()
            bonus = batch.loss_mean(entropy * entropy_weight[index], part_rows)
            loss = policy_loss - config.ent_coef * bonus + config.vf_coef * value_loss
            teacher_terms = None
            if teacher_actions is not None:
                labelled = batch.labelled(int((teacher_actions[index] >= 0).sum().item()), part_number)
                teacher_loss, teacher_terms = _teacher_loss(log_probs, logits, teacher_actions[index], batch, labelled)
                if teacher_loss is not None:
                    loss = loss + teacher_weight * teacher_loss

            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(network.parameters(), config.max_grad_norm)
            optimizer.step()
            stats = {
                "policy_loss": policy_loss.item(),
                "value_loss": value_loss.item(),
                "entropy": entropy_loss.item(),
            }
            bid_rows = bidding[index]
            if bid_rows.any():
                stats["bid_entropy"] = entropy[bid_rows].mean().item()
        # the last minibatch's KL, over every rank's part of it (so every rank stops at the same epoch)
        if config.target_kl and batch.stat_mean(kl_terms) > config.target_kl:
            break
    approx_kl = batch.stat_mean(kl_terms)
    if teacher_terms is not None:  # the last minibatch's figures, as the losses above
        stats["teacher_loss"] = batch.stat_mean(teacher_terms[0])
        stats["teacher_agreement"] = batch.stat_mean(teacher_terms[1])

    predicted, target = old_values.cpu().numpy(), returns.cpu().numpy()
    target_variance = float(np.var(target))
    explained = math.nan if target_variance == 0 else 1.0 - float(np.var(target - predicted)) / target_variance
    return {
        **stats,
        "approx_kl": float(approx_kl),
        "clipfrac": float(np.mean(clip_fractions)),
        "explained_variance": explained,
        "learner_decisions": float(rows),
    }


def _clipped_policy_loss(
    advantage: torch.Tensor, ratio: torch.Tensor, config: TrainConfig, batch: LocalBatch, rows: int, part: int
) -> torch.Tensor:
    """PPO's clipped surrogate (advantages normalised per minibatch with ``norm_adv``)."""
    if config.norm_adv and rows > 1:
        mean, std = batch.moments(advantage, part)
        advantage = (advantage - mean) / (std + 1e-8)
    surrogate = torch.max(
        -advantage * ratio, -advantage * torch.clamp(ratio, 1 - config.clip_coef, 1 + config.clip_coef)
    )
    return batch.loss_mean(surrogate, rows)


def _value_loss(
    new_value: torch.Tensor,
    old_value: torch.Tensor,
    returns: torch.Tensor,
    config: TrainConfig,
    batch: LocalBatch,
    rows: int,
) -> torch.Tensor:
    """Half the squared error to the returns, clipped around the old value with ``clip_vloss``."""
    if not config.clip_vloss:
        return 0.5 * batch.loss_mean((new_value - returns) ** 2, rows)
    clipped = old_value + torch.clamp(new_value - old_value, -config.clip_coef, config.clip_coef)
    return 0.5 * batch.loss_mean(torch.max((new_value - returns) ** 2, (clipped - returns) ** 2), rows)


def _teacher_loss(
    log_probs: torch.Tensor, logits: torch.Tensor, taught: torch.Tensor, batch: LocalBatch, labelled: int
) -> tuple[torch.Tensor | None, tuple[torch.Tensor, torch.Tensor] | None]:
    """Kickstarting: the cross-entropy from the policy to the teacher's actions (-1: no label) over the
    minibatch's ``labelled`` rows (on every rank), and per labelled row the cross-entropy and whether the
    policy's argmax agrees (for the statistics); ``(None, None)`` when no row has a label."""
    if labelled == 0:
        return None, None
    rows = taught >= 0
    cross_entropy = -log_probs[rows].gather(1, taught[rows].unsqueeze(1))
    loss = batch.loss_mean(cross_entropy, labelled)
    agreement = (logits[rows].argmax(dim=1) == taught[rows]).float()
    return loss, (cross_entropy.detach(), agreement)


# ---------------------------------------------------------------- 5. the trainer


def resolve_device(name: str) -> torch.device:
    """``auto`` -> CUDA when available, else CPU; ``cuda`` without CUDA is an error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was asked for but torch sees no CUDA device: use device=auto or device=cpu")
    return torch.device(name)


def tag_of(spec: str) -> str:
    """An agent spec as a TensorBoard tag piece: ``rule:heuristic`` -> ``rule_heuristic``."""
    return "".join(char if char.isalnum() or char in "-_." else "_" for char in spec)


class GameStats:
    """Counts over the deals and matches seen since the last log (what the ``game/`` scalars report).

    ``game/avg_bid`` and ``game/bid_made_rate`` count every deal (whoever bid); ``game/points_per_deal``
    (the policy's team's score change minus the other team's) and ``game/match_win_rate`` count the
    games against opponents (partner games included), since self-play games are zero-sum by
    construction. The same figures per *group* of games (``groups``: ``self``, ``vs <member>``,
    ``with <partner>``) are logged as ``game/<group>/...`` with the policy's bidding table:
    ``contracts`` (share of the scored deals its team was the maker; not for ``self``, where every
    contract is the policy's), ``bid_made_rate`` and ``avg_bid`` of its contracts; a match undecided
    at ``max_deals`` counts as half a win.
    """

    NAMES = ("deals", "bid_total", "bids_made", "bids", "opponent_deals", "margin", "matches", "wins")
    GROUP_NAMES = ("deals", "contracts", "contracts_made", "contract_bids", "margin", "matches", "wins")

    def __init__(self, groups: list[str] | None = None) -> None:
        self.groups = list(groups or [])
        self.values = dict.fromkeys(self.NAMES, 0.0)
        self.by_group = np.zeros((len(self.groups), len(self.GROUP_NAMES)), dtype=np.float64)

    def record(self, step: VectorStep, learner_team: np.ndarray, group: np.ndarray | None = None) -> None:
        """``learner_team`` (B,): the policy's team in a game against an opponent, -1 in self-play;
        ``group`` (B,): index into ``groups`` of each game."""
        if step.deal_over.any():
            games = np.flatnonzero(step.deal_over & ~step.deals["redeal"])
            bid = step.deals["maker"][games] >= 0
            self.values["deals"] += games.size
            self.values["bids"] += int(bid.sum())
            self.values["bid_total"] += float(step.deals["bid"][games][bid].sum())
            self.values["bids_made"] += int((step.deals["made"][games][bid] == 1).sum())
            against = games[learner_team[games] >= 0]
            if against.size:
                delta = step.deals["delta"][against].astype(np.float64)
                mine = learner_team[against]
                self.values["opponent_deals"] += against.size
                self.values["margin"] += float(
                    (delta[np.arange(against.size), mine] - delta[np.arange(against.size), 1 - mine]).sum()
                )
            if group is not None and games.size:
                self._record_group_deals(step, games, learner_team, group)
        ended = np.flatnonzero((step.terminated | step.truncated) & (learner_team >= 0))
        if ended.size:
            won = step.terminated[ended] & (step.deals["winner"][ended] == learner_team[ended])
            self.values["matches"] += ended.size
            self.values["wins"] += int(won.sum())
            if group is not None:
                outcome = np.where(step.terminated[ended], won.astype(np.float64), 0.5)
                np.add.at(self.by_group[:, self.GROUP_NAMES.index("matches")], group[ended], 1.0)
                np.add.at(self.by_group[:, self.GROUP_NAMES.index("wins")], group[ended], outcome)

    def _record_group_deals(
        self, step: VectorStep, games: np.ndarray, learner_team: np.ndarray, group: np.ndarray
    ) -> None:
        deals = step.deals
        team = learner_team[games]
        maker = deals["maker"][games]
        maker_team = np.where(maker >= 0, maker % 2, -1)
        ours = (maker >= 0) & ((team < 0) | (maker_team == team))  # self-play: every contract is the policy's
        delta = deals["delta"][games].astype(np.float64)
        mine = np.maximum(team, 0)
        margin = np.where(team >= 0, delta[np.arange(games.size), mine] - delta[np.arange(games.size), 1 - mine], 0.0)
        rows = group[games]
        columns = {
            "deals": np.ones(games.size),
            "contracts": ours.astype(np.float64),
            "contracts_made": (ours & (deals["made"][games] == 1)).astype(np.float64),
            "contract_bids": np.where(ours, deals["bid"][games], 0).astype(np.float64),
            "margin": margin,
        }
        for name, values in columns.items():
            np.add.at(self.by_group[:, self.GROUP_NAMES.index(name)], rows, values)

    def scalars(self) -> dict[str, float]:
        values = self.values
        out = {}
        if values["bids"]:
            out["game/avg_bid"] = values["bid_total"] / values["bids"]
            out["game/bid_made_rate"] = values["bids_made"] / values["bids"]
        if values["opponent_deals"]:
            out["game/points_per_deal"] = values["margin"] / values["opponent_deals"]
        if values["matches"]:
            out["game/match_win_rate"] = values["wins"] / values["matches"]
        for name, row in zip(self.groups, self.by_group):
            deals, contracts, made, bid_total, margin, matches, wins = row
            tag = f"game/{tag_of(name.replace(' ', '_'))}"
            if deals and name != "self":  # in self-play every contract is the policy's
                out[f"{tag}/contracts"] = contracts / deals
                out[f"{tag}/points_per_deal"] = margin / deals
            if contracts:
                out[f"{tag}/bid_made_rate"] = made / contracts
                out[f"{tag}/avg_bid"] = bid_total / contracts
            if matches:
                out[f"{tag}/match_win_rate"] = wins / matches
        return out

    def clear(self) -> None:
        self.values = dict.fromkeys(self.NAMES, 0.0)
        self.by_group[:] = 0.0


def initial_state(source: str, shape: NetworkShape, rules: PedroConfig) -> dict[str, torch.Tensor]:
    """The weights ``init_from`` names (a checkpoint, a run directory or ``pretrained``), checked against the
    network and observation layout of this run; raises CheckpointError saying what does not fit."""
    path = PRETRAINED_PATH if source == "pretrained" else source
    payload = load_checkpoint(path)
    try:
        check_layout(payload.get("observation_layout"), rules, f"init_from {source}")
    except ValueError as error:
        raise CheckpointError(str(error)) from None
    try:
        saved = NetworkShape.from_dict(payload["network"])
    except (KeyError, TypeError, ValueError) as error:
        raise CheckpointError(f"init_from {source} holds a network that cannot be rebuilt: {error}") from None
    if saved != shape:
        differences = ", ".join(
            f"{item.name} {getattr(saved, item.name)!r} (this config: {getattr(shape, item.name)!r})"
            for item in fields(NetworkShape)
            if getattr(saved, item.name) != getattr(shape, item.name)
        )
        raise CheckpointError(f"init_from {source} holds another network: {differences}")
    return payload["model"]


class Trainer:
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
        if config.torch_threads:
            torch.set_num_threads(config.torch_threads)
        torch.manual_seed(config.seed)  # the network's initial weights (DistributedDataParallel also sends rank 0's)
        self.venv = PedroVectorEnv(config.num_envs, self.pedro_config, reuse_outputs=True)  # steps are read at once
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
            self.network.load_state_dict(initial_state(config.init_from, self.shape, self.pedro_config))
        self.network = self.network.to(self.device)
        # the games are played on the CPU: on a GPU the network learns, and a CPU copy acts (weights move once
        # per update, the rollout once to the GPU), instead of a round trip to the GPU at every step
        self.acting_network = self.network if self.device.type == "cpu" else copy.deepcopy(self.network).to("cpu")
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
        # each rank its own streams; rank 0 (the only one of a plain run) keeps the seeds of a one-process run
        rank_key = [ranks.rank] if ranks.rank else []
        self.rng = np.random.default_rng([config.seed, 0, *rank_key])  # opponent assignment, minibatch order
        self.opponent_rng = np.random.default_rng([config.seed, 1, *rank_key])  # the opponents' own choices
        self.sampler = torch.Generator(device="cpu")  # the games are stepped on the CPU, so their policy runs there
        rank_seed = int(np.random.SeedSequence([config.seed, 2, ranks.rank]).generate_state(1)[0])
        self.sampler.manual_seed(rank_seed if ranks.rank else config.seed)
        self.pool = OpponentPool(
            self.pedro_config,
            config.baseline_opponents,
            config.league_size,
            self.shape,
            self.scale,
            sampling=config.opponent_sampling,
            pfsp_exponent=config.pfsp_exponent,
            pfsp_floor=config.pfsp_floor,
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
        self.game_stats = GameStats(self.stat_groups)
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
        ``partner_opponents: baselines``, a baseline; the rest is self-play. Members and partners
        are drawn by ``opponent_sampling`` (:mod:`train.league`).
        """
        if games.size == 0:
            return
        config, count, pool = self.config, games.size, self.pool
        draw = self.rng.random(count)
        teams = self.rng.integers(0, 2, size=count)
        partner_position = self.rng.integers(0, 2, size=count)
        against = (draw < config.opponent_share + config.partner_share) & (len(pool) > 0)
        partnered = against & (draw >= config.opponent_share) & (len(pool.baselines) > 0)
        opponents = pool.sample_opponents(count, self.rng)
        rows = np.flatnonzero(partnered)
        if config.partner_opponents == "baselines" and rows.size:
            opponents[rows] = pool.sample_opponents(rows.size, self.rng, baselines_only=True)
        partners = pool.sample_partners(count, self.rng)
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
            team = np.where(against, teams, self.rng.integers(0, 2, size=count))
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
            learner = controller < 0
            assisted = np.zeros(config.num_envs, dtype=bool)
            if self.assistants:  # an assistant bids for the policy's seat: not the policy's decision
                assistant = self.bid_assist[games, step.actor]
                assisted = learner & (assistant >= 0) & masks[:, :TRUMP_OFFSET].any(axis=1)
                learner = learner & ~assisted

            observations = torch.from_numpy(step.observation)
            critic_inputs = None
            if config.centralized_critic:
                critic_inputs = self._critic_inputs()
                rollout.critic_inputs[t] = critic_inputs  # type: ignore[index]
                critic_inputs = torch.from_numpy(critic_inputs)
            logits, values = self.acting_network.logits_and_value(observations, torch.from_numpy(masks), critic_inputs)
            actions_t = sample_actions(logits, self.sampler)
            log_probs = masked_log_probs(logits).gather(1, actions_t.unsqueeze(1)).squeeze(1)
            actions = actions_t.cpu().numpy()
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

            if teaching:  # the teacher's choice where the policy decides in a taught phase and side
                taught, choices = self.teacher.label(  # type: ignore[union-attr]
                    step.observation, masks, learner, self.opponent_rng
                )
                rollout.teacher_actions[t, taught] = choices
            rollout.observations[t] = step.observation
            rollout.masks[t] = masks
            rollout.actions[t] = actions
            rollout.log_probs[t] = log_probs.cpu().numpy()
            rollout.values[t] = values.cpu().numpy()
            rollout.seats[t] = step.actor
            rollout.learner[t] = learner
            own = games[learner]
            credit.record(t, own, step.actor[own].astype(np.intp))

            self.step = self.venv.step(actions)
            self.game_stats.record(self.step, self.learner_team, self.game_group)
            ended = np.flatnonzero(self.step.terminated | self.step.truncated)
            self._record_outcomes(ended)
            self._assign_opponents(ended)
            self.decisions += config.num_envs * self.ranks.world_size  # the job's decisions: every rank steps alike
        if self.ranks.distributed:
            self._merge_outcomes()
        return rollout

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

    def train_step(self) -> dict[str, float]:
        """One rollout and one update; returns the update's statistics."""
        for group in self.optimizer.param_groups:
            group["lr"] = self.learning_rate()
        teacher_weight = self.teacher_weight()
        rollout = self.collect()
        advantages = self.advantages(rollout)
        stats = ppo_update(
            self.learner_network,
            self.optimizer,
            rollout,
            advantages,
            self.config,
            self.rng,
            self.device,
            teacher_weight,
            self.batch,
        )
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
        merged = GameStats(stats.groups)
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

    def rank_state(self) -> dict[str, Any]:
        """What is this rank's own: its games, its random streams, its game statistics since the last log."""
        step = self.step
        step_arrays = {
            "actor": step.actor,
            "observation": step.observation,
            "action_mask": step.action_mask,
            "rewards": step.rewards,
        }
        return {
            "rng": {
                "trainer": self.rng.bit_generator.state,
                "opponents": self.opponent_rng.bit_generator.state,
                "sampler": self.sampler.get_state(),
            },
            "env": pack_arrays(self.venv.snapshot()),
            "step": pack_arrays(step_arrays),
            "games": pack_arrays(
                {
                    "seat_controller": self.seat_controller,
                    "learner_team": self.learner_team,
                    "game_opponent": self.game_opponent,
                    "game_partner": self.game_partner,
                    "game_group": self.game_group,
                    "bid_assist": self.bid_assist,
                }
            ),
            "game_stats": dict(self.game_stats.values),
        }

    def state_dict(self) -> dict[str, Any]:
        """Everything a resumed run needs, as tensors and plain values (see agents.checkpoint).

        The shared parts (network, optimizer, counters, league) and rank 0's own (:meth:`rank_state`) at the
        top; with several ranks ``world_size`` and ``rank_states``, the other ranks' own parts in rank order.
        A collective with several ranks: every rank calls it, rank 0 writes the result.
        """
        own = self.rank_state()
        others = self.exchange.gather(own)[1:] if self.ranks.distributed else []
        payload = {
            "config": self.config.to_dict(),
            "network": self.shape.to_dict(),
            "model": self.network.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "counters": {
                "decisions": self.decisions,
                "updates": self.updates,
                "elapsed_s": self.elapsed_s,
                "next_league": self.next_league,
                "next_eval": self.next_eval if math.isfinite(self.next_eval) else -1,
                "next_checkpoint": self.next_checkpoint,
            },
            **own,
            "league": self.pool.state_dict(),
            "latest_eval": self.latest_eval,
            "latest_headline": self.latest_headline,
            "observation_layout": observation_layout(self.pedro_config),
        }
        if self.ranks.distributed:
            payload["world_size"] = self.ranks.world_size
            payload["rank_states"] = others
        return payload

    def load_state_dict(self, payload: dict[str, Any]) -> None:
        """Continue from :meth:`state_dict` (a checkpoint of a run with the same structure and world size)."""
        world_size = int(payload.get("world_size", 1))
        if world_size != self.ranks.world_size:
            raise ValueError(checkpoint_world_size_error(world_size, self.ranks.world_size))
        self.network.load_state_dict(payload["model"])
        if self.acting_network is not self.network:
            self.acting_network.load_state_dict(payload["model"])
        self.optimizer.load_state_dict(payload["optimizer"])
        counters = payload["counters"]
        self.decisions = int(counters["decisions"])
        self.updates = int(counters["updates"])
        self.elapsed_s = float(counters["elapsed_s"])
        self.next_league = int(counters["next_league"])
        self.next_eval = math.inf if int(counters["next_eval"]) < 0 else int(counters["next_eval"])
        if not self.config.eval_interval:
            self.next_eval = math.inf
        self.next_checkpoint = int(counters["next_checkpoint"])
        self.pool.load_state_dict(payload["league"])
        self.latest_eval = _latest_eval(payload["latest_eval"])
        self.latest_headline = str(payload.get("latest_headline", ""))
        self.load_rank_state(payload if self.ranks.rank == 0 else payload["rank_states"][self.ranks.rank - 1])

    def load_rank_state(self, payload: dict[str, Any]) -> None:
        """This rank's own part of a checkpoint (:meth:`rank_state`)."""
        self.rng.bit_generator.state = payload["rng"]["trainer"]
        self.opponent_rng.bit_generator.state = payload["rng"]["opponents"]
        self.sampler.set_state(payload["rng"]["sampler"])
        self.step = self.venv.restore(unpack_arrays(payload["env"]))
        saved_step = unpack_arrays(payload["step"])
        if not (
            np.array_equal(saved_step["actor"], self.step.actor)
            and np.array_equal(saved_step["observation"], self.step.observation)
        ):
            raise ValueError("the checkpoint's environment does not reproduce its saved observations")
        self.step.rewards[:] = saved_step["rewards"]
        games = unpack_arrays(payload["games"])
        self.seat_controller[:] = games["seat_controller"]
        self.learner_team[:] = games["learner_team"]
        for name in ("game_opponent", "game_partner", "game_group", "bid_assist"):  # absent in older checkpoints
            if name in games:
                getattr(self, name)[:] = games[name]
        self.game_stats.values = {name: float(value) for name, value in payload["game_stats"].items()}


def _latest_eval(latest: dict[str, Any]) -> dict[str, float]:
    if any(isinstance(values, dict) for values in latest.values()):  # before the gauntlet: {spec: {name: value}}
        latest = {
            f"vs_{tag_of(spec)}/{name}": value for spec, values in latest.items() for name, value in values.items()
        }
    return {key: float(value) for key, value in latest.items()}


def checkpoint_world_size_error(saved: int, now: int) -> str:
    """Why a checkpoint of ``saved`` ranks cannot continue with ``now`` ranks (what to run instead)."""
    launch = (
        "pedro-train --resume RUN_DIR"
        if saved == 1
        else f"pedro-train --resume RUN_DIR --nproc {saved} (or torchrun --nproc_per_node {saved} -m train.cli ...)"
    )
    return (
        f"the checkpoint was written by {saved} rank{'s' if saved != 1 else ''} and this run has {now}: a run "
        f"continues exactly only with the ranks that wrote it (each holds its own games); resume it with {launch}"
    )


def parameter_digest(network: nn.Module) -> int:
    """CRC-32 of the network's parameters' bytes (the same on every rank after every update)."""
    digest = 0
    for tensor in network.state_dict().values():
        digest = zlib.crc32(tensor.detach().cpu().contiguous().numpy().tobytes(), digest)
    return digest


def gauntlet_headline(result: GauntletResult) -> str:
    """The worst cases of an evaluation in a few words: ``worst 62% vs rule:cautious, partner 48% with ...``."""
    parts = []
    for title, role in (("worst", "opponent"), ("partner", "partner")):
        found = result.worst(role)
        if found is not None:
            entry, head = found
            parts.append(f"{title} {100 * entry_rate(head):.0f}% {entry.label}")
    return ", ".join(parts)


class StopRequest:
    """Ctrl-C handling: the first SIGINT asks the run to stop at the next update boundary (and checkpoint);
    a second one interrupts at once.

    With ``distributed``, SIGTERM asks the same (torchrun passes a Ctrl-C on to its ranks as SIGINT or
    SIGTERM, and again to a rank that has not ended) and later signals change nothing: the ranks agree
    on the boundary where they stop (:meth:`train.distributed.Exchange.any`) and checkpoint together.
    """

    def __init__(self, distributed: bool = False) -> None:
        self.requested = False
        self.distributed = distributed
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopRequest:
        signals = (signal.SIGINT, signal.SIGTERM) if self.distributed else (signal.SIGINT,)
        for number in signals:
            try:
                self._previous[number] = signal.signal(number, self._handle)
            except ValueError:  # not the main thread: no handler, Ctrl-C behaves as usual
                pass
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        self.requested = True
        if not self.distributed:
            signal.signal(signal.SIGINT, signal.default_int_handler)

    def __exit__(self, *exc: object) -> None:
        for number, previous in self._previous.items():
            if previous is not None:
                signal.signal(number, previous)
        self._previous = {}
