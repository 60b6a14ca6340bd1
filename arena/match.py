"""Playing matches between sides of agents on the batched env, in duplicate.

A *side* is the agents of one team, by position: with four players ``[first, partner]`` (one agent
may fill both), with two or three players a single agent. A *lineup* is one side per team.

Duplicate format: every match seed is played once per *rotation* of the sides over the teams (two
rotations with two teams, three with three players). In rotation ``r`` side ``s`` plays team
``(s + r) % T`` (seats ``t, t + T, ...`` of that team ``t``). Decks and first dealers are hashes of
the seed and the deal number (:func:`pedro_env.rules.hashed_decks`), so deal ``k`` of every match of
a *pair* (group) has the same deck and dealer whatever was played before: each side gets the other
sides' cards, and the luck of the deal cancels within the pair. Match seeds are ``seed + pair``, so a
match can be replayed alone with ``pedro_env.env(**config).reset(seed=seed + pair)``. Without
duplicate every pair is a single match, in rotation ``pair % T``.

Games run ``batch_size`` at a time; each step, every distinct agent acts once on all the games in
which one of its seats is to act, drawing from one ``rng`` (so a run is reproducible for a given
seed, pair range and batch size). A finished slot takes the next match; once none is left, the
batch shrinks to the games still running (see :func:`_shrink`).

Shards (:func:`shard_bounds`, :func:`run_shards`) cut an evaluation into units that depend only on
the number of pairs and the batch size, each with its own agent RNG, and play them here or in
worker processes: the same seed then gives the same results for any number of workers.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import queue as queue_module
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from agents import make_agent
from agents.base import Agent
from pedro_env.actions import action_to_str
from pedro_env.config import PedroConfig
from pedro_env.vector import IllegalActionError, PedroVectorEnv, VectorStep

Side = tuple[str, ...]  # agent specs of one side by position in the team (one spec fills every seat)

SHRINK_BELOW = 0.5  # shrink the batch when fewer than this share of its slots still play a match
MIN_SLOTS_TO_SHRINK = 16  # below this many slots a shrink saves less than it costs
SHARD_MULTIPLE = 2  # a shard count above 1 is rounded up to a multiple of this, so 2 workers share work evenly


@dataclass
class MatchResult:
    """One match, with statistics per side (list index = side, not team; see :func:`team_of_side`)."""

    pair: int  # duplicate group; the match seed is seed + pair
    rotation: int  # side s played team (s + rotation) % T
    seed: int  # match seed
    winner: int  # side that won, -1 for none (truncated at max_deals, or a one-deal episode with no winner)
    truncated: bool  # stopped at max_deals without a winner
    deals: int  # deals played, thrown-in ones included
    scores: list[int]  # final score per side (matches start at 0, so also the total score change)
    bids_won: list[int]  # deals in which the side was the maker
    bids_made: list[int]  # of those, made
    bid_total: list[int]  # sum of the side's winning bids
    points_taken: list[int]  # points captured over all deals
    actions: list[str] | None = None  # every action of the match in text form, when play_matches(record=True)

    def to_dict(self) -> dict[str, Any]:
        values = asdict(self)
        if values["actions"] is None:
            del values["actions"]
        return values


def team_of_side(side: int, rotation: int, num_teams: int) -> int:
    """The team (0 .. T-1) that ``side`` plays in ``rotation``."""
    return (side + rotation) % num_teams


def seats_of_side(side: int, rotation: int, config: PedroConfig) -> list[int]:
    """Absolute seats that ``side`` holds in ``rotation``, by position in the side (first, partner)."""
    team = team_of_side(side, rotation, config.num_teams)
    return list(range(team, config.num_players, config.num_teams))


def side_seats(lineup: Sequence[Sequence[Agent]], config: PedroConfig) -> list[list[Agent]]:
    """Each side's agents by position, a single agent repeated to fill its team (raises ValueError on a bad lineup)."""
    teams, n = config.num_teams, config.num_players
    if len(lineup) != teams:
        raise ValueError(f"a lineup needs one side per team: {teams} for {n} players, got {len(lineup)}")
    per_team = n // teams
    sides = [list(side) * per_team if len(side) == 1 else list(side) for side in lineup]
    for index, side in enumerate(sides):
        if len(side) != per_team:
            raise ValueError(
                f"side {index} has {len(side)} agents; a team has {per_team} seat{'s' if per_team > 1 else ''} "
                f"with num_players={n}"
            )
    return sides


def play_matches(
    lineup: Sequence[Sequence[Agent]],
    config: PedroConfig,
    pairs: int,
    seed: int = 0,
    batch_size: int = 1024,
    rng: np.random.Generator | None = None,
    progress: Callable[[MatchResult], None] | None = None,
    first_pair: int = 0,
    duplicate: bool = True,
    record: bool = False,
) -> list[MatchResult]:
    """Play pairs ``first_pair .. first_pair + pairs - 1`` between the sides of ``lineup`` (one side per team).

    Each side lists its agents by position in the team (a single agent fills every position). With
    ``duplicate`` a pair is one match per rotation, else a single match. ``rng`` drives every agent's
    randomness (default: seeded from ``seed``). ``progress(result)`` is called after each finished
    match. Results come back sorted by (pair, rotation). With ``record`` each result carries its
    actions (text form), enough with its seed to replay the match (:mod:`arena.replay`).
    """
    teams = config.num_teams
    sides = side_seats(lineup, config)
    if pairs < 1:
        return []
    rng = rng if rng is not None else np.random.default_rng(seed)

    pair_ids = np.arange(first_pair, first_pair + pairs, dtype=np.int64)
    if duplicate:
        job_pair, job_rotation = np.repeat(pair_ids, teams), np.tile(np.arange(teams), pairs)
    else:
        job_pair, job_rotation = pair_ids, pair_ids % teams
    num_jobs = job_pair.size

    # the distinct agents, in order of first appearance, and which one sits at [rotation, seat]
    agents: list[Agent] = []
    for side in sides:
        for agent in side:
            if not any(agent is known for known in agents):
                agents.append(agent)
    seat_agent = np.zeros((teams, config.num_players), dtype=np.intp)
    for rotation in range(teams):
        for side_index, side in enumerate(sides):
            for position, seat in enumerate(seats_of_side(side_index, rotation, config)):
                seat_agent[rotation, seat] = next(i for i, agent in enumerate(agents) if agent is side[position])

    slots = min(batch_size, num_jobs)
    venv = PedroVectorEnv(slots, config=config)
    venv.reset(seed=seed)
    slot_job = np.arange(slots, dtype=np.int64)  # -1 = idle
    next_job = slots
    counters = _SlotCounters(slots, teams)
    step = venv.restart(np.arange(slots), (seed + job_pair[:slots]).astype(np.uint64))
    team_of_seat = config.team_of_seat.astype(np.intp)
    side_team = np.arange(teams)  # + rotation, mod T: the team of each side
    results: list[MatchResult] = []
    action_logs: list[list[int]] = [[] for _ in range(slots)] if record else []

    while True:
        active = slot_job >= 0
        if not active.any():
            break
        slot_rotation = job_rotation[np.where(active, slot_job, 0)]
        acting_agent = np.where(active, seat_agent[slot_rotation, step.actor], -1)
        actions = np.zeros(venv.num_envs, dtype=np.int64)
        if not active.all():  # idle slots play any legal action until the batch shrinks
            idle = np.flatnonzero(~active)
            actions[idle] = np.argmax(step.action_mask[idle], axis=1)
        for index, agent in enumerate(agents):
            games = np.flatnonzero(acting_agent == index)
            if games.size == venv.num_envs:
                actions = np.asarray(agent.act(step.observation, step.action_mask, rng), dtype=np.int64)
            elif games.size:
                actions[games] = agent.act(step.observation[games], step.action_mask[games], rng)
        try:
            next_step = venv.step(actions)
        except IllegalActionError as error:
            raise IllegalActionError(f"{_offender(step, actions, acting_agent, agents)}: {error}") from None
        step = next_step
        if record:
            for slot in np.flatnonzero(active):
                action_logs[slot].append(int(actions[slot]))

        if step.deal_over.any():
            ended = np.flatnonzero(step.deal_over & active)
            counters.record_deals(ended, slot_rotation[ended], step.deals, team_of_seat)
        finished = np.flatnonzero((step.terminated | step.truncated) & active)
        if finished.size == 0:
            continue
        for game in finished:
            job = int(slot_job[game])
            match_rotation = int(job_rotation[job])
            to_team = (side_team + match_rotation) % teams  # side -> team
            winner_team = int(step.deals["winner"][game]) if step.terminated[game] else -1
            match = MatchResult(
                pair=int(job_pair[job]),
                rotation=match_rotation,
                seed=int(seed + job_pair[job]),
                winner=-1 if winner_team < 0 else (winner_team - match_rotation) % teams,
                truncated=bool(step.truncated[game]),
                deals=int(counters.deals[game]),
                scores=step.deals["scores"][game][to_team].astype(int).tolist(),
                bids_won=counters.bids_won[game].tolist(),
                bids_made=counters.bids_made[game].tolist(),
                bid_total=counters.bid_total[game].tolist(),
                points_taken=counters.points[game].tolist(),
                actions=[action_to_str(action) for action in action_logs[game]] if record else None,
            )
            if record:
                action_logs[game] = []
            results.append(match)
            if progress is not None:
                progress(match)
        counters.clear(finished)
        refill = finished[: max(0, min(finished.size, num_jobs - next_job))]
        slot_job[finished[refill.size :]] = -1
        if refill.size:
            slot_job[refill] = np.arange(next_job, next_job + refill.size)
            step = venv.restart(refill, (seed + job_pair[next_job : next_job + refill.size]).astype(np.uint64))
            next_job += refill.size
        running = np.flatnonzero(slot_job >= 0)
        if (
            next_job == num_jobs
            and 0 < running.size < SHRINK_BELOW * venv.num_envs
            and venv.num_envs >= MIN_SLOTS_TO_SHRINK
        ):
            venv, step = _shrink(venv, running)
            slot_job = slot_job[running]
            if record:
                action_logs = [action_logs[slot] for slot in running]
            counters = counters.select(running)

    results.sort(key=lambda match: (match.pair, match.rotation))
    return results


class _SlotCounters:
    """Running per-side statistics of the match in each slot: (S,) deals, (S, T) the rest, by side."""

    def __init__(self, slots: int, teams: int) -> None:
        self.teams = teams
        self.deals = np.zeros(slots, dtype=np.int64)
        self.bids_won = np.zeros((slots, teams), dtype=np.int64)
        self.bids_made = np.zeros((slots, teams), dtype=np.int64)
        self.bid_total = np.zeros((slots, teams), dtype=np.int64)
        self.points = np.zeros((slots, teams), dtype=np.int64)

    def record_deals(
        self, games: np.ndarray, rotations: np.ndarray, deals: dict[str, np.ndarray], team_of_seat: np.ndarray
    ) -> None:
        """Add the deals that just ended in ``games`` (distinct slots) played in ``rotations``."""
        self.deals[games] += 1
        scored = ~deals["redeal"][games]
        games, rotations = games[scored], rotations[scored]
        if games.size == 0:
            return
        maker_side = (team_of_seat[deals["maker"][games]] - rotations) % self.teams
        self.bids_won[games, maker_side] += 1
        self.bids_made[games, maker_side] += deals["made"][games] == 1
        self.bid_total[games, maker_side] += deals["bid"][games]
        team_of_side_index = (np.arange(self.teams)[None, :] + rotations[:, None]) % self.teams
        self.points[games] += np.take_along_axis(deals["points"][games], team_of_side_index, axis=1)

    def clear(self, games: np.ndarray) -> None:
        for counter in (self.deals, self.bids_won, self.bids_made, self.bid_total, self.points):
            counter[games] = 0

    def select(self, games: np.ndarray) -> _SlotCounters:
        """The counters of ``games`` only, in that order (for a shrunk batch)."""
        kept = _SlotCounters(games.size, self.teams)
        for name in ("deals", "bids_won", "bids_made", "bid_total", "points"):
            setattr(kept, name, getattr(self, name)[games].copy())
        return kept


def _shrink(venv: PedroVectorEnv, games: np.ndarray) -> tuple[PedroVectorEnv, VectorStep]:
    """A smaller env holding only ``games`` (in that order) mid-match, and its current step.

    The engine steps every slot of a batch, so once no match is left to start, the slots whose
    match ended would cost as much as the ones still playing; moving the running games into a
    batch of their own keeps the tail of an evaluation cheap. Uses only the public surface: the
    state is a dataclass of per-game arrays, and ``restart`` of no games recomputes the step.
    """
    assert venv.state is not None
    smaller = PedroVectorEnv(games.size, config=venv.config)
    smaller.reset(seed=0)
    smaller.state = venv.state.select(games)
    step = smaller.restart(np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.uint64))
    return smaller, step


def _offender(step: VectorStep, actions: np.ndarray, acting_agent: np.ndarray, agents: list[Agent]) -> str:
    """Name the agent whose action was illegal (for the error message)."""
    legal = step.action_mask[np.arange(actions.size), np.clip(actions, 0, step.action_mask.shape[1] - 1)] != 0
    bad = np.flatnonzero(~legal & (acting_agent >= 0))
    if bad.size == 0:
        return "an agent played an illegal action"
    return f"agent {agents[int(acting_agent[bad[0]])].name!r} played an illegal action"


# ---------------------------------------------------------------- shards: reproducible units of work, run in workers

_AGENT_CACHE: dict[tuple[str, PedroConfig], Agent] = {}


def build_agent(spec: str, config: PedroConfig) -> Agent:
    """The agent of ``spec`` for ``config``, built once per process and shared by every side that names it.

    Agents hold no state between calls (everything they know comes with the observations), so one
    instance can play several seats; a spec named by both sides then acts in one call per step.
    """
    key = (spec.strip(), config)
    if key not in _AGENT_CACHE:
        _AGENT_CACHE[key] = make_agent(spec, config)
    return _AGENT_CACHE[key]


def shard_bounds(pairs: int, batch_size: int, matches_per_pair: int) -> list[tuple[int, int]]:
    """(first_pair, pairs) of each shard, sizes as even as possible.

    One shard when every match fits in one batch of ``batch_size``; otherwise an even number of
    shards of at most ``batch_size`` matches, so two workers get equal shares (more workers need a
    smaller batch size to get more shards). Depends only on ``pairs`` and ``batch_size``, never on
    the worker count, so the results do not either. Big batches matter more than many shards for
    fast agents: a step of the engine or an agent costs much the same for 100 games as for 1000.
    """
    per_shard = max(1, batch_size // matches_per_pair)
    count = math.ceil(pairs / per_shard)
    if count > 1:
        count = min(pairs, SHARD_MULTIPLE * math.ceil(count / SHARD_MULTIPLE))
    edges = [round(index * pairs / count) for index in range(count + 1)]
    return [(edges[index], edges[index + 1] - edges[index]) for index in range(count)]


@dataclass(frozen=True)
class Shard:
    """Pairs ``first_pair .. first_pair + pairs - 1`` of one pairing of sides, with agent RNG ``(seed, index)``."""

    pairing: int  # which pairing of a round robin (0 for a head to head)
    sides: tuple[Side, ...]  # one side per team: agent specs by position
    first_pair: int
    pairs: int
    index: int  # shard number within the pairing: seeds the agents' RNG
    batch_size: int = 0  # matches played at once; 0: the run's (RunSettings.batch_size)


@dataclass(frozen=True)
class RunSettings:
    """What every shard of a run shares."""

    config: PedroConfig
    seed: int  # match pair p deals from seed + p; the agents' RNG of shard i is seeded (seed, i)
    batch_size: int
    duplicate: bool
    record: bool = False  # keep every match's actions (for replay files)
    policies: tuple[tuple[str, bytes], ...] = ()  # in-memory policies (name, agents.policy.policy_bytes) sides may name


ProgressReport = Callable[[list[tuple[int, int]]], None]  # called with [(pairing, winner side), ...] of new results
REPORT_EVERY_S = 0.2  # a shard batches its progress reports (they cross a process boundary with workers)


def play_shard(shard: Shard, settings: RunSettings, report: ProgressReport | None = None) -> list[MatchResult]:
    """Play one shard in this process; its results depend only on the shard and the settings."""
    inline = dict(settings.policies)
    built: dict[str, Agent] = {}

    def agent_for(spec: str) -> Agent:
        if spec not in inline:
            return build_agent(spec, settings.config)
        if spec not in built:  # one instance per name, so a policy named twice acts in one call
            from agents.policy import policy_agent_from_bytes

            built[spec] = policy_agent_from_bytes(inline[spec], settings.config, name=spec)
        return built[spec]

    lineup = [[agent_for(spec) for spec in side] for side in shard.sides]
    unreported: list[tuple[int, int]] = []
    last_report = time.monotonic()

    def on_match(match: MatchResult) -> None:
        nonlocal last_report
        unreported.append((shard.pairing, match.winner))
        if report is not None and time.monotonic() - last_report > REPORT_EVERY_S:
            report(unreported.copy())
            unreported.clear()
            last_report = time.monotonic()

    results = play_matches(
        lineup,
        settings.config,
        pairs=shard.pairs,
        seed=settings.seed,
        batch_size=shard.batch_size or settings.batch_size,
        rng=np.random.default_rng([settings.seed, shard.index]),
        progress=on_match,
        first_pair=shard.first_pair,
        duplicate=settings.duplicate,
        record=settings.record,
    )
    if report is not None and unreported:
        report(unreported)
    return results


def run_shards(
    shards: Sequence[Shard], settings: RunSettings, workers: int = 1, report: ProgressReport | None = None
) -> list[list[MatchResult]]:
    """Every shard's results, in the order of ``shards``: here when ``workers`` is 1, else in spawned processes.

    Workers take shards as they free up; each reports progress through a queue that this process
    drains into ``report``. A worker's exception is raised here.
    """
    if workers <= 1 or len(shards) <= 1:
        return [play_shard(shard, settings, report) for shard in shards]
    context = multiprocessing.get_context("spawn")  # no forked copies of threads or open files
    progress_queue = context.Queue()
    results: list[list[MatchResult] | None] = [None] * len(shards)
    with context.Pool(min(workers, len(shards)), initializer=_worker_init, initargs=(progress_queue,)) as pool:
        running = {position: pool.apply_async(_worker_play, (shard, settings)) for position, shard in enumerate(shards)}
        while running:
            _drain(progress_queue, report, timeout=0.1)
            for position in [position for position, job in running.items() if job.ready()]:
                results[position] = running.pop(position).get()
        _drain(progress_queue, report, timeout=0.0)
    return [shard_results for shard_results in results if shard_results is not None]


_WORKER_QUEUE: Any = None  # in a worker process: where progress reports go


def _worker_init(progress_queue: Any) -> None:
    global _WORKER_QUEUE
    _WORKER_QUEUE = progress_queue
    # one thread per worker: torch (imported later, for policies) would otherwise start one per core in each
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = "1"
    # Ctrl-C is the parent's to handle (pedro-train stops at the next update; pedro-eval ends the pool)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _worker_play(shard: Shard, settings: RunSettings) -> list[MatchResult]:
    return play_shard(shard, settings, _WORKER_QUEUE.put)


def _drain(progress_queue: Any, report: ProgressReport | None, timeout: float) -> None:
    """Pass every progress batch waiting in the queue to ``report`` (waiting up to ``timeout`` for the first)."""
    try:
        while True:
            batch = progress_queue.get(timeout=timeout) if timeout > 0 else progress_queue.get_nowait()
            if report is not None:
                report(batch)
            timeout = 0.0
    except queue_module.Empty:
        pass
