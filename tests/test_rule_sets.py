"""arena.rule_sets and ``pedro-eval --gauntlet --rule-sets``: reading the rule sets, one gauntlet per rule set equal
to the gauntlet under those rules, the worst row first, the table, the Markdown and the command line."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from arena.eval_cli import main
from arena.gauntlet import gauntlet_entries, run_gauntlet
from arena.rule_sets import (
    EVERY_RULE_SETS,
    MAX_RULE_SETS,
    above_parity,
    format_rule_sets,
    read_rule_sets,
    rule_sets_markdown,
    run_rule_sets,
)
from pedro_env.config import ConfigError, make_config

from conftest import run_module

SHORT = {"target_score": 11, "max_deals": 20}


def test_every_is_seventeen_distinct_rule_sets_each_a_valid_config() -> None:
    rule_sets = read_rule_sets(["every"], {})
    assert [rule_set.name for rule_set in rule_sets] == list(EVERY_RULE_SETS) and len(rule_sets) == 17
    assert len({rule_set.config for rule_set in rule_sets}) == 17
    by_name = {rule_set.name: rule_set.config for rule_set in rule_sets}
    assert by_name["default"] == make_config()
    assert by_name["min_bid=6,all_pass=redeal"] == make_config(min_bid=6, all_pass="redeal")
    assert by_name["num_players=3,scoring=simple"].num_teams == 3


def test_a_rule_set_goes_on_top_of_the_set_overrides() -> None:
    (default, six), sixes = read_rule_sets(["default", "six_card=yes"], SHORT), read_rule_sets(["six_card=true"], {})
    assert default.config == make_config(**SHORT)
    assert six.config == make_config(**SHORT, six_card=True) and sixes[0].config == make_config(six_card=True)
    (three,) = read_rule_sets(["num_players=3,scoring=simple"], {"scoring": "difference"})  # the rule set wins
    assert three.config.scoring == "simple"


@pytest.mark.parametrize(
    ("texts", "message"),
    [
        (["six_card=maybe"], "--rule-sets 'six_card=maybe': config key 'six_card'"),
        (["num_players=3"], "--rule-sets 'num_players=3': config key 'scoring'"),
        (["target_score"], "expected KEY=VALUE"),
        (["colour=red"], "expected KEY=VALUE"),
        (["default", "default"], "'default' is given twice"),
        (["every", "variant=dom"], "'variant=dom' is given twice"),
        ([f"target_score={score}" for score in range(11, 12 + MAX_RULE_SETS)], f"at most {MAX_RULE_SETS}"),
    ],
)
def test_a_bad_rule_set_is_one_error_naming_it(texts: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match="^--rule-sets") as raised:
        read_rule_sets(texts, {})
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_each_row_is_the_gauntlet_under_its_rules_on_the_same_deals() -> None:
    rule_sets = read_rule_sets(["default", "num_players=3,scoring=simple", "variant=sancho"], SHORT)

    def entries(config):
        return gauntlet_entries(["random", "rule:heuristic"], 2, 0, partners=config.num_teams < config.num_players)

    result = run_rule_sets("rule:cautious", [(r, entries(r.config)) for r in rule_sets], seed=40, workers=1)
    for rule_set, gauntlet in zip(result.rule_sets, result.gauntlets):
        alone = run_gauntlet("rule:cautious", entries(rule_set.config), rule_set.config, seed=40)
        assert [head.to_dict(with_matches=True)["results"] for head in gauntlet.heads] == [
            head.to_dict(with_matches=True)["results"] for head in alone.heads
        ]
        assert gauntlet.config == rule_set.config
    assert [len(gauntlet.entries) for gauntlet in result.gauntlets] == [4, 2, 4]  # no partners at three players
    rows = result.ordered()
    assert [above_parity(gauntlet) for _, gauntlet in rows] == sorted(above_parity(g) for g in result.gauntlets)

    table = format_rule_sets(result)
    assert table.index(rows[0][0].name) < table.index(rows[-1][0].name)  # worst row first
    assert "num_players=3,scoring=simple (parity 33.3%)" in table
    markdown = rule_sets_markdown(result).splitlines()
    columns = "| vs `random` | vs `rule:heuristic` | with `random` | with `rule:heuristic` |"
    assert markdown[0] == "| rules (`--set`) " + columns
    assert len(markdown) == 2 + 3
    assert any(line.startswith("| `num_players=3 scoring=simple` (parity 33.3%) |") for line in markdown)
    assert [line.count("| - ") for line in markdown if "num_players=3" in line] == [2]


@pytest.mark.parametrize("rules", EVERY_RULE_SETS)
def test_every_rule_set_plays_a_short_gauntlet(rules: str) -> None:
    (rule_set,) = read_rule_sets([rules], {"max_deals": 3})
    partners = rule_set.config.num_teams < rule_set.config.num_players

    def entries(config):
        return gauntlet_entries(["rule:heuristic"], 1, 0, partners=partners)

    result = run_rule_sets("random", [(rule_set, entries(rule_set.config))], seed=7, workers=1)
    (gauntlet,) = result.gauntlets
    assert [head.matches for head in gauntlet.heads] == [rule_set.config.num_teams] * (2 if partners else 1)
    assert f"| {'the default' if rules == 'default' else '`' + rules.replace(',', ' ') + '`'}" in (
        rule_sets_markdown(result)
    )


# ---------------------------------------------------------------- the command line


def test_cli_rule_sets_writes_the_table_json_csv_markdown_png(tmp_path: Path) -> None:
    prefix = tmp_path / "r"
    completed = run_module(
        "arena.eval_cli",
        "rule:cautious",
        "--gauntlet",
        "--baselines",
        "random",
        "--rule-sets",
        "default",
        "--rule-sets",  # every one given counts
        "num_players=2",
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
    assert "gauntlets of rule:cautious in 2 rule sets" in completed.stdout and "WORST:" in completed.stdout
    document = json.loads(prefix.with_suffix(".json").read_text())
    assert document["kind"] == "rule_sets"
    assert sorted(row["rules"] for row in document["rule_sets"]) == ["default", "num_players=2"]
    assert all(row["config"]["target_score"] == 11 for row in document["rule_sets"])
    with prefix.with_suffix(".csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert sorted((row["rules"], row["role"]) for row in rows) == [
        ("default", "opponent"),
        ("default", "partner"),
        ("num_players=2", "opponent"),
    ]
    assert prefix.with_suffix(".md").read_text().startswith("| rules (`--set`) | vs `random` | with `random` |")
    if "no chart" not in completed.stderr:
        assert prefix.with_suffix(".png").stat().st_size > 1000


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["random", "random", "--rule-sets", "default"], "belong to --gauntlet"),
        (["random", "--gauntlet", "--rule-sets", "variant=nope"], "--rule-sets 'variant=nope'"),
        (["random", "--gauntlet", "--rule-sets", "default", "--baselines", "rule:nope"], "'rule:nope'"),
        (["random+random", "--gauntlet", "--rule-sets", "default"], "is a team"),
    ],
)
def test_cli_rule_sets_usage_errors_exit_2_before_any_file(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main([*arguments, "--out", str(tmp_path / "out" / "r")]) == 2
    error = capsys.readouterr().err
    assert message in error and error.count("\n") == 1
    assert not (tmp_path / "out").exists()
