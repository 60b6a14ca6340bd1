"""The engine against a golden record: seeded random play in every rules combination, a digest per step.

``tests/golden/engine_digests.json`` was recorded from the numpy engine before the compiled kernels
replaced it (issue 15); the engine must keep reproducing it exactly. Each case plays ``GAMES`` matches
of one config in one batch with seeded random actions (uniform over the mask; a legal pass taken more
often, for low bids and throw-ins; under ``renege="penalty"`` now and then a held card outside the legal
set, a renege) until every match is over. A step's digest covers the mask, the actor's observation and
full state, the rewards, terminations, truncations and every deal summary field, the scores and the
phase and actor of every game. Record again (only when the rules or a layout change on purpose) with
``python tests/test_golden.py --record``. The observation layout's version 2 (2026-12-06) was recorded after its
observations and full states, cut back to version 1's entries (:mod:`pedro_env.layout_v1`), reproduced every
step of the version-1 record.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pedro_env.cards import RuleTables
from pedro_env.config import make_config
from pedro_env.encoding import ObservationEncoder
from pedro_env.rules import initial_state, legal_action_mask, step

from conftest import SWITCH_VALUES

GOLDEN_FILE = Path(__file__).resolve().parent / "golden" / "engine_digests.json"
GAMES = 6
DIGEST_BYTES = 4
PASS, DONE, PLAY_BASE = 0, 80, 81
STEP_FIELDS = (
    "rewards",
    "terminated",
    "truncated",
    "deal_over",
    "last_redeal",
    "last_maker",
    "last_bid",
    "last_trump",
    "last_points",
    "last_made",
    "last_delta",
    "last_renege",
    "scores",
    "winner",
    "phase",
    "actor",
)

SWITCHES = SWITCH_VALUES


def golden_cases() -> list[dict[str, Any]]:
    """A fixed sample of legal rule combinations covering every value of every switch, plus min_bid,
    target_score and max_deals variations (a short target and deal cap keep the record small)."""
    combos = [dict(zip(SWITCHES, values)) for values in itertools.product(*SWITCHES.values())]
    legal = [
        c
        for c in combos
        if not (c["num_players"] == 3 and c["scoring"] == "difference")
        and not (c["reward"] == "win" and c["episode"] == "deal")
    ]
    order = np.random.default_rng(15).permutation(len(legal))
    cases = [legal[i] for i in order[:36]]
    for number, case in enumerate(cases):
        case["min_bid"] = (1, 2, 3)[number % 3]
        case["target_score"] = (21, 11, 31)[number % 3]
        case["max_deals"] = (10, 4, 14)[number % 3]
    cases.append({})  # the default rules, a whole match to 62
    cases.append({"max_deals": 1})
    return cases


CASES = golden_cases()


def case_id(case: dict[str, Any]) -> str:
    return "-".join(f"{value}" for value in case.values()) or "defaults"


def play_digests(case: dict[str, Any], seed: int) -> str:
    """Base64 of the concatenated per-step digests of one case's seeded random play."""
    config = make_config(**case)
    tables = RuleTables.for_variant(config.variant)
    encoder = ObservationEncoder(config, tables)
    state = initial_state(config, np.arange(GAMES, dtype=np.uint64) + np.uint64(1000 * seed))
    rng = np.random.default_rng(seed)
    penalty = config.renege == "penalty"
    digests = []
    for _ in range(100_000):
        over = state.phase == 4
        if over.all():
            break
        mask = legal_action_mask(state, config, tables)
        keys = np.where(mask, rng.random(mask.shape), -1.0)
        actions = keys.argmax(axis=1)
        passes = mask[:, PASS] & (rng.random(GAMES) < 0.6)
        actions = np.where(passes, PASS, actions)
        if penalty:
            rows = np.arange(GAMES)
            held = state.hands[rows, state.actor]
            held_cards = ((held[:, None] >> np.arange(52, dtype=np.uint64)) & np.uint64(1)).astype(bool)
            renege_keys = np.where(held_cards, rng.random((GAMES, 52)), -1.0)
            renege = (state.phase == 3) & (rng.random(GAMES) < 0.02)
            actions = np.where(renege, PLAY_BASE + renege_keys.argmax(axis=1), actions)
        actions = np.where(over, PASS, actions)
        step(state, actions, config)
        viewer = np.where(state.phase == 4, 0, state.actor)
        parts = [
            legal_action_mask(state, config, tables),
            encoder.encode(state, viewer),
            encoder.encode_full_state(state, viewer),
        ]
        parts += [getattr(state, name) for name in STEP_FIELDS]
        digest = hashlib.blake2b(digest_size=DIGEST_BYTES)
        for part in parts:
            digest.update(np.ascontiguousarray(part).tobytes())
        digests.append(digest.digest())
    else:
        raise AssertionError("a golden case did not end")
    return base64.b64encode(b"".join(digests)).decode("ascii")


def load_golden() -> dict[str, str]:
    with open(GOLDEN_FILE) as handle:
        return json.load(handle)["cases"]


@pytest.mark.parametrize("number", range(len(CASES)), ids=[case_id(c) for c in CASES])
def test_engine_reproduces_golden_record(number: int) -> None:
    expected = base64.b64decode(load_golden()[case_id(CASES[number])])
    actual = base64.b64decode(play_digests(CASES[number], seed=number))
    assert len(actual) == len(expected), f"{len(actual) // DIGEST_BYTES} steps, golden {len(expected) // DIGEST_BYTES}"
    steps = len(expected) // DIGEST_BYTES
    first_difference = next(
        (
            s
            for s in range(steps)
            if actual[s * DIGEST_BYTES : (s + 1) * DIGEST_BYTES] != expected[s * DIGEST_BYTES : (s + 1) * DIGEST_BYTES]
        ),
        None,
    )
    assert first_difference is None, f"step {first_difference} of {steps} differs from the golden record"


def test_golden_cases_cover_every_switch_value() -> None:
    for key, values in SWITCHES.items():
        assert {case[key] for case in CASES if key in case} == set(values), key


def record() -> None:
    cases = {case_id(case): play_digests(case, seed=number) for number, case in enumerate(CASES)}
    GOLDEN_FILE.parent.mkdir(exist_ok=True)
    with open(GOLDEN_FILE, "w") as handle:
        json.dump({"games_per_case": GAMES, "digest_bytes": DIGEST_BYTES, "cases": cases}, handle, indent=0)
        handle.write("\n")
    steps = sum(len(base64.b64decode(v)) // DIGEST_BYTES for v in cases.values())
    print(f"recorded {len(cases)} cases, {steps} steps, {GOLDEN_FILE.stat().st_size} bytes")


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python tests/test_golden.py --record")
    record()
