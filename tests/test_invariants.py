"""Random legal play over every rules combination, checked against invariants and the plain-Python reference.

Each config plays a few games in a PedroVectorEnv with uniformly random legal actions from a seeded Generator.
Before every step the engine state is checked (cards conserved, hand sizes, the mask equals the reference legal
set); at every deal end the reported summary is recomputed from the pre-step state by the reference rules.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import numpy as np
import pytest

import pedro_env

from conftest import (
    DONE,
    HAND_AT_PLAY,
    PASS,
    PLAY_BASE,
    SWITCH_VALUES,
    TOTAL_POINTS,
    TRICKS_PER_DEAL,
    cards_of,
    random_legal_actions,
    ref_card_points,
    ref_is_trump,
    ref_legal_actions,
    ref_match_winner,
    ref_score_deal,
    ref_suit,
    ref_trick_winner,
)

ALL_CARDS = (1 << 52) - 1
BID, TRUMP, DISCARD, PLAY = 0, 1, 2, 3

KEY_VALUES: dict[str, list[Any]] = {
    **{key: SWITCH_VALUES[key] for key in ("num_players", "variant", "six_card", "refill", "all_pass", "low")},
    "scoring": SWITCH_VALUES["scoring"],
    "min_bid": [1, 3],
}
NUM_SAMPLED = 30


def sampled_configs() -> list[dict[str, Any]]:
    """A deterministic sample of the legal rule combinations (3 players need simple scoring)."""
    combos = [dict(zip(KEY_VALUES, values)) for values in itertools.product(*KEY_VALUES.values())]
    legal = [c for c in combos if not (c["num_players"] == 3 and c["scoring"] == "difference")]
    order = np.random.default_rng(2024).permutation(len(legal))
    return [legal[i] for i in order[:NUM_SAMPLED]]


CONFIGS = sampled_configs()


def config_id(config: dict[str, Any]) -> str:
    return "-".join(str(config[key]) for key in KEY_VALUES)


def test_sample_covers_every_value() -> None:
    for key, values in KEY_VALUES.items():
        counts = Counter(config[key] for config in CONFIGS)
        for value in values:
            assert counts[value] >= 3, f"{key}={value!r} appears {counts[value]} times"


def popcount(value: int) -> int:
    return int(value).bit_count()


class Checker:
    """Invariants of one config over a batch; keeps each game's running sum of deal deltas."""

    def __init__(self, venv: pedro_env.PedroVectorEnv) -> None:
        self.venv = venv
        self.config = venv.config
        self.team_of = [seat % self.config.num_teams for seat in range(self.config.num_players)]
        self.score_sum = np.zeros((venv.num_envs, self.config.num_teams), dtype=np.int64)
        self.deals_checked = Counter[str]()

    def check_state(self, state: Any, game: int, mask: np.ndarray) -> None:
        config, n = self.config, self.config.num_players
        phase = int(state.phase[game])
        hands = [int(h) for h in state.hands[game]]
        discards = [int(d) for d in state.discards[game]]
        played = [int(p) for p in state.played[game]]
        stock = [int(c) for c in state.stock[game]]
        in_stock = 0
        for card, present in zip(stock, state.in_stock[game]):
            in_stock |= (1 << card) if present else 0
        parts = hands + discards + played + [int(state.set_aside[game]), in_stock]
        union = 0
        for part in parts:
            union |= part
        assert union == ALL_CARDS and sum(popcount(p) for p in parts) == 52, "cards not conserved"
        assert len(set(stock)) == len(stock) == config.stock_size
        for seat in range(n):
            dealt = popcount(hands[seat]) + popcount(discards[seat]) + popcount(played[seat])
            assert dealt == config.hand_size + int(state.drawn[game, seat]), f"seat {seat}"
        if phase in (BID, TRUMP):
            assert all(popcount(h) == config.hand_size for h in hands)
            assert not any(discards) and not any(played) and int(state.set_aside[game]) == 0
        if phase == PLAY:
            # every hand held 6 cards when play began
            assert all(popcount(hands[s] | played[s]) == HAND_AT_PLAY for s in range(n))
            tricks_done = int(state.tricks_done[game])
            assert 0 <= tricks_done < TRICKS_PER_DEAL
            won = [int(w) for w in state.won[game]]
            won_union = 0
            for part in won:
                assert won_union & part == 0
                won_union |= part
            assert popcount(won_union) == n * tricks_done
            trump = int(state.trump[game])
            assert all(ref_is_trump(c, trump, config.variant) for c in cards_of(state.set_aside[game]))
            if config.refill != "dealer_robs" and not config.six_card:
                assert not any(ref_is_trump(c, trump, config.variant) for c in cards_of(in_stock))
            maker = int(state.maker[game])
            assert int(state.open_draws[game]) & ~(hands[maker] | played[maker]) == 0
            # a void shown in play is a fact: the seat holds no card of that effective suit
            for seat in range(n):
                for suit in range(4):
                    if int(state.voids[game, seat]) >> suit & 1:
                        held = [c for c in cards_of(hands[seat]) if ref_suit(c, trump, config.variant) == suit]
                        assert not held, f"seat {seat} shown void in suit {suit} but holds {held}"
        else:
            assert not state.voids[game].any()
        expected = ref_legal_actions(state, game, config)
        assert list(np.flatnonzero(mask)) == expected, f"phase {phase}"
        assert expected, "an acting game has no legal action"
        assert list(state.scores[game]) == list(self.score_sum[game])

    def expected_step(self, state: Any, game: int, action: int) -> dict[str, Any] | None:
        """What the action does that the post-step results show: a deal summary, a trick, or None."""
        config, n = self.config, self.config.num_players
        phase, actor = int(state.phase[game]), int(state.actor[game])
        if phase == BID:
            if action == PASS and actor == int(state.dealer[game]) and int(state.high_bid[game]) == 0:
                assert config.all_pass == "redeal"
                teams = config.num_teams
                return {
                    "redeal": True,
                    "maker": -1,
                    "bid": 0,
                    "trump": -1,
                    "points": [0] * teams,
                    "made": -1,
                    "delta": [0] * teams,
                    "scores": list(state.scores[game]),
                    "winner": -1,
                    "renege": -1,
                }
            return None
        if phase != PLAY:
            return None
        trick = {s: int(state.trick[game, s]) for s in range(n) if state.trick[game, s] >= 0}
        trick[actor] = action - PLAY_BASE
        if len(trick) < n:
            return None
        trump, variant = int(state.trump[game]), config.variant
        winner = ref_trick_winner(trick, int(state.trick_leader[game]), trump, variant)
        if int(state.tricks_done[game]) + 1 < TRICKS_PER_DEAL:
            return {"trick_winner": winner}
        won = [set(cards_of(w)) for w in state.won[game]]
        won[self.team_of[winner]] |= set(trick.values())
        points = [sum(ref_card_points(c, trump, variant) for c in cards) for cards in won]
        if config.low == "held":
            low = trump * 13
            for team, cards in enumerate(won):
                points[team] -= low in cards
            for seat in range(n):
                if (int(state.hands[game, seat]) | int(state.played[game, seat])) >> low & 1:
                    points[self.team_of[seat]] += 1
        maker_team = self.team_of[int(state.maker[game])]
        bid = int(state.high_bid[game])
        made, delta = ref_score_deal(points, maker_team, bid, config.scoring)
        scores = [int(s) + d for s, d in zip(state.scores[game], delta)]
        return {
            "redeal": False,
            "maker": int(state.maker[game]),
            "bid": bid,
            "trump": trump,
            "points": points,
            "made": int(made),
            "delta": delta,
            "scores": scores,
            "winner": ref_match_winner(scores, config.target_score, maker_team, made),
            "renege": -1,
        }

    def check_result(self, before: Any, game: int, action: int, out: pedro_env.VectorStep) -> None:
        expected = self.expected_step(before, game, action)
        if expected is None or "trick_winner" in expected:
            assert not out.deal_over[game] and not out.terminated[game] and not out.truncated[game]
            if expected is not None:
                after = self.venv.state
                assert int(after.last_trick_winner[game]) == expected["trick_winner"]
                assert int(after.actor[game]) == expected["trick_winner"]
                assert int(after.tricks_done[game]) == int(before.tricks_done[game]) + 1
            return
        assert out.deal_over[game]
        got = {key: out.deals[key][game].tolist() for key in expected}
        assert got == expected
        points = expected["points"]
        assert 0 <= min(points) and sum(points) <= TOTAL_POINTS[self.config.variant]
        self.score_sum[game] += expected["delta"]
        assert list(out.deals["scores"][game]) == list(self.score_sum[game])
        match_over = expected["winner"] >= 0
        truncated = not match_over and int(before.deal_index[game]) + 1 >= self.config.max_deals
        assert bool(out.terminated[game]) == match_over and bool(out.truncated[game]) == truncated
        self.deals_checked["redeal" if expected["redeal"] else "scored"] += 1
        if match_over or truncated:
            self.score_sum[game] = 0
            self.deals_checked["match"] += 1
            return
        # the next deal: the dealer moved one seat clockwise and eldest opens the bidding
        after, n = self.venv.state, self.config.num_players
        dealer = (int(before.dealer[game]) + 1) % n
        assert int(after.dealer[game]) == dealer and int(after.phase[game]) == BID
        assert int(after.actor[game]) == (dealer + 1) % n
        assert int(after.deal_index[game]) == int(before.deal_index[game]) + 1


def random_play_actions(mask: np.ndarray, rng: np.random.Generator, pass_probability: float) -> np.ndarray:
    """Uniform legal actions, except that a legal pass is taken with ``pass_probability`` (for lower bids, redeals)."""
    actions = random_legal_actions(mask, rng)
    passes = (mask[:, PASS] == 1) & (rng.random(mask.shape[0]) < pass_probability)
    return np.where(passes, PASS, actions)


def run_random_play(
    config: dict[str, Any], num_envs: int, steps: int, seed: int, pass_probability: float = 0.6
) -> Counter[str]:
    venv = pedro_env.PedroVectorEnv(num_envs, **config)
    checker = Checker(venv)
    rng = np.random.default_rng(seed)
    out = venv.reset(seed=seed)
    for _ in range(steps):
        before = venv.state.copy()
        for game in range(num_envs):
            checker.check_state(before, game, out.action_mask[game])
        actions = random_play_actions(out.action_mask, rng, pass_probability)
        out = venv.step(actions)
        for game in range(num_envs):
            checker.check_result(before, game, int(actions[game]), out)
    return checker.deals_checked


@pytest.mark.parametrize("config", CONFIGS, ids=[config_id(c) for c in CONFIGS])
def test_random_play_invariants(config: dict[str, Any]) -> None:
    seed = CONFIGS.index(config)
    checked = run_random_play({**config, "target_score": 15}, num_envs=4, steps=400, seed=seed)
    assert checked["scored"] >= 6


def test_random_play_reaches_match_ends_and_redeals() -> None:
    checked = Counter[str]()
    for seed, num_players in enumerate((2, 3, 4)):
        config = {
            "num_players": num_players,
            "scoring": "simple",
            "all_pass": "redeal",
            "six_card": True,
            "target_score": 8,
        }
        checked += run_random_play(config, num_envs=4, steps=300, seed=seed, pass_probability=0.8)
    assert checked["match"] >= 6 and checked["redeal"] >= 6


def test_done_action_constant_matches_layout() -> None:
    assert pedro_env.str_to_action("done") == DONE
