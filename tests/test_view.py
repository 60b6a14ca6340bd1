"""The public-information view decodes every observation piece back to the engine's public facts."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pedro_env
from pedro_env.observation_layout import observation_offsets
from pedro_env.state import OVER
from pedro_env.view import decode_observations

CONFIGS: dict[str, dict[str, Any]] = {
    "four": {},
    "two": {"num_players": 2},
    "three": {"num_players": 3, "scoring": "simple"},
    "sancho-robs": {"variant": "sancho", "refill": "dealer_robs"},
    "pitch-six": {"variant": "pitch", "six_card": True},
}


def relative_rows(field: np.ndarray, actor: np.ndarray) -> np.ndarray:
    """(B, n) absolute-seat field -> (B, n) rotated so column r is the actor's relative seat r."""
    n = field.shape[1]
    order = (actor[:, None].astype(np.intp) + np.arange(n)[None, :]) % n
    return np.take_along_axis(field, order, axis=1)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_view_matches_the_public_state(name: str) -> None:
    venv = pedro_env.PedroVectorEnv(32, **CONFIGS[name])
    config, n, teams = venv.config, venv.config.num_players, venv.config.num_teams
    result = venv.reset(seed=5)
    rng = np.random.default_rng(0)
    for _ in range(300):
        state, actor = venv.state, venv.state.actor.astype(np.intp)
        view = decode_observations(result.observation, config)
        rows = np.arange(32)
        assert np.array_equal(view.phase, state.phase)
        assert np.array_equal(view.hand, state.hands[rows, actor])
        assert np.array_equal(view.discards, relative_rows(state.discards, actor))
        assert np.array_equal(view.played, relative_rows(state.played, actor))
        assert np.array_equal(view.bids, relative_rows(state.bids, actor))
        assert np.array_equal(view.done, relative_rows(state.done, actor))
        assert np.array_equal(view.drawn, relative_rows(state.drawn, actor))
        assert np.array_equal(view.voids, relative_rows(state.voids, actor))
        assert np.array_equal(view.trick, relative_rows(state.trick, actor))
        assert np.array_equal(view.hand_sizes, relative_rows(np.bitwise_count(state.hands), actor))
        assert np.array_equal(view.open_draws, state.open_draws) and np.array_equal(view.set_aside, state.set_aside)
        assert np.array_equal(view.trump, state.trump) and np.array_equal(view.tricks_done, state.tricks_done)
        assert np.array_equal(view.dealer, (state.dealer - actor) % n)
        has_maker = state.maker >= 0
        assert np.array_equal(view.maker, np.where(has_maker, (state.maker - actor) % n, -1))
        playing = state.phase == 3
        assert np.array_equal(view.trick_leader[playing], ((state.trick_leader - actor) % n)[playing])
        team_order = (actor[:, None] % teams + np.arange(teams)[None, :]) % teams
        assert np.array_equal(view.won, np.take_along_axis(state.won, team_order, axis=1))
        assert np.array_equal(view.high_bid, state.high_bid)
        # unseen = exactly the other hands and the stock's face-down cards
        hidden = np.zeros(32, dtype=np.uint64)
        for seat in range(n):
            hidden |= np.where(actor == seat, np.uint64(0), state.hands[:, seat])
        hidden &= ~state.open_draws
        stock_bits = np.bitwise_or.reduce(np.where(state.in_stock, pedro_env.cards.CARD_BIT[state.stock], 0), axis=1)
        assert np.array_equal(view.unseen(), hidden | stock_bits)
        noise = rng.random(result.action_mask.shape) * result.action_mask
        result = venv.step(noise.argmax(axis=1))
    assert OVER == 4


def test_decode_rejects_a_wrong_size() -> None:
    config = pedro_env.make_config()
    with pytest.raises(ValueError, match="entries"):
        decode_observations(np.zeros((2, 10), dtype=np.uint8), config)
    width = max(s.stop for s in observation_offsets(config).values())
    assert decode_observations(np.zeros(width, dtype=np.uint8), config).batch_size == 1
