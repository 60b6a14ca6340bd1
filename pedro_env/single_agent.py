"""What both single-agent Gymnasium faces share: the learner's seat, the opponents per seat, illegal actions.

:class:`pedro_env.gym.PedroGymEnv` (one game) and :class:`pedro_env.gym_vector.PedroGymVectorEnv` (a batch)
seat one learner and let opponents play the other seats. Both read their ``opponents`` argument with
:func:`opponents_per_seat` (one opponent for every seat, a dict ``{seat or "player_k": opponent}`` or a
list per seat; a seat left out or given None plays the random opponent), and both default to the one
random opponent, :class:`UniformRandomAgent` (batched ``act`` for the vector face, a call for one game;
:func:`pedro_env.actions.uniform_legal_actions` draws, as ``agents``' ``random`` does).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from pedro_env.actions import uniform_legal_actions

ILLEGAL_ACTION_MODES = ("terminate", "raise")  # the first is the default

OpponentPolicy = Callable[[np.ndarray, np.ndarray, np.random.Generator], int]
"""``policy(observation uint8 (D,), action_mask int8 (133,), rng) -> action index``."""


class RenderModeError(ValueError, TypeError):
    """A render mode the env does not have; a TypeError too, the signal on which SB3's make_vec_env drops it."""


class UniformRandomAgent:
    """A uniformly random legal action: the default opponent, batched (``act``) or for one game (a call)."""

    name = "random"

    def act(self, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """(B,) int64: one legal action per row of ``action_masks`` (B, 133)."""
        return uniform_legal_actions(action_masks, rng)

    def __call__(self, observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator) -> int:
        """One game's action: ``action_mask`` (133,) -> a legal action index."""
        return int(uniform_legal_actions(action_mask[None], rng)[0])


uniform_random_policy: OpponentPolicy = UniformRandomAgent()
"""``uniform_random_policy(observation, action_mask, rng) -> int``: a uniformly random legal action."""


def check_render_mode(render_mode: str | None, render_modes: Sequence[str]) -> None:
    """Raise :class:`RenderModeError` unless ``render_mode`` is None or one of ``render_modes``."""
    if render_mode is not None and render_mode not in render_modes:
        allowed = ", ".join(repr(mode) for mode in (None, *render_modes))
        raise RenderModeError(f"render_mode = {render_mode!r} is not allowed: allowed values are {allowed}")


def check_learner_seat(learner_seat: Any, num_players: int) -> int | str:
    """``learner_seat`` as an int seat or ``"random"``; ValueError for anything else."""
    if learner_seat == "random":
        return "random"
    if isinstance(learner_seat, (int, np.integer)) and not isinstance(learner_seat, bool):
        if 0 <= learner_seat < num_players:
            return int(learner_seat)
    raise ValueError(
        f"learner_seat = {learner_seat!r} is not allowed: allowed values are 0..{num_players - 1} or 'random'"
    )


def check_illegal_action(illegal_action: str) -> None:
    """Raise ValueError unless ``illegal_action`` is one of :data:`ILLEGAL_ACTION_MODES`."""
    if illegal_action not in ILLEGAL_ACTION_MODES:
        allowed = ", ".join(repr(mode) for mode in ILLEGAL_ACTION_MODES)
        raise ValueError(f"illegal_action = {illegal_action!r} is not allowed: allowed values are {allowed}")


def opponents_per_seat(
    opponents: Any, num_players: int, check: Callable[[str, Any], None], random_names: tuple[str, ...] = ()
) -> list[Any]:
    """``opponents`` -> one opponent per seat.

    ``opponents``: one opponent for every seat, a dict ``{seat or "player_k": opponent}`` or a list with one
    entry per seat; a seat left out, given None or one of ``random_names``, plays one shared
    :class:`UniformRandomAgent`. ``check(where, opponent)`` raises TypeError for an opponent the face cannot
    use (``where``: ``opponents`` or ``opponents[seat]``). ValueError for a key that is no seat or a list of
    the wrong length.
    """
    if isinstance(opponents, Mapping):
        names = {f"player_{seat}": seat for seat in range(num_players)}
        entries: list[Any] = [None] * num_players
        for key, entry in opponents.items():
            seat = names.get(key, key) if isinstance(key, str) else key
            if isinstance(seat, bool) or not isinstance(seat, (int, np.integer)) or not 0 <= seat < num_players:
                last = num_players - 1
                allowed = f"0..{last} or player_0..player_{last}"
                raise ValueError(f"opponents key {key!r} is not a seat: allowed keys are {allowed}")
            entries[int(seat)] = entry
        where = "opponents[{}]"
    elif isinstance(opponents, Sequence) and not isinstance(opponents, (str, bytes)):
        if len(opponents) != num_players:
            raise ValueError(f"opponents as a list needs one entry per seat ({num_players}), got {len(opponents)}")
        entries = list(opponents)
        where = "opponents[{}]"
    else:
        entries, where = [opponents] * num_players, "opponents"
    random_agent = UniformRandomAgent()  # one for every random seat: a batched face calls it once per step
    seated = []
    for seat, entry in enumerate(entries):
        if entry is None or (isinstance(entry, str) and entry in random_names):
            seated.append(random_agent)
        else:
            check(where.format(seat), entry)
            seated.append(entry)
    return seated
