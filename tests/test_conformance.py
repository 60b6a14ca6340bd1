"""Replay every conformance vector (docs/rules.md section 12) through the public AEC surface."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pedro_env

from conftest import CONFORMANCE_FILES, load_vector


def test_conformance_vectors_are_present() -> None:
    assert len(CONFORMANCE_FILES) >= 20
    exercised = set()
    for path in CONFORMANCE_FILES:
        exercised.update(load_vector(path)["exercises"])
    for rule in (
        "renege",
        "redeal",
        "dealer_robs_the_pack",
        "both_cross_target",
        "stock_limits_discard",
        "left_pedro_held_on_trump_lead",
        "maker_drew_trumps_from_deep_in_stock",
        "dealer_forced_to_bid",
    ):
        assert rule in exercised, rule


@pytest.mark.parametrize("path", CONFORMANCE_FILES, ids=[path.stem for path in CONFORMANCE_FILES])
def test_conformance_vector(path: Path) -> None:
    vector = load_vector(path)
    env = pedro_env.env(**vector["config"])
    env.reset(seed=0, options={"dealer": vector["dealer"], "decks": vector["decks"]})
    unwrapped = env.unwrapped
    renege_vector = vector["config"].get("renege") == "penalty"
    deals = []
    reneges = 0
    for number, expected in enumerate(vector["steps"]):
        where = f"{path.name} step {number}"
        assert not any(env.terminations.values()), f"{where}: the match ended before the vector did"
        agent = env.agent_selection
        assert agent == f"player_{expected['seat']}", where
        mask = env.observe(agent)["action_mask"]
        legal = sorted(unwrapped.action_to_str(a) for a in np.flatnonzero(mask))
        assert legal == expected["legal"], where
        if expected["action"] not in expected["legal"]:
            assert renege_vector, f"{where}: an action outside legal in a vector without renege penalty"
            reneges += 1
        env.step(unwrapped.str_to_action(expected["action"]))
        if "deal" in env.infos[agent]:
            deal = env.infos[agent]["deal"]
            assert all(info.get("deal") == deal for info in env.infos.values()), f"{where}: agents disagree on the deal"
            deals.append(deal)
    assert deals == vector["deals"]
    assert any(env.terminations.values()) == vector["complete"]
    if "renege" in vector["exercises"]:
        assert reneges > 0
