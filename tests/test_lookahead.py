"""The look-ahead search agent ``search:full`` (agents/search/lookahead.py, worlds.py, rollout.py): its worlds
are consistent with what it saw, it plays legally under every rules switch, a decision depends on the public
view alone and is reproducible, and a discard plan is followed through its turn."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from test_rule_agents import CONFIGS, config_id

import pedro_env
from agents import AgentSpecError, make_agent
from agents.base import RandomAgent
from agents.search import LookaheadAgent, turn_digest
from agents.search.rollout import play_out
from agents.search.worlds import auction_weights, kept_trump_floors, sample_worlds
from arena.match import play_matches
from pedro_env.cards import RuleTables
from pedro_env.encoding import ObservationEncoder
from pedro_env.state import BID, DISCARD, OVER, PLAY, TRUMP
from pedro_env.view import decode_observations

SMALL = {"samples": 3, "play_samples": 3, "play_depth": 2, "play_exact": 2}


def small_full(config: pedro_env.PedroConfig, **options: Any) -> LookaheadAgent:
    return LookaheadAgent(config, **{**SMALL, **options})


def pre_play_positions(overrides: dict[str, Any], steps: int, seed: int, games: int = 8):
    """(env, observations of the actors, view) at each step of heuristic play, before every step."""
    venv = pedro_env.PedroVectorEnv(games, **overrides)
    heuristic = make_agent("rule:heuristic", venv.config)
    rng = np.random.default_rng(seed)
    result = venv.reset(seed=seed)
    for _ in range(steps):
        yield venv, result
        result = venv.step(heuristic.act(result.observation, result.action_mask, rng))


@pytest.mark.parametrize("overrides", CONFIGS, ids=config_id)
def test_every_world_shows_the_viewer_exactly_what_it_saw(overrides: dict[str, Any]) -> None:
    """Each sampled world, seen from seat 0, encodes to the viewer's observation byte for byte; the hidden
    cards are a permutation of the unseen ones, and the kept-trumps belief holds."""
    checked = {BID: 0, TRUMP: 0, DISCARD: 0}
    rng = np.random.default_rng(5)
    for venv, result in pre_play_positions(overrides, steps=50, seed=21):
        config = venv.config
        world_config = replace(config, episode="deal")
        encoder = ObservationEncoder(world_config, RuleTables.for_variant(config.variant))
        view = decode_observations(result.observation, config)
        for game in np.flatnonzero(np.isin(view.phase, (BID, TRUMP, DISCARD)))[:3]:
            worlds, relaxed = sample_worlds(view, int(game), world_config, 4, rng)
            assert relaxed == 0
            seen = encoder.encode(worlds, np.zeros(4, dtype=np.intp))
            assert (seen == result.observation[game][None, :]).all(), "a world shows the viewer something else"
            all_cards = np.bitwise_or.reduce(worlds.hands, axis=1) | view.discards[game].sum()
            floors = kept_trump_floors(view, int(game), RuleTables.for_variant(config.variant))
            for world in range(4):
                held = [int(h) for h in worlds.hands[world]]
                stock = {int(c) for c, live in zip(worlds.stock[world], worlds.in_stock[world]) if live}
                cards = [c for h in held for c in range(52) if h >> c & 1] + sorted(stock)
                cards += [c for d in view.discards[game] for c in range(52) if int(d) >> c & 1]
                assert sorted(cards) == list(range(52)), "the cards of a world are not one deck"
                trump = int(view.trump[game])
                for seat, floor in enumerate(floors):
                    if floor:
                        trumps = RuleTables.for_variant(config.variant).is_trump[trump]
                        assert sum(trumps[c] for c in range(52) if held[seat] >> c & 1) >= floor
            assert all_cards.dtype == np.uint64
            checked[int(view.phase[game])] += 1
    assert checked[BID] and checked[DISCARD] or overrides.get("six_card"), checked


def test_worlds_follow_the_engine_to_the_end_of_the_deal() -> None:
    """Worlds played out reach the end of the deal with a score change the values report."""
    config = pedro_env.make_config()
    world_config = replace(config, episode="deal")
    for _venv, result in pre_play_positions({}, steps=1, seed=4):
        view = decode_observations(result.observation, config)
        worlds, _ = sample_worlds(view, 0, world_config, 6, np.random.default_rng(0))
        values = play_out(worlds, world_config, make_agent("rule:heuristic", world_config), np.random.default_rng(0))
        assert (worlds.phase == OVER).all()
        delta = worlds.last_delta
        assert np.array_equal(values, delta[:, 0] - delta[:, 1])
        assert (np.abs(delta).sum(axis=1) > 0).any()


def test_auction_inference_prefers_worlds_that_explain_the_bids() -> None:
    """After an opponent's high bid, worlds in which the model bidder would have passed weigh less."""
    config = pedro_env.make_config()
    world_config = replace(config, episode="deal")
    model = make_agent("rule:heuristic", world_config)
    lightest = []
    for _venv, result in pre_play_positions({}, steps=4, seed=9, games=32):
        view = decode_observations(result.observation, config)
        for game in np.flatnonzero((view.phase == BID) & (view.bids.max(axis=1) >= 8)):
            worlds, _ = sample_worlds(view, int(game), world_config, 64, np.random.default_rng(1))
            weights = auction_weights(worlds, view, int(game), world_config, model, 0.3)
            assert ((weights <= 1.0) & (weights >= 0.3**4)).all()
            assert np.array_equal(auction_weights(worlds, view, int(game), world_config, model, 1.0), np.ones(64))
            lightest.append(weights.min())
    assert lightest and min(lightest) < 1.0 and np.mean(np.array(lightest) < 1.0) > 0.5


@pytest.mark.parametrize("overrides", CONFIGS[::3], ids=config_id)
def test_plays_legally_under_every_rules_switch(overrides: dict[str, Any]) -> None:
    venv = pedro_env.PedroVectorEnv(4, **{**overrides, "target_score": min(overrides.get("target_score", 15), 15)})
    agent = small_full(venv.config)
    rng = np.random.default_rng(2)
    result = venv.reset(seed=13)
    phases = set()
    for _ in range(120):
        actions = agent.act(result.observation, result.action_mask, rng)
        assert result.action_mask[np.arange(4), actions].all(), "an action outside the mask"
        phases.update(decode_observations(result.observation, venv.config).phase.tolist())
        result = venv.step(actions)  # raises on an illegal action
    assert {BID, TRUMP, PLAY} <= phases
    assert agent.stats.searches["bid"] + agent.stats.pruned_bids > 0 and agent.stats.searches["trump"] > 0


def test_a_decision_depends_on_the_public_view_alone() -> None:
    """Changing the cards the viewer cannot see (another hand and the stock swap cards) leaves the observation,
    and so the decision, unchanged; the same view always gives the same decision, whatever the rng."""
    config = pedro_env.make_config()
    venv = pedro_env.PedroVectorEnv(1, config=config)
    result = venv.reset(seed=17)
    agent = small_full(config)
    before = agent.act(result.observation, result.action_mask, np.random.default_rng(0))
    state = venv.state
    actor = int(state.actor[0])
    other = (actor + 1) % 4
    hand = int(state.hands[0, other])
    give = next(c for c in range(52) if hand >> c & 1)
    position = 0
    take = int(state.stock[0, position])
    state.hands[0, other] = np.uint64((hand & ~(1 << give)) | (1 << take))
    state.stock[0, position] = give
    changed = venv.current_step()
    assert np.array_equal(changed.observation, result.observation)
    again = small_full(config).act(changed.observation, changed.action_mask, np.random.default_rng(99))
    assert np.array_equal(before, again)


def test_searching_games_together_chooses_what_searching_them_one_by_one_does() -> None:
    """act over a batch of games (their searches share one engine batch) equals act game by game."""
    compared = 0
    for venv, result in pre_play_positions({}, steps=40, seed=31, games=6):
        if venv.state.phase.max() == PLAY:
            continue
        together = small_full(venv.config).act(result.observation, result.action_mask, np.random.default_rng(0))
        alone = small_full(venv.config)
        one_by_one = [
            alone.act(result.observation[g : g + 1], result.action_mask[g : g + 1], np.random.default_rng(0))[0]
            for g in range(6)
        ]
        assert together.tolist() == one_by_one
        compared += 1
        if compared == 4:
            break
    assert compared == 4


def test_a_discard_plan_is_followed_through_the_turn() -> None:
    """Within one discard turn every decision has the same digest, and the cards thrown are those outside the plan."""
    config = pedro_env.make_config()
    venv = pedro_env.PedroVectorEnv(1, config=config)
    result = venv.reset(seed=29)
    agent = small_full(config)
    heuristic = make_agent("rule:heuristic", config)
    rng = np.random.default_rng(0)
    turns: dict[int, list[int]] = {}
    for _ in range(200):
        view = decode_observations(result.observation, config)
        if view.phase[0] == DISCARD and result.action_mask[0].sum() > 1:
            action = int(agent.act(result.observation, result.action_mask, rng)[0])
            turns.setdefault(turn_digest(view, 0), []).append(action)
        else:
            action = int(heuristic.act(result.observation, result.action_mask, rng)[0])
        result = venv.step(np.array([action]))
    assert turns
    assert agent.stats.searches["discard"] <= len(turns)
    for actions in turns.values():
        assert actions.count(80) <= 1 and (80 not in actions or actions[-1] == 80)


def test_a_small_match_is_reproducible_and_finishes() -> None:
    config = pedro_env.make_config(target_score=11)
    results = []
    for _ in range(2):
        full = make_agent("search:full,samples=3,play_samples=3,play_depth=2,play_exact=2", config)
        results.append(play_matches([[full], [RandomAgent(config)]], config, pairs=1, seed=3, batch_size=2))
    assert [r.to_dict() for r in results[0]] == [r.to_dict() for r in results[1]]
    assert all(r.winner in (0, 1) for r in results[0])


@pytest.mark.parametrize("options", ["samples=0", "bid_span=-1", "infer=0", "infer=2", "samples=abc", "depth=3"])
def test_bad_options_are_one_agent_spec_error(options: str) -> None:
    with pytest.raises(AgentSpecError, match=f"search:full,{options}"):
        make_agent(f"search:full,{options}")


def test_the_values_it_reports_pick_what_it_plays() -> None:
    """action_values (the browser table's analysis) weighs the same candidates in the same worlds as act: the
    best valued bid or trump is the one act chooses (unless act passed a hopeless hand without a search); the
    discards valued are legal ones."""
    checked = {BID: 0, TRUMP: 0, DISCARD: 0}
    for venv, result in pre_play_positions({}, steps=60, seed=41, games=4):
        for game in range(4):
            phase = int(venv.state.phase[game])
            mask = result.action_mask[game]
            if phase not in checked or mask.sum() < 2:
                continue
            observation = result.observation[game]
            agent = small_full(venv.config)
            chosen = int(agent.act(observation[None], mask[None], np.random.default_rng(0))[0])
            values = small_full(venv.config).action_values(observation, mask, include=(chosen,))
            assert set(values) <= set(np.flatnonzero(mask).tolist())
            if phase == DISCARD:
                if not values:  # a single plan of the turn still fits the hand: nothing to weigh
                    continue
            elif chosen != 0 or agent.stats.searches["bid"]:
                assert values[chosen] == max(values.values()), (phase, chosen, values)
            checked[phase] += 1
    assert min(checked.values()) >= 2, checked


def test_pimc_values_pick_what_it_plays() -> None:
    from agents.search import PimcAgent

    checked = 0
    for venv, result in pre_play_positions({}, steps=120, seed=43, games=2):
        for game in range(2):
            mask = result.action_mask[game]
            if int(venv.state.phase[game]) != PLAY or mask.sum() < 2:
                continue
            agent = PimcAgent(venv.config, samples=8)
            chosen = int(agent.act(result.observation[game][None], mask[None], np.random.default_rng(5))[0])
            values = PimcAgent(venv.config, samples=8).action_values(
                result.observation[game], mask, np.random.default_rng(5)
            )
            assert set(values) == set(np.flatnonzero(mask).tolist())
            assert values[chosen] == pytest.approx(max(values.values()))
            checked += 1
    assert checked >= 5
