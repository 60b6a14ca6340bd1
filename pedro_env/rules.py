"""The Pedro engine's Python entry points: dealing, the legal actions and the step of a batch of games.

One rules implementation for every environment: the compiled kernels of :mod:`pedro_env.kernels`,
which loop over the games of a batch (a batch of one for the AEC env). ``step`` applies one action
per game in place. Decks come from a ``deck_source``: by default a counter-based hash of
``(seed, match_index, deal_index)`` computed inside the kernels, so a game's deals depend only on its
own seed and a batch plays exactly like the same games one by one; any other source is called with
the games that need a deck. The checks of a stepped action (its dtype and range, the legal mask, a renege
the config allows) and :class:`IllegalActionError` sit here too, beside the rules they check, for every env.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np

from pedro_env.actions import NUM_ACTIONS, PLAY_OFFSET, action_to_str
from pedro_env.cards import CARD_BIT, RuleTables
from pedro_env.config import PedroConfig
from pedro_env.kernels.dealing import deal_games, hashed_dealers_into, hashed_decks_into, new_matches
from pedro_env.kernels.inputs import config_params
from pedro_env.kernels.observations import legal_masks
from pedro_env.kernels.steps import step_games, step_scratch
from pedro_env.state import PLAY, PedroState

DeckSource = Callable[[PedroState, np.ndarray], np.ndarray]
"""``deck_source(state, games) -> (len(games), 52)`` card ids, top first, for each game's next deal."""


@lru_cache(maxsize=64)
def kernel_inputs(config: PedroConfig) -> tuple[np.ndarray, np.ndarray]:
    """``(params, tab)`` of a config for the kernels (cached, read-only)."""
    return config_params(config), RuleTables.for_variant(config.variant).kernel_table


# ---------------------------------------------------------------- randomness


def hashed_decks(seed: np.ndarray, match_index: np.ndarray, deal_index: np.ndarray) -> np.ndarray:
    """(k, 52) int8 shuffled decks, a pure function of each game's (seed, match, deal)."""
    seed, match_index, deal_index = (np.asarray(a).reshape(-1) for a in (seed, match_index, deal_index))
    decks = np.empty((seed.size, 52), dtype=np.int8)
    hashed_decks_into(seed.astype(np.uint64), match_index.astype(np.int64), deal_index.astype(np.int64), decks)
    return decks


def hashed_dealers(seed: np.ndarray, match_index: np.ndarray, num_players: int) -> np.ndarray:
    """(k,) int8 first dealer of each match (standing in for the cut)."""
    seed, match_index = (np.asarray(a).reshape(-1) for a in (seed, match_index))
    dealers = np.empty(seed.size, dtype=np.int8)
    hashed_dealers_into(seed.astype(np.uint64), match_index.astype(np.int64), int(num_players), dealers)
    return dealers


def seed_deck_source(state: PedroState, games: np.ndarray) -> np.ndarray:
    """The default deck source: decks hashed from each game's seed and counters."""
    return hashed_decks(state.seed[games], state.match_index[games], state.deal_index[games])


# ---------------------------------------------------------------- dealing


def _deal_from(state: PedroState, games: np.ndarray, params: np.ndarray, deck_source: DeckSource) -> None:
    decks = np.ascontiguousarray(deck_source(state, games), dtype=np.int8)
    deal_games(state.buffer, state.element_offsets, state.batch_size, params, games, decks)


def start_deal(state: PedroState, games: np.ndarray, config: PedroConfig, deck_source: DeckSource) -> None:
    """Deal the next deck to ``games`` (their dealer and deal_index already set) and open the bidding."""
    games = np.asarray(games, dtype=np.int64).reshape(-1)
    if games.size:
        _deal_from(state, games, kernel_inputs(config)[0], deck_source)


def new_match(
    state: PedroState,
    games: np.ndarray,
    config: PedroConfig,
    deck_source: DeckSource = seed_deck_source,
    dealers: np.ndarray | None = None,
) -> None:
    """Start a fresh match in ``games`` (seed and match_index already set): scores 0, first dealer, first deal."""
    games = np.asarray(games, dtype=np.int64).reshape(-1)
    params = kernel_inputs(config)[0]
    dealers = np.full(games.size, -1, dtype=np.int64) if dealers is None else np.asarray(dealers, dtype=np.int64)
    pending = np.empty(games.size, dtype=np.int64)
    hashed = deck_source is seed_deck_source
    waiting = new_matches(
        state.buffer, state.element_offsets, state.batch_size, params, games, dealers, hashed, pending
    )
    if waiting:
        _deal_from(state, pending[:waiting], params, deck_source)


def initial_state(
    config: PedroConfig,
    seeds: np.ndarray,
    deck_source: DeckSource = seed_deck_source,
    dealers: np.ndarray | None = None,
) -> PedroState:
    """A batch of fresh matches, one per seed (uint64-convertible ints)."""
    seeds = np.asarray(seeds, dtype=np.uint64).reshape(-1)
    state = PedroState.empty(config, seeds.size)
    state.seed[:] = seeds
    new_match(state, np.arange(seeds.size), config, deck_source, dealers)
    return state


# ---------------------------------------------------------------- legal actions and the step


def legal_action_mask(
    state: PedroState, config: PedroConfig, tables: RuleTables | None = None, out: np.ndarray | None = None
) -> np.ndarray:
    """(B, 133) bool: the actor's legal actions in every game (all False where the phase is OVER).

    ``tables`` is accepted for older callers and ignored (the config names the variant); ``out``, a
    (B, 133) bool array, is filled and returned instead of a new one."""
    params, tab = kernel_inputs(config)
    mask = np.empty((state.batch_size, NUM_ACTIONS), dtype=bool) if out is None else out
    legal_masks(state.buffer, state.element_offsets, state.batch_size, params, tab, mask)
    return mask


def step(
    state: PedroState, actions: np.ndarray, config: PedroConfig, deck_source: DeckSource = seed_deck_source
) -> None:
    """Apply one action per game, in place. Actions must be legal (see :func:`legal_action_mask`);
    with ``renege="penalty"`` a play of a held card outside the legal set is a renege. Games whose
    phase is OVER ignore their action. Afterwards ``rewards``, ``deal_over``, ``terminated`` and
    ``truncated`` describe this step, and the ``last_*`` fields any deal that ended in it."""
    params, tab = kernel_inputs(config)
    b = state.batch_size
    actions = np.ascontiguousarray(actions, dtype=np.int64).reshape(b)
    hashed = deck_source is seed_deck_source
    pending = np.empty(b, dtype=np.int64)
    waiting = step_games(
        state.buffer, state.element_offsets, b, params, tab, actions, hashed, pending, *step_scratch(params)
    )
    if waiting:
        _deal_from(state, pending[:waiting], params, deck_source)


# ---------------------------------------------------------------- checking actions


class IllegalActionError(ValueError):
    """An action outside the acting player's legal set."""


def illegal_action_message(action: int, legal_mask: np.ndarray, where: str) -> str:
    """A message naming the action, where it was tried and the legal actions."""
    try:
        text = action_to_str(action)
    except ValueError:
        text = f"{action!r} (outside 0..{NUM_ACTIONS - 1})"
    legal = ", ".join(action_to_str(a) for a in np.flatnonzero(legal_mask))
    return f"illegal action {text} {where}: the legal actions are {legal or 'none (the episode is over)'}"


def renege_allowed(state: PedroState, config: PedroConfig, actions: np.ndarray) -> np.ndarray:
    """(B,) bool: with renege="penalty", the action plays a card the actor holds (a renege if not legal)."""
    if config.renege != "penalty":
        return np.zeros(state.batch_size, dtype=bool)
    cards = actions - PLAY_OFFSET
    playing = (state.phase == PLAY) & (cards >= 0) & (cards < 52)
    rows = np.arange(state.batch_size)
    held = state.hands[rows, state.actor] & CARD_BIT[np.clip(cards, 0, 51)]
    return playing & (held != 0)


def int64_actions(actions: np.ndarray, games: int) -> np.ndarray:
    """``actions`` (any integer dtype, uint64 included) as a C-contiguous, writable, aligned (games,) int64 array
    (the type the step kernel is compiled for), the ones
    outside 0..132 as -1 (a uint64 past int64 would wrap round); ValueError for a wrong shape or dtype."""
    if actions.dtype == np.int64 and actions.shape == (games,):
        flags = actions.flags
        if flags.c_contiguous and flags.writeable and flags.aligned:
            return actions  # as given (the very type the step kernel is compiled for): the kernel checks the range
        return actions.copy()
    if actions.shape != (games,) or not np.issubdtype(actions.dtype, np.integer):
        raise ValueError(f"actions must be an integer array of shape ({games},), got {actions.dtype} {actions.shape}")
    in_range = (actions >= 0) & (actions < NUM_ACTIONS)
    return np.where(in_range, actions, -1).astype(np.int64)


def check_actions(
    actions: np.ndarray, state: PedroState, mask: np.ndarray, config: PedroConfig
) -> tuple[np.ndarray, np.ndarray]:
    """One action per game checked against the legal ``mask`` (B, 133): ``(actions as int64, legal (B,) bool)``.

    ``actions`` may have any integer dtype (uint64 included); out-of-range ones are illegal (and 0 in the
    int64 copy); a renege the config allows counts as legal. ValueError for a wrong shape or dtype.
    """
    games = mask.shape[0]
    checked = int64_actions(actions, games)
    in_range = (checked >= 0) & (checked < NUM_ACTIONS)
    played = np.where(in_range, checked, 0)
    legal = in_range & mask[np.arange(games), played]
    if not legal.all():
        legal |= in_range & renege_allowed(state, config, played)
    return played, legal
