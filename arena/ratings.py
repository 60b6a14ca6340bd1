"""Statistics for evaluation: Wilson intervals, a paired ratio estimate, Bradley-Terry ratings on the Elo scale.

- :func:`wilson_interval`: the Wilson score interval of a binomial rate (good at rates near 0 or 1
  and small n, where the normal interval runs outside [0, 1]).
- :func:`paired_ratio`: a ratio of totals (score difference over deals) with the standard error of
  the linearised estimate over independent groups (duplicate pairs), so deal luck shared within a
  pair cancels before the spread is measured.
- :func:`bradley_terry`: maximum-likelihood Bradley-Terry strengths from a matrix of wins, with
  standard errors from the inverse Fisher information, on the Elo scale
  (P(i beats j) = 1 / (1 + 10 ** ((R_j - R_i) / 400))), one side anchored at 0.

On top of them, the summaries of match results that the harness reports: :class:`HeadToHead` (one
pairing of sides: win rate, score, points per deal, per-side bidding figures) and
:class:`Tournament` (a round robin: its head-to-heads, score matrix and ratings).

The intervals treat matches as independent. In duplicate the two matches of a pair share their
deals, and their outcomes are typically anti-correlated (whoever holds the good cards tends to win
each; measured correlations -0.05 to 0), which makes the Wilson and Bradley-Terry intervals
slightly conservative. Points per deal avoids the question by measuring its spread over whole
pairs, and the JSON also gives the score's standard error over pairs (``score_rate_paired_se``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from functools import cached_property
from typing import Any

import numpy as np

from arena.match import MatchResult
from pedro_env.config import PedroConfig

Z95 = 1.959963984540054  # two-sided 95% normal quantile
ELO_PER_NATURAL = 400.0 / math.log(10.0)  # Elo points per unit of Bradley-Terry log-strength


def wilson_interval(successes: float, trials: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval (low, high) of the rate ``successes / trials``; (0, 1) when ``trials`` is 0.

    ``successes`` may be fractional (draws counted as half a win); the interval is then approximate.
    """
    if trials <= 0:
        return 0.0, 1.0
    rate = successes / trials
    z2 = z * z
    denominator = 1.0 + z2 / trials
    centre = (rate + z2 / (2.0 * trials)) / denominator
    half_width = z * math.sqrt(max(rate * (1.0 - rate), 0.0) / trials + z2 / (4.0 * trials * trials)) / denominator
    low = 0.0 if successes <= 0 else max(0.0, centre - half_width)
    high = 1.0 if successes >= trials else min(1.0, centre + half_width)  # exact at the ends despite rounding
    return low, high


@dataclass(frozen=True)
class RatioEstimate:
    """``sum(numerators) / sum(denominators)`` over groups, with its standard error and 95% interval."""

    value: float
    se: float
    low: float
    high: float
    groups: int


def paired_ratio(numerators: np.ndarray, denominators: np.ndarray, z: float = Z95) -> RatioEstimate:
    """Ratio of totals over independent groups, e.g. (G,) score differences and (G,) deals per duplicate pair.

    The standard error is that of the linearised (delta-method) ratio estimator: the sample standard
    deviation of ``(x_g - R d_g) / mean(d)`` over the G groups, divided by sqrt(G). NaN with fewer
    than two groups.
    """
    x = np.asarray(numerators, dtype=np.float64)
    d = np.asarray(denominators, dtype=np.float64)
    groups = int(x.size)
    if groups == 0 or d.sum() <= 0:
        return RatioEstimate(math.nan, math.nan, math.nan, math.nan, groups)
    value = float(x.sum() / d.sum())
    if groups < 2:
        return RatioEstimate(value, math.nan, math.nan, math.nan, groups)
    residuals = (x - value * d) / d.mean()
    se = float(residuals.std(ddof=1) / math.sqrt(groups))
    return RatioEstimate(value, se, value - z * se, value + z * se, groups)


@dataclass(frozen=True)
class Ratings:
    """Bradley-Terry ratings on the Elo scale, index = side; ``anchor`` is fixed at 0 (its se is 0)."""

    elo: np.ndarray  # (K,) float64: rating of each side, Elo points, anchor = 0
    se: np.ndarray  # (K,) float64: standard error of each rating (relative to the anchor)
    covariance: np.ndarray  # (K, K) float64: covariance of the ratings, Elo points squared (anchor row/col 0)
    anchor: int
    log_likelihood: float

    def interval(self, side: int, z: float = Z95) -> tuple[float, float]:
        """95% normal interval of one side's rating."""
        return float(self.elo[side] - z * self.se[side]), float(self.elo[side] + z * self.se[side])

    def expected_score(self, i: int, j: int) -> float:
        """Model probability that side i beats side j."""
        return 1.0 / (1.0 + 10.0 ** ((self.elo[j] - self.elo[i]) / 400.0))


def bradley_terry(wins: np.ndarray, anchor: int = 0, prior_draws: float = 0.5, tolerance: float = 1e-10) -> Ratings:
    """Maximum-likelihood Bradley-Terry ratings from a (K, K) matrix of wins (``wins[i, j]``: i's wins over j).

    Draws and undecided matches go in as half a win each way. ``prior_draws`` adds that many virtual
    draws to every pair of sides that met, so a side that won every match still gets a finite rating
    (with hundreds of matches per pair it moves the others by a fraction of their standard error).
    Fitted by Newton's method on the log-strengths with ``anchor`` fixed at 0; standard errors from
    the inverse observed information. Raises ValueError when the sides that met do not connect.
    """
    w = np.asarray(wins, dtype=np.float64)
    k = w.shape[0]
    if w.shape != (k, k) or k < 2:
        raise ValueError(f"wins must be a square matrix over at least two sides, got shape {w.shape}")
    if not 0 <= anchor < k:
        raise ValueError(f"anchor {anchor} is not a side index 0..{k - 1}")
    met = (w + w.T) > 0
    np.fill_diagonal(met, False)
    w = w + np.where(met, prior_draws / 2.0, 0.0)
    np.fill_diagonal(w, 0.0)
    games = w + w.T
    if not _connected(games > 0):
        raise ValueError("the sides' results do not connect them all: ratings would be undetermined")
    free = np.array([i for i in range(k) if i != anchor])
    theta = np.zeros(k)

    def log_likelihood(t: np.ndarray) -> float:
        diff = t[:, None] - t[None, :]
        return float(-(w * np.logaddexp(0.0, -diff)).sum())

    current = log_likelihood(theta)
    for _ in range(200):
        p = 1.0 / (1.0 + np.exp(-(theta[:, None] - theta[None, :])))  # p[i, j] = P(i beats j)
        gradient = (w - games * p).sum(axis=1)
        information = games * p * (1.0 - p)  # off-diagonal: -d2/dti dtj; diagonal from row sums
        hessian = np.diag(information.sum(axis=1)) - information  # the observed information (positive definite)
        step = np.linalg.solve(hessian[np.ix_(free, free)], gradient[free])
        scale = 1.0
        while True:  # Newton with step halving: the log-likelihood is concave, halving always ends
            candidate = theta.copy()
            candidate[free] += scale * step
            value = log_likelihood(candidate)
            if value >= current - 1e-12 or scale < 1e-6:
                break
            scale /= 2.0
        theta, current = candidate, value
        if np.abs(scale * step).max() < tolerance:
            break
    p = 1.0 / (1.0 + np.exp(-(theta[:, None] - theta[None, :])))
    information = games * p * (1.0 - p)
    hessian = np.diag(information.sum(axis=1)) - information
    covariance = np.zeros((k, k))
    covariance[np.ix_(free, free)] = np.linalg.inv(hessian[np.ix_(free, free)]) * ELO_PER_NATURAL**2
    return Ratings(
        elo=theta * ELO_PER_NATURAL,
        se=np.sqrt(np.diag(covariance)),
        covariance=covariance,
        anchor=anchor,
        log_likelihood=current,
    )


def _connected(adjacent: np.ndarray) -> bool:
    """Whether the undirected graph of a (K, K) bool adjacency matrix is connected."""
    reached = {0}
    frontier = [0]
    while frontier:
        node = frontier.pop()
        for other in np.flatnonzero(adjacent[node]):
            if int(other) not in reached:
                reached.add(int(other))
                frontier.append(int(other))
    return len(reached) == adjacent.shape[0]


# ---------------------------------------------------------------- summaries of match results


def config_dict(config: PedroConfig) -> dict[str, Any]:
    """Every field of a config, by name (JSON-ready)."""
    return {item.name: getattr(config, item.name) for item in fields(PedroConfig)}


@dataclass(frozen=True)
class SideStats:
    """Pooled statistics of one side over all matches of a pairing."""

    side: str
    wins: int
    bids_won: int  # deals in which the side was the maker
    bids_made: int
    bid_total: int
    opponent_bids: int  # deals in which the other side was the maker
    sets: int  # of those, the other side was set
    points_taken: int
    score_total: int

    @property
    def made_rate(self) -> float:
        return self.bids_made / self.bids_won if self.bids_won else math.nan

    @property
    def set_rate(self) -> float:
        return self.sets / self.opponent_bids if self.opponent_bids else math.nan

    @property
    def average_bid(self) -> float:
        return self.bid_total / self.bids_won if self.bids_won else math.nan

    def to_dict(self) -> dict[str, Any]:
        made_low, made_high = wilson_interval(self.bids_made, self.bids_won)
        set_low, set_high = wilson_interval(self.sets, self.opponent_bids)
        return {
            "side": self.side,
            "wins": self.wins,
            "bids_won": self.bids_won,
            "bids_made": self.bids_made,
            "made_rate": _finite(self.made_rate),
            "made_rate_ci95": [made_low, made_high],
            "opponent_bids": self.opponent_bids,
            "sets": self.sets,
            "set_rate": _finite(self.set_rate),
            "set_rate_ci95": [set_low, set_high],
            "average_bid": _finite(self.average_bid),
            "points_taken": self.points_taken,
            "score_total": self.score_total,
        }


@dataclass
class HeadToHead:
    """All matches between side A (``side_a``, side 0) and side B, and their summary statistics.

    With two teams (four players in partnerships, or two players) every match is A against B, in duplicate
    (:attr:`format` ``"duplicate"``). With three players it is the *field format*: A at one seat, B at each
    other seat (sides 1 .. T-1 of every :class:`MatchResult`), every deal sequence played once per seat
    rotation (a *rotation set*, :attr:`pairs`); B's figures are pooled over its seats, A's rates compare with
    :attr:`parity` (1/T), and points per deal are A's score change less the field's mean.
    """

    side_a: str
    side_b: str
    config: PedroConfig
    seed: int
    duplicate: bool
    pairs: int
    batch_size: int
    results: list[MatchResult]
    workers: int = 1
    elapsed_s: float = math.nan

    @property
    def matches(self) -> int:
        return len(self.results)

    @property
    def seats(self) -> int:
        """Sides in every match: one per team (2, or 3 with three players)."""
        return self.config.num_teams

    @property
    def format(self) -> str:
        """``"duplicate"`` (two teams), ``"field"`` (A against B at every other seat) or ``"single"`` (no
        duplicate: every deal sequence once)."""
        if not self.duplicate:
            return "single"
        return "duplicate" if self.seats == 2 else "field"

    @property
    def parity(self) -> float:
        """A's share of the match wins when A is as strong as B: 1 / seats."""
        return 1.0 / self.seats

    @cached_property
    def sides(self) -> tuple[SideStats, SideStats]:
        """A's figures, then B's pooled over B's seats (the field's with three players)."""
        field = list(range(1, self.seats))
        stats = []
        for own, other in (([0], field), (field, [0])):

            def total(name: str, seats: list[int]) -> int:
                return sum(sum(getattr(match, name)[seat] for seat in seats) for match in self.results)

            bids_won = total("bids_won", own)
            stats.append(
                SideStats(
                    side=self.side_a if own == [0] else self.side_b,
                    wins=sum(match.winner in own for match in self.results),
                    bids_won=bids_won,
                    bids_made=total("bids_made", own),
                    bid_total=total("bid_total", own),
                    opponent_bids=total("bids_won", other),
                    sets=total("bids_won", other) - total("bids_made", other),
                    points_taken=total("points_taken", own),
                    score_total=total("scores", own),
                )
            )
        return stats[0], stats[1]

    @property
    def decided(self) -> int:
        return self.sides[0].wins + self.sides[1].wins

    @property
    def undecided(self) -> int:
        return self.matches - self.decided

    @property
    def truncated(self) -> int:
        return sum(match.truncated for match in self.results)

    @property
    def deals(self) -> int:
        return sum(match.deals for match in self.results)

    @property
    def win_rate(self) -> float:
        """A's wins over decided matches."""
        return self.sides[0].wins / self.decided if self.decided else math.nan

    @property
    def win_rate_ci(self) -> tuple[float, float]:
        return wilson_interval(self.sides[0].wins, self.decided)

    @property
    def score_rate(self) -> float:
        """A's wins plus its parity share (half with two sides) of the undecided matches, over all matches."""
        return (self.sides[0].wins + self.parity * self.undecided) / self.matches if self.matches else math.nan

    @property
    def score_rate_ci(self) -> tuple[float, float]:
        return wilson_interval(self.sides[0].wins + self.parity * self.undecided, self.matches)

    @property
    def score_rate_paired_se(self) -> float:
        """Standard error of A's score (undecided = parity) from its spread over duplicate pairs or rotation sets
        (NaN below 2 of them)."""
        by_pair: dict[int, list[float]] = {}
        for match in self.results:
            score = 1.0 if match.winner == 0 else self.parity if match.winner < 0 else 0.0
            by_pair.setdefault(match.pair, []).append(score)
        matches_per_pair = np.array([len(scores) for scores in by_pair.values()], dtype=np.float64)
        score_per_pair = np.array([sum(scores) for scores in by_pair.values()], dtype=np.float64)
        return paired_ratio(score_per_pair, matches_per_pair).se

    @cached_property
    def points_per_deal(self) -> RatioEstimate:
        """A's score change minus B's (the mean of B's seats) per deal, with the paired standard error over
        duplicate pairs or rotation sets."""
        pair_ids = np.array([match.pair for match in self.results], dtype=np.int64)
        margins = np.array(
            [match.scores[0] - float(np.mean(match.scores[1:])) for match in self.results], dtype=np.float64
        )
        deals = np.array([match.deals for match in self.results], dtype=np.float64)
        groups, group_of_match = np.unique(pair_ids, return_inverse=True)
        return paired_ratio(
            np.bincount(group_of_match, weights=margins, minlength=groups.size),
            np.bincount(group_of_match, weights=deals, minlength=groups.size),
        )

    @property
    def matches_per_s(self) -> float:
        return self.matches / self.elapsed_s if self.elapsed_s > 0 else math.nan

    @property
    def decision_cpu_s_per_match(self) -> tuple[float, float]:
        """Each side's CPU seconds choosing actions, per match (its agents' calls, B's over all its seats; NaN
        without results)."""
        timed = [match.decision_cpu_s for match in self.results if len(match.decision_cpu_s) == self.seats]
        if not timed:
            return math.nan, math.nan
        totals = np.sum(timed, axis=0) / len(timed)
        return float(totals[0]), float(totals[1:].sum())

    def summary(self) -> dict[str, Any]:
        """Every reported statistic, JSON-ready (NaN -> None)."""
        ppd = self.points_per_deal
        return {
            "format": self.format,
            "seats": self.seats,
            "parity": self.parity,
            "matches": self.matches,
            "pairs": self.pairs,
            "decided": self.decided,
            "undecided": self.undecided,
            "truncated": self.truncated,
            "deals": self.deals,
            "win_rate": _finite(self.win_rate),
            "win_rate_ci95": list(self.win_rate_ci),
            "score_rate": _finite(self.score_rate),
            "score_rate_ci95": list(self.score_rate_ci),
            "score_rate_paired_se": _finite(self.score_rate_paired_se),
            "points_per_deal": _finite(ppd.value),
            "points_per_deal_se": _finite(ppd.se),
            "points_per_deal_ci95": [_finite(ppd.low), _finite(ppd.high)],
            "side_a": self.sides[0].to_dict(),
            "side_b": self.sides[1].to_dict(),
        }

    def to_dict(self, with_matches: bool = True) -> dict[str, Any]:
        document: dict[str, Any] = {
            "kind": "head_to_head",
            "side_a": self.side_a,
            "side_b": self.side_b,
            "config": config_dict(self.config),
            "seed": self.seed,
            "duplicate": self.duplicate,
            "batch_size": self.batch_size,
            "summary": self.summary(),
            "run": {
                "workers": self.workers,
                "elapsed_s": self.elapsed_s,
                "matches_per_s": _finite(self.matches_per_s),
                "decision_cpu_s_per_match": [_finite(value) for value in self.decision_cpu_s_per_match],
            },
        }
        if with_matches:
            document["results"] = [match.to_dict() for match in self.results]
        return document


@dataclass
class Tournament:
    """A round robin: one HeadToHead per pair of sides (i < j, in listing order) and ratings fitted to all."""

    sides: list[str]
    config: PedroConfig
    seed: int
    duplicate: bool
    pairs: int
    batch_size: int
    head_to_heads: list[HeadToHead]
    anchor: int = 0
    workers: int = 1
    elapsed_s: float = math.nan

    def pairing(self, i: int, j: int) -> HeadToHead:
        """The HeadToHead between sides i and j (either order; side A is the lower index)."""
        low, high = min(i, j), max(i, j)
        return next(h for h in self.head_to_heads if (h.side_a, h.side_b) == (self.sides[low], self.sides[high]))

    @cached_property
    def wins(self) -> np.ndarray:
        """(K, K) float64: wins[i, j] = i's wins over j plus half the undecided matches between them."""
        k = len(self.sides)
        wins = np.zeros((k, k))
        for i in range(k):
            for j in range(i + 1, k):
                head = self.pairing(i, j)
                wins[i, j] = head.sides[0].wins + 0.5 * head.undecided
                wins[j, i] = head.sides[1].wins + 0.5 * head.undecided
        return wins

    @cached_property
    def ratings(self) -> Ratings:
        return bradley_terry(self.wins, anchor=self.anchor)

    @property
    def score_matrix(self) -> np.ndarray:
        """(K, K) float64: i's score rate against j (undecided as half), NaN on the diagonal."""
        totals = self.wins + self.wins.T
        with np.errstate(invalid="ignore", divide="ignore"):
            matrix = self.wins / totals
        np.fill_diagonal(matrix, np.nan)
        return matrix

    @property
    def matches(self) -> int:
        return sum(head.matches for head in self.head_to_heads)

    def ranking(self) -> list[int]:
        """Side indices from the highest rating down (ties by listing order)."""
        return sorted(range(len(self.sides)), key=lambda index: (-self.ratings.elo[index], index))

    def to_dict(self, with_matches: bool = True) -> dict[str, Any]:
        ratings = self.ratings
        return {
            "kind": "round_robin",
            "sides": self.sides,
            "config": config_dict(self.config),
            "seed": self.seed,
            "duplicate": self.duplicate,
            "batch_size": self.batch_size,
            "pairs_per_pairing": self.pairs,
            "ratings": {
                "model": "Bradley-Terry maximum likelihood, Elo scale (400 log10), undecided = half a win, "
                "one virtual draw per pairing; se from the inverse Fisher information",
                "anchor": self.sides[self.anchor],
                "table": [
                    {
                        "rank": rank + 1,
                        "side": self.sides[index],
                        "elo": float(ratings.elo[index]),
                        "se": float(ratings.se[index]),
                        "ci95": list(ratings.interval(index)),
                    }
                    for rank, index in enumerate(self.ranking())
                ],
            },
            "score_matrix": [[_finite(value) for value in row] for row in self.score_matrix],
            "pairings": [head.to_dict(with_matches=with_matches) for head in self.head_to_heads],
            "run": {"workers": self.workers, "elapsed_s": self.elapsed_s, "matches": self.matches},
        }


def describe_config(config: PedroConfig) -> str:
    """The config keys that differ from the default rules, as KEY=VALUE (or 'default rules')."""
    default = PedroConfig()
    changed = [
        f"{item.name}={getattr(config, item.name)}"
        for item in fields(PedroConfig)
        if getattr(config, item.name) != getattr(default, item.name)
    ]
    return " ".join(changed) if changed else "default rules"


def _finite(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)
