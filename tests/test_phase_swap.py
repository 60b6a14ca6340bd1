"""tools/phase_swap.py: a policy with its teacher's choices swapped in, phase by phase, on the same deals."""

from __future__ import annotations

import numpy as np
import pytest

from agents import make_agent
from arena.match import play_matches
from pedro_env import make_config
from pedro_env.actions import DISCARD_OFFSET, NUM_ACTIONS, PLAY_OFFSET, TRUMP_OFFSET
from tools.phase_swap import PHASES, PhaseSwap, measure, phase_of, table

from conftest import run_module


def test_a_decision_s_phase_is_its_first_legal_action_s() -> None:
    masks = np.zeros((5, NUM_ACTIONS), dtype=np.int8)
    for row, first in enumerate([0, TRUMP_OFFSET - 1, TRUMP_OFFSET, DISCARD_OFFSET, PLAY_OFFSET]):
        masks[row, first:] = 1  # every action from the first legal one on
    assert [PHASES[phase] for phase in phase_of(masks)] == ["bid", "bid", "trump", "discard", "play"]


@pytest.mark.parametrize("rules", [{}, {"num_players": 3, "scoring": "simple"}], ids=["four", "three"])
def test_no_phases_is_the_policy_all_phases_the_teacher_and_a_policy_agrees_with_itself(rules: dict) -> None:
    config = make_config(target_score=11, **rules)
    policy, teacher, opponent = (make_agent(spec, config) for spec in ("random", "rule:heuristic", "rule:cautious"))
    lineup = [[opponent]] * (config.num_teams - 1)

    def results(side: object) -> list:
        return [result.to_dict() for result in play_matches([[side], *lineup], config, 3, seed=5)]

    assert results(PhaseSwap(policy, teacher, 0)) == results(policy)
    assert results(PhaseSwap(policy, teacher, len(PHASES))) == results(teacher)
    agreement = np.zeros((len(PHASES), 2), dtype=np.int64)
    assert results(PhaseSwap(teacher, teacher, 0, agreement)) == results(teacher)  # counting changes no match
    assert (agreement[:, 1] > 0).sum() >= 2 and np.array_equal(agreement[:, 0], agreement[:, 1])


def test_the_table_has_a_row_per_swap_and_the_cli_refuses_bad_rules_in_one_line() -> None:
    rows, agreement = measure("random", "rule:heuristic", "rule:heuristic", make_config(target_score=11), 2, 7)
    assert [label for label, _ in rows][::4] == ["the policy", "the teacher"] and len(rows) == 5
    assert all(head.matches == 4 for _, head in rows)  # two pairs: four matches a row
    assert (agreement[:, 0] <= agreement[:, 1]).all() and agreement[0, 0] < agreement[0, 1]  # random bids differ
    report = table(rows, agreement)
    assert len(report.splitlines()) == 8 and "bid " in report.splitlines()[-1]
    done = run_module("tools.phase_swap", "random", "rule:heuristic", "--set", "target_score=11", "--pairs", "1")
    assert done.returncode == 0 and "+ the teacher's bids" in done.stdout, done.stderr
    two_sets = ["--set", "refill=sideways", "--set", "target_score=11", "--pairs", "1"]  # every --set counts
    done = run_module("tools.phase_swap", "random", "rule:heuristic", *two_sets)
    assert done.returncode == 2 and done.stderr.strip().splitlines()[-1].endswith(
        "config key 'refill' = 'sideways' is not allowed: allowed values are maker_sorted, top, dealer_robs"
    ), done.stderr
