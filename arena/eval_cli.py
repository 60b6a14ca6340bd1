"""``pedro-eval`` (also ``python -m arena.eval_cli``): matches between agents from the command line.

    pedro-eval rule:heuristic random --matches 2000              # head to head, duplicate deals
    pedro-eval rule:heuristic+random random --pairs 500          # a team: first seat + partner
    pedro-eval rule:heuristic rule:cautious search:pimc --round-robin --matches 500 --workers 2
    pedro-eval random random --set target_score=21 max_deals=50 --out eval/rr --no-progress
    pedro-eval ckpt:runs/quickstart --gauntlet                   # against every baseline, worst first
    pedro-eval pretrained --gauntlet --rule-sets every           # ... in each of 17 rule sets: one table
    pedro-eval rule:heuristic rule:cautious --set num_players=3 scoring=simple   # the field format

Output: the table on stdout (:mod:`arena.tables`, :func:`arena.gauntlet.format_gauntlet`), then
``PREFIX.json`` (settings, summary, every match), ``PREFIX.csv`` (one row per pairing or gauntlet
entry; a round robin adds ``PREFIX-ratings.csv``, a gauntlet in several rule sets ``PREFIX.md``, its table in
Markdown) and ``PREFIX.png`` (needs matplotlib). A mistake
in the arguments, a count out of its range included (:data:`arena.evaluate.MAX_MATCHES` matches a run), is
one line on stderr and status 2, before any work. Every file is written whole or not at all (a temporary
file renamed over it): one that cannot be written after the work leaves the table on stdout, the files
before it as they were, one line on stderr and status 1. Ctrl-C is one line and status 130.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from agents import AGENT_SPECS, AgentSpecError
from arena.evaluate import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_MATCHES,
    MAX_MATCHES,
    MAX_WORKERS,
    EvaluationError,
    EvaluationInterrupted,
    check_round_robin,
    check_run_numbers,
    check_run_size,
    check_sides,
    evaluate,
    pairs_for,
    round_robin,
)
from arena.gauntlet import (
    GAUNTLET_BASELINES,
    GauntletEntry,
    GauntletResult,
    check_entries,
    format_gauntlet,
    gauntlet_entries,
    has_partners,
    is_search,
    run_gauntlet,
)
from arena.match import parse_side
from arena.plots import plot, plot_gauntlet, plot_rule_sets
from arena.progress import GauntletProgressBar
from arena.ratings import HeadToHead, Tournament
from arena.reports import (
    file_slug,
    gauntlet_csv,
    rule_sets_csv,
    rule_sets_markdown_file,
    save_replays,
    to_csv,
    to_json,
)
from arena.rule_sets import (
    DEFAULT_RULES,
    EVERY,
    EVERY_RULE_SETS,
    RuleSetsResult,
    format_rule_sets,
    match_count,
    read_rule_sets,
    run_rule_sets,
)
from arena.shards import shard_count
from arena.tables import format_table
from pedro_env.cli import (
    INTERRUPTED_STATUS,
    OneLineErrorParser,
    OutputPathError,
    add_rule_overrides,
    check_output_dir,
    check_output_prefix,
    quiet_on_broken_pipe,
    rule_config,
)
from pedro_env.config import ConfigError, PedroConfig

PROG = "pedro-eval"
DEFAULT_SEARCH_PAIRS = 30  # --gauntlet: pairs per search-agent entry (60 matches: a 95% interval within +-13 points)
DEFAULT_GAUNTLET_PAIRS = 200  # --gauntlet: pairs per other entry when neither --pairs nor --matches is given
USAGE_ERRORS = (AgentSpecError, ConfigError, EvaluationError, OutputPathError)

EPILOG = f"""agent specs: {", ".join(AGENT_SPECS)}; a side is a spec or SPEC+SPEC (first seat + partner).
With num_players=3 a head to head is in the field format: side A at one seat, side B at the two others, every
deal sequence played once per seat A takes (a rotation set); parity is 33.3%.

examples:
  pedro-eval rule:heuristic random --matches 2000            # head to head, duplicate deals
  pedro-eval rule:heuristic rule:cautious search:pimc --round-robin --matches 500
  pedro-eval ckpt:runs/quickstart/latest.pt rule:heuristic --pairs 1000 --workers 2
  pedro-eval ckpt:runs/quickstart+rule:heuristic rule:heuristic --pairs 500   # partnering a baseline
  pedro-eval rule:heuristic random --set target_score=21 variant=sancho --save-replays replays/
  pedro-eval pretrained --gauntlet --baselines rule:heuristic --rule-sets default six_card=true num_players=2
  pedro-eval search:pimc rule:heuristic --set num_players=3 scoring=simple --pairs 100 --batch-size 8"""


# ---------------------------------------------------------------- arguments


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog=PROG,
        description="Matches between Pedro agents in duplicate format (the field format with three players): a "
        "head-to-head table with 95% intervals, or a round robin with Bradley-Terry ratings; writes JSON, CSV and a "
        "PNG chart.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "sides", nargs="+", metavar="SIDE", help="agent spec or SPEC+SPEC; two, or more with --round-robin"
    )
    parser.add_argument("--round-robin", action="store_true", help="every pair of sides plays; ratings table")
    _add_gauntlet_arguments(parser)
    _add_run_arguments(parser)
    add_rule_overrides(parser)
    parser.add_argument(
        "--no-duplicate",
        dest="duplicate",
        action="store_false",
        help="play every deal sequence once (seats alternate between matches)",
    )
    parser.add_argument("--anchor", help="round robin: side whose rating is 0 (default: the first listed)")
    parser.add_argument(
        "--out", help="output prefix: writes PREFIX.json, PREFIX.csv, PREFIX.png (default eval/<time>-<sides>)"
    )
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    parser.add_argument(
        "--save-replays", metavar="DIR", help="write every match as a replay record DIR/<sides>-pair<P>-rot<R>.json"
    )
    return parser


def _add_gauntlet_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--gauntlet",
        action="store_true",
        help="one side against every baseline, as opponent and (four players) as partner; worst case first "
        "(arena/gauntlet.py)",
    )
    parser.add_argument(
        "--baselines",
        nargs="+",
        action="extend",
        metavar="SPEC",
        help=f"--gauntlet: the baselines met (default: {' '.join(GAUNTLET_BASELINES)})",
    )
    parser.add_argument(
        "--search-pairs",
        type=int,
        default=DEFAULT_SEARCH_PAIRS,
        help=f"--gauntlet: duplicate pairs per search-agent entry (default {DEFAULT_SEARCH_PAIRS}; 0 leaves them out)",
    )
    parser.add_argument(
        "--no-partners", dest="partners", action="store_false", help="--gauntlet: the baselines only as opponents"
    )
    parser.add_argument(
        "--rule-sets",
        nargs="+",
        action="extend",
        metavar="RULES",
        help=f"--gauntlet: play it in each of these rule sets ({DEFAULT_RULES!r}, KEY=VALUE pieces joined by ',', or "
        f"{EVERY!r}: the {len(EVERY_RULE_SETS)} of docs/strength_by_rules.md), on top of --set; one table, worst "
        "rule set first",
    )


def _add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """How many matches, from which seed, on how many processes and in batches of what size."""
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument(
        "--matches",
        type=int,
        help=f"matches per pairing (default {DEFAULT_MATCHES}; rounded up to whole duplicate pairs)",
    )
    budget.add_argument(
        "--pairs",
        type=int,
        help="duplicate pairs per pairing or gauntlet entry (two matches each; with three players rotation sets of "
        "three matches)",
    )
    parser.add_argument("--seed", type=int, default=0, help="match pair p uses deal seed SEED + p (default 0)")
    parser.add_argument(
        "--workers", type=int, default=0, help="worker processes (default 0: one per core, as the shards allow)"
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=DEFAULT_BATCH_SIZE,
        help=f"matches played at once per process (default {DEFAULT_BATCH_SIZE})",
    )


def default_prefix(labels: Sequence[str]) -> Path:
    """``eval/<date>-<time>-<sides>``: where the files go without ``--out``."""
    return Path("eval") / f"{datetime.now().strftime('%Y%m%d-%H%M%S')}-{file_slug('-vs-'.join(labels))}"


# ---------------------------------------------------------------- the command


@quiet_on_broken_pipe
def main(argv: Sequence[str] | None = None) -> int:
    """``pedro-eval``: returns 0; 2 with a message (no traceback) for bad specs, configs or arguments; 1 when a file
    cannot be written after the work; 130 on Ctrl-C (one line: how many matches were played)."""
    try:
        args = build_parser().parse_args(argv)
        explicit_workers = args.workers > 0
        if args.workers == 0:
            args.workers = min(os.cpu_count() or 1, MAX_WORKERS)
        if args.gauntlet:
            return _run_gauntlet_command(args)
        return _run_matches_command(args, explicit_workers)
    except EvaluationInterrupted as interrupt:
        print(f"{PROG}: interrupted ({interrupt}); no file written", file=sys.stderr)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
    return INTERRUPTED_STATUS


def _run_matches_command(args: argparse.Namespace, explicit_workers: bool) -> int:
    """A head to head, or a round robin: the table on stdout, then JSON, CSV, PNG (and replay records)."""
    try:
        if args.baselines or args.search_pairs != DEFAULT_SEARCH_PAIRS or not args.partners or args.rule_sets:
            raise EvaluationError("--baselines, --search-pairs, --no-partners and --rule-sets belong to --gauntlet")
        check_run_numbers(args.seed, args.workers, args.batch_size)
        config, _ = rule_config(args)
        if len(args.sides) < 2:
            raise EvaluationError("give at least two sides")
        if len(args.sides) > 2 and not args.round_robin:
            raise EvaluationError(f"{len(args.sides)} sides given: add --round-robin to play every pair of them")
        if args.round_robin:
            check_round_robin(config)
        pair_count = pairs_for(args.matches, args.pairs, config, args.duplicate)
        pairings = len(args.sides) * (len(args.sides) - 1) // 2
        matches = pairings * pair_count * (config.num_teams if args.duplicate else 1)
        check_run_size(args.seed, pair_count, matches, record=bool(args.save_replays))
        notes = check_sides([parse_side(text) for text in args.sides], config)  # first: a typo costs no directory
        suffixes = (".json", ".csv", ".png") + (("-ratings.csv",) if args.round_robin else ())
        prefix = check_output_prefix(args.out if args.out else default_prefix(args.sides), suffixes)
        if args.save_replays:
            check_output_dir(args.save_replays, "replay directory")
        if explicit_workers:
            _note_idle_workers(args, config, pair_count)
        print_notes(notes)
        result = _play(args, config)
    except USAGE_ERRORS as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2

    def write(written: list[Path]) -> None:
        written.append(to_json(result, _beside(prefix, ".json")))
        written += to_csv(result, _beside(prefix, ".csv"))
        _draw_chart(plot, result, _beside(prefix, ".png"), written)
        if args.save_replays:
            heads = result.head_to_heads if isinstance(result, Tournament) else [result]
            count = sum(len(save_replays(head, args.save_replays)) for head in heads)
            written.append(Path(f"{args.save_replays} ({count} replay records)"))

    return _write_and_report(format_table(result), write)


def _play(args: argparse.Namespace, config: PedroConfig) -> HeadToHead | Tournament:
    """The head to head, or with ``--round-robin`` every pairing."""
    common = dict(
        config=config,
        matches=args.matches,
        pairs=args.pairs,
        seed=args.seed,
        workers=args.workers,
        batch_size=args.batch_size,
        duplicate=args.duplicate,
        progress=args.progress,
        record=bool(args.save_replays),
    )
    if args.round_robin:
        return round_robin(args.sides, anchor=args.anchor if args.anchor is not None else 0, **common)
    if args.anchor is not None:
        raise EvaluationError("--anchor needs --round-robin")
    return evaluate(args.sides[0], args.sides[1], **common)


def _note_idle_workers(args: argparse.Namespace, config: PedroConfig, pair_count: int) -> None:
    """A note when ``--workers`` asks for more processes than the run has shards to give them."""
    pairings = len(args.sides) * (len(args.sides) - 1) // 2
    per_pair = config.num_teams if args.duplicate else 1
    shards = pairings * shard_count(pair_count, args.batch_size, per_pair)
    if args.workers > shards:
        print(
            f"{PROG}: note: the run splits into {shards} shard(s) of at most --batch-size {args.batch_size} "
            f"matches, so only {shards} worker(s) get work; a smaller --batch-size makes more shards",
            file=sys.stderr,
        )


def _run_gauntlet_command(args: argparse.Namespace) -> int:
    """``pedro-eval SIDE --gauntlet``: the gauntlet table on stdout, PREFIX.json, PREFIX.csv and PREFIX.png."""
    if args.rule_sets:
        return _run_rule_sets_command(args)
    try:
        _check_gauntlet_arguments(args)
        config, _ = rule_config(args)
        subject = args.sides[0]
        entries = _gauntlet_entries(args, config)
        total = sum(entry.pairs for entry in entries) * config.num_teams
        check_run_size(args.seed, max(entry.pairs for entry in entries), total)
        check_entries(subject, entries, config, set())  # first: a typo in a baseline costs no directory
        notes = check_sides([parse_side(subject)], config)
        prefix = check_output_prefix(
            args.out if args.out else default_prefix([subject, "gauntlet"]), (".json", ".csv", ".png")
        )
        print_notes(notes)
        result: GauntletResult = _with_progress(
            args,
            total,
            lambda progress: run_gauntlet(subject, entries, config, args.seed, args.workers, progress=progress),
        )
    except USAGE_ERRORS as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2

    def write(written: list[Path]) -> None:
        written.append(to_json(result, _beside(prefix, ".json")))
        written.append(gauntlet_csv(result, _beside(prefix, ".csv")))
        _draw_chart(plot_gauntlet, result, _beside(prefix, ".png"), written)

    return _write_and_report(format_gauntlet(result), write)


def _run_rule_sets_command(args: argparse.Namespace) -> int:
    """``pedro-eval SIDE --gauntlet --rule-sets ...``: the rules x entries table on stdout, PREFIX.json, PREFIX.csv,
    PREFIX.md (the table in Markdown) and PREFIX.png (a heat map)."""
    try:
        _check_gauntlet_arguments(args)
        _, overrides = rule_config(args)
        rule_sets = read_rule_sets(args.rule_sets, overrides)
        subject = args.sides[0]
        plans = [(rule_set, _gauntlet_entries(args, rule_set.config)) for rule_set in rule_sets]
        total = sum(match_count(rule_set, entries) for rule_set, entries in plans)
        check_run_size(args.seed, max(entry.pairs for _, entries in plans for entry in entries), total)
        for rule_set, entries in plans:
            check_entries(subject, entries, rule_set.config, set())
        notes = [note for rule_set in rule_sets for note in check_sides([parse_side(subject)], rule_set.config)]
        suffixes = (".json", ".csv", ".md", ".png")
        prefix = check_output_prefix(args.out if args.out else default_prefix([subject, "rule-sets"]), suffixes)
        print_notes(list(dict.fromkeys(notes)))
        result: RuleSetsResult = _with_progress(
            args,
            total,
            lambda progress: run_rule_sets(subject, plans, args.seed, args.workers, progress),
        )
    except USAGE_ERRORS as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2

    def write(written: list[Path]) -> None:
        written.append(to_json(result, _beside(prefix, ".json")))
        written.append(rule_sets_csv(result, _beside(prefix, ".csv")))
        written.append(rule_sets_markdown_file(result, _beside(prefix, ".md")))
        _draw_chart(plot_rule_sets, result, _beside(prefix, ".png"), written)

    return _write_and_report(format_rule_sets(result), write)


def _gauntlet_entries(args: argparse.Namespace, config: PedroConfig) -> list[GauntletEntry]:
    """The gauntlet's entries under ``config`` (partners only where it seats them); EvaluationError if none."""
    check_run_numbers(args.seed, args.workers, args.batch_size)
    subject = args.sides[0]
    if "+" in subject:
        raise EvaluationError(f"--gauntlet measures one agent: {subject!r} is a team (the gauntlet seats partners)")
    default_pairs = args.pairs if args.pairs is not None or args.matches else DEFAULT_GAUNTLET_PAIRS
    entries = gauntlet_entries(
        args.baselines or GAUNTLET_BASELINES,
        pairs_for(args.matches, default_pairs, config, True),
        args.search_pairs,
        args.partners and has_partners(config),  # individual games: opponent entries only
        slow_subject=is_search(subject),
    )
    if not entries:
        raise EvaluationError("the gauntlet has no entries (every baseline left out)")
    return entries


def _with_progress(args: argparse.Namespace, total: int, play: Callable[[Callable[[int, int], None]], Any]) -> Any:
    """``play(progress)`` with a progress bar over ``total`` matches; EvaluationInterrupted on Ctrl-C, with the
    matches played."""
    bar = GauntletProgressBar(args.progress)
    played = [0]

    def progress(done: int, of: int) -> None:
        played[0] = done
        bar.update(done, of)

    try:
        return play(progress)
    except KeyboardInterrupt:
        raise EvaluationInterrupted(played[0], total) from None
    finally:
        bar.close()


def _check_gauntlet_arguments(args: argparse.Namespace) -> None:
    """EvaluationError for a combination of arguments the gauntlet cannot take."""
    if len(args.sides) != 1:
        raise EvaluationError(f"--gauntlet takes one side (the subject), got {len(args.sides)}")
    if args.round_robin or args.anchor or args.save_replays or not args.duplicate:
        raise EvaluationError(
            "--gauntlet plays duplicate head to heads: no --round-robin, --anchor, --save-replays or --no-duplicate"
        )
    if not 0 <= args.search_pairs <= MAX_MATCHES:
        raise EvaluationError(f"--search-pairs must be >= 0 and <= {MAX_MATCHES}, got {args.search_pairs}")


# ---------------------------------------------------------------- output


def _beside(prefix: Path, suffix: str) -> Path:
    """``PREFIX<suffix>``: ``eval/x`` and ``.json`` give ``eval/x.json``."""
    return prefix.with_name(prefix.name + suffix)


def print_notes(notes: Sequence[str], prog: str = PROG) -> None:
    """Each note as ``PROG: note: ...`` on stderr."""
    for note in notes:
        print(f"{prog}: note: {note}", file=sys.stderr)


def _draw_chart(draw: Callable[[Any, Path], Path], result: Any, path: Path, written: list[Path]) -> None:
    """``draw(result, path)``, added to ``written``; without matplotlib a note instead of a chart."""
    try:
        written.append(draw(result, path))
    except ImportError:
        print(f"{PROG}: matplotlib is not installed; no chart (pip install 'pedro-rl[eval]')", file=sys.stderr)


def _write_and_report(table: str, write: Callable[[list[Path]], None]) -> int:
    """Write the files (``write`` adds each to the list it is given), then print the table and the files: 0.

    The files come first, so a reader that stops early (``| head``) loses nothing; main's quiet_on_broken_pipe ends
    the command then. A file that cannot be written (the disk filled up, say; each is written whole or not at all)
    or Ctrl-C still prints the table, then one line on stderr: status 1, or 130."""
    written: list[Path] = []
    try:
        write(written)
    except (OSError, OutputPathError) as error:
        problem = str(error) if isinstance(error, OutputPathError) else _cannot_write(error)
        return _report_unwritten(table, f"error: {problem}", written, 1)
    except KeyboardInterrupt:
        return _report_unwritten(table, "interrupted while writing the files", written, INTERRUPTED_STATUS)
    print(table)
    print("wrote " + ", ".join(str(path) for path in written))
    sys.stdout.flush()
    return 0


def _cannot_write(error: OSError) -> str:
    where = f" {error.filename}" if error.filename else ""
    return f"cannot write{where}: {error.strerror or error}"


def _report_unwritten(table: str, problem: str, written: list[Path], status: int) -> int:
    """The table on stdout, then ``PROG: PROBLEM; the table above is the result`` (and the files written before)."""
    print(table)
    sys.stdout.flush()
    before = f" (wrote {', '.join(str(path) for path in written)})" if written else ""
    print(f"{PROG}: {problem}; the table above is the result{before}", file=sys.stderr)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
