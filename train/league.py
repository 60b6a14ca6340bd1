"""The opponents of the games not in self-play: rule-based (or any) baseline agents and a league of frozen policies.

Pool indices: ``0 .. len(baselines) - 1`` are the baselines in config order, then one index per
league snapshot. The league is a ring of ``league_size`` snapshots of the policy's weights: a new
snapshot replaces the oldest in place, so a game against that index goes on against the newer
policy. League policies sample from their softmax (a frozen stochastic policy, as in self-play).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from agents import Agent, make_agent
from agents.networks import ActorCritic, NetworkShape
from agents.policy import PolicyAgent
from pedro_env.config import PedroConfig


class OpponentPool:
    """Baseline agents plus a ring of frozen snapshots of the policy."""

    def __init__(
        self,
        config: PedroConfig,
        baseline_specs: tuple[str, ...],
        league_size: int,
        shape: NetworkShape,
        observation_scale: np.ndarray,
    ) -> None:
        self.config = config
        self.baseline_specs = tuple(baseline_specs)
        self.baselines: list[Agent] = [make_agent(spec, config) for spec in baseline_specs]
        self.league_size = int(league_size)
        self.shape = shape
        self.observation_scale = observation_scale
        self.league: list[PolicyAgent] = []
        self.league_decisions: list[int] = []  # decisions of training when each snapshot was taken
        self.next_replace = 0  # ring position the next snapshot overwrites once the league is full

    def __len__(self) -> int:
        return len(self.baselines) + len(self.league)

    def agent(self, index: int) -> Agent:
        if index < len(self.baselines):
            return self.baselines[index]
        return self.league[index - len(self.baselines)]

    def label(self, index: int) -> str:
        if index < len(self.baselines):
            return self.baseline_specs[index]
        return f"league@{self.league_decisions[index - len(self.baselines)]}"

    def add_snapshot(self, network: ActorCritic, decisions: int) -> None:
        """Freeze a copy of ``network``'s weights into the league (no-op with ``league_size`` 0)."""
        if self.league_size == 0:
            return
        weights = {name: tensor.detach().to("cpu", copy=True) for name, tensor in network.state_dict().items()}
        if len(self.league) < self.league_size:
            self.league.append(self._frozen_agent(weights))
            self.league_decisions.append(int(decisions))
            return
        self.league[self.next_replace].network.load_state_dict(weights)
        self.league_decisions[self.next_replace] = int(decisions)
        self.next_replace = (self.next_replace + 1) % self.league_size

    def _frozen_agent(self, weights: dict[str, torch.Tensor]) -> PolicyAgent:
        """A sampling PolicyAgent on a network holding ``weights``."""
        frozen = ActorCritic(self.shape, self.observation_scale)
        frozen.load_state_dict(weights)
        frozen.eval()
        return PolicyAgent(self.config, frozen, greedy=False)

    def state_dict(self) -> dict[str, Any]:
        return {
            "weights": [agent.network.state_dict() for agent in self.league],
            "decisions": list(self.league_decisions),
            "next_replace": self.next_replace,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.league, self.league_decisions = [], []
        for weights, decisions in zip(state["weights"], state["decisions"]):
            self.league.append(self._frozen_agent(weights))
            self.league_decisions.append(int(decisions))
        self.next_replace = int(state["next_replace"])

    @torch.no_grad()
    def act(
        self,
        opponent_of_game: np.ndarray,
        observations: np.ndarray,
        action_masks: np.ndarray,
        rng: np.random.Generator,
    ) -> np.ndarray:
        """(G,) pool indices, (G, D) observations, (G, 133) masks -> (G,) actions, one batched call per opponent."""
        actions = np.zeros(opponent_of_game.shape[0], dtype=np.int64)
        for index in np.unique(opponent_of_game):
            games = np.flatnonzero(opponent_of_game == index)
            actions[games] = self.agent(int(index)).act(observations[games], action_masks[games], rng)
        return actions
