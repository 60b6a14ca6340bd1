"""Smoke runs of ``python -m benchmarks.engine`` with tiny budgets (the figures themselves are not asserted on), and
the one-line usage errors of the bench and demo commands."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks import engine as bench
from benchmarks import startup as startup_bench
from benchmarks.engine import parse_config_overrides, sample_chance_outcome
from pedro_env import demo

from conftest import REPO_ROOT, module_env, run_module


def run_bench(arguments: list[str], json_path: Path) -> dict[str, Any]:
    """Run the benchmark command from the repo root and return the JSON it wrote."""
    completed = run_module("benchmarks.engine", *arguments, "--json", str(json_path), cwd=REPO_ROOT, timeout=60)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "decisions/s" in completed.stdout
    return json.loads(json_path.read_text(encoding="utf-8"))


def test_quick_run_writes_positive_figures(tmp_path: Path) -> None:
    # the highest seed 8 games allow, and a JSON file in a folder the command makes
    arguments = ["--quick", "--batch-sizes", "1", "8", "--skip-openspiel", "--seed", str(2**64 - 8)]
    figures = run_bench(arguments, tmp_path / "new" / "bench.json")
    assert figures["options"]["seed"] == 2**64 - 8
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
    completed = run_module("benchmarks.engine", "--set", "num_players=5", "--skip-openspiel", cwd=REPO_ROOT, timeout=60)
    assert completed.returncode == 2 and completed.stdout == ""
    assert completed.stderr.count("\n") == 1 and "Traceback" not in completed.stderr
    assert "num_players" in completed.stderr and "allowed values are 2, 3, 4" in completed.stderr


def usage_error(main: Any, arguments: list[str], capsys: pytest.CaptureFixture) -> str:
    """Run a command's ``main(arguments)``; assert it stopped at once with one line on stderr and status 2."""
    with pytest.raises(SystemExit) as exit_info:
        main(arguments)
    out, err = capsys.readouterr()
    assert exit_info.value.code == 2
    assert out == "", "the work had started"
    assert err.count("\n") == 1 and err.endswith("\n"), err
    return err


BENCH_MISTAKES = {
    "negative seed": (["--seed", "-1"], "--seed: must be an int from 0 to 2**64 - 1, got -1"),
    "huge seed": (["--seed", str(2**70)], f"--seed: must be an int from 0 to 2**64 - 1, got {2**70}"),
    "seed past the batch": (["--seed", str(2**64 - 4)], "--seed must be an int from 0 to 2**64 - 4096"),
    "word seed": (["--seed", "seven"], "--seed: must be an int from 0 to 2**64 - 1, got 'seven'"),
    "batch 0": (["--batch", "1", "0"], "--batch-sizes: must be an int >= 1, got '0'"),
    "negative batch": (["--batch-sizes", "-5"], "--batch-sizes: must be an int >= 1, got '-5'"),
    "zero seconds": (["--seconds", "0"], "--seconds: must be a number of seconds > 0, got '0'"),
    "nan seconds": (["--seconds", "nan"], "--seconds: must be a number of seconds > 0, got 'nan'"),
    "negative threads": (["--threads", "-1"], "--threads: must be an int >= 0, got '-1'"),
    "config value": (["--set", "variant=bridge"], "allowed values are cinch, "),
    "config without =": (["--set", "six_card"], "expected KEY=VALUE with KEY one of num_players, "),
    "unknown option": (["--batches", "4"], "unrecognized arguments: --batches 4"),
}


@pytest.mark.parametrize("mistake", list(BENCH_MISTAKES))
def test_bench_mistakes_end_in_one_line(mistake: str, capsys: pytest.CaptureFixture) -> None:
    arguments, message = BENCH_MISTAKES[mistake]
    err = usage_error(bench.main, ["--skip-openspiel", *arguments], capsys)
    assert err.startswith("python -m benchmarks.engine: error: ") and message in err


def test_bench_json_path_is_checked_before_the_work(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    err = usage_error(bench.main, ["--json", str(blocker / "bench.json")], capsys)
    assert f"cannot write --json file {blocker / 'bench.json'}: {blocker} is a file, not a directory" in err
    for folder in (str(tmp_path), f"{tmp_path / 'new'}/"):
        err = usage_error(bench.main, ["--json", folder], capsys)
        assert f"--json file {folder} is a directory; give a file name" in err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a-file"], "the checks leave nothing behind"


DEMO_MISTAKES = {
    "negative seed": (["--seed", "-1"], "--seed: must be an int from 0 to 2**64 - 1, got -1"),
    "huge seed": (["--seed", str(2**64)], f"--seed: must be an int from 0 to 2**64 - 1, got {2**64}"),
    "config value": (["--set", "num_players=5"], "'num_players' = 5 is not allowed: allowed values are 2, 3, 4"),
    "config pair": (["--set", "reward=win", "episode=deal"], "reward"),
    "config type": (["--set", "target_score=many"], "'target_score' = 'many' is not allowed: it takes an int"),
}


@pytest.mark.parametrize("mistake", list(DEMO_MISTAKES))
def test_demo_mistakes_end_in_one_line(mistake: str, capsys: pytest.CaptureFixture) -> None:
    arguments, message = DEMO_MISTAKES[mistake]
    err = usage_error(demo.main, ["--no-bench", *arguments], capsys)
    assert err.startswith("python -m pedro_env.demo: error: ") and message in err


def test_demo_takes_the_highest_seed(capsys: pytest.CaptureFixture) -> None:
    assert demo.main(["--no-bench", "--seed", str(2**64 - 1), "--set", "max_deals=2"]) == 0
    assert f"seed {2**64 - 1}" in capsys.readouterr().out


def test_demo_mistake_has_no_traceback() -> None:
    completed = run_module("pedro_env.demo", "--seed", "-1", cwd=REPO_ROOT, timeout=60)
    assert completed.returncode == 2 and completed.stdout == ""
    assert completed.stderr == (
        "python -m pedro_env.demo: error: argument --seed: must be an int from 0 to 2**64 - 1, got -1 (see --help)\n"
    )


def test_the_old_config_spelling_is_gone(capsys: pytest.CaptureFixture) -> None:
    err = usage_error(demo.main, ["--no-bench", "--config", "max_deals=2"], capsys)
    assert "unrecognized arguments: --config max_deals=2" in err


def test_a_mistake_is_one_line_across_the_reexecution() -> None:
    # no thread variables in the environment: the command re-executes itself once; a mistake stays one line
    environment = {key: value for key, value in module_env().items() if key not in bench.THREAD_ENV_VARS}
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks.engine", "--set", "num_players=5", "--skip-openspiel"],
        capture_output=True,
        text=True,
        env=environment,
        cwd=REPO_ROOT,
        timeout=60,
    )
    assert completed.returncode == 2 and completed.stdout == ""
    (error,) = completed.stderr.splitlines()
    assert error.startswith("python -m benchmarks.engine: error: --set: ") and "allowed values are 2, 3, 4" in error


def test_set_takes_the_train_spelling_too(capsys: pytest.CaptureFixture) -> None:
    err = usage_error(demo.main, ["--no-bench", "--set", "env.num_players=5"], capsys)
    assert "'num_players' = 5 is not allowed" in err


def test_the_startup_benchmarks_timed_process_takes_the_first_steps(capsys: pytest.CaptureFixture) -> None:
    # the code each timed process runs, here in this process (the kernels are compiled by now: no cold start)
    exec(startup_bench.FIRST_STEPS, {})
    line = capsys.readouterr().out.strip()
    assert line.startswith(startup_bench.CHILD_PREFIX) and float(line.split()[3]) > 0


def test_the_startup_benchmark_times_a_process_from_this_installs_cache() -> None:
    seconds, wall = startup_bench.timed_start(None)
    assert 0 < seconds < wall


def test_startup_benchmark_mistakes_end_in_one_line(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as stopped:
        startup_bench.main(["--runs", "0"])
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "--runs: must be an int >= 1, got '0'" in error


def test_the_training_benchmark_prints_its_figures() -> None:
    done = run_module("benchmarks.training", "configs/smoke.yaml", "--updates", "2", cwd=REPO_ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("decisions: 8,192 in 2 updates") for line in lines), done.stdout
    assert any(line.startswith("end to end: ") and line.endswith(" decisions/s") for line in lines)
    assert any(line.startswith("  collecting: ") for line in lines) and any("updating:" in line for line in lines)
    assert any(line.startswith("  the update's arithmetic: ") and "matmul in this run: " in line for line in lines)


def test_the_training_benchmark_times_a_mix_against_its_env_rules_alone() -> None:
    small = ["num_envs=16", "rollout_steps=8", "num_minibatches=1", "rules_mix=default; num_players=3,scoring=simple"]
    done = run_module(  # every --set counts: the mix is in the first
        "benchmarks.training", "configs/smoke.yaml", "--updates", "1", "--against-single",
        "--set", small[-1], "--set", *small[:-1], cwd=REPO_ROOT, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line for line in lines if line.startswith("== ")] == [
        "== round 1, mixed (2 rule sets)",
        "== round 1, single (default alone)",
    ]
    assert lines[-3].split() == ["round", "mixed", "single", "mixed", "/", "single"]
    assert lines[-1].startswith(" mean") and lines[-1].endswith("x")
    alone = run_module("benchmarks.training", "configs/smoke.yaml", "--against-single", cwd=REPO_ROOT, timeout=300)
    assert alone.returncode == 2 and alone.stderr.count("\n") == 1
    assert "--against-single times a config with rules_mix" in alone.stderr


def test_the_rule_agents_benchmark_prints_each_agent_beside_the_engine() -> None:
    done = run_module(
        "benchmarks.rule_agents", "--batch-sizes", "8", "--steps", "3", "--seconds", "0.05", cwd=REPO_ROOT, timeout=300
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].startswith("PedroVectorEnv.step") and lines[1].split()[1] == "8"
    for line, spec in zip(lines[2:], ("rule:heuristic", "rule:cautious")):
        assert line.startswith(f"{spec} act") and line.endswith("x")
    bad = run_module("benchmarks.rule_agents", "--specs", "rule:nobody", cwd=REPO_ROOT)
    assert bad.returncode == 2 and "unknown agent spec 'rule:nobody'" in bad.stderr
