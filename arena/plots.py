"""PNG charts of evaluation results (matplotlib, imported only when a chart is drawn; ImportError without it).

- head to head: side A's win rate and score with 95% Wilson intervals; each side's bids made and
  opponents' bids set with their intervals; points per deal (A - B) with its 95% interval.
- round robin: the Bradley-Terry ratings with 95% intervals, best at the top, and the score matrix
  (row against column) as a heat map.
- gauntlet: every entry's win rate with its 95% interval, lowest first, the worst opponent in red.
- gauntlets in several rule sets: the win rates as a heat map, a row per rule set (worst at the top), a column per
  entry.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np

from arena.gauntlet import GauntletEntry, GauntletResult, entry_rate
from arena.ratings import Z95, HeadToHead, Tournament, wilson_interval
from arena.rule_sets import RuleSetsResult, entry_head, row_name
from arena.tables import format_number
from pedro_env.cli import atomic_output

DPI = 110


def _pyplot() -> Any:
    """matplotlib.pyplot on the non-interactive Agg backend (ImportError without matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(plt: Any, figure: Any, path: str | Path) -> Path:
    """The figure as a PNG at ``path``, whole or not at all (OutputPathError naming ``path`` if it cannot be)."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_output(path) as handle:
            figure.savefig(handle, dpi=DPI, format="png")
    finally:
        plt.close(figure)
    return path


def plot(result: HeadToHead | Tournament, path: str | Path) -> Path:
    """A PNG chart: rates with 95% error bars (head to head), or ratings and a score heat map (round robin)."""
    plt = _pyplot()
    if isinstance(result, Tournament):
        figure = _plot_tournament(plt, result)
    else:
        figure = _plot_head_to_head(plt, result)
    return _save(plt, figure, path)


def _plot_head_to_head(plt: Any, head: HeadToHead) -> Any:
    figure, (rates_axes, sides_axes, points_axes) = plt.subplots(
        1, 3, figsize=(13, 3.8), gridspec_kw={"width_ratios": [1.2, 1.6, 0.8]}
    )
    field = head.format == "field"
    names = ["win rate\n(decided)", f"score\n(undecided = {f'1/{head.seats}' if field else '½'})"]
    values = [head.win_rate, head.score_rate]
    intervals = [head.win_rate_ci, head.score_rate_ci]
    _bars_with_errors(rates_axes, np.arange(2), values, intervals, "tab:blue")
    rates_axes.set_xticks(np.arange(2), names)
    rates_axes.axhline(head.parity, color="grey", linestyle="--", linewidth=1)  # parity: 1/2, 1/3 in a field
    rates_axes.set_ylim(0, 1.15)
    against = f"a field of {head.side_b} (parity {100 * head.parity:.1f}%)" if field else head.side_b
    rates_axes.set_title(f"{head.side_a} vs {against}\n(A's rates, n={head.matches})", fontsize=9)
    _plot_bidding(sides_axes, head)
    _plot_points_per_deal(points_axes, head)
    figure.tight_layout()
    return figure


def _plot_bidding(axes: Any, head: HeadToHead) -> None:
    """Each side's bids made and opponents' bids set, with 95% intervals; average bids in the title."""
    a, b = head.sides
    positions = np.arange(2)
    for offset, stats, colour in ((-0.2, a, "tab:blue"), (0.2, b, "tab:orange")):
        values = [stats.made_rate, stats.set_rate]
        intervals = [wilson_interval(stats.bids_made, stats.bids_won), wilson_interval(stats.sets, stats.opponent_bids)]
        _bars_with_errors(axes, positions + offset, values, intervals, colour, width=0.4, label=stats.side)
    axes.set_xticks(positions, ["bids made", "opponents' bids set"])
    axes.set_ylim(0, 1.3)
    axes.legend(fontsize=8, loc="upper center", ncol=2, frameon=False)
    axes.set_title(f"average bid: A {format_number(a.average_bid)}, B {format_number(b.average_bid)}", fontsize=9)


def _plot_points_per_deal(axes: Any, head: HeadToHead) -> None:
    """Points per deal (A - B) as a point with its 95% interval."""
    ppd = head.points_per_deal
    if math.isfinite(ppd.value):
        error = [[ppd.value - ppd.low], [ppd.high - ppd.value]] if math.isfinite(ppd.se) else None
        axes.errorbar([0], [ppd.value], yerr=error, fmt="o", capsize=6, color="tab:green")
        axes.annotate(f"{ppd.value:+.2f}", (0, ppd.value), xytext=(10, 0), textcoords="offset points")
    axes.axhline(0, color="grey", linestyle="--", linewidth=1)
    axes.set_xticks([0], ["A - field mean" if head.format == "field" else "A - B"])
    axes.set_xlim(-1, 1)
    axes.set_title("points per deal (95%)", fontsize=9)


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


def plot_gauntlet(result: GauntletResult, path: str | Path) -> Path:
    """A PNG: every entry's win rate with its 95% interval, lowest first; the worst opponent in red."""
    plt = _pyplot()
    rows = result.ordered()[::-1]
    worst = result.worst("opponent")
    figure, axes = plt.subplots(figsize=(8, 1.2 + 0.38 * len(rows)))
    for position, (entry, head) in enumerate(rows):
        rate, (low, high) = entry_rate(head), head.win_rate_ci
        colour = _entry_colour(entry, worst[0] if worst is not None else None)
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
    axes.axvline(1 / result.config.num_teams, color="grey", linestyle="--", linewidth=1)  # parity
    axes.set_xlim(0, 1.1)
    axes.set_xlabel("win rate of decided matches (95% Wilson); blue: as opponent, green: as partner, red: worst")
    field = f", field format (parity {100 / result.config.num_teams:.1f}%)" if result.config.num_teams > 2 else ""
    axes.set_title(f"gauntlet of {result.subject}{field}", fontsize=10)
    figure.tight_layout()
    return _save(plt, figure, path)


def plot_rule_sets(result: RuleSetsResult, path: str | Path) -> Path:
    """A PNG: each rule set's win rate in each entry as a heat map (grey: no such entry, e.g. partners at three)."""
    plt = _pyplot()
    columns, ordered = result.columns(), result.ordered()
    rates = np.full((len(ordered), len(columns)), np.nan)
    for (row, (_, gauntlet)), (column, label) in itertools.product(enumerate(ordered), enumerate(columns)):
        head = entry_head(gauntlet, label)
        if head is not None:
            rates[row, column] = entry_rate(head)
    figure, axes = plt.subplots(figsize=(3 + 1.3 * len(columns), 1.5 + 0.4 * len(ordered)))
    colours = plt.get_cmap("RdYlGn").copy()
    colours.set_bad("lightgrey")
    image = axes.imshow(np.ma.masked_invalid(rates), cmap=colours, vmin=0, vmax=1, aspect="auto")
    for (row, column), rate in np.ndenumerate(rates):
        if math.isfinite(rate):
            axes.text(column, row, f"{100 * rate:.0f}%", ha="center", va="center", fontsize=8)
    axes.set_xticks(np.arange(len(columns)), columns, rotation=20, ha="right", fontsize=8)
    axes.set_yticks(np.arange(len(ordered)), [row_name(rule_set) for rule_set, _ in ordered], fontsize=8)
    axes.set_title(f"{result.subject}: win rate of decided matches, worst rule set at the top", fontsize=10)
    figure.colorbar(image, ax=axes, fraction=0.046)
    figure.tight_layout()
    return _save(plt, figure, path)


def _entry_colour(entry: GauntletEntry, worst: GauntletEntry | None) -> str:
    """Red for the worst opponent entry, blue for other opponent entries, green for partner entries."""
    if entry is worst:
        return "tab:red"
    return "tab:blue" if entry.role == "opponent" else "tab:green"
