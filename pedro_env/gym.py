"""Pedro as a single-agent Gymnasium environment: one learning seat against fixed opponent policies.

=====================  =====================================================================================
Id                     ``Pedro-v0`` (registered on import: ``gymnasium.make("Pedro-v0", **kwargs)``)
Class                  ``PedroGymEnv(learner_seat=0, opponents=None, render_mode=None, **config)``
Action space           ``Discrete(133)`` (layout in :mod:`pedro_env.actions`)
Observation space      ``Box(0, 255, (D,), uint8)``: the learner's view (layout in :mod:`pedro_env.encoding`)
Action mask            ``info["action_mask"]`` (int8, (133,)) and ``env.action_masks()`` (bool, (133,))
Rewards                the learner's reward since its last decision: ``points`` per deal or ``win`` +1/-1
Render modes           ``ansi`` (returns the table as text), ``human`` (prints it after every move)
=====================  =====================================================================================

The learner takes seat ``learner_seat`` (an int, or ``"random"`` to draw a seat at every reset from
the env's RNG); the other seats are played by opponent policies. Under the hood is the PettingZoo
AEC env (:class:`pedro_env.raw_env`, so the very same engine): ``reset`` and ``step`` play the
opponents' moves until the learner must decide again or the episode ends. Config keys (RULES.md
section 9, plus ``reward``, ``episode``, ``max_deals``) pass through to :func:`pedro_env.make_config`.

Opponents
    An opponent policy is a callable ``policy(observation, action_mask, rng) -> int`` taking that
    seat's observation (uint8, (D,)), its legal-action mask (int8, (133,)) and the env's seeded
    ``np.random.Generator``. ``opponents`` is one policy for every other seat, a dict
    ``{seat: policy}`` (int seats or ``"player_k"`` names) or a list with one entry per seat. Seats
    left out, or given ``None``, play :func:`uniform_random_policy`; the learner's own entry is never
    called (with ``learner_seat="random"`` give every seat a policy).

Observation and action
    The observation is the learner's observation vector; the legal actions of the decision at hand
    are ``info["action_mask"]`` (after ``reset`` and every ``step``) and ``env.action_masks()`` (the
    method sb3-contrib's ``MaskablePPO`` calls). Once the episode is over the mask is all zeros.
    An illegal learner action raises :class:`pedro_env.IllegalActionError` naming it and the legal
    actions, except that with ``renege="penalty"`` a renege is played as the engine scores it.
    ``illegal_action="terminate"`` instead ends the episode with reward ``illegal_reward`` (-1) and
    ``info["illegal_action"]`` (PettingZoo's ``TerminateIllegalWrapper`` convention); it lets
    unmasked policies and generic checkers such as ``gymnasium.utils.env_checker.check_env``, which
    steps ``action_space.sample()``, run.

Rewards and episode end
    ``step`` returns everything the learner earned since its previous decision, including what
    arrives while the opponents play: with ``reward="points"``, at every deal's end (the learner's
    team delta minus the opponents' mean delta) / total points; with ``reward="win"``, +1/-1 when the
    match is decided. ``terminated`` and ``truncated`` are the underlying episode's (a match, or one
    deal with ``episode="deal"``; ``max_deals`` truncates). When a deal ends during a step,
    ``info["deal"]`` is its summary (RULES.md section 11; the last one if several ended).

Seeding
    ``reset(seed=s)`` seeds the deals and first dealer exactly as ``pedro_env.env().reset(seed=s)``
    does, and the opponents' RNG (``env.np_random``) and the seat draw; ``reset()`` afterwards plays
    the next match of that seed, so a seeded sequence of episodes is reproducible. ``options``
    (``{"dealer": int, "decks": [[52 card strings], ...]}``) pass through to the AEC env.

Example, a masked random learner against random opponents:

>>> import numpy as np
>>> from pedro_env.gym import PedroGymEnv
>>> env = PedroGymEnv(learner_seat=0, target_score=21, max_deals=30)
>>> observation, info = env.reset(seed=7)
>>> rng = np.random.default_rng(7)
>>> episode_return, done = 0.0, False
>>> while not done:
...     action = int(rng.choice(np.flatnonzero(info["action_mask"])))
...     observation, reward, terminated, truncated, info = env.step(action)
...     episode_return += reward
...     done = terminated or truncated
>>> observation.shape == env.observation_space.shape and not info["action_mask"].any()
True

Version history: v0, the first release.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from pedro_env.actions import NUM_ACTIONS
from pedro_env.aec import raw_env
from pedro_env.config import PedroConfig
from pedro_env.encoding import observation_pieces
from pedro_env.vector import IllegalActionError

__all__ = ["ENV_ID", "OpponentPolicy", "PedroGymEnv", "uniform_random_policy"]

ENV_ID = "Pedro-v0"
ILLEGAL_ACTION_MODES = ("raise", "terminate")

OpponentPolicy = Callable[[np.ndarray, np.ndarray, np.random.Generator], int]
"""``policy(observation uint8 (D,), action_mask int8 (133,), rng) -> action index``."""


def uniform_random_policy(observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator) -> int:
    """A uniformly random legal action (the default opponent)."""
    return int(rng.choice(np.flatnonzero(action_mask)))


def _seat_policies(opponents: Any, num_players: int) -> list[OpponentPolicy]:
    """``opponents`` (None, one callable, a dict seat -> callable, or a list per seat) -> one policy per seat."""
    if opponents is None:
        return [uniform_random_policy] * num_players
    if callable(opponents):
        return [opponents] * num_players
    if isinstance(opponents, Mapping):
        names = {f"player_{seat}": seat for seat in range(num_players)}
        given: dict[int, Any] = {}
        for key, policy in opponents.items():
            if isinstance(key, str) and key in names:
                seat = names[key]
            elif isinstance(key, (int, np.integer)) and not isinstance(key, bool) and 0 <= key < num_players:
                seat = int(key)
            else:
                last = num_players - 1
                allowed = f"0..{last} or player_0..player_{last}"
                raise ValueError(f"opponents key {key!r} is not a seat: allowed keys are {allowed}")
            given[seat] = policy
        entries = [given.get(seat) for seat in range(num_players)]
    elif isinstance(opponents, Sequence) and not isinstance(opponents, (str, bytes)):
        if len(opponents) != num_players:
            raise ValueError(f"opponents as a list needs one entry per seat ({num_players}), got {len(opponents)}")
        entries = list(opponents)
    else:
        kind = type(opponents).__name__
        raise TypeError(f"opponents must be None, a callable, a dict seat -> callable or a list per seat, got {kind}")
    for seat, policy in enumerate(entries):
        if policy is not None and not callable(policy):
            raise TypeError(
                f"opponents[{seat}] must be a callable policy(observation, action_mask, rng) -> int, got {policy!r}"
            )
    return [uniform_random_policy if policy is None else policy for policy in entries]


def _as_action(action: Any) -> Any:
    """Unwrap a one-element numpy array (what batched policies hand out) to its scalar; anything else unchanged."""
    if isinstance(action, np.ndarray) and action.size == 1:
        return action.reshape(()).item()
    return action


class PedroGymEnv(gymnasium.Env):
    """One Pedro seat as a Gymnasium env; the other seats are played by ``opponents`` (see the module docstring)."""

    # render_fps: Gymnasium's checker expects one; text rendering does not use it. A plain dict, as gymnasium.Env
    # declares it (a ClassVar annotation would clash with that declaration under mypy).
    metadata = {"render_modes": ["ansi", "human"], "render_fps": 1}  # noqa: RUF012

    def __init__(
        self,
        learner_seat: int | str = 0,
        opponents: Any = None,
        render_mode: str | None = None,
        *,
        config: PedroConfig | None = None,
        illegal_action: str = "raise",
        illegal_reward: float = -1.0,
        **overrides: Any,
    ) -> None:
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode = {render_mode!r} is not allowed: allowed values are None, 'ansi', 'human'")
        if illegal_action not in ILLEGAL_ACTION_MODES:
            raise ValueError(
                f"illegal_action = {illegal_action!r} is not allowed: allowed values are 'raise', 'terminate'"
            )
        self.aec_env = raw_env(render_mode=render_mode, config=config, **overrides)
        self.config = self.aec_env.config
        self.render_mode = render_mode
        num_players = self.config.num_players
        self.seat_choice: int | str  # the constructor's learner_seat: a seat, or "random" (drawn at every reset)
        if learner_seat == "random":
            self.seat_choice = "random"
        elif (
            isinstance(learner_seat, (int, np.integer))
            and not isinstance(learner_seat, bool)
            and 0 <= learner_seat < num_players
        ):
            self.seat_choice = int(learner_seat)
        else:
            raise ValueError(
                f"learner_seat = {learner_seat!r} is not allowed: allowed values are 0..{num_players - 1} or 'random'"
            )
        self.learner_seat = 0 if self.seat_choice == "random" else int(self.seat_choice)  # this episode's seat
        self.policies = _seat_policies(opponents, num_players)
        self.illegal_action = illegal_action
        self.illegal_reward = float(illegal_reward)

        observation_size = sum(size for _, size in observation_pieces(self.config))
        self.observation_space = spaces.Box(0, 255, (observation_size,), dtype=np.uint8)
        self.action_space = spaces.Discrete(NUM_ACTIONS)
        self._mask = np.zeros(NUM_ACTIONS, dtype=np.int8)  # the learner's legal actions now (0s when not deciding)
        self._observation = np.zeros(observation_size, dtype=np.uint8)  # the learner's latest observation
        self._pending_reward = 0.0  # learner's reward since its last decision
        self._deal: dict[str, Any] | None = None  # the last deal that ended since the learner's last decision
        self._episode_over = True

    @property
    def learner_agent(self) -> str:
        """The AEC agent name of this episode's learner seat (``player_k``)."""
        return self.aec_env.possible_agents[self.learner_seat]

    # ---- episode ----
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        if self.seat_choice == "random":
            self.learner_seat = int(self.np_random.integers(self.config.num_players))
        self.aec_env.reset(seed=seed, options=options)
        self._pending_reward = 0.0
        self._deal = None
        self._episode_over = False
        self._play_opponents()
        if self.render_mode == "human":
            self.render()
        info = self._info()
        info["learner_seat"] = self.learner_seat
        return self._observation.copy(), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self._episode_over:
            raise RuntimeError("the episode is over (or reset() was never called): call reset() before step()")
        action = _as_action(action)
        try:
            self._advance(action)
        except IllegalActionError:
            if self.illegal_action == "raise":
                raise
            self._episode_over = True
            self._mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
            info = self._info()
            info["illegal_action"] = action
            reward, self._pending_reward = self._pending_reward + self.illegal_reward, 0.0
            return self._observation.copy(), reward, True, False, info
        self._play_opponents()
        reward, self._pending_reward = self._pending_reward, 0.0
        terminated = bool(self.aec_env.terminations[self.learner_agent])
        truncated = bool(self.aec_env.truncations[self.learner_agent])
        return self._observation.copy(), reward, terminated, truncated, self._info()

    def _advance(self, action: Any) -> None:
        """One AEC step by whoever acts; collects the learner's reward and any deal summary."""
        self.aec_env.step(action)
        self._pending_reward += float(self.aec_env.rewards[self.learner_agent])
        deal = self.aec_env.infos[self.learner_agent].get("deal")
        if deal is not None:
            self._deal = deal

    def _play_opponents(self) -> None:
        """Step the opponents until the learner decides or the episode ends; refresh the learner's view."""
        aec = self.aec_env
        learner = self.learner_agent
        try:
            while not (aec.terminations[learner] or aec.truncations[learner]) and aec.agent_selection != learner:
                agent = aec.agent_selection
                view = aec.observe(agent)
                policy = self.policies[aec.agent_name_mapping[agent]]
                self._advance(_as_action(policy(view["observation"], view["action_mask"], self.np_random)))
        except BaseException:
            # an opponent's policy failed mid-turn: another seat is to act, so only reset() may go on
            self._episode_over = True
            self._mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
            raise
        view = aec.observe(learner)
        self._observation, self._mask = view["observation"], view["action_mask"]
        self._episode_over = bool(aec.terminations[learner] or aec.truncations[learner])

    def _info(self) -> dict[str, Any]:
        """A fresh info dict: the mask, and the last deal summary since the previous call."""
        info: dict[str, Any] = {"action_mask": self._mask.copy()}
        if self._deal is not None:
            info["deal"] = copy.deepcopy(self._deal)
            self._deal = None
        return info

    def action_masks(self) -> np.ndarray:
        """(133,) bool: the learner's legal actions now (all False once the episode is over)."""
        return self._mask.astype(bool)

    def render(self) -> str | None:
        """The table (all hands) as text for ``ansi``; printed for ``human``; None without a render mode."""
        return self.aec_env.render()

    def close(self) -> None:
        self.aec_env.close()


def _register() -> None:
    """Register ``Pedro-v0`` with Gymnasium once (importing or reloading this module again is harmless)."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point="pedro_env.gym:PedroGymEnv")


_register()
