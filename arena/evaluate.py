"""Evaluation: head-to-head and round-robin matches between sides of agents, summarised with intervals and ratings.

A *side* is an agent spec (``random``, ``rule:heuristic``, ``search:pimc,samples=16``, ``ckpt:PATH``;
see :mod:`agents`) or, with four players, a team of two specs joined by ``+`` (first seat, partner).
:func:`evaluate` plays side A against side B and returns a :class:`arena.ratings.HeadToHead` (win
rate over decided matches and score with undecided as the parity share, both with 95% Wilson
intervals; points per deal A - B with its standard error over duplicate pairs; each side's bids
made, sets and average bid). With two teams the format is duplicate; with three players it is the
field format: A at one seat, B at the two others, every deal sequence once per seat rotation.
:func:`round_robin` plays every pair of sides on the same seeds and returns a
:class:`arena.ratings.Tournament` with Bradley-Terry ratings on the Elo scale, the ``anchor`` side at 0
(two teams only: a rating compares two sides).

Reproducibility: match ``pair`` of every pairing uses the deal seed ``seed + pair``; the pairs are
cut into shards (a fixed function of the number of pairs and ``batch_size``, never of ``workers``),
each played in one batch with its own agent RNG seeded ``(seed, shard)``, and results are merged in
pair order, so a seed gives identical results for any number of workers (but not for another batch
size). Workers take whole shards: for slow agents (search) pass a small ``batch_size``.

Bounds, checked before any work: a run plays at most :data:`MAX_MATCHES` matches in all
(:data:`MAX_RECORDED_MATCHES` with ``record``), its deal seeds stay within 0..:data:`MAX_SEED`, ``workers``
is at most :data:`MAX_WORKERS` and ``batch_size`` at most :data:`MAX_BATCH_SIZE`; Ctrl-C during the play
raises :class:`EvaluationInterrupted` with the matches finished.

Reports: :mod:`arena.tables` (terminal), :mod:`arena.reports` (JSON, CSV, replay records),
:mod:`arena.plots` (PNG); the command line ``pedro-eval`` is :mod:`arena.eval_cli`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

from agents import AgentSpecError
from arena.match import MatchResult, Side, build_agent, other_rules_note, parse_side, side_label
from arena.progress import MatchProgressBar
from arena.ratings import HeadToHead, Tournament
from arena.shards import RunSettings, Shard, run_shards, shard_bounds
from pedro_env.config import PedroConfig, make_config

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_MATCHES",
    "MAX_BATCH_SIZE",
    "MAX_MATCHES",
    "MAX_RECORDED_MATCHES",
    "MAX_SEED",
    "MAX_WORKERS",
    "EvaluationError",
    "EvaluationInterrupted",
    "check_round_robin",
    "check_run_numbers",
    "check_run_size",
    "check_sides",
    "evaluate",
    "pairs_for",
    "resolve_config",
    "round_robin",
]

DEFAULT_MATCHES = 200
DEFAULT_BATCH_SIZE = 1024
MAX_SEED = 2**62  # deal seeds are SEED + p and travel as int64: every one of a run's, not only SEED, within it
# Bounds on the counts a caller names, checked before any work: a run keeps every match in memory
# (about 1 KB each, 3 KB in its JSON), so it plays at most MAX_MATCHES, all pairings or gauntlet entries together.
MAX_MATCHES = 1_000_000
MAX_RECORDED_MATCHES = 10_000  # with record=True (pedro-eval --save-replays): each keeps its actions and is a file
MAX_WORKERS = 256  # processes; a machine with more cores still gets at most this many by default
MAX_BATCH_SIZE = 65_536  # matches played at once per process (the engine's and the agents' arrays scale with it)

Pairing = tuple[int, int]  # (index of side A, index of side B) in the list of sides


class EvaluationError(ValueError):
    """Arguments the harness cannot run with (reported by the CLI as a usage error)."""


class EvaluationInterrupted(KeyboardInterrupt):
    """Ctrl-C during the play: how many of the run's matches had finished (their results are not kept)."""

    def __init__(self, finished: int, total: int) -> None:
        super().__init__(f"{finished} of {total} matches played")
        self.finished, self.total = finished, total


# ---------------------------------------------------------------- checks


def resolve_config(config: PedroConfig | dict[str, Any] | None) -> PedroConfig:
    """A PedroConfig from a config, a dict of overrides, or None (default rules)."""
    if isinstance(config, PedroConfig):
        return config
    return make_config(**(config or {}))


def check_sides(sides: Sequence[Side], config: PedroConfig) -> list[str]:
    """Build every agent once (an unknown spec or missing checkpoint raises AgentSpecError) and check team sizes.

    Returns a note for each policy trained under rules other than ``config`` (it plays them all the same).
    """
    per_team = config.num_players // config.num_teams
    notes = []
    for side in sides:
        for spec in side:
            note = other_rules_note(spec, build_agent(spec, config))
            if note:
                notes.append(note)
        if len(side) not in (1, per_team):
            raise AgentSpecError(
                f"side {side_label(side)!r} has {len(side)} agents; with num_players={config.num_players} a team has "
                f"{per_team} seat{'s' if per_team > 1 else ''} (give one spec, or SPEC+SPEC with four players)"
            )
    return list(dict.fromkeys(notes))


def check_round_robin(config: PedroConfig) -> None:
    """EvaluationError where a round robin cannot fit ratings: three players seat three sides in every match."""
    if config.num_teams != 2:
        raise EvaluationError(
            f"--round-robin fits Bradley-Terry ratings to matches of two sides; num_players={config.num_players} "
            "seats three: play each pair as a head to head (field format) or use --gauntlet"
        )


def pairs_for(matches: int | None, pairs: int | None, config: PedroConfig, duplicate: bool) -> int:
    """Duplicate groups to play for ``matches`` (rounded up to whole pairs) or ``pairs``."""
    if matches is not None and pairs is not None:
        raise EvaluationError("give matches or pairs, not both")
    per_pair = config.num_teams if duplicate else 1
    if pairs is None:
        matches = DEFAULT_MATCHES if matches is None else matches
        if not 1 <= matches <= MAX_MATCHES:
            raise EvaluationError(f"matches must be >= 1 and <= {MAX_MATCHES}, got {matches}")
        return math.ceil(matches / per_pair)
    if not 1 <= pairs <= MAX_MATCHES:
        raise EvaluationError(f"pairs must be >= 1 and <= {MAX_MATCHES}, got {pairs}")
    return pairs


def check_run_numbers(seed: int, workers: int, batch_size: int = 1) -> None:
    """One clear error for the first out-of-range number: seed 0..MAX_SEED, workers 1..MAX_WORKERS and batch size
    1..MAX_BATCH_SIZE."""
    if not 0 <= seed <= MAX_SEED:
        raise EvaluationError(f"seed must be an int from 0 to 2**62, got {seed}")
    if not 1 <= workers <= MAX_WORKERS:
        raise EvaluationError(
            f"workers must be >= 1 (pedro-eval --workers 0: one per core) and <= {MAX_WORKERS}, got {workers}"
        )
    if not 1 <= batch_size <= MAX_BATCH_SIZE:
        raise EvaluationError(f"batch size must be >= 1 and <= {MAX_BATCH_SIZE}, got {batch_size}")


def check_run_size(seed: int, pairs: int, matches: int, record: bool = False) -> None:
    """EvaluationError for a run of more than MAX_MATCHES ``matches`` in all (MAX_RECORDED_MATCHES with ``record``),
    or whose deal seeds ``seed`` to ``seed + pairs - 1`` (each pairing's or entry's ``pairs``) pass MAX_SEED."""
    most = MAX_RECORDED_MATCHES if record else MAX_MATCHES
    if matches > most:
        recorded = " recorded (--save-replays)" if record else ""
        raise EvaluationError(
            f"the run would play {matches} matches; at most {most}{recorded} in one run (fewer pairs, sides or "
            "baselines)"
        )
    if seed + pairs - 1 > MAX_SEED:
        raise EvaluationError(
            f"seed {seed} with {pairs} pairs deals from seeds up to {seed + pairs - 1}, past 2**62: "
            f"give a seed from 0 to {MAX_SEED - pairs + 1}"
        )


# ---------------------------------------------------------------- the API


def evaluate(
    side_a: str | Side,
    side_b: str | Side,
    config: PedroConfig | dict[str, Any] | None = None,
    matches: int | None = None,
    pairs: int | None = None,
    seed: int = 0,
    workers: int = 1,
    batch_size: int = DEFAULT_BATCH_SIZE,
    duplicate: bool = True,
    progress: bool = False,
    record: bool = False,
) -> HeadToHead:
    """Play side A against side B: ``matches`` matches (rounded up to whole duplicate pairs) or ``pairs`` pairs.

    With three players a pair is a rotation set of the field format (A at one seat, B at the two others, one
    match per seat A takes). A side is a spec string (``'rule:heuristic'``, ``'random+rule:heuristic'``) or a
    tuple of specs.
    Raises AgentSpecError for an unknown spec or missing checkpoint, ConfigError for a bad config.
    """
    tournament = _play_pairings(
        [side_a, side_b], [(0, 1)], config, matches, pairs, seed, workers, batch_size, duplicate, progress, 0, record
    )
    return tournament.head_to_heads[0]


def round_robin(
    sides: Sequence[str | Side],
    config: PedroConfig | dict[str, Any] | None = None,
    matches: int | None = None,
    pairs: int | None = None,
    seed: int = 0,
    workers: int = 1,
    batch_size: int = DEFAULT_BATCH_SIZE,
    duplicate: bool = True,
    progress: bool = False,
    anchor: int | str = 0,
    record: bool = False,
) -> Tournament:
    """Every pair of sides plays ``matches`` (or ``pairs`` pairs) on the same seeds; ratings fitted to all.

    ``anchor``: the side (index or label) whose rating is fixed at 0.
    """
    if len(sides) < 2:
        raise EvaluationError(f"a round robin needs at least two sides, got {len(sides)}")
    check_round_robin(resolve_config(config))
    pairings = [(i, j) for i in range(len(sides)) for j in range(i + 1, len(sides))]
    return _play_pairings(
        sides, pairings, config, matches, pairs, seed, workers, batch_size, duplicate, progress, anchor, record
    )


def _play_pairings(
    sides: Sequence[str | Side],
    pairings: list[Pairing],
    config: PedroConfig | dict[str, Any] | None,
    matches: int | None,
    pairs: int | None,
    seed: int,
    workers: int,
    batch_size: int,
    duplicate: bool,
    progress: bool,
    anchor: int | str,
    record: bool = False,
) -> Tournament:
    """Check everything, play every pairing's shards (here or in ``workers`` processes) and summarise them.

    Over 60 lines: the checks come first, in the order their errors are promised, then one pass that plays and
    summarises; split, the resolved sides, counts and settings would travel as a dozen arguments."""
    resolved = resolve_config(config)
    parsed = [parse_side(side) if isinstance(side, str) else tuple(side) for side in sides]
    labels = [side_label(side) for side in parsed]
    anchor_index = _anchor_index(labels, anchor, len(pairings))
    check_run_numbers(seed, workers, batch_size)
    pair_count = pairs_for(matches, pairs, resolved, duplicate)
    matches_per_pair = resolved.num_teams if duplicate else 1
    check_run_size(seed, pair_count, len(pairings) * pair_count * matches_per_pair, record)
    check_sides(parsed, resolved)
    shards = _shards(parsed, pairings, shard_bounds(pair_count, batch_size, matches_per_pair))
    settings = RunSettings(config=resolved, seed=seed, batch_size=batch_size, duplicate=duplicate, record=record)
    matches_per_pairing = pair_count * matches_per_pair
    bar = MatchProgressBar(len(pairings) * matches_per_pairing, progress, labels[0], len(pairings), matches_per_pairing)
    started = time.perf_counter()
    try:
        shard_results = run_shards(shards, settings, workers, bar.report)
    except KeyboardInterrupt:
        raise EvaluationInterrupted(int(bar.done.sum()), len(pairings) * matches_per_pairing) from None
    finally:
        bar.close()
    elapsed = time.perf_counter() - started
    by_pairing: list[list[MatchResult]] = [[] for _ in pairings]
    for shard, results in zip(shards, shard_results):
        by_pairing[shard.pairing].extend(results)
    head_to_heads = [
        HeadToHead(
            side_a=labels[i],
            side_b=labels[j],
            config=resolved,
            seed=seed,
            duplicate=duplicate,
            pairs=pair_count,
            batch_size=batch_size,
            results=by_pairing[index],
            workers=workers,
            elapsed_s=elapsed if len(pairings) == 1 else math.nan,  # a round robin times only the whole
        )
        for index, (i, j) in enumerate(pairings)
    ]
    return Tournament(
        sides=labels,
        config=resolved,
        seed=seed,
        duplicate=duplicate,
        pairs=pair_count,
        batch_size=batch_size,
        head_to_heads=head_to_heads,
        anchor=anchor_index,
        workers=workers,
        elapsed_s=elapsed,
    )


def _anchor_index(labels: list[str], anchor: int | str, pairings: int) -> int:
    """The index of the ``anchor`` side (an index or a label); EvaluationError for a round robin of equal sides."""
    if len(set(labels)) < len(labels) and pairings > 1:
        raise EvaluationError(f"round-robin sides must differ: {', '.join(labels)}")
    if isinstance(anchor, str):
        if anchor not in labels:
            raise EvaluationError(f"anchor {anchor!r} is not one of the sides: {', '.join(labels)}")
        return labels.index(anchor)
    return int(anchor)


def _shards(sides: list[Side], pairings: list[Pairing], bounds: list[tuple[int, int]]) -> list[Shard]:
    """Every pairing cut at the same ``bounds`` ((first_pair, pairs) of each shard), pairing by pairing."""
    return [
        Shard(pairing=index, sides=(sides[i], sides[j]), first_pair=first, pairs=count, index=shard_index)
        for index, (i, j) in enumerate(pairings)
        for shard_index, (first, count) in enumerate(bounds)
    ]
