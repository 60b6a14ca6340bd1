"""Evaluation at every table size: the field format of three players (the subject at one seat, the baseline at the
others, one match per seat rotation) and duplicate at two, in the summaries, the tables, the files, the gauntlet
and the command line."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from arena.eval_cli import main
from arena.evaluate import EvaluationError, evaluate, round_robin
from arena.gauntlet import format_gauntlet, gauntlet_entries, run_gauntlet
from arena.match import MatchResult, seats_of_side
from arena.ratings import HeadToHead
from arena.replay import MatchRecord
from arena.reports import save_replays
from arena.tables import format_head_to_head
from pedro_env.config import make_config

THREE = make_config(num_players=3, scoring="simple", target_score=21, max_deals=40)
TWO = make_config(num_players=2, target_score=21, max_deals=40)
TABLES = {2: TWO, 3: THREE}


def match(pair: int, rotation: int, winner: int, scores: list[int], deals: int = 4) -> MatchResult:
    """A three-player match of side A (0) against a field (1, 2) with the given outcome; every seat bid once."""
    return MatchResult(
        pair=pair,
        rotation=rotation,
        seed=pair,
        winner=winner,
        truncated=winner < 0,
        deals=deals,
        scores=scores,
        bids_won=[1, 1, 1],
        bids_made=[1, 0, 1],
        bid_total=[5, 6, 7],
        points_taken=[3, 4, 5],
        decision_cpu_s=[0.5, 0.25, 0.25],
    )


def test_the_field_summary_pools_the_field_and_compares_the_subject_with_parity() -> None:
    results = [
        match(0, 0, 0, [21, 9, 3]),  # A won: margin 21 - 6 = 15
        match(0, 1, 2, [6, 4, 22]),  # the field won: margin 6 - 13 = -7
        match(0, 2, -1, [10, 10, 10]),  # undecided: margin 0
        match(1, 0, 1, [12, 24, 0], deals=6),  # margin 12 - 12 = 0
    ]
    head = HeadToHead("a", "b", THREE, seed=0, duplicate=True, pairs=2, batch_size=8, results=results)
    assert head.format == "field" and head.seats == 3 and head.parity == pytest.approx(1 / 3)
    a, b = head.sides
    assert (a.wins, b.wins, head.decided, head.undecided) == (1, 2, 3, 1)
    assert head.win_rate == pytest.approx(1 / 3)
    assert head.score_rate == pytest.approx((1 + 1 / 3) / 4)  # an undecided match counts as the parity share
    assert head.points_per_deal.value == pytest.approx((15 - 7 + 0 + 0) / 18)
    assert (a.bids_won, b.bids_won, a.opponent_bids, b.opponent_bids) == (4, 8, 8, 4)
    assert (b.bids_made, a.sets, b.sets) == (4, 4, 0)
    assert head.decision_cpu_s_per_match == pytest.approx((0.5, 0.5))  # the field's agents over both its seats
    summary = head.summary()
    assert summary["format"] == "field" and summary["parity"] == pytest.approx(1 / 3) and summary["seats"] == 3


@pytest.mark.parametrize("players", sorted(TABLES))
def test_a_player_against_a_field_of_itself_scores_exactly_parity(players: int) -> None:
    """A deterministic agent at every seat plays each rotation of a set identically: the same seat wins all of
    them, so the subject (at a new seat each rotation) wins exactly one match of each set."""
    head = evaluate("rule:heuristic", "rule:heuristic", config=TABLES[players], pairs=12, seed=5)
    assert head.format == ("field" if players == 3 else "duplicate")
    assert head.matches == 12 * players and head.decided == head.matches
    assert head.win_rate == pytest.approx(1 / players) and head.points_per_deal.value == pytest.approx(0.0)


def test_each_rotation_set_seats_the_subject_once_at_every_seat_over_the_same_deals() -> None:
    head = evaluate("rule:heuristic", "rule:cautious", config=THREE, pairs=6, seed=40)
    assert [(result.pair, result.rotation) for result in head.results] == [(p, r) for p in range(6) for r in range(3)]
    assert {result.seed for result in head.results if result.pair == 2} == {42}
    assert [seats_of_side(0, rotation, THREE) for rotation in range(3)] == [[0], [1], [2]]
    assert [seats_of_side(1, rotation, THREE) + seats_of_side(2, rotation, THREE) for rotation in range(3)] == [
        [1, 2],
        [2, 0],
        [0, 1],
    ]
    assert head.win_rate > 0.6  # the heuristic beats a field of cautious players (parity 33.3%)
    table = format_head_to_head(head)
    assert "field format: 6 rotation sets of 3 seats" in table and "parity 33.3%" in table
    assert "rule:cautious (field)" in table and "points per deal (A - field mean)" in table


def test_workers_do_not_change_a_field_evaluation() -> None:
    one = evaluate("rule:heuristic", "random", config=THREE, pairs=8, seed=7, batch_size=6, workers=1)
    two = evaluate("rule:heuristic", "random", config=THREE, pairs=8, seed=7, batch_size=6, workers=2)
    assert [result.to_dict() for result in one.results] == [result.to_dict() for result in two.results]


def test_a_round_robin_of_three_players_is_refused_in_one_line() -> None:
    with pytest.raises(EvaluationError, match="matches of two sides; num_players=3 seats three"):
        round_robin(["random", "rule:heuristic", "rule:cautious"], config=THREE, pairs=1)


@pytest.mark.parametrize("players", sorted(TABLES))
def test_the_gauntlet_of_individual_play_has_opponent_entries_only(players: int) -> None:
    entries = gauntlet_entries(["random", "rule:cautious"], pairs=3, search_pairs=0, partners=False)
    result = run_gauntlet("rule:heuristic", entries, TABLES[players], seed=3)
    assert [entry.label for entry in result.entries] == ["vs random", "vs rule:cautious"]
    assert result.worst("partner") is None and result.worst("opponent") is not None
    table = format_gauntlet(result)
    assert ("field format" in table) == (players == 3) and "worst as partner" not in table
    with_partners = gauntlet_entries(["random"], pairs=1, search_pairs=0, partners=True)
    with pytest.raises(ValueError, match=f"need partners: with num_players={players} every player is alone"):
        run_gauntlet("rule:heuristic", with_partners, TABLES[players], seed=3)


def test_replays_of_a_field_evaluation_seat_each_side_where_it_played(tmp_path: Path) -> None:
    head = evaluate("rule:heuristic", "random", config=THREE, pairs=1, seed=9, record=True)
    paths = save_replays(head, tmp_path)
    assert len(paths) == 3
    for rotation, path in enumerate(sorted(paths)):
        record = MatchRecord.load(path)
        assert record.players[rotation] == "rule:heuristic"
        assert [name for seat, name in enumerate(record.players) if seat != rotation] == ["random", "random"]


def test_the_command_line_plays_the_field_format_and_its_files_say_so(tmp_path: Path, capsys) -> None:
    arguments = ["rule:heuristic", "random", "--pairs", "4", "--no-progress", "--out", str(tmp_path / "ev")]
    assert main([*arguments, "--set", "num_players=3", "scoring=simple", "target_score=21"]) == 0
    out = capsys.readouterr().out
    assert "field format: 4 rotation sets of 3 seats" in out and "parity 33.3%" in out
    document = json.loads((tmp_path / "ev.json").read_text())
    assert document["summary"]["format"] == "field" and len(document["results"]) == 12
    with (tmp_path / "ev.csv").open() as handle:
        row = next(csv.DictReader(handle))
    assert row["format"] == "field" and float(row["parity"]) == pytest.approx(1 / 3)
    assert main(["rule:heuristic", "--gauntlet", "--pairs", "2", "--baselines", "random", "--no-progress",
                 "--out", str(tmp_path / "g"), "--set", "num_players=3", "scoring=simple"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "field format (the subject at one of 3 seats" in out and "with random" not in out
