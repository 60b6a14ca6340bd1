"""Pedro as a single-agent Gymnasium environment: one learning seat against fixed opponent policies.

=====================  =====================================================================================
Id                     ``Pedro-v0`` (registered on import: ``gymnasium.make("Pedro-v0", **kwargs)``)
Class                  ``PedroGymEnv(learner_seat=0, opponents=None, render_mode=None, **config)``
Action space           ``Discrete(133)`` (layout in :mod:`pedro_env.actions`)
Observation space      ``Box(0, 255, (D,), uint8)``: the learner's view (layout in :mod:`pedro_env.observation_layout`)
Action mask            ``info["action_mask"]`` (int8, (133,)) and ``env.action_masks()`` (bool, (133,))
Rewards                the learner's reward since its last decision: ``points`` per deal or ``win`` +1/-1
Render modes           ``ansi`` (returns the table as text), ``human`` (prints it after every move)
Vector env             ``gymnasium.make_vec("Pedro-v0", num_envs=N)``: :class:`pedro_env.gym_vector.PedroGymVectorEnv`
=====================  =====================================================================================

The learner takes seat ``learner_seat`` (an int, or ``"random"`` to draw a seat at every reset from
the env's RNG); the other seats are played by opponent policies. Under the hood is the single-game
driver (:class:`pedro_env.single_game.SingleGame`, the PettingZoo env's too, so the very same engine):
``reset`` and ``step`` play the opponents' moves until the learner must decide again or the episode ends.
Config keys (docs/rules.md section 9, plus ``reward``, ``episode``, ``max_deals``) pass through to
:func:`pedro_env.make_config`.

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
    An action is an int in 0..132 or its text form (``"bid 7"``, docs/rules.md section 11). By default
    (``illegal_action="terminate"``) an illegal learner action, an unreadable text included, ends the
    episode with reward ``illegal_reward`` (-1) and ``info["illegal_action"]`` (the action as given),
    as PettingZoo's classic envs do (``TerminateIllegalWrapper``): unmasked learners and generic
    checkers that step ``action_space.sample()`` (Gymnasium's and Stable-Baselines3's ``check_env``)
    run. ``illegal_action="raise"`` raises :class:`pedro_env.IllegalActionError` naming the action and
    the legal ones and leaves the state as it was. With ``renege="penalty"`` a renege is no illegal
    action: it is played and scored by the engine.

Rewards and episode end
    ``step`` returns everything the learner earned since its previous decision, including what
    arrives while the opponents play: with ``reward="points"``, at every deal's end (the learner's
    team delta minus the opponents' mean delta) / total points; with ``reward="win"``, +1/-1 when the
    match is decided. ``terminated`` and ``truncated`` are the underlying episode's (a match, or one
    deal with ``episode="deal"``; ``max_deals`` truncates).

Deal summary
    When a deal ends during a step, ``info["deal"]`` is its summary: the keys of docs/rules.md section 11
    in numbers only, so that Gymnasium's vector envs (``SyncVectorEnv``, ``AsyncVectorEnv``) batch it
    into arrays whatever mix of deals ends in one step. ``redeal`` bool; ``maker``, ``bid``,
    ``renege`` ints; ``trump`` the suit index 0..3 (``C D H S``); ``made`` 1 (made), 0 (set); each of
    these -1 where docs/rules.md gives None. ``points``, ``delta``, ``scores`` int64 arrays, one entry per
    team. :func:`gym_deal_summary` turns the AEC env's summary into this form.

Seeding
    ``reset(seed=s)``, ``s`` an int from 0 to 2**64 - 1 (:class:`pedro_env.SeedError` otherwise), seeds
    the deals and first dealer exactly as ``pedro_env.env().reset(seed=s)`` does, and the opponents'
    RNG (``env.np_random``) and the seat draw; ``reset()`` afterwards plays the next match of that
    seed, so a seeded sequence of episodes is reproducible. ``options`` (``{"dealer": int, "decks":
    [[52 card strings], ...]}``) pass through to :meth:`pedro_env.single_game.SingleGame.reset`.

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

Render mode ``rgb_array`` (which Stable-Baselines3's ``make_vec_env`` asks for) is not supported:
the constructor raises :class:`RenderModeError`, a ``TypeError`` as well as a ``ValueError``, on which
``make_vec_env`` retries without a render mode.

Version history: v0, the first release; illegal actions end the episode by default (they raised before);
``info["deal"]`` in numbers (it held docs/rules.md's None values, which Gymnasium's vector envs cannot batch);
the default opponent draws as the vector env's does (:func:`pedro_env.actions.uniform_legal_actions`; it drew
with ``rng.choice``: the same distribution, other draws for a seed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from pedro_env.actions import NUM_ACTIONS, str_to_action
from pedro_env.cards import SUITS
from pedro_env.config import PedroConfig, check_seed
from pedro_env.kernels.steps import AEC_DEAL_OVER
from pedro_env.observation_layout import OBSERVATION_SIZE
from pedro_env.rules import IllegalActionError
from pedro_env.single_agent import (
    OpponentPolicy,
    RenderModeError,
    check_illegal_action,
    check_learner_seat,
    check_render_mode,
    opponents_per_seat,
    uniform_random_policy,
)
from pedro_env.single_game import SingleGame, agent_names, render_in_mode

__all__ = ["ENV_ID", "OpponentPolicy", "PedroGymEnv", "RenderModeError", "gym_deal_summary", "uniform_random_policy"]

ENV_ID = "Pedro-v0"


def check_policy(where: str, policy: Any) -> None:
    """TypeError unless ``policy`` is a callable opponent policy (``where`` names it in the message)."""
    if not callable(policy):
        raise TypeError(f"{where} must be a callable policy(observation, action_mask, rng) -> int, got {policy!r}")


def gym_deal_summary(deal: Mapping[str, Any]) -> dict[str, Any]:
    """The AEC env's ``"deal"`` info (docs/rules.md section 11) in the Gym env's numeric form (module docstring).

    Every key keeps one type whatever the deal, so Gymnasium batches the summaries of several envs into
    arrays: a None would not fit the int array Gymnasium makes from another env's int.
    """

    def number(value: Any) -> int:
        return -1 if value is None else int(value)

    return {
        "redeal": bool(deal["redeal"]),
        "maker": number(deal["maker"]),
        "bid": number(deal["bid"]),
        "trump": -1 if deal["trump"] is None else SUITS.index(deal["trump"]),
        "points": np.asarray(deal["points"], dtype=np.int64),
        "made": number(deal["made"]),
        "delta": np.asarray(deal["delta"], dtype=np.int64),
        "scores": np.asarray(deal["scores"], dtype=np.int64),
        "renege": number(deal["renege"]),
    }


def _as_action(action: Any) -> Any:
    """Unwrap a one-element numpy array (what batched policies hand out) to its scalar; anything else unchanged."""
    if isinstance(action, np.ndarray) and action.size == 1:
        return action.reshape(()).item()
    return action


def _parse_text_action(action: Any) -> Any:
    """A text action (``"bid 7"``) -> its index; unreadable text raises IllegalActionError; anything else unchanged."""
    if not isinstance(action, str):
        return action
    try:
        return str_to_action(action)
    except ValueError as error:
        raise IllegalActionError(str(error)) from None


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
        illegal_action: str = "terminate",
        illegal_reward: float = -1.0,
        **overrides: Any,
    ) -> None:
        check_render_mode(render_mode, self.metadata["render_modes"])
        check_illegal_action(illegal_action)
        self.single_game = SingleGame(config, **overrides)
        self.config = self.single_game.config
        self.render_mode = render_mode
        num_players = self.config.num_players
        self.agent_names = agent_names(num_players)
        # the constructor's learner_seat: a seat, or "random" (drawn at every reset)
        self.seat_choice = check_learner_seat(learner_seat, num_players)
        self.learner_seat = 0 if self.seat_choice == "random" else int(self.seat_choice)  # this episode's seat
        self.policies: list[OpponentPolicy] = opponents_per_seat(opponents, num_players, check_policy)
        self.illegal_action = illegal_action
        self.illegal_reward = float(illegal_reward)

        observation_size = OBSERVATION_SIZE
        self.observation_space = spaces.Box(0, 255, (observation_size,), dtype=np.uint8)
        self.action_space = spaces.Discrete(NUM_ACTIONS)
        self._mask = np.zeros(NUM_ACTIONS, dtype=np.int8)  # the learner's legal actions now (0s when not deciding)
        self._observation = np.zeros(observation_size, dtype=np.uint8)  # the learner's latest observation
        self._pending_reward = 0.0  # learner's reward since its last decision
        # the last deal that ended since the learner's last decision, in gym_deal_summary's form
        self._deal: dict[str, Any] | None = None
        self._episode_over = True

    @property
    def learner_agent(self) -> str:
        """The agent name of this episode's learner seat (``player_k``, as the AEC env names it)."""
        return self.agent_names[self.learner_seat]

    # ---- episode ----
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        if seed is not None:
            seed = check_seed(seed)  # before Gymnasium's own check, whose error names neither the range nor the env
        super().reset(seed=seed)
        if self.seat_choice == "random":
            self.learner_seat = int(self.np_random.integers(self.config.num_players))
        self.single_game.reset(seed=seed, options=options)
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
            self._advance(_parse_text_action(action))
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
        game = self.single_game
        return self._observation.copy(), reward, game.terminated, game.truncated, self._info()

    def _advance(self, action: Any) -> None:
        """One step of the game by whoever acts; collects the learner's reward and any deal summary."""
        game = self.single_game
        if game.step(action) & AEC_DEAL_OVER:  # rewards and summaries come when a deal ends
            assert game.state is not None
            self._pending_reward += float(game.state.rewards[0, self.learner_seat])
            self._deal = gym_deal_summary(game.deal_info())
        if self.render_mode == "human":
            self.render()

    def _play_opponents(self) -> None:
        """Step the opponents until the learner decides or the episode ends; refresh the learner's view."""
        game = self.single_game
        learner = self.learner_seat
        try:
            while not game.over and game.actor != learner:
                seat = game.actor
                policy = self.policies[seat]
                self._advance(_as_action(policy(game.observe(seat), game.mask_bytes.copy(), self.np_random)))
        except BaseException:
            # an opponent's policy failed mid-turn: another seat is to act, so only reset() may go on
            self._episode_over = True
            self._mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
            raise
        self._observation = game.observe(learner)
        self._mask = np.zeros(NUM_ACTIONS, dtype=np.int8) if game.over else game.mask_bytes.copy()
        self._episode_over = game.over

    def _info(self) -> dict[str, Any]:
        """A fresh info dict: the mask, and the last deal summary since the previous call."""
        info: dict[str, Any] = {"action_mask": self._mask.copy()}
        if self._deal is not None:
            info["deal"], self._deal = self._deal, None
        return info

    def action_masks(self) -> np.ndarray:
        """(133,) bool: the learner's legal actions now (all False once the episode is over)."""
        return self._mask.astype(bool)

    def render(self) -> str | None:
        """The table (all hands) as text for ``ansi``; printed for ``human``; None without a render mode."""
        return render_in_mode(self.single_game, self.render_mode)

    def close(self) -> None:
        pass


def _register() -> None:
    """Register ``Pedro-v0`` (and its vector env, for ``gymnasium.make_vec``) once; doing it again is harmless."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(
            id=ENV_ID,
            entry_point="pedro_env.gym:PedroGymEnv",
            vector_entry_point="pedro_env.gym_vector:PedroGymVectorEnv",
        )


_register()
