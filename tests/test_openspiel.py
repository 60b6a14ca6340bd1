"""Pedro as an OpenSpiel game (pedro_env/openspiel_game.py): OpenSpiel's own random simulation test with
serialization over rule sets and table sizes, the same match played through pyspiel and through
``pedro_env.env()``, resampling from an information state, and OpenSpiel's ISMCTS as our agent."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

import pedro_env  # noqa: E402
from pedro_env.openspiel_game import GAME_NAME, PARAMETERS  # noqa: E402
from pedro_env.rules import hashed_decks  # noqa: E402

# random play seldom finishes a match: max_deals keeps each simulation to a few deals
CONFIGS = [
    {"max_deals": 6},  # the default rules
    {"num_players": 2, "target_score": 21, "max_deals": 6},
    {"num_players": 3, "scoring": "simple", "target_score": 21, "max_deals": 6},
    {"variant": "sancho", "refill": "dealer_robs", "min_bid": 6, "max_deals": 6},
    {"num_players": 2, "six_card": True, "reward": "win", "target_score": 11, "max_deals": 6},
    {"refill": "top", "variant": "pitch", "all_pass": "redeal", "low": "held", "renege": "penalty", "max_deals": 6},
    {"num_players": 3, "variant": "dom", "scoring": "simple", "episode": "deal"},
]
IDS = [",".join(f"{k}={v}" for k, v in config.items()) for config in CONFIGS]


def random_action(state, rnd: random.Random) -> int:
    if state.is_chance_node():
        actions, probs = zip(*state.chance_outcomes())
        return rnd.choices(actions, probs)[0]
    return rnd.choice(state.legal_actions())


@pytest.mark.parametrize("params", CONFIGS, ids=IDS)
def test_random_sim_test_with_serialization(params):
    game = pyspiel.load_game(GAME_NAME, params)
    pyspiel.random_sim_test(game, num_sims=2, serialize=True, verbose=False)


def test_parameters_are_the_config_keys():
    game = pyspiel.load_game(GAME_NAME)
    assert set(game.get_parameters()) == set(PARAMETERS)
    assert game.num_distinct_actions() == 133 and game.max_chance_outcomes() == 52
    with pytest.raises(ValueError, match="num_players"):  # the config's one-line error
        pyspiel.load_game(GAME_NAME, {"num_players": 5})


@pytest.mark.parametrize(("public_info", "private_info"), [(True, "NONE"), (True, "ALL_PLAYERS"), (False, "NONE")])
def test_an_observer_of_another_kind_than_one_player_is_refused(public_info, private_info):
    """A public observer would be handed the player's hand, an all-players one would miss the other hands."""
    kind = pyspiel.IIGObservationType(
        public_info=public_info, perfect_recall=False, private_info=getattr(pyspiel.PrivateInfoType, private_info)
    )
    with pytest.raises(ValueError, match=f"private_info=SINGLE_PLAYER\\), got public_info={public_info}, "):
        pyspiel.load_game(GAME_NAME).make_py_observer(kind)
    for perfect_recall in (False, True):  # what information_state_tensor and observation_tensor ask for
        pyspiel.load_game(GAME_NAME).make_py_observer(pyspiel.IIGObservationType(perfect_recall=perfect_recall))


@pytest.mark.parametrize("params", CONFIGS, ids=IDS)
def test_same_match_as_the_aec_env(params):
    """Same dealer, same decks, same actions: every legal set, observation and return is the env's."""
    rnd = random.Random(7)
    game = pyspiel.load_game(GAME_NAME, params)
    decks = hashed_decks(np.full(8, 11, dtype=np.uint64), np.zeros(8), np.arange(8))
    state = game.new_initial_state()
    state.apply_action(1)  # the first dealer
    env = pedro_env.env(**params)
    env.reset(seed=5, options={"dealer": 1, "decks": [list(map(int, deck)) for deck in decks]})
    deal, returns = 0, np.zeros(game.num_players())
    while not state.is_terminal():
        if state.is_chance_node():
            for card in decks[deal]:
                state.apply_action(int(card))
            deal += 1
            continue
        agent = env.agent_selection
        seat = env.agents.index(agent) if agent in env.agents else int(agent.split("_")[1])
        observation, _, _, _, _ = env.last()
        assert state.current_player() == seat
        assert state.legal_actions() == np.flatnonzero(observation["action_mask"]).tolist()
        assert np.array_equal(np.asarray(state.observation_tensor(seat)), observation["observation"].astype(np.float32))
        action = rnd.choice(state.legal_actions())
        state.apply_action(action)
        env.step(action)
        returns += [env.rewards.get(f"player_{p}", 0.0) for p in range(game.num_players())]  # this step's
        np.testing.assert_allclose(state.returns(), returns, atol=1e-6)
    assert not [agent for agent in env.agents if not (env.terminations[agent] or env.truncations[agent])]


def test_apply_action_refuses_an_action_outside_the_legal_ones_a_penalty_renege_included():
    """Under renege="penalty" the engine accepts a renege, but legal_actions() never lists one: apply_action refuses
    it in one line, naming the legal actions, and the state is as it was."""
    from pedro_env.actions import PLAY_OFFSET
    from pedro_env.cards import set_to_list
    from pedro_env.rules import IllegalActionError
    from pedro_env.state import PLAY

    rnd = random.Random(0)
    state = pyspiel.load_game(GAME_NAME, {"renege": "penalty", "episode": "deal"}).new_initial_state()
    while True:
        match = state.match
        if not state.is_chance_node() and int(match.state.phase[0]) == PLAY:
            held = [PLAY_OFFSET + card for card in set_to_list(match.state.hands[0, match.actor])]
            reneges = [action for action in held if action not in state.legal_actions()]
            if reneges:
                break
        state.apply_action(random_action(state, rnd))
        assert not state.is_terminal(), "no position with a renege in this deal: pick another seed"
    before = (state.history(), str(state))
    with pytest.raises(IllegalActionError, match=f"for player {match.actor}: the legal actions are") as refused:
        state.apply_action(reneges[0])
    assert "\n" not in str(refused.value) and (state.history(), str(state)) == before


@pytest.mark.parametrize("params", CONFIGS, ids=IDS)
def test_resample_keeps_the_information_state(params):
    """At random points of random matches, every player's resampled states keep its information string, differ
    in what it cannot see, replay to themselves from their history and play on legally."""
    rnd = random.Random(3)
    game = pyspiel.load_game(GAME_NAME, params)
    sampler = pyspiel.UniformProbabilitySampler(0.0, 1.0)
    changed = checked = 0
    for _ in range(3):
        state = game.new_initial_state()
        while not state.is_terminal() and state.move_number() < 400:
            state.apply_action(random_action(state, rnd))
            if state.is_chance_node() or state.is_terminal() or rnd.random() > 0.15:
                continue
            player = rnd.randrange(game.num_players())
            resampled = state.resample_from_infostate(player, sampler)
            checked += 1
            assert resampled.information_state_string(player) == state.information_state_string(player)
            assert resampled.observation_tensor(player) == state.observation_tensor(player)
            assert resampled.current_player() == state.current_player()
            assert len(resampled.history()) == len(state.history())
            changed += str(resampled) != str(state)
            replayed = game.new_initial_state()
            for action in resampled.history():
                replayed.apply_action(action)
            assert str(replayed) == str(resampled)
            assert replayed.information_state_string(player) == state.information_state_string(player)
            while not resampled.is_terminal() and len(resampled.history()) < len(state.history()) + 40:
                resampled.apply_action(random_action(resampled, rnd))
    assert checked > 10 and changed > checked // 2


BOT_CASES = [
    ({"episode": "deal"}, "openspiel:ismcts,simulations=4"),
    ({"num_players": 3, "scoring": "simple", "episode": "deal"}, "openspiel:ismcts,simulations=4,rollout=openspiel"),
    ({"num_players": 2, "target_score": 11, "max_deals": 2}, "openspiel:ismcts,simulations=3,horizon=match"),
    ({"variant": "sancho", "refill": "dealer_robs", "episode": "deal"}, "openspiel:ismcts,simulations=4"),
]


@pytest.mark.parametrize(("params", "spec"), BOT_CASES, ids=[spec for _, spec in BOT_CASES])
def test_ismcts_agent_plays_legal_moves_in_the_arena(params, spec):
    """OpenSpiel's ISMCTSBot as an agent: a duplicate pair against the rule agent (the arena refuses an illegal
    move), its decisions timed."""
    from agents import make_agent
    from arena.match import field_lineup, play_matches
    from pedro_env.config import make_config

    config = make_config(**params)
    lineup = field_lineup([[make_agent(spec, config)], [make_agent("rule:heuristic", config)]], config.num_teams)
    results = play_matches(lineup, config, pairs=1)
    assert len(results) == config.num_teams
    assert all(result.decision_cpu_s[0] > 0 for result in results)


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        ("openspiel:ismcts,simulations=0", "simulations must be an int >= 1, got 0"),
        ("openspiel:ismcts,rollout=fast", "rollout must be one of engine, openspiel, got 'fast'"),
        ("openspiel:ismcts,horizon=game", "horizon must be one of deal, match, got 'game'"),
        ("openspiel:ismcts,uct_c=nan", "uct_c must be a finite float above 0, got nan"),
        ("openspiel:ismcts,uct_c=-1", "uct_c must be a finite float above 0, got -1"),
    ],
)
def test_ismcts_agent_refuses_bad_options(spec, named):
    from agents import AgentSpecError, make_agent

    with pytest.raises(AgentSpecError, match=re.escape(named)) as refused:
        make_agent(spec)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("params", CONFIGS, ids=IDS)
def test_play_out_is_a_reproducible_legal_random_match(params):
    """SingleGame.play_out (the engine rollout of openspiel:ismcts): the same seed the same play, to the match's end,
    returns that add up as the env's (zero-sum points)."""
    from pedro_env.single_game import SingleGame

    match = SingleGame(**params)
    match.reset(seed=4)
    twin = match.copy()
    returns = match.play_out(17)
    assert match.over and np.array_equal(returns, twin.play_out(17))
    assert np.array_equal(match.state.buffer, twin.state.buffer)
    if match.config.reward == "points":
        assert abs(returns.sum()) < 1e-5
    other = twin.copy()
    other.reset(seed=4)
    other.play_out(18)
    assert not np.array_equal(other.state.buffer, twin.state.buffer)


@pytest.mark.parametrize("params", CONFIGS[:3], ids=IDS[:3])
def test_set_position_goes_on_from_the_seed_as_at_position_does(params):
    """A match moved to a position (SingleGame.set_position, how openspiel:ismcts reuses one match) deals its later
    deals from the position's seed, as a match made there (at_position) does, even if it had decks injected."""
    from pedro_env.single_game import SingleGame

    source = SingleGame(**params)
    source.reset(seed=21)
    source.step("pass")  # the position: mid-auction of the first deal
    made_there = SingleGame.at_position(source.state, source.config)
    moved = SingleGame(**params)
    decks = [list(map(int, deck)) for deck in hashed_decks(np.full(4, 5, dtype=np.uint64), np.zeros(4), np.arange(4))]
    moved.reset(seed=1, options={"decks": decks})
    moved.set_position(source.state)
    assert np.array_equal(made_there.play_out(3), moved.play_out(3))
    assert np.array_equal(made_there.state.buffer, moved.state.buffer)


@pytest.mark.parametrize("params", CONFIGS[:3], ids=IDS[:3])
def test_redeal_is_refused_once_someone_has_acted(params):
    from pedro_env.single_game import SingleGame

    match = SingleGame(**params)
    match.reset(seed=2)
    deck = list(range(52))
    match.redeal(deck)  # nobody has spoken: the deal is dealt again from this deck
    assert match.deck_of_deal(0)[:3] == ["2C", "3C", "4C"]
    match.step("pass")
    before = match.state.buffer.copy()
    with pytest.raises(RuntimeError, match="redeal\\(\\) deals deal 0 again before anyone has acted in it"):
        match.redeal(deck)
    assert np.array_equal(match.state.buffer, before)


def test_the_ismcts_benchmark_prints_a_cost_per_decision():
    import subprocess
    import sys
    from pathlib import Path

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.openspiel_ismcts",
            "--deals",
            "1",
            "--specs",
            "openspiel:ismcts,simulations=3",
        ],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    last = done.stdout.splitlines()[-1].split()
    assert last[0] == "openspiel:ismcts,simulations=3" and float(last[1]) > 0 and last[2:5] == ["CPU", "s", "per"]


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        (["--deals", "0"], "argument --deals: must be an int >= 1, got '0'"),
        (["--every", "0"], "argument --every: must be an int >= 1, got '0'"),
        (["--specs", "random"], "--specs takes openspiel:ismcts specs (openspiel:ismcts,simulations=1000), got"),
        (["--specs", "openspiel:ismcts,simulations=0"], "simulations must be an int >= 1, got 0"),
    ],
)
def test_the_ismcts_benchmark_refuses_bad_arguments_in_one_line(arguments, named, capsys):
    from benchmarks.openspiel_ismcts import main

    with pytest.raises(SystemExit) as refused:
        main(arguments)
    error = capsys.readouterr().err
    assert refused.value.code == 2 and error.count("\n") == 1 and named in error
