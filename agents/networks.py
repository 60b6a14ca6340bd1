"""The actor-critic network of the learned policy, and the masked action distribution.

Inputs are the uint8 vectors of :mod:`pedro_env.encoding`: the actor reads a seat's observation
``(B, D)``; the critic reads the same observation, or with ``centralized_critic`` the full state
``(B, D + n*52 + 52)`` (:meth:`pedro_env.encoding.ObservationEncoder.encode_full_state`). Both are
scaled into [0, 1] inside the network (``observation_scale``), so callers pass the env's arrays as
they are.

Masking: illegal actions get the logit ``MASKED_LOGIT`` (so ``exp`` is exactly 0 in float32 and no
sample, argmax or probability can reach them) and their terms are left out of the entropy.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

MASKED_LOGIT = -1e9


@dataclass(frozen=True)
class NetworkShape:
    """What a saved network needs to be rebuilt: input sizes, action count, hidden widths."""

    observation_size: int
    critic_input_size: int  # == observation_size without a centralized critic
    num_actions: int
    hidden_sizes: tuple[int, ...]
    shared_trunk: bool = False  # actor and critic share the hidden layers (needs critic_input_size == observation_size)

    def to_dict(self) -> dict[str, object]:
        return {
            "observation_size": self.observation_size,
            "critic_input_size": self.critic_input_size,
            "num_actions": self.num_actions,
            "hidden_sizes": list(self.hidden_sizes),
            "shared_trunk": self.shared_trunk,
        }

    @classmethod
    def from_dict(cls, values: dict[str, object]) -> NetworkShape:
        return cls(
            observation_size=int(values["observation_size"]),  # type: ignore[arg-type]
            critic_input_size=int(values["critic_input_size"]),  # type: ignore[arg-type]
            num_actions=int(values["num_actions"]),  # type: ignore[arg-type]
            hidden_sizes=tuple(int(width) for width in values["hidden_sizes"]),  # type: ignore[attr-defined]
            shared_trunk=bool(values.get("shared_trunk", False)),
        )


def mlp(input_size: int, hidden_sizes: Sequence[int], output_size: int, output_gain: float) -> nn.Sequential:
    """Linear + ReLU layers, orthogonal init (gain sqrt(2) inside, ``output_gain`` on the last layer)."""
    layers: list[nn.Module] = []
    width = input_size
    for hidden in hidden_sizes:
        layers += [_orthogonal(nn.Linear(width, hidden), np.sqrt(2.0)), nn.ReLU()]
        width = hidden
    layers.append(_orthogonal(nn.Linear(width, output_size), output_gain))
    return nn.Sequential(*layers)


def _orthogonal(layer: nn.Linear, gain: float) -> nn.Linear:
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)
    return layer


class ActorCritic(nn.Module):
    """Policy logits ``(B, num_actions)`` from observations; values ``(B,)`` from the critic's input.

    Two layouts: separate actor and critic MLPs (CleanRL's), or with ``shape.shared_trunk`` one stack
    of hidden layers feeding a policy head and a value head (half the compute; the critic then reads
    the observation).
    """

    def __init__(self, shape: NetworkShape, observation_scale: np.ndarray) -> None:
        super().__init__()
        self.shape = shape
        scale = torch.as_tensor(np.asarray(observation_scale, dtype=np.float32))
        if scale.shape != (shape.observation_size,):
            raise ValueError(f"observation_scale has shape {tuple(scale.shape)}, expected ({shape.observation_size},)")
        if shape.shared_trunk and shape.critic_input_size != shape.observation_size:
            raise ValueError("a shared trunk needs the critic to read the observation (no centralized critic)")
        critic_scale = torch.ones(shape.critic_input_size)
        critic_scale[: shape.observation_size] = scale  # the full state starts with the observation; the rest are flags
        self.register_buffer("actor_scale", scale)
        self.register_buffer("critic_scale", critic_scale)
        if shape.shared_trunk:
            trunk = mlp(shape.observation_size, shape.hidden_sizes[:-1], shape.hidden_sizes[-1], np.sqrt(2.0))
            self.trunk = nn.Sequential(*trunk, nn.ReLU())
            self.policy_head = _orthogonal(nn.Linear(shape.hidden_sizes[-1], shape.num_actions), 0.01)
            self.value_head = _orthogonal(nn.Linear(shape.hidden_sizes[-1], 1), 1.0)
        else:
            self.actor = mlp(shape.observation_size, shape.hidden_sizes, shape.num_actions, output_gain=0.01)
            self.critic = mlp(shape.critic_input_size, shape.hidden_sizes, 1, output_gain=1.0)

    def scaled_observations(self, observations: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """(B, D) uint8 observations -> (B, D) ``dtype`` in [0, 1]: the actor's (and a shared trunk's) input."""
        return _scaled(observations, self.actor_scale, dtype)

    def scaled_critic_inputs(self, critic_inputs: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """(B, C) uint8 critic inputs -> (B, C) ``dtype`` in [0, 1]: the critic's input."""
        return _scaled(critic_inputs, self.critic_scale, dtype)

    def _input(self, rows: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        """uint8 ``rows`` scaled (in :func:`_input_dtype`); rows already scaled (floating) as they are."""
        return rows if rows.is_floating_point() else _scaled(rows, scale, _input_dtype(rows, self))

    def logits(self, observations: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
        """(B, D) uint8 observations (or already scaled, floating), (B, A) bool masks -> (B, A) float32 masked
        logits."""
        inputs = self._input(observations, self.actor_scale)
        if self.shape.shared_trunk:
            raw = self.policy_head(self.trunk(inputs))
        else:
            raw = self.actor(inputs)
        return raw.float().masked_fill(~masks, MASKED_LOGIT)

    def value(self, critic_inputs: torch.Tensor) -> torch.Tensor:
        """(B, C) uint8 critic inputs (or already scaled, floating) -> (B,) float32 values."""
        inputs = self._input(critic_inputs, self.critic_scale)
        if self.shape.shared_trunk:
            raw = self.value_head(self.trunk(inputs))
        else:
            raw = self.critic(inputs)
        return raw.float().squeeze(-1)

    def logits_and_value(
        self, observations: torch.Tensor, masks: torch.Tensor, critic_inputs: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Both at once (one pass through a shared trunk); ``critic_inputs`` default to the observations."""
        if self.shape.shared_trunk:
            hidden = self.trunk(self._input(observations, self.actor_scale))
            logits = self.policy_head(hidden).float().masked_fill(~masks, MASKED_LOGIT)
            return logits, self.value_head(hidden).float().squeeze(-1)
        return self.logits(observations, masks), self.value(observations if critic_inputs is None else critic_inputs)

    def forward(
        self, observations: torch.Tensor, masks: torch.Tensor, critic_inputs: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`logits_and_value` (the call DistributedDataParallel wraps)."""
        return self.logits_and_value(observations, masks, critic_inputs)


def _scaled(rows: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """uint8 ``rows`` times the per-column ``scale``, computed in ``dtype`` (bfloat16 holds every byte exactly)."""
    if dtype == torch.float32:
        return rows.float() * scale.float()
    return rows.to(dtype).mul_(scale.to(dtype))


def _input_dtype(rows: torch.Tensor, network: nn.Module) -> torch.dtype:
    """Inputs are scaled in the dtype of an active autocast, else in the network's own (a bfloat16 copy's)."""
    device_type = rows.device.type
    if torch.is_autocast_enabled(device_type):
        return torch.get_autocast_dtype(device_type)
    return network.actor_scale.dtype


def autocast_precision(device_type: str, dtype: torch.dtype) -> contextlib.AbstractContextManager:
    """A context in which an :class:`ActorCritic` computes in ``dtype`` on ``device_type`` (a bfloat16 autocast:
    weights, optimizer and outputs stay float32; float32: no change)."""
    return contextlib.nullcontext() if dtype == torch.float32 else torch.autocast(device_type, dtype=dtype)


def logit_layers(network: ActorCritic) -> list[nn.Linear]:
    """The linear layers from the observation to the logits, in order (a ReLU after each but the last)."""
    if network.shape.shared_trunk:
        return [*(layer for layer in network.trunk if isinstance(layer, nn.Linear)), network.policy_head]
    return [layer for layer in network.actor if isinstance(layer, nn.Linear)]


class StackedLogits:
    """The masked logits of S networks of one shape in one batched pass: each layer's weights stacked (S, in, out),
    so S frozen policies (a league) cost one matrix product per layer instead of S."""

    def __init__(self, networks: Sequence[ActorCritic], dtype: torch.dtype = torch.float32) -> None:
        """``dtype``: the arithmetic (bfloat16 as training's ``precision``; the logits come out float32)."""
        layers = [logit_layers(network) for network in networks]
        count = len(layers[0])
        self.weights = [torch.stack([own[i].weight.detach().T for own in layers]).to(dtype) for i in range(count)]
        self.biases = [torch.stack([own[i].bias.detach()[None, :] for own in layers]).to(dtype) for i in range(count)]
        self.dtype = dtype
        self.scale = torch.stack([network.actor_scale for network in networks])[:, None, :]  # (S, 1, D)

    @torch.no_grad()
    def __call__(
        self, observations: torch.Tensor, masks: torch.Tensor, networks: torch.Tensor | None = None
    ) -> torch.Tensor:
        """(S, R, D) uint8 observations, (S, R, A) bool masks (row r of network s) -> (S, R, A) float32 logits.

        ``networks`` (S,) int64: which of the stacked networks the S slices are for (default: all, in order)."""
        pick = (lambda stack: stack) if networks is None else (lambda stack: stack.index_select(0, networks))
        hidden = _scaled(observations, pick(self.scale), self.dtype)
        for index, (weight, bias) in enumerate(zip(self.weights, self.biases)):
            hidden = torch.baddbmm(pick(bias), hidden, pick(weight))
            if index < len(self.weights) - 1:
                hidden = torch.relu(hidden)
        return hidden.float().masked_fill(~masks, MASKED_LOGIT)


def masked_log_probs(logits: torch.Tensor) -> torch.Tensor:
    """(B, A) log-probabilities of masked logits (masked entries come out at about -1e9)."""
    return torch.log_softmax(logits, dim=-1)


def masked_entropy(logits: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """(B,) entropy over the legal actions only (masked entries contribute exactly 0)."""
    log_probs = masked_log_probs(logits)
    # softmax, not exp(log_probs): exp of the masked entries' -1e9 takes a slow path (13x on a CPU)
    terms = torch.where(masks, torch.softmax(logits, dim=-1) * log_probs, torch.zeros_like(log_probs))
    return -terms.sum(dim=-1)


def gumbel_max_actions(logits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(B,) int64 actions drawn from the masked softmax of (B, A) float32 ``logits`` with numpy's ``rng`` (Gumbel-max
    over float32 noise; masked entries are never drawn): how a frozen policy samples."""
    gumbel = -np.log(-np.log(rng.random(logits.shape, dtype=np.float32).clip(1e-20, 1.0 - 1e-7)))
    return np.argmax(logits + gumbel, axis=1).astype(np.int64)


def sample_actions(logits: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """(B,) int64 actions drawn from the masked softmax (Gumbel-max; masked entries are never drawn)."""
    uniform = torch.rand(logits.shape, generator=generator, device=logits.device)
    gumbel = -torch.log(-torch.log(uniform.clamp_(1e-20, 1.0 - 1e-7)))
    return torch.argmax(logits + gumbel, dim=-1)
