"""``pedro-train``: self-play PPO runs from YAML configs, with TensorBoard logs, checkpoints and evaluation.

A run directory (``runs/<name>/``) holds::

    config.yaml          the resolved config (every key, env rules included)
    events.out.tfevents.*  TensorBoard scalars and the config as text
    latest.pt            the checkpoint (rewritten atomically every checkpoint_interval decisions and at the end)
    checkpoint-<N>.pt    interval checkpoints kept with keep_checkpoints
    eval.txt, eval.json  the final evaluation table against each of eval_opponents (one per rule set of rules_mix)
    .lock                the owner's pid, host and start (train/rundir.py: one run per directory)

Ctrl-C (or SIGTERM: ``kill``, a job scheduler) stops at the next update boundary and writes the checkpoint;
``pedro-train --resume runs/<name>``
continues exactly where it stopped (a second Ctrl-C interrupts at once, losing the steps since the
last checkpoint; one in the final evaluation leaves it to the resume). A run that died before its first
checkpoint starts again from decision 0 only with ``--resume runs/<name> --from-start``. Mistakes end in
one line on stderr and status 2 (a checkpoint edited or damaged, an ``--export`` over a run's checkpoint
included); a failure to write mid-run (a full disk) in one line naming the file and the last checkpoint,
which is intact, status 1; Ctrl-C in one line saying what was kept, status 130.

Several processes: ``torchrun --nproc_per_node N -m train.cli CONFIG`` (any torchrun rendezvous,
multi-node included), or ``pedro-train CONFIG --nproc N`` for N ranks on this machine; rank 0 checks
the config and the run directory, the others take what it decided (train/distributed.py).
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from agents.checkpoint import CheckpointError, latest_checkpoint, load_checkpoint
from pedro_env.cli import (
    INTERRUPTED_STATUS,
    OneLineErrorParser,
    OutputPathError,
    one_line_on_interrupt,
    positive_seconds,
    quiet_on_broken_pipe,
)
from train.config import (
    TrainConfig,
    TrainConfigError,
    apply_overrides,
    config_reference,
    load_train_config,
    make_train_config,
)
from train.config_yaml import CONFIGS_DIR, shipped_configs
from train.distributed import (
    DEFAULT_TIMEOUT_S,
    MAX_TIMEOUT_S,
    Ranks,
    RanksError,
    interrupt_ranks,
    launch_command,
    launch_environment,
    ranks_from_environment,
)
from train.export import ExportRefused, checkpoint_config, checkpoint_decisions, export_policy
from train.rundir import check_new_run_dir, check_not_in_use

# keys a resumed run may change; the rest fix the run's structure or its exact continuation
RESUME_KEYS = (
    "total_decisions",
    "device",
    "precision",
    "torch_threads",
    "eval_interval",
    "eval_opponents",
    "eval_rules",
    "eval_partners",
    "eval_league",
    "eval_pairs",
    "eval_search_pairs",
    "eval_partner_pairs",
    "final_eval_pairs",
    "final_search_pairs",
    "final_partner_pairs",
    "eval_workers",
    "checkpoint_interval",
    "keep_checkpoints",
    "log_interval",
)

EXAMPLES = """examples:
  pedro-train ppo_selfplay                                   # the default run: a shipped config, by name
  pedro-train configs/ppo_selfplay.yaml                      # the same by its path, in a clone; or a file of your own
  pedro-train ppo_selfplay --set lr=1e-4 num_envs=2048 --run-name wide
  pedro-train smoke --set env.target_score=31                # rule options go under env.
  pedro-train --resume runs/wide                             # continue exactly where it stopped
  pedro-train --resume runs/wide --set total_decisions=200000000   # ... and run longer
  tensorboard --logdir runs
  pedro-eval ckpt:runs/wide/latest.pt rule:heuristic --matches 1000
  pedro-train --export runs/wide my_policy.pt                # the policy alone for ckpt:, and my_policy.onnx
  pedro-train ppo_selfplay --nproc 2                         # two ranks on this machine (torchrun, DDP)
  torchrun --nproc_per_node 2 -m train.cli ppo_selfplay --run-name ddp   # the same, by hand
"""


def timeout_seconds(text: str) -> float:
    """An argparse ``type`` for ``--dist-timeout``: a finite number of seconds > 0 and at most ``MAX_TIMEOUT_S``."""
    value = positive_seconds(text)
    if value > MAX_TIMEOUT_S:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_TIMEOUT_S:.0f} seconds (a week), got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog="pedro-train",
        description="Train a Pedro policy by self-play PPO (config keys: pedro-train --list-keys).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    shipped_folder = str(CONFIGS_DIR).replace("%", "%%")  # argparse formats help with %
    parser.add_argument(
        "config",
        nargs="?",
        help=f"a shipped config's name ({', '.join(shipped_configs())}; their files: {shipped_folder}) or a YAML "
        "file's path (a file of your own may start from a shipped one: base: ppo_selfplay)",
    )
    parser.add_argument(
        "--set",
        nargs="+",
        action="extend",
        default=[],
        metavar="KEY=VALUE",
        help="override config keys (env.KEY for rule keys, rules_mix[N].KEY for one key of a rules_mix entry)",
    )
    parser.add_argument("--run-name", help="run directory name under runs_dir (default: config stem + time)")
    parser.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR from its latest.pt")
    parser.add_argument(
        "--from-start",
        action="store_true",
        help="with --resume: start again from decision 0 a run that stopped before its first checkpoint",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (log lines instead)")
    parser.add_argument("--list-keys", action="store_true", help="print every config key, default and meaning")
    parser.add_argument(
        "--nproc",
        type=int,
        metavar="N",
        help="train with N ranks on this machine (torchrun --standalone --nproc_per_node N; one thread each)",
    )
    parser.add_argument(
        "--dist-timeout",
        type=timeout_seconds,
        default=DEFAULT_TIMEOUT_S,
        metavar="S",
        help=f"several ranks: seconds a rank waits for the others before it fails (default {DEFAULT_TIMEOUT_S:.0f})",
    )
    parser.add_argument(
        "--export",
        nargs=2,
        metavar=("CHECKPOINT", "OUT"),
        help="write the policy of CHECKPOINT (a run directory or .pt) alone to OUT, a small file ckpt:OUT loads, and "
        "as ONNX beside it (OUT with the suffix .onnx; docs/export.md)",
    )
    return parser


MAX_LOCAL_RANKS = 256  # --nproc: processes torchrun starts on this machine


@quiet_on_broken_pipe
@one_line_on_interrupt("pedro-train")
def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    try:
        ranks = ranks_from_environment()
        if args.nproc is not None and not 1 <= args.nproc <= MAX_LOCAL_RANKS:
            allowed = f"an int from 1 to {MAX_LOCAL_RANKS} (ranks on this machine)"
            raise RanksError(f"--nproc must be {allowed}, got {args.nproc}")
    except RanksError as error:
        print(f"pedro-train: error: {error}", file=sys.stderr)
        return 2
    if args.nproc is not None and args.nproc > 1 and not ranks.distributed:
        if args.list_keys or args.export:
            print("pedro-train: error: --nproc trains; it does not go with --list-keys or --export", file=sys.stderr)
            return 2
        try:  # the ranks' rank 0 checks again; a mistake found here is one line, before torchrun starts
            prepare_run(args, Ranks(world_size=args.nproc, local_world_size=args.nproc))
        except (TrainConfigError, CheckpointError, ValueError) as error:
            print(f"pedro-train: error: {error}", file=sys.stderr)
            return 2
        return _launch(args.nproc, _without_nproc(argv))
    if ranks.distributed:
        return _main_ranks(args, ranks)
    if args.list_keys:
        for key, default, allowed, meaning in config_reference():
            print(f"{key:22s} {default:38s} {meaning} Values: {allowed}.")
        return 0
    if args.export:
        return _export(*args.export)
    try:
        run_dir, config, payload = prepare_run(args)
    except (TrainConfigError, CheckpointError, ValueError) as error:
        print(f"pedro-train: error: {error}", file=sys.stderr)
        return 2
    from train.run import TrainingInterrupted, run_training

    try:
        run_training(config, run_dir, payload, progress=not args.no_progress, from_start=args.from_start)
    except TrainingInterrupted as stop:  # the checkpoint is written: the line says where and how to go on
        print(f"pedro-train: {stop}", file=sys.stderr)
        return INTERRUPTED_STATUS
    except KeyboardInterrupt:  # a second Ctrl-C, or one outside the loop: what the last checkpoint kept
        print(f"pedro-train: interrupted; {_last_checkpoint(run_dir)}", file=sys.stderr)
        return INTERRUPTED_STATUS
    except OutputPathError as error:  # a checkpoint or table could not be written (a full disk): it is as it was
        print(f"pedro-train: error: {error}; {_last_checkpoint(run_dir)}", file=sys.stderr)
        return 1
    except (TrainConfigError, CheckpointError, ValueError) as error:
        print(f"pedro-train: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # the disk filled up or the directory became read-only mid-run
        print(f"pedro-train: error: {_write_failure(error, run_dir)}", file=sys.stderr)
        return 1
    return 0


def _export(source: str, destination: str) -> int:
    """``pedro-train --export CHECKPOINT OUT``: a mistake is one line and status 2, a failure to write status 1."""
    try:
        written = export_policy(source, destination)
    except (ExportRefused, CheckpointError) as error:
        print(f"pedro-train: error: {error}", file=sys.stderr)
        return 2
    except OutputPathError as error:  # it says which file is as it was
        print(f"pedro-train: error: {error}", file=sys.stderr)
        return 1
    policy, graph = written
    print(f"wrote {policy} ({policy.stat().st_size / 1e6:.1f} MB): the policy of {source}; play it with ckpt:{policy}")
    if graph is None:
        print(f"no ONNX file: the onnx package is not installed (pip install -e '.[onnx]'), so {policy} is alone")
    else:
        print(f"wrote {graph} ({graph.stat().st_size / 1e6:.1f} MB): the same policy for any ONNX runtime")
    return 0


def _launch(nproc: int, argv: list[str]) -> int:
    """``pedro-train ... --nproc N``: the same command as N ranks under torchrun on this machine.

    torchrun runs in a session of its own, so a Ctrl-C at the terminal reaches this process alone, which passes
    it on to the ranks: they stop together at an update boundary and checkpoint, rank 0 says so in one line, and
    the command ends with status 130 (torchrun, signalled itself, would add its traceback). SIGTERM (``kill``, a
    job scheduler) does the same; a hangup goes to torchrun, which stops the ranks its way."""
    process = subprocess.Popen(
        launch_command(nproc, "train.cli", argv, "pedro-train"), env=launch_environment(), start_new_session=True
    )
    forwarded = {signal.SIGTERM: signal.signal(signal.SIGTERM, signal.default_int_handler)}  # as Ctrl-C, below
    if hasattr(signal, "SIGHUP"):
        forwarded[signal.SIGHUP] = signal.signal(signal.SIGHUP, lambda received, frame: process.send_signal(received))
    interrupted = False
    try:
        while True:
            try:
                status = process.wait()
                break
            except KeyboardInterrupt:
                interrupted = True
                interrupt_ranks(process.pid)
    finally:
        for number, previous in forwarded.items():
            signal.signal(number, previous)
    return INTERRUPTED_STATUS if interrupted and status == 0 else status


def _without_nproc(argv: list[str]) -> list[str]:
    kept, skip = [], False
    for argument in argv:
        if skip:
            skip = False
        elif argument == "--nproc":
            skip = True
        elif not argument.startswith("--nproc="):
            kept.append(argument)
    return kept


def _main_ranks(args: argparse.Namespace, ranks: Ranks) -> int:
    """One rank of a torchrun job: rank 0 checks and prepares the run and says so to the others; every rank
    trains; rank 0 alone prints (one line for a mistake, status 2) and writes.

    Over 60 lines: one exchange between the ranks, read top to bottom; split, each part would need the others'
    state and the order of the collective calls would be harder to see."""
    from train import distributed

    def say(text: str) -> None:
        if ranks.main:
            print(f"pedro-train: error: {text}", file=sys.stderr)

    if args.list_keys or args.export:
        say("--list-keys and --export run in one process: call pedro-train without torchrun")
        return 2
    exchange = distributed.join(ranks, args.dist_timeout)
    try:
        decided: tuple[Any, ...] = ("error", "")
        if ranks.main:
            try:
                run_dir, config, payload = prepare_run(args, ranks)
                decided = ("run", str(run_dir), config.to_dict(), payload)
            except (TrainConfigError, CheckpointError, ValueError) as error:
                decided = ("error", str(error))
        decided = exchange.broadcast(decided)
        if decided[0] == "error":
            say(decided[1])
            return 2
        _, run_dir_name, config_values, payload = decided
        config = make_train_config(**config_values)
        from train.run import TrainingInterrupted, run_training

        try:
            run_training(
                config,
                Path(run_dir_name),
                payload,
                progress=not args.no_progress,
                from_start=args.from_start,
                ranks=ranks,
                exchange=exchange,
            )
        except TrainingInterrupted as stop:  # every rank stopped at one checkpoint: a clean end for torchrun
            if ranks.main:
                print(f"pedro-train: {stop}", file=sys.stderr)
            return 0
        except KeyboardInterrupt:
            if ranks.main:
                print(f"pedro-train: interrupted; {_last_checkpoint(Path(run_dir_name))}", file=sys.stderr)
            return INTERRUPTED_STATUS
        except OutputPathError as error:
            if ranks.main:
                say(f"{error}; {_last_checkpoint(Path(run_dir_name))}")
            return 1
        except (TrainConfigError, CheckpointError, ValueError) as error:
            say(str(error))
            return 2
        except OSError as error:
            if ranks.main:  # the others write nothing, and need not read the checkpoint to say so
                say(_write_failure(error, Path(run_dir_name)))
            return 1
        except RuntimeError as error:  # a collective failed: another rank died or timed out
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            print(
                f"pedro-train: rank {ranks.rank}: stopped: another rank ended or stopped answering ({first})",
                file=sys.stderr,
            )
            return 1
        return 0
    finally:
        distributed.leave()


def check_job(config: TrainConfig, payload: dict[str, Any] | None, ranks: Ranks) -> None:
    """Raise TrainConfigError where the job cannot run as this config and checkpoint ask."""
    from train.distributed import checkpoint_world_size_error

    if payload is not None and int(payload.get("world_size", 1)) != ranks.world_size:
        raise TrainConfigError(checkpoint_world_size_error(int(payload.get("world_size", 1)), ranks.world_size))
    if ranks.world_size * config.num_envs > 2**32:
        raise TrainConfigError(
            f"world_size * num_envs must be at most 2**32 (each rank's deals are seeded apart); got "
            f"{ranks.world_size} * {config.num_envs}"
        )


def _write_failure(error: OSError, run_dir: Path) -> str:
    """A failure to write mid-run in one line, with where the run can continue from."""
    where = f" {error.filename}" if error.filename else ""
    return f"cannot write{where}: {error.strerror or error}; {_last_checkpoint(run_dir)}"


def _last_checkpoint(run_dir: Path) -> str:
    """Where the run can continue from, for an error or Ctrl-C that ended it."""
    if not latest_checkpoint(run_dir).exists() and not (run_dir / "config.yaml").is_file():
        return "the run had not started: nothing was written"
    try:
        payload = load_checkpoint(run_dir, mmap=True)
    except CheckpointError:
        return f"no checkpoint was written; start again with --resume {run_dir} --from-start"
    decisions = checkpoint_decisions(payload)
    return f"the last checkpoint ({decisions:,} decisions) is intact: continue with --resume {run_dir}"


def prepare_run(
    args: argparse.Namespace, ranks: Ranks | None = None
) -> tuple[Path, TrainConfig, dict[str, Any] | None]:
    """The run directory, the config and (when resuming) the checkpoint to continue from, checked for a job of
    ``ranks`` (default: this process's, as torchrun describes them)."""
    ranks = ranks_from_environment() if ranks is None else ranks
    if args.resume:
        if args.config:
            raise TrainConfigError("give either a config file or --resume RUN_DIR, not both")
        if args.run_name:
            raise TrainConfigError("--run-name names a new run; --resume continues RUN_DIR under its own name")
        return _prepare_resume(Path(args.resume), args.set, args.from_start, ranks)
    if args.from_start:
        raise TrainConfigError(
            "--from-start goes with --resume RUN_DIR (a run that stopped before its first checkpoint)"
        )
    if not args.config:
        raise TrainConfigError(
            "give a config (a shipped config's name such as ppo_selfplay, or a YAML file) or --resume RUN_DIR"
        )
    config = load_train_config(args.config, args.set)
    name = args.run_name or config.run_name or f"{Path(args.config).stem}-{datetime.now():%Y%m%d-%H%M%S}"
    config = make_train_config(config, run_name=name)
    run_dir = Path(config.runs_dir) / name
    check_not_in_use(run_dir)
    check_new_run_dir(run_dir, from_start=False)  # again under the run's lock, before anything is written
    check_job(config, None, ranks)
    return run_dir, config, None


def _resume_overrides(settings: Sequence[str]) -> dict[str, Any]:
    overrides = apply_overrides({}, settings)
    fixed = [key for key, value in overrides.items() if key not in RESUME_KEYS and (key != "env" or value)]
    if fixed:
        raise TrainConfigError(
            f"cannot change {', '.join(fixed)} when resuming (the run must continue exactly); "
            f"keys that may change: {', '.join(RESUME_KEYS)}"
        )
    overrides.pop("env", None)
    return overrides


def _prepare_resume(
    path: Path, settings: Sequence[str], from_start: bool, ranks: Ranks
) -> tuple[Path, TrainConfig, dict[str, Any] | None]:
    run_dir = path if path.is_dir() or path.suffix != ".pt" else path.parent
    check_not_in_use(run_dir)
    if from_start:
        if latest_checkpoint(run_dir).exists():
            raise TrainConfigError(
                f"{run_dir} has a checkpoint: continue it with --resume {run_dir} (without --from-start), "
                "or start a new run under another --run-name"
            )
        saved = run_dir / "config.yaml"
        if not saved.is_file():
            raise TrainConfigError(f"--from-start needs the run's config: {saved} not found")
        config = make_train_config(load_train_config(saved), **_resume_overrides(settings))
        return run_dir, config, None
    if run_dir.is_dir() and not latest_checkpoint(run_dir).exists() and (run_dir / "config.yaml").is_file():
        raise CheckpointError(
            f"{run_dir} has no checkpoint: the run stopped before its first one; start it again from "
            f"decision 0 with --resume {run_dir} --from-start"
        )
    payload = load_checkpoint(path)
    config = make_train_config(checkpoint_config(payload, path), **_resume_overrides(settings))
    check_job(config, payload, ranks)
    from train.trainer_state import checked_counters

    try:
        decisions = checked_counters(payload, config)["decisions"]
    except ValueError as error:
        raise CheckpointError(f"checkpoint {path} was edited or is damaged: {error}") from None
    finished = not config.final_eval_pairs or (run_dir / "eval.json").is_file()
    if decisions >= config.total_decisions and finished:
        table = f", its evaluation in {run_dir / 'eval.txt'}" if config.final_eval_pairs else ""
        raise TrainConfigError(
            f"run {run_dir} is complete: {decisions:,} of {config.total_decisions:,} decisions{table}; "
            f"to train it longer: --resume {run_dir} --set total_decisions=N (N > {decisions:,})"
        )
    return run_dir, config, payload


if __name__ == "__main__":
    sys.exit(main())
