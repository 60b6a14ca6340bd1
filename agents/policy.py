"""Learned policies as agents: ``ckpt:PATH`` loads the actor of a pedro-train checkpoint.

``ckpt:runs/NAME/latest.pt`` (or ``ckpt:runs/NAME``, which reads its ``latest.pt``) plays the most
probable legal action; ``ckpt:PATH,greedy=false`` samples from the policy instead, drawing from the
``rng`` of :meth:`PolicyAgent.act` so seeded evaluations stay reproducible. The actor runs on CPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from agents.base import Agent
from agents.networks import ActorCritic, NetworkShape
from pedro_env.config import PedroConfig, make_config
from pedro_env.encoding import observation_scale, observation_size


class PolicyAgent(Agent):
    """The actor of an :class:`ActorCritic`: argmax (``greedy``) or a sample of its masked softmax."""

    def __init__(self, config: PedroConfig, network: ActorCritic, greedy: bool = True) -> None:
        super().__init__(config)
        expected = observation_size(config)
        if network.shape.observation_size != expected:
            raise ValueError(
                f"the policy reads observations of {network.shape.observation_size} entries, but games of this config "
                f"have {expected} (the observation size depends on the number of players and the variant)"
            )
        self.network = network
        self.greedy = bool(greedy)

    @torch.no_grad()
    def act(self, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        logits = self.network.logits(torch.from_numpy(np.ascontiguousarray(observations)), _bool_tensor(action_masks))
        if self.greedy:
            return torch.argmax(logits, dim=-1).numpy().astype(np.int64)
        gumbel = -np.log(-np.log(rng.random(logits.shape, dtype=np.float32).clip(1e-20, 1.0 - 1e-7)))
        return np.argmax(logits.numpy() + gumbel, axis=1).astype(np.int64)


def _bool_tensor(masks: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(masks).astype(bool, copy=False))


def network_from_checkpoint(payload: dict[str, Any]) -> ActorCritic:
    """The ActorCritic saved in a checkpoint payload (see :mod:`train.checkpoint`), in eval mode on CPU."""
    shape = NetworkShape.from_dict(payload["network"])
    rules = make_config(**payload["config"].get("env", {}))
    network = ActorCritic(shape, observation_scale(rules))
    network.load_state_dict(payload["model"])
    network.eval()
    return network


def load_policy_agent(path: str, config: PedroConfig, greedy: bool = True) -> PolicyAgent:
    """``ckpt:PATH`` -> a PolicyAgent; raises train.checkpoint.CheckpointError for a bad file."""
    from train.checkpoint import CheckpointError, load_checkpoint

    payload = load_checkpoint(path)
    try:
        network = network_from_checkpoint(payload)
    except (KeyError, TypeError, RuntimeError, ValueError) as error:
        raise CheckpointError(f"checkpoint {path} holds a network that cannot be rebuilt: {error}") from None
    agent = PolicyAgent(config, network, greedy=greedy)
    return agent
