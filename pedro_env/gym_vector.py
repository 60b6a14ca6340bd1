"""Pedro as a Gymnasium ``VectorEnv``: one learning seat in each of ``num_envs`` games, the other seats played in batch.

=====================  =====================================================================================
Make                   ``gymnasium.make_vec("Pedro-v0", num_envs=N, **kwargs)`` (the spec's vector entry point)
Class                  ``PedroGymVectorEnv(num_envs, learner_seat=0, opponents="random", **config)``
Single spaces          as :class:`pedro_env.gym.PedroGymEnv`: ``Box(0, 255, (D,), uint8)`` and ``Discrete(133)``
Batched spaces         ``Box(0, 255, (N, D), uint8)`` and ``MultiDiscrete([133] * N)``
Action masks           ``infos["action_mask"]`` (int8, (N, 133)) and ``env.action_masks()`` (bool, (N, 133))
Autoreset              ``AutoresetMode.SAME_STEP``: a finished game restarts within the step; its last observation
                       is ``infos["final_obs"][i]`` and its last info ``infos["final_info"]`` (masked by ``_final_*``)
=====================  =====================================================================================

Every game behaves like :class:`pedro_env.gym.PedroGymEnv` with the same arguments (rewards, ``illegal_action``
and ``illegal_reward``, ``learner_seat`` an int or ``"random"``), except that opponents are batched agents:
``opponents`` is ``"random"`` (or None) or an agent with ``act(observations, masks, rng)`` such as
``agents.make_agent("rule:heuristic", config)``, for every other seat (the partner too), or a dict
``{seat: agent}`` or a list per seat. Each distinct agent acts once per engine step on all the games where
one of its seats is to act.

The engine steps every game of a batch at once; here the games already back at the learner's turn must wait
while the others' opponents move, so this env drives the engine functions :class:`pedro_env.PedroVectorEnv`
is built from (held games sit out a step as finished games do). ``reset(seed=s)``: game ``i`` deals like
``PedroVectorEnv.reset(seed=s)`` and ``PedroGymEnv.reset(seed=s + i)``, so ``s`` is an int from 0 to
2**64 - ``num_envs`` (:class:`pedro_env.SeedError` otherwise: no game's seed wraps round to a small one); a
finished game, and every game on ``reset()`` without a seed, plays the next match of its seed. Agents draw
from ``env.np_random``.

``python -m benchmarks.gym_vector`` compares its learner steps per second with the single env.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from pedro_env.actions import NUM_ACTIONS
from pedro_env.cards import RuleTables
from pedro_env.config import SEED_LIMIT, PedroConfig, check_seed, make_config
from pedro_env.encoding import ObservationEncoder
from pedro_env.rules import (
    IllegalActionError,
    check_actions,
    illegal_action_message,
    initial_state,
    legal_action_mask,
    new_match,
    step,
)
from pedro_env.single_agent import check_illegal_action, check_learner_seat, check_render_mode, opponents_per_seat
from pedro_env.state import OVER, PedroState

__all__ = ["PedroGymVectorEnv"]


def check_agent(where: str, entry: Any) -> None:
    """TypeError unless ``entry`` is a batched agent (an object with ``act``); a spec string is named as one."""
    if isinstance(entry, str):
        raise TypeError(
            f"opponents are agents, not specs: pass agents.make_agent({entry!r}, config) "
            "(the engine package does not import the agents above it)"
        )
    if not callable(getattr(entry, "act", None)):
        raise TypeError(f"an opponent must be an agent with act(observations, masks, rng) or 'random', got {entry!r}")


class PedroGymVectorEnv(VectorEnv):
    """``num_envs`` Pedro games, each with one learning seat (see the module docstring)."""

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}  # noqa: RUF012

    def __init__(
        self,
        num_envs: int = 1,
        learner_seat: int | str = 0,
        opponents: Any = "random",
        render_mode: str | None = None,
        *,
        config: PedroConfig | None = None,
        illegal_action: str = "terminate",
        illegal_reward: float = -1.0,
        **overrides: Any,
    ) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs = {num_envs!r} is not allowed: it must be an int >= 1")
        check_render_mode(render_mode, self.metadata["render_modes"])
        check_illegal_action(illegal_action)
        self.config = make_config(config, **overrides)
        self.seat_choice = check_learner_seat(learner_seat, self.config.num_players)
        self.num_envs = int(num_envs)
        self.render_mode = render_mode
        self.illegal_action = illegal_action
        self.illegal_reward = float(illegal_reward)

        seat_agents = opponents_per_seat(opponents, self.config.num_players, check_agent, random_names=("random",))
        self.agents: list[Any] = []  # distinct agents, each called once per engine step
        for agent in seat_agents:
            if not any(agent is known for known in self.agents):
                self.agents.append(agent)
        self.seat_agent = np.array([next(i for i, a in enumerate(self.agents) if a is agent) for agent in seat_agents])

        self.tables = RuleTables.for_variant(self.config.variant)
        self.encoder = ObservationEncoder(self.config, self.tables)
        self.single_observation_space = spaces.Box(0, 255, (self.encoder.size,), dtype=np.uint8)
        self.single_action_space = spaces.Discrete(NUM_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

        b = self.num_envs
        self.state: PedroState | None = None
        self.learner_seat = np.zeros(b, dtype=np.intp)  # (B,) this episode's learner seat per game
        self._rows = np.arange(b)
        self._every = np.ones(b, dtype=bool)
        self._pending = np.zeros(b, dtype=np.float64)  # (B,) learner's reward since its last decision
        self._mask = np.zeros((b, NUM_ACTIONS), dtype=bool)  # (B, 133) learner's legal actions now
        self._observation = np.zeros((b, self.encoder.size), dtype=np.uint8)  # (B, D) learner's view now
        self._ended: dict[str, np.ndarray] = {}  # episodes that ended during this step (filled by _end_episodes)

    # ---- Gymnasium API ----
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start every game: game ``i`` on seed ``seed + i`` (``seed`` from 0 to 2**64 - num_envs), or, without a
        seed, the next match of each game's seed (random seeds the first time)."""
        if seed is not None:
            seed = check_seed(seed, games=self.num_envs)  # before Gymnasium's check, which allows any int >= 0
        if options:
            raise ValueError(f"options are not supported by {type(self).__name__}, got {sorted(options)}")
        super().reset(seed=seed)
        if seed is not None or self.state is None:
            base = int(np.random.SeedSequence().entropy % (SEED_LIMIT - self.num_envs + 1)) if seed is None else seed
            self.state = initial_state(self.config, np.uint64(base) + np.arange(self.num_envs, dtype=np.uint64))
        else:
            self.state.match_index += 1
            new_match(self.state, self._rows, self.config)
        self._draw_seats(self._rows)
        self._pending[:] = 0.0
        self._start_ended()
        self._play_others()
        self._refresh()
        return self._observation.copy(), self._infos()

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        state = self.state
        if state is None:
            raise RuntimeError("call reset() before step()")
        actions = np.asarray(actions)
        played, legal = check_actions(actions, state, self._mask, self.config)
        illegal = np.flatnonzero(~legal)
        if illegal.size and self.illegal_action == "raise":
            game = int(illegal[0])
            where = f"in game {game} for the learner (seat {int(self.learner_seat[game])})"
            raise IllegalActionError(illegal_action_message(int(actions[game]), self._mask[game], where))

        self._start_ended()
        movers = np.flatnonzero(legal)
        self._step_games(movers, played)
        if illegal.size:
            self._pending[illegal] += self.illegal_reward
            self._end_episodes(illegal, terminated=True, final_observation=self._observation[illegal])
            self._ended["illegal"][illegal] = True
            self._ended["illegal_action"][illegal] = actions[illegal]
        self._play_others()
        self._refresh()

        ended = self._ended["done"]
        rewards = np.where(ended, self._ended["reward"], self._pending)
        self._pending[~ended] = 0.0
        return self._observation.copy(), rewards, self._ended["terminated"], self._ended["truncated"], self._infos()

    def action_masks(self) -> np.ndarray:
        """(B, 133) bool: the learner's legal actions in every game now."""
        return self._mask.copy()

    def render(self) -> None:
        return None

    # ---- the engine, game by game ----
    def _draw_seats(self, games: np.ndarray) -> None:
        """The learner's seat in ``games``' new episodes: fixed, or drawn from ``np_random``."""
        if self.seat_choice == "random":
            self.learner_seat[games] = self.np_random.integers(self.config.num_players, size=games.size)
        else:
            self.learner_seat[games] = self.seat_choice

    def _step_games(self, games: np.ndarray, actions: np.ndarray) -> None:
        """One engine step of ``games`` (their actions at those rows); the other games sit it out.

        The engine ignores games whose phase is OVER, so the held games are marked OVER for the step.
        Then collects the learner's rewards and ends the episodes that finished.
        """
        state = self.state
        assert state is not None
        if games.size == 0:
            return
        if games.size == self.num_envs:
            step(state, actions, self.config)
        else:
            held = self._every.copy()
            held[games] = False
            phases = state.phase[held]
            state.phase[held] = OVER
            step(state, actions, self.config)
            state.phase[held] = phases
        self._pending[games] += state.rewards[games, self.learner_seat[games]]
        over = games[(state.terminated | state.truncated)[games]]
        if over.size:
            final = self.encoder.encode(state.select(over), self.learner_seat[over])
            self._end_episodes(over, state.terminated[over], final)

    def _play_others(self) -> None:
        """Step the games where another seat is to act, by its agent, until the learner acts in every game."""
        state = self.state
        assert state is not None
        while True:
            movers = np.flatnonzero(state.actor != self.learner_seat)
            if movers.size == 0:
                return
            # the whole batch, then the movers' rows: cheaper than selecting the movers' state first
            masks = legal_action_mask(state, self.config, self.tables).view(np.int8)[movers]
            observations = self.encoder.encode(state, state.actor)[movers]
            agent_of_mover = self.seat_agent[state.actor[movers]]
            chosen = np.zeros(movers.size, dtype=np.int64)
            for index in np.unique(agent_of_mover):
                rows = np.flatnonzero(agent_of_mover == index)
                chosen[rows] = self.agents[index].act(observations[rows], masks[rows], self.np_random)
            bad = np.flatnonzero(masks[np.arange(movers.size), np.clip(chosen, 0, NUM_ACTIONS - 1)] == 0)
            if bad.size:
                row = int(bad[0])
                agent = self.agents[int(agent_of_mover[row])]
                where = f"by agent {getattr(agent, 'name', agent)!r} in game {int(movers[row])}"
                raise IllegalActionError(illegal_action_message(int(chosen[row]), masks[row], where))
            actions = np.zeros(self.num_envs, dtype=np.int64)
            actions[movers] = chosen
            self._step_games(movers, actions)

    def _start_ended(self) -> None:
        """Fresh per-step records of ended episodes."""
        b = self.num_envs
        self._ended = {
            "done": np.zeros(b, dtype=bool),
            "terminated": np.zeros(b, dtype=bool),
            "truncated": np.zeros(b, dtype=bool),
            "reward": np.zeros(b, dtype=np.float64),
            "final_obs": np.full(b, None, dtype=object),
            "learner_seat": np.zeros(b, dtype=np.int64),
            "illegal": np.zeros(b, dtype=bool),
            "illegal_action": np.zeros(b, dtype=np.int64),
        }

    def _end_episodes(self, games: np.ndarray, terminated: Any, final_observation: np.ndarray) -> None:
        """Record the episodes of ``games`` as ended (reward, flags, final view) and start their next matches."""
        state = self.state
        assert state is not None
        ended = self._ended
        ended["done"][games] = True
        ended["terminated"][games] = terminated
        ended["truncated"][games] = ~ended["terminated"][games]
        ended["reward"][games] = self._pending[games]
        ended["learner_seat"][games] = self.learner_seat[games]
        for game, observation in zip(games.tolist(), final_observation):
            ended["final_obs"][game] = observation
        self._pending[games] = 0.0
        state.match_index[games] += 1
        new_match(state, games, self.config)
        self._draw_seats(games)

    def _refresh(self) -> None:
        """The learner's mask and view in every game (all games are at the learner's turn)."""
        state = self.state
        assert state is not None
        self._mask = legal_action_mask(state, self.config, self.tables)
        self._observation = self.encoder.encode(state, self.learner_seat)

    def _infos(self) -> dict[str, Any]:
        """Batched infos (each key with its ``_key`` mask); ``final_obs`` and ``final_info`` where episodes ended."""
        every = self._every
        infos: dict[str, Any] = {
            "action_mask": self._mask.view(np.int8).copy(),
            "_action_mask": every.copy(),
            "learner_seat": self.learner_seat.astype(np.int64),
            "_learner_seat": every.copy(),
        }
        done = self._ended["done"]
        if done.any():
            final_info: dict[str, Any] = {
                "action_mask": np.zeros((self.num_envs, NUM_ACTIONS), dtype=np.int8),
                "_action_mask": done.copy(),
                "learner_seat": self._ended["learner_seat"],
                "_learner_seat": done.copy(),
            }
            illegal = self._ended["illegal"]
            if illegal.any():
                final_info["illegal_action"] = self._ended["illegal_action"]
                final_info["_illegal_action"] = illegal.copy()
            infos.update(final_obs=self._ended["final_obs"], _final_obs=done.copy())
            infos.update(final_info=final_info, _final_info=done.copy())
        return infos
