"""Playing matches between sides of agents on the batched env, in duplicate.

A *side* is the agents of one team, by position: with four players ``[first, partner]`` (one agent
may fill both), with two or three players a single agent. A *lineup* is one side per team.

Duplicate format: every match seed is played once per rotation of the sides over the teams (two
rotations with two teams, three with three players), so each side gets the other sides' cards over
the same deck sequence, and the luck of the deal cancels in each *pair* (group) of matches. Seeds
come from ``seed + pair``, so results are reproducible and a match can be replayed alone with
``pedro_env.env(**config).reset(seed=seed + pair)``.

Games run ``batch_size`` at a time; each step, every agent acts once on all the games where one of
its seats is to act.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from agents.base import Agent
from pedro_env.config import PedroConfig
from pedro_env.vector import PedroVectorEnv


@dataclass
class MatchResult:
    """One match of a duplicate pair, with statistics per side (index = side, not team)."""

    pair: int  # duplicate group; the match seed is seed + pair
    rotation: int  # side s played team (s + rotation) % T
    seed: int
    winner: int  # side that won, -1 if the match was truncated at max_deals
    deals: int  # deals played, thrown-in ones included
    scores: list[int]  # final score per side
    score_change: list[int] = field(default_factory=list)  # total score change per side (= scores)
    bids_won: list[int] = field(default_factory=list)  # deals in which the side was the maker
    bids_made: list[int] = field(default_factory=list)  # of those, made
    bid_total: list[int] = field(default_factory=list)  # sum of the side's winning bids
    points_taken: list[int] = field(default_factory=list)  # points captured over all deals


def play_matches(
    lineup: Sequence[Sequence[Agent]],
    config: PedroConfig,
    pairs: int,
    seed: int = 0,
    batch_size: int = 512,
    rng: np.random.Generator | None = None,
    progress: Callable[[MatchResult], None] | None = None,
) -> list[MatchResult]:
    """Play ``pairs`` duplicate groups between the sides of ``lineup`` (one side per team).

    Each side lists its agents by position in the team (a single agent fills every position).
    ``rng`` drives every agent's randomness (default: seeded from ``seed``). ``progress(result)`` is
    called after each finished match. Results come back sorted by (pair, rotation).
    """
    teams, n = config.num_teams, config.num_players
    if len(lineup) != teams:
        raise ValueError(f"a lineup needs one side per team: {teams} for {n} players, got {len(lineup)}")
    per_team = n // teams
    sides = [list(side) * per_team if len(side) == 1 else list(side) for side in lineup]
    for index, side in enumerate(sides):
        if len(side) != per_team:
            raise ValueError(f"side {index} has {len(side)} agents; a team has {per_team} seats")
    rng = rng or np.random.default_rng(seed)
    jobs = [(pair, rotation) for pair in range(pairs) for rotation in range(teams)]
    slots = min(batch_size, len(jobs))
    venv = PedroVectorEnv(slots, config=config)
    venv.reset(seed=seed)
    job_of_slot = np.full(slots, -1)
    next_job = 0
    stats = {}  # job -> running per-side counters

    def start(games: np.ndarray):
        nonlocal next_job
        count = min(games.size, len(jobs) - next_job)
        chosen = games[:count]
        job_of_slot[games] = -1
        job_of_slot[chosen] = np.arange(next_job, next_job + count)
        for job in range(next_job, next_job + count):
            stats[job] = np.zeros((5, teams), dtype=np.int64)  # bids_won, bids_made, bid_total, points, deals
        seeds = [seed + jobs[j][0] for j in range(next_job, next_job + count)]
        next_job += count
        return venv.restart(chosen, np.asarray(seeds, dtype=np.uint64)) if count else None

    result = start(np.arange(slots))
    # agent at (rotation, team position, side) -> index into a flat list, for grouping games by agent
    agent_list: list[Agent] = []
    agent_index: dict[int, int] = {}
    for side in sides:
        for agent in side:
            if id(agent) not in agent_index:
                agent_index[id(agent)] = len(agent_list)
                agent_list.append(agent)
    seat_agent = np.zeros((teams, n), dtype=np.intp)  # [rotation, seat] -> agent index
    for rotation in range(teams):
        for seat in range(n):
            side = (seat % teams - rotation) % teams
            seat_agent[rotation, seat] = agent_index[id(sides[side][seat // teams])]
    rotation_of_slot = np.zeros(slots, dtype=np.intp)
    results: list[MatchResult] = []
    while True:
        active = job_of_slot >= 0
        if not active.any():
            break
        rotation_of_slot[active] = [jobs[j][1] for j in job_of_slot[active]]
        actions = np.argmax(result.action_mask, axis=1)  # idle slots: any legal action
        acting_agent = seat_agent[rotation_of_slot, result.actor]
        for index, agent in enumerate(agent_list):
            games = np.flatnonzero(active & (acting_agent == index))
            if games.size:
                actions[games] = agent.act(result.observation[games], result.action_mask[games], rng)
        result = venv.step(actions)

        ended_deals = np.flatnonzero(result.deal_over & active)
        for game in ended_deals:
            counters = stats[int(job_of_slot[game])]
            rotation = int(rotation_of_slot[game])
            counters[4] += 1
            if result.deals["redeal"][game]:
                continue
            sides_order = [(t + rotation) % teams for t in range(teams)]  # side s -> team
            maker_team = int(result.deals["maker"][game]) % teams
            maker_side = (maker_team - rotation) % teams
            counters[0, maker_side] += 1
            counters[1, maker_side] += int(result.deals["made"][game] == 1)
            counters[2, maker_side] += int(result.deals["bid"][game])
            counters[3] += result.deals["points"][game][sides_order]
        finished = np.flatnonzero((result.terminated | result.truncated) & active)
        for game in finished:
            job = int(job_of_slot[game])
            pair, rotation = jobs[job]
            sides_order = [(t + rotation) % teams for t in range(teams)]
            winner_team = int(result.deals["winner"][game]) if result.terminated[game] else -1
            scores = [int(x) for x in result.deals["scores"][game][sides_order]]
            counters = stats.pop(job)
            match = MatchResult(
                pair=pair,
                rotation=rotation,
                seed=seed + pair,
                winner=-1 if winner_team < 0 else (winner_team - rotation) % teams,
                deals=int(counters[4, 0]),
                scores=scores,
                score_change=list(scores),
                bids_won=counters[0].tolist(),
                bids_made=counters[1].tolist(),
                bid_total=counters[2].tolist(),
                points_taken=counters[3].tolist(),
            )
            results.append(match)
            if progress is not None:
                progress(match)
        if finished.size:
            restarted = start(finished)
            if restarted is not None:
                result = restarted
    results.sort(key=lambda match: (match.pair, match.rotation))
    return results
