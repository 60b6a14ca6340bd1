"""The compiled kernels themselves: plain-Python mode, the per-game kernels on their own, the state buffer,
and compiling from a read-only install (two processes at once)."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numba import njit

from pedro_env.aec import raw_env
from pedro_env.cards import RuleTables
from pedro_env.config import make_config
from pedro_env.kernels import inputs
from pedro_env.kernels.inputs import config_params
from pedro_env.kernels.observations import legal_masks
from pedro_env.kernels.steps import entry_point
from pedro_env.kernels.tricks import legal_play_set, legal_plays, trick_winner, trick_winner_of
from pedro_env.rules import initial_state
from pedro_env.state import PedroState
from pedro_env.vector import PedroVectorEnv

from conftest import REPO_ROOT, module_env, ref_legal_plays, ref_trick_winner


def test_conformance_vectors_pass_with_the_jit_disabled() -> None:
    """NUMBA_DISABLE_JIT=1 runs the same kernels as plain Python (for a debugger): they must still be the rules."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_conformance.py"],
        capture_output=True,
        text=True,
        env={**module_env(), "NUMBA_DISABLE_JIT": "1"},
        cwd=REPO_ROOT,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "failed" not in result.stdout


@njit
def _user_kernel(hands, trumps, led_cards, tricks, leaders, tab):
    """A user's own compiled loop calling the per-game kernels."""
    plays = np.empty(hands.shape[0], dtype=np.uint64)
    winners = np.empty(hands.shape[0], dtype=np.int64)
    for i in range(hands.shape[0]):
        plays[i] = legal_play_set(hands[i], trumps[i], led_cards[i], tab)
        winners[i] = trick_winner_of(tricks[i], leaders[i], trumps[i], tab)
    return plays, winners


@pytest.mark.parametrize("variant", ["cinch", "pitch"])
def test_legal_plays_and_trick_winner_kernels_are_callable_on_their_own(variant: str) -> None:
    rng = np.random.default_rng(15)
    tables = RuleTables.for_variant(variant)
    k = 300
    decks = np.argsort(rng.random((k, 52)), axis=1)
    hands = np.array([sum(1 << int(c) for c in deck[:6]) for deck in decks], dtype=np.uint64)
    tricks = decks[:, 6:10].astype(np.int8)
    trumps = rng.integers(0, 4, k)
    leaders = rng.integers(0, 4, k)
    led = np.where(rng.random(k) < 0.2, -1, tricks[np.arange(k), leaders]).astype(np.int64)
    plays, winners = _user_kernel(hands, trumps, led, tricks, leaders, tables.kernel_table)
    assert (plays == legal_plays(hands, trumps, led, tables)).all()
    assert (winners == trick_winner(tricks, leaders, trumps, tables)).all()
    for i in range(k):
        by_seat = dict(enumerate(int(c) for c in tricks[i]))
        assert winners[i] == ref_trick_winner(by_seat, int(leaders[i]), int(trumps[i]), variant)
        hand = [c for c in range(52) if int(hands[i]) >> c & 1]
        expected = ref_legal_plays(hand, int(trumps[i]), None if led[i] < 0 else int(led[i]), variant)
        assert [c for c in range(52) if int(plays[i]) >> c & 1] == sorted(expected)


def test_kernel_field_indices_follow_the_state_fields() -> None:
    names = list(PedroState.__dataclass_fields__)
    assert [getattr(inputs, "F_" + name.upper()) for name in names] == list(range(len(names)))


def test_state_fields_are_views_of_one_buffer_through_copy_select_and_pickle() -> None:
    config = make_config()
    state = initial_state(config, np.arange(5))
    for candidate in (state, state.copy(), state.select(np.array([4, 1])), pickle.loads(pickle.dumps(state))):
        for name in ("hands", "rewards", "scores", "stock", "winner"):
            assert np.shares_memory(getattr(candidate, name), candidate.buffer), name
    twin = state.copy()
    twin.hands[0, 0] = 0
    assert state.hands[0, 0] != 0  # a deep copy
    assert (state.select(np.array([4, 1])).hands == state.hands[[4, 1]]).all()
    assert state.buffer.size <= 262 * 5 + 43 * 8  # 262 bytes a game plus at most a word of padding a field
    with pytest.raises(AttributeError, match="view of the state buffer"):
        state.hands = state.hands.copy()
    state.match_index += 1  # augmented assignment writes in place
    assert (state.match_index == 1).all()
    rebuilt = PedroState(**{name: getattr(state, name) for name in state.__dataclass_fields__})
    assert (rebuilt.buffer == state.buffer).all() and not np.shares_memory(rebuilt.buffer, state.buffer)


@pytest.mark.slow
def test_an_unwritable_install_compiles_into_the_temp_dir_two_processes_at_once(tmp_path: Path) -> None:
    """Neither the package's folder nor the user's cache can take numba's cache (a file sits where each cache
    folder would go, which stops root too): the kernels cache in the temp dir, and two cold starts at once agree."""
    install = tmp_path / "site"
    shutil.copytree(REPO_ROOT / "pedro_env", install / "pedro_env", ignore=shutil.ignore_patterns("__pycache__"))
    for package in (install / "pedro_env", install / "pedro_env" / "kernels"):
        (package / "__pycache__").write_text("not a folder")
    blocked_cache = tmp_path / "cache-is-a-file"
    blocked_cache.write_text("not a folder")
    temp = tmp_path / "tmp"
    temp.mkdir()
    script = (
        "import numpy as np, pedro_env; v = pedro_env.PedroVectorEnv(3); out = v.reset(seed=7); "
        "out = v.step(out.action_mask.argmax(1)); print(int(out.observation.sum()), pedro_env.__file__)"
    )
    environment = {key: value for key, value in os.environ.items() if not key.startswith("NUMBA_")}
    environment.update(
        PYTHONPATH=str(install), TMPDIR=str(temp), XDG_CACHE_HOME=str(blocked_cache), PYTHONDONTWRITEBYTECODE="1"
    )
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            env=environment,
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    outputs = [run.communicate(timeout=600) for run in runs]
    for run, (_, err) in zip(runs, outputs):
        assert run.returncode == 0, err.decode()[-2000:]
        assert "Traceback" not in err.decode() and "Warning" not in err.decode(), err.decode()[-2000:]
    assert outputs[0][0] == outputs[1][0] and str(install) in outputs[0][0].decode()
    assert any(temp.glob("pedro_env-numba-*/**/*.nbi")), "the cache should land in the temp dir"


def test_an_entry_point_computes_what_its_kernel_does() -> None:
    """entry_point: the compiled function called without numba's dispatch gives the kernel's results."""
    config = make_config()
    state = initial_state(config, np.arange(5, dtype=np.uint64))
    params, tables = config_params(config), RuleTables.for_variant(config.variant)
    by_kernel, by_entry = np.zeros((5, 133), dtype=bool), np.zeros((5, 133), dtype=bool)
    arguments = (state.buffer, state.element_offsets, 5, params, tables.kernel_table)
    legal_masks(*arguments, by_kernel)
    entry_point(legal_masks, *arguments, by_entry)(*arguments, by_entry)
    assert by_kernel.any() and np.array_equal(by_kernel, by_entry)


def test_a_vector_step_takes_actions_of_any_memory_layout() -> None:
    """The vector env calls its compiled step without type checks: actions that are not its own C-contiguous,
    writable int64 array (a strided view, a read-only array) are copied first, and step the same."""
    results = []
    for make_actions in (
        lambda legal: legal,
        lambda legal: np.repeat(legal, 2)[::2],  # a strided view
        lambda legal: np.frombuffer(legal.tobytes(), dtype=np.int64),  # read-only
        lambda legal: legal.astype(">i8"),  # big-endian
    ):
        venv = PedroVectorEnv(3)
        step = venv.reset(seed=11)
        observations = []
        for _ in range(60):
            legal = np.argmax(step.action_mask, axis=1).astype(np.int64)
            step = venv.step(make_actions(legal))
            observations.append(step.observation.copy())
        results.append(np.stack(observations))
    for other in results[1:]:
        assert np.array_equal(results[0], other)


def test_the_kernels_keep_no_reference_to_their_arrays() -> None:
    """The kernels without reference counting must not keep references either: stepping, masking and encoding
    leave the reference counts of the state buffer and the config's constants where they were."""
    venv = PedroVectorEnv(8, reuse_outputs=True)
    step = venv.reset(seed=0)
    step = venv.step(np.argmax(step.action_mask, axis=1))  # the env keeps its kernel inputs from here on
    state, statics = venv.state, venv.encoder.statics
    assert state is not None
    before = sys.getrefcount(state.buffer), sys.getrefcount(statics)
    for _ in range(300):
        step = venv.step(np.argmax(step.action_mask, axis=1))
        venv.encoder.encode(state, state.actor)
        venv.encoder.encode_full_state(state, state.actor)
    assert venv.state is state and (sys.getrefcount(state.buffer), sys.getrefcount(statics)) == before

    env = raw_env()
    env.reset(seed=0)
    game = env.game
    assert game is not None
    before = sys.getrefcount(game.buffer), sys.getrefcount(env.encoder.statics)
    for _ in range(100):
        env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0]))
    assert (sys.getrefcount(game.buffer), sys.getrefcount(env.encoder.statics)) == before


LEGAL_PLAY_COUNTS = """
import numpy as np
import pedro_env
from pedro_env.config import make_config
from pedro_env.rules import initial_state, legal_action_mask, step

config = make_config()
state = initial_state(config, np.arange(8, dtype=np.uint64))
counts = []
for _ in range(120):
    mask = legal_action_mask(state, config)
    for g in np.flatnonzero(state.phase == 3):
        hand = int(state.hands[g, state.actor[g]]).bit_count()
        counts.append((hand, int(mask[g, 81:].sum())))
    step(state, mask.argmax(axis=1), config)
print(pedro_env.__file__, sum(legal < hand for hand, legal in counts), len(counts))
"""


def test_a_cached_kernel_recompiles_when_a_callee_in_another_file_changes(tmp_path: Path) -> None:
    """numba stamps a kernel's cache with its own file's digest; pedro_env.kernels.cache stamps every kernel with
    every engine source. In a copy of the package, legal_masks (observations.py) is compiled and cached with
    legal_play_set (tricks.py); then legal_play_set changes to 'every card is legal', and the next process's
    legal_masks follows the new rule instead of loading the stale copy."""
    shutil.copytree(REPO_ROOT / "pedro_env", tmp_path / "pedro_env", ignore=shutil.ignore_patterns("__pycache__"))
    environment = {**module_env(), "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(tmp_path)}

    def constrained_and_all_plays() -> tuple[int, int]:
        done = subprocess.run(
            [sys.executable, "-c", LEGAL_PLAY_COUNTS], cwd=tmp_path, env=environment, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-2000:]
        package, constrained, plays = done.stdout.split()
        assert Path(package).is_relative_to(tmp_path), f"the copy should run, not {package}"
        return int(constrained), int(plays)

    constrained, plays = constrained_and_all_plays()
    assert plays > 50 and constrained > 0  # following suit restricts some plays
    assert any((tmp_path / "cache").rglob("observations.legal_masks*.nbi")), "legal_masks should be cached"
    tricks = tmp_path / "pedro_env" / "kernels" / "tricks.py"
    source = tricks.read_text()
    rule = "def legal_play_set(hand, trump, led_card, tab):\n"
    assert rule in source
    tricks.write_text(source.replace(rule, rule + "    return hand  # every card is legal\n"))
    constrained, plays = constrained_and_all_plays()
    assert plays > 50 and constrained == 0  # the cached legal_masks did not survive its callee's change
