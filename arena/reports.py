"""The files an evaluation writes: JSON (settings, summary, every match), CSV (one row per pairing or gauntlet
entry, plus a round robin's ratings) and replay records of recorded matches.

CSV columns are :data:`CSV_COLUMNS`: the two sides, counts, side A's win rate and score with their
95% intervals, points per deal with its standard error and interval, each side's bidding figures,
the seed and the format (duplicate, field or single, with side A's parity share); an undefined figure is
an empty cell. The gauntlet's CSV puts ``role``,
``baseline`` and ``league`` before them; a gauntlet in several rule sets ``rules``, ``role`` and ``baseline``, and
a Markdown table beside it.

Every file is written whole or not at all (:func:`pedro_env.cli.atomic_output`: a temporary file beside it,
renamed over it once complete), so a full disk or Ctrl-C never leaves a cut file in place of a good one; a
file that cannot be written raises :class:`pedro_env.cli.OutputPathError` naming it.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

from arena.gauntlet import GauntletResult
from arena.match import field_lineup, parse_side, seats_of_side, team_of_side
from arena.ratings import HeadToHead, Tournament
from arena.replay import record_from_seed
from arena.rule_sets import RuleSetsResult, rule_sets_markdown
from pedro_env.cli import atomic_output

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
    "format",
    "parity",
]
RATINGS_COLUMNS = ["rank", "side", "elo", "se", "elo_low", "elo_high", "anchor"]


def file_slug(text: str) -> str:
    """``text`` as a file-name piece: runs of other characters than ``A-Za-z0-9._-`` become ``_``, at most 80."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:80].strip("_")


def to_json(
    result: HeadToHead | Tournament | GauntletResult | RuleSetsResult, path: str | Path, with_matches: bool = True
) -> Path:
    """Write the result (summary, and every match unless ``with_matches`` is False) as JSON."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(path, "w") as handle:  # ASCII: json escapes every other character
        json.dump(result.to_dict(with_matches=with_matches), handle, indent=1)  # streamed, never one huge string
        handle.write("\n")
    return path


def csv_row(head: HeadToHead) -> dict[str, Any]:
    """The :data:`CSV_COLUMNS` of one head to head (None where a figure is undefined)."""
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
        "format": head.format,
        "parity": head.parity,
    }


def _csv_cells(head: HeadToHead) -> dict[str, Any]:
    """:func:`csv_row` with an empty cell for each undefined figure."""
    return {key: "" if value is None else value for key, value in csv_row(head).items()}


def to_csv(result: HeadToHead | Tournament, path: str | Path) -> list[Path]:
    """One row per pairing at ``path``; a round robin also writes ``<stem>-ratings.csv`` beside it."""
    heads = result.head_to_heads if isinstance(result, Tournament) else [result]
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=CSV_COLUMNS)
    writer.writeheader()
    for head in heads:
        writer.writerow(_csv_cells(head))
    path = _write_text(Path(path), text.getvalue())
    written = [path]
    if isinstance(result, Tournament):
        written.append(ratings_csv(result, path.with_name(path.stem + "-ratings.csv")))
    return written


def ratings_csv(tournament: Tournament, path: Path) -> Path:
    """The round robin's ratings, best first: :data:`RATINGS_COLUMNS`, Elo figures to one decimal."""
    ratings = tournament.ratings
    text = io.StringIO(newline="")
    writer = csv.writer(text)
    writer.writerow(RATINGS_COLUMNS)
    for rank, index in enumerate(tournament.ranking()):
        low, high = ratings.interval(index)
        elo, se = ratings.elo[index], ratings.se[index]
        anchor = tournament.sides[tournament.anchor]
        writer.writerow(
            [rank + 1, tournament.sides[index], f"{elo:.1f}", f"{se:.1f}", f"{low:.1f}", f"{high:.1f}", anchor]
        )
    return _write_text(path, text.getvalue())


def gauntlet_csv(result: GauntletResult, path: str | Path) -> Path:
    """One row per gauntlet entry (worst first): role, baseline, then the head-to-head columns."""
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=["role", "baseline", "league", *CSV_COLUMNS])
    writer.writeheader()
    for entry, head in result.ordered():
        writer.writerow({"role": entry.role, "baseline": entry.baseline, "league": entry.league, **_csv_cells(head)})
    return _write_text(Path(path), text.getvalue())


def rule_sets_csv(result: RuleSetsResult, path: str | Path) -> Path:
    """One row per rule set and entry (worst rule set first, its entries worst first): ``rules``, ``role`` and
    ``baseline``, then the head-to-head columns."""
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=["rules", "role", "baseline", *CSV_COLUMNS])
    writer.writeheader()
    for rule_set, gauntlet in result.ordered():
        for entry, head in gauntlet.ordered():
            if not entry.league:
                writer.writerow(
                    {"rules": rule_set.name, "role": entry.role, "baseline": entry.baseline, **_csv_cells(head)}
                )
    return _write_text(Path(path), text.getvalue())


def rule_sets_markdown_file(result: RuleSetsResult, path: str | Path) -> Path:
    """:func:`arena.rule_sets.rule_sets_markdown` at ``path``: the table to paste into a page."""
    return _write_text(Path(path), rule_sets_markdown(result))


def _write_text(path: Path, text: str) -> Path:
    """``text`` as UTF-8 at ``path`` (its folder made), written whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(path) as handle:
        handle.write(text.encode("utf-8"))
    return path


def save_replays(head: HeadToHead, directory: str | Path) -> list[Path]:
    """Every recorded match of ``head`` as a replay record (:mod:`arena.replay`) in ``directory``, named
    ``<sides>-pair<P>-rot<R>.json``."""
    config, teams = head.config, head.config.num_teams
    sides = field_lineup([parse_side(head.side_a), parse_side(head.side_b)], teams)
    slug = file_slug(f"{head.side_a}-vs-{head.side_b}")
    paths = []
    for match in head.results:
        if match.actions is None:
            continue
        players = [""] * config.num_players
        scores = [0] * teams
        for side_index, side in enumerate(sides):
            for position, seat in enumerate(seats_of_side(side_index, match.rotation, config)):
                players[seat] = side[position] if len(side) > 1 else side[0]
            scores[team_of_side(side_index, match.rotation, teams)] = match.scores[side_index]
        winner = team_of_side(match.winner, match.rotation, teams) if match.winner >= 0 else None
        result = {"scores": scores, "winner": winner, "deals": match.deals}
        replay = record_from_seed(config, match.seed, match.actions, match.deals, players, "pedro-eval", result)
        paths.append(replay.save(Path(directory) / f"{slug}-pair{match.pair}-rot{match.rotation}.json"))
    return paths
