"""Kickstarting: a teacher agent whose choices the policy is pulled towards.

At each of the policy's own decisions in a taught phase (``teacher_phases``: bid, trump, discard,
play) and side (``teacher_sides``: the maker's side, whose team holds the high bid, or the
defenders), the teacher is asked what it would do; the PPO loss then adds ``weight`` times the
cross-entropy from the policy to that choice (:func:`train.ppo.ppo_update`). With ``teacher_margin``
a searching teacher labels only the card plays its sampled deals settle by at least that many points. The weight decays
linearly from ``teacher_coef`` to ``teacher_floor`` over the first ``teacher_decisions`` decisions
and stays at the floor: a floor above 0 is a lasting pull, as AlphaStar kept a KL to its supervised
policy throughout RL. docs/training.md says why the recipes keep one.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
import torch

from agents import make_agent
from agents.policy import PolicyAgent
from pedro_env.actions import DISCARD_OFFSET, NUM_ACTIONS, PLAY_OFFSET, TRUMP_OFFSET
from pedro_env.config import PedroConfig
from pedro_env.observation_layout import viewer_team_makes
from train.config import PHASE_NAMES, TrainConfig, TrainConfigError
from train.ppo import Rollout


def phase_of_actions() -> np.ndarray:
    """(A,) int64: the phase (index into PHASE_NAMES) in which each action is legal."""
    phase = np.zeros(NUM_ACTIONS, dtype=np.int64)
    phase[TRUMP_OFFSET:DISCARD_OFFSET] = PHASE_NAMES.index("trump")
    phase[DISCARD_OFFSET:PLAY_OFFSET] = PHASE_NAMES.index("discard")  # the discards and done
    phase[PLAY_OFFSET:] = PHASE_NAMES.index("play")
    return phase


class Teacher:
    """The teacher of a run (``config.teacher``), its weight schedule and its labels."""

    def __init__(self, config: TrainConfig, rules: PedroConfig) -> None:
        self.config = config
        self.rules = rules
        self.agent = make_agent(config.teacher, rules)
        taught = [PHASE_NAMES.index(name) for name in config.teacher_phases]
        self.taught_action = np.isin(phase_of_actions(), taught)  # (A,) bool: a decision whose actions are taught
        self.sides = set(config.teacher_sides)
        self.margin = config.teacher_margin
        if self.margin > 0 and not hasattr(self.agent, "act_with_margins"):
            raise TrainConfigError(
                f"config key 'teacher_margin' = {self.margin} needs a teacher that searches the play "
                f"(search:pimc), not {config.teacher!r}"
            )

    def weight(self, decisions: int) -> float:
        """The cross-entropy's weight after ``decisions``: ``teacher_coef`` decaying to ``teacher_floor``."""
        config = self.config
        remaining = max(0.0, 1.0 - decisions / config.teacher_decisions) if config.teacher_decisions else 0.0
        return config.teacher_floor + (config.teacher_coef - config.teacher_floor) * remaining

    def taught(self, observations: np.ndarray, masks: np.ndarray, learner: np.ndarray) -> np.ndarray:
        """The games (indices into the batch) where the policy decides (``learner``) in a taught phase and side."""
        taught = learner & self.taught_action[masks.argmax(axis=1)]  # every legal action shares the phase
        if len(self.sides) == 1:
            ours = viewer_team_makes(observations, self.rules)
            taught &= ours if "maker" in self.sides else ~ours
        return np.flatnonzero(taught)

    def label(
        self, observations: np.ndarray, masks: np.ndarray, learner: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """(games, actions): the teacher's choice at the policy's decisions (``learner``) it teaches.

        ``observations`` (B, D) uint8 and ``masks`` (B, A) bool of one step of the batch.
        """
        games = self.taught(observations, masks, learner)
        if games.size == 0:
            return games, np.zeros(0, dtype=np.int64)
        if self.margin <= 0:
            return games, self.agent.act(observations[games], masks[games], rng)
        choices, margins = self.agent.act_with_margins(observations[games], masks[games], rng)
        settled = margins >= self.margin  # inf outside the searched play decisions: those keep their label
        return games[settled], choices[settled]


class DeferredLabels:
    """The labels of frozen greedy policies, asked once a rollout instead of once a step.

    Such a teacher's choice depends on the observation alone (no random draw), so its labels can wait for the
    rollout's end and come from one forward over every taught row of it: ``add`` notes the (step, game) rows of
    a step, ``fill`` writes ``rollout.teacher_actions`` for all of them.
    """

    def __init__(self) -> None:
        self.pending: dict[int, tuple[PolicyAgent, list[np.ndarray], list[np.ndarray]]] = {}

    @staticmethod
    def deferrable(agent: object) -> bool:
        """A frozen policy playing greedily: its choice is a function of the observation."""
        return isinstance(agent, PolicyAgent) and agent.greedy

    def add(self, agent: PolicyAgent, step: int, games: np.ndarray) -> None:
        _, steps, rows = self.pending.setdefault(id(agent), (agent, [], []))
        steps.append(np.full(games.size, step, dtype=np.intp))
        rows.append(games)

    def fill(self, rollout: Rollout, rng: np.random.Generator) -> None:
        """Write every pending label into ``rollout.teacher_actions`` (T, B) and forget them."""
        for agent, steps, rows in self.pending.values():
            step, game = np.concatenate(steps), np.concatenate(rows)
            if step.size:
                chosen = agent.act(rollout.observations[step, game], rollout.masks[step, game], rng)
                rollout.teacher_actions[step, game] = chosen
        self.pending.clear()


def share_policy_agents(teachers: Sequence[Teacher | None], precision: torch.dtype = torch.float32) -> None:
    """Teachers whose agents are one frozen policy (greedy PolicyAgents of equal networks, such as ``pretrained`` at
    the tables of one size under several rule sets) take the first one's agent, so that a run across rule sets asks
    it once a step for all their games (its choices depend on the observation alone, not on the rules); such a
    policy then acts in ``precision``, the games' arithmetic (a bfloat16 copy of its network, as the acting
    network's and the league's)."""
    kept: list[PolicyAgent] = []
    for teacher in teachers:
        agent = teacher.agent if teacher is not None else None
        if not DeferredLabels.deferrable(agent) or teacher.margin > 0:
            continue
        same = next((other for other in kept if _same_policy(other, agent)), None)
        if same is None:
            kept.append(agent)
        else:
            teacher.agent = same
    for agent in kept:
        agent.network = copy.deepcopy(agent.network).to(precision)


def _same_policy(one: PolicyAgent, other: PolicyAgent) -> bool:
    """Both play greedily (or both sample) from networks of one shape and equal weights."""
    if one.greedy != other.greedy or one.network.shape != other.network.shape:
        return False
    mine, theirs = one.network.state_dict(), other.network.state_dict()
    return mine.keys() == theirs.keys() and all(torch.equal(mine[name], theirs[name]) for name in mine)
