"""Terminal tables of evaluation results: one head to head, a round robin, and the number formats they share.

:func:`format_head_to_head` is one row per figure with side A and side B in columns (the rates are
A's, with their 95% intervals and counts in a note column); :func:`format_tournament` is the
ratings table, the score matrix (row against column) and every pairing's table. The gauntlet's
table is :func:`arena.gauntlet.format_gauntlet`.
"""

from __future__ import annotations

import math

from arena.ratings import HeadToHead, Tournament, describe_config

LABEL_WIDTH = 30  # the figure-name column of a head-to-head table


def format_percent(value: float | None) -> str:
    """``0.4567`` -> ``'45.7%'``; ``'n/a'`` for None or a non-finite value."""
    return "n/a" if value is None or not math.isfinite(value) else f"{100 * value:.1f}%"


def format_interval(low: float | None, high: float | None, percent: bool = True, signed: bool = False) -> str:
    """``[45.7, 61.2]`` (rates as percent) or ``[+1.20, +3.40]``; ``'[n/a]'`` when an end is undefined."""
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return "[n/a]"
    if percent:
        return f"[{100 * low:.1f}, {100 * high:.1f}]"
    return f"[{low:+.2f}, {high:+.2f}]" if signed else f"[{low:.2f}, {high:.2f}]"


def format_number(value: float | None, digits: int = 1, signed: bool = False) -> str:
    """``value`` to ``digits`` decimals (with its sign when ``signed``); ``'n/a'`` for None or non-finite."""
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def format_description(head: HeadToHead) -> str:
    """How the matches were played, in words: ``100 duplicate pairs``, ``field format: 100 rotation sets of 3
    seats, parity 33.3%`` or ``no duplicate``."""
    if head.format == "field":
        return (
            f"field format: {head.pairs} rotation sets of {head.seats} seats, {head.side_a} at one seat and "
            f"{head.side_b} at the others; parity {format_percent(head.parity)}"
        )
    return f"{head.pairs} duplicate pairs" if head.format == "duplicate" else "no duplicate"


def format_head_to_head(head: HeadToHead, timing: bool = True) -> str:
    """The terminal table of one pairing (with its speed line when ``timing`` and the run was timed).

    Over 60 lines: the table's rows in the order printed; split, a dozen figures would travel between the parts."""
    a, b = head.sides
    field = head.seats > 2
    b_title = f"{head.side_b} (field)" if field else head.side_b
    width = max(22, len(head.side_a) + 2, len(b_title) + 2)
    ppd = head.points_per_deal
    low, high = head.win_rate_ci
    score_low, score_high = head.score_rate_ci
    parity = f"  parity {format_percent(head.parity)}" if field else ""

    def row(name: str, left: str, right: str = "", note: str = "") -> str:
        return f"  {name:<{LABEL_WIDTH}}{left:>{width}}{right:>{width}}{('   ' + note) if note else ''}".rstrip()

    lines = [
        f"{head.side_a} vs {head.side_b}: {head.matches} matches ({format_description(head)}), seed {head.seed}, "
        f"{describe_config(head.config)}",
        row("", head.side_a, b_title),
        row(
            "match wins",
            str(a.wins),
            str(b.wins),
            f"{head.undecided} undecided, {head.truncated} truncated at {head.config.max_deals} deals",
        ),
        row(
            "win rate, decided (A)",
            format_percent(head.win_rate),
            "",
            f"95% {format_interval(low, high)}  n={head.decided}{parity}",
        ),
        row(
            f"score, undecided = {'1/' + str(head.seats) if field else 'half'} (A)",
            format_percent(head.score_rate),
            "",
            f"95% {format_interval(score_low, score_high)}  n={head.matches}",
        ),
        row(
            f"points per deal (A - {'field mean' if field else 'B'})",
            format_number(ppd.value, 2, signed=True),
            "",
            f"SE {format_number(ppd.se, 2)}  95% {format_interval(ppd.low, ppd.high, percent=False, signed=True)}  "
            f"over {ppd.groups} {_groups(head)}, {head.deals} deals",
        ),
        row(
            "bids made",
            f"{format_percent(a.made_rate)} of {a.bids_won}",
            f"{format_percent(b.made_rate)} of {b.bids_won}",
        ),
        row("sets (opponents' bids set)", format_percent(a.set_rate), format_percent(b.set_rate)),
        row("average bid", format_number(a.average_bid), format_number(b.average_bid)),
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
    cpu_a, cpu_b = head.decision_cpu_s_per_match
    if timing and math.isfinite(cpu_a):
        note = "process CPU of the side's agents"
        lines.append(row("CPU deciding, per match", f"{cpu_a:.3g} s", f"{cpu_b:.3g} s", note))
    return "\n".join(lines)


def _groups(head: HeadToHead) -> str:
    """What a paired standard error is over: duplicate pairs, rotation sets, or single matches."""
    return {"duplicate": "pairs", "field": "rotation sets", "single": "matches"}[head.format]


def format_tournament(tournament: Tournament) -> str:
    """The ratings table, the score matrix and the table of every pairing."""
    labels = tournament.sides
    name_width = max(12, *(len(label) for label in labels)) + 2
    lines = [
        f"round robin: {len(labels)} sides, {tournament.pairs} "
        f"{'duplicate pairs' if tournament.duplicate else 'matches'} per pairing, seed {tournament.seed}, "
        f"{describe_config(tournament.config)}",
        *_ratings_rows(tournament, name_width),
        *_score_matrix_rows(tournament, name_width),
    ]
    for head in tournament.head_to_heads:
        lines.append("")
        lines.append(format_head_to_head(head, timing=False))
    if math.isfinite(tournament.elapsed_s):
        lines.append(
            f"\nspeed: {tournament.matches} matches in {tournament.elapsed_s:.1f} s = "
            f"{tournament.matches / tournament.elapsed_s:.1f} matches/s, {tournament.workers} worker(s)"
        )
    return "\n".join(lines)


def _ratings_rows(tournament: Tournament, name_width: int) -> list[str]:
    """The ratings table: title, header, then one row per side from the best down."""
    ratings, labels = tournament.ratings, tournament.sides
    lines = [
        f"ratings: Bradley-Terry, Elo scale, {labels[tournament.anchor]} = 0 (se relative to it)",
        f"  {'rank':<6}{'side':<{name_width}}{'Elo':>8}{'se':>7}   {'95%':<18}{'score':>8}{'matches':>9}",
    ]
    for rank, index in enumerate(tournament.ranking()):
        low, high = ratings.interval(index)
        won = tournament.wins[index].sum()
        played = (tournament.wins[index] + tournament.wins[:, index]).sum()
        score = format_percent(won / played if played else math.nan)
        lines.append(
            f"  {rank + 1:<6}{labels[index]:<{name_width}}{ratings.elo[index]:>+8.0f}{ratings.se[index]:>7.0f}   "
            f"{f'[{low:+.0f}, {high:+.0f}]':<18}{score:>8}{played:>9.0f}"
        )
    return lines


def _score_matrix_rows(tournament: Tournament, name_width: int) -> list[str]:
    """The score of each row side against each column side, undecided matches counted as half."""
    labels = tournament.sides
    cell = max(8, min(name_width, 16))
    lines = [
        "score of row against column (undecided = half):",
        "  " + " " * name_width + "".join(f"{label[: cell - 1]:>{cell}}" for label in labels),
    ]
    for i, label in enumerate(labels):
        cells = "".join(
            f"{'-' if i == j else format_percent(tournament.score_matrix[i, j]):>{cell}}" for j in range(len(labels))
        )
        lines.append(f"  {label:<{name_width}}{cells}")
    return lines


def format_table(result: HeadToHead | Tournament) -> str:
    """The table of a head to head or of a round robin."""
    return format_tournament(result) if isinstance(result, Tournament) else format_head_to_head(result)
