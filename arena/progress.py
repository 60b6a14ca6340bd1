"""Progress bars over matches (tqdm on stderr): silent when disabled, when stderr is not a terminal, or without tqdm.

:class:`MatchProgressBar` follows a head to head or a round robin (fed ``[(pairing, winner side), ...]``
by :func:`arena.shards.run_shards`); :class:`GauntletProgressBar` follows a gauntlet (fed
``(matches finished, matches in all)`` by :func:`arena.gauntlet.run_gauntlet`).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np


def _tqdm_bar(**options: Any) -> Any:
    """A tqdm bar on stderr, or None without tqdm."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(dynamic_ncols=True, file=sys.stderr, **options)


class MatchProgressBar:
    """A bar over matches with the current estimate.

    Head to head it shows side A's win rate over the decided matches so far (its score, undecided as
    half, while none is decided); a round robin shows how many pairings are complete.
    """

    def __init__(self, total: int, enabled: bool, side_a: str, pairings: int, matches_per_pairing: int) -> None:
        self.side_a = side_a
        self.matches_per_pairing = matches_per_pairing
        self.wins = np.zeros((pairings, 2), dtype=np.int64)  # (pairings, 2): decided matches won by side A, B (field)
        self.done = np.zeros(pairings, dtype=np.int64)  # (pairings,): matches finished
        self.bar: Any = _tqdm_bar(total=total, unit="match") if enabled and sys.stderr.isatty() else None

    def report(self, finished: list[tuple[int, int]]) -> None:
        """Count ``[(pairing, winner side or -1), ...]`` and move the bar."""
        for pairing, winner in finished:
            self.done[pairing] += 1
            if winner >= 0:
                self.wins[pairing, min(winner, 1)] += 1  # sides 1, 2 of a field are B
        if self.bar is None:
            return
        self.bar.set_postfix_str(self._estimate(), refresh=False)
        self.bar.update(len(finished))

    def _estimate(self) -> str:
        if self.wins.shape[0] > 1:
            return f"pairings complete {int((self.done == self.matches_per_pairing).sum())}/{self.done.size}"
        decided = int(self.wins[0].sum())
        if decided:
            return f"{self.side_a} wins {self.wins[0, 0] / decided:.1%} of {decided} decided"
        return f"{self.side_a} scores 50.0% (no match decided yet)"

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class GauntletProgressBar:
    """A bar over the gauntlet's matches, started at the first report (which brings the total)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.bar: Any = None

    def update(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self.bar is None:
            self.bar = _tqdm_bar(total=total, unit="match", desc="gauntlet")
            if self.bar is None:
                self.enabled = False
                return
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
