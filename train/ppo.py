"""Self-play PPO with action masking, the algorithm alone: one shared actor-critic plays every seat.

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

:class:`train.trainer.Trainer` wires the env, the network, the opponents, the teacher and
evaluation around these; :mod:`train.run` is the run loop (TensorBoard, checkpoints, Ctrl-C).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from agents.networks import ActorCritic, autocast_precision, masked_entropy, masked_log_probs
from pedro_env.actions import NUM_ACTIONS, TRUMP_OFFSET
from pedro_env.vector import VectorStep
from train.config import TrainConfig
from train.distributed import (
    LocalBatch,
)

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
    precision: torch.dtype = torch.float32,
    teacher_scales: np.ndarray | None = None,
) -> dict[str, float]:
    """Clipped PPO over the learner's decisions of ``rollout``; returns the last minibatch's losses and KL figures.

    ``network`` is an :class:`ActorCritic` or its DistributedDataParallel wrapper; with several ranks
    ``batch`` is a :class:`train.distributed.RankBatch`, and every minibatch is the union of the ranks'
    parts (each rank splits its own decisions into ``num_minibatches``). With ``teacher_weight`` > 0 the
    loss adds that weight times the cross-entropy of the policy to the teacher's actions
    (``rollout.teacher_actions``, where given): kickstarting; ``teacher_scales`` (B,) multiplies it for each game's
    rows (a ``rules_mix`` entry's ``teacher_scale``; None: 1 everywhere). ``precision``: the network's arithmetic
    (bfloat16: an autocast around the forward; the losses and the optimizer stay float32).

    One function (a third of it the signature and this docstring): the epochs, the minibatches and the
    early stop on the KL read as one loop; a minibatch's step is :func:`_minibatch_step`.
    """
    batch = batch or LocalBatch()
    chosen = np.flatnonzero(rollout.learner.reshape(-1))
    if batch.total(chosen.size) == 0:
        return {}
    inputs_of: ActorCritic = getattr(network, "module", network)  # a DistributedDataParallel wrapper's own network
    data = UpdateData.gather(
        rollout, advantages, chosen, device, config, teacher_weight, inputs_of, precision, teacher_scales
    )
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
            stats, kl_terms, clip_fraction, teacher_terms = _minibatch_step(
                network,
                optimizer,
                data,
                torch.from_numpy(part).to(device),
                config,
                batch,
                part_number,
                teacher_weight,
                precision,
            )
            clip_fractions.append(clip_fraction)
        # the last minibatch's KL, over every rank's part of it (so every rank stops at the same epoch)
        if config.target_kl and batch.stat_mean(kl_terms) > config.target_kl:
            break
    approx_kl = batch.stat_mean(kl_terms)
    if teacher_terms is not None:  # the last minibatch's figures, as the losses above
        stats["teacher_loss"] = batch.stat_mean(teacher_terms[0])
        stats["teacher_agreement"] = batch.stat_mean(teacher_terms[1])

    predicted, target = data.old_values.cpu().numpy(), data.returns.cpu().numpy()
    target_variance = float(np.var(target))
    explained = math.nan if target_variance == 0 else 1.0 - float(np.var(target - predicted)) / target_variance
    return {
        **stats,
        "approx_kl": float(approx_kl),
        "clipfrac": float(np.mean(clip_fractions)),
        "explained_variance": explained,
        "learner_decisions": float(rows),
    }


@dataclass
class UpdateData:
    """The learner's decisions of a rollout as tensors on the learning device, one row each."""

    observations: torch.Tensor  # scaled, in the update's precision (each row is read once per epoch)
    critic_inputs: torch.Tensor | None  # the same; None: the critic reads the observations
    masks: torch.Tensor
    actions: torch.Tensor
    bidding: torch.Tensor  # the decision is a bid (its legal actions lie among pass and the bids)
    entropy_weight: torch.Tensor  # the entropy bonus's weight of each row (bid_entropy_boost on bids)
    teacher_actions: torch.Tensor | None  # the teacher's action (-1: none), when the teacher's loss applies
    teacher_scales: torch.Tensor | None  # float32: the teacher's weight of the row over the run's; None: 1
    old_log_probs: torch.Tensor
    old_values: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor

    @classmethod
    def gather(
        cls,
        rollout: Rollout,
        advantages: np.ndarray,
        chosen: np.ndarray,
        device: torch.device,
        config: TrainConfig,
        teacher_weight: float,
        network: ActorCritic,
        precision: torch.dtype,
        teacher_scales: np.ndarray | None = None,
    ) -> UpdateData:
        """Rows ``chosen`` of the flattened (T * B) rollout, copied to ``device`` once (from pinned memory on a GPU);
        the inputs scaled by ``network`` once for every epoch, in ``precision`` (as the acting network scales them
        inside its autocast)."""
        pinned = device.type == "cuda"

        def gather(array: np.ndarray) -> torch.Tensor:
            flat = array.reshape(array.shape[0] * array.shape[1], *array.shape[2:])
            tensor = torch.from_numpy(flat[chosen])
            return tensor.pin_memory().to(device, non_blocking=True) if pinned else tensor.to(device)

        observations = network.scaled_observations(gather(rollout.observations), precision)
        critic_inputs = None
        if rollout.critic_inputs is not None:
            critic_inputs = network.scaled_critic_inputs(gather(rollout.critic_inputs), precision)
        masks, actions = gather(rollout.masks), gather(rollout.actions)
        # bidding decisions (legal actions among pass and the bids) may get a larger entropy bonus: they are one
        # decision in ten, so the mean entropy hardly sees them collapse (and a policy that stops trying bids
        # cannot learn when bidding pays)
        bidding = masks[:, :TRUMP_OFFSET].any(dim=1)
        entropy_weight = torch.where(bidding, config.bid_entropy_boost, 1.0).float()
        teacher_actions = gather(rollout.teacher_actions) if teacher_weight > 0 else None
        scales = None
        if teacher_actions is not None and teacher_scales is not None:  # a row's game: its column of the (T, B)
            games = rollout.teacher_actions.shape[1]
            scales = torch.from_numpy(np.asarray(teacher_scales, dtype=np.float32)[chosen % games]).to(device)
        old_log_probs, old_values = gather(rollout.log_probs), gather(rollout.values)
        flat_advantages = gather(advantages)
        return cls(
            observations,
            critic_inputs,
            masks,
            actions,
            bidding,
            entropy_weight,
            teacher_actions,
            scales,
            old_log_probs,
            old_values,
            flat_advantages,
            flat_advantages + old_values,
        )


def _minibatch_step(
    network: nn.Module,
    optimizer: torch.optim.Optimizer,
    data: UpdateData,
    index: torch.Tensor,
    config: TrainConfig,
    batch: LocalBatch,
    part_number: int,
    teacher_weight: float,
    precision: torch.dtype,
) -> tuple[dict[str, float], torch.Tensor, float, tuple[torch.Tensor, torch.Tensor] | None]:
    """One gradient step on the rows ``index``: (its losses, its KL terms, its clip fraction, the teacher's loss and
    agreement terms or None)."""
    part_rows = batch.rows(index.numel(), part_number)
    with autocast_precision(data.observations.device.type, precision):
        logits, new_value = network(
            data.observations[index],
            data.masks[index],
            None if data.critic_inputs is None else data.critic_inputs[index],
        )
    log_probs = masked_log_probs(logits)
    new_log_prob = log_probs.gather(1, data.actions[index].unsqueeze(1)).squeeze(1)
    entropy = masked_entropy(logits, data.masks[index])

    log_ratio = new_log_prob - data.old_log_probs[index]
    ratio = log_ratio.exp()
    with torch.no_grad():
        kl_terms = (ratio - 1) - log_ratio
        clip_fraction = ((ratio - 1.0).abs() > config.clip_coef).float().mean().item()

    policy_loss = _clipped_policy_loss(data.advantages[index], ratio, config, batch, part_rows, part_number)
    value_loss = _value_loss(new_value, data.old_values[index], data.returns[index], config, batch, part_rows)
    entropy_loss = entropy.mean()
    bonus = batch.loss_mean(entropy * data.entropy_weight[index], part_rows)
    loss = policy_loss - config.ent_coef * bonus + config.vf_coef * value_loss
    teacher_terms = None
    if data.teacher_actions is not None:
        labelled = batch.labelled(int((data.teacher_actions[index] >= 0).sum().item()), part_number)
        scales = None if data.teacher_scales is None else data.teacher_scales[index]
        teacher_loss, teacher_terms = _teacher_loss(
            log_probs, logits, data.teacher_actions[index], batch, labelled, scales
        )
        if teacher_loss is not None:
            loss = loss + teacher_weight * teacher_loss

    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(network.parameters(), config.max_grad_norm)
    optimizer.step()
    stats = {"policy_loss": policy_loss.item(), "value_loss": value_loss.item(), "entropy": entropy_loss.item()}
    bid_rows = data.bidding[index]
    if bid_rows.any():
        stats["bid_entropy"] = entropy[bid_rows].mean().item()
    return stats, kl_terms, clip_fraction, teacher_terms


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
    log_probs: torch.Tensor,
    logits: torch.Tensor,
    taught: torch.Tensor,
    batch: LocalBatch,
    labelled: int,
    scales: torch.Tensor | None = None,
) -> tuple[torch.Tensor | None, tuple[torch.Tensor, torch.Tensor] | None]:
    """Kickstarting: the cross-entropy from the policy to the teacher's actions (-1: no label) over the
    minibatch's ``labelled`` rows (on every rank), each row's times its ``scales`` where given, and per labelled row
    the cross-entropy and whether the policy's argmax agrees (for the statistics); ``(None, None)`` when no row has
    a label."""
    if labelled == 0:
        return None, None
    rows = taught >= 0
    cross_entropy = -log_probs[rows].gather(1, taught[rows].unsqueeze(1))
    weighted = cross_entropy if scales is None else cross_entropy * scales[rows].unsqueeze(1)
    loss = batch.loss_mean(weighted, labelled)
    agreement = (logits[rows].argmax(dim=1) == taught[rows]).float()
    return loss, (cross_entropy.detach(), agreement)


# ---------------------------------------------------------------- 5. the trainer
