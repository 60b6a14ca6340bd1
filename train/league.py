"""The opponents of the games not in self-play: rule-based (or any) baseline agents and a league of frozen policies.

Pool indices: ``0 .. len(baselines) - 1`` are the baselines in config order, then one index per
league snapshot. The league (:class:`League`) is a ring of ``league_size`` snapshots of the policy's
weights: a new snapshot replaces the oldest in place, so a game against that index goes on against
the newer policy. League policies sample from their softmax (a frozen stochastic policy, as in
self-play). A run across rule sets has a pool per rule set (its baselines play its rules, its win
rates are its own) and one league, which every pool shares: its members meet all the rule sets' games
in one stacked forward (:meth:`OpponentPool.act_baselines`, then :meth:`League.act`).

Who is met (``opponent_sampling``):

- ``uniform``: every pool member (and, as partner, every baseline) equally often;
- ``pfsp``: prioritized fictitious self-play, as in AlphaStar's league: member ``m`` is drawn with
  weight ``(1 - w_m) ** pfsp_exponent + pfsp_floor``, where ``w_m`` is the policy's recent win rate
  in training matches against it (partners: with it), so the games go where the policy loses. The
  win rates are running averages over about the last ``1 / (1 - WIN_RATE_DECAY)`` matches, with a
  prior of one drawn match (undecided matches count as half); a new snapshot starts from the prior.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from agents import Agent, make_agent
from agents.networks import ActorCritic, NetworkShape, StackedLogits, gumbel_max_actions
from agents.policy import PolicyAgent
from agents.rule_based import RuleAgentGroup, RuleBasedAgent
from pedro_env.config import PedroConfig
from train.config import OPPONENT_SAMPLINGS

WIN_RATE_DECAY = 0.995  # per finished match: the running win rates remember about the last 200 matches
PRIOR_MATCHES = 1.0  # a member no match has been played against counts as one drawn match


class WinRates:
    """Running win rates of the policy per member: ``(K,)`` decayed wins and matches."""

    def __init__(self, size: int) -> None:
        self.wins = np.zeros(size, dtype=np.float64)
        self.matches = np.zeros(size, dtype=np.float64)

    def record(self, members: np.ndarray, outcomes: np.ndarray) -> None:
        """Outcomes (1 won, 0 lost, 0.5 undecided) of matches against ``members``, in order."""
        for member, outcome in zip(members.tolist(), outcomes.tolist()):
            self.wins[member] = WIN_RATE_DECAY * self.wins[member] + outcome
            self.matches[member] = WIN_RATE_DECAY * self.matches[member] + 1.0

    def rates(self) -> np.ndarray:
        return (self.wins + 0.5 * PRIOR_MATCHES) / (self.matches + PRIOR_MATCHES)

    def reset(self, member: int) -> None:
        self.wins[member] = self.matches[member] = 0.0

    def state_dict(self) -> dict[str, list[float]]:
        return {"wins": self.wins.tolist(), "matches": self.matches.tolist()}

    def load_state_dict(self, state: dict[str, list[float]]) -> None:
        self.wins = np.asarray(state["wins"], dtype=np.float64)
        self.matches = np.asarray(state["matches"], dtype=np.float64)


class League:
    """The ring of ``size`` frozen snapshots of the policy, with the training decisions at which each was taken."""

    def __init__(
        self,
        size: int,
        rules: PedroConfig,
        shape: NetworkShape,
        observation_scale: np.ndarray,
        precision: torch.dtype = torch.float32,
    ) -> None:
        """``rules``: those the snapshots' agents are built for (the run's ``env``); ``precision``: the arithmetic of
        their forward (the trainer's resolved ``precision`` for the CPU)."""
        self.size = int(size)
        self.rules = rules
        self.shape = shape
        self.observation_scale = observation_scale
        self.precision = precision
        self.agents: list[PolicyAgent] = []
        self.decisions: list[int] = []  # decisions of training when each snapshot was taken
        self.next_replace = 0  # ring position the next snapshot overwrites once the league is full
        self._stacked: StackedLogits | None = None  # the members' networks in one forward (None: build on use)

    def __len__(self) -> int:
        return len(self.agents)

    def add(self, network: ActorCritic, decisions: int) -> int | None:
        """Freeze a copy of ``network``'s weights into the ring; returns the member it became (None with size 0)."""
        if self.size == 0:
            return None
        weights = {name: tensor.detach().to("cpu", copy=True) for name, tensor in network.state_dict().items()}
        self._stacked = None  # rebuilt on first use
        if len(self.agents) < self.size:
            self.agents.append(self._frozen_agent(weights))
            self.decisions.append(int(decisions))
            return len(self.agents) - 1
        member = self.next_replace
        self.agents[member].network.load_state_dict(weights)
        self.decisions[member] = int(decisions)
        self.next_replace = (member + 1) % self.size
        return member

    def _frozen_agent(self, weights: dict[str, torch.Tensor]) -> PolicyAgent:
        """A sampling PolicyAgent on a network holding ``weights``."""
        frozen = ActorCritic(self.shape, self.observation_scale)
        frozen.load_state_dict(weights)
        frozen.eval()
        return PolicyAgent(self.rules, frozen, greedy=False)

    def state_dict(self) -> dict[str, Any]:
        return {
            "weights": [agent.network.state_dict() for agent in self.agents],
            "decisions": list(self.decisions),
            "next_replace": self.next_replace,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.agents, self.decisions, self._stacked = [], [], None
        for weights, decisions in zip(state["weights"], state["decisions"]):
            self.agents.append(self._frozen_agent(weights))
            self.decisions.append(int(decisions))
        self.next_replace = int(state["next_replace"])

    def act(
        self, members: np.ndarray, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """(G,) members, (G, D) observations, (G, 133) masks -> (G,) actions sampled from each member's
        policy (Gumbel-max, as :meth:`PolicyAgent.act`), the members' networks stacked into one forward: each
        member met in the step stacked, its rows padded to the most any member has."""
        if self._stacked is None:
            self._stacked = StackedLogits([agent.network for agent in self.agents], self.precision)
        counts = np.bincount(members, minlength=len(self.agents))
        rows = int(counts.max())
        order = np.argsort(members, kind="stable")
        slot = np.arange(members.size) - np.repeat(np.cumsum(counts) - counts, counts)  # row within its member
        active = np.flatnonzero(counts)  # only the members met in this step are stacked
        place = np.full(len(self.agents), -1, dtype=np.int64)
        place[active] = np.arange(active.size)
        stacked_obs = np.zeros((active.size, rows, observations.shape[1]), dtype=np.uint8)
        stacked_masks = np.zeros((active.size, rows, action_masks.shape[1]), dtype=bool)
        stack = place[members[order]]  # each row's slice of the stack, in ``order``
        stacked_obs[stack, slot] = observations[order]
        stacked_masks[stack, slot] = action_masks[order]
        networks = None if active.size == len(self.agents) else torch.from_numpy(active)
        logits = self._stacked(torch.from_numpy(stacked_obs), torch.from_numpy(stacked_masks), networks)
        chosen = logits[torch.from_numpy(stack), torch.from_numpy(slot)].numpy()
        actions = np.empty(members.size, dtype=np.int64)
        actions[order] = gumbel_max_actions(chosen, rng)
        return actions


class OpponentPool:
    """Baseline agents plus a ring of frozen snapshots of the policy (its own :class:`League`, or one it shares)."""

    def __init__(
        self,
        config: PedroConfig,
        baseline_specs: tuple[str, ...],
        league_size: int,
        shape: NetworkShape,
        observation_scale: np.ndarray,
        sampling: str = "uniform",
        pfsp_exponent: float = 2.0,
        pfsp_floor: float = 0.05,
        precision: torch.dtype = torch.float32,
        league: League | None = None,
    ) -> None:
        """``precision``: the league's arithmetic (the trainer's resolved ``precision`` for the CPU); ``league``: a ring
        of snapshots shared with other pools (default: a ring of ``league_size`` of its own)."""
        self.config = config
        self.baseline_specs = tuple(baseline_specs)
        self.baselines: list[Agent] = [make_agent(spec, config) for spec in baseline_specs]
        # the rule baselines decide together: one compiled call for every personality met
        rule_members = [i for i, agent in enumerate(self.baselines) if isinstance(agent, RuleBasedAgent)]
        self.rule_group = RuleAgentGroup([self.baselines[i] for i in rule_members]) if rule_members else None
        self.rule_member = np.full(len(self.baselines), -1, dtype=np.int64)  # baseline -> its place in rule_group
        self.rule_member[rule_members] = np.arange(len(rule_members))
        self.ring = league if league is not None else League(league_size, config, shape, observation_scale, precision)
        if sampling not in OPPONENT_SAMPLINGS:
            raise ValueError(f"opponent sampling {sampling!r} is not one of {', '.join(OPPONENT_SAMPLINGS)}")
        self.sampling = sampling
        self.pfsp_exponent = float(pfsp_exponent)
        self.pfsp_floor = float(pfsp_floor)
        self.opponent_rates = WinRates(len(self.baselines) + self.league_size)  # the policy against each member
        self.partner_rates = WinRates(len(self.baselines))  # the policy with each baseline as its partner

    @property
    def league(self) -> list[PolicyAgent]:
        """The league's frozen policies, in ring order."""
        return self.ring.agents

    @property
    def league_decisions(self) -> list[int]:
        return self.ring.decisions

    @property
    def league_size(self) -> int:
        return self.ring.size

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

    def group(self, index: int) -> str:
        """What the statistics call a member: its spec, or ``league`` for any snapshot."""
        return self.baseline_specs[index] if index < len(self.baselines) else "league"

    def add_snapshot(self, network: ActorCritic, decisions: int) -> None:
        """Freeze a copy of ``network``'s weights into the league (no-op with ``league_size`` 0); with a shared league
        every other pool then calls :meth:`snapshot_taken`."""
        self.snapshot_taken(self.ring.add(network, decisions))

    def snapshot_taken(self, member: int | None) -> None:
        """League member ``member`` (None: none) holds a new snapshot: the win rates against it start afresh."""
        if member is not None:
            self.opponent_rates.reset(len(self.baselines) + member)

    # -- who is met --------------------------------------------------------------------------

    def _weights(self, rates: np.ndarray) -> np.ndarray:
        if self.sampling == "uniform":
            return np.ones(rates.size)
        return (1.0 - rates) ** self.pfsp_exponent + self.pfsp_floor

    def opponent_weights(self, members: int | None = None) -> np.ndarray:
        """(len(self),) probability of drawing each member as the opponent (of the first ``members`` only)."""
        count = len(self) if members is None else members
        weights = self._weights(self.opponent_rates.rates()[:count])
        return weights / weights.sum()

    def partner_weights(self) -> np.ndarray:
        """(len(baselines),) probability of drawing each baseline as the partner."""
        weights = self._weights(self.partner_rates.rates())
        return weights / weights.sum()

    def sample_opponents(self, count: int, rng: np.random.Generator, baselines_only: bool = False) -> np.ndarray:
        """(count,) pool indices drawn by ``opponent_sampling`` (among the baselines only, if asked)."""
        members = len(self.baselines) if baselines_only else len(self)
        if members == 0:
            return np.zeros(count, dtype=np.int64)
        return rng.choice(members, size=count, p=self.opponent_weights(members)).astype(np.int64)

    def sample_partners(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """(count,) baseline indices drawn by ``opponent_sampling``."""
        if not self.baselines:
            return np.zeros(count, dtype=np.int64)
        return rng.choice(len(self.baselines), size=count, p=self.partner_weights()).astype(np.int64)

    def record_outcomes(self, opponents: np.ndarray, partners: np.ndarray, outcomes: np.ndarray) -> None:
        """Finished training matches: the opponent member and partner baseline (-1 none) of each, and the
        policy's outcome (1 won, 0 lost, 0.5 undecided)."""
        self.opponent_rates.record(opponents[opponents >= 0], outcomes[opponents >= 0])
        self.partner_rates.record(partners[partners >= 0], outcomes[partners >= 0])

    def rates_state_dict(self) -> dict[str, Any]:
        """The pool's own state: its win rates (the league's snapshots are the ring's)."""
        return {"opponent_rates": self.opponent_rates.state_dict(), "partner_rates": self.partner_rates.state_dict()}

    def load_rates_state_dict(self, state: dict[str, Any]) -> None:
        if "opponent_rates" in state:  # checkpoints from before opponent sampling keep the fresh priors
            self.opponent_rates.load_state_dict(state["opponent_rates"])
            self.partner_rates.load_state_dict(state["partner_rates"])

    def state_dict(self) -> dict[str, Any]:
        return {**self.ring.state_dict(), **self.rates_state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.ring.load_state_dict(state)
        self.load_rates_state_dict(state)

    @torch.no_grad()
    def act(
        self,
        opponent_of_game: np.ndarray,
        observations: np.ndarray,
        action_masks: np.ndarray,
        rng: np.random.Generator,
    ) -> np.ndarray:
        """(G,) pool indices, (G, D) observations, (G, 133) masks -> (G,) actions: one compiled call for every rule
        baseline met, one batched call per other baseline, one batched forward for every league member met
        (:meth:`League.act`), none for a league member's forced move."""
        actions, league_games = self.act_baselines(opponent_of_game, observations, action_masks, rng)
        if league_games.size:
            actions[league_games] = self.ring.act(
                opponent_of_game[league_games] - len(self.baselines),
                observations[league_games],
                action_masks[league_games],
                rng,
            )
        return actions

    def act_baselines(
        self,
        opponent_of_game: np.ndarray,
        observations: np.ndarray,
        action_masks: np.ndarray,
        rng: np.random.Generator,
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`act` but for the league's choices: (G,) actions (a league member's forced move included) and the
        rows where a league member still chooses, for :meth:`League.act` (that of every rule set at once)."""
        actions = np.zeros(opponent_of_game.shape[0], dtype=np.int64)
        baselines = len(self.baselines)
        is_baseline = opponent_of_game < baselines
        member = np.full(opponent_of_game.shape[0], -1, dtype=np.int64)  # the game's place in rule_group, -1 none
        member[is_baseline] = self.rule_member[opponent_of_game[is_baseline]]
        rule_games = np.flatnonzero(member >= 0)
        if rule_games.size:
            actions[rule_games] = self.rule_group.act(observations, action_masks, rule_games, member[rule_games])
        for index in np.unique(opponent_of_game[is_baseline & (member < 0)]):
            games = np.flatnonzero(opponent_of_game == index)
            actions[games] = self.baselines[int(index)].act(observations[games], action_masks[games], rng)
        league = opponent_of_game >= baselines
        forced = league & (np.count_nonzero(action_masks, axis=1) == 1)  # one legal move: no forward needed
        actions[forced] = np.argmax(action_masks[forced], axis=1)
        return actions, np.flatnonzero(league & ~forced)
