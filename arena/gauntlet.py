"""The gauntlet: one side against every baseline, as opponent and as partner, worst case first.

A strength figure against one opponent says little (a policy can beat one baseline by exploiting
it and lose every match to another), so the trainer and ``pedro-eval --gauntlet`` measure a side
(the *subject*) against a list of baselines, each in two roles:

============  ===========================  ===============================================
role          lineup                       what it asks
============  ===========================  ===============================================
opponent      SUBJECT vs B                 does the subject beat B's team?
partner       SUBJECT+B vs B               does the subject win with B as its partner,
                                           against two of B (a stranger's conventions)?
============  ===========================  ===============================================

Every entry is a duplicate head to head (:mod:`arena.match`) on the same seed, so an entry equals
``evaluate(subject, baseline, pairs=..., seed=..., batch_size=...)``. In individual games (two or
three players) there are no partners: the entries are opponents only, and with three players each
is in the field format (the subject at one seat, the baseline at the two others, every deal
sequence once per seat rotation; parity 33.3%). Search agents are slow: their
entries get ``search_pairs`` pairs and small shards (``SEARCH_BATCH`` matches) that spread over the
workers. The trainer adds its most recent league snapshots as further entries.

The headline is the **worst** entry among the baseline opponents (league snapshots excluded): its
win rate over decided matches (the score, undecided as half, when none is decided). It is drawn
from the entries with at least ``HEADLINE_MIN_PAIRS`` pairs (rotation sets at three players), or,
where no entry of the role has that many, from those with the most: a two-pair entry is a hint and
never the headline beside entries of hundreds. The worst partner entry is reported beside it.
Tables list the worst first, then every entry from the lowest win rate up, with the bidding figures of both sides.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agents import AGENT_SPECS, AgentSpecError
from arena.match import build_agent
from arena.ratings import HeadToHead, config_dict, describe_config
from arena.shards import RunSettings, Shard, run_shards, shard_bounds
from arena.tables import format_percent
from pedro_env.config import PedroConfig

GAUNTLET_BASELINES = ("random", "rule:heuristic", "rule:cautious", "search:pimc", "search:full")
"""Every baseline agent the project ships (the default gauntlet)."""
ROLES = ("opponent", "partner")
HEADLINE_MIN_PAIRS = 20  # pairs an entry needs to be the headline (40 matches: an interval about +-15 points wide)
SEARCH_BATCH = 8  # matches per shard of a search entry: small, so a few pairs still split over the workers
FAST_BATCH = 1024  # matches per shard of the other entries (big batches amortise the engine's per-step cost)


def is_search(spec: str) -> bool:
    """Search agents cost seconds per match; they get fewer pairs and small shards."""
    return spec.strip().startswith("search:")


@dataclass(frozen=True)
class GauntletEntry:
    """One pairing of the gauntlet: the subject meets ``baseline`` in ``role``."""

    role: str  # "opponent" (SUBJECT vs B) or "partner" (SUBJECT+B vs B)
    baseline: str  # agent spec, or the name of an in-memory policy (a league snapshot)
    pairs: int
    batch_size: int
    league: int = 0  # 1 for the newest league snapshot, 2 for the one before...: reported, not in the headline

    @property
    def label(self) -> str:
        return f"{'vs' if self.role == 'opponent' else 'with'} {self.baseline}"

    @property
    def tag(self) -> str:
        """TensorBoard tag piece: ``vs_rule_cautious``, ``with_search_pimc``; league snapshots by recency,
        ``vs_league1`` (the newest), so the tags stay the same from one evaluation to the next."""
        name = f"league{self.league}" if self.league else self.baseline
        name = "".join(char if char.isalnum() or char in "-_." else "_" for char in name)
        return f"{'vs' if self.role == 'opponent' else 'with'}_{name}"

    def sides(self, subject: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        if self.role == "opponent":
            return (subject,), (self.baseline,)
        return (subject, self.baseline), (self.baseline,)


def gauntlet_entries(
    baselines: Sequence[str],
    pairs: int,
    search_pairs: int,
    partners: bool = True,
    league: Sequence[str] = (),
    partner_pairs: int | None = None,
    slow_subject: bool = False,
) -> list[GauntletEntry]:
    """Each baseline as opponent (and as partner), then each league name (newest first) the same way.

    Baseline opponents get ``pairs``; partner entries and league entries ``partner_pairs`` (default
    ``pairs``); search agents ``search_pairs`` in either role, and are left out when that is 0.
    Search entries play in small shards (``SEARCH_BATCH`` matches); with ``slow_subject`` (the agent
    measured is itself a search agent) every entry does, so the workers share every entry.
    """
    entries = []
    for names, is_league in ((baselines, False), (league, True)):
        for role in ROLES if partners else ROLES[:1]:
            for rank, name in enumerate(names, start=1):
                slow = is_search(name)
                if slow:
                    count = search_pairs
                elif role == "opponent" and not is_league:  # the entries of the headline
                    count = pairs
                else:
                    count = pairs if partner_pairs is None else partner_pairs
                if count > 0:
                    batch = SEARCH_BATCH if slow or slow_subject else FAST_BATCH
                    entries.append(GauntletEntry(role, name, count, batch, rank if is_league else 0))
    return entries


def entry_rate(head: HeadToHead) -> float:
    """The rate an entry is ranked by: the win rate over decided matches, or the score when none is decided."""
    return head.win_rate if head.decided else head.score_rate


@dataclass
class GauntletResult:
    """The subject's head to head against every entry (``heads[i]`` belongs to ``entries[i]``)."""

    subject: str
    config: PedroConfig
    seed: int
    entries: list[GauntletEntry]
    heads: list[HeadToHead]
    workers: int = 1
    elapsed_s: float = math.nan

    def baseline_entries(self, role: str) -> list[tuple[GauntletEntry, HeadToHead]]:
        """The baseline entries of ``role`` (league snapshots left out), in the order played."""
        pairs = zip(self.entries, self.heads)
        return [(entry, head) for entry, head in pairs if entry.role == role and not entry.league]

    def headline_pairs(self, role: str) -> int:
        """The pairs an entry of ``role`` needs to be its headline: ``HEADLINE_MIN_PAIRS``, or the most any has."""
        return min(HEADLINE_MIN_PAIRS, max((entry.pairs for entry, _ in self.baseline_entries(role)), default=0))

    def worst(self, role: str = "opponent") -> tuple[GauntletEntry, HeadToHead] | None:
        """The headline entry of ``role``: the lowest rate (ties: the lower interval end) among the baseline
        entries with ``headline_pairs(role)`` pairs or more; None if the role has no entry."""
        floor = self.headline_pairs(role)
        candidates = [(entry, head) for entry, head in self.baseline_entries(role) if entry.pairs >= floor]
        if not candidates:
            return None
        return min(candidates, key=lambda item: (entry_rate(item[1]), item[1].win_rate_ci[0]))

    def ordered(self) -> list[tuple[GauntletEntry, HeadToHead]]:
        """Baseline opponents, then partners, then league entries; each group from the lowest rate up."""

        def key(item: tuple[GauntletEntry, HeadToHead]) -> tuple[bool, int, float]:
            entry, head = item
            return entry.league > 0, ROLES.index(entry.role), entry_rate(head)

        return sorted(zip(self.entries, self.heads), key=key)

    def scalars(self) -> dict[str, float]:
        """``<tag>/<figure>`` for every entry, and ``worst/...`` (opponents) and ``worst_partner/...``."""
        out: dict[str, float] = {}
        for entry, head in zip(self.entries, self.heads):
            for name, value in head_scalars(head).items():
                out[f"{entry.tag}/{name}"] = value
        for prefix, role in (("worst", "opponent"), ("worst_partner", "partner")):
            found = self.worst(role)
            if found is not None:
                for name, value in head_scalars(found[1]).items():
                    out[f"{prefix}/{name}"] = value
        return out

    def to_dict(self, with_matches: bool = False) -> dict[str, Any]:
        def describe(found: tuple[GauntletEntry, HeadToHead] | None) -> dict[str, Any] | None:
            if found is None:
                return None
            entry, head = found
            return {"entry": entry.label, **head_scalars(head)}

        return {
            "kind": "gauntlet",
            "subject": self.subject,
            "config": config_dict(self.config),
            "seed": self.seed,
            "worst": describe(self.worst("opponent")),
            "worst_partner": describe(self.worst("partner")),
            "entries": [
                {
                    "role": entry.role,
                    "baseline": entry.baseline,
                    "league": bool(entry.league),
                    "pairs": entry.pairs,
                    "batch_size": entry.batch_size,
                    **head.to_dict(with_matches=with_matches),
                }
                for entry, head in self.ordered()
            ],
            "run": {"workers": self.workers, "elapsed_s": self.elapsed_s},
        }


def head_scalars(head: HeadToHead) -> dict[str, float]:
    """Win rate with its 95% interval, points per deal and side A's bidding figures of one head to head.

    ``contracts`` is the share of scored deals in which side A was the maker; ``bid_made_rate`` and
    ``avg_bid`` are over those deals (NaN when A never bid).
    """
    low, high = head.win_rate_ci
    a, b = head.sides
    scored = a.bids_won + b.bids_won
    return {
        "win_rate": float(entry_rate(head)),
        "win_rate_low": float(low),
        "win_rate_high": float(high),
        "points_per_deal": float(head.points_per_deal.value),
        "matches": float(head.matches),
        "contracts": a.bids_won / scored if scored else math.nan,
        "bid_made_rate": float(a.made_rate),
        "avg_bid": float(a.average_bid),
    }


ProgressCallback = Callable[[int, int], None]  # (matches finished so far, matches in all)


def run_gauntlet(
    subject: str,
    entries: Sequence[GauntletEntry],
    config: PedroConfig,
    seed: int = 0,
    workers: int = 1,
    policies: Sequence[tuple[str, bytes]] = (),
    progress: ProgressCallback | None = None,
    share: tuple[int, int] = (0, 1),
    gather: Callable[[Any], list[Any]] | None = None,
) -> GauntletResult:
    """Play every entry (shards of all entries share the workers, slowest first); see the module docstring.

    ``subject`` and the baselines are agent specs or names of ``policies`` (in-memory policies from
    :func:`agents.policy.policy_bytes`). Raises AgentSpecError for an unknown spec.

    Split over several processes (the ranks of a training job): ``share = (part, parts)`` plays every
    ``parts``-th shard from ``part`` on, and ``gather(own)`` returns every part's ``own`` results in part
    order, so each process assembles the whole result (the same as one process's: a shard's matches
    depend only on its pairs). ``progress`` counts this part's matches. Over 60 lines with this docstring:
    playing a part and putting the parts back in order read as one sequence.
    """
    check_entries(subject, entries, config, {name for name, _ in policies})
    shards = gauntlet_shards(subject, entries, config)
    part, parts = share
    positions = list(range(part, len(shards), parts))
    total = sum(shards[position].pairs * config.num_teams for position in positions)
    finished = 0

    def report(batch: list[tuple[int, int]]) -> None:
        nonlocal finished
        finished += len(batch)
        if progress is not None:
            progress(finished, total)

    settings = RunSettings(config, seed, FAST_BATCH, duplicate=True, policies=tuple(policies))
    started = time.perf_counter()
    own = run_shards([shards[position] for position in positions], settings, workers, report)
    if gather is None:
        shard_results = own
    else:
        played: list[Any] = [None] * len(shards)
        for index, results in enumerate(gather(own)):
            for position, shard_result in zip(range(index, len(shards), parts), results):
                played[position] = shard_result
        shard_results = played
    elapsed = time.perf_counter() - started
    by_entry: list[list[Any]] = [[] for _ in entries]
    for shard, results in sorted(zip(shards, shard_results), key=lambda item: (item[0].pairing, item[0].first_pair)):
        by_entry[shard.pairing].extend(results)
    heads = [
        HeadToHead(
            side_a="+".join(entry.sides(subject)[0]),
            side_b="+".join(entry.sides(subject)[1]),
            config=config,
            seed=seed,
            duplicate=True,
            pairs=entry.pairs,
            batch_size=entry.batch_size,
            results=by_entry[index],
            workers=workers,
        )
        for index, entry in enumerate(entries)
    ]
    return GauntletResult(subject, config, seed, list(entries), heads, workers, elapsed)


def check_entries(subject: str, entries: Sequence[GauntletEntry], config: PedroConfig, inline: set[str]) -> None:
    """Raise before any match: partner entries at a table without partners (ValueError), an empty or unknown
    spec among the subject and the baselines (AgentSpecError); names in ``inline`` are in-memory policies."""
    if config.num_teams == config.num_players and any(entry.role == "partner" for entry in entries):
        raise ValueError(
            f"the gauntlet's partner entries need partners: with num_players={config.num_players} every player is "
            "alone (leave them out: partners=False, pedro-eval --no-partners)"
        )
    for spec in {subject, *(entry.baseline for entry in entries)} - inline:
        if not spec.strip():
            raise AgentSpecError(f"empty agent spec in the gauntlet: allowed are {', '.join(AGENT_SPECS)}")
        build_agent(spec, config)


def gauntlet_shards(subject: str, entries: Sequence[GauntletEntry], config: PedroConfig) -> list[Shard]:
    """Every entry's pairs cut into shards of its batch size, the search entries' first, so the workers finish
    together (a shard's results do not depend on the order)."""
    shards = [
        Shard(index, entry.sides(subject), first, count, shard_index, entry.batch_size)
        for index, entry in enumerate(entries)
        for shard_index, (first, count) in enumerate(shard_bounds(entry.pairs, entry.batch_size, config.num_teams))
    ]
    shards.sort(key=lambda shard: not is_search(entries[shard.pairing].baseline))
    return shards


# ---------------------------------------------------------------- the table


def _bids(head: HeadToHead, side: int) -> str:
    stats = head.sides[side]
    scored = head.sides[0].bids_won + head.sides[1].bids_won
    share = stats.bids_won / scored if scored else math.nan
    average = "n/a" if not math.isfinite(stats.average_bid) else f"{stats.average_bid:.1f}"
    return f"{format_percent(share):>6} {format_percent(stats.made_rate):>6} {average:>4}"


def _cpu(head: HeadToHead) -> str:
    seconds = head.decision_cpu_s_per_match[0]
    return f"{seconds:>11.3g}" if math.isfinite(seconds) else f"{'n/a':>11}"


def format_gauntlet(result: GauntletResult) -> str:
    """The worst case first, then one row per entry (lowest rate first) with both sides' bidding figures."""
    lines = [
        f"gauntlet of {result.subject}: {len(result.entries)} entries, {gauntlet_format(result.config)}, "
        f"seed {result.seed}, {describe_config(result.config)}"
    ]
    for title, role in (("WORST as opponent", "opponent"), ("worst as partner", "partner")):
        found = result.worst(role)
        if found is not None:
            entry, head = found
            low, high = head.win_rate_ci
            floor = result.headline_pairs(role)
            among = (
                f" (of the entries with {floor} pairs or more)"
                if any(other.pairs < floor for other, _ in result.baseline_entries(role))
                else ""
            )
            lines.append(
                f"{title}: {entry.label}  {format_percent(entry_rate(head))} [{100 * low:.1f}, {100 * high:.1f}] "
                f"of {head.decided} decided, {head.points_per_deal.value:+.2f} points per deal{among}"
            )
    width = max(24, *(len(entry.label) + (12 if entry.league else 2) for entry in result.entries))
    lines.append("")
    lines.append(
        f"  {'entry':<{width}}{'pairs':>6}  {'win rate':>8} {'95%':<14}{'n':>6} {'pts/deal':>9}   "
        f"{'subject: contracts  made  bid':<31}{'baseline: contracts  made  bid':<32}{'CPU s/match'}"
    )
    for entry, head in result.ordered():
        low, high = head.win_rate_ci
        name = entry.label + ("  (league)" if entry.league else "")
        lines.append(
            f"  {name:<{width}}{entry.pairs:>6}  {format_percent(entry_rate(head)):>8} "
            f"{f'[{100 * low:.1f}, {100 * high:.1f}]':<14}{head.decided:>6} {head.points_per_deal.value:>+9.2f}   "
            f"{_bids(head, 0):<31}{_bids(head, 1):<32}{_cpu(head)}"
        )
    lines.append(
        "  contracts: share of the scored deals the side was the maker; made: share of its contracts made; "
        "bid: its average winning bid; CPU s/match: the subject's side (its partner too in a partner entry) "
        "choosing actions, process CPU per match"
    )
    if math.isfinite(result.elapsed_s):
        matches = sum(head.matches for head in result.heads)
        lines.append(f"  {matches} matches in {result.elapsed_s:.1f} s, {result.workers} worker(s)")
    return "\n".join(lines)


def gauntlet_format(config: PedroConfig) -> str:
    """The format of every entry, in words: duplicate, or the field format with its parity."""
    if config.num_teams == 2:
        return "duplicate"
    parity = format_percent(1 / config.num_teams)
    return f"field format (the subject at one of {config.num_teams} seats, the baseline at the others; parity {parity})"


def has_partners(config: PedroConfig) -> bool:
    """Whether the games seat partners (four players): the gauntlet's partner entries need them."""
    return config.num_players > config.num_teams


def gauntlet_headline(result: GauntletResult) -> str:
    """The worst cases of an evaluation in a few words: ``worst 62% vs rule:cautious, partner 48% with ...``."""
    parts = []
    for title, role in (("worst", "opponent"), ("partner", "partner")):
        found = result.worst(role)
        if found is not None:
            entry, head = found
            parts.append(f"{title} {100 * entry_rate(head):.0f}% {entry.label}")
    return ", ".join(parts)
