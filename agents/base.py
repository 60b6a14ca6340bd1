"""The one agent protocol: a batched ``act`` over observations and legal-action masks.

Every agent, random, rule-based, search or learned, answers the same call::

    actions = agent.act(observations, action_masks, rng)   # (B, D) uint8, (B, 133) int8/bool -> (B,) int64

for a batch of games in which the agent is to act (a single game is B = 1). Observations are the
seat-relative vectors of :mod:`pedro_env.encoding`; agents that reason about the cards seen decode
them with :func:`pedro_env.view.decode_observations` (the public-information view), so no agent can
see hidden state. ``rng`` is a ``numpy.random.Generator`` owned by the caller: an agent draws all its
randomness from it, so a seeded evaluation is reproducible.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from pedro_env.actions import uniform_legal_actions
from pedro_env.config import PedroConfig


class Agent(ABC):
    """Base class of every agent. ``name`` is the spec string that builds it (see :func:`agents.make_agent`)."""

    name: str = "agent"

    def __init__(self, config: PedroConfig) -> None:
        self.config = config

    @abstractmethod
    def act(self, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """(B, D) uint8 observations and (B, 133) masks of the games where this agent acts -> (B,) int64 actions."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class RandomAgent(Agent):
    """Uniformly random legal actions."""

    name = "random"

    def act(self, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return uniform_legal_actions(action_masks, rng)
