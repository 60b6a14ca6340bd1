"""Playing matches between sides of agents on the batched env, in duplicate.

A *side* is the agents of one team, by position: with four players ``[first, partner]`` (one agent
may fill both), with two or three players a single agent. A *lineup* is one side per team; an
evaluation of side A against side B at three players is the *field format*, A at one team and B at
every other (:func:`field_lineup`).

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
seed, pair range and batch size). The process CPU time of each call is shared equally among the games
it decided and summed per side of each match (:attr:`MatchResult.decision_cpu_s`). A finished slot
takes the next match; once none is left, the batch shrinks to the games still running (see
:meth:`_MatchBatch.shrink_if_sparse`).

:mod:`arena.shards` cuts an evaluation into reproducible units and plays them in worker processes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from agents import AGENT_SPECS, AgentSpecError, make_agent
from agents.base import Agent
from pedro_env.actions import action_to_str
from pedro_env.config import PedroConfig
from pedro_env.vector import IllegalActionError, PedroVectorEnv, VectorStep

Side = tuple[str, ...]  # agent specs of one side by position in the team (one spec fills every seat)

SHRINK_BELOW = 0.5  # shrink the batch when fewer than this share of its slots still play a match
MIN_SLOTS_TO_SHRINK = 16  # below this many slots a shrink saves less than it costs


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
    # process CPU seconds per side its agents spent choosing actions: a measurement, so neither compared nor in to_dict
    decision_cpu_s: list[float] = field(default_factory=list, compare=False)

    def to_dict(self) -> dict[str, Any]:
        values = asdict(self)
        del values["decision_cpu_s"]
        if values["actions"] is None:
            del values["actions"]
        return values


def parse_side(text: str) -> Side:
    """``'rule:heuristic+random'`` -> ``('rule:heuristic', 'random')``; a single spec -> a 1-tuple."""
    specs = tuple(part.strip() for part in text.split("+"))
    if not text.strip() or any(not spec for spec in specs):
        raise AgentSpecError(f"side {text!r} is not a spec or SPEC+SPEC: allowed specs are {', '.join(AGENT_SPECS)}")
    return specs


def field_lineup(sides: Sequence[Any], num_teams: int) -> list[Any]:
    """One side per team from ``(A, B)``: A then B at every other team (the field format with three players;
    ``[A, B]`` itself with two teams). A lineup of one side per team already is returned as it is."""
    if len(sides) == 2 and num_teams > 2:
        return [sides[0]] + [sides[1]] * (num_teams - 1)
    return list(sides)


def side_label(side: Side) -> str:
    """``('rule:heuristic', 'random')`` -> ``'rule:heuristic+random'`` (the text :func:`parse_side` reads)."""
    return "+".join(side)


def team_of_side(side: int, rotation: int, num_teams: int) -> int:
    """The team (0 .. T-1) that ``side`` plays in ``rotation``."""
    return (side + rotation) % num_teams


def sides_of_seats(seats: np.ndarray, rotations: np.ndarray, team_of_seat: np.ndarray, num_teams: int) -> np.ndarray:
    """The side (0 .. T-1) holding each of ``seats`` (absolute) in the matching ``rotations``; the inverse of
    :func:`team_of_side`, by arrays."""
    return (team_of_seat[seats] - rotations) % num_teams


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
    sides = side_seats(lineup, config)
    if pairs < 1:
        return []
    rng = rng if rng is not None else np.random.default_rng(seed)
    jobs = _MatchJobs.of(first_pair, pairs, config.num_teams, duplicate, seed)
    seating = _Seating.of(sides, config)
    batch = _MatchBatch(config, jobs, min(batch_size, jobs.count), record)
    results: list[MatchResult] = []
    while batch.any_running():
        acting_agent = batch.acting_agents(seating.seat_agent)
        actions, decision_cpu = seating.choose_actions(batch.step, acting_agent, rng)
        batch.advance(actions, acting_agent, seating.agents, decision_cpu)
        for match in batch.take_finished():
            results.append(match)
            if progress is not None:
                progress(match)
    results.sort(key=lambda match: (match.pair, match.rotation))
    return results


@dataclass(frozen=True)
class _MatchJobs:
    """The matches of a call to :func:`play_matches`, in the order they start: job ``j`` is ``pair[j]`` in
    ``rotation[j]`` (both ``(J,)`` int64), dealt from seed ``seed + pair[j]``."""

    pair: np.ndarray
    rotation: np.ndarray
    seed: int

    @classmethod
    def of(cls, first_pair: int, pairs: int, teams: int, duplicate: bool, seed: int) -> _MatchJobs:
        pair_ids = np.arange(first_pair, first_pair + pairs, dtype=np.int64)
        if duplicate:
            return cls(np.repeat(pair_ids, teams), np.tile(np.arange(teams), pairs), seed)
        return cls(pair_ids, pair_ids % teams, seed)

    @property
    def count(self) -> int:
        return int(self.pair.size)

    def match_seeds(self, first_job: int, jobs: int) -> np.ndarray:
        """(jobs,) uint64: the match seeds of jobs ``first_job .. first_job + jobs - 1``."""
        return (self.seed + self.pair[first_job : first_job + jobs]).astype(np.uint64)


@dataclass(frozen=True)
class _Seating:
    """The distinct agents of a lineup (in order of first appearance) and ``seat_agent``, (T, n) intp: the index
    in ``agents`` of the agent at ``[rotation, seat]``."""

    agents: list[Agent]
    seat_agent: np.ndarray

    @classmethod
    def of(cls, sides: list[list[Agent]], config: PedroConfig) -> _Seating:
        agents: list[Agent] = []
        for side in sides:
            for agent in side:
                if not any(agent is known for known in agents):
                    agents.append(agent)
        seat_agent = np.zeros((config.num_teams, config.num_players), dtype=np.intp)
        for rotation in range(config.num_teams):
            for side_index, side in enumerate(sides):
                for position, seat in enumerate(seats_of_side(side_index, rotation, config)):
                    seat_agent[rotation, seat] = next(i for i, agent in enumerate(agents) if agent is side[position])
        return cls(agents, seat_agent)

    def choose_actions(
        self, step: VectorStep, acting_agent: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """(B,) int64 actions and (B,) float64 CPU seconds: each agent acts once, in order, on the games where it is
        to act (``acting_agent``, -1 for an idle slot: it plays its first legal action until the batch shrinks),
        and the process CPU time of its call is shared equally among those games."""
        games_in_batch = acting_agent.size
        actions = np.zeros(games_in_batch, dtype=np.int64)
        decision_cpu = np.zeros(games_in_batch, dtype=np.float64)
        idle = np.flatnonzero(acting_agent < 0)
        if idle.size:
            actions[idle] = np.argmax(step.action_mask[idle], axis=1)
        for index, agent in enumerate(self.agents):
            games = np.flatnonzero(acting_agent == index)
            if not games.size:
                continue
            started = time.process_time()
            if games.size == games_in_batch:
                actions = np.asarray(agent.act(step.observation, step.action_mask, rng), dtype=np.int64)
            else:
                actions[games] = agent.act(step.observation[games], step.action_mask[games], rng)
            decision_cpu[games] = (time.process_time() - started) / games.size
        return actions, decision_cpu


class _MatchBatch:
    """The games in play: slot ``s`` of ``venv`` plays job ``slot_job[s]`` ((S,) int64, -1 once idle).

    A finished slot takes the next job; once none is left, the batch shrinks to the games still
    running (see :meth:`shrink_if_sparse`).
    """

    def __init__(self, config: PedroConfig, jobs: _MatchJobs, slots: int, record: bool) -> None:
        self.config = config
        self.jobs = jobs
        self.record = record
        self.venv = PedroVectorEnv(slots, config=config)
        self.venv.reset(seed=jobs.seed)
        self.slot_job = np.arange(slots, dtype=np.int64)
        self.next_job = slots
        self.counters = _SlotCounters(slots, config.num_teams)
        self.action_logs: list[list[int]] = [[] for _ in range(slots)] if record else []  # per slot, when record
        self.step = self.venv.restart(np.arange(slots), jobs.match_seeds(0, slots))
        self.team_of_seat = config.team_of_seat.astype(np.intp)

    def any_running(self) -> bool:
        return bool((self.slot_job >= 0).any())

    def acting_agents(self, seat_agent: np.ndarray) -> np.ndarray:
        """(S,) intp: the index of the agent to act in each slot, -1 for an idle one."""
        active = self.slot_job >= 0
        slot_rotation = self.jobs.rotation[np.where(active, self.slot_job, 0)]
        return np.where(active, seat_agent[slot_rotation, self.step.actor], -1)

    def advance(
        self, actions: np.ndarray, acting_agent: np.ndarray, agents: list[Agent], decision_cpu: np.ndarray
    ) -> None:
        """Step every slot with ``actions``; log them (with ``record``), add ``decision_cpu`` ((S,) CPU seconds) to
        the acting sides and count the deals that ended."""
        acting = np.flatnonzero(acting_agent >= 0)
        rotations = self.jobs.rotation[self.slot_job[acting]]
        acting_side = sides_of_seats(self.step.actor[acting], rotations, self.team_of_seat, self.config.num_teams)
        self.counters.decision_cpu[acting, acting_side] += decision_cpu[acting]
        try:
            step = self.venv.step(actions)
        except IllegalActionError as error:
            raise IllegalActionError(f"{_offender(self.step, actions, acting_agent, agents)}: {error}") from None
        self.step = step
        if self.record:
            for slot in np.flatnonzero(acting_agent >= 0):
                self.action_logs[slot].append(int(actions[slot]))
        if step.deal_over.any():
            ended = np.flatnonzero(step.deal_over & (acting_agent >= 0))
            rotations = self.jobs.rotation[self.slot_job[ended]]
            self.counters.record_deals(ended, rotations, step.deals, self.team_of_seat)

    def take_finished(self) -> list[MatchResult]:
        """The matches that ended in the last step (by slot), their slots refilled or left idle."""
        finished = np.flatnonzero((self.step.terminated | self.step.truncated) & (self.slot_job >= 0))
        if finished.size == 0:
            return []
        matches = [self._result_of(int(game)) for game in finished]
        self.counters.clear(finished)
        self._refill(finished)
        self.shrink_if_sparse()
        return matches

    def _result_of(self, game: int) -> MatchResult:
        """The finished match in slot ``game``, with per-side figures (its action log emptied)."""
        step, counters, teams = self.step, self.counters, self.config.num_teams
        job = int(self.slot_job[game])
        rotation = int(self.jobs.rotation[job])
        to_team = (np.arange(teams) + rotation) % teams  # side -> team
        winner_team = int(step.deals["winner"][game]) if step.terminated[game] else -1
        actions = None
        if self.record:
            actions = [action_to_str(action) for action in self.action_logs[game]]
            self.action_logs[game] = []
        return MatchResult(
            pair=int(self.jobs.pair[job]),
            rotation=rotation,
            seed=int(self.jobs.seed + self.jobs.pair[job]),
            winner=-1 if winner_team < 0 else (winner_team - rotation) % teams,
            truncated=bool(step.truncated[game]),
            deals=int(counters.deals[game]),
            scores=step.deals["scores"][game][to_team].astype(int).tolist(),
            bids_won=counters.bids_won[game].tolist(),
            bids_made=counters.bids_made[game].tolist(),
            bid_total=counters.bid_total[game].tolist(),
            points_taken=counters.points[game].tolist(),
            actions=actions,
            decision_cpu_s=counters.decision_cpu[game].tolist(),
        )

    def _refill(self, finished: np.ndarray) -> None:
        """Start the next jobs in the ``finished`` slots (in order) while jobs are left; the rest go idle."""
        refill = finished[: max(0, min(finished.size, self.jobs.count - self.next_job))]
        self.slot_job[finished[refill.size :]] = -1
        if refill.size:
            self.slot_job[refill] = np.arange(self.next_job, self.next_job + refill.size)
            self.step = self.venv.restart(refill, self.jobs.match_seeds(self.next_job, refill.size))
            self.next_job += refill.size

    def shrink_if_sparse(self) -> None:
        """Once no job is left to start, move the games still running into a batch of their own when they fill
        less than SHRINK_BELOW of it: the engine steps every slot, so idle ones would cost as much as live ones."""
        running = np.flatnonzero(self.slot_job >= 0)
        if not (
            self.next_job == self.jobs.count
            and 0 < running.size < SHRINK_BELOW * self.venv.num_envs
            and self.venv.num_envs >= MIN_SLOTS_TO_SHRINK
        ):
            return
        self.venv = self.venv.select(running)
        self.step = self.venv.current_step()
        self.slot_job = self.slot_job[running]
        if self.record:
            self.action_logs = [self.action_logs[slot] for slot in running]
        self.counters = self.counters.select(running)


class _SlotCounters:
    """Running per-side statistics of the match in each slot: (S,) deals, (S, T) the rest, by side."""

    def __init__(self, slots: int, teams: int) -> None:
        self.teams = teams
        self.deals = np.zeros(slots, dtype=np.int64)
        self.bids_won = np.zeros((slots, teams), dtype=np.int64)
        self.bids_made = np.zeros((slots, teams), dtype=np.int64)
        self.bid_total = np.zeros((slots, teams), dtype=np.int64)
        self.points = np.zeros((slots, teams), dtype=np.int64)
        self.decision_cpu = np.zeros((slots, teams), dtype=np.float64)  # process CPU seconds choosing actions

    def record_deals(
        self, games: np.ndarray, rotations: np.ndarray, deals: dict[str, np.ndarray], team_of_seat: np.ndarray
    ) -> None:
        """Add the deals that just ended in ``games`` (distinct slots) played in ``rotations``."""
        self.deals[games] += 1
        scored = ~deals["redeal"][games]
        games, rotations = games[scored], rotations[scored]
        if games.size == 0:
            return
        maker_side = sides_of_seats(deals["maker"][games], rotations, team_of_seat, self.teams)
        self.bids_won[games, maker_side] += 1
        self.bids_made[games, maker_side] += deals["made"][games] == 1
        self.bid_total[games, maker_side] += deals["bid"][games]
        team_of_side_index = (np.arange(self.teams)[None, :] + rotations[:, None]) % self.teams
        self.points[games] += np.take_along_axis(deals["points"][games], team_of_side_index, axis=1)

    def clear(self, games: np.ndarray) -> None:
        for counter in (self.deals, self.bids_won, self.bids_made, self.bid_total, self.points, self.decision_cpu):
            counter[games] = 0

    def select(self, games: np.ndarray) -> _SlotCounters:
        """The counters of ``games`` only, in that order (for a shrunk batch)."""
        kept = _SlotCounters(games.size, self.teams)
        for name in ("deals", "bids_won", "bids_made", "bid_total", "points", "decision_cpu"):
            setattr(kept, name, getattr(self, name)[games].copy())
        return kept


def _offender(step: VectorStep, actions: np.ndarray, acting_agent: np.ndarray, agents: list[Agent]) -> str:
    """Name the agent whose action was illegal (for the error message)."""
    legal = step.action_mask[np.arange(actions.size), np.clip(actions, 0, step.action_mask.shape[1] - 1)] != 0
    bad = np.flatnonzero(~legal & (acting_agent >= 0))
    if bad.size == 0:
        return "an agent played an illegal action"
    return f"agent {agents[int(acting_agent[bad[0]])].name!r} played an illegal action"


# ---------------------------------------------------------------- agents from specs


def other_rules_note(label: str, agent: Agent) -> str:
    """``"LABEL was trained under other rules: HOW; it plays these as it learned its own"`` for a policy trained under
    one rule set that is not the game's (its ``trained_rules_note``, e.g. ``six_card False (here True)``; a search
    agent's model: ``"LABEL's model was ..."``), else ``""``. A policy trained across rule sets reads the rules from
    its observation and has no note."""
    note = getattr(agent, "trained_rules_note", "")
    whose = label + getattr(agent, "trained_rules_subject", "")
    return f"{whose} was trained under other rules: {note}; it plays these as it learned its own" if note else ""


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
