"""arena.evaluate and arena.ratings: statistics on known numbers, unbiasedness, determinism, the CLI and its errors."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import agents
import arena.shards
from arena.eval_cli import main
from arena.evaluate import EvaluationError, evaluate, round_robin
from arena.plots import plot
from arena.ratings import bradley_terry, paired_ratio, wilson_interval
from arena.reports import to_csv, to_json

from conftest import REPO_ROOT, run_module

# random play overbids and is set nearly every deal, so its scores drift below zero and matches to 62 never
# end; to 1 point most end in the first deal, which makes match wins measurable
QUICK_WINS = {"target_score": 1, "max_deals": 10}


def rule_agents_available() -> bool:
    try:
        agents.make_agent("rule:heuristic")
    except (ImportError, AttributeError, agents.AgentSpecError):
        return False
    return True


# ---------------------------------------------------------------- statistics on known numbers


def test_wilson_interval_known_values() -> None:
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.4901625, abs=1e-6) and high == pytest.approx(0.9433178, abs=1e-6)
    low, high = wilson_interval(0, 10)
    assert low == 0.0 and high == pytest.approx(0.2775328, abs=1e-6)
    low, high = wilson_interval(500, 1000)
    assert (low + high) / 2 == pytest.approx(0.5) and high - low == pytest.approx(2 * 0.0309, abs=1e-3)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_paired_ratio_known_values() -> None:
    estimate = paired_ratio(np.array([10.0, -2.0, 4.0, 6.0]), np.array([20.0, 22.0, 18.0, 20.0]))
    assert estimate.value == pytest.approx(18 / 80)
    residuals = (np.array([10.0, -2.0, 4.0, 6.0]) - 0.225 * np.array([20.0, 22.0, 18.0, 20.0])) / 20.0
    assert estimate.se == pytest.approx(residuals.std(ddof=1) / 2.0)
    assert estimate.low == pytest.approx(0.225 - 1.959964 * estimate.se)
    assert math.isnan(paired_ratio(np.array([1.0]), np.array([2.0])).se)


def test_bradley_terry_known_values() -> None:
    # 75 wins in 100: p = 3/4, so the gap is 400 log10(3) Elo with se 400/ln(10) / sqrt(n p (1 - p))
    ratings = bradley_terry(np.array([[0, 75], [25, 0]]), prior_draws=0.0)
    assert ratings.elo[0] == 0.0 and ratings.se[0] == 0.0
    assert ratings.elo[1] == pytest.approx(-400 * math.log10(3), abs=1e-6)
    assert ratings.se[1] == pytest.approx(400 / math.log(10) / math.sqrt(100 * 0.75 * 0.25), rel=1e-6)
    assert ratings.expected_score(0, 1) == pytest.approx(0.75)
    # expected win counts of three sides rated 0, 100, 300 give those ratings back, anchored on any side
    truth = np.array([0.0, 100.0, 300.0])
    expected = 1000 / (1 + 10 ** ((truth[None, :] - truth[:, None]) / 400))
    np.fill_diagonal(expected, 0)
    assert bradley_terry(expected, prior_draws=0.0).elo == pytest.approx(truth, abs=1e-6)
    assert bradley_terry(expected, anchor=2, prior_draws=0.0).elo == pytest.approx(truth - 300, abs=1e-6)
    # a clean sweep stays finite thanks to the virtual draw
    sweep = bradley_terry(np.array([[0, 100], [0, 0]]))
    assert np.isfinite(sweep.elo).all() and sweep.elo[1] < -800
    with pytest.raises(ValueError, match="connect"):
        bradley_terry(np.array([[0, 5, 0], [5, 0, 0], [0, 0, 0]]))


# ---------------------------------------------------------------- the harness is unbiased and reproducible


def test_random_against_random_comes_out_even() -> None:
    head = evaluate("random", "random", config=QUICK_WINS, pairs=300, seed=1)
    assert head.matches == 600 and head.decided > 450
    low, high = head.win_rate_ci
    assert low < 0.5 < high
    # the spread over duplicate pairs is close to the binomial one (pairs barely correlate)
    binomial_se = math.sqrt(head.score_rate * (1 - head.score_rate) / head.matches)
    assert head.score_rate_paired_se == pytest.approx(binomial_se, rel=0.25)
    ppd = head.points_per_deal
    assert ppd.low < 0.0 < ppd.high


def test_random_against_random_points_per_deal_even_under_default_rules() -> None:
    head = evaluate("random", "random", config={"max_deals": 8}, pairs=200, seed=2)
    assert head.truncated == head.matches == 400
    ppd = head.points_per_deal
    assert ppd.low < 0.0 < ppd.high and ppd.se < 0.5
    a, b = head.sides
    assert a.bids_won + b.bids_won == a.opponent_bids + b.opponent_bids  # every bid is someone's opponent bid


def test_a_stronger_side_wins_in_either_order(passing_spec: str) -> None:
    # random bids high and is set nearly every deal; a side that passes scores off those sets
    forward = evaluate(passing_spec, "random", config={"max_deals": 10}, pairs=60)
    backward = evaluate("random", passing_spec, config={"max_deals": 10}, pairs=60)
    assert forward.points_per_deal.low > 0 and backward.points_per_deal.high < 0
    assert forward.sides[1].made_rate < 0.2 and forward.sides[0].set_rate > 0.8


@pytest.mark.skipif(not rule_agents_available(), reason="agents.rule_based is not written yet")
def test_rule_agent_even_against_itself_and_far_stronger_than_random() -> None:
    same = evaluate("rule:heuristic", "rule:heuristic", pairs=60, seed=3)
    low, high = same.score_rate_ci
    assert low < 0.5 < high
    # a deterministic agent replays each deal sequence mirrored, so every pair's margin is exactly zero
    assert same.points_per_deal.low <= 0 <= same.points_per_deal.high
    stronger = evaluate("rule:heuristic", "random", pairs=30, seed=3)
    assert stronger.win_rate > 0.9


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_same_seed_same_results_for_any_worker_count_or_repeat(
    start_method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # workers fork on Linux while torch is not imported (pedro-eval of rule and search agents), else spawn
    monkeypatch.setattr(arena.shards, "worker_start_method", lambda: start_method)
    settings: dict[str, Any] = dict(config={"max_deals": 6}, pairs=8, seed=7, batch_size=4)  # 4 shards of 2 pairs
    one = evaluate("random", "random+random", workers=1, **settings)
    two = evaluate("random", "random+random", workers=2, **settings)
    again = evaluate("random", "random+random", workers=1, **settings)
    assert one.results == two.results == again.results
    assert one.to_dict()["summary"] == two.to_dict()["summary"]
    other_seed = evaluate("random", "random+random", workers=1, **{**settings, "seed": 8})
    assert other_seed.results != one.results


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers fork on Linux only")
def test_workers_fork_unless_torch_is_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert arena.shards.worker_start_method() == "fork"
    monkeypatch.setitem(sys.modules, "torch", object())  # a forked copy of torch's thread pools could hang
    assert arena.shards.worker_start_method() == "spawn"


def test_round_robin_pairings_equal_head_to_heads_and_ratings_order_them(passing_spec: str) -> None:
    config = QUICK_WINS  # ratings come from decided matches: truncated ones count half each way
    tournament = round_robin(["random", passing_spec, "random+random"], config=config, pairs=30, seed=4)
    assert [(h.side_a, h.side_b) for h in tournament.head_to_heads] == [
        ("random", passing_spec),
        ("random", "random+random"),
        (passing_spec, "random+random"),
    ]
    alone = evaluate("random", passing_spec, config=config, pairs=30, seed=4)
    assert tournament.pairing(0, 1).results == alone.results
    assert tournament.ratings.elo[0] == 0.0  # the first side is the anchor
    assert tournament.ranking()[0] == 1  # the passing side won the most
    matrix = tournament.score_matrix
    assert matrix[0, 1] + matrix[1, 0] == pytest.approx(1.0)


def test_results_write_json_csv_and_png(tmp_path: Path) -> None:
    head = evaluate("random", "random", config=QUICK_WINS, matches=20)
    document = json.loads(to_json(head, tmp_path / "h.json").read_text())
    assert document["kind"] == "head_to_head" and len(document["results"]) == 20
    assert document["config"]["target_score"] == 1
    rows = list(csv.DictReader(to_csv(head, tmp_path / "h.csv")[0].open()))
    assert len(rows) == 1 and int(rows[0]["matches"]) == 20
    pytest.importorskip("matplotlib")
    assert plot(head, tmp_path / "h.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_argument_errors() -> None:
    with pytest.raises(EvaluationError, match="matches or pairs"):
        evaluate("random", "random", matches=4, pairs=2)
    with pytest.raises(agents.AgentSpecError, match="a team has 1 seat"):
        evaluate("random+random", "random", config={"num_players": 2}, matches=2)
    with pytest.raises(EvaluationError, match="must differ"):
        round_robin(["random", "random", "random+random"], matches=2)


# ---------------------------------------------------------------- the command line


def run_cli(arguments: list[str], cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess[str]:
    return run_module("arena.eval_cli", *arguments, cwd=cwd, timeout=120)


def test_cli_head_to_head_writes_json_csv_png(tmp_path: Path) -> None:
    prefix = tmp_path / "out" / "smoke"
    completed = run_cli(["random", "random", "--matches", "8", "--set", "max_deals=5", "--out", str(prefix)])
    assert completed.returncode == 0, completed.stderr
    assert "points per deal" in completed.stdout and "win rate" in completed.stdout
    document = json.loads(prefix.with_suffix(".json").read_text())
    assert document["summary"]["matches"] == 8 and document["summary"]["truncated"] == 8
    assert prefix.with_suffix(".csv").exists()
    if "no chart" not in completed.stderr:  # matplotlib installed
        assert prefix.with_suffix(".png").stat().st_size > 1000


def test_cli_round_robin_and_default_output_place(tmp_path: Path) -> None:
    completed = run_cli(
        ["random", "random+random", "--round-robin", "--pairs", "3", "--set", "max_deals=3", "--no-progress"],
        cwd=tmp_path,
    )
    assert completed.returncode == 0, completed.stderr
    assert "ratings: Bradley-Terry" in completed.stdout
    written = sorted(path.name for path in (tmp_path / "eval").iterdir())
    assert any(name.endswith("-ratings.csv") for name in written) and any(name.endswith(".json") for name in written)


def test_cli_unknown_spec_and_missing_checkpoint_exit_2_without_traceback(tmp_path: Path) -> None:
    unknown = run_cli(["random", "rule:nonsense", "--matches", "2", "--out", str(tmp_path / "x")])
    assert unknown.returncode == 2
    assert "unknown agent spec 'rule:nonsense'" in unknown.stderr and "rule:heuristic" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    missing = run_cli(["ckpt:" + str(tmp_path / "none.pt"), "random", "--matches", "2"])
    assert missing.returncode == 2 and "checkpoint not found" in missing.stderr and "Traceback" not in missing.stderr
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["random", "random", "random+random"], "--round-robin"),
        (["random", "random", "--set", "target_score=0"], "target_score"),
        (["random", "random", "--set", "colour=red"], "KEY one of"),
        (
            ["random", "random", "rule:heuristic", "--round-robin", "--set", "num_players=3", "scoring=simple"],
            "two sides",
        ),
        (["random", "random", "--matches", "0"], "matches must be >= 1"),
        (["random", "random", "--anchor", "random"], "--round-robin"),
        (["random", "+random", "--matches", "2"], "SPEC+SPEC"),
        (["random", "random", "--seed", str(10**23)], "seed must be an int from 0 to 2**62, got 1000"),
        (["random", "random", "--seed", "-3"], "seed must be an int from 0 to 2**62, got -3"),
        (["random", "random", "--workers", "-1"], "workers must be >= 1 (pedro-eval --workers 0: one"),
        (["random", "random", "--batch-size", "0"], "batch size must be >= 1 and <= 65536, got 0"),
        (["random", "--gauntlet", "--seed", str(2**63)], "seed must be an int from 0 to 2**62"),
    ],
)
def test_cli_usage_errors_exit_2(arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(arguments) == 2
    assert message in capsys.readouterr().err
