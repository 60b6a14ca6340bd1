"""One agent's gauntlet in each of several rule sets: ``pedro-eval SUBJECT --gauntlet --rule-sets ...``.

A policy meant for every house rule (``pretrained``) is measured in each rule set against and beside the same
baselines, every rule set from the same seed. The result is a table with a row per rule set and a column per entry,
worst row first: the row whose worst opponent entry (:meth:`arena.gauntlet.GauntletResult.worst`) is lowest above
parity (50%, or 33.3% at three players, where the entries are in the field format and there are no partners).

A rule set is written as a ``rules_mix`` entry's name (docs/training.md): ``default``, or ``KEY=VALUE`` pieces joined
by ``,`` (``num_players=3,scoring=simple``), on top of the command's ``--set``. ``every`` stands for
:data:`EVERY_RULE_SETS`, the seventeen of docs/strength_by_rules.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from arena.gauntlet import GauntletEntry, GauntletResult, entry_rate, run_gauntlet
from arena.ratings import HeadToHead
from arena.tables import format_percent
from pedro_env.config import ConfigError, PedroConfig, make_config, parse_override

DEFAULT_RULES = "default"
EVERY = "every"
EVERY_RULE_SETS = (
    DEFAULT_RULES,
    "six_card=true",
    "refill=top",
    "refill=dealer_robs",
    "low=held",
    "scoring=simple",
    "min_bid=6,all_pass=redeal",
    "renege=penalty",
    "target_score=21",
    "target_score=100",
    "variant=sancho",
    "variant=dom",
    "variant=pitch",
    "num_players=3,scoring=simple",
    "num_players=2",
    "variant=sancho,six_card=true,scoring=simple",
    "num_players=3,scoring=simple,refill=dealer_robs,target_score=21",
)
"""``every``: the default, each single switch, the variants, three and two players and two mixes (17)."""
MAX_RULE_SETS = 64


@dataclass(frozen=True)
class RuleSet:
    """One row: its ``name`` as given (``default`` or ``KEY=VALUE,...``) and the games' config."""

    name: str
    config: PedroConfig


def read_rule_sets(texts: Sequence[str], overrides: dict[str, Any]) -> list[RuleSet]:
    """The ``--rule-sets`` texts (``every`` expanded) on top of the ``--set`` ``overrides``; ConfigError naming
    the rule set for a bad key, value or combination, a rule set given twice, or more than MAX_RULE_SETS."""
    names: list[str] = []
    for text in texts:
        for name in EVERY_RULE_SETS if text.strip() == EVERY else [text.strip()]:
            if name in names:
                raise ConfigError(f"--rule-sets: {name!r} is given twice")
            names.append(name)
    if len(names) > MAX_RULE_SETS:
        raise ConfigError(f"--rule-sets: {len(names)} rule sets; at most {MAX_RULE_SETS} in one run")
    return [RuleSet(name, _config(name, overrides)) for name in names]


def _config(name: str, overrides: dict[str, Any]) -> PedroConfig:
    pieces = [] if name == DEFAULT_RULES else name.split(",")
    try:
        changes = dict(parse_override(piece.strip()) for piece in pieces)
        return make_config(**{**overrides, **changes})
    except ConfigError as error:
        raise ConfigError(
            f"--rule-sets {name!r}: {error} (a rule set is {DEFAULT_RULES!r}, {EVERY!r} or KEY=VALUE pieces joined "
            "by ',', e.g. num_players=3,scoring=simple)"
        ) from None


@dataclass
class RuleSetsResult:
    """The subject's gauntlet in each rule set (``gauntlets[i]`` belongs to ``rule_sets[i]``), one seed for all."""

    subject: str
    seed: int
    rule_sets: list[RuleSet]
    gauntlets: list[GauntletResult]

    def ordered(self) -> list[tuple[RuleSet, GauntletResult]]:
        """Worst row first: the lowest worst-opponent rate less parity (rows without opponents last)."""
        return sorted(zip(self.rule_sets, self.gauntlets), key=lambda item: above_parity(item[1]))

    def columns(self) -> list[str]:
        """Every entry label, in the order the gauntlets play them (opponents, then partners)."""
        labels: list[str] = []
        for gauntlet in self.gauntlets:
            labels += [entry.label for entry in gauntlet.entries if entry.label not in labels]
        return sorted(labels, key=lambda label: label.startswith("with "))

    def to_dict(self, with_matches: bool = False) -> dict[str, Any]:
        return {
            "kind": "rule_sets",
            "subject": self.subject,
            "seed": self.seed,
            "rule_sets": [
                {"rules": rule_set.name, **gauntlet.to_dict(with_matches=with_matches)}
                for rule_set, gauntlet in self.ordered()
            ],
        }


def above_parity(gauntlet: GauntletResult) -> float:
    """The worst opponent entry's rate less parity (1 / teams); +inf without an opponent entry."""
    found = gauntlet.worst("opponent")
    return float("inf") if found is None else entry_rate(found[1]) - 1 / gauntlet.config.num_teams


ProgressCallback = Callable[[int, int], None]


def match_count(rule_set: RuleSet, entries: Sequence[GauntletEntry]) -> int:
    """The matches ``entries`` play under the rule set's config (a pair is one match per team)."""
    return sum(entry.pairs for entry in entries) * rule_set.config.num_teams


def run_rule_sets(
    subject: str,
    plans: Sequence[tuple[RuleSet, Sequence[GauntletEntry]]],
    seed: int,
    workers: int,
    progress: ProgressCallback | None = None,
) -> RuleSetsResult:
    """Play each rule set's entries under its rules, one rule set after another; ``progress`` counts every match."""
    total = sum(match_count(rule_set, entries) for rule_set, entries in plans)
    done_before = 0
    gauntlets = []
    for rule_set, entries in plans:

        def report(done: int, _of: int, offset: int = done_before) -> None:
            if progress is not None:
                progress(offset + done, total)

        gauntlets.append(run_gauntlet(subject, entries, rule_set.config, seed, workers, progress=report))
        done_before += match_count(rule_set, entries)
    return RuleSetsResult(subject, seed, [rule_set for rule_set, _ in plans], gauntlets)


# ---------------------------------------------------------------- tables and files


def entry_head(gauntlet: GauntletResult, label: str) -> HeadToHead | None:
    """The head to head of the baseline entry ``label`` (``vs B``, ``with B``), None if the gauntlet has none."""
    for entry, head in zip(gauntlet.entries, gauntlet.heads):
        if entry.label == label and not entry.league:
            return head
    return None


def _cell(gauntlet: GauntletResult, label: str, decided_note: Callable[[int], str]) -> str:
    """``'45.7% [40.9, 50.6]'`` (and ``decided_note(decided)`` where matches went undecided), ``'-'`` if absent."""
    head = entry_head(gauntlet, label)
    if head is None:
        return "-"
    low, high = head.win_rate_ci
    note = decided_note(head.decided) if head.decided < head.matches else ""
    return f"{format_percent(entry_rate(head))} [{100 * low:.1f}, {100 * high:.1f}]{note}"


def _parity_note(config: PedroConfig) -> str:
    """`` (parity 33.3%)`` where parity is not 50% (three players), else nothing."""
    return f" (parity {format_percent(1 / config.num_teams)})" if config.num_teams > 2 else ""


def row_name(rule_set: RuleSet) -> str:
    """The rule set's name, with its parity where that is not 50% (three players)."""
    return rule_set.name + _parity_note(rule_set.config)


def format_rule_sets(result: RuleSetsResult) -> str:
    """The table for a terminal: a row per rule set (worst first), a column per entry; ``*``: some undecided."""
    columns = result.columns()
    ordered = result.ordered()
    rows = [[row_name(rule_set)] + [_cell(g, label, lambda _: " *") for label in columns] for rule_set, g in ordered]
    header = ["rules (worst first)", *columns]
    widths = [max(len(row[i]) for row in [header, *rows]) + 2 for i in range(len(header))]
    lines = [f"gauntlets of {result.subject} in {len(rows)} rule sets, seed {result.seed}"]
    worst_set, worst = ordered[0]
    found = worst.worst("opponent")
    if found is not None:
        lines.append(f"WORST: {worst_set.name}  {found[0].label}  {_cell(worst, found[0].label, lambda n: '')}")
    lines.append("")
    lines += ["  " + "".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [header, *rows]]
    lines.append(
        "  win rates of decided matches with 95% Wilson intervals (*: some matches undecided at max_deals); "
        "the field format at three players"
    )
    return "\n".join(lines)


def rule_sets_markdown(result: RuleSetsResult) -> str:
    """The table as Markdown, docs/strength_by_rules.md's form: ``--set`` values in code, ``(N decided)``."""
    columns = result.columns()
    lines = [
        "| rules (`--set`) | "
        + " | ".join(f"{label.split(' ', 1)[0]} `{label.split(' ', 1)[1]}`" for label in columns)
        + " |",
        "|---" * (len(columns) + 1) + "|",
    ]
    for rule_set, gauntlet in result.ordered():
        name = "the default" if rule_set.name == DEFAULT_RULES else f"`{rule_set.name.replace(',', ' ')}`"
        name += _parity_note(rule_set.config)
        cells = [_cell(gauntlet, label, lambda decided: f" ({decided} decided)") for label in columns]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
