"""The loop of a training run: updates, TensorBoard scalars, evaluations, league snapshots and checkpoints.

TensorBoard tags (step = decisions): ``charts/SPS``, ``charts/learning_rate``, ``losses/policy_loss``,
``losses/value_loss``, ``losses/entropy``, ``losses/approx_kl``, ``losses/clipfrac``,
``losses/explained_variance`` (CleanRL's), ``game/avg_bid``, ``game/bid_made_rate``,
``game/points_per_deal``, ``game/match_win_rate`` and per group of games ``game/<group>/...``
(see :class:`train.stats.GameStats`), ``opponents/<member>/weight`` (the chance a new opponent game
meets it), and the gauntlet (:mod:`arena.gauntlet`): ``eval/worst/win_rate`` (the worst baseline
opponent) and ``eval/worst_partner/win_rate``, then per entry ``eval/vs_<spec>/...`` and
``eval/with_<spec>/...``: ``win_rate`` with ``win_rate_low`` / ``win_rate_high`` (its 95% Wilson
interval), ``points_per_deal``, and the policy's bidding table ``contracts``, ``bid_made_rate``,
``avg_bid``; the resolved config is the text ``config``. A run across rule sets (``rules_mix``) logs
``game/`` over all its games and each rule set's figures under its name: ``eval/<name>/...``,
``game/<name>/...``, ``opponents/<name>/<member>/weight``.
"""

from __future__ import annotations

import contextlib
import json
import math
import signal
import sys
import time
from pathlib import Path
from typing import Any

from agents.checkpoint import CheckpointError, latest_checkpoint, save_checkpoint
from agents.policy import check_resumable_layout
from arena.gauntlet import GauntletResult, is_search
from pedro_env.cli import atomic_output
from train.config import TrainConfig
from train.distributed import SINGLE, Exchange, Ranks
from train.rundir import RunLock, check_new_run_dir
from train.table_group import TableGroup
from train.trainer import Trainer

EVAL_REPORT_EVERY_S = 30.0  # without a progress bar, an evaluation reports its progress this often


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C ended a run with nothing lost: at an update boundary, its checkpoint written, or in its final
    evaluation, after its last checkpoint. The message says what was kept and how to continue."""


def config_markdown(config: TrainConfig) -> str:
    rows = "\n".join(f"|{key}|{value}|" for key, value in config.to_dict().items())
    return f"|key|value|\n|-|-|\n{rows}"


def run_training(
    config: TrainConfig,
    run_dir: Path,
    payload: dict[str, Any] | None = None,
    progress: bool = True,
    max_updates: int | None = None,
    from_start: bool = False,
    ranks: Ranks = SINGLE,
    exchange: Exchange | None = None,
) -> Trainer:
    """Train until ``total_decisions`` (or ``max_updates`` more updates, or Ctrl-C), then checkpoint.

    Ctrl-C or SIGTERM (``kill``, a job scheduler) stops at the next update boundary, writes the checkpoint and
    raises :class:`TrainingInterrupted`; so does Ctrl-C in the final evaluation (or in the last update, before
    it). The run owns ``run_dir`` meanwhile (:class:`train.rundir.RunLock`); a new run (no ``payload``) refuses
    a directory holding another run's files unless ``from_start`` clears those of one that left no
    checkpoint. The final evaluation table is written only when the run reaches ``total_decisions``.
    Several ranks (:mod:`train.distributed`) all call this; rank 0 alone owns and writes ``run_dir``.
    """
    # a bad device, config or init_from fails here, before any file; a resume reads its own weights
    if payload is not None:
        try:
            check_resumable_layout(payload, str(latest_checkpoint(run_dir)))
        except ValueError as error:
            raise CheckpointError(str(error)) from None
    trainer = Trainer(config, ranks=ranks, exchange=exchange, initial_weights=payload is None)
    if payload is not None:
        try:
            trainer.load_state_dict(payload)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, RuntimeError) as error:
            # a hand-edited or damaged checkpoint that still loads as a file
            detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise CheckpointError(
                f"checkpoint in {run_dir} does not fit its own config (edited or damaged): {detail}"
            ) from None
    progress = progress and sys.stderr.isatty() and ranks.main  # into a log file: plain lines, not a bar
    with RunLock(run_dir) if ranks.main else contextlib.nullcontext():
        if payload is None and ranks.main:
            check_new_run_dir(Path(run_dir), from_start)
        stopped = _train(trainer, Path(run_dir), payload is not None, progress, max_updates)
    # the ranks leave together: one that tears the process group down while rank 0 still writes its table
    # can abort in gloo's threads at exit (a rank that failed raised before this)
    trainer.exchange.barrier()
    if stopped:
        raise TrainingInterrupted(stopped)
    return trainer


class _NoWriter:
    """What the ranks other than 0 log to: nothing (rank 0 writes the run directory)."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


def _train(trainer: Trainer, run_dir: Path, resumed: bool, progress: bool, max_updates: int | None) -> str:
    """The run loop: update, log, evaluate and checkpoint on schedule until the decisions are done or a stop is
    asked for, then :func:`_finish`. One function so that the order of these events reads in one place. Returns
    what a stop that was asked for kept ("" when none was)."""
    config, ranks = trainer.config, trainer.ranks
    writer: Any = _NoWriter()
    if ranks.main:
        from torch.utils.tensorboard import SummaryWriter

        write_config(config, run_dir)
        # a resume drops the points a crashed session logged after its checkpoint (steps above it), and
        # keeps the checkpoint's own step: its update and evaluations were logged before it was saved
        writer = SummaryWriter(str(run_dir), purge_step=trainer.decisions + 1 if resumed else None)
        if not resumed:
            writer.add_text("config", config_markdown(config), 0)
    bar = _progress_bar(config, trainer, progress)
    session_start, session_decisions = time.perf_counter(), trainer.decisions
    report = _LineReport(progress, quiet=not ranks.main)
    where = f"{ranks.world_size} ranks ({trainer.device} on rank 0)" if ranks.distributed else str(trainer.device)
    report(
        f"run {run_dir}: {'resumed at' if resumed else 'starting at'} {trainer.decisions:,} of "
        f"{config.total_decisions:,} decisions on {where}"
    )

    updates_done, requested = 0, False
    with StopRequest(distributed=ranks.distributed) as stop:
        while trainer.decisions < config.total_decisions:
            update_start = time.perf_counter()
            stats = trainer.train_step()
            trainer.elapsed_s += time.perf_counter() - update_start
            updates_done += 1
            sps = (trainer.decisions - session_decisions) / max(time.perf_counter() - session_start, 1e-9)
            if trainer.updates % config.log_interval == 0:
                _log_update(writer, trainer, stats, sps, trainer.game_scalars())
            if trainer.evaluation_due():
                if trainer.decisions < config.total_decisions or not config.final_eval_pairs:
                    _evaluate(trainer, writer, report, progress, final=False)
                # else the final evaluation below, with more pairs, is the one at this step
            if bar is not None:
                bar.update(min(trainer.decisions, config.total_decisions) - bar.n)  # the last update overshoots
                bar.set_postfix_str(_postfix(trainer, None))  # the bar shows decisions/s itself
            elif updates_done % 10 == 0:
                report(f"{trainer.decisions:,} decisions, {_postfix(trainer, sps)}")
            if trainer.checkpoint_due():
                writer.flush()  # every point up to the checkpoint is on disk before it: a resume keeps them
                _checkpoint(trainer, run_dir, keep=config.keep_checkpoints)
            # the ranks stop together, at the same update (a Ctrl-C may reach them at different times)
            requested = trainer.exchange.any(stop.requested)
            if requested or (max_updates is not None and updates_done >= max_updates):
                break
    if bar is not None:
        bar.close()
    return _finish(trainer, writer, report, progress, run_dir, requested)


def _finish(trainer: Trainer, writer: Any, report: _LineReport, progress: bool, run_dir: Path, requested: bool) -> str:
    """The run loop's end: the last checkpoint, then the final evaluation when the decisions are done and no stop
    was asked for (``requested``). Returns what a stop that was asked for kept ("" when none was)."""
    config, ranks = trainer.config, trainer.ranks
    writer.flush()
    path = _checkpoint(trainer, run_dir, keep=False)
    resume = f"pedro-train --resume {run_dir}{f' --nproc {ranks.world_size}' if ranks.distributed else ''}"
    if trainer.decisions < config.total_decisions:
        kept = f"stopped at {trainer.decisions:,} decisions; checkpoint {path}; continue with: {resume}"
        writer.close()
        if requested:
            return f"interrupted: {kept}"
        report(kept)
        return ""
    if config.final_eval_pairs:
        unevaluated = (
            f"interrupted before the final evaluation; the checkpoint of {trainer.decisions:,} decisions is intact "
            f"in {path}; evaluate it with: {resume}"
        )
        if requested:  # Ctrl-C in the last update: the evaluation is not started
            writer.close()
            return unevaluated
        try:
            result = _evaluate(trainer, writer, report, progress, final=True)
        except KeyboardInterrupt:
            writer.close()
            return unevaluated
        if ranks.main:
            report(write_eval_table(result, run_dir, trainer.decisions))
    writer.close()
    report(f"done: {trainer.decisions:,} decisions in {trainer.elapsed_s:,.0f} s of training; checkpoint {path}")
    return ""


def _checkpoint(trainer: Trainer, run_dir: Path, keep: bool) -> Path:
    payload = trainer.state_dict()  # with several ranks a collective: each rank's own games go into it
    path = latest_checkpoint(run_dir)
    if not trainer.ranks.main:
        return path
    save_checkpoint(payload, path)
    if keep:
        save_checkpoint(payload, run_dir / f"checkpoint-{trainer.decisions}.pt")
    return path


def _log_update(
    writer: Any, trainer: Trainer, stats: dict[str, float], sps: float, game_scalars: dict[str, float]
) -> None:
    step = trainer.decisions
    writer.add_scalar("charts/SPS", sps, step)
    writer.add_scalar("charts/learning_rate", stats.get("learning_rate", math.nan), step)
    names = ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac", "explained_variance")
    names += ("bid_entropy", "teacher_loss", "teacher_agreement")
    for name in names:
        if name in stats and math.isfinite(stats[name]):
            writer.add_scalar(f"losses/{name}", stats[name], step)
    if "teacher_weight" in stats:
        writer.add_scalar("charts/teacher_weight", stats["teacher_weight"], step)
    for tag, value in game_scalars.items():
        writer.add_scalar(tag, value, step)
    trainer.clear_game_stats()
    for tag, share in trainer.opponent_shares().items():
        writer.add_scalar(tag, share, step)


def _evaluate(
    trainer: Trainer, writer: Any, report: _LineReport, progress: bool, final: bool
) -> list[tuple[str, GauntletResult]]:
    """Run the gauntlet (periodic or final pair counts) under each rule set evaluated, with a progress bar (or a
    line every half minute), log it, and report its headline; returns (rule set, result) of each, the name ``""``
    in a single-rules run."""
    config = trainer.config
    if final:
        pairs, partner_pairs, search_pairs = (
            config.final_eval_pairs,
            config.final_partner_pairs,
            config.final_search_pairs,
        )
    else:
        pairs, partner_pairs, search_pairs = config.eval_pairs, config.eval_partner_pairs, config.eval_search_pairs
    partners = config.eval_partners and partner_pairs > 0
    groups, mixed = trainer.evaluated_groups(final), len(trainer.groups) > 1
    report(
        f"{'final evaluation' if final else 'evaluation'} at {trainer.decisions:,} decisions: "
        f"{', '.join(config.eval_opponents)} as opponents ({pairs} pairs"
        f"{f', search agents {search_pairs}' if search_pairs and any(map(is_search, config.eval_opponents)) else ''})"
        f"{f' and partners ({partner_pairs} pairs)' if partners else ''}"
        f"{f', the {config.eval_league} newest league snapshots' if config.eval_league and partner_pairs else ''}"
        f"{f', under {len(groups)} rule sets (partners at 4 players)' if mixed else ''}"
    )
    results = []
    for group in groups:
        name = f"{group.name}: " if mixed else ""
        started = time.perf_counter()
        result = _evaluate_rule_set(trainer, group, (pairs, search_pairs, partner_pairs), report, progress, name)
        prefix = trainer.tag_prefix(group)
        for key, value in result.scalars().items():
            if math.isfinite(value):  # rank 0's writer; the others' do nothing
                writer.add_scalar(f"eval/{prefix}{key}", value, trainer.decisions)
        writer.flush()
        report(f"  {name}{trainer.headlines[group.name]} ({time.perf_counter() - started:.0f} s)")
        results.append((group.name if mixed else "", result))
    if mixed:
        report(f"  lowest: {trainer.latest_headline}")
    return results


def _evaluate_rule_set(
    trainer: Trainer, group: TableGroup, counts: tuple[int, int, int], report: _LineReport, progress: bool, name: str
) -> GauntletResult:
    """One rule set's gauntlet (``counts``: pairs, search pairs, partner pairs) with its progress bar or lines."""
    bar: Any = None
    last_line = time.monotonic()

    def on_progress(done: int, total: int) -> None:
        nonlocal bar, last_line
        if progress:
            from tqdm.auto import tqdm

            if bar is None:
                bar = tqdm(total=total, unit="match", desc=f"{name}evaluation", leave=False, position=1)
            bar.update(done - bar.n)
        elif time.monotonic() - last_line > EVAL_REPORT_EVERY_S or done == total:
            report(f"  {name}evaluation: {done:,} of {total:,} matches")
            last_line = time.monotonic()

    pairs, search_pairs, partner_pairs = counts
    try:
        return trainer.evaluate(pairs, search_pairs, partner_pairs=partner_pairs, progress=on_progress, group=group)
    finally:
        if bar is not None:
            bar.close()


def _postfix(trainer: Trainer, sps: float | None) -> str:
    parts = [] if sps is None else [f"{sps:,.0f} dec/s"]
    if trainer.latest_headline:
        parts.append(trainer.latest_headline)
    return ", ".join(parts)


def _progress_bar(config: TrainConfig, trainer: Trainer, enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=config.total_decisions, initial=trainer.decisions, unit="dec", unit_scale=True, smoothing=0.1)


class _LineReport:
    """Status lines: printed through tqdm's write (so they do not break the bar) or plainly (``quiet``: not at all,
    on the ranks other than 0)."""

    def __init__(self, progress: bool, quiet: bool = False) -> None:
        self.progress = progress
        self.quiet = quiet

    def __call__(self, text: str) -> None:
        if self.quiet:
            return
        if self.progress:
            from tqdm.auto import tqdm

            tqdm.write(text)
        else:
            print(text, flush=True)


def write_config(config: TrainConfig, run_dir: Path) -> Path:
    import yaml

    path = run_dir / "config.yaml"
    with atomic_output(path, "w") as handle:
        handle.write(yaml.safe_dump(config.to_dict(), sort_keys=False))
    return path


def write_eval_table(results: list[tuple[str, GauntletResult]], run_dir: Path, decisions: int) -> str:
    """eval.txt (the gauntlet table, worst case first, then every entry's full table) and eval.json (the
    summaries) in the run directory; returns the gauntlet table. ``results``: (rule set, gauntlet) of each rule set;
    a single-rules run's one is named ``""``; a mix gets one table per rule set, each titled with its name (the
    table's first line gives its rules), and eval.json a list ``rule_sets`` of them."""
    from arena.gauntlet import format_gauntlet
    from arena.tables import format_head_to_head

    def titled(name: str, text: str) -> str:
        return f"rules {name}\n\n{text}" if name else text

    table = "\n\n".join(titled(name, format_gauntlet(result)) for name, result in results)
    details = "\n\n".join(
        titled(name, "\n\n".join(format_head_to_head(head, timing=False) for _, head in result.ordered()))
        for name, result in results
    )
    with atomic_output(run_dir / "eval.txt", "w") as handle:
        handle.write(f"policy after {decisions:,} decisions\n\n{table}\n\n{details}\n")
    if len(results) == 1 and not results[0][0]:
        summary = results[0][1].to_dict()
    else:
        summary = {"rule_sets": [{"name": name, **result.to_dict()} for name, result in results]}
    document = {"decisions": decisions, "written": time.strftime("%Y-%m-%dT%H:%M:%S"), **summary}
    with atomic_output(run_dir / "eval.json", "w") as handle:  # last: a resume evaluates again until it is there
        handle.write(json.dumps(document, indent=2))
    return table


class StopRequest:
    """Ctrl-C handling: the first SIGINT or SIGTERM asks the run to stop at the next update boundary (and
    checkpoint); a second one interrupts at once (KeyboardInterrupt).

    With ``distributed`` later signals change nothing (torchrun passes a Ctrl-C on to its ranks as SIGINT or
    SIGTERM, and again to a rank that has not ended): the ranks agree on the boundary where they stop
    (:meth:`train.distributed.Exchange.any`) and checkpoint together.
    """

    def __init__(self, distributed: bool = False) -> None:
        self.requested = False
        self.distributed = distributed
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopRequest:
        for number in (signal.SIGINT, signal.SIGTERM):
            try:
                self._previous[number] = signal.signal(number, self._handle)
            except ValueError:  # not the main thread: no handler, Ctrl-C behaves as usual
                pass
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        self.requested = True
        if not self.distributed:
            for number in (signal.SIGINT, signal.SIGTERM):
                signal.signal(number, signal.default_int_handler)

    def __exit__(self, *exc: object) -> None:
        for number, previous in self._previous.items():
            if previous is not None:
                signal.signal(number, previous)
        self._previous = {}
