"""``pedro-train --export CHECKPOINT OUT``: a checkpoint's policy alone, as a torch file and as ONNX.

``OUT`` (e.g. ``policy.pt``) is a small checkpoint that ``ckpt:OUT`` loads: the rules, the training config, the
network and its weights, the observation layout and where it came from. Beside it, ``OUT`` with the suffix
``.onnx`` (``policy.onnx``) is the same policy as an ONNX graph any runtime can run (:mod:`agents.onnx_policy`;
docs/export.md); it needs the ``onnx`` package (the ``onnx`` extra), and is left out, saying so, without it.
Both outputs are checked before any work: neither may be a run's checkpoint, and both must be writable.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from agents.checkpoint import LATEST_NAME, CheckpointError, latest_checkpoint, load_checkpoint, save_checkpoint
from pedro_env.cli import OutputPathError, atomic_output, check_output_file, same_file
from train.config import TrainConfig, TrainConfigError, make_train_config

ONNX_SUFFIX = ".onnx"


class ExportRefused(OutputPathError):
    """An ``--export`` output refused before any work: it would destroy a run, or cannot be written at all."""


def onnx_output(destination: str | Path) -> Path:
    """Where ``--export`` writes the ONNX file of the torch policy file ``destination``: its suffix made ``.onnx``.
    ExportRefused when ``destination`` is itself an ``.onnx`` name (the torch file would take the ONNX file's
    place)."""
    output = Path(destination)
    if output.suffix == ONNX_SUFFIX:
        torch_file = output.with_suffix(".pt")
        raise ExportRefused(
            f"--export OUT is the torch policy file, not the ONNX one (written beside it): give e.g. {torch_file}, "
            f"which writes {torch_file} and {output}; got {destination}"
        )
    return output.with_suffix(ONNX_SUFFIX)


def onnx_available() -> bool:
    """Whether the ONNX file can be written here: the ``onnx`` package is installed."""
    return importlib.util.find_spec("onnx") is not None


def check_export_output(source: str | Path, destination: str | Path) -> None:
    """Raise ExportRefused where ``--export SOURCE DESTINATION`` would destroy a run (DESTINATION or its ONNX file
    is SOURCE's own checkpoint, or a training checkpoint: one that holds an optimizer, or a run directory's
    latest.pt) or where either cannot be written."""
    source_file = latest_checkpoint(source) if Path(source).is_dir() else Path(source)
    for given in (destination, onnx_output(destination)):  # as given: a trailing / says a directory was meant
        output = Path(given)
        if same_file(source_file, output):
            raise ExportRefused(
                f"--export would write over its own checkpoint {output}: give another OUT, e.g. policy.pt"
            )
        if output.name == LATEST_NAME and (output.parent / "config.yaml").is_file():
            raise ExportRefused(
                f"{output} is the checkpoint of run {output.parent}: --export would end that run; give another OUT"
            )
        if output.is_file():
            try:
                held = load_checkpoint(output, mmap=True)
            except CheckpointError:
                held = {}  # not a checkpoint: an output like any other
            if "optimizer" in held:
                raise ExportRefused(
                    f"{output} is a training checkpoint (it holds the optimizer a run resumes with): --export "
                    "would end that run; give another OUT"
                )
        try:
            check_output_file(given, "--export output")
        except OutputPathError as error:
            raise ExportRefused(str(error)) from None


def checkpoint_decisions(payload: dict[str, Any]) -> int:
    """A checkpoint's decision count, as recorded (0 where it records none it can say)."""
    counters = payload.get("counters")
    decisions = counters.get("decisions") if isinstance(counters, dict) else None
    return decisions if isinstance(decisions, int) and not isinstance(decisions, bool) else 0


def checkpoint_config(payload: dict[str, Any], path: str | Path) -> TrainConfig:
    """The checkpoint's training config, checked, or CheckpointError if a hand edit broke it."""
    saved = payload["config"]
    if not isinstance(saved, dict) or not all(isinstance(key, str) for key in saved):
        raise CheckpointError(f"checkpoint {path} has a damaged config entry (not a mapping of config keys)")
    try:
        return make_train_config(**saved)
    except TrainConfigError as error:
        raise CheckpointError(f"checkpoint {path} has a config that no longer checks: {error}") from None


def provenance(payload: dict[str, Any], source: str | Path) -> dict[str, Any]:
    """Where the policy of checkpoint ``payload`` came from, as ``OUT`` records it (``exported``): a run's checkpoint
    gives its source, decisions and training seconds; a policy that is already alone (an export, a distillation: no
    counters) keeps the record it carries, so exporting it again loses nothing."""
    carried = payload.get("exported")
    if "counters" not in payload and isinstance(carried, dict):
        return carried
    counters = payload.get("counters") if isinstance(payload.get("counters"), dict) else {}
    elapsed = counters.get("elapsed_s", 0.0)
    return {
        "source": str(source),
        "decisions": checkpoint_decisions(payload),
        "training_s": float(elapsed) if isinstance(elapsed, (int, float)) else 0.0,
    }


def policy_alone(payload: dict[str, Any], source: str | Path) -> dict[str, Any]:
    """The policy of checkpoint ``payload`` alone, as ``OUT`` holds it: rules, training config, network, weights,
    observation layout, and where it came from (``exported``: :func:`provenance`)."""
    from agents.policy import observation_layout

    layout = payload.get("observation_layout") or observation_layout(checkpoint_config(payload, source).pedro_config)
    return {
        "config": payload["config"],
        "network": payload["network"],
        "model": payload["model"],
        "observation_layout": layout,
        "exported": provenance(payload, source),
    }


def onnx_policy(payload: dict[str, Any], source: str | Path) -> bytes:
    """The ONNX model of the policy in checkpoint ``payload`` (:mod:`agents.onnx_policy`), its metadata saying
    what it is; CheckpointError where the network cannot be rebuilt."""
    from agents.onnx_policy import onnx_policy_bytes, policy_metadata
    from agents.policy import network_from_checkpoint

    try:
        network = network_from_checkpoint(payload)
    except (KeyError, TypeError, RuntimeError, ValueError) as error:
        raise CheckpointError(f"checkpoint {source} holds a network that cannot be rebuilt: {error}") from None
    return onnx_policy_bytes(network, policy_metadata(payload, network, str(source)))


def export_policy(source: str | Path, destination: str | Path) -> tuple[Path, Path | None]:
    """Write the policy of checkpoint ``source`` alone to ``destination`` (:func:`policy_alone`, a small file
    ``ckpt:`` and ``pretrained`` can load) and as ONNX to :func:`onnx_output` (None: not written, the onnx package
    being missing); the paths written.

    ExportRefused (naming the output) where it would destroy a run or cannot be written at all
    (:func:`check_export_output`); OutputPathError where a write fails, saying which file is as it was. The ONNX
    model is built before either file is written."""
    check_export_output(source, destination)
    payload = load_checkpoint(source)
    alone = policy_alone(payload, source)
    # the graph's metadata records the provenance the torch file beside it records
    graph = onnx_policy({**payload, "exported": alone["exported"]}, source) if onnx_available() else None
    try:
        policy = save_checkpoint(alone, destination)
    except OutputPathError as error:
        raise OutputPathError(f"{error}; {destination} is as it was") from None
    if graph is None:
        return policy, None
    onnx_path = onnx_output(destination)
    try:
        with atomic_output(onnx_path) as handle:
            handle.write(graph)
    except OutputPathError as error:
        raise OutputPathError(f"{error}; {policy} was written, {onnx_path} is as it was") from None
    return policy, onnx_path
