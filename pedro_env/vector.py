"""The batched environment for training: ``B`` matches stepped together, one numpy call chain per step.

Every game always has one acting seat (finished games restart at once, so there is never an idle
game). A step takes one action per game and returns a :class:`VectorStep`. Rewards follow the AEC
convention: ``rewards[b, s]`` is what seat ``s`` of game ``b`` earned since its own last decision,
so a learner credits ``rewards[b, actor[b]]`` to that seat's previous decision, and at the end of an
episode (``terminated | truncated``) credits every seat's entry to that seat's last decision.
The observation returned with a finished game is already the first one of its next episode.

Game ``i`` of ``reset(seed=s)`` plays exactly like a single game seeded ``s + i`` (see
:func:`pedro_env.rules.hashed_decks`), so ``s`` is an int from 0 to 2**64 - ``num_envs`` (every game's
seed a uint64, none wrapping round to a small one).

Errors, each with a one-line message: ConfigError for a bad config; SeedError (a ValueError and a
TypeError) for a bad seed; ValueError for bad ``num_envs``, action arrays or ``restart``/``select`` arguments;
IllegalActionError (a ValueError) for an illegal action; RuntimeError for a call before ``reset``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from pedro_env.actions import NUM_ACTIONS
from pedro_env.cards import RuleTables
from pedro_env.config import SEED_LIMIT, PedroConfig, SeedError, check_seed, make_config, short_repr
from pedro_env.encoding import ObservationEncoder
from pedro_env.kernels.steps import entry_point, vector_step, vector_step_scratch
from pedro_env.rules import (
    IllegalActionError,
    illegal_action_message,
    initial_state,
    int64_actions,
    legal_action_mask,
    new_match,
)
from pedro_env.state import OVER, PedroState


@dataclass
class VectorStep:
    """What :class:`PedroVectorEnv` returns for every game after ``reset`` or ``step``."""

    actor: np.ndarray  # (B,) int8: seat to act now
    observation: np.ndarray  # (B, D) uint8: the actor's observation (see pedro_env.encoding)
    action_mask: np.ndarray  # (B, 133) int8: 1 = legal for the actor
    rewards: np.ndarray  # (B, n) float32: each seat's reward since its own last decision
    terminated: np.ndarray  # (B,) bool: the episode ended with a result in this step (the game restarted)
    truncated: np.ndarray  # (B,) bool: the episode hit max_deals in this step (the game restarted)
    deal_over: np.ndarray  # (B,) bool: a deal ended in this step (its summary is in ``deals``)
    deals: dict[
        str, np.ndarray
    ]  # per game: redeal, maker, bid, trump, points (B,T), made, delta (B,T), renege, scores (B,T), winner


# VectorStep.deals key -> PedroState field
DEAL_FIELDS = {
    "redeal": "last_redeal",
    "maker": "last_maker",
    "bid": "last_bid",
    "trump": "last_trump",
    "points": "last_points",
    "made": "last_made",
    "delta": "last_delta",
    "renege": "last_renege",
    "scores": "scores",
    "winner": "winner",
}


class PedroVectorEnv:
    """``num_envs`` Pedro matches stepped at once; config keys: docs/rules.md section 9 (rules and episode keys).

    ``reuse_outputs=True``: every ``step`` writes its VectorStep's actor, observation, action_mask, rewards,
    terminated, truncated and deal_over arrays into the same preallocated arrays (the mask alternates
    between two), so a step allocates almost nothing; copy what must outlive the next step. The default
    returns new arrays every step.
    """

    def __init__(
        self, num_envs: int, config: PedroConfig | None = None, *, reuse_outputs: bool = False, **overrides: Any
    ) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs = {num_envs!r} is not allowed: it must be an int >= 1")
        self.num_envs = int(num_envs)
        self.config = make_config(config, **overrides)
        self.tables = RuleTables.for_variant(self.config.variant)
        self.encoder = ObservationEncoder(self.config, self.tables)
        self.num_players = self.config.num_players
        self.observation_size = self.encoder.size
        self.num_actions = NUM_ACTIONS
        self.state: PedroState | None = None
        self._mask: np.ndarray | None = None
        self._pending = np.zeros((self.num_envs, self.num_players), dtype=np.float32)
        self.reuse_outputs = bool(reuse_outputs)
        self._reused: tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]] | None = None
        self._inputs_of: PedroState | None = None
        self._inputs: tuple = ()
        self._scratch: tuple = ()  # vector_step's scratch arrays, made with its inputs
        self._step_kernel = vector_step  # compiled for the types of this env's arrays once it steps

    def reset(self, seed: int | None = None) -> VectorStep:
        """Start ``num_envs`` fresh matches; game ``i`` uses seed ``seed + i`` (random base if None).

        ``seed``: an int from 0 to 2**64 - num_envs; SeedError otherwise.
        """
        if seed is None:
            base = int(np.random.SeedSequence().entropy % (SEED_LIMIT - self.num_envs + 1))
        else:
            base = check_seed(seed, games=self.num_envs)
        seeds = np.uint64(base) + np.arange(self.num_envs, dtype=np.uint64)
        self.state = initial_state(self.config, seeds)
        self._pending[:] = 0.0
        self._no_deals = {name: getattr(self.state, field).copy() for name, field in DEAL_FIELDS.items()}
        for filler in self._no_deals.values():
            filler.setflags(write=False)
        return self._result()

    def step(self, actions: np.ndarray) -> VectorStep:
        """Apply one action per game (``(B,)`` ints); raises IllegalActionError on an illegal one."""
        state = self.state
        if state is None or self._mask is None:
            raise RuntimeError("call reset() before step()")
        offered = actions if type(actions) is np.ndarray else np.asarray(actions)  # as given, for the error message
        actions = int64_actions(offered, self.num_envs)
        observation, mask, rewards, flags, scores, winner, actor, mask_bytes, terminated, truncated, deal_over = (
            self._outputs()
        )
        arguments = (actions, self._mask, self._pending, rewards, observation, mask, flags, scores, winner, actor)
        if self._inputs_of is not state:  # the kernel's inputs that only change with the state object
            self._inputs_of = state
            self._inputs = (state.buffer, state.element_offsets, self.num_envs, self.encoder.statics)
            self._scratch = vector_step_scratch(self.encoder.params, self.num_envs)
            # every array argument is the env's own (actions: int64_actions' C-contiguous int64), of the
            # types compiled for here: the compiled function is called without numba's dispatch
            self._step_kernel = entry_point(vector_step, *self._inputs, *arguments, *self._scratch)
        code = self._step_kernel(*self._inputs, *arguments, *self._scratch)
        if code < 0:
            game = -code - 1
            where = f"in game {game} for seat {int(state.actor[game])}"
            raise IllegalActionError(illegal_action_message(int(offered[game]), self._mask[game], where))
        self._mask = mask
        if code:
            deals = {name: getattr(state, field).copy() for name, field in DEAL_FIELDS.items()}
            deals["scores"], deals["winner"] = scores, winner
        else:
            deals = self._no_deals
        return VectorStep(actor, observation, mask_bytes, rewards, terminated, truncated, deal_over, deals)

    def _outputs(self) -> tuple[np.ndarray, ...]:
        """Arrays for a step: observation, mask, rewards, flags (3, B), scores, winner, actor, then the views a
        VectorStep shows (the mask as int8, the three flag rows). New ones, or with ``reuse_outputs`` the same
        ones every step (two masks in turn: one is the legality check of the step)."""
        if self._reused is not None:
            first, second = self._reused
            return second if first[1] is self._mask else first
        b, n, teams = self.num_envs, self.num_players, self.config.num_teams
        mask, flags = np.empty((b, NUM_ACTIONS), dtype=bool), np.empty((3, b), dtype=bool)
        rest = (
            np.empty((b, n), dtype=np.float32),
            flags,
            np.empty((b, teams), dtype=np.int32),
            np.empty(b, dtype=np.int8),
            np.empty(b, dtype=np.int8),
        )
        observation = np.empty((b, self.observation_size), dtype=np.uint8)
        arrays = (observation, mask, *rest, mask.view(np.int8), flags[0], flags[1], flags[2])
        if self.reuse_outputs:  # the same arrays but the mask, in two sets taken in turn
            other_mask = np.empty((b, NUM_ACTIONS), dtype=bool)
            self._reused = (arrays, (observation, other_mask, *rest, other_mask.view(np.int8), *arrays[8:]))
        return arrays

    def _result(self) -> VectorStep:
        state = self.state
        assert state is not None
        ended = np.flatnonzero(state.phase == OVER)
        rewards = self._pending.copy()
        terminated, truncated = state.terminated.copy(), state.truncated.copy()
        deal_over = state.deal_over.copy()
        if deal_over.any():
            deals = {name: getattr(state, field).copy() for name, field in DEAL_FIELDS.items()}
        else:  # entries are only meaningful where deal_over; share one read-only filler
            deals = self._no_deals
        if ended.size:
            state.match_index[ended] += 1
            new_match(state, ended, self.config)
            self._pending[ended] = 0.0
        self._mask = legal_action_mask(state, self.config, self.tables)
        observation = self.encoder.encode(state, state.actor)
        return VectorStep(
            actor=state.actor.copy(),
            observation=observation,
            action_mask=self._mask.view(np.int8),
            rewards=rewards,
            terminated=terminated,
            truncated=truncated,
            deal_over=deal_over,
            deals=deals,
        )

    def restart(self, games: np.ndarray, seeds: np.ndarray, dealers: np.ndarray | None = None) -> VectorStep:
        """Start fresh matches in ``games`` with the given seeds (and first dealers, else drawn from the seeds).

        For evaluation, which plays chosen seeds in chosen slots: a restarted game plays exactly like
        ``pedro_env.env()`` reset with that seed. Returns the whole batch's current VectorStep (rewards
        zero, nothing terminated).
        """
        if self.state is None:
            raise RuntimeError("call reset() before restart()")
        games = self._index_array(games, "games", 0, self.num_envs - 1)
        if np.unique(games).size != games.size:
            raise ValueError("games must not name a game twice")
        seeds = self._seed_array(seeds, games.size)
        if dealers is not None:
            dealers = self._index_array(dealers, "dealers", 0, self.num_players - 1, games.size)
        self.state.seed[games] = seeds
        self.state.match_index[games] = 0
        new_match(self.state, games, self.config, dealers=None if dealers is None else dealers.astype(np.int8))
        self._pending[games] = 0.0
        result = self._result()
        # a report of the restart itself, not of the last step (whose results the caller has already read)
        result.rewards[:] = 0.0
        result.terminated[:] = False
        result.truncated[:] = False
        result.deal_over[:] = False
        result.deals = self._no_deals
        return result

    def select(self, games: np.ndarray) -> PedroVectorEnv:
        """A new env of ``len(games)`` games: copies of ``games`` (an index array, in that order) as they stand now.

        Each selected game then steps exactly as it would have here (the same state, and the same rewards
        not yet reported); :meth:`current_step` gives the new env's current step. For evaluation, which moves
        the matches still running into a smaller batch. ValueError for an empty or out-of-range ``games``.
        """
        if self.state is None or self._mask is None:
            raise RuntimeError("call reset() before select()")
        games = self._index_array(games, "games", 0, self.num_envs - 1)
        if games.size == 0:
            raise ValueError("games must name at least one game")
        selected = PedroVectorEnv(games.size, config=self.config)
        selected.state = self.state.select(games)
        selected._mask = self._mask[games]
        selected._pending[:] = self._pending[games]
        selected._no_deals = {name: filler[games] for name, filler in self._no_deals.items()}
        for filler in selected._no_deals.values():
            filler.setflags(write=False)
        return selected

    def current_step(self) -> VectorStep:
        """The current VectorStep again: actor, observation and mask as they are; ``rewards`` each seat's reward
        since its own last decision; no episode or deal end flagged (the step that ended them reported those)."""
        if self.state is None:
            raise RuntimeError("call reset() before current_step()")
        result = self._result()
        result.terminated[:] = False
        result.truncated[:] = False
        result.deal_over[:] = False
        result.deals = self._no_deals
        return result

    @staticmethod
    def _index_array(values: Any, name: str, low: int, high: int, size: int | None = None) -> np.ndarray:
        """``values`` as a 1-D intp array of ints in ``low..high`` (of ``size`` entries if given); ValueError else."""
        array = np.asarray(values)
        if array.ndim != 1 or not (np.issubdtype(array.dtype, np.integer) or array.size == 0):
            raise ValueError(f"{name} must be a 1-D array of ints, got {array.dtype} {array.shape}")
        if size is not None and array.size != size:
            raise ValueError(f"{name} must have one entry per restarted game ({size}), got {array.size}")
        if array.size and (array.min() < low or array.max() > high):
            raise ValueError(f"{name} must lie in {low}..{high}, got {short_repr(array.tolist())}")
        return array.astype(np.intp)

    @staticmethod
    def _seed_array(seeds: Any, size: int) -> np.ndarray:
        """``seeds`` as a (size,) uint64 array; SeedError unless each is an int from 0 to 2**64 - 1."""
        array = np.asarray(seeds)
        if array.dtype == object:  # Python ints past int64: check each one
            array = np.array([check_seed(seed) for seed in array.reshape(-1)], dtype=np.uint64).reshape(array.shape)
        if array.shape != (size,) or not (np.issubdtype(array.dtype, np.integer) or array.size == 0):
            raise SeedError(f"seeds must be {size} ints from 0 to 2**64 - 1, got {array.dtype} {array.shape}")
        if array.size and np.issubdtype(array.dtype, np.signedinteger) and array.min() < 0:
            raise SeedError(f"seeds must be ints from 0 to 2**64 - 1, got {int(array.min())}")
        return array.astype(np.uint64)

    def snapshot(self) -> dict[str, np.ndarray]:
        """Copies of everything that decides the games' future: the state's fields and the rewards not yet reported.

        With :meth:`restore` a trainer checkpoints the environment between two steps and continues exactly.
        """
        if self.state is None:
            raise RuntimeError("call reset() before snapshot()")
        arrays = {f"state.{item.name}": getattr(self.state, item.name).copy() for item in fields(PedroState)}
        arrays["pending_rewards"] = self._pending.copy()
        return arrays

    def restore(self, arrays: dict[str, np.ndarray]) -> VectorStep:
        """Continue from a :meth:`snapshot` (of an env with the same ``num_envs`` and config).

        Returns the current VectorStep: actor, observation and mask as they were; ``rewards`` the rewards
        not yet reported; no episode or deal end flagged (those were reported by the step that ended them).
        """
        expected = {f"state.{item.name}" for item in fields(PedroState)} | {"pending_rewards"}
        if set(arrays) != expected:
            missing, extra = sorted(expected - set(arrays)), sorted(set(arrays) - expected)
            raise ValueError(f"not a snapshot of PedroVectorEnv: missing {missing}, unexpected {extra}")
        state = PedroState(**{item.name: np.array(arrays[f"state.{item.name}"]) for item in fields(PedroState)})
        if state.batch_size != self.num_envs or arrays["pending_rewards"].shape != self._pending.shape:
            raise ValueError(
                f"snapshot of {state.batch_size} games with rewards {arrays['pending_rewards'].shape} does not fit "
                f"this env of {self.num_envs} games and {self.num_players} players"
            )
        if self.state is None:
            self.reset(seed=0)  # builds the read-only deal fillers
        self.state = state
        self._pending[:] = arrays["pending_rewards"]
        # the state keeps its deal-end flags: the next step clears them with the deal's rewards and summary
        return self.current_step()

    def full_state(self) -> np.ndarray:
        """(B, D + n*52 + 52) uint8: each game's full state (all hands, the stock) seen from its actor."""
        if self.state is None:
            raise RuntimeError("call reset() before full_state()")
        return self.encoder.encode_full_state(self.state, self.state.actor)
