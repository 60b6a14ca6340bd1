"""The label files of ``python -m train.distill``: play decisions a search values, written whole and read back checked.

A label file (``numpy.savez_compressed``) holds ``observations`` (N, D) uint8, ``masks`` (N, 133) bool and
``values`` (N, 133) float32: each searched card's value in points of the deal, ``-inf`` elsewhere (so the
values are finite exactly where the mask is True). Its name ends in ``.npz`` (added when missing, as numpy
does). :func:`load_labels` checks every array's header (keys, dtype, shape, at most :data:`MAX_POSITIONS` rows)
before it decompresses anything, then the values against the masks, so a damaged or foreign file is one
:class:`DistillError` naming it.
"""

from __future__ import annotations

import os
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from agents import PPO_POLICY_SPEC, AgentSpecError, make_agent
from pedro_env.actions import NUM_ACTIONS, PLAY_OFFSET
from pedro_env.cli import OutputPathError, atomic_output
from pedro_env.config import SEED_LIMIT, PedroConfig, make_config
from pedro_env.observation_layout import observation_size
from pedro_env.vector import PedroVectorEnv

LABEL_GAMES = 64  # games played side by side while labelling; game i of seed S is seeded S * 1000 + i
LABEL_SEED_MAX = (SEED_LIMIT - LABEL_GAMES) // 1000  # the largest seed whose games' seeds stay below 2**64
MAX_POSITIONS = 10_000_000  # rows of one label command or one fit (about 1.5 kB each in memory); the docs' fit: 1.98M
STALL_STEPS = 10_000  # steps without one labelled position before labelling gives up (a normal run labels every step)
LABEL_KEYS = ("observations", "masks", "values")


class DistillError(ValueError):
    """A label file missing, damaged or made for another observation layout, or a network that cannot be grafted."""


def label_file_path(out: str | Path) -> Path:
    """The file the labels command writes for ``out``: ``out`` itself when it ends in ``.npz``, else ``out.npz``
    (numpy's rule); OutputPathError for a name that ends in a slash."""
    text = str(out)
    if text.endswith(("/", os.sep)):
        raise OutputPathError(f"label file {text} is a directory; give a file name")
    return Path(text if text.endswith(".npz") else f"{text}.npz")


def label_positions(
    positions: int,
    seed: int,
    policy: str = PPO_POLICY_SPEC,
    search: str = "search:pimc,samples=16",
    beside: str | None = None,
    beside_seats: Sequence[int] = (),
) -> dict[str, np.ndarray]:
    """``positions`` play decisions of ``policy``'s seats valued by ``search`` (module docstring: the arrays)."""
    config = make_config()
    labelled_seats = np.array([seat not in beside_seats for seat in range(config.num_players)])
    if beside and not labelled_seats.any():
        raise DistillError(f"--beside-seats {' '.join(map(str, beside_seats))} leaves no seat to label")
    player, searcher = make_agent(policy, config), make_agent(search, config)
    if not hasattr(searcher, "action_values"):
        raise AgentSpecError(f"--search {search!r} does not value cards: give a search:pimc spec")
    partner = make_agent(beside, config) if beside else None
    rng = np.random.default_rng(seed)
    venv = PedroVectorEnv(LABEL_GAMES, config=config)
    step = venv.reset(seed=seed * 1000)
    observations, masks_out, values_out = [], [], []
    stalled = 0
    while len(observations) < positions:
        masks = step.action_mask.view(bool)
        actions = player.act(step.observation, masks, rng)
        ours = labelled_seats[step.actor] if partner is not None else np.ones(LABEL_GAMES, bool)
        if partner is not None and (~ours).any():
            theirs = np.flatnonzero(~ours)
            actions[theirs] = partner.act(step.observation[theirs], masks[theirs], rng)
        playing = (masks[:, PLAY_OFFSET:].sum(axis=1) > 1) & (masks[:, :PLAY_OFFSET].sum(axis=1) == 0) & ours
        before = len(observations)
        for game in np.flatnonzero(playing):
            values = searcher.action_values(step.observation[game], masks[game], rng)
            if not values:
                continue
            row = np.full(NUM_ACTIONS, -np.inf, np.float32)
            for action, value in values.items():
                row[action] = value
            observations.append(step.observation[game].copy())
            masks_out.append(masks[game].copy())
            values_out.append(row)
        stalled = 0 if len(observations) > before else stalled + 1
        if stalled > STALL_STEPS:  # bounded: a search that values nothing must not spin forever
            raise DistillError(f"no position labelled in {STALL_STEPS:,} steps: --search {search!r} values no card")
        step = venv.step(actions)
    return {
        "observations": np.array(observations[:positions]),
        "masks": np.array(masks_out[:positions]),
        "values": np.array(values_out[:positions]),
    }


def write_labels(arrays: dict[str, np.ndarray], path: str | Path) -> Path:
    """Write a label file whole or not at all (a temporary file beside it, then a rename); the path written."""
    path = label_file_path(path)
    with atomic_output(path) as handle:  # a handle, so numpy adds no second suffix
        np.savez_compressed(handle, **arrays)
    return path


def _headers(archive: np.lib.npyio.NpzFile) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Each label array's shape and dtype, from its ``.npy`` header alone (nothing decompressed beyond it)."""
    headers = {}
    for key in LABEL_KEYS:
        with archive.zip.open(f"{key}.npy") as member:
            version = np.lib.format.read_magic(member)
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(member)
            elif version == (2, 0):
                shape, _, dtype = np.lib.format.read_array_header_2_0(member)
            else:
                raise ValueError(f"{key} is stored in .npy format {version}")
        headers[key] = (shape, dtype)
    return headers


def _check_headers(headers: dict[str, tuple[tuple[int, ...], np.dtype]], path: Path, config: PedroConfig) -> int:
    """The rows of a label file whose headers fit ``config``; DistillError naming the first thing that does not."""
    (obs_shape, obs_dtype), (mask_shape, mask_dtype), (value_shape, value_dtype) = (headers[key] for key in LABEL_KEYS)
    if len(obs_shape) != 2 or obs_dtype != np.uint8:
        raise DistillError(f"label file {path}: observations must be (N, D) uint8, not {obs_shape} {obs_dtype}")
    if obs_shape[1] != observation_size(config):
        raise DistillError(
            f"label file {path} has {obs_shape[1]}-entry observations; these rules need {observation_size(config)}"
        )
    rows = obs_shape[0]
    if mask_shape != (rows, NUM_ACTIONS) or mask_dtype != np.bool_:
        raise DistillError(
            f"label file {path}: masks must be ({rows}, {NUM_ACTIONS}) bool (one row per observation, one column "
            f"per action), not {mask_shape} {mask_dtype}"
        )
    if value_shape != (rows, NUM_ACTIONS) or value_dtype.kind != "f":
        raise DistillError(
            f"label file {path}: values must be ({rows}, {NUM_ACTIONS}) floats, not {value_shape} {value_dtype}"
        )
    if rows == 0:
        raise DistillError(f"label file {path} holds no positions; give one written by the labels command")
    return rows


def load_labels(paths: Sequence[str | Path], config: PedroConfig) -> dict[str, np.ndarray]:
    """The label files concatenated, each checked (module docstring); DistillError naming the file at fault."""
    parts: dict[str, list[np.ndarray]] = {key: [] for key in LABEL_KEYS}
    total = 0
    for name in paths:
        path = Path(name)
        if not path.exists():
            raise DistillError(f"label file not found: {path}")
        if not path.is_file():
            raise DistillError(f"label file {path} is not a regular file")
        try:
            with np.load(path) as archive:
                if not isinstance(archive, np.lib.npyio.NpzFile):
                    raise ValueError("a single .npy array, not an .npz archive")
                total += _check_headers(_headers(archive), path, config)
                if total > MAX_POSITIONS:
                    raise DistillError(
                        f"the label files hold more than {MAX_POSITIONS:,} positions, the most one fit takes"
                    )
                arrays = {key: archive[key] for key in LABEL_KEYS}
        except DistillError:
            raise
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error) as error:
            raise DistillError(
                f"label file {path} is damaged or not a label file (needs observations, masks, values): {error}"
            ) from None
        masks, values = arrays["masks"], arrays["values"]
        wrong = int(np.count_nonzero((np.isfinite(values) != masks).any(axis=1) | ~masks.any(axis=1)))
        if wrong:
            raise DistillError(
                f"label file {path}: {wrong:,} of {len(values):,} positions have values that are not finite exactly "
                "on their legal actions (the search's card values, -inf elsewhere)"
            )
        for key in LABEL_KEYS:
            parts[key].append(arrays[key].astype(np.float32) if key == "values" else arrays[key])
    return {key: np.concatenate(arrays) for key, arrays in parts.items()}
