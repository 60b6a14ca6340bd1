"""What the trainer logs of its games (:class:`RunScalars`, a mixin over :class:`train.trainer.Trainer`'s attributes):
the ``game/`` scalars of every rule set's games, over every rank, and the ``opponents/`` shares of each pool.
"""

from __future__ import annotations

import numpy as np

from train.stats import GameStats, tag_of
from train.table_group import TableGroup


class RunScalars:
    """The :class:`train.trainer.Trainer`'s logging methods."""

    def tag_prefix(self, group: TableGroup) -> str:
        """Where ``group``'s scalars go under ``eval/``, ``game/`` and ``opponents/``: nowhere else in a
        single-rules run (``""``), under its name in a mix (``six_card=true/``)."""
        return f"{group.name}/" if len(self.groups) > 1 else ""

    def game_scalars(self) -> dict[str, float]:
        """The ``game/`` scalars since the last log, over every rank's games (a collective with several ranks); in a
        mix over every rule set's games, and each rule set's alone as ``game/<name>/...``."""
        stats = [group.game_stats for group in self.groups]
        if self.ranks.distributed:
            counts = self.exchange.sum_array(np.concatenate([own.to_array() for own in stats]))
            ends = np.cumsum([own.to_array().size for own in stats])
            stats = [own.from_array(part) for own, part in zip(stats, np.split(counts, ends[:-1]))]
        out = GameStats.merged(stats).scalars()
        if len(stats) > 1:
            for group, own in zip(self.groups, stats):
                out.update({f"game/{group.name}/{tag[5:]}": value for tag, value in own.scalars().items()})
        return out

    def clear_game_stats(self) -> None:
        """A new count of every group's games, after a log."""
        for group in self.groups:
            group.game_stats.clear()

    def opponent_shares(self) -> dict[str, float]:
        """``opponents/<member>/weight``: the chance a new opponent game meets each pool member (league snapshots
        together), per rule set in a mix (``opponents/<name>/<member>/weight``)."""
        out: dict[str, float] = {}
        for group in self.groups:
            pool = group.pool
            for index, weight in enumerate(pool.opponent_weights() if len(pool) else ()):
                tag = f"opponents/{self.tag_prefix(group)}{tag_of(pool.group(index))}/weight"
                out[tag] = out.get(tag, 0.0) + float(weight)
        return out
