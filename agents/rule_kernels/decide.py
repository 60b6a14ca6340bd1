"""The entry points: a batch of decisions, of hand estimates, of discards, and the capture features."""

from __future__ import annotations

import numpy as np
from numba import njit

from agents.rule_kernels.bidding import bid_action, suit_estimate, trump_action
from agents.rule_kernels.inputs import A_PLAYERS, FLOAT_SCRATCH, first_legal, first_set
from agents.rule_kernels.play import discard_action, play_action
from pedro_env.actions import NUM_ACTIONS
from pedro_env.kernels.inputs import O_MAKER, O_PHASE, O_ROBBING, O_TRUMP
from pedro_env.state import BID, DISCARD, NUM_PHASES, PLAY, TRUMP


@njit(cache=True)
def rule_actions(observations, masks, pieces, ints, floats, rows, agent_of_row, actions):
    """Fill ``actions`` (R,) int64 with the action of row ``rows[i]`` of ``observations`` (B, D) uint8 (the seat to
    act) and ``masks`` (B, 133) uint8 or bool, decided by agent ``agent_of_row[i]`` of the K agents whose packed
    inputs are ``ints`` (K, A_SIZE) and ``floats`` (K, W_SIZE) (one config: ``pieces`` (int64), the observation's
    piece starts, ``O_*``). Outside the four phases (the episode over): the first legal action."""
    scratch = np.empty(FLOAT_SCRATCH)  # one game's working space, reused (see play_action)
    card_scratch = np.empty(12, dtype=np.int64)
    for i in range(rows.shape[0]):
        g = rows[i]
        own_ints, own_floats = ints[agent_of_row[i]], floats[agent_of_row[i]]
        phase = first_set(observations, g, pieces[O_PHASE], NUM_PHASES)
        if phase == BID:
            actions[i] = bid_action(observations, masks, g, pieces, own_ints, own_floats)
        elif phase == TRUMP:
            actions[i] = trump_action(observations, g, pieces, own_ints, own_floats)
        elif phase == DISCARD:
            trump = first_set(observations, g, pieces[O_TRUMP], 4)
            maker = first_set(observations, g, pieces[O_MAKER], own_ints[A_PLAYERS])
            robbing = observations[g, pieces[O_ROBBING]] != 0
            actions[i] = discard_action(trump, robbing, maker, masks, g, own_ints)
        elif phase == PLAY:
            actions[i] = play_action(observations, masks, g, pieces, own_ints, own_floats, scratch, card_scratch)
        else:
            actions[i] = first_legal(masks, g, 0, NUM_ACTIONS)


@njit(cache=True)
def hand_estimates(hands, dealer, ints, floats, out):
    """Fill ``out`` (k, 4) float64 with the expected points of each hand's side as the maker with each suit as
    trumps: ``hands`` (k,) uint64 card sets, ``dealer`` (k,) bool or 0/1 "the holder deals"."""
    for g in range(hands.shape[0]):
        for trump in range(4):
            out[g, trump] = suit_estimate(hands[g], trump, dealer[g] != 0, ints, floats)


@njit(cache=True)
def rule_discards(trump, robbing, maker, masks, ints, actions):
    """Fill ``actions`` (k,) int64 with discard-phase actions from the few facts the discard rules read: (k,) trump
    suits, (k,) "I am the robbing dealer", (k,) the maker's relative seat (-1 none), (k, 133) masks."""
    for g in range(trump.shape[0]):
        actions[g] = discard_action(trump[g], robbing[g] != 0, maker[g], masks, g, ints)
