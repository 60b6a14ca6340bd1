"""The rule agents' golden decisions: positions of every phase under every rules config, and what each shipped
rule-agent spec does there (tests/golden/rule_decisions.npz). A faster implementation of the rule agents must
reproduce every decision; ``python tests/test_rule_golden.py --record`` records them again (only when a change
of decisions is meant).

Positions come from games of ``rule:heuristic`` at every seat in which a fifth of the moves are drawn at
random among the legal ones (so the positions leave the heuristic's own paths), over the configs of
tests/test_rule_agents.py (every section-9 switch, 2 to 4 players): up to :data:`PER_PHASE` positions of
each phase with a choice per config, taken in play order. The file holds, per config ``i``: ``config_i``
(its overrides as JSON), ``observations_i`` (k, D) uint8, ``masks_i`` (k, 133) bool and ``actions_i``
(k, len(SPECS)) int16, one column per spec of :data:`SPECS`. The positions were moved to the observation
layout's version 2 (2026-12-06) entry by entry (:mod:`pedro_env.layout_v1`); the decisions there are the recorded ones.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_rule_agents import CONFIGS

from agents import make_agent
from pedro_env.config import make_config
from pedro_env.state import NUM_PHASES
from pedro_env.vector import PedroVectorEnv

GOLDEN_FILE = Path(__file__).resolve().parent / "golden" / "rule_decisions.npz"
SPECS = (
    "rule:heuristic",
    "rule:cautious",
    "rule:heuristic,caution=2",
    "rule:cautious,caution=0",
    "rule:heuristic,deny=true",
    "rule:heuristic,deny=true,caution=1.5,contest_allowance=1",
    "rule:heuristic,contest_points=0",
    "rule:cautious,deny=true",
)
"""The rule-agent specs of the shipped configs, the teacher and the docs."""
PER_PHASE = 60  # positions of each phase kept per config
GAMES = 32
EXPLORE = 0.2  # share of moves drawn at random among the legal ones
MAX_STEPS = 600


def exploring_positions(
    overrides: dict[str, Any], seed: int, per_phase: Sequence[int], games: int = GAMES, max_steps: int = MAX_STEPS
) -> tuple[np.ndarray, np.ndarray]:
    """(observations, masks) of up to ``per_phase[p]`` positions with a choice of each phase ``p``, in play order,
    from ``games`` games of heuristic self-play that draw a share EXPLORE of their moves at random."""
    config = make_config(**overrides)
    venv = PedroVectorEnv(games, config=config)
    heuristic = make_agent("rule:heuristic", config)
    rng = np.random.default_rng(seed)
    step = venv.reset(seed=seed)
    kept: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in range(NUM_PHASES)]
    for _ in range(max_steps):
        phases = venv.state.phase
        for game in range(games):
            phase = int(phases[game])
            if phase < NUM_PHASES and len(kept[phase]) < per_phase[phase] and step.action_mask[game].sum() > 1:
                kept[phase].append((step.observation[game].copy(), step.action_mask[game].astype(bool)))
        if all(len(found) >= wanted for found, wanted in zip(kept, per_phase)):
            break
        actions = heuristic.act(step.observation, step.action_mask, rng)
        explore = rng.random(games) < EXPLORE
        for game in np.flatnonzero(explore):
            actions[game] = rng.choice(np.flatnonzero(step.action_mask[game]))
        step = venv.step(actions)
    found = [pair for phase in kept for pair in phase]
    return np.stack([o for o, _ in found]), np.stack([m for _, m in found])


def positions(overrides: dict[str, Any], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(observations, masks) of up to PER_PHASE positions of each phase, from exploring heuristic self-play."""
    return exploring_positions(overrides, seed, (PER_PHASE,) * NUM_PHASES)


def decisions(overrides: dict[str, Any], observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """(k, len(SPECS)) int16: each spec's action at each position."""
    config = make_config(**overrides)
    rng = np.random.default_rng(0)  # the rule agents draw nothing
    columns = [make_agent(spec, config).act(observations, masks, rng) for spec in SPECS]
    return np.stack(columns, axis=1).astype(np.int16)


def record() -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = {"specs": np.array(json.dumps(SPECS))}
    for index, overrides in enumerate(CONFIGS):
        observations, masks = positions(overrides, seed=100 + index)
        arrays[f"config_{index}"] = np.array(json.dumps(overrides))
        arrays[f"observations_{index}"] = observations
        arrays[f"masks_{index}"] = masks
        arrays[f"actions_{index}"] = decisions(overrides, observations, masks)
    return arrays


def differences(golden: Path = GOLDEN_FILE, every: int = 1) -> list[str]:
    """One line per (config, spec) whose decisions differ from the record's now ([] when all agree), over every
    ``every``-th position of each config."""
    found = []
    with np.load(golden) as record_file:
        specs = tuple(json.loads(str(record_file["specs"])))
        if specs != SPECS:
            return [f"the record holds the specs {specs}, this script {SPECS}"]
        index = 0
        while f"config_{index}" in record_file:
            overrides = json.loads(str(record_file[f"config_{index}"]))
            observations = record_file[f"observations_{index}"][::every]
            now = decisions(overrides, observations, record_file[f"masks_{index}"][::every])
            recorded = record_file[f"actions_{index}"][::every]
            for column, spec in enumerate(SPECS):
                wrong = np.flatnonzero(now[:, column] != recorded[:, column])
                if wrong.size:
                    found.append(
                        f"config {overrides or 'default'}, {spec}: {wrong.size} of {recorded.shape[0]} positions "
                        f"differ (first: position {wrong[0]}, recorded {recorded[wrong[0], column]}, "
                        f"now {now[wrong[0], column]})"
                    )
            index += 1
    return found


@pytest.fixture(scope="module")
def golden() -> dict[str, np.ndarray]:
    with np.load(GOLDEN_FILE) as record_file:
        return {name: record_file[name] for name in record_file.files}


def test_the_record_covers_every_config_every_phase_and_the_shipped_specs(golden: dict[str, np.ndarray]) -> None:
    assert tuple(json.loads(str(golden["specs"]))) == SPECS
    for index, overrides in enumerate(CONFIGS):
        assert json.loads(str(golden[f"config_{index}"])) == overrides
        observations = golden[f"observations_{index}"]
        masks, actions = golden[f"masks_{index}"], golden[f"actions_{index}"]
        assert observations.shape[0] == masks.shape[0] == actions.shape[0] >= 150
        assert (masks.sum(axis=1) > 1).all()  # every position is a choice
        assert masks[np.arange(actions.shape[0])[:, None], actions].all()  # every recorded action is legal
    bids, trumps, discards, plays = (golden["actions_0"][:, 0] < bound for bound in (24, 28, 81, 133))
    assert bids.any() and (trumps & ~bids).any() and (discards & ~trumps).any() and (plays & ~discards).any()


def test_the_rule_agents_decide_as_recorded() -> None:
    assert differences() == []


def test_the_kernels_run_as_plain_python_and_decide_as_recorded() -> None:
    """With ``NUMBA_DISABLE_JIT=1`` the rule kernels run as Python (for a debugger): every 25th position of every
    config, every spec, decided as recorded."""
    script = "import test_rule_golden as g; print(repr(g.differences(every=25)))"
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1", "PYTHONPATH": str(Path(__file__).resolve().parent)}
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]"


def test_a_decision_depends_on_its_own_game_alone(golden: dict[str, np.ndarray]) -> None:
    """The kernels reuse working space from game to game: a batch, its reverse and each game alone decide alike."""
    config = make_config(**json.loads(str(golden["config_0"])))
    observations, masks = golden["observations_0"], golden["masks_0"]
    for spec in SPECS[:2]:
        agent = make_agent(spec, config)
        rng = np.random.default_rng(0)
        batch = agent.act(observations, masks, rng)
        assert (agent.act(observations[::-1], masks[::-1], rng)[::-1] == batch).all()
        alone = [int(agent.act(observations[i], masks[i : i + 1], rng)[0]) for i in range(0, len(batch), 7)]
        assert alone == batch[::7].tolist()


def test_the_rule_agents_read_the_seat_observation_and_nothing_more(golden: dict[str, np.ndarray]) -> None:
    """The compiled path reads only the seat's observation (which passes the leak test, tests/test_observation.py):
    a longer row, such as the full state with the hidden hands a centralized critic sees, is refused."""
    config = make_config(**json.loads(str(golden["config_0"])))
    observations, masks = golden["observations_0"][:4], golden["masks_0"][:4]
    hidden = np.ones((4, 52 * (config.num_players + 1)), dtype=np.uint8)
    with pytest.raises(ValueError, match="entries; config"):
        make_agent("rule:heuristic", config).act(np.hstack([observations, hidden]), masks, np.random.default_rng(0))


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python tests/test_rule_golden.py --record")
    arrays = record()
    np.savez_compressed(GOLDEN_FILE, **arrays)
    count = sum(array.shape[0] for name, array in arrays.items() if name.startswith("actions_"))
    print(f"recorded {count} positions x {len(SPECS)} specs, {GOLDEN_FILE.stat().st_size} bytes")
