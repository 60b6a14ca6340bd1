"""``search:full``'s golden decisions (tests/golden/lookahead_decisions.npz): bids, trumps, discards and plays
at positions of exploring heuristic self-play under a few rules configs, with the options of RECORDED_SPEC.
The record was made with the numpy rule agents (before agents/rule_kernels); the look-ahead's rollouts and
model player now run on the compiled ones and must decide the same, world for world. The two-player bids were
recorded again when a player with no partner still to speak came to search the bids above the model bidder's own
(the four-player decisions did not change).
``python tests/test_lookahead_golden.py --record`` records them again (only when a change of decisions is meant).

The file holds, per config ``i``: ``config_i`` (its overrides as JSON), ``observations_i`` (k, D) uint8,
``masks_i`` (k, 133) bool and ``actions_i`` (k,) int16. The positions were moved to the observation layout's version 2
(2026-12-06) entry by entry (:mod:`pedro_env.layout_v1`); the decisions there are the recorded ones.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from test_rule_golden import exploring_positions

from agents import make_agent
from pedro_env.config import make_config

GOLDEN_FILE = Path(__file__).resolve().parent / "golden" / "lookahead_decisions.npz"
RECORDED_SPEC = "search:full,samples=10,bid_span=3,play_samples=24,play_depth=3,play_exact=5"
"""The options of the record: the defaults until 2026-12-04 (the defaults since search deeper and wider)."""
CONFIGS: tuple[dict[str, Any], ...] = ({}, {"num_players": 2}, {"refill": "dealer_robs", "low": "held"})
PER_PHASE = (6, 4, 6, 4)  # positions kept per phase: bid, trump, discard, play
GAMES = 16


def positions(overrides: dict[str, Any], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(observations, masks) of the first PER_PHASE positions of each phase with a choice, in play order."""
    return exploring_positions(overrides, seed, PER_PHASE, games=GAMES, max_steps=400)


def decisions(overrides: dict[str, Any], observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """(k,) int16: RECORDED_SPEC's action at each position, each decided by a fresh agent (no cached plan)."""
    config = make_config(**overrides)
    chosen = []
    for i in range(observations.shape[0]):
        agent = make_agent(RECORDED_SPEC, config)
        chosen.append(agent.act(observations[i : i + 1], masks[i : i + 1], np.random.default_rng(0))[0])
    return np.array(chosen, dtype=np.int16)


def test_search_full_decides_as_recorded() -> None:
    with np.load(GOLDEN_FILE) as record_file:
        for index, overrides in enumerate(CONFIGS):
            assert json.loads(str(record_file[f"config_{index}"])) == overrides
            now = decisions(overrides, record_file[f"observations_{index}"], record_file[f"masks_{index}"])
            assert now.tolist() == record_file[f"actions_{index}"].tolist(), f"config {overrides or 'default'}"


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python tests/test_lookahead_golden.py --record")
    arrays: dict[str, np.ndarray] = {}
    for index, overrides in enumerate(CONFIGS):
        observations, masks = positions(overrides, seed=500 + index)
        arrays[f"config_{index}"] = np.array(json.dumps(overrides))
        arrays[f"observations_{index}"] = observations
        arrays[f"masks_{index}"] = masks
        arrays[f"actions_{index}"] = decisions(overrides, observations, masks)
    np.savez_compressed(GOLDEN_FILE, **arrays)
    count = sum(array.shape[0] for name, array in arrays.items() if name.startswith("actions_"))
    print(f"recorded {count} search:full decisions, {GOLDEN_FILE.stat().st_size} bytes")
