"""The step loop: one action per game applied in place (bids, trumps, discards, plays), deals that end scored
and the next dealt; and the fused steps of the environments (:func:`aec_step`, :func:`vector_step`), each
one call that allocates nothing. How they stay cheap: docs/engine.md."""

from __future__ import annotations

import numpy as np
from numba import config, njit

from pedro_env.actions import NUM_ACTIONS, PLAY_OFFSET
from pedro_env.kernels.bidding import apply_bid, name_trumps
from pedro_env.kernels.bits import ZERO, card_bit, typed_views
from pedro_env.kernels.cache import announce_probe
from pedro_env.kernels.dealing import deal_or_defer, new_matches
from pedro_env.kernels.exchange import apply_discard
from pedro_env.kernels.inputs import (
    F_ACTOR,
    F_DEAL_OVER,
    F_HANDS,
    F_LAST_REDEAL,
    F_LAST_RENEGE,
    F_MATCH_INDEX,
    F_PHASE,
    F_REWARDS,
    F_SCORES,
    F_TERMINATED,
    F_TRUNCATED,
    F_WINNER,
    P_PLAYERS,
    P_RENEGE_PENALTY,
    P_STOCK,
    P_TEAMS,
    unpack_statics,
)
from pedro_env.kernels.observations import encode_games, legal_masks
from pedro_env.kernels.scoring import finish_deal
from pedro_env.kernels.tricks import apply_play, start_play
from pedro_env.state import BID, DISCARD, OVER, PLAY, TRUMP


def step_scratch(params: np.ndarray) -> tuple:
    """The scratch arrays of :func:`step_games` (and of the env steps built on it): taken (stock,) bool,
    deck (52,) int8, keys (52,) uint64, points and delta (teams,) int64. Made once by the caller, so a step
    allocates nothing."""
    teams = int(params[P_TEAMS])
    return (
        np.zeros(int(params[P_STOCK]), dtype=np.bool_),
        np.zeros(52, dtype=np.int8),
        np.zeros(52, dtype=np.uint64),
        np.zeros(teams, dtype=np.int64),
        np.zeros(teams, dtype=np.int64),
    )


@njit(cache=True, _nrt=False)
def step_games(buf, eo, b, params, tab, actions, hashed, pending, taken, deck, keys, points, delta):
    """Apply one action per game, in place (games OVER ignore theirs). Deals that end are scored and
    the next deal dealt: hashed decks when ``hashed``, else the games are listed in ``pending`` for the
    caller to deal. ``taken`` .. ``delta``: scratch from :func:`step_scratch` (no reference counting here).
    Returns the number of games written to ``pending``."""
    u8, i8, i16, i32, i64, u64, f32 = typed_views(buf)
    waiting = np.int64(0)  # not a literal 0: step_game would be compiled again for it
    for g in range(b):
        waiting = step_game(
            u8, i8, i16, i32, i64, u64, f32, eo, b, g, actions[g], params, tab, hashed, pending, waiting,
            taken, deck, keys, points, delta,
        )  # fmt: skip
    return waiting


@njit(cache=True, _nrt=False, inline="always")
def step_game(
    u8, i8, i16, i32, i64, u64, f32, eo, b, g, action, params, tab, hashed, pending, waiting,
    taken, deck, keys, points, delta,
):  # fmt: skip
    """Game ``g`` takes ``action`` (a game OVER ignores it): what the last step's deal ending reported is
    cleared first; a deal that ends is scored and the next one dealt (or ``g`` appended to ``pending``, see
    :func:`step_games`). Returns the new count of ``pending``."""
    n = params[P_PLAYERS]
    if u8[eo[F_DEAL_OVER] + g]:  # only a deal's end sets these
        for seat in range(n):
            f32[eo[F_REWARDS] + g * n + seat] = 0.0
        u8[eo[F_DEAL_OVER] + g] = 0
        u8[eo[F_LAST_REDEAL] + g] = 0
        i8[eo[F_LAST_RENEGE] + g] = -1
        u8[eo[F_TERMINATED] + g] = 0
        u8[eo[F_TRUNCATED] + g] = 0
    p = i8[eo[F_PHASE] + g]
    if p == PLAY:
        apply_play(u8, i8, i16, i32, i64, u64, f32, eo, b, g, action, params, tab)
    elif p == BID:
        apply_bid(u8, i8, i16, i32, i64, u64, f32, eo, b, g, action, params)
    elif p == TRUMP:
        name_trumps(u8, i8, i16, i32, i64, u64, f32, eo, b, g, action, params, tab)
    elif p == DISCARD:
        if apply_discard(u8, i8, i16, i32, i64, u64, f32, eo, b, g, action, params, tab, taken):
            start_play(u8, i8, i16, i32, i64, u64, f32, eo, b, g, params, tab)
    if u8[eo[F_DEAL_OVER] + g] and finish_deal(u8, i8, i16, i32, i64, u64, f32, eo, b, g, params, tab, points, delta):
        waiting = deal_or_defer(u8, i8, i16, i32, i64, u64, f32, eo, b, g, params, hashed, deck, keys, pending, waiting)
    return waiting


# the status word :func:`aec_step` returns (bits)
AEC_WAITING = 1  # the next deal waits for a deck from the caller (its mask is not written)
AEC_DEAL_OVER = 2  # a deal ended in this step
AEC_TERMINATED = 4
AEC_TRUNCATED = 8
AEC_OVER = 16  # the match is over (phase OVER)
AEC_ACTOR_SHIFT = 8  # the seat to act next, in the bits from here up


@njit(cache=True, _nrt=False)
def aec_step(buf, eo, statics, actions, hashed, pending, mask, taken, deck, keys, points, delta):
    """One AEC step of a batch of one: :func:`step_games` (``actions`` (1,) int64; ``taken`` .. ``delta`` its
    scratch), then :func:`legal_masks` into ``mask`` (1, 133) bool, and what the env reads after a step as one
    status word (``AEC_*`` bits, the next actor above them), so the caller reads no state field. A deal
    waiting for the caller's deck leaves the mask to the caller."""
    params, tab, _, _, _ = unpack_statics(statics)
    u8, i8, _, _, _, _, _ = typed_views(buf)
    b = actions.shape[0]  # 1, as a runtime int: a literal 1 would compile step_games and its helpers again for it
    waiting = step_games(buf, eo, b, params, tab, actions, hashed, pending, taken, deck, keys, points, delta)
    status = np.int64(i8[eo[F_ACTOR]]) << AEC_ACTOR_SHIFT
    if waiting:
        status |= AEC_WAITING
    else:
        legal_masks(buf, eo, b, params, tab, mask)
    if u8[eo[F_DEAL_OVER]]:
        status |= AEC_DEAL_OVER
    if u8[eo[F_TERMINATED]]:
        status |= AEC_TERMINATED
    if u8[eo[F_TRUNCATED]]:
        status |= AEC_TRUNCATED
    if i8[eo[F_PHASE]] == OVER:
        status |= AEC_OVER
    return status



@njit(cache=True)
def random_playout(buf, eo, statics, actions, hashed, pending, mask, taken, deck, keys, points, delta, returns, seed):
    """Uniformly random legal actions by :func:`aec_step` (its arguments; ``mask`` the actor's legal mask on entry)
    until the match is over or a deal waits for the caller's deck; adds each step's rewards to ``returns`` (n,)
    float64 and answers the last status word. ``seed`` seeds numba's generator: the same seed, the same play."""
    np.random.seed(seed)
    f32 = typed_views(buf)[6]
    status = np.int64(0)
    while True:
        legal = 0
        for action in range(NUM_ACTIONS):
            legal += mask[0, action]
        pick = np.random.randint(legal)
        for action in range(NUM_ACTIONS):
            if mask[0, action]:
                if pick == 0:
                    actions[0] = action
                    break
                pick -= 1
        status = aec_step(buf, eo, statics, actions, hashed, pending, mask, taken, deck, keys, points, delta)
        for seat in range(returns.shape[0]):
            returns[seat] += f32[eo[F_REWARDS] + seat]
        if status & (AEC_OVER | AEC_WAITING):
            return status

def vector_step_scratch(params: np.ndarray, b: int) -> tuple:
    """The scratch arrays of :func:`vector_step` for ``b`` games: ``games`` (2B,) int64, then :func:`step_scratch`'s."""
    return (np.zeros(2 * b, dtype=np.int64), *step_scratch(params))


@njit(cache=True, _nrt=False, inline="always")
def first_illegal_game(i8, u64, eo, b, params, actions, mask):
    """The first game whose action ``actions[g]`` is not legal by ``mask`` (B, 133) bool, a renege the config allows
    (a card in the actor's hand, ``renege="penalty"``) counting as legal; -1 when there is none."""
    n = params[P_PLAYERS]
    for g in range(b):
        action = actions[g]
        if 0 <= action < NUM_ACTIONS and mask[g, action]:
            continue
        card = action - PLAY_OFFSET
        held = (
            params[P_RENEGE_PENALTY]
            and i8[eo[F_PHASE] + g] == PLAY
            and 0 <= card < 52
            and u64[eo[F_HANDS] + g * n + i8[eo[F_ACTOR] + g]] & card_bit(card) != ZERO
        )
        if not held:
            return g
    return -1


@njit(cache=True, _nrt=False)
def vector_step(
    buf, eo, b, statics, actions, mask, owed, rewards, obs, next_mask, flags, scores, winner, actor,
    games, taken, deck, keys, points, delta,
):  # fmt: skip
    """One step of PedroVectorEnv, checked and whole, in one call.

    ``actions`` (B,) int64 are checked against ``mask`` (B, 133) bool (a renege the config allows is legal);
    an illegal one returns ``-(game + 1)`` of the first and changes nothing. Otherwise: each game steps;
    ``owed`` (B, n) float32 keeps each seat's reward since its own last decision, ``rewards`` gets a copy
    (then a restarted game owes nothing); ``flags`` (3, B)
    bool gets terminated, truncated, deal_over; ``scores`` (B, T) and ``winner`` (B,) the scores and
    winners before finished matches restart (the next match on the same seed); then ``next_mask`` and ``obs``
    (B, D) uint8 of every actor are written (``next_mask`` may be ``mask``), and ``actor`` (B,) int8.
    ``statics``: :func:`pack_statics`; ``games`` .. ``delta``: scratch from :func:`vector_step_scratch`, so the
    step allocates nothing itself (a restarted match's deal does) and runs without reference counting.
    Returns 1 if a deal ended, else 0.
    """
    params, tab, pieces, to_go_cap, rules = unpack_statics(statics)
    u8, i8, i16, i32, i64, u64, f32 = typed_views(buf)
    n, teams = params[P_PLAYERS], params[P_TEAMS]
    illegal = first_illegal_game(i8, u64, eo, b, params, actions, mask)
    if illegal >= 0:
        return -(illegal + 1)
    for g in range(b):
        owed[g, i8[eo[F_ACTOR] + g]] = 0.0
    pending, viewer = games[:b], games[b:]
    hashed = b > 0  # True, as a runtime bool: a literal True would compile the helpers again for it
    step_games(buf, eo, b, params, tab, actions, hashed, pending, taken, deck, keys, points, delta)
    any_deal = 0
    restarting = 0
    for g in range(b):
        for seat in range(n):
            owed[g, seat] += f32[eo[F_REWARDS] + g * n + seat]
            rewards[g, seat] = owed[g, seat]
        flags[0, g] = u8[eo[F_TERMINATED] + g]
        flags[1, g] = u8[eo[F_TRUNCATED] + g]
        flags[2, g] = u8[eo[F_DEAL_OVER] + g]
        any_deal |= u8[eo[F_DEAL_OVER] + g]
        for team in range(teams):
            scores[g, team] = i32[eo[F_SCORES] + g * teams + team]
        winner[g] = i8[eo[F_WINNER] + g]
        if i8[eo[F_PHASE] + g] == OVER:
            i64[eo[F_MATCH_INDEX] + g] += 1
            pending[restarting] = g
            restarting += 1
    if restarting:
        dealers = viewer[:restarting]
        dealers[:] = -1
        new_matches(buf, eo, b, params, pending[:restarting], dealers, hashed, pending[restarting:])
        for i in range(restarting):
            for seat in range(n):
                owed[pending[i], seat] = 0.0
    legal_masks(buf, eo, b, params, tab, next_mask)
    for g in range(b):
        viewer[g] = actor[g] = i8[eo[F_ACTOR] + g]
    encode_games(buf, eo, b, params, tab, pieces, to_go_cap, rules, viewer, obs)
    return 1 if any_deal else 0


def entry_point(kernel, *args):
    """The compiled function of ``kernel`` for the numba types of ``args`` (from the cache, or compiled now), to
    call without numba's dispatch, which types every argument on every call (about 0.1 us each). The caller
    must pass arguments of exactly these types every time (dtypes, dimensions, layouts, Python int or bool):
    the entry point converts them without checking. Under ``NUMBA_DISABLE_JIT`` the plain function."""
    if config.DISABLE_JIT:
        return kernel
    return kernel.compile(tuple(kernel.typeof_pyval(arg) for arg in args))


announce_probe(vector_step)
