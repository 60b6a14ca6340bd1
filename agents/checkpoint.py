"""Training checkpoints: written atomically, read with ``torch.load(weights_only=True)``, checked before use.

A checkpoint is a dict of tensors and plain Python values (no pickled classes, so loading runs no
code from the file)::

    format        "pedro-rl/ppo-checkpoint"   (anything else is a foreign file)
    version       1
    config        TrainConfig.to_dict()        (the resolved run config, env rules included)
    network       NetworkShape.to_dict()
    model         ActorCritic state_dict
    ... and, from the trainer, optimizer, counters, RNG states, environment, league, statistics

numpy arrays travel as ``{"dtype", "shape", "bytes"}`` with the bytes in a uint8 tensor
(:func:`pack_array` / :func:`unpack_array`).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from pedro_env.cli import OutputPathError, atomic_output

CHECKPOINT_FORMAT = "pedro-rl/ppo-checkpoint"
CHECKPOINT_VERSION = 1
LATEST_NAME = "latest.pt"  # a run directory's checkpoint: RUN_DIR/latest.pt


class CheckpointError(ValueError):
    """A checkpoint that is missing, unreadable, corrupt or not written by pedro-train."""


def pack_array(array: np.ndarray) -> dict[str, Any]:
    """A numpy array as plain values and a uint8 tensor (safe under ``weights_only=True``)."""
    array = np.ascontiguousarray(array)
    raw = np.frombuffer(array.tobytes(), dtype=np.uint8).copy()
    return {"dtype": array.dtype.str, "shape": list(array.shape), "bytes": torch.from_numpy(raw)}


def unpack_array(packed: dict[str, Any]) -> np.ndarray:
    """Inverse of :func:`pack_array` (a writable copy)."""
    raw = packed["bytes"].numpy().tobytes()
    return np.frombuffer(raw, dtype=np.dtype(packed["dtype"])).reshape(packed["shape"]).copy()


def pack_arrays(arrays: dict[str, np.ndarray]) -> dict[str, dict[str, Any]]:
    return {name: pack_array(array) for name, array in arrays.items()}


def unpack_arrays(packed: dict[str, dict[str, Any]]) -> dict[str, np.ndarray]:
    return {name: unpack_array(item) for name, item in packed.items()}


def save_checkpoint(payload: dict[str, Any], path: str | Path) -> Path:
    """Write ``payload`` (format and version added) to ``path`` atomically: a temporary file, fsync, rename.

    A crash, Ctrl-C or full disk mid-write leaves the previous file at ``path`` intact and no temporary file; a
    failure to write raises :class:`pedro_env.cli.OutputPathError` naming ``path`` (torch's zip writer reports a
    failed write as a RuntimeError; the OSError under it is what is raised).
    """
    path = Path(path)
    payload = {"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, **payload}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputPathError(f"cannot write {path}: {error.strerror or type(error).__name__}") from None
    with atomic_output(path) as handle:
        try:
            torch.save(payload, handle)
        except RuntimeError as error:
            failure = _os_error_under(error)
            if failure is None:
                raise
            raise failure from None
    return path


def _os_error_under(error: BaseException) -> OSError | None:
    """The OSError (a full disk, a lost device) behind an exception of torch's zip writer, if one is."""
    chain: list[BaseException] = []
    link: BaseException | None = error
    while link is not None and link not in chain:
        if isinstance(link, OSError):
            return link
        chain.append(link)
        link = link.__cause__ or link.__context__
    return None


def latest_checkpoint(run_dir: str | Path) -> Path:
    """The checkpoint a run directory holds (written or not yet)."""
    return Path(run_dir) / LATEST_NAME


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu", mmap: bool = False) -> dict[str, Any]:
    """Read and check a checkpoint; raises CheckpointError saying what is wrong with the file. ``mmap`` maps the
    tensors' bytes instead of reading them (a cheap look at the recorded rules)."""
    path = Path(path)
    if path.is_dir():
        candidate = path / LATEST_NAME
        if not candidate.is_file():
            raise CheckpointError(f"no checkpoint in {path}: expected {candidate}")
        path = candidate
    if not path.is_file():
        raise CheckpointError(f"checkpoint not found: {path}")
    try:
        with warnings.catch_warnings():
            # A damaged file can claim any pickle protocol; the error below says what is wrong instead.
            warnings.filterwarnings("ignore", message="Detected pickle protocol")
            payload = torch.load(path, map_location=map_location, weights_only=True, mmap=mmap)
    except Exception as error:  # noqa: BLE001 - damaged bytes raise IndexError, KeyError, UnicodeDecodeError, ...
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise CheckpointError(
            f"cannot read checkpoint {path}: the file is corrupt or not a torch checkpoint ({first_line})"
        ) from None
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(
            f"{path} is not a pedro-train checkpoint (no format {CHECKPOINT_FORMAT!r}); "
            "checkpoints come from pedro-train, e.g. runs/NAME/latest.pt"
        )
    if payload.get("version") != CHECKPOINT_VERSION:
        raise CheckpointError(
            f"checkpoint {path} has version {payload.get('version')!r}; this version reads {CHECKPOINT_VERSION}"
        )
    for key in ("config", "network", "model"):
        if key not in payload:
            raise CheckpointError(f"checkpoint {path} is incomplete: it has no {key!r} entry")
    return payload
