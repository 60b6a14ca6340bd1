"""``search:policy``: worlds in play that show the viewer what it saw, the policy's likelihood of what the other
seats did (checked against the policy's own probabilities in a real game), decisions from the view alone,
reproducible matches under the rules switches, and its options."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from test_lookahead import pre_play_positions
from test_rule_agents import CONFIGS, config_id

import pedro_env
from agents import PPO_POLICY_SPEC, AgentSpecError, make_agent
from agents.search import guided
from agents.search.guided import PolicySearchAgent, policy_log_likelihood
from agents.search.worlds import play_worlds, sample_worlds
from arena.match import play_matches
from pedro_env.cards import RuleTables
from pedro_env.deal_sampler import relaxed_sampler
from pedro_env.encoding import ObservationEncoder
from pedro_env.knowledge import hidden_cards
from pedro_env.state import BID, PLAY
from pedro_env.view import decode_observations

torch = pytest.importorskip("torch")

SMALL = {"samples": 3, "play_samples": 3}
# the switches the shipped policy reads (four players, cinch's bids); other rules need a policy trained on them
SWITCHES = [{}, {"six_card": True}, {"refill": "dealer_robs"}, {"low": "held"}, {"scoring": "simple"}]


def small_policy(config: pedro_env.PedroConfig, **options: Any) -> PolicySearchAgent:
    return PolicySearchAgent(config, **{**SMALL, **options})


def greedy_positions(overrides: dict[str, Any], steps: int, seed: int, games: int = 6):
    """(env, step result, log-probabilities the greedy policy gave its own actions) before each step of a game
    the shipped policy plays at every seat."""
    venv = pedro_env.PedroVectorEnv(games, **overrides)
    policy = make_agent("pretrained", venv.config)
    result = venv.reset(seed=seed)
    for _ in range(steps):
        log_probabilities = policy.log_probabilities(result.observation, result.action_mask)
        yield venv, result, log_probabilities
        result = venv.step(log_probabilities.argmax(axis=1))


def true_world(venv: pedro_env.PedroVectorEnv, game: int, worlds):
    """``worlds`` (sampled for the actor of ``game``) with the real hidden cards, seats rotated to the actor."""
    state = venv.state
    actor, n = int(state.actor[game]), venv.config.num_players
    truth = worlds.select(np.arange(1))
    for seat in range(n):
        truth.hands[0, seat] = state.hands[game, (actor + seat) % n]
    truth.stock[0] = state.stock[game]
    return truth


@pytest.mark.parametrize("overrides", CONFIGS, ids=config_id)
def test_every_play_world_shows_the_viewer_exactly_what_it_saw(overrides: dict[str, Any]) -> None:
    """A world built from a play-phase view and a sampled deal encodes, from seat 0, to the viewer's observation."""
    rng = np.random.default_rng(3)
    checked = 0
    for venv, result in pre_play_positions(overrides, steps=120, seed=41, games=6):
        config = venv.config
        world_config = replace(config, episode="deal")
        tables = RuleTables.for_variant(config.variant)
        view = decode_observations(result.observation, config)
        for game in np.flatnonzero(view.phase == PLAY)[:2]:
            sampler = relaxed_sampler(hidden_cards(view, int(game), tables, kept_trumps=True), {})
            deals = [sampler.sample(random.Random(int(rng.integers(1 << 30)))) for _ in range(3)]
            worlds = play_worlds(view, int(game), world_config, deals)
            seen = ObservationEncoder(world_config, tables).encode(worlds, np.zeros(3, dtype=np.intp))
            assert (seen == result.observation[game][None, :]).all(), "a play world shows the viewer something else"
            checked += 1
    assert checked > 20


def test_the_likelihood_of_the_true_deal_is_what_the_policy_gave_its_actions() -> None:
    """Replaying the auction and the current trick in the real deal gives back, action for action, the
    log-probabilities the policy gave the other seats' actions when it made them."""
    config = pedro_env.make_config()
    world_config = replace(config, episode="deal")
    policy = make_agent("pretrained", world_config)
    floor = 1e-9
    history: dict[int, list[tuple[int, float]]] = {}  # game -> (seat, log p) of this deal's actions so far
    compared = {BID: 0, PLAY: 0}
    for venv, result, log_probabilities in greedy_positions({}, steps=160, seed=52):
        state = venv.state
        view = decode_observations(result.observation, config)
        for game in range(venv.num_envs):
            phase, actor = int(state.phase[game]), int(state.actor[game])
            if phase == BID and int((state.bids[game] >= 0).sum()) == 0:
                history[game] = []
            if phase == PLAY and int(state.trick_size[game]) == 0:
                history[game] = []  # a new trick: only its cards are replayed in play
            comparable = game in history and history[game] and not view.robbing[game]
            if comparable and (phase == BID or (phase == PLAY and int(state.tricks_done[game]) == 0)):
                if phase == BID:
                    worlds, _ = sample_worlds(view, game, world_config, 1, np.random.default_rng(0))
                else:
                    deal = [0] * config.num_players
                    worlds = play_worlds(view, game, world_config, [deal])
                truth = true_world(venv, game, worlds)
                got = policy_log_likelihood(truth, view, game, world_config, policy, floor)[0]
                want = sum(max(lp, np.log(floor)) for seat, lp in history[game] if seat != actor)
                assert got == pytest.approx(want, abs=1e-4)
                compared[phase] += 1
            if game in history and phase in (BID, PLAY):
                action = int(log_probabilities[game].argmax())
                history[game].append((actor, float(log_probabilities[game, action])))
            elif game in history and phase != PLAY:
                history.pop(game)  # trump and discards: the play's history starts at its first trick
    assert compared[BID] > 5 and compared[PLAY] > 5, compared


@pytest.mark.parametrize("phase", [BID, PLAY])
def test_a_decision_depends_on_the_public_view_alone(phase: int) -> None:
    """Swapping cards between two other hands leaves the observation and so the decision unchanged."""
    config = pedro_env.make_config()
    for venv, result, _ in greedy_positions({}, steps=80, seed=61, games=1):
        state = venv.state
        if int(state.phase[0]) != phase or result.action_mask[0].sum() < 2:
            continue
        before = small_policy(config).act(result.observation, result.action_mask, np.random.default_rng(0))
        left, across = (int(state.actor[0]) + 1) % 4, (int(state.actor[0]) + 2) % 4
        give = next(c for c in range(52) if int(state.hands[0, left]) >> c & 1)
        take = next(c for c in range(52) if int(state.hands[0, across]) >> c & 1)
        swap = np.uint64((1 << give) | (1 << take))
        state.hands[0, left] ^= swap
        state.hands[0, across] ^= swap
        changed = venv.current_step()
        assert np.array_equal(changed.observation, result.observation)
        again = small_policy(config).act(changed.observation, changed.action_mask, np.random.default_rng(9))
        assert np.array_equal(before, again)
        return
    raise AssertionError("no position of that phase with a choice")


@pytest.mark.parametrize("overrides", SWITCHES[1:], ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_plays_legally_and_reproducibly_under_the_rules_switches(overrides: dict[str, Any]) -> None:
    config = pedro_env.make_config(**overrides, target_score=11)
    results = []
    for _ in range(2):
        lineup = [[small_policy(config)], [make_agent("rule:heuristic", config)]]
        results.append(play_matches(lineup, config, pairs=1, seed=5, batch_size=2))
    assert [r.to_dict() for r in results[0]] == [r.to_dict() for r in results[1]]
    assert all(r.winner in range(config.num_teams) for r in results[0])


def test_the_policy_plan_comes_first_and_is_what_the_policy_keeps() -> None:
    config = pedro_env.make_config()
    agent = small_policy(config)
    for venv, result, _ in greedy_positions({}, steps=60, seed=71, games=1):
        view = decode_observations(result.observation, config)
        if int(view.phase[0]) != 2 or view.discards[0, 0] or view.robbing[0]:
            continue
        plans = agent.keep_candidates(view, 0)
        state = venv.state.copy()
        policy = agent.policy
        encoder = ObservationEncoder(config, RuleTables.for_variant(config.variant))
        actor = int(state.actor[0])
        start = int(state.hands[0, actor])
        while int(state.phase[0]) == 2 and int(state.actor[0]) == actor:
            mask = pedro_env.rules.legal_action_mask(state, config, RuleTables.for_variant(config.variant))
            action = policy.log_probabilities(encoder.encode(state, state.actor.astype(np.intp)), mask).argmax(1)
            pedro_env.rules.step(state, action.astype(np.int64), config)
        assert plans[0] == start & ~int(state.discards[0, actor])
        assert len(set(plans)) == len(plans)
        return
    raise AssertionError("no discard turn")


@pytest.mark.parametrize(
    "options",
    [
        "policy=rule:heuristic",
        "policy=ckpt:nowhere.pt",
        "play_samples=0",
        "floor=0",
        "temper=-1",
        "prune=1",
        "samples=0",
    ],
)
def test_bad_options_are_one_agent_spec_error(options: str) -> None:
    with pytest.raises(AgentSpecError, match="search:policy"):
        make_agent(f"search:policy,{options}")


def test_rules_the_policy_cannot_read_are_refused_by_name() -> None:
    with pytest.raises(AgentSpecError, match="search:policy.*trained for 4 players"):
        make_agent(f"search:policy,policy={PPO_POLICY_SPEC}", pedro_env.make_config(num_players=3, scoring="simple"))


@pytest.mark.parametrize(
    "rules", [{"num_players": 2}, {"num_players": 3, "scoring": "simple"}, {"variant": "sancho"}, {"target_score": 21}]
)
def test_the_default_model_is_the_ppo_policy_under_the_default_rules_else_pretrained(
    rules: dict, tmp_path, monkeypatch
) -> None:
    """The default rules: the PPO policy, trained there. Any other: ``pretrained``, trained under every rule set,
    and while its file is missing a one-line refusal naming it and the way to give another model."""
    config = pedro_env.make_config(**rules)
    assert guided.default_model(config) == "pretrained" == make_agent("search:policy", config).policy.name
    assert guided.default_model(pedro_env.make_config()) == PPO_POLICY_SPEC == make_agent("search:policy").policy.name
    assert guided.default_model(pedro_env.make_config(episode="deal", max_deals=5)) == PPO_POLICY_SPEC  # same game
    missing = tmp_path / "pretrained.pt"
    monkeypatch.setattr(guided, "PRETRAINED_PATH", missing)
    with pytest.raises(AgentSpecError) as refusal:
        make_agent("search:policy", config)
    message = str(refusal.value)
    assert str(missing) in message and "policy=ckpt:PATH" in message and "\n" not in message


def test_a_greedy_policy_skips_forced_moves_and_chooses_as_one_full_forward() -> None:
    """PolicyAgent.act (greedy) runs the network on the rows with a choice only; every row's action is the argmax
    of the masked logits of one forward over all rows."""
    config = pedro_env.make_config()
    policy = make_agent("pretrained", config)
    compared = forced = 0
    for _, result, _ in greedy_positions({}, steps=60, seed=81, games=16):
        masks = result.action_mask.astype(bool)
        want = policy.log_probabilities(result.observation, masks).argmax(axis=1)
        assert policy.act(result.observation, masks, np.random.default_rng(0)).tolist() == want.tolist()
        compared += len(masks)
        forced += int((masks.sum(axis=1) == 1).sum())
    assert forced > 50 and compared > forced
