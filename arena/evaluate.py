"""Evaluation harness: head-to-head and round-robin matches between agents, with intervals and ratings.

Command line (``pedro-eval``, or ``python -m arena.evaluate``)::

    pedro-eval rule:heuristic random --matches 2000              # head to head, duplicate deals
    pedro-eval rule:heuristic+random random --pairs 500          # a team: first seat + partner
    pedro-eval rule:heuristic rule:cautious search:pimc --round-robin --matches 500 --workers 2
    pedro-eval random random --config target_score=21 max_deals=50 --out eval/rr --no-progress

A *side* is an agent spec (``random``, ``rule:heuristic``, ``search:pimc,samples=16``, ``ckpt:PATH``;
see :mod:`agents`) or, with four players, a team of two specs joined by ``+`` (first seat, partner).

What is measured, per pairing of sides A and B (A listed first):

- **win rate**: A's share of the *decided* matches, with its 95% Wilson interval and n = decided
  matches; **score**: A's share of *all* matches with undecided ones (truncated at ``max_deals``)
  counted as half, also with a Wilson interval. The table shows both and the counts.
- **points per deal**: A's total score change minus B's over the total deals played (a ratio of
  totals), with the standard error of the linearised estimate over duplicate pairs (independent
  groups; deal luck cancels within each) and its 95% normal interval.
- per side: **bids made** (share of the side's winning bids it made), **sets** (share of the
  opponents' winning bids the side defeated), **average bid** (mean winning bid of the side).

Round robin fits Bradley-Terry ratings to all the results (undecided matches as half a win each
way), on the Elo scale with the ``--anchor`` side (default: the first listed) fixed at 0 and
standard errors from the inverse Fisher information. Every pair of sides plays on the same seeds
(so pairing A-B of a round robin is the head to head A-B with that seed). A side that never loses
gets a finite rating only through the one virtual draw per pairing; its interval is then wide.

Reproducibility: match ``pair`` of every pairing uses the deal seed ``seed + pair``; the pairs are
cut into shards (a fixed function of the number of pairs and ``batch_size``, never of
``workers``), each shard played in one batch with its own agent RNG seeded ``(seed, shard)``, and
results are merged in pair order, so a seed gives identical results for any number of workers
(but not for another batch size). Workers take whole shards: a run that fits in one batch is one
shard, so for slow agents (search) pass a small ``--batch-size`` to spread the work.

Output: a table on stdout, and ``PREFIX.json`` (settings, summary, every match), ``PREFIX.csv`` (one
row per pairing; a round robin adds ``PREFIX-ratings.csv``) and ``PREFIX.png`` (needs matplotlib).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import sys
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from agents import AGENT_SPECS, AgentSpecError
from arena.gauntlet import GAUNTLET_BASELINES
from arena.match import MatchResult, RunSettings, Shard, Side, build_agent, run_shards, shard_bounds
from arena.ratings import Z95, HeadToHead, Tournament, describe_config, wilson_interval
from pedro_env.cli import (
    OneLineErrorParser,
    OutputPathError,
    check_output_dir,
    check_output_prefix,
    quiet_on_broken_pipe,
)
from pedro_env.config import ConfigError, PedroConfig, make_config, parse_override

DEFAULT_MATCHES = 200
DEFAULT_BATCH_SIZE = 1024
DEFAULT_SEARCH_PAIRS = 20  # --gauntlet: pairs per search-agent entry (a few seconds of CPU per match)


class EvaluationError(ValueError):
    """Arguments the harness cannot run with (reported by the CLI as a usage error)."""


# ---------------------------------------------------------------- sides, configs, agents


def parse_side(text: str) -> Side:
    """``'rule:heuristic+random'`` -> ``('rule:heuristic', 'random')``; a single spec -> a 1-tuple."""
    specs = tuple(part.strip() for part in text.split("+"))
    if not text.strip() or any(not spec for spec in specs):
        raise AgentSpecError(f"side {text!r} is not a spec or SPEC+SPEC: allowed specs are {', '.join(AGENT_SPECS)}")
    return specs


def side_label(side: Side) -> str:
    return "+".join(side)


def resolve_config(config: PedroConfig | dict[str, Any] | None) -> PedroConfig:
    """A PedroConfig from a config, a dict of overrides, or None (default rules)."""
    if isinstance(config, PedroConfig):
        return config
    return make_config(**(config or {}))


def check_sides(sides: Sequence[Side], config: PedroConfig) -> list[str]:
    """Build every agent once (an unknown spec or missing checkpoint raises AgentSpecError) and check team sizes.

    Returns a note for each policy trained under rules other than ``config`` (it plays them all the same).
    """
    if config.num_teams != 2:
        raise ConfigError(
            f"evaluation plays two sides against each other: num_players={config.num_players} has "
            f"{config.num_teams} teams (use num_players=2 or 4)"
        )
    per_team = config.num_players // config.num_teams
    notes = []
    for side in sides:
        for spec in side:
            note = getattr(build_agent(spec, config), "trained_rules_note", "")
            if note:
                notes.append(f"{spec} was trained under other rules: {note}; it plays these as it learned its own")
        if len(side) not in (1, per_team):
            raise AgentSpecError(
                f"side {side_label(side)!r} has {len(side)} agents; with num_players={config.num_players} a team has "
                f"{per_team} seat{'s' if per_team > 1 else ''} (give one spec, or SPEC+SPEC with four players)"
            )
    return list(dict.fromkeys(notes))


def print_notes(notes: Sequence[str], prog: str = "pedro-eval") -> None:
    for note in notes:
        print(f"{prog}: note: {note}", file=sys.stderr)


def pairs_for(matches: int | None, pairs: int | None, config: PedroConfig, duplicate: bool) -> int:
    """Duplicate groups to play for ``matches`` (rounded up to whole pairs) or ``pairs``."""
    if matches is not None and pairs is not None:
        raise EvaluationError("give matches or pairs, not both")
    per_pair = config.num_teams if duplicate else 1
    if pairs is None:
        matches = DEFAULT_MATCHES if matches is None else matches
        if matches < 1:
            raise EvaluationError(f"matches must be >= 1, got {matches}")
        return math.ceil(matches / per_pair)
    if pairs < 1:
        raise EvaluationError(f"pairs must be >= 1, got {pairs}")
    return pairs


class _ProgressBar:
    """A tqdm bar over matches with the current estimate; silent when disabled, not on a TTY, or without tqdm.

    Head to head it shows side A's win rate over the decided matches so far (its score, undecided as
    half, while none is decided); a round robin shows how many pairings are complete.
    """

    def __init__(self, total: int, enabled: bool, side_a: str, pairings: int, matches_per_pairing: int) -> None:
        self.bar: Any = None
        self.side_a = side_a
        self.matches_per_pairing = matches_per_pairing
        self.wins = np.zeros((pairings, 2), dtype=np.int64)
        self.done = np.zeros(pairings, dtype=np.int64)
        if enabled and sys.stderr.isatty():
            try:
                from tqdm import tqdm
            except ImportError:
                return
            self.bar = tqdm(total=total, unit="match", dynamic_ncols=True, file=sys.stderr)

    def report(self, finished: list[tuple[int, int]]) -> None:
        for pairing, winner in finished:
            self.done[pairing] += 1
            if winner >= 0:
                self.wins[pairing, winner] += 1
        if self.bar is None:
            return
        if self.wins.shape[0] == 1:
            decided = int(self.wins[0].sum())
            if decided:
                text = f"{self.side_a} wins {self.wins[0, 0] / decided:.1%} of {decided} decided"
            else:
                text = f"{self.side_a} scores 50.0% (no match decided yet)"
        else:
            text = f"pairings complete {int((self.done == self.matches_per_pairing).sum())}/{self.done.size}"
        self.bar.set_postfix_str(text, refresh=False)
        self.bar.update(len(finished))

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# ---------------------------------------------------------------- results


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

    A side is a spec string (``'rule:heuristic'``, ``'random+rule:heuristic'``) or a tuple of specs.
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
    pairings = [(i, j) for i in range(len(sides)) for j in range(i + 1, len(sides))]
    return _play_pairings(
        sides, pairings, config, matches, pairs, seed, workers, batch_size, duplicate, progress, anchor, record
    )


def _play_pairings(
    sides: Sequence[str | Side],
    pairings: list[tuple[int, int]],
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
    resolved = resolve_config(config)
    parsed = [parse_side(side) if isinstance(side, str) else tuple(side) for side in sides]
    labels = [side_label(side) for side in parsed]
    if len(set(labels)) < len(labels) and len(pairings) > 1:
        raise EvaluationError(f"round-robin sides must differ: {', '.join(labels)}")
    if isinstance(anchor, str):
        if anchor not in labels:
            raise EvaluationError(f"anchor {anchor!r} is not one of the sides: {', '.join(labels)}")
        anchor = labels.index(anchor)
    check_run_numbers(seed, workers, batch_size)
    check_sides(parsed, resolved)
    pair_count = pairs_for(matches, pairs, resolved, duplicate)
    matches_per_pair = resolved.num_teams if duplicate else 1
    bounds = shard_bounds(pair_count, batch_size, matches_per_pair)
    shards = [
        Shard(pairing=index, sides=(parsed[i], parsed[j]), first_pair=first, pairs=count, index=shard_index)
        for index, (i, j) in enumerate(pairings)
        for shard_index, (first, count) in enumerate(bounds)
    ]
    settings = RunSettings(config=resolved, seed=seed, batch_size=batch_size, duplicate=duplicate, record=record)
    matches_per_pairing = pair_count * matches_per_pair
    bar = _ProgressBar(len(pairings) * matches_per_pairing, progress, labels[0], len(pairings), matches_per_pairing)
    started = time.perf_counter()
    try:
        shard_results = run_shards(shards, settings, workers, bar.report)
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
        anchor=int(anchor),
        workers=workers,
        elapsed_s=elapsed,
    )


# ---------------------------------------------------------------- terminal table


def _percent(value: float) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{100 * value:.1f}%"


def _interval(low: float | None, high: float | None, percent: bool = True, signed: bool = False) -> str:
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return "[n/a]"
    if percent:
        return f"[{100 * low:.1f}, {100 * high:.1f}]"
    return f"[{low:+.2f}, {high:+.2f}]" if signed else f"[{low:.2f}, {high:.2f}]"


def _number(value: float, digits: int = 1, signed: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def format_head_to_head(head: HeadToHead, timing: bool = True) -> str:
    """The terminal table of one pairing."""
    a, b = head.sides
    width = max(22, len(head.side_a) + 2, len(head.side_b) + 2)
    label = 30
    pairs_text = f"{head.pairs} duplicate pairs" if head.duplicate else "no duplicate"
    ppd = head.points_per_deal
    low, high = head.win_rate_ci
    score_low, score_high = head.score_rate_ci

    def row(name: str, left: str, right: str = "", note: str = "") -> str:
        return f"  {name:<{label}}{left:>{width}}{right:>{width}}{('   ' + note) if note else ''}".rstrip()

    lines = [
        f"{head.side_a} vs {head.side_b}: {head.matches} matches ({pairs_text}), seed {head.seed}, "
        f"{describe_config(head.config)}",
        row("", head.side_a, head.side_b),
        row(
            "match wins",
            str(a.wins),
            str(b.wins),
            f"{head.undecided} undecided, {head.truncated} truncated at {head.config.max_deals} deals",
        ),
        row("win rate, decided (A)", _percent(head.win_rate), "", f"95% {_interval(low, high)}  n={head.decided}"),
        row(
            "score, undecided = half (A)",
            _percent(head.score_rate),
            "",
            f"95% {_interval(score_low, score_high)}  n={head.matches}",
        ),
        row(
            "points per deal (A - B)",
            _number(ppd.value, 2, signed=True),
            "",
            f"SE {_number(ppd.se, 2)}  95% {_interval(ppd.low, ppd.high, percent=False, signed=True)}  "
            f"over {ppd.groups} {'pairs' if head.duplicate else 'matches'}, {head.deals} deals",
        ),
        row("bids made", f"{_percent(a.made_rate)} of {a.bids_won}", f"{_percent(b.made_rate)} of {b.bids_won}"),
        row("sets (opponents' bids set)", _percent(a.set_rate), _percent(b.set_rate)),
        row("average bid", _number(a.average_bid), _number(b.average_bid)),
        row("truncated matches", str(head.truncated)),
    ]
    if timing and math.isfinite(head.elapsed_s):
        lines.append(
            row(
                "speed",
                f"{head.matches_per_s:.1f} matches/s",
                "",
                f"{head.matches} matches in {head.elapsed_s:.1f} s, {head.workers} worker(s)",
            )
        )
    return "\n".join(lines)


def format_tournament(tournament: Tournament) -> str:
    """The ratings table, the score matrix and the table of every pairing."""
    ratings = tournament.ratings
    labels = tournament.sides
    name_width = max(12, *(len(label) for label in labels)) + 2
    lines = [
        f"round robin: {len(labels)} sides, {tournament.pairs} "
        f"{'duplicate pairs' if tournament.duplicate else 'matches'} per pairing, seed {tournament.seed}, "
        f"{describe_config(tournament.config)}",
        f"ratings: Bradley-Terry, Elo scale, {labels[tournament.anchor]} = 0 (se relative to it)",
        f"  {'rank':<6}{'side':<{name_width}}{'Elo':>8}{'se':>7}   {'95%':<18}{'score':>8}{'matches':>9}",
    ]
    for rank, index in enumerate(tournament.ranking()):
        low, high = ratings.interval(index)
        won = tournament.wins[index].sum()
        played = (tournament.wins[index] + tournament.wins[:, index]).sum()
        lines.append(
            f"  {rank + 1:<6}{labels[index]:<{name_width}}{ratings.elo[index]:>+8.0f}{ratings.se[index]:>7.0f}   "
            f"{f'[{low:+.0f}, {high:+.0f}]':<18}{_percent(won / played if played else math.nan):>8}{played:>9.0f}"
        )
    lines.append("score of row against column (undecided = half):")
    cell = max(8, min(name_width, 16))
    lines.append("  " + " " * name_width + "".join(f"{label[: cell - 1]:>{cell}}" for label in labels))
    for i, label in enumerate(labels):
        cells = "".join(
            f"{'-' if i == j else _percent(tournament.score_matrix[i, j]):>{cell}}" for j in range(len(labels))
        )
        lines.append(f"  {label:<{name_width}}{cells}")
    for head in tournament.head_to_heads:
        lines.append("")
        lines.append(format_head_to_head(head, timing=False))
    if math.isfinite(tournament.elapsed_s):
        lines.append(
            f"\nspeed: {tournament.matches} matches in {tournament.elapsed_s:.1f} s = "
            f"{tournament.matches / tournament.elapsed_s:.1f} matches/s, {tournament.workers} worker(s)"
        )
    return "\n".join(lines)


def format_table(result: HeadToHead | Tournament) -> str:
    return format_tournament(result) if isinstance(result, Tournament) else format_head_to_head(result)


# ---------------------------------------------------------------- files


def to_json(result: HeadToHead | Tournament, path: str | Path, with_matches: bool = True) -> Path:
    """Write the result (summary, and every match unless ``with_matches`` is False) as JSON."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result.to_dict(with_matches=with_matches), indent=1) + "\n")
    return path


CSV_COLUMNS = [
    "side_a",
    "side_b",
    "matches",
    "pairs",
    "decided",
    "undecided",
    "truncated",
    "deals",
    "wins_a",
    "wins_b",
    "win_rate_a",
    "win_rate_a_low",
    "win_rate_a_high",
    "score_rate_a",
    "score_rate_a_low",
    "score_rate_a_high",
    "points_per_deal",
    "points_per_deal_se",
    "points_per_deal_low",
    "points_per_deal_high",
    "made_rate_a",
    "made_rate_b",
    "set_rate_a",
    "set_rate_b",
    "average_bid_a",
    "average_bid_b",
    "bids_won_a",
    "bids_won_b",
    "seed",
    "duplicate",
]


def _csv_row(head: HeadToHead) -> dict[str, Any]:
    summary = head.summary()
    a, b = summary["side_a"], summary["side_b"]
    return {
        "side_a": head.side_a,
        "side_b": head.side_b,
        "matches": head.matches,
        "pairs": head.pairs,
        "decided": head.decided,
        "undecided": head.undecided,
        "truncated": head.truncated,
        "deals": head.deals,
        "wins_a": a["wins"],
        "wins_b": b["wins"],
        "win_rate_a": summary["win_rate"],
        "win_rate_a_low": summary["win_rate_ci95"][0],
        "win_rate_a_high": summary["win_rate_ci95"][1],
        "score_rate_a": summary["score_rate"],
        "score_rate_a_low": summary["score_rate_ci95"][0],
        "score_rate_a_high": summary["score_rate_ci95"][1],
        "points_per_deal": summary["points_per_deal"],
        "points_per_deal_se": summary["points_per_deal_se"],
        "points_per_deal_low": summary["points_per_deal_ci95"][0],
        "points_per_deal_high": summary["points_per_deal_ci95"][1],
        "made_rate_a": a["made_rate"],
        "made_rate_b": b["made_rate"],
        "set_rate_a": a["set_rate"],
        "set_rate_b": b["set_rate"],
        "average_bid_a": a["average_bid"],
        "average_bid_b": b["average_bid"],
        "bids_won_a": a["bids_won"],
        "bids_won_b": b["bids_won"],
        "seed": head.seed,
        "duplicate": head.duplicate,
    }


def to_csv(result: HeadToHead | Tournament, path: str | Path) -> list[Path]:
    """One row per pairing at ``path``; a round robin also writes ``<stem>-ratings.csv`` beside it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    heads = result.head_to_heads if isinstance(result, Tournament) else [result]
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for head in heads:
            writer.writerow({key: "" if value is None else value for key, value in _csv_row(head).items()})
    written = [path]
    if isinstance(result, Tournament):
        ratings_path = path.with_name(path.stem + "-ratings.csv")
        with ratings_path.open("w", newline="") as handle:
            ratings_writer = csv.writer(handle)
            ratings_writer.writerow(["rank", "side", "elo", "se", "elo_low", "elo_high", "anchor"])
            for rank, index in enumerate(result.ranking()):
                low, high = result.ratings.interval(index)
                ratings_writer.writerow(
                    [
                        rank + 1,
                        result.sides[index],
                        f"{result.ratings.elo[index]:.1f}",
                        f"{result.ratings.se[index]:.1f}",
                        f"{low:.1f}",
                        f"{high:.1f}",
                        result.sides[result.anchor],
                    ]
                )
        written.append(ratings_path)
    return written


def plot(result: HeadToHead | Tournament, path: str | Path) -> Path:
    """A PNG chart: rates with 95% error bars (head to head), or ratings and a score heat map (round robin)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(result, Tournament):
        figure = _plot_tournament(plt, result)
    else:
        figure = _plot_head_to_head(plt, result)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _plot_head_to_head(plt: Any, head: HeadToHead) -> Any:
    figure, (rates_axes, sides_axes, points_axes) = plt.subplots(
        1, 3, figsize=(13, 3.8), gridspec_kw={"width_ratios": [1.2, 1.6, 0.8]}
    )
    names = ["win rate\n(decided)", "score\n(undecided = ½)"]
    values = [head.win_rate, head.score_rate]
    intervals = [head.win_rate_ci, head.score_rate_ci]
    _bars_with_errors(rates_axes, np.arange(2), values, intervals, "tab:blue")
    rates_axes.set_xticks(np.arange(2), names)
    rates_axes.axhline(0.5, color="grey", linestyle="--", linewidth=1)
    rates_axes.set_ylim(0, 1.15)
    rates_axes.set_title(f"{head.side_a} vs {head.side_b}\n(A's rates, n={head.matches})", fontsize=9)

    a, b = head.sides
    positions = np.arange(2)
    for offset, stats, colour in ((-0.2, a, "tab:blue"), (0.2, b, "tab:orange")):
        values = [stats.made_rate, stats.set_rate]
        intervals = [wilson_interval(stats.bids_made, stats.bids_won), wilson_interval(stats.sets, stats.opponent_bids)]
        _bars_with_errors(sides_axes, positions + offset, values, intervals, colour, width=0.4, label=stats.side)
    sides_axes.set_xticks(positions, ["bids made", "opponents' bids set"])
    sides_axes.set_ylim(0, 1.3)
    sides_axes.legend(fontsize=8, loc="upper center", ncol=2, frameon=False)
    sides_axes.set_title(f"average bid: A {_number(a.average_bid)}, B {_number(b.average_bid)}", fontsize=9)

    ppd = head.points_per_deal
    if math.isfinite(ppd.value):
        error = [[ppd.value - ppd.low], [ppd.high - ppd.value]] if math.isfinite(ppd.se) else None
        points_axes.errorbar([0], [ppd.value], yerr=error, fmt="o", capsize=6, color="tab:green")
        points_axes.annotate(f"{ppd.value:+.2f}", (0, ppd.value), xytext=(10, 0), textcoords="offset points")
    points_axes.axhline(0, color="grey", linestyle="--", linewidth=1)
    points_axes.set_xticks([0], ["A - B"])
    points_axes.set_xlim(-1, 1)
    points_axes.set_title("points per deal (95%)", fontsize=9)
    figure.tight_layout()
    return figure


def _bars_with_errors(
    axes: Any,
    x: np.ndarray,
    values: list[float],
    intervals: list[tuple[float, float]],
    colour: str,
    width: float = 0.6,
    label: str | None = None,
) -> None:
    """Bars at ``x`` with 95% error bars and their values written above; an undefined value is marked n/a."""
    defined = np.array([value is not None and math.isfinite(value) for value in values])
    heights = np.where(defined, [value if ok else 0.0 for value, ok in zip(values, defined)], 0.0)
    errors = np.array(
        [
            [max(0.0, height - low), max(0.0, high - height)] if ok else [0.0, 0.0]
            for height, ok, (low, high) in zip(heights, defined, intervals)
        ]
    ).T
    axes.bar(x, heights, width=width, color=colour, yerr=errors, capsize=5, label=label, alpha=0.85)
    for position, height, ok, (_, high) in zip(x, heights, defined, intervals):
        text = f"{100 * height:.1f}%" if ok else "n/a"
        axes.text(position, (high if ok else 0.0) + 0.02, text, ha="center", va="bottom", fontsize=8)


def _plot_tournament(plt: Any, tournament: Tournament) -> Any:
    k = len(tournament.sides)
    figure, (ratings_axes, matrix_axes) = plt.subplots(1, 2, figsize=(7 + 1.2 * k, 1.5 + 0.6 * k + 2))
    order = tournament.ranking()[::-1]  # best at the top
    ratings = tournament.ratings
    ratings_axes.errorbar(ratings.elo[order], np.arange(k), xerr=Z95 * ratings.se[order], fmt="o", capsize=5)
    ratings_axes.set_yticks(np.arange(k), [tournament.sides[i] for i in order])
    ratings_axes.xaxis.set_major_locator(plt.MaxNLocator(6))
    ratings_axes.axvline(0, color="grey", linestyle="--", linewidth=1)
    ratings_axes.set_xlabel(f"Elo (Bradley-Terry), {tournament.sides[tournament.anchor]} = 0, 95% intervals")
    ratings_axes.set_title("ratings", fontsize=10)

    matrix = tournament.score_matrix
    colours = plt.get_cmap("RdYlGn").copy()
    colours.set_bad("lightgrey")  # the diagonal: no side plays itself
    image = matrix_axes.imshow(np.ma.masked_invalid(matrix), cmap=colours, vmin=0, vmax=1)
    for i in range(k):
        for j in range(k):
            if i != j:
                matrix_axes.text(j, i, f"{100 * matrix[i, j]:.0f}%", ha="center", va="center", fontsize=8)
    matrix_axes.set_xticks(np.arange(k), tournament.sides, rotation=30, ha="right", fontsize=8)
    matrix_axes.set_yticks(np.arange(k), tournament.sides, fontsize=8)
    matrix_axes.set_title("score of row against column", fontsize=10)
    figure.colorbar(image, ax=matrix_axes, fraction=0.046)
    figure.tight_layout()
    return figure


# ---------------------------------------------------------------- command line


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog="pedro-eval",
        description="Matches between Pedro agents in duplicate format: a head-to-head table with 95% intervals, "
        "or a round robin with Bradley-Terry ratings; writes JSON, CSV and a PNG chart.",
        epilog=f"agent specs: {', '.join(AGENT_SPECS)}; a side is a spec or SPEC+SPEC (first seat + partner).\n\n"
        "examples:\n"
        "  pedro-eval rule:heuristic random --matches 2000            # head to head, duplicate deals\n"
        "  pedro-eval rule:heuristic rule:cautious search:pimc --round-robin --matches 500\n"
        "  pedro-eval ckpt:runs/quickstart/latest.pt rule:heuristic --pairs 1000 --workers 2\n"
        "  pedro-eval ckpt:runs/quickstart+rule:heuristic rule:heuristic --pairs 500   # partnering a baseline\n"
        "  pedro-eval rule:heuristic random --config target_score=21 variant=sancho --save-replays replays/",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "sides", nargs="+", metavar="SIDE", help="agent spec or SPEC+SPEC; two, or more with --round-robin"
    )
    parser.add_argument("--round-robin", action="store_true", help="every pair of sides plays; ratings table")
    parser.add_argument(
        "--gauntlet",
        action="store_true",
        help="one side against every baseline, as opponent and as partner; worst case first (arena/gauntlet.py)",
    )
    parser.add_argument(
        "--baselines",
        nargs="+",
        metavar="SPEC",
        help=f"--gauntlet: the baselines met (default: {' '.join(GAUNTLET_BASELINES)})",
    )
    parser.add_argument(
        "--search-pairs",
        type=int,
        default=DEFAULT_SEARCH_PAIRS,
        help=f"--gauntlet: duplicate pairs per search-agent entry (default {DEFAULT_SEARCH_PAIRS}; 0 leaves them out)",
    )
    parser.add_argument(
        "--no-partners", dest="partners", action="store_false", help="--gauntlet: the baselines only as opponents"
    )
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument(
        "--matches",
        type=int,
        help=f"matches per pairing (default {DEFAULT_MATCHES}; rounded up to whole duplicate pairs)",
    )
    budget.add_argument("--pairs", type=int, help="duplicate pairs per pairing or gauntlet entry (two matches each)")
    parser.add_argument("--seed", type=int, default=0, help="match pair p uses deal seed SEED + p (default 0)")
    parser.add_argument(
        "--workers", type=int, default=0, help="worker processes (default 0: one per core, as the shards allow)"
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=DEFAULT_BATCH_SIZE,
        help=f"matches played at once per process (default {DEFAULT_BATCH_SIZE})",
    )
    parser.add_argument(
        "--config",
        nargs="+",
        action="extend",
        default=[],
        metavar="KEY=VALUE",
        help="rules and env keys (docs/rules.md section 9, max_deals), e.g. target_score=21 max_deals=50",
    )
    parser.add_argument(
        "--no-duplicate",
        dest="duplicate",
        action="store_false",
        help="play every deal sequence once (seats alternate between matches)",
    )
    parser.add_argument("--anchor", help="round robin: side whose rating is 0 (default: the first listed)")
    parser.add_argument(
        "--out", help="output prefix: writes PREFIX.json, PREFIX.csv, PREFIX.png (default eval/<time>-<sides>)"
    )
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    parser.add_argument(
        "--save-replays", metavar="DIR", help="write every match as a replay record DIR/<sides>-pair<P>-rot<R>.json"
    )
    return parser


def save_replays(head: HeadToHead, directory: str | Path) -> list[Path]:
    """Every recorded match of ``head`` as a replay record (arena.replay) in ``directory``."""
    from arena.match import seats_of_side, team_of_side
    from arena.replay import record_from_seed

    config, teams = head.config, head.config.num_teams
    sides = [parse_side(head.side_a), parse_side(head.side_b)]
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{head.side_a}-vs-{head.side_b}")[:80].strip("_")
    paths = []
    for match in head.results:
        if match.actions is None:
            continue
        players = [""] * config.num_players
        scores = [0] * teams
        for side_index, side in enumerate(sides):
            seats = seats_of_side(side_index, match.rotation, config)
            for position, seat in enumerate(seats):
                players[seat] = side[position] if len(side) > 1 else side[0]
            scores[team_of_side(side_index, match.rotation, teams)] = match.scores[side_index]
        winner = team_of_side(match.winner, match.rotation, teams) if match.winner >= 0 else None
        result = {"scores": scores, "winner": winner, "deals": match.deals}
        replay = record_from_seed(config, match.seed, match.actions, match.deals, players, "pedro-eval", result)
        paths.append(replay.save(Path(directory) / f"{slug}-pair{match.pair}-rot{match.rotation}.json"))
    return paths


def _gauntlet_main(args: argparse.Namespace) -> int:
    """``pedro-eval SIDE --gauntlet``: the gauntlet table on stdout, PREFIX.json, PREFIX.csv and PREFIX.png."""
    from arena.gauntlet import format_gauntlet, gauntlet_entries, run_gauntlet

    try:
        if len(args.sides) != 1:
            raise EvaluationError(f"--gauntlet takes one side (the subject), got {len(args.sides)}")
        if args.round_robin or args.anchor or args.save_replays or not args.duplicate:
            raise EvaluationError(
                "--gauntlet plays duplicate head to heads: no --round-robin, --anchor, --save-replays or --no-duplicate"
            )
        if args.search_pairs < 0:
            raise EvaluationError(f"--search-pairs must be >= 0, got {args.search_pairs}")
        check_run_numbers(args.seed, args.workers)
        config = make_config(**dict(parse_override(text) for text in args.config))
        subject = args.sides[0]
        if "+" in subject:
            raise EvaluationError(f"--gauntlet measures one agent: {subject!r} is a team (the gauntlet seats partners)")
        notes = check_sides([parse_side(subject)], config)
        pairs = pairs_for(args.matches, args.pairs if args.pairs is not None or args.matches else 200, config, True)
        entries = gauntlet_entries(args.baselines or GAUNTLET_BASELINES, pairs, args.search_pairs, args.partners)
        if not entries:
            raise EvaluationError("the gauntlet has no entries (every baseline left out)")
        prefix = check_output_prefix(
            args.out if args.out else default_prefix([subject, "gauntlet"]), (".json", ".csv", ".png")
        )
        print_notes(notes)
        bar = _GauntletBar(args.progress)
        try:
            result = run_gauntlet(subject, entries, config, args.seed, args.workers, progress=bar.update)
        finally:
            bar.close()
    except (AgentSpecError, ConfigError, EvaluationError, OutputPathError) as error:
        print(f"pedro-eval: error: {error}", file=sys.stderr)
        return 2
    written = [prefix.with_name(prefix.name + ".json")]
    try:
        written[0].parent.mkdir(parents=True, exist_ok=True)
        written[0].write_text(json.dumps(result.to_dict(with_matches=True), indent=1) + "\n")
        written.append(gauntlet_csv(result, prefix.with_name(prefix.name + ".csv")))
        _draw_chart(plot_gauntlet, result, prefix.with_name(prefix.name + ".png"), written)
    except OSError as error:
        return _report_write_failure(format_gauntlet(result), error)
    _print_table(format_gauntlet(result), written)
    return 0


def _report_write_failure(table: str, error: OSError) -> int:
    """A file could not be written after the work (the disk filled up, say): the table still goes to stdout,
    then one line on stderr; status 1."""
    print(table)
    sys.stdout.flush()
    where = f" {error.filename}" if error.filename else ""
    print(
        f"pedro-eval: error: cannot write{where}: {error.strerror or error}; the table above is the result",
        file=sys.stderr,
    )
    return 1


def _draw_chart(draw: Any, result: Any, path: Path, written: list[Path]) -> None:
    """``draw(result, path)``, added to ``written``; without matplotlib a note instead of a chart."""
    try:
        written.append(draw(result, path))
    except ImportError:
        print("pedro-eval: matplotlib is not installed; no chart (pip install 'pedro-rl[eval]')", file=sys.stderr)


MAX_SEED = 2**62  # deal seeds are SEED + p and travel as int64


def check_run_numbers(seed: int, workers: int, batch_size: int = 1) -> None:
    """One clear error for the first out-of-range number: seed 0..MAX_SEED, workers and batch size >= 1."""
    if not 0 <= seed <= MAX_SEED:
        raise EvaluationError(f"seed must be an int from 0 to 2**62, got {seed}")
    if workers < 1:
        raise EvaluationError(f"workers must be >= 1 (pedro-eval --workers 0: one per core), got {workers}")
    if batch_size < 1:
        raise EvaluationError(f"batch size must be >= 1, got {batch_size}")


def _print_table(table: str, written: list[Path]) -> None:
    """The table and the files written (written first, so a reader that stops early, ``| head``, loses nothing;
    main's quiet_on_broken_pipe ends the command then)."""
    print(table)
    print("wrote " + ", ".join(str(path) for path in written))
    sys.stdout.flush()


class _GauntletBar:
    """A tqdm bar over the gauntlet's matches (silent when disabled, not on a TTY, or without tqdm)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.bar: Any = None

    def update(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self.bar is None:
            try:
                from tqdm import tqdm
            except ImportError:
                self.enabled = False
                return
            self.bar = tqdm(total=total, unit="match", desc="gauntlet", dynamic_ncols=True, file=sys.stderr)
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def gauntlet_csv(result: Any, path: str | Path) -> Path:
    """One row per gauntlet entry (worst first): role, baseline, then the head-to-head columns."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["role", "baseline", "league", *CSV_COLUMNS])
        writer.writeheader()
        for entry, head in result.ordered():
            row = {key: "" if value is None else value for key, value in _csv_row(head).items()}
            writer.writerow({"role": entry.role, "baseline": entry.baseline, "league": entry.league, **row})
    return path


def plot_gauntlet(result: Any, path: str | Path) -> Path:
    """A PNG: every entry's win rate with its 95% interval, lowest first; the worst opponent in red."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from arena.gauntlet import entry_rate

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = result.ordered()[::-1]
    worst = result.worst("opponent")
    figure, axes = plt.subplots(figsize=(8, 1.2 + 0.38 * len(rows)))
    for position, (entry, head) in enumerate(rows):
        rate, (low, high) = entry_rate(head), head.win_rate_ci
        colour = (
            "tab:red"
            if worst is not None and entry is worst[0]
            else ("tab:blue" if entry.role == "opponent" else "tab:green")
        )
        axes.barh(position, rate, color=colour, alpha=0.8 if not entry.league else 0.4)
        axes.errorbar(
            [rate],
            [position],
            xerr=[[max(0.0, rate - low)], [max(0.0, high - rate)]],
            fmt="none",
            ecolor="black",
            capsize=3,
        )
        axes.text(1.01, position, f"{100 * rate:.0f}%", va="center", fontsize=8)
    axes.set_yticks(range(len(rows)), [entry.label for entry, _ in rows], fontsize=8)
    axes.axvline(0.5, color="grey", linestyle="--", linewidth=1)
    axes.set_xlim(0, 1.1)
    axes.set_xlabel("win rate of decided matches (95% Wilson); blue: as opponent, green: as partner, red: worst")
    axes.set_title(f"gauntlet of {result.subject}", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def default_prefix(labels: Sequence[str]) -> Path:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", "-vs-".join(labels))[:80].strip("_")
    return Path("eval") / f"{datetime.now().strftime('%Y%m%d-%H%M%S')}-{slug}"


@quiet_on_broken_pipe
def main(argv: Sequence[str] | None = None) -> int:
    """``pedro-eval``: returns 0, or 2 with a message (no traceback) for bad specs, configs or arguments."""
    args = build_parser().parse_args(argv)
    explicit_workers = args.workers > 0
    if args.workers == 0:
        args.workers = os.cpu_count() or 1
    if args.gauntlet:
        return _gauntlet_main(args)
    try:
        if args.baselines or args.search_pairs != DEFAULT_SEARCH_PAIRS or not args.partners:
            raise EvaluationError("--baselines, --search-pairs and --no-partners belong to --gauntlet")
        config = make_config(**dict(parse_override(text) for text in args.config))
        if len(args.sides) < 2:
            raise EvaluationError("give at least two sides")
        if len(args.sides) > 2 and not args.round_robin:
            raise EvaluationError(f"{len(args.sides)} sides given: add --round-robin to play every pair of them")
        common = dict(
            config=config,
            matches=args.matches,
            pairs=args.pairs,
            seed=args.seed,
            workers=args.workers,
            batch_size=args.batch_size,
            duplicate=args.duplicate,
            progress=args.progress,
            record=bool(args.save_replays),
        )
        notes = check_sides([parse_side(text) for text in args.sides], config)  # first: a typo costs no directory
        suffixes = (".json", ".csv", ".png") + (("-ratings.csv",) if args.round_robin else ())
        prefix = check_output_prefix(args.out if args.out else default_prefix(args.sides), suffixes)
        if args.save_replays:
            check_output_dir(args.save_replays, "replay directory")
        pairings = len(args.sides) * (len(args.sides) - 1) // 2
        per_pair = config.num_teams if args.duplicate else 1
        pair_count = pairs_for(args.matches, args.pairs, config, args.duplicate)
        shards = pairings * len(shard_bounds(pair_count, args.batch_size, per_pair))
        if explicit_workers and args.workers > shards:
            print(
                f"pedro-eval: note: the run splits into {shards} shard(s) of at most --batch-size {args.batch_size} "
                f"matches, so only {shards} worker(s) get work; a smaller --batch-size makes more shards",
                file=sys.stderr,
            )
        result: HeadToHead | Tournament
        print_notes(notes)
        if args.round_robin:
            result = round_robin(args.sides, anchor=args.anchor if args.anchor is not None else 0, **common)
        else:
            if args.anchor is not None:
                raise EvaluationError("--anchor needs --round-robin")
            result = evaluate(args.sides[0], args.sides[1], **common)
    except (AgentSpecError, ConfigError, EvaluationError, OutputPathError) as error:
        print(f"pedro-eval: error: {error}", file=sys.stderr)
        return 2

    try:
        written = [to_json(result, prefix.with_name(prefix.name + ".json"))]
        written += to_csv(result, prefix.with_name(prefix.name + ".csv"))
        _draw_chart(plot, result, prefix.with_name(prefix.name + ".png"), written)
        if args.save_replays:
            heads = result.head_to_heads if isinstance(result, Tournament) else [result]
            count = sum(len(save_replays(head, args.save_replays)) for head in heads)
            written.append(Path(f"{args.save_replays} ({count} replay records)"))
    except OSError as error:
        return _report_write_failure(format_table(result), error)
    _print_table(format_table(result), written)
    return 0


if __name__ == "__main__":
    sys.exit(main())
