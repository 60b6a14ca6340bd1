"""The rule-based agents (agents/rule_based.py): legal in every config, deterministic, and the documented rules.

Scripted situations are built through the public surface: decks injected with
``pedro_env.env().reset(options={"decks": ..., "dealer": ...})`` (hands laid out by ``build_deck``),
scripted actions up to the decision, then the agent's choice on the acting player's observation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

import pedro_env
from agents import AgentSpecError, make_agent
from agents.base import Agent
from arena.match import play_matches
from pedro_env.cards import RuleTables
from pedro_env.config import make_config
from pedro_env.vector import PedroVectorEnv

from conftest import build_deck

RULE_SPECS = ["rule:heuristic", "rule:cautious"]
TRUMP_BASE, DISCARD_BASE, DONE, PLAY_BASE = 24, 28, 80, 81

# every value of every docs/rules.md section 9 key appears at least once, across 2, 3 and 4 players
CONFIGS: list[dict[str, Any]] = [
    {},
    {"six_card": True},
    {"refill": "top"},
    {"refill": "dealer_robs"},
    {"variant": "sancho", "refill": "dealer_robs"},
    {"variant": "dom", "six_card": True},
    {"variant": "pitch"},
    {"variant": "pitch", "refill": "top", "low": "held"},
    {"all_pass": "redeal", "min_bid": 7},
    {"min_bid": 14},
    {"variant": "sancho", "min_bid": 23},  # the dealer is forced to bid every point
    {"low": "held", "scoring": "simple"},
    {"renege": "penalty", "target_score": 11},
    {"num_players": 2},
    {"num_players": 2, "six_card": True, "variant": "dom"},
    {"num_players": 2, "refill": "dealer_robs", "low": "held"},
    {"num_players": 2, "refill": "top", "variant": "pitch", "scoring": "simple"},
    {"num_players": 2, "variant": "sancho", "renege": "penalty", "all_pass": "redeal"},
    {"num_players": 3, "scoring": "simple"},
    {"num_players": 3, "scoring": "simple", "refill": "dealer_robs", "variant": "dom"},
    {"num_players": 3, "scoring": "simple", "six_card": True, "variant": "pitch", "min_bid": 4},
    {"num_players": 3, "scoring": "simple", "refill": "top", "renege": "penalty", "low": "held"},
]


def config_id(overrides: dict[str, Any]) -> str:
    return ",".join(f"{key}={value}" for key, value in overrides.items()) or "default"


def play_vector(config: Any, agents: Sequence[Agent], steps: int, games: int = 24, seed: int = 3) -> np.ndarray:
    """Step a PedroVectorEnv with ``agents[seat % len(agents)]`` acting for each seat; assert every action is legal.

    Returns the (steps, games) actions taken.
    """
    venv = PedroVectorEnv(games, config=config)
    result = venv.reset(seed=seed)
    rng = np.random.default_rng(seed)
    taken = np.zeros((steps, games), dtype=np.int64)
    for step in range(steps):
        actions = np.zeros(games, dtype=np.int64)
        for index, agent in enumerate(agents):
            acting = np.flatnonzero(result.actor % len(agents) == index)
            if acting.size:
                actions[acting] = agent.act(result.observation[acting], result.action_mask[acting], rng)
        assert result.action_mask[np.arange(games), actions].all(), "an agent chose an illegal action"
        taken[step] = actions
        result = venv.step(actions)
    return taken


@pytest.mark.parametrize("overrides", CONFIGS, ids=[config_id(c) for c in CONFIGS])
def test_both_agents_play_only_legal_actions(overrides: dict[str, Any]) -> None:
    config = make_config(**overrides)
    agents = [make_agent(spec, config) for spec in RULE_SPECS]  # heuristic in even seats, cautious in odd ones
    actions = play_vector(config, agents, steps=300, games=32)
    assert (actions >= PLAY_BASE).any(), "the games never reached the play phase"


def test_deterministic_and_independent_of_the_rng() -> None:
    config = make_config()
    first = play_vector(config, [make_agent("rule:heuristic", config)], steps=120, seed=5)
    again = play_vector(config, [make_agent("rule:heuristic", config)], steps=120, seed=5)
    np.testing.assert_array_equal(first, again)
    venv = PedroVectorEnv(32, config=config)
    result = venv.reset(seed=9)
    agent = make_agent("rule:cautious", config)
    one = agent.act(result.observation, result.action_mask, np.random.default_rng(0))
    other = agent.act(result.observation, result.action_mask, np.random.default_rng(123))
    np.testing.assert_array_equal(one, other)


# ---------------------------------------------------------------- scripted situations


def scripted_env(hands: dict[int, list[str]], dealer: int, script: Sequence[tuple[int, str]], **config: Any) -> Any:
    """An AEC env dealt ``hands`` by ``dealer``, after the scripted ``(seat, action text)`` steps."""
    env = pedro_env.env(**config)
    num_players = config.get("num_players", 4)
    env.reset(seed=0, options={"decks": [build_deck(hands, dealer, num_players)], "dealer": dealer})
    for seat, text in script:
        assert env.agent_selection == f"player_{seat}", f"expected player_{seat} to act for {text!r}"
        env.step(env.unwrapped.str_to_action(text))
    return env


def choice(env: Any, agent: Agent) -> str:
    """The agent's action, as text, for the acting player of ``env``."""
    observation = env.observe(env.agent_selection)
    action = agent.act(observation["observation"][None], observation["action_mask"][None], np.random.default_rng(0))
    return env.unwrapped.action_to_str(int(action[0]))


def act_and_step(env: Any, agent: Agent) -> str:
    text = choice(env, agent)
    env.step(env.unwrapped.str_to_action(text))
    return text


# the hearts hand (both Pedros for hearts: 5H and 5D) against long but pointless clubs and spades
PEDRO_HANDS = {
    0: ["AH", "5H", "5D", "3H", "7C", "8C", "9C", "4S", "6S"],
    1: ["2C", "3C", "4C", "5C", "6C", "TC", "JC", "QC", "KC"],
    2: ["2S", "3S", "5S", "7S", "8S", "9S", "TS", "JS", "QS"],
    3: ["KS", "AS", "AC", "2D", "3D", "4D", "6D", "7D", "8D"],
}


def test_heuristic_bids_names_the_pedro_suit_discards_non_trumps_and_leads_its_ace() -> None:
    heuristic = make_agent("rule:heuristic")
    env = scripted_env(PEDRO_HANDS, dealer=3, script=[])
    bid = act_and_step(env, heuristic)
    assert bid.startswith("bid ")
    for seat in (1, 2, 3):
        assert env.agent_selection == f"player_{seat}"
        env.step(env.unwrapped.str_to_action("pass"))
    assert act_and_step(env, heuristic) == "trump H"
    discarded = []
    while (text := act_and_step(env, heuristic)) != "done":  # player 0 (eldest) discards first
        discarded.append(text.split()[1])
    assert sorted(discarded) == sorted(["7C", "8C", "9C", "4S", "6S"])  # every non-trump, every trump kept
    while env.unwrapped.game.phase[0] != 3:  # the others discard (any legal way), then the draw
        act_and_step(env, heuristic)
    assert env.agent_selection == "player_0"
    assert choice(env, heuristic) == "play AH"  # the maker pulls trumps with its ace


def test_a_denying_defender_throws_its_point_trumps_out_of_play_first() -> None:
    hands = {
        0: ["AH", "3H", "4H", "7C", "8C", "9C", "4S", "6S", "7S"],  # the maker, hearts
        1: ["5H", "JH", "2H", "KH", "2C", "3C", "4C", "5C", "6C"],  # a defender holding the right Pedro
        2: ["2S", "3S", "5S", "8S", "9S", "TS", "JS", "QS", "KS"],
        3: ["AS", "AC", "KC", "QC", "JC", "TC", "2D", "3D", "4D"],
    }
    script = [(0, "bid 6"), (1, "pass"), (2, "pass"), (3, "pass"), (0, "trump H")]
    script += [(0, f"discard {card}") for card in ["7C", "8C", "9C", "4S", "6S", "7S"]] + [(0, "done")]
    denier, keeper = make_agent("rule:heuristic,deny=true"), make_agent("rule:heuristic")
    env = scripted_env(hands, dealer=3, script=script)
    assert choice(env, keeper) == "discard 2C"  # the shipped personalities keep every trump
    thrown = []
    while (text := act_and_step(env, denier)) != "done":
        thrown.append(text.split()[1])
    assert thrown[0] == "5H" and set(thrown[1:3]) == {"JH", "2H"}  # the Pedro first, then Jack and Low
    assert "KH" not in thrown  # no points on it
    # the maker's side never denies: its own hand keeps every trump
    env = scripted_env(hands, dealer=3, script=script[:5])
    assert choice(env, denier) == "discard 4S"  # its lowest non-trump


def test_forced_dealer_bids_the_minimum() -> None:
    for min_bid in (1, 7):
        env = scripted_env(PEDRO_HANDS, dealer=0, script=[(1, "pass"), (2, "pass"), (3, "pass")], min_bid=min_bid)
        for spec in RULE_SPECS:
            assert choice(env, make_agent(spec, env.unwrapped.config)) == f"bid {min_bid}"


def six_card_trick(hands: dict[int, list[str]], dealer: int, maker: int, plays: list[str]) -> Any:
    """Six-card deal: ``maker`` bids 5 and names hearts (the rest pass), then the scripted ``plays`` from the maker."""
    n = 4
    script = [(seat, "bid 5" if seat == maker else "pass") for seat in [(dealer + 1 + i) % n for i in range(n)]]
    script.append((maker, "trump H"))
    script += [((maker + i) % n, f"play {card}") for i, card in enumerate(plays)]
    return scripted_env(hands, dealer, script, six_card=True)


def test_feeds_a_pedro_under_its_partners_sure_winner() -> None:
    hands = {
        2: ["AH", "KH", "2C", "3C", "4C", "6C"],
        3: ["4H", "7C", "8C", "9C", "TC", "JC"],
        0: ["5H", "3H", "7D", "8D", "9D", "TD"],
        1: ["7S", "8S", "9S", "TS", "JS", "QS"],
    }
    env = six_card_trick(hands, dealer=1, maker=2, plays=["AH", "4H"])  # partner leads the ace; player 1 still to play
    for spec in RULE_SPECS:
        assert choice(env, make_agent(spec, env.unwrapped.config)) == "play 5H"


def test_follows_low_instead_of_giving_a_pedro_to_the_opponents() -> None:
    hands = {
        1: ["AH", "KH", "QC", "KC", "AC", "2S"],
        2: ["6H", "2C", "3C", "4C", "5C", "6C"],
        3: ["7H", "7C", "8C", "9C", "TC", "JC"],
        0: ["5H", "4H", "7D", "8D", "9D", "TD"],
    }
    env = six_card_trick(hands, dealer=0, maker=1, plays=["AH", "6H", "7H"])  # the opponents' ace wins
    for spec in RULE_SPECS:
        assert choice(env, make_agent(spec, env.unwrapped.config)) == "play 4H"


def test_wins_a_point_trick_with_its_cheapest_winning_card() -> None:
    hands = {
        1: ["TH", "2S", "3S", "4S", "6S", "7S"],
        2: ["6H", "2C", "3C", "4C", "5C", "6C"],
        3: ["7H", "7C", "8C", "9C", "TC", "JC"],
        0: ["AH", "KH", "4H", "8D", "9D", "TD"],
    }
    env = six_card_trick(hands, dealer=0, maker=1, plays=["TH", "6H", "7H"])  # Game is in the trick
    for spec in RULE_SPECS:
        assert choice(env, make_agent(spec, env.unwrapped.config)) == "play KH"  # the king wins it; the ace is kept


def test_saves_a_pedro_by_trumping_when_it_cannot_be_beaten() -> None:
    hands = {
        1: ["7C", "AH", "KH", "QH", "JH", "TH"],
        2: ["8C", "2S", "3S", "4S", "6S", "7S"],
        3: ["9C", "8S", "9S", "TS", "JS", "QS"],
        0: ["5H", "4H", "2D", "3D", "4D", "6D"],
    }
    env = six_card_trick(hands, dealer=0, maker=1, plays=["7C", "8C", "9C"])  # last to play, void in clubs
    for spec in RULE_SPECS:
        assert choice(env, make_agent(spec, env.unwrapped.config)) == "play 5H"


def test_robbing_dealer_keeps_its_best_trumps() -> None:
    config = make_config(refill="dealer_robs")
    agent = make_agent("rule:heuristic", config)
    trump_sets = RuleTables.build(config.variant).trump_set  # the engine's tables, to check the outcome
    venv = PedroVectorEnv(32, config=config)
    result = venv.reset(seed=11)
    rng = np.random.default_rng(0)
    checked = 0
    trumps_when_robbing: dict[int, int] = {}  # game -> trumps the dealer held with the whole pack
    for _ in range(400):
        state = venv.state
        assert state is not None
        for game in np.flatnonzero(state.robbing).tolist():
            hand = int(state.hands[game, state.dealer[game]])
            trumps = (hand & int(trump_sets[state.trump[game]])).bit_count()
            trumps_when_robbing.setdefault(game, trumps)
            if result.action_mask[game, DONE]:  # down to 6: every trump kept, up to 6
                assert trumps == min(6, trumps_when_robbing.pop(game))
                checked += 1
        result = venv.step(agent.act(result.observation, result.action_mask, rng))
    assert checked >= 10


def test_cautious_bids_no_more_often_than_the_heuristic() -> None:
    config = make_config()
    heuristic, cautious = make_agent("rule:heuristic", config), make_agent("rule:cautious", config)
    venv = PedroVectorEnv(256, config=config)
    result = venv.reset(seed=4)
    rng = np.random.default_rng(0)
    bold = careful = 0
    for _ in range(60):
        bidding = np.flatnonzero(result.action_mask[:, :TRUMP_BASE].any(axis=1))  # pass or bid is legal
        if bidding.size:
            obs, masks = result.observation[bidding], result.action_mask[bidding]
            heuristic_bids = heuristic.act(obs, masks, rng)
            cautious_bids = cautious.act(obs, masks, rng)
            assert (cautious_bids <= heuristic_bids).all()  # never a bid where the heuristic passes, never higher
            bold += int((heuristic_bids > 0).sum())
            careful += int((cautious_bids > 0).sum())
        result = venv.step(heuristic.act(result.observation, result.action_mask, rng))
    assert careful < bold


def test_heuristic_beats_random_in_duplicate() -> None:
    config = make_config(target_score=21)
    heuristic, random_agent = make_agent("rule:heuristic", config), make_agent("random", config)
    results = play_matches([[heuristic], [random_agent]], config, pairs=20, seed=0, batch_size=64)
    wins = sum(match.winner == 0 for match in results)
    assert len(results) == 40 and wins >= 36


@pytest.mark.parametrize(
    "spec,words",
    [
        ("rule:heuristic,deny=maybe", ["option 'deny' = 'maybe' is not allowed: it takes true or false"]),
        ("rule:heuristic,caution=abc", ["option 'caution' = 'abc' is not allowed: it takes a number"]),
        ("rule:heuristic,contest_points=1.5", ["option 'contest_points' = '1.5' is not allowed: it takes an int"]),
        ("rule:heuristic,bid_margin=high", ["option 'bid_margin' = 'high' is not allowed: it takes a number or none"]),
        ("rule:cautious,colour=red", ["unknown option 'colour'", "caution", "deny"]),
        # a chance of 0 or below let the following rules pick cards the player may not play
        ("rule:heuristic,win_chance=0", ["option 'win_chance' = 0.0 is not allowed: it takes a chance above 0"]),
        ("rule:heuristic,save_chance=-1", ["option 'save_chance' = -1.0 is not allowed", "at most 1"]),
        ("rule:heuristic,feed_chance=1.5", ["option 'feed_chance' = 1.5 is not allowed", "above 0, at most 1"]),
    ],
)
def test_personality_options_are_checked(spec: str, words: list[str]) -> None:
    with pytest.raises(AgentSpecError) as caught:
        make_agent(spec)
    for word in words:
        assert word in str(caught.value)


def test_personality_options_take_none_where_a_field_may_be_none() -> None:
    agent = make_agent("rule:heuristic,preempt_shade=none,caution=2,partner_overcall_margin=inf")
    assert agent.personality.preempt_shade is None and agent.personality.caution == 2.0
    assert agent.personality.partner_overcall_margin == float("inf")


def test_the_capture_model_fitting_script_fits_the_shipped_model_on_a_small_sample() -> None:
    """tools/fit_capture_models.py on 200 steps of 128 games: the printed table has the shape of CAPTURE_MODELS and
    the signs of the shipped model where they matter (the trumps held above a card raise both chances, Low lowers
    the chance of a held one)."""
    import ast

    from agents.rule_based import CAPTURE_FEATURES, CAPTURE_MODELS

    from conftest import run_module

    done = run_module("tools.fit_capture_models", "--tables", "4:maker_sorted", "--steps", "200", "--games", "128")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"CAPTURE_FEATURES = {CAPTURE_FEATURES}"
    assert lines[2].startswith("    (4, 'maker_sorted'): CaptureModel(  # ") and lines[2].endswith(" point trumps")
    held, unheld = (ast.literal_eval(line.strip().rstrip(",")) for line in lines[3:5])
    shipped = CAPTURE_MODELS[(4, "maker_sorted")]
    assert len(held) == len(unheld) == len(shipped.held) == len(CAPTURE_FEATURES)
    above_held, is_low = CAPTURE_FEATURES.index("above_held"), CAPTURE_FEATURES.index("is_low")
    assert held[above_held] > 0 and unheld[above_held] > 0 and held[is_low] < 0
    bad = run_module("tools.fit_capture_models", "--tables", "5:top")
    assert bad.returncode == 2 and "a table is PLAYERS:REFILL, one of 4:maker_sorted" in bad.stderr
