"""Play sampled worlds out to the end of the deal with the batched engine, and value the outcome.

:func:`play_out` steps a batch of :class:`~pedro_env.state.PedroState` worlds (the config's
``episode`` must be ``"deal"``, so every world stops when its deal is scored or thrown in): a first
action per world, then a rollout agent for every seat, all worlds in one batch, each seat seeing
only its own observation (a rule-based agent's discards, which read only the trump suit, whether
it robs the pack and the maker's seat, are asked of it from those facts directly). Seat ``0`` may
follow a discard plan instead (``keep``: the cards it keeps; it throws the rest, least useful
first, as far as the rules allow). The value of a world is the deal's score change for team ``0``
less the other teams' mean, in match points.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from agents.base import Agent
from agents.rule_based import RuleBasedAgent
from pedro_env.actions import DISCARD_OFFSET, DONE_ACTION
from pedro_env.cards import CARD_BIT, RuleTables
from pedro_env.config import PedroConfig
from pedro_env.encoding import ObservationEncoder
from pedro_env.kernels.scoring import deal_points, score_deal
from pedro_env.rules import legal_action_mask, step
from pedro_env.state import DISCARD, OVER, PLAY, PedroState

CARD_BITS = CARD_BIT[None, :]  # (1, 52) uint64


def deal_values(worlds: PedroState) -> np.ndarray:
    """(W,) float: each world's last deal score change of team 0 less the other teams' mean."""
    delta = worlds.last_delta.astype(np.float64)
    return delta[:, 0] - delta[:, 1:].mean(axis=1)


def plan_actions(hand: np.ndarray, masks: np.ndarray, keep: np.ndarray, keep_value: np.ndarray) -> np.ndarray:
    """(W,) the discard-plan action of a hand (W,) uint64 in each world (-1 where the plan has nothing to say):
    throw the least useful legal card outside ``keep`` (W,) uint64, else say done if allowed.
    ``keep_value`` (W, 52): the higher, the more a card is worth keeping."""
    outside = ((hand & ~keep)[:, None] & CARD_BITS) != 0  # (W, 52)
    throwable = outside & masks[:, DISCARD_OFFSET:DONE_ACTION]
    worst = np.where(throwable, -keep_value, -(1 << 14)).argmax(axis=1)
    action = np.where(throwable.any(axis=1), DISCARD_OFFSET + worst, np.where(masks[:, DONE_ACTION], DONE_ACTION, -1))
    return action


def play_out(
    worlds: PedroState,
    config: PedroConfig,
    player: Agent,
    rng: np.random.Generator,
    first_actions: np.ndarray | None = None,
    plan: np.ndarray | None = None,
    keep: np.ndarray | None = None,
    keep_value: np.ndarray | None = None,
) -> np.ndarray:
    """Play every world (in place) to the end of its deal; (W,) float values (:func:`deal_values`).

    ``first_actions`` (W,) int: the first step's action of each world, -1 (or None) for the rollout agent's;
    ``plan`` (W,) bool: seat 0 of that world follows its discard plan ``keep`` (W,) uint64 (:func:`plan_actions`,
    with ``keep_value`` (W, 52)) while it discards. Worlds are independent: a world's value does not depend on
    the other worlds of the batch.
    """
    if config.episode != "deal":
        raise ValueError("play_out needs a config with episode='deal'")
    tables = RuleTables.for_variant(config.variant)
    encoder = ObservationEncoder(config, tables)
    worlds.last_delta[:] = 0
    n = config.num_players
    rule_player = player if isinstance(player, RuleBasedAgent) else None
    actions = np.zeros(worlds.batch_size, dtype=np.int64)
    first_step = True
    while True:
        live = np.flatnonzero(worlds.phase != OVER)
        if live.size == 0:
            break
        masks = legal_action_mask(worlds, config, tables)
        discarding = live[worlds.phase[live] == DISCARD] if rule_player is not None else live[:0]
        if discarding.size:  # a rule player's discards read only trumps, robbing and the maker: no observation
            actor = worlds.actor[discarding]
            maker = np.where(worlds.maker[discarding] >= 0, (worlds.maker[discarding] - actor) % n, -1)
            actions[discarding] = rule_player.discard_actions(
                worlds.trump[discarding], worlds.robbing[discarding], maker, masks[discarding]
            )
        others = live if not discarding.size else live[worlds.phase[live] != DISCARD]
        if others.size:
            observations = encoder.encode(worlds, worlds.actor)
            actions[others] = player.act(observations[others], masks[others], rng)
        if plan is not None:
            mine = live[plan[live] & (worlds.phase[live] == DISCARD) & (worlds.actor[live] == 0)]
            if mine.size:
                planned = plan_actions(worlds.hands[mine, 0], masks[mine], keep[mine], keep_value[mine])
                actions[mine] = np.where(planned >= 0, planned, actions[mine])
        if first_step and first_actions is not None:
            actions[:] = np.where(first_actions >= 0, first_actions, actions)
        first_step = False
        step(worlds, actions, config)
        settle_decided_deals(worlds, config, tables)
    return deal_values(worlds)


def concatenate(states: list[PedroState]) -> PedroState:
    """One state holding the games of ``states`` one after another (a copy)."""
    return PedroState(**{f.name: np.concatenate([getattr(s, f.name) for s in states]) for f in fields(PedroState)})


def settle_decided_deals(worlds: PedroState, config: PedroConfig, tables: RuleTables) -> None:
    """End, in place, the deals whose points are all decided: in play, between tricks, no point card left in
    any hand (the tricks still to come cannot change the score). Scored with the engine's own
    :func:`~pedro_env.kernels.scoring.deal_points` and :func:`~pedro_env.kernels.scoring.score_deal` into
    ``last_delta``."""
    between_tricks = np.flatnonzero((worlds.phase == PLAY) & (worlds.trick_size == 0))
    if between_tricks.size == 0:
        return
    trump = worlds.trump[between_tricks].astype(np.intp)
    point_cards = np.bitwise_or.reduce(tables.point_sets[trump], axis=1)
    in_hands = np.bitwise_or.reduce(worlds.hands[between_tricks], axis=1)
    decided = between_tricks[(in_hands & point_cards) == 0]
    if decided.size == 0:
        return
    points = deal_points(
        worlds.won[decided], worlds.trump[decided], worlds.low_team[decided], tables, config.low == "held"
    )
    maker_team = config.team_of_seat[worlds.maker[decided]]
    _, delta = score_deal(points, maker_team, worlds.high_bid[decided].astype(np.int32), config.scoring)
    worlds.last_delta[decided] = delta
    worlds.phase[decided] = OVER
