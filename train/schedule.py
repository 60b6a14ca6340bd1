"""The learning rate over a run, with warm restarts: :class:`LearningRateSchedule`.

Without restarts the rate decays linearly from ``lr`` to 0 over the run's updates (``anneal_lr``), or stays at
``lr``. Each of ``lr_restarts`` (decision counts) starts a new segment: the rate jumps to ``lr_restart`` and decays
to 0 by the next restart or the run's end, and Adam's moment estimates start afresh (linear warm restarts, after
SGDR: Loshchilov and Hutter, 2017). Everything is a function of the update's index, so a resumed run follows the
same schedule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class LearningRateSchedule:
    """The rate of each update: segments starting at update indices ``starts`` (the first 0), the last ending at
    ``num_updates``; segment 0 starts at ``lr``, every later one at ``restart_lr``."""

    lr: float
    restart_lr: float
    starts: tuple[int, ...]
    num_updates: int
    anneal: bool = True

    @classmethod
    def of_run(
        cls,
        lr: float,
        restarts: tuple[int, ...],
        restart_lr: float,
        decisions_per_update: int,
        num_updates: int,
        anneal: bool = True,
    ) -> LearningRateSchedule:
        """The schedule of a run of ``num_updates`` updates of ``decisions_per_update`` decisions (the job's), with
        a restart at the first update that starts at or after each of ``restarts`` (decisions); ``restart_lr`` 0
        means ``lr``."""
        starts = sorted({min(num_updates, math.ceil(decisions / decisions_per_update)) for decisions in restarts})
        inner = tuple(start for start in starts if 0 < start < num_updates)
        return cls(lr, restart_lr or lr, (0, *inner), num_updates, anneal)

    def segment(self, update: int) -> int:
        """Index of the segment holding ``update``."""
        return sum(1 for start in self.starts if start <= update) - 1

    def rate(self, update: int) -> float:
        """The learning rate of update ``update`` (counted from 0)."""
        number = self.segment(update)
        base = self.lr if number == 0 else self.restart_lr
        if not self.anneal:
            return base
        start = self.starts[number]
        end = self.starts[number + 1] if number + 1 < len(self.starts) else self.num_updates
        return base * max(0.0, 1.0 - (update - start) / max(1, end - start))

    def restarts_at(self, update: int) -> bool:
        """Whether update ``update`` begins a segment after the first (the optimizer's moments start afresh)."""
        return update > 0 and update in self.starts
