"""arena.gauntlet and ``pedro-eval --gauntlet``: entries and lineups, equality with the head-to-head harness for
any worker count, the worst case, in-memory policies, the table and the command line."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

from arena.eval_cli import main
from arena.evaluate import evaluate
from arena.gauntlet import (
    FAST_BATCH,
    GAUNTLET_BASELINES,
    HEADLINE_MIN_PAIRS,
    SEARCH_BATCH,
    format_gauntlet,
    gauntlet_entries,
    run_gauntlet,
)
from pedro_env.config import make_config

from conftest import run_module

SHORT = make_config(target_score=11, max_deals=30)
FAST_PIMC = "search:pimc,samples=2,depth=1,exact=2"  # a search baseline cheap enough for the tests


def test_entries_cover_every_baseline_in_both_roles_and_search_gets_fewer_pairs() -> None:
    entries = gauntlet_entries(GAUNTLET_BASELINES, pairs=50, search_pairs=3, league=["league@10"])
    labels = [entry.label for entry in entries]
    for spec in GAUNTLET_BASELINES:
        assert f"vs {spec}" in labels and f"with {spec}" in labels
    assert "vs league@10" in labels and "with league@10" in labels
    assert {entry.tag for entry in entries if entry.league} == {"vs_league1", "with_league1"}  # by recency
    for entry in entries:
        slow = entry.baseline.startswith("search:")
        assert entry.pairs == (3 if slow else 50) and entry.batch_size == (SEARCH_BATCH if slow else FAST_BATCH)
        assert bool(entry.league) == entry.baseline.startswith("league@")
    opponent = next(entry for entry in entries if entry.label == "vs rule:cautious")
    partner = next(entry for entry in entries if entry.label == "with rule:cautious")
    assert opponent.sides("me") == (("me",), ("rule:cautious",))
    assert partner.sides("me") == (("me", "rule:cautious"), ("rule:cautious",))
    assert opponent.tag == "vs_rule_cautious" and partner.tag == "with_rule_cautious"
    only_opponents = gauntlet_entries(["random", "search:pimc"], pairs=5, search_pairs=0, partners=False)
    assert [entry.label for entry in only_opponents] == ["vs random"]  # search_pairs 0 leaves search out
    for_a_searcher = gauntlet_entries(["random", "search:pimc"], pairs=5, search_pairs=2, slow_subject=True)
    assert {entry.batch_size for entry in for_a_searcher} == {SEARCH_BATCH}  # a slow subject: small shards everywhere


def test_the_headline_leaves_out_entries_with_too_few_pairs_unless_none_has_enough() -> None:
    # rule:heuristic mirrors itself (about 50%) and beats random (100%): at 2 pairs the mirror is a hint only
    many, few = HEADLINE_MIN_PAIRS, 2
    entries = gauntlet_entries(["random"], pairs=many, search_pairs=0, partners=False)
    entries.append(type(entries[0])("opponent", "rule:heuristic", few, FAST_BATCH))
    result = run_gauntlet("rule:heuristic", entries, SHORT, seed=5)
    rates = {entry.label: head.win_rate for entry, head in zip(result.entries, result.heads)}
    assert rates["vs rule:heuristic"] < rates["vs random"]
    assert result.headline_pairs("opponent") == many and result.worst("opponent")[0].label == "vs random"
    assert format_gauntlet(result).splitlines()[1].endswith(f"(of the entries with {many} pairs or more)")
    alone = run_gauntlet("rule:heuristic", entries[1:], SHORT, seed=5)  # no entry has enough: the most pairs count
    assert alone.headline_pairs("opponent") == few and alone.worst("opponent")[0].label == "vs rule:heuristic"
    assert "pairs or more" not in format_gauntlet(alone)


def test_every_entry_equals_the_head_to_head_harness_for_any_worker_count() -> None:
    entries = gauntlet_entries(["random", "rule:cautious", FAST_PIMC], pairs=3, search_pairs=1)
    one = run_gauntlet("rule:heuristic", entries, SHORT, seed=11, workers=1)
    two = run_gauntlet("rule:heuristic", entries, SHORT, seed=11, workers=2)
    for entry, head_one, head_two in zip(entries, one.heads, two.heads):
        side_a, side_b = entry.sides("rule:heuristic")
        alone = evaluate(
            "+".join(side_a), "+".join(side_b), SHORT, pairs=entry.pairs, seed=11, batch_size=entry.batch_size
        )
        expected = [match.to_dict() for match in alone.results]
        assert [match.to_dict() for match in head_one.results] == expected, entry.label
        assert [match.to_dict() for match in head_two.results] == expected, entry.label
        assert head_one.matches == 2 * entry.pairs


def test_the_worst_case_is_the_weakest_baseline_opponent_and_leaves_the_league_out(passing_spec: str) -> None:
    # rule:heuristic beats the passing agent and random, and mirrors itself (50%): the worst opponent is itself
    entries = gauntlet_entries(["random", passing_spec, "rule:heuristic"], pairs=4, search_pairs=0)
    entries += gauntlet_entries(["rule:cautious"], pairs=4, search_pairs=0, partners=False)
    league_entry = gauntlet_entries([passing_spec], pairs=4, search_pairs=0, partners=False)[0]
    entries.append(type(league_entry)("opponent", "random", 4, FAST_BATCH, league=1))
    result = run_gauntlet("rule:heuristic", entries, SHORT, seed=3)
    worst_entry, worst_head = result.worst("opponent")
    rates = {
        entry.label: head.win_rate
        for entry, head in zip(result.entries, result.heads)
        if entry.role == "opponent" and not entry.league
    }
    assert worst_entry.label == min(rates, key=rates.get) and worst_head.win_rate == min(rates.values())
    assert not worst_entry.league
    assert result.worst("partner")[0].role == "partner"
    scalars = result.scalars()
    assert scalars["worst/win_rate"] == pytest.approx(min(rates.values()))
    assert "vs_rule_heuristic/contracts" in scalars and "with_random/avg_bid" in scalars
    assert "worst_partner/win_rate" in scalars
    table = format_gauntlet(result)
    lines = table.splitlines()
    assert lines[1].startswith(f"WORST as opponent: {worst_entry.label}")
    rows = [line.strip() for line in lines if line.strip().startswith(("vs ", "with "))]
    assert rows[0].startswith(worst_entry.label)  # the table starts from the worst opponent too
    assert "(league)" in rows[-1]  # league entries come last
    assert any("CPU s/match" in line for line in lines) and all(float(row.split()[-1]) >= 0 for row in rows)
    document = result.to_dict()
    assert all(len(entry["run"]["decision_cpu_s_per_match"]) == 2 for entry in document["entries"])
    assert document["worst"]["entry"] == worst_entry.label and len(document["entries"]) == len(entries)


def test_in_memory_policies_play_as_named_sides() -> None:
    torch = pytest.importorskip("torch")
    from agents.networks import ActorCritic, NetworkShape
    from agents.policy import check_layout, policy_agent_from_bytes, policy_bytes
    from pedro_env.observation_layout import observation_scale, observation_size

    torch.manual_seed(0)
    shape = NetworkShape(observation_size(SHORT), observation_size(SHORT), 133, (16,), True)
    network = ActorCritic(shape, observation_scale(SHORT))
    data = policy_bytes(network, SHORT)
    entries = gauntlet_entries(["random"], pairs=2, search_pairs=0)
    result = run_gauntlet("policy", entries, SHORT, seed=5, workers=2, policies=[("policy", data)])
    assert all(head.matches == 4 for head in result.heads)
    agent = policy_agent_from_bytes(data, SHORT)
    observations = np.zeros((3, observation_size(SHORT)), dtype=np.uint8)
    masks = np.zeros((3, 133), dtype=bool)
    masks[:, [0, 5, 9]] = True
    expected = torch.argmax(network.logits(torch.from_numpy(observations), torch.from_numpy(masks)), dim=1)
    assert agent.act(observations, masks, np.random.default_rng(0)).tolist() == expected.tolist()
    sancho = make_config(variant="sancho")  # one layout for every config: it reads sancho's games too
    assert policy_agent_from_bytes(data, sancho).act(observations, masks, np.random.default_rng(0)).shape == (3,)
    with pytest.raises(ValueError, match="malformed observation layout"):
        check_layout([["hand", "many"]], SHORT, "a tampered file")


# ---------------------------------------------------------------- the command line


def test_cli_gauntlet_writes_the_table_json_csv_png(tmp_path: Path) -> None:
    prefix = tmp_path / "g"
    completed = run_module(
        "arena.eval_cli",
        "rule:cautious",
        "--gauntlet",
        "--baselines",
        "random",
        "--baselines",  # every one given counts
        "rule:heuristic",
        "--pairs",
        "2",
        "--set",
        "target_score=11",
        "max_deals=20",
        "--out",
        str(prefix),
        "--no-progress",
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    assert "WORST as opponent" in completed.stdout and "with rule:heuristic" in completed.stdout
    document = json.loads(prefix.with_suffix(".json").read_text())
    assert document["kind"] == "gauntlet" and len(document["entries"]) == 4
    assert all(len(entry["results"]) == 4 for entry in document["entries"])
    with prefix.with_suffix(".csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [row["role"] for row in rows] == ["opponent", "opponent", "partner", "partner"]
    assert all(math.isfinite(float(row["win_rate_a_low"])) for row in rows)
    if "no chart" not in completed.stderr:
        assert prefix.with_suffix(".png").stat().st_size > 1000


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["random", "random", "--gauntlet"], "takes one side"),
        (["random+random", "--gauntlet"], "is a team"),
        (["random", "--gauntlet", "--round-robin"], "no --round-robin"),
        (["random", "--gauntlet", "--search-pairs", "-1"], "--search-pairs must be >= 0"),
        (["random", "--gauntlet", "--baselines", "rule:nope"], "unknown agent spec 'rule:nope'"),
        (["random", "random", "--baselines", "random"], "belong to --gauntlet"),
    ],
)
def test_cli_gauntlet_usage_errors_exit_2(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(arguments) == 2
    assert message in capsys.readouterr().err


def test_cli_gauntlet_checks_the_baselines_before_making_the_output_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["random", "--gauntlet", "--baselines", "rule:nope", "--out", str(tmp_path / "out" / "g")]) == 2
    assert "'rule:nope'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_worker_plays_on_one_torch_thread_even_when_torch_was_imported_first(tmp_path: Path) -> None:
    # a spawned worker re-imports the parent's main module first; pedro-train's imports torch, which then
    # starts one thread per core unless the worker tells it otherwise (the workers' threads spun against
    # each other: the trainer's evaluations ran several times slower than pedro-eval's)
    pytest.importorskip("torch")
    script = tmp_path / "main_with_torch.py"
    script.write_text(
        "import torch\n"
        "torch.set_num_threads(2)\n"
        "from arena.shards import _worker_init\n"
        "_worker_init(None)\n"
        "print(torch.get_num_threads())\n"
    )
    done = run_module("main_with_torch", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"
