"""Pedro as a PettingZoo AEC environment: PettingZoo's bookkeeping over one :class:`~pedro_env.single_game.SingleGame`.

=====================  =================================================================
Agents                 ``player_0 .. player_{n-1}`` (4 by default; seats 0+2 vs 1+3)
Action space           ``Discrete(133)`` (layout in :mod:`pedro_env.actions`)
Observation space      ``Dict(observation=Box(0, 255, (D,), uint8), action_mask=Box(0, 1, (133,), int8))``
State space            ``Box(0, 255, (D + n*52 + 52,), uint8)``: the acting player's view plus all hands and the stock
Rewards                ``points`` (per deal: team delta - opponents' mean delta, / total points) or ``win``
Render modes           ``ansi`` (returns the table as text), ``human`` (prints it)
=====================  =================================================================

The observation layout is in :mod:`pedro_env.observation_layout`. The action mask is all zeros for agents
that are not acting. ``reset(seed, options={"dealer": int, "decks": [[52 card strings], ...]})``
injects the first dealer and the decks of the successive deals (top first); when the decks run
out, the env's seed (an int from 0 to 2**64 - 1) deals. Every agent's ``info`` carries ``"deal"``
(docs/rules.md section 11) on the step where a deal ends.

Errors, each with a one-line message: ConfigError (a ValueError) for a bad config; SeedError (a
ValueError and a TypeError) for a bad seed; ValueError for bad reset options or an unreadable action
text; IllegalActionError (a ValueError) for an action the actor may not take; RuntimeError for a
call out of order (``step``, ``observe``, ``last``, ``state`` before ``reset``, or ``step`` once
every agent has left the finished episode; :func:`env`'s PettingZoo wrapper reports a call before
``reset`` first, in its own words).

Version history: v0, the first release.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.env_logger import EnvLogger
from pettingzoo.utils.wrappers.order_enforcing import AECOrderEnforcingIterable, AECOrderEnforcingIterator

from pedro_env.actions import NUM_ACTIONS, action_to_str, str_to_action
from pedro_env.config import PedroConfig, short_repr
from pedro_env.kernels import steps
from pedro_env.observation_layout import full_state_size
from pedro_env.single_game import SingleGame, agent_names, render_in_mode
from pedro_env.state import PedroState


class raw_env(AECEnv):
    """The bare Pedro AEC environment; :func:`env` wraps it in PettingZoo's order enforcement.

    The match itself is ``single_game`` (:class:`pedro_env.single_game.SingleGame`); this class keeps PettingZoo's
    bookkeeping over it (agents, rewards, terminations, infos, the agent selection). ``game``, ``first_dealer``,
    ``action_history``, ``deck_of_deal`` and ``deal_info`` read the single game's."""

    metadata = {"render_modes": ["ansi", "human"], "name": "pedro_v0", "is_parallelizable": False}

    def __init__(self, render_mode: str | None = None, config: PedroConfig | None = None, **overrides: Any) -> None:
        super().__init__()
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode = {render_mode!r} is not allowed: allowed values are None, 'ansi', 'human'")
        self.render_mode = render_mode
        self.single_game = SingleGame(config, **overrides)
        self.config = self.single_game.config
        self.tables = self.single_game.tables
        self.encoder = self.single_game.encoder
        self.possible_agents = agent_names(self.config.num_players)
        self.agents: list[str] = []
        self.agent_name_mapping = {agent: seat for seat, agent in enumerate(self.possible_agents)}
        observation_space = spaces.Dict(
            {
                "observation": spaces.Box(0, 255, (self.encoder.size,), dtype=np.uint8),
                "action_mask": spaces.Box(0, 1, (NUM_ACTIONS,), dtype=np.int8),
            }
        )
        self.observation_spaces = {agent: observation_space for agent in self.possible_agents}
        self.action_spaces = {agent: spaces.Discrete(NUM_ACTIONS) for agent in self.possible_agents}
        self.state_space = spaces.Box(0, 255, (full_state_size(self.config),), dtype=np.uint8)
        self._no_mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
        self._deal_shown = False  # rewards and infos show the deal that ended in the last step

    # ---- text forms (docs/rules.md section 11) ----
    @staticmethod
    def action_to_str(action: int) -> str:
        return action_to_str(action)

    @staticmethod
    def str_to_action(text: str) -> int:
        return str_to_action(text)

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    # ---- the match record, read from the single game ----
    @property
    def game(self) -> PedroState | None:
        """The engine's state of the match (a batch of one); None before ``reset``."""
        return self.single_game.state

    @property
    def first_dealer(self) -> int:
        return self.single_game.first_dealer

    @property
    def action_history(self) -> list[str]:
        return self.single_game.action_history

    @property
    def _seed(self) -> int | None:
        """The match's seed (a name older callers read)."""
        return self.single_game.seed

    def deck_of_deal(self, deal: int) -> list[str]:
        """The deck (52 card strings, top first) of deal ``deal`` of the current match (see SingleGame)."""
        return self.single_game.deck_of_deal(deal)

    def deal_info(self) -> dict[str, Any]:
        """The ``"deal"`` info (docs/rules.md section 11) of the deal that ended in the last step."""
        return self.single_game.deal_info()

    # ---- episode ----
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        """Start a match. ``seed``: an int from 0 to 2**64 - 1 (None: the next match of the last seed, or a
        random seed the first time); ``options``: ``dealer`` (0..n-1) and ``decks`` (see the module docstring)."""
        game = self.single_game
        game.reset(seed, options)
        self.agents = self.possible_agents[:]
        self.rewards = {agent: 0.0 for agent in self.agents}
        self._cumulative_rewards = {agent: 0.0 for agent in self.agents}
        self.terminations = {agent: False for agent in self.agents}
        self.truncations = {agent: False for agent in self.agents}
        self.infos: dict[str, dict] = {agent: {} for agent in self.agents}
        self._deal_shown = False
        if not game.over:
            self.agent_selection = self.possible_agents[game.actor]

    def _started(self, call: str) -> PedroState:
        """The game; RuntimeError if ``reset`` has not been called yet."""
        return self.single_game.started(call)

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        game = self.single_game
        seat = self.agent_name_mapping.get(agent) if isinstance(agent, str) else None
        if seat is None:
            game.started("observe")
            raise ValueError(f"unknown agent {short_repr(agent)}: the agents are {', '.join(self.possible_agents)}")
        observation = game.observe(seat)
        acting = agent == self.agent_selection and not game.over
        mask = game.mask_bytes.copy() if acting else self._no_mask.copy()
        return {"observation": observation, "action_mask": mask}

    def last(self, observe: bool = True) -> tuple:
        self._started("last")
        agent = self.agent_selection
        return (
            self.observe(agent) if observe else None,
            self._cumulative_rewards[agent],
            self.terminations[agent],
            self.truncations[agent],
            self.infos[agent],
        )

    def state(self) -> np.ndarray:
        """The full state (all hands and the stock) seen from the acting seat, for centralized critics."""
        return self.single_game.full_state()

    def legal_actions(self) -> list[int]:
        """Legal action indices of the acting agent."""
        return self.single_game.legal_actions()

    def step(self, action: int | str | None) -> None:
        """Apply the acting agent's action (an index 0..132 or its text form; None for a finished agent)."""
        game = self.single_game
        game.started("step")
        agent = self.agent_selection
        if agent not in self.terminations:
            raise RuntimeError("the episode is over and every agent has left it: call reset() to start another")
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        status = game.step(action)  # IllegalActionError (nothing changed) for an action the agent may not take
        self._cumulative_rewards[agent] = 0.0
        if status & steps.AEC_DEAL_OVER:  # rewards, infos and episode ends only change when a deal ends
            self.rewards = dict(zip(self.possible_agents, game.state.rewards[0].tolist()))
            deal_info = game.deal_info()
            self.infos = {a: {"deal": dict(deal_info)} for a in self.agents}
            if status & (steps.AEC_TERMINATED | steps.AEC_TRUNCATED):
                self.terminations = {a: game.terminated for a in self.agents}
                self.truncations = {a: game.truncated for a in self.agents}
            self._deal_shown = True
            self._accumulate_rewards()
        elif self._deal_shown:
            self.rewards = {a: 0.0 for a in self.agents}
            self.infos = {a: {} for a in self.agents}
            self._deal_shown = False
        if not game.over:
            self.agent_selection = self.possible_agents[game.actor]
        if self.render_mode == "human":
            self.render()

    def render(self) -> str | None:
        return render_in_mode(self.single_game, self.render_mode)

    def close(self) -> None:
        pass


class OrderEnforcing(wrappers.OrderEnforcingWrapper):
    """PettingZoo's order enforcement with the checks of ``agent_iter``, ``last`` and ``step`` made here
    directly: the same errors and warnings, without a wrapper attribute lookup per read (PettingZoo's reads
    every attribute of the env through ``__getattr__``, about half the time of a step)."""

    def last(self, observe: bool = True) -> tuple:
        if not self._has_reset:
            raise AttributeError("agent_selection cannot be accessed before reset")
        return self.env.last(observe)

    def step(self, action: Any) -> None:
        if not self._has_reset:
            EnvLogger.error_step_before_reset()
        elif not self.env.agents:
            self._has_updated = True
            EnvLogger.warn_step_after_terminated_truncated()
        else:
            self._has_updated = True
            self.env.step(action)

    def agent_iter(self, max_iter: int = 2**63) -> AgentIterable:
        if not self._has_reset:
            EnvLogger.error_agent_iter_before_reset()
        return AgentIterable(self, max_iter)


class AgentIterable(AECOrderEnforcingIterable):
    def __iter__(self) -> AgentIterator:
        return AgentIterator(self.env, self.max_iter)


class AgentIterator(AECOrderEnforcingIterator):
    """PettingZoo's order-enforcing agent iterator, reading the bare env's agents directly."""

    def __next__(self) -> str:
        wrapper = self.env
        bare = wrapper.env
        if not bare.agents or self.iters_til_term <= 0:
            raise StopIteration
        self.iters_til_term -= 1
        assert wrapper._has_updated, "need to call step() or reset() in a loop over `agent_iter`"
        wrapper._has_updated = False
        return bare.agent_selection


def env(render_mode: str | None = None, **config: Any) -> AECEnv:
    """The Pedro AEC env wrapped in order enforcement (PettingZoo's, see :class:`OrderEnforcing`; config keys:
    docs/rules.md section 9)."""
    return OrderEnforcing(raw_env(render_mode=render_mode, **config))
