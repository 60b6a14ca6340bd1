"""Smoke runs of ``python -m pedro_env.bench`` with tiny budgets; the figures themselves are not asserted on."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from pedro_env.bench import parse_config_overrides, sample_chance_outcome

from conftest import REPO_ROOT, run_module


def run_bench(arguments: list[str], json_path: Path) -> dict[str, Any]:
    """Run the benchmark command from the repo root and return the JSON it wrote."""
    completed = run_module("pedro_env.bench", *arguments, "--json", str(json_path), cwd=REPO_ROOT, timeout=60)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "decisions/s" in completed.stdout
    return json.loads(json_path.read_text(encoding="utf-8"))


def test_quick_run_writes_positive_figures(tmp_path: Path) -> None:
    figures = run_bench(["--quick", "--batch-sizes", "1", "8", "--skip-openspiel"], tmp_path / "bench.json")
    assert figures["aec"]["decisions"] > 0
    assert figures["aec"]["decisions_per_s"] > 0
    assert [result["batch_size"] for result in figures["vector"]] == [1, 8]
    for result in figures["vector"]:
        assert result["steps"] > 0
        assert result["decisions_per_s"] > 0
        assert result["state_bytes"] > 0
        assert result["step_output_bytes"] > 0
        assert result["tracemalloc_step_peak_bytes"] > 0
        assert result["peak_rss_bytes"] > 0
    assert figures["memory"]["peak_rss_bytes"] > 0
    assert figures["machine"]["python"] and figures["machine"]["numpy"]
    assert figures["openspiel"]["games"] == {}
    assert "skip-openspiel" in figures["openspiel"]["skipped"]
    assert figures["ratios"] == {}


@pytest.mark.skipif(importlib.util.find_spec("pyspiel") is None, reason="pyspiel (extra 'bench') is not installed")
def test_openspiel_comparison(tmp_path: Path) -> None:
    figures = run_bench(["--seconds", "0.2", "--batch-sizes", "4"], tmp_path / "bench.json")
    games = figures["openspiel"]["games"]
    assert set(games) == {"euchre", "spades"}
    for result in games.values():
        assert result["decisions"] > 0
        assert result["decisions_per_s"] > 0
        assert result["tensor_size"] > 0
    assert set(figures["ratios"]) == {"aec/euchre", "aec/spades", "batched_B4/euchre", "batched_B4/spades"}
    assert all(ratio > 0 for ratio in figures["ratios"].values())


def test_config_values_are_parsed() -> None:
    overrides = parse_config_overrides(["num_players=2", "six_card=True", "variant=sancho"])
    assert overrides == {"num_players": 2, "six_card": True, "variant": "sancho"}
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_config_overrides(["six_card"])


def test_chance_outcomes_sampled_by_cumulative_probability() -> None:
    outcomes = [(7, 0.25), (8, 0.5), (9, 0.25)]
    assert [sample_chance_outcome(outcomes, u) for u in (0.0, 0.3, 0.74, 0.9, 0.999999)] == [7, 8, 8, 9, 9]


def test_bad_config_is_a_usage_error() -> None:
    completed = run_module(
        "pedro_env.bench", "--config", "num_players=5", "--skip-openspiel", cwd=REPO_ROOT, timeout=60
    )
    assert completed.returncode == 2
    assert "num_players" in completed.stderr
