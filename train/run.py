"""The loop of a training run: updates, TensorBoard scalars, evaluations, league snapshots and checkpoints.

TensorBoard tags (step = decisions): ``charts/SPS``, ``charts/learning_rate``, ``losses/policy_loss``,
``losses/value_loss``, ``losses/entropy``, ``losses/approx_kl``, ``losses/clipfrac``,
``losses/explained_variance`` (CleanRL's), ``game/avg_bid``, ``game/bid_made_rate``,
``game/points_per_deal``, ``game/match_win_rate`` (see :class:`train.ppo.GameStats`),
``eval/vs_<spec>/win_rate`` with ``win_rate_low`` / ``win_rate_high`` (its 95% Wilson interval) and
``eval/vs_<spec>/points_per_deal``; the resolved config is the text ``config``.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

from train.checkpoint import save_checkpoint
from train.cli import write_config, write_eval_table
from train.config import TrainConfig
from train.ppo import StopRequest, Trainer, checkpoint_path, tag_of


def config_markdown(config: TrainConfig) -> str:
    rows = "\n".join(f"|{key}|{value}|" for key, value in config.to_dict().items())
    return f"|key|value|\n|-|-|\n{rows}"


def run_training(
    config: TrainConfig,
    run_dir: Path,
    payload: dict[str, Any] | None = None,
    progress: bool = True,
    max_updates: int | None = None,
) -> Trainer:
    """Train until ``total_decisions`` (or ``max_updates`` more updates, or Ctrl-C), then checkpoint.

    The final evaluation table is written only when the run reaches ``total_decisions``.
    """
    from torch.utils.tensorboard import SummaryWriter

    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    trainer = Trainer(config)
    if payload is not None:
        trainer.load_state_dict(payload)
    write_config(config, run_dir)
    writer = SummaryWriter(str(run_dir), purge_step=trainer.decisions if payload is not None else None)
    if payload is None:
        writer.add_text("config", config_markdown(config), 0)
    bar = _progress_bar(config, trainer, progress)
    session_start, session_decisions = time.perf_counter(), trainer.decisions
    report = _LineReport(progress)
    report(
        f"run {run_dir}: {'resumed at' if payload else 'starting at'} {trainer.decisions:,} of "
        f"{config.total_decisions:,} decisions on {trainer.device}"
    )

    updates_done = 0
    with StopRequest() as stop:
        while trainer.decisions < config.total_decisions:
            update_start = time.perf_counter()
            stats = trainer.train_step()
            trainer.elapsed_s += time.perf_counter() - update_start
            updates_done += 1
            sps = (trainer.decisions - session_decisions) / max(time.perf_counter() - session_start, 1e-9)
            if trainer.updates % config.log_interval == 0:
                _log_update(writer, trainer, stats, sps)
            if trainer.decisions >= trainer.next_eval:
                if trainer.decisions < config.total_decisions or not config.final_eval_pairs:
                    _log_eval(writer, trainer, trainer.evaluate(config.eval_pairs))
                # else the final evaluation below, with more pairs, is the one at this step
                while trainer.next_eval <= trainer.decisions:
                    trainer.next_eval += config.eval_interval
            if bar is not None:
                bar.update(trainer.decisions - bar.n)
                bar.set_postfix_str(_postfix(trainer, None))  # the bar shows decisions/s itself
            elif updates_done % 10 == 0:
                report(f"{trainer.decisions:,} decisions, {_postfix(trainer, sps)}")
            if trainer.decisions >= trainer.next_checkpoint:
                _checkpoint(trainer, run_dir, keep=config.keep_checkpoints)
                while trainer.next_checkpoint <= trainer.decisions:
                    trainer.next_checkpoint += config.checkpoint_interval
            if stop.requested or (max_updates is not None and updates_done >= max_updates):
                break
    if bar is not None:
        bar.close()
    path = _checkpoint(trainer, run_dir, keep=False)
    writer.flush()
    if trainer.decisions < config.total_decisions:
        report(
            f"stopped at {trainer.decisions:,} decisions; checkpoint {path}; continue with: "
            f"pedro-train --resume {run_dir}"
        )
        writer.close()
        return trainer
    if config.final_eval_pairs:
        report(
            f"final evaluation: {config.final_eval_pairs} duplicate pairs against {', '.join(config.eval_opponents)}"
        )
        results = trainer.evaluate(config.final_eval_pairs)
        _log_eval(writer, trainer, results)
        report(write_eval_table(results, run_dir, trainer.decisions))
    writer.close()
    report(f"done: {trainer.decisions:,} decisions in {trainer.elapsed_s:,.0f} s of training; checkpoint {path}")
    return trainer


def _checkpoint(trainer: Trainer, run_dir: Path, keep: bool) -> Path:
    payload = trainer.state_dict()
    path = save_checkpoint(payload, checkpoint_path(run_dir))
    if keep:
        save_checkpoint(payload, run_dir / f"checkpoint-{trainer.decisions}.pt")
    return path


def _log_update(writer: Any, trainer: Trainer, stats: dict[str, float], sps: float) -> None:
    step = trainer.decisions
    writer.add_scalar("charts/SPS", sps, step)
    writer.add_scalar("charts/learning_rate", stats.get("learning_rate", math.nan), step)
    for name in ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac", "explained_variance"):
        if name in stats and math.isfinite(stats[name]):
            writer.add_scalar(f"losses/{name}", stats[name], step)
    for tag, value in trainer.game_stats.scalars().items():
        writer.add_scalar(tag, value, step)
    trainer.game_stats.clear()


def _log_eval(writer: Any, trainer: Trainer, results: dict[str, Any]) -> None:
    for spec, values in trainer.latest_eval.items():
        for name in ("win_rate", "win_rate_low", "win_rate_high", "points_per_deal"):
            if math.isfinite(values[name]):
                writer.add_scalar(f"eval/vs_{tag_of(spec)}/{name}", values[name], trainer.decisions)
    writer.flush()


def _postfix(trainer: Trainer, sps: float | None) -> str:
    parts = [] if sps is None else [f"{sps:,.0f} dec/s"]
    for spec, values in trainer.latest_eval.items():
        parts.append(f"vs {spec} {100 * values['win_rate']:.0f}%")
    return ", ".join(parts)


def _progress_bar(config: TrainConfig, trainer: Trainer, enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=config.total_decisions, initial=trainer.decisions, unit="dec", unit_scale=True, smoothing=0.1)


class _LineReport:
    """Status lines: printed through tqdm's write (so they do not break the bar) or plainly."""

    def __init__(self, progress: bool) -> None:
        self.progress = progress

    def __call__(self, text: str) -> None:
        if self.progress:
            from tqdm.auto import tqdm

            tqdm.write(text)
        else:
            print(text, flush=True)
