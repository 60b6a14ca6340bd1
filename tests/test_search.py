"""The PIMC search agent (agents/search/): legal in every config, sound sampling, one set of play rules,
exact alpha-beta, reproducible, and able to finish a match."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

import pedro_env
from agents import AgentSpecError, make_agent
from agents.base import RandomAgent
from agents.search import (
    DealScoring,
    HandSampler,
    HiddenCards,
    PimcAgent,
    TrickSearch,
    card_list,
    hidden_cards,
    search_tables,
)
from agents.search.tables import L_POINT_CARDS, L_POINTS
from arena.match import play_matches
from pedro_env.cards import RuleTables, str_to_card
from pedro_env.kernels.scoring import team_points
from pedro_env.kernels.tricks import legal_plays, trick_winner
from pedro_env.view import decode_observations

from conftest import run_module

PLAY_PHASE, PLAY_OFFSET = 3, 81

# every value of every rules key appears at least once
CONFIGS: dict[str, dict[str, Any]] = {
    "default": {},
    "two": {"num_players": 2},
    "three": {"num_players": 3, "scoring": "simple"},
    "sancho-held": {"variant": "sancho", "low": "held"},
    "dom-top-redeal": {"variant": "dom", "refill": "top", "all_pass": "redeal"},
    "pitch-six": {"variant": "pitch", "six_card": True},
    "robs-penalty": {"refill": "dealer_robs", "renege": "penalty", "min_bid": 6},
    "two-six-simple": {"num_players": 2, "six_card": True, "scoring": "simple", "variant": "sancho"},
    "three-robs-held": {"num_players": 3, "scoring": "simple", "refill": "dealer_robs", "low": "held"},
}


def small_pimc(config: pedro_env.PedroConfig, **options: Any) -> PimcAgent:
    agent = PimcAgent(config, **{"samples": 3, "depth": 2, "exact": 2, "min_samples": 2, **options})
    return agent


@pytest.mark.parametrize("name", list(CONFIGS))
def test_plays_legally_in_every_config(name: str) -> None:
    venv = pedro_env.PedroVectorEnv(6, **CONFIGS[name], target_score=15)
    agent = small_pimc(venv.config, kept_trumps=True)
    rng = np.random.default_rng(1)
    result = venv.reset(seed=11)
    plays = 0
    for _ in range(160):
        actions = agent.act(result.observation, result.action_mask, rng)
        assert result.action_mask[np.arange(6), actions].all(), "an action outside the mask"
        plays += int((actions >= PLAY_OFFSET).sum())
        result = venv.step(actions)  # the env raises on an illegal action (renege="penalty" included)
    assert plays > 100
    assert not agent.stats.relaxed, f"constraints had to be relaxed: {agent.stats.relaxed}"


def play_positions(config_overrides: dict[str, Any], players: str, steps: int, seed: int):
    """(view, game, true hands by relative seat) at every play decision of a few games."""
    venv = pedro_env.PedroVectorEnv(8, **config_overrides)
    config, n = venv.config, venv.config.num_players
    agent = RandomAgent(config) if players == "random" else make_agent(players, config)
    rng = np.random.default_rng(seed)
    result = venv.reset(seed=seed)
    for _ in range(steps):
        view = decode_observations(result.observation, config)
        state = venv.state
        for game in np.flatnonzero(view.phase == PLAY_PHASE):
            actor = int(state.actor[game])
            truth = [int(state.hands[game, (actor + seat) % n]) for seat in range(n)]
            yield view, int(game), truth
        result = venv.step(agent.act(result.observation, result.action_mask, rng))


@pytest.mark.parametrize("name", ["default", "two", "three", "dom-top-redeal", "pitch-six", "robs-penalty"])
def test_sampler_respects_every_constraint(name: str) -> None:
    config = pedro_env.make_config(**CONFIGS[name])
    tables = RuleTables.for_variant(config.variant)
    rnd = random.Random(3)
    positions = 0
    for view, game, truth in play_positions(CONFIGS[name], "random", 150, seed=5):
        hidden = hidden_cards(view, game, tables)
        assert hidden.violations(truth) == [], "the constraints exclude the true deal"
        sampler = HandSampler(hidden)
        trump = int(view.trump[game])
        voids = [int(v) for v in view.voids[game]]
        for _ in range(2):
            hands = sampler.sample(rnd)
            assert hidden.violations(hands) == []
            # the same facts, checked straight from the view
            placed = 0
            for seat in range(1, config.num_players):
                assert hands[seat].bit_count() == int(view.hand_sizes[game, seat])
                assert hands[seat] & (int(view.hand[game]) | placed) == 0
                placed |= hands[seat]
                for suit in range(4):
                    if voids[seat] >> suit & 1:
                        assert hands[seat] & int(tables.suit_set[trump][suit]) == 0, "a card of a suit shown void"
            assert placed & ~(hidden.unseen | int(view.open_draws[game])) == 0, "a seen card in a hidden hand"
            dead = hidden.unseen & ~placed
            if config.refill != "dealer_robs" and not config.six_card:
                assert dead & int(tables.trump_set[trump]) == 0, "a trump in the dead stock"
            if config.refill == "dealer_robs":
                assert dead == 0
        positions += 1
    assert positions > 100


@pytest.mark.parametrize("name", ["default", "three", "robs-penalty"])
def test_kept_trumps_belief_holds_for_the_heuristic(name: str) -> None:
    """The kept_trumps belief is true of players who discard non-trumps first: the true deal always satisfies it."""
    config = pedro_env.make_config(**CONFIGS[name])
    tables = RuleTables.for_variant(config.variant)
    floors = 0
    for view, game, truth in play_positions(CONFIGS[name], "rule:heuristic", 120, seed=9):
        hidden = hidden_cards(view, game, tables, kept_trumps=True)
        assert hidden.violations(truth) == []
        floors += sum(hidden.trump_floors)
    assert floors > 0


def test_sampler_is_uniform_on_a_small_position() -> None:
    """Two hidden hands of 2 and a dead stock of 1 from 5 cards, one seat void in clubs: every consistent deal
    is equally likely."""
    trumps = int(RuleTables.for_variant("cinch").trump_set[2])  # hearts
    suits = [int(cards) for cards in RuleTables.for_variant("cinch").suit_set[2]]
    cards = [str_to_card(c) for c in ("2C", "3C", "4D", "6S", "7S")]
    hidden = HiddenCards(
        unseen=sum(1 << c for c in cards),
        known=[0, 0, 0],
        hidden_counts=[0, 2, 2],
        forbidden=[0, suits[0], 0],
        trump_caps=[0, 2, 2],
        trump_floors=[0, 0, 0],
        dead_count=1,
        dead_forbidden=trumps,
        trumps=trumps,
        suit_sets=list(suits),
    )
    sampler = HandSampler(hidden)
    rnd = random.Random(0)
    counts: dict[tuple[int, int], int] = {}
    for _ in range(6000):
        hands = sampler.sample(rnd)
        counts[(hands[1], hands[2])] = counts.get((hands[1], hands[2]), 0) + 1
    # seat 1 takes 2 of the 3 non-clubs; seat 2 takes 2 of the other 3 cards: 3 * 3 = 9 deals
    assert len(counts) == 9
    assert max(counts.values()) / min(counts.values()) < 1.3


def test_search_point_sums_are_the_engine_deal_points() -> None:
    """The search's trick values (its lookups) count a card set as the engine's deal points do, Low left out
    under ``low="held"`` (Low is scored up front there)."""
    rng = np.random.default_rng(0)
    for variant in ("cinch", "sancho", "dom", "pitch"):
        tables = RuleTables.for_variant(variant)
        for trump in range(4):
            for low_held in (False, True):
                look = search_tables(variant, trump, low_held)
                point_cards = int(np.uint64(look[L_POINT_CARDS]))
                for _ in range(200):
                    cards = rng.choice(52, size=int(rng.integers(0, 14)), replace=False)
                    won = sum(1 << int(c) for c in cards)
                    engine = int(team_points(np.uint64(won), trump, tables.kernel_table))
                    if low_held and won >> int(tables.low_card[trump]) & 1:
                        engine -= 1
                    assert sum(int(look[L_POINTS + c]) for c in cards) == engine
                    assert point_cards == sum(1 << c for c in range(52) if look[L_POINTS + c])


def legal_set(tables: RuleTables, hand: int, trump: int, led_card: int) -> int:
    """The engine's legal plays of one hand (Python ints)."""
    return int(legal_plays(np.array([hand], dtype=np.uint64), np.array([trump]), np.array([led_card]), tables)[0])


def minimax(
    tables: RuleTables,
    search: TrickSearch,
    hands: list[int],
    seat: int,
    trick: list[int],
    leader: int,
    captured: list[int] | None,
) -> float:
    """Plain minimax to the end of the deal with the engine's rules (batch legal_plays / trick_winner)."""
    n, trump = search.n, search.trump
    if len(trick) == n:
        by_seat = [trick[(s - leader) % n] for s in range(n)]
        winner = int(trick_winner(np.array([by_seat]), np.array([leader]), np.array([trump]), tables)[0])
        points = sum(search.points[card] for card in trick)
        if captured is None:
            gained = search.sign[winner] * points
            return gained if hands[winner] == 0 else gained + minimax(tables, search, hands, winner, [], winner, None)
        captured = list(captured)
        captured[search.team[winner]] += points
        if hands[winner] == 0:
            assert search.scoring is not None
            return search.scoring.value(captured)
        return minimax(tables, search, hands, winner, [], winner, captured)
    values = []
    for card in card_list(legal_set(tables, hands[seat], trump, trick[0] if trick else -1)):
        hands[seat] ^= 1 << card
        values.append(minimax(tables, search, hands, (seat + 1) % n, trick + [card], leader, captured))
        hands[seat] ^= 1 << card
    return max(values) if search.sign[seat] > 0 else min(values)


def hand(*names: str) -> int:
    return sum(1 << str_to_card(name) for name in names)


def test_alpha_beta_finds_the_known_best_card() -> None:
    """Hearts trumps, I lead with AH and 5H: leading the ace first pulls the king (trumps must follow trumps),
    then the Pedro is safe (+1 +5); leading the Pedro loses it to the king (-5, then +1 for the ace)."""
    hands = [hand("AH", "5H"), hand("KH", "2C"), hand("7C", "8C"), hand("3C", "4C")]
    search = TrickSearch("cinch", trump=2, num_players=4, num_teams=2, depth=6)
    values = search.root_values(list(hands), leader=0, trick_cards=[], legal=hands[0])
    assert values == {str_to_card("AH"): 6.0, str_to_card("5H"): -4.0}
    scoring = DealScoring(num_teams=2, maker_team=0, bid=7, difference=True)
    by_score = TrickSearch("cinch", trump=2, num_players=4, num_teams=2, depth=6, scoring=scoring)
    # I have 1 point already: the ace line makes the bid of 7 (7 - 0); the Pedro line is set (-7 - 5)
    values = by_score.root_values(list(hands), leader=0, trick_cards=[], legal=hands[0], captured=[1, 0])
    assert values == {str_to_card("AH"): 7.0, str_to_card("5H"): -12.0}
    # a depth-1 search sees one trick and the static estimate: the ace is still best
    shallow = TrickSearch("cinch", trump=2, num_players=4, num_teams=2, depth=1)
    values = shallow.root_values(list(hands), leader=0, trick_cards=[], legal=hands[0])
    assert max(values, key=values.__getitem__) == str_to_card("AH")


@pytest.mark.parametrize("name", ["default", "three", "two", "sancho-held"])
def test_alpha_beta_equals_plain_minimax(name: str) -> None:
    config = pedro_env.make_config(**CONFIGS[name])
    tables = RuleTables.for_variant(config.variant)
    n, teams = config.num_players, config.num_teams
    checked = 0
    for view, game, truth in play_positions(CONFIGS[name], "rule:heuristic", 200, seed=21):
        if int(view.tricks_done[game]) < 3:
            continue
        trump, leader = int(view.trump[game]), int(view.trick_leader[game])
        trick = [int(view.trick[game, (leader + k) % n]) for k in range(n)]
        trick = trick[: trick.index(-1)] if -1 in trick else trick
        legal = legal_set(tables, truth[0], trump, trick[0] if trick else -1)
        scoring = DealScoring(
            teams, int(view.maker[game]) % teams, int(view.high_bid[game]), config.scoring == "difference"
        )
        for by_score in (False, True):
            search = TrickSearch(
                config.variant,
                trump,
                n,
                teams,
                depth=6,
                low_held=config.low == "held",
                scoring=scoring if by_score else None,
            )
            captured = [sum(search.points[c] for c in card_list(int(w))) for w in view.won[game]] if by_score else None
            values = search.root_values(list(truth), leader, trick, legal, captured)
            for card in card_list(legal):
                hands = list(truth)
                hands[0] ^= 1 << card
                expected = minimax(tables, search, hands, 1 % n, trick + [card], leader, captured)
                assert values[card] == pytest.approx(expected)
        checked += 1
        if checked >= 25:
            break
    assert checked >= 10


def heuristic_positions(games: int, seed: int, steps: int) -> tuple[pedro_env.PedroConfig, pedro_env.VectorStep]:
    """The default rules and the step ``rule:heuristic`` self-play reaches after ``steps`` steps of ``games`` games."""
    config = pedro_env.make_config()
    venv = pedro_env.PedroVectorEnv(games, config=config)
    result = venv.reset(seed=seed)
    heuristic = make_agent("rule:heuristic", config)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        result = venv.step(heuristic.act(result.observation, result.action_mask, rng))
    return config, result


def test_same_seed_same_actions() -> None:
    config, result = heuristic_positions(4, seed=3, steps=40)  # into the play phase
    runs = []
    for _ in range(2):
        agent = make_agent("search:pimc,samples=6,depth=2", config)
        runs.append(agent.act(result.observation, result.action_mask, np.random.default_rng(42)))
    assert np.array_equal(runs[0], runs[1])
    assert (decode_observations(result.observation, config).phase == PLAY_PHASE).any()


def test_margins_come_with_the_same_actions() -> None:
    config, result = heuristic_positions(8, seed=5, steps=36)  # into the play phase
    agent = make_agent("search:pimc,samples=6,depth=2", config)
    actions = agent.act(result.observation, result.action_mask, np.random.default_rng(7))
    again, margins = agent.act_with_margins(result.observation, result.action_mask, np.random.default_rng(7))
    assert np.array_equal(actions, again)
    searched = (decode_observations(result.observation, config).phase == PLAY_PHASE) & (
        result.action_mask[:, PLAY_OFFSET:].sum(axis=1) > 1
    )
    assert searched.any() and np.isinf(margins[~searched]).all()
    assert np.isfinite(margins[searched]).all() and (margins[searched] >= 0).all()


def test_spec_options_reach_the_agent() -> None:
    agent = make_agent("search:pimc,samples=5,depth=4,objective=score,kept_trumps=false")
    assert isinstance(agent, PimcAgent)
    assert (agent.samples, agent.depth, agent.objective, agent.kept_trumps) == (5, 4, "score", False)
    with pytest.raises(ValueError, match="objective"):
        PimcAgent(pedro_env.make_config(), objective="luck")


def test_a_tiny_match_finishes() -> None:
    config = pedro_env.make_config(target_score=11)
    pimc = make_agent("search:pimc,samples=3,depth=2,exact=2", config)
    heuristic = make_agent("rule:heuristic", config)
    results = play_matches([[pimc], [heuristic]], config, pairs=1, seed=7, batch_size=2)
    assert len(results) == 2 and all(result.winner in (0, 1) for result in results)
    assert pimc.stats.decisions > 0


@pytest.mark.parametrize("options", ["samples=-1", "samples=0", "depth=-1", "samples=abc", "objective=win"])
def test_bad_search_options_are_one_agent_spec_error(options: str) -> None:
    with pytest.raises(AgentSpecError, match=f"search:pimc,{options}"):
        make_agent(f"search:pimc,{options}")


def test_the_agreement_tool_bins_an_agents_card_play_by_the_searchs_margin() -> None:
    """tools/search_agreement.py: per decision a margin >= 0, a loss >= 0 that is 0 exactly where the agent's card is
    one the search values best; the printed table's shares sum to 1; a spec that cannot value cards is one error."""
    from tools.search_agreement import measure, table

    rows = measure("rule:heuristic", "search:pimc,samples=4,depth=2", 60, 8, 3, 0.5)
    margin, loss, agree = rows.T
    assert rows.shape == (60, 3) and (margin >= 0).all() and (loss >= 0).all()
    assert np.array_equal(agree == 1.0, loss == 0.0) and 0 < agree.mean() < 1
    shares = [float(line.split()[-4]) for line in table(rows).splitlines()[1:-1]]
    assert sum(shares) == pytest.approx(1.0, abs=0.01)
    done = run_module("tools.search_agreement", "random", "--search", "rule:cautious", "--decisions", "5")
    assert done.returncode == 2 and done.stderr.strip().splitlines()[-1].endswith(
        "--search 'rule:cautious' does not value cards: give a search:pimc spec"
    )
