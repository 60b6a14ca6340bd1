"""Training across processes with ``torch.distributed``: the ranks of a ``torchrun`` job and what they share.

``torchrun --nproc_per_node N -m train.cli CONFIG`` (or ``pedro-train CONFIG --nproc N``) starts N ranks.
Each rank plays its own ``num_envs`` games, so a rollout of the job holds ``N * num_envs *
rollout_steps`` decisions; gradients are averaged by :class:`torch.nn.parallel.DistributedDataParallel`
and the minibatch means are taken over every rank's rows (:class:`RankBatch`), so an update equals
the update of one process on the ranks' rollouts concatenated. Rank 0 writes TensorBoard, checkpoints
and evaluation tables; the others write nothing. docs/training.md, "Several processes", has the rest.

Backends: the job's default group is ``gloo`` (counts, flags and objects, on the CPU); the gradients go
through it on CPU and through an ``nccl`` group when the ranks train on CUDA (one GPU per rank,
``cuda:LOCAL_RANK``).
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

RANK_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")  # set by torchrun for every rank


class RanksError(ValueError):
    """A distributed setting that cannot work (the message says what to change)."""


@dataclass(frozen=True)
class Ranks:
    """Where this process sits in the job: ``rank`` of ``world_size``, ``local_rank`` of ``local_world_size`` on
    its machine. The default is the single process of a plain ``pedro-train``."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    local_world_size: int = 1

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    @property
    def main(self) -> bool:
        """The rank that writes (logs, checkpoints, tables) and reports."""
        return self.rank == 0


SINGLE = Ranks()


def ranks_from_environment(environ: dict[str, str] | None = None) -> Ranks:
    """The ranks torchrun describes in the environment (``SINGLE`` when it did not start this process)."""
    environ = dict(os.environ if environ is None else environ)
    if "WORLD_SIZE" not in environ:
        return SINGLE
    try:
        values = [int(environ.get(name, default)) for name, default in zip(RANK_VARIABLES, ("0", "1", "0", "0"))]
    except ValueError:
        raise RanksError(
            f"torchrun's variables must be integers: {', '.join(f'{n}={environ.get(n)!r}' for n in RANK_VARIABLES)}"
        ) from None
    rank, world_size, local_rank, local_world_size = values
    local_world_size = local_world_size or world_size
    if not (0 <= rank < world_size and 0 <= local_rank < local_world_size <= world_size):
        raise RanksError(
            f"inconsistent torchrun variables: RANK={rank}, WORLD_SIZE={world_size}, LOCAL_RANK={local_rank}, "
            f"LOCAL_WORLD_SIZE={local_world_size}"
        )
    return Ranks(rank, world_size, local_rank, local_world_size)


def rank_device(name: str, ranks: Ranks, cuda_count: int | None = None) -> torch.device:
    """The device of this rank: ``auto`` is ``cuda:LOCAL_RANK`` when CUDA is there, else the CPU; ``cuda`` needs
    one GPU per rank on the machine; ``cpu`` is the CPU (any other torch device name is taken as given)."""
    count = torch.cuda.device_count() if cuda_count is None else cuda_count
    if name == "auto" and count == 0:
        return torch.device("cpu")
    if name in ("auto", "cuda"):
        if count == 0:
            raise RanksError("device 'cuda' was asked for but torch sees no CUDA device: use device=auto or device=cpu")
        if ranks.local_world_size > count:
            raise RanksError(
                f"{ranks.local_world_size} ranks on this machine but {count} CUDA device(s): one GPU per rank, so "
                f"start at most {count} (torchrun --nproc_per_node {count}) or train on the CPU (device=cpu)"
            )
        return torch.device("cuda", ranks.local_rank)
    return torch.device(name)


class Exchange:
    """The collectives the trainer needs, over a CPU (gloo) group; with one process every call is the identity."""

    def __init__(self, ranks: Ranks = SINGLE, group: Any = None) -> None:
        self.ranks = ranks
        self.group = group

    def sum_array(self, values: np.ndarray) -> np.ndarray:
        """Elementwise sum over the ranks of a float64 array (same shape on every rank)."""
        if not self.ranks.distributed:
            return values
        tensor = torch.from_numpy(np.ascontiguousarray(values, dtype=np.float64).copy())
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM, group=self.group)
        return tensor.numpy()

    def any(self, flag: bool) -> bool:
        """True on every rank when it is true on one."""
        if not self.ranks.distributed:
            return flag
        return bool(self.sum_array(np.array([float(flag)]))[0] > 0)

    def gather(self, value: Any) -> list[Any]:
        """Every rank's ``value``, in rank order, on every rank (picklable objects)."""
        if not self.ranks.distributed:
            return [value]
        values: list[Any] = [None] * self.ranks.world_size
        dist.all_gather_object(values, value, group=self.group)
        return values

    def broadcast(self, value: Any) -> Any:
        """Rank 0's ``value`` on every rank."""
        if not self.ranks.distributed:
            return value
        box = [value if self.ranks.main else None]
        dist.broadcast_object_list(box, src=0, group=self.group)
        return box[0]

    def barrier(self) -> None:
        if self.ranks.distributed:
            dist.barrier(group=self.group)


DEFAULT_TIMEOUT_S = 1800.0  # how long a rank waits for the others in one collective before it fails
MAX_TIMEOUT_S = 7 * 24 * 3600.0  # a week: a rank that waits longer for the others has lost them


def join(ranks: Ranks, timeout_s: float = DEFAULT_TIMEOUT_S) -> Exchange:
    """Join the job's process group (torchrun's rendezvous, ``env://``, backend gloo); returns its exchange.

    ``timeout_s`` bounds every collective: a rank that waits longer for the others fails instead of hanging.
    """
    if not ranks.distributed:
        return Exchange()
    if not dist.is_initialized():
        dist.init_process_group("gloo", timeout=timedelta(seconds=timeout_s))
    return Exchange(ranks)


def gradient_group(device: torch.device, timeout_s: float = DEFAULT_TIMEOUT_S) -> Any:
    """The process group the gradients are averaged in: an nccl group when the ranks train on CUDA, else the
    default (gloo) group. Every rank calls it (it is a collective where it makes a group)."""
    if device.type != "cuda":
        return None
    torch.cuda.set_device(device)
    return dist.new_group(backend="nccl", timeout=timedelta(seconds=timeout_s))


def leave() -> None:
    """Leave the process group (no-op when none was joined).

    A DistributedDataParallel wrapper nobody holds any more can still be alive in its reference cycles; it
    is collected first, since one that outlives its group aborts the process at exit (in gloo's threads)."""
    if dist.is_available() and dist.is_initialized():
        gc.collect()
        dist.destroy_process_group()


# ---------------------------------------------------------------- minibatch means


class LocalBatch:
    """One process: a minibatch's means are plain means (exactly the numbers of a one-process run)."""

    world_size = 1

    def plan(self, parts: Sequence[np.ndarray], advantages: np.ndarray, labelled: np.ndarray | None) -> None:
        """An epoch's minibatches: ``parts`` (row indices), the rows' advantages and teacher labels (bool or None)."""

    def total(self, count: int) -> int:
        """``count`` summed over the ranks."""
        return count

    def rows(self, count: int, part: int) -> int:
        """Rows of minibatch ``part`` over all ranks (``count`` here)."""
        return count

    def labelled(self, count: int, part: int) -> int:
        """Rows of minibatch ``part`` with a teacher's label, over all ranks (``count`` here)."""
        return count

    def loss_mean(self, values: torch.Tensor, rows: int) -> torch.Tensor:
        """The mean of a per-row loss over the minibatch's ``rows`` (as a gradient-carrying tensor)."""
        return values.mean()

    def moments(self, values: torch.Tensor, part: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and (unbiased) standard deviation of minibatch ``part``'s advantages ``values``."""
        return values.mean(), values.std()

    def stat_mean(self, values: torch.Tensor) -> float:
        """A statistic's mean over the minibatch (a collective with several ranks: every rank calls it)."""
        return values.mean().item()


class RankBatch(LocalBatch):
    """Several ranks: the minibatch is the union of every rank's part, of any sizes.

    DistributedDataParallel averages the ranks' gradients, so each rank's loss is its rows' sum times
    ``world_size / rows``: the average of those is the gradient of the mean over all rows, as if one
    process had the concatenated minibatch. The counts and advantage moments of an epoch's minibatches
    are summed over the ranks in one exchange (float64) when the epoch starts (:meth:`plan`), since
    every collective waits for the slowest rank.
    """

    def __init__(self, exchange: Exchange) -> None:
        self.exchange = exchange
        self.world_size = exchange.ranks.world_size
        self.totals = np.zeros((0, 4))  # per minibatch: rows, sum and sum of squares of advantages, labelled rows

    def plan(self, parts: Sequence[np.ndarray], advantages: np.ndarray, labelled: np.ndarray | None) -> None:
        local = np.zeros((len(parts), 4))
        for number, part in enumerate(parts):
            values = advantages[part].astype(np.float64)
            local[number] = (
                part.size,
                values.sum(),
                (values * values).sum(),
                0 if labelled is None else labelled[part].sum(),
            )
        self.totals = self.exchange.sum_array(local).reshape(local.shape)

    def total(self, count: int) -> int:
        return int(self.exchange.sum_array(np.array([float(count)]))[0])

    def rows(self, count: int, part: int) -> int:
        return int(self.totals[part, 0])

    def labelled(self, count: int, part: int) -> int:
        return int(self.totals[part, 3])

    def loss_mean(self, values: torch.Tensor, rows: int) -> torch.Tensor:
        return values.sum() * (self.world_size / max(rows, 1))

    def moments(self, values: torch.Tensor, part: int) -> tuple[torch.Tensor, torch.Tensor]:
        count, total, squares = self.totals[part, :3]
        mean = total / max(count, 1.0)
        variance = (squares - count * mean * mean) / max(count - 1.0, 1.0)
        return values.new_tensor(mean), values.new_tensor(float(np.sqrt(max(variance, 0.0))))

    def stat_mean(self, values: torch.Tensor) -> float:
        local = values.detach().double()
        total, count = self.exchange.sum_array(np.array([local.sum().item(), float(local.numel())]))
        return total / max(count, 1.0)


def minibatch_reducer(exchange: Exchange) -> LocalBatch:
    return RankBatch(exchange) if exchange.ranks.distributed else LocalBatch()


# ---------------------------------------------------------------- launching


def launch_environment() -> dict[str, str]:
    """The environment of a launched job: this one, with one OpenMP thread per rank unless it names another
    (``torch_threads`` decides torch's own; this also quiets torchrun's note that it set the variable)."""
    return {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}


def launch_command(nproc: int, module: str, arguments: Sequence[str], prog: str = "") -> list[str]:
    """The torchrun command line that runs ``python -m module arguments`` as ``nproc`` ranks on this machine, through
    :mod:`train.launcher` (a failed rank ends the job with its own line; ``prog``, default ``python -m module``, names
    the command in a line of the launcher's)."""
    return [
        sys.executable,
        "-m",
        "train.launcher",
        prog or f"python -m {module}",
        "--standalone",
        f"--nproc_per_node={nproc}",
        "-m",
        module,
        *arguments,
    ]


def interrupt_ranks(launcher_pid: int) -> None:
    """Pass a Ctrl-C on to the ranks of a torchrun started by this process (SIGINT: they stop together at an
    update boundary and checkpoint), past torchrun itself, which would print a traceback for it. torchrun
    starts each rank in a session of its own; their pids come from /proc (Linux). Where none is found (another
    system, or before they start) torchrun gets the signal and stops them its way."""
    ranks = []
    for children in Path(f"/proc/{launcher_pid}/task").glob("*/children"):
        try:
            ranks += [int(pid) for pid in children.read_text().split()]
        except (OSError, ValueError):
            continue
    for pid in ranks or [launcher_pid]:
        try:
            os.kill(pid, signal.SIGINT)
        except OSError:  # it ended meanwhile
            continue


def checkpoint_world_size_error(saved: int, now: int) -> str:
    """Why a checkpoint of ``saved`` ranks cannot continue with ``now`` ranks (what to run instead)."""
    launch = (
        "pedro-train --resume RUN_DIR"
        if saved == 1
        else f"pedro-train --resume RUN_DIR --nproc {saved} (or torchrun --nproc_per_node {saved} -m train.cli ...)"
    )
    return (
        f"the checkpoint was written by {saved} rank{'s' if saved != 1 else ''} and this run has {now}: a run "
        f"continues exactly only with the ranks that wrote it (each holds its own games); resume it with {launch}"
    )


def parameter_digest(network: torch.nn.Module) -> int:
    """CRC-32 of the network's parameters' bytes (the same on every rank after every update)."""
    digest = 0
    for tensor in network.state_dict().values():
        digest = zlib.crc32(tensor.detach().cpu().contiguous().numpy().tobytes(), digest)
    return digest
