"""arena.match: duplicate pairs really swap seats over identical decks; bookkeeping equals a replay in the AEC env.

The spy test watches what the agents are dealt (through their own observations, decoded with the
public view) and checks it against a replay of the match seed in ``pedro_env.env()``. The replay
test plays deterministic agents in batches of several sizes (slot refills, idle slots, the shrunk
tail) and compares every MatchResult field with the same match played one step at a time.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest

import pedro_env
from agents.base import Agent, RandomAgent
from arena.match import MatchResult, field_lineup, play_matches, seats_of_side, team_of_side
from arena.ratings import HeadToHead
from arena.shards import shard_bounds
from pedro_env.config import PedroConfig, make_config
from pedro_env.view import decode_observations

BIDDING = 0  # Phase.BID
NO_RNG = np.random.default_rng(0)  # the replayed agents are deterministic
FIELDS_BY_SIDE = ("winner", "truncated", "deals", "scores", "bids_won", "bids_made", "bid_total", "points_taken")


class HandSpy(RandomAgent):
    """Random play that records, per call, the hands it was dealt: its observation in the bidding (one per deal)."""

    def __init__(self, config: PedroConfig, log: list[tuple[str, int]], tag: str) -> None:
        super().__init__(config)
        self.log, self.tag, self.name = log, tag, tag

    def act(self, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        view = decode_observations(observations, self.config)
        for phase, hand in zip(view.phase, view.hand):
            if phase == BIDDING:  # every player speaks exactly once per deal, holding the dealt cards
                self.log.append((self.tag, int(hand)))
        return super().act(observations, action_masks, rng)


class HashAgent(Agent):
    """Deterministic, random-looking play: the legal action picked by a salted hash of the observation.

    Its choices depend on nothing but the observation, so a match plays the same in any batch and
    in the AEC env.
    """

    def __init__(self, config: PedroConfig, salt: int) -> None:
        super().__init__(config)
        self.name = f"hash{salt}"
        self.salt = salt

    def choose(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        observations = np.atleast_2d(observations).astype(np.uint64)
        weights = np.random.default_rng(self.salt).integers(1, 2**31, observations.shape[1], dtype=np.uint64)
        key = (observations * weights).sum(axis=1) + np.uint64(self.salt)
        masks = np.atleast_2d(action_masks)
        legal_count = masks.astype(bool).sum(axis=1)
        pick = (key % legal_count.astype(np.uint64)).astype(np.int64)
        ranks = np.cumsum(masks.astype(bool), axis=1) - 1  # rank of each legal action among the legal ones
        return np.argmax((ranks == pick[:, None]) & masks.astype(bool), axis=1).astype(np.int64)

    def act(self, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return self.choose(observations, action_masks)


def hands_dealt(seed: int, config: PedroConfig, deals: int) -> list[np.ndarray]:
    """Replay: the (n,) uint64 hands dealt in each of the first ``deals`` deals of the match seeded ``seed``.

    Decks depend only on (seed, deal number), so any legal play (here the first legal action) reaches the same deals.
    """
    env = pedro_env.env(**vars(config))
    env.reset(seed=seed)
    state = env.unwrapped.game
    dealt = [state.hands[0].copy()]
    while len(dealt) < deals:
        observation, _, terminated, truncated, _ = env.last()
        assert not (terminated or truncated), "the replayed match ended before the deals asked for"
        deal_number = int(state.deal_index[0])
        env.step(int(np.flatnonzero(observation["action_mask"])[0]))
        state = env.unwrapped.game
        if int(state.deal_index[0]) != deal_number:
            dealt.append(state.hands[0].copy())
    return dealt


def test_duplicate_pair_swaps_seats_over_identical_decks() -> None:
    config = make_config(max_deals=3)
    log: list[tuple[str, int]] = []
    ends: list[int] = []  # log length at the end of each match
    spy_a, spy_b = HandSpy(config, log, "A"), HandSpy(config, log, "B")

    def mark(match: MatchResult) -> None:
        ends.append(len(log))

    # one slot: the matches run one after another, so the log splits at the match ends
    results = play_matches([[spy_a], [spy_b]], config, pairs=2, seed=11, batch_size=1, progress=mark)
    assert [(m.pair, m.rotation, m.seed) for m in results] == [(0, 0, 11), (0, 1, 11), (1, 0, 12), (1, 1, 12)]
    assert all(m.deals == 3 and m.truncated for m in results)
    starts = [0, *ends[:-1]]
    for pair in range(2):
        seen = {}
        for rotation in range(2):
            entries = log[starts[2 * pair + rotation] : ends[2 * pair + rotation]]
            seen[rotation] = {tag: [hand for who, hand in entries if who == tag] for tag in "AB"}
        # side A's hands in one match are side B's in the other, deal by deal, in bidding order
        assert seen[0]["A"] == seen[1]["B"] and seen[0]["B"] == seen[1]["A"]
        assert seen[0]["A"] != seen[1]["A"]
        # and they are the hands of that side's seats when the seed is replayed alone
        for deal, dealt in enumerate(hands_dealt(11 + pair, config, deals=3)):
            for rotation in range(2):
                for side, tag in enumerate("AB"):
                    seats = seats_of_side(side, rotation, config)
                    assert sorted(int(dealt[seat]) for seat in seats) == sorted(
                        seen[rotation][tag][2 * deal : 2 * deal + 2]
                    )


def replay(lineup: Sequence[Sequence[Agent]], config: PedroConfig, seed: int, rotation: int) -> MatchResult:
    """The match of ``seed`` in ``rotation``, played in the AEC env one decision at a time, summarised per side."""
    teams = config.num_teams
    seat_agent = {}
    for side, agents in enumerate(lineup):
        for position, seat in enumerate(seats_of_side(side, rotation, config)):
            seat_agent[seat] = agents[position % len(agents)]
    env = pedro_env.env(**vars(config))
    env.reset(seed=seed)
    side_of_team = {team_of_side(side, rotation, teams): side for side in range(teams)}
    bids_won, bids_made, bid_total, points = ([0] * teams for _ in range(4))
    deals, winner, truncated, scores = 0, -1, False, [0] * teams
    for agent in env.agent_iter():
        observation, _, terminated, was_truncated, _ = env.last()
        if terminated or was_truncated:
            env.step(None)
            continue
        seat = int(agent.split("_")[1])
        action = seat_agent[seat].act(observation["observation"][None], observation["action_mask"][None], NO_RNG)
        env.step(int(action[0]))
        state = env.unwrapped.game  # a batch of one
        if not state.deal_over[0]:
            continue
        deals += 1
        if not state.last_redeal[0]:
            maker_side = side_of_team[int(state.last_maker[0]) % teams]
            bids_won[maker_side] += 1
            bids_made[maker_side] += int(state.last_made[0] == 1)
            bid_total[maker_side] += int(state.last_bid[0])
            for team in range(teams):
                points[side_of_team[team]] += int(state.last_points[0][team])
        scores = [int(state.scores[0][team_of_side(side, rotation, teams)]) for side in range(teams)]
        if state.terminated[0] and state.winner[0] >= 0:
            winner = side_of_team[int(state.winner[0])]
        truncated = bool(state.truncated[0])
    return MatchResult(
        pair=-1,
        rotation=rotation,
        seed=seed,
        winner=winner,
        truncated=truncated,
        deals=deals,
        scores=scores,
        bids_won=bids_won,
        bids_made=bids_made,
        bid_total=bid_total,
        points_taken=points,
    )


@pytest.mark.parametrize("num_players", [4, 3, 2])
def test_results_match_a_replay_in_the_aec_env_for_any_batch_size(num_players: int) -> None:
    config = make_config(
        num_players=num_players, scoring="simple" if num_players == 3 else "difference", target_score=5, max_deals=10
    )
    lineup = field_lineup([[HashAgent(config, 1)], [HashAgent(config, 2)]], config.num_teams)  # A against a field
    pairs, teams = 10, config.num_teams
    expected = [replay(lineup, config, 40 + pair, rotation) for pair in range(pairs) for rotation in range(teams)]
    assert any(m.winner == 0 for m in expected) and any(m.winner == 1 for m in expected)
    assert any(m.truncated for m in expected)
    for batch_size in (1, 5, 20):  # one at a time; refills and idle slots; all at once, then the shrunk tail
        results = play_matches(lineup, config, pairs=pairs, seed=40, batch_size=batch_size)
        for got, want in zip(results, expected, strict=True):
            assert got.seed == want.seed and got.rotation == want.rotation
            for name in (
                "winner",
                "truncated",
                "deals",
                "scores",
                "bids_won",
                "bids_made",
                "bid_total",
                "points_taken",
            ):
                assert getattr(got, name) == getattr(want, name), (batch_size, got.pair, got.rotation, name)


def test_seeded_runs_repeat_and_first_pair_continues_the_seeds() -> None:
    config = make_config(max_deals=6)
    lineup = [[RandomAgent(config)], [RandomAgent(config)]]
    first = play_matches(lineup, config, pairs=6, seed=3, batch_size=8, rng=np.random.default_rng(9))
    again = play_matches(lineup, config, pairs=6, seed=3, batch_size=8, rng=np.random.default_rng(9))
    assert first == again
    later = play_matches(lineup, config, pairs=2, seed=3, batch_size=8, first_pair=4)
    assert [(m.pair, m.seed) for m in later] == [(4, 7), (4, 7), (5, 8), (5, 8)]


class SlowAgent(RandomAgent):
    """Random play that spins for ``spin_s`` of process CPU time per call, counting its calls."""

    def __init__(self, config: PedroConfig, spin_s: float) -> None:
        super().__init__(config)
        self.spin_s, self.calls = spin_s, 0

    def act(self, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        self.calls += 1
        started = time.process_time()
        while time.process_time() - started < self.spin_s:
            pass
        return super().act(observations, action_masks, rng)


def test_decision_cpu_goes_to_the_side_whose_agent_spent_it() -> None:
    config = make_config(max_deals=3)
    slow = SlowAgent(config, spin_s=0.002)
    results = play_matches([[slow, RandomAgent(config)], [RandomAgent(config)]], config, pairs=3, seed=1, batch_size=4)
    spent = np.array([match.decision_cpu_s for match in results])
    assert spent.shape == (6, 2) and (spent >= 0).all()
    assert spent[:, 0].sum() >= slow.calls * 0.002 > 0
    assert spent[:, 1].sum() < 0.25 * spent[:, 0].sum()
    head = HeadToHead("slow", "random", config, 1, True, 3, 4, results)
    assert head.decision_cpu_s_per_match[0] == pytest.approx(spent[:, 0].mean())
    assert "decision_cpu_s" not in results[0].to_dict()  # a measurement: the records of a seed stay identical
    assert results[0] == replace(results[0], decision_cpu_s=[0.0, 0.0])


def test_without_duplicate_every_pair_is_one_match_with_alternating_seats() -> None:
    config = make_config(max_deals=2)
    lineup = [[RandomAgent(config)], [RandomAgent(config)]]
    results = play_matches(lineup, config, pairs=4, seed=0, batch_size=4, duplicate=False)
    assert [(m.pair, m.rotation, m.seed) for m in results] == [(0, 0, 0), (1, 1, 1), (2, 0, 2), (3, 1, 3)]


def test_teams_of_two_agents_sit_first_seat_and_partner() -> None:
    config = make_config(max_deals=2)
    log: list[tuple[str, int]] = []
    first, partner, other = HandSpy(config, log, "first"), HandSpy(config, log, "partner"), RandomAgent(config)
    results = play_matches([[first, partner], [other]], config, pairs=1, seed=5, batch_size=1)
    dealt = hands_dealt(5, config, deals=1)[0]
    first_deal_of_match_0 = log[:2]  # the spies' bidding hands in deal 1 of rotation 0 (side 0 = seats 0, 2)
    assert set(first_deal_of_match_0) == {
        ("first", int(dealt[0])),
        ("partner", int(dealt[2])),
    }
    assert len(results) == 2


def test_bad_lineups_and_illegal_actions_are_named() -> None:
    config = make_config()
    agent = RandomAgent(config)
    with pytest.raises(ValueError, match="one side per team"):
        play_matches([[agent]], config, pairs=1)
    with pytest.raises(ValueError, match="a team has 2 seats"):
        play_matches([[agent, agent, agent], [agent]], config, pairs=1)

    class Cheat(RandomAgent):
        name = "cheat"

        def act(self, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
            return np.full(len(observations), 132, dtype=np.int64)  # play AS, never legal in the bidding

    with pytest.raises(pedro_env.IllegalActionError, match="'cheat'"):
        play_matches([[Cheat(config)], [agent]], config, pairs=1, batch_size=2)


def test_shards_cover_the_pairs_evenly_whatever_the_batch() -> None:
    assert shard_bounds(10, 512, 2) == [(0, 10)]
    bounds = shard_bounds(1000, 512, 2)
    assert len(bounds) % 2 == 0 and sum(count for _, count in bounds) == 1000
    assert all(first == sum(c for _, c in bounds[:index]) for index, (first, _) in enumerate(bounds))
    assert max(count for _, count in bounds) - min(count for _, count in bounds) <= 1
    assert shard_bounds(3, 2, 2) == [(0, 1), (1, 1), (2, 1)]
