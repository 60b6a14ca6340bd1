"""The learning curve of a run: evaluation win rates (with their 95% intervals) over wall-clock time.

    python -m train.curve runs/NAME --out docs/learning_curve.png

Reads the run's TensorBoard events (``eval/<entry>/win_rate``, ``_low``, ``_high`` for the gauntlet's
entries ``vs_<spec>``, ``with_<spec>``, and the worst cases ``worst`` and ``worst_partner``; league
snapshots are left out); the time axis is training time in minutes: the pauses between a stopped run
and its ``--resume`` do not count. Opponents and partners get a panel each, the worst case in black;
the dotted line is parity (50%, or 33.3% in the field format of three players, read from the run's
``config.yaml``). The chart's format is its file's suffix (``.png``, ``.svg``, ``.pdf``, ...: matplotlib's
formats); it is written whole or not at all, never over one of the run's files. A run across rule sets
(``rules_mix``) has a curve per rule set: ``--rules NAME`` draws that one's (``eval/<NAME>/...``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pedro_env.cli import (
    OneLineErrorParser,
    OutputPathError,
    atomic_output,
    check_output_file,
    one_line_on_interrupt,
    same_file,
)

PROG = "python -m train.curve"


def chart_formats() -> list[str]:
    """The file suffixes (without the dot) matplotlib can write a chart as: ``png``, ``svg``, ``pdf``, ..."""
    from matplotlib.backend_bases import FigureCanvasBase

    return sorted(FigureCanvasBase.get_supported_filetypes())


def check_chart_format(out: str | Path) -> str:
    """The chart format ``out``'s suffix names (``png``, ``svg``, ...); OutputPathError naming the formats."""
    suffix = Path(out).suffix.lower().removeprefix(".")
    formats = chart_formats()
    if suffix not in formats:
        raise OutputPathError(
            f"chart file {out}: its suffix names the format, one of {', '.join('.' + name for name in formats)}"
            f"{'' if suffix else ' (it has none)'}"
        )
    return suffix


def read_sessions(run_dir: str | Path) -> list[tuple[float, float, dict[str, list]]]:
    """The run's scalars per events file (one per start or resume) as (first, last wall time, tag -> events),
    in time order."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    sessions = []
    for path in sorted(Path(run_dir).glob("events.out.tfevents.*")):
        events = EventAccumulator(str(path), size_guidance={"scalars": 0})
        events.Reload()
        scalars = {tag: events.Scalars(tag) for tag in events.Tags()["scalars"]}
        times = [event.wall_time for series in scalars.values() for event in series]
        if times:
            sessions.append((min(times), max(times), scalars))
    if not sessions:
        raise ValueError(f"no TensorBoard scalars in {run_dir}")
    return sorted(sessions, key=lambda session: session[0])


def curve_name(tag: str, rules: str = "") -> str | None:
    """``eval/vs_rule_heuristic/win_rate`` -> ``vs_rule_heuristic``; None for other tags and league entries. With
    ``rules`` (a rule set of a mix), the tags under ``eval/<rules>/`` alone."""
    parts = tag.split("/")
    if rules:
        if len(parts) != 4 or parts[1] != rules:
            return None
        parts = [parts[0], *parts[2:]]
    if len(parts) != 3 or parts[0] != "eval" or parts[2] != "win_rate":
        return None
    name = parts[1]
    if name.startswith(("vs_league", "with_league")):
        return None
    return name if name.startswith(("vs_", "with_")) or name in ("worst", "worst_partner") else None


def read_curves(run_dir: str | Path, rules: str = "") -> dict[str, dict[str, np.ndarray]]:
    """entry tag (``vs_random``, ``with_rule_cautious``, ``worst``) -> {"minutes", "decisions", "win_rate",
    "low", "high"} from a run's events (of its rule set ``rules`` in a mix).

    "minutes" is training time: wall-clock minutes since the run's first event, less the pauses between
    one session's last event and the next session's first (a run stopped and resumed the next day).
    """
    sessions = read_sessions(run_dir)
    points: dict[str, dict[int, tuple[float, float, float, float]]] = {}
    paused = 0.0
    previous_end = sessions[0][0]
    for first, last, scalars in sessions:
        paused += max(0.0, first - previous_end)
        previous_end = last
        origin = sessions[0][0] + paused
        for tag, series in scalars.items():
            name = curve_name(tag, rules)
            if name is None:
                continue
            base = tag[: -len("win_rate")]
            # one point per step: the last evaluation logged there (runs before 2026-11-30 logged a periodic
            # one, then the final one with more pairs, at the last step); the interval's bounds are logged
            # beside each rate
            bounds = zip(scalars[base + "win_rate_low"], scalars[base + "win_rate_high"])
            for event, (low, high) in zip(series, bounds):
                minutes = (event.wall_time - origin) / 60
                points.setdefault(name, {})[event.step] = (minutes, event.value, low.value, high.value)
    if not points:
        mixed = sorted({tag.split("/")[1] for _, _, scalars in sessions for tag in scalars if _is_mixed(tag)})
        if mixed and rules not in mixed:
            raise ValueError(
                f"{run_dir} was evaluated per rule set: name one with --rules ({'; '.join(mixed)})"
                + (f"; {rules!r} is none of them" if rules else "")
            )
        raise ValueError(f"no evaluation scalars (eval/vs_*/win_rate, eval/worst/win_rate) in {run_dir}")
    curves: dict[str, dict[str, np.ndarray]] = {}
    for name, by_step in points.items():
        steps = sorted(by_step)
        columns = np.array([by_step[step] for step in steps]).reshape(-1, 4)
        curves[name] = {
            "minutes": columns[:, 0],
            "decisions": np.array(steps),
            "win_rate": columns[:, 1],
            "low": columns[:, 2],
            "high": columns[:, 3],
        }
    return curves


def _is_mixed(tag: str) -> bool:
    """``eval/<rule set>/worst/win_rate``: a tag of a run across rule sets."""
    parts = tag.split("/")
    return len(parts) == 4 and parts[0] == "eval" and parts[2:] == ["worst", "win_rate"]


def run_teams(run_dir: str | Path, rules: str = "") -> int:
    """The number of teams of a run's games (2, or 3 with three players), of its rule set ``rules`` in a mix, from
    its ``config.yaml`` (2 without one or with one that cannot be read: the file is read within the bounds of any
    config file)."""
    from train.config import TrainConfigError, read_yaml

    path = Path(run_dir) / "config.yaml"
    try:
        values = read_yaml(path) if path.is_file() else {}
        rules_set = next((entry["set"] for entry in values.get("rules_mix") or [] if entry["name"] == rules), {})
        players = int({**(values.get("env") or {}), **rules_set}.get("num_players", 4))
    except (TrainConfigError, ValueError, TypeError, AttributeError, KeyError):
        return 2
    return 3 if players == 3 else 2


def plot_curves(curves: dict[str, dict[str, np.ndarray]], out: str | Path, title: str, teams: int = 2) -> Path:
    """One panel for the opponents (``vs_*``, ``worst``), one for the partners (``with_*``, ``worst_partner``);
    ``teams`` sets parity and names the format (duplicate, or the field format with three teams)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("as opponent", "vs_", "worst"), ("as partner", "with_", "worst_partner")]
    panels = [panel for panel in panels if any(name.startswith(panel[1]) for name in curves)]
    figure, axes = plt.subplots(1, len(panels), figsize=(7.5 * len(panels), 4.5), squeeze=False)
    for axis, (heading, prefix, worst) in zip(axes[0], panels):
        names = sorted(name for name in curves if name.startswith(prefix)) + ([worst] if worst in curves else [])
        for name in names:
            curve = curves[name]
            is_worst = name == worst
            label = f"worst {heading}" if is_worst else name.replace("_", " ", 1)
            axis.plot(
                curve["minutes"],
                100 * curve["win_rate"],
                marker="o",
                markersize=3,
                label=label,
                color="black" if is_worst else None,
                linewidth=2.2 if is_worst else 1.2,
            )
            axis.fill_between(curve["minutes"], 100 * curve["low"], 100 * curve["high"], alpha=0.15)
        axis.axhline(100 / teams, color="grey", linewidth=0.8, linestyle=":")  # parity
        axis.set_xlabel("wall-clock training time (minutes)")
        axis.set_ylabel(f"match win rate, {'duplicate' if teams == 2 else 'field format'} (%)")
        axis.set_ylim(0, 100)
        axis.set_title(f"{title}: {heading}")
        axis.grid(alpha=0.3)
        axis.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        with atomic_output(out) as handle:  # a cut write leaves the chart before it
            figure.savefig(handle, dpi=120, format=out.suffix.lower().removeprefix(".") or "png")
    finally:
        plt.close(figure)
    return out


@one_line_on_interrupt(PROG)
def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineErrorParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", help="a pedro-train run directory")
    parser.add_argument(
        "--out",
        default=None,
        help="chart file, its format by its suffix: .png, .svg, .pdf, ... (default: RUN_DIR/learning_curve.png)",
    )
    parser.add_argument("--title", default=None, help="chart title")
    parser.add_argument("--rules", default="", metavar="NAME", help="a run across rule sets: the rule set to draw")
    args = parser.parse_args(argv)
    try:
        out = Path(args.out or Path(args.run_dir) / "learning_curve.png")
        check_chart_format(out)  # before any reading: a usage error costs nothing
        # reading is quick, and an unknown run directory must not be made
        curves = read_curves(args.run_dir, args.rules)
        out = check_output_file(out, "chart file")
        inputs = [*Path(args.run_dir).glob("events.out.tfevents.*"), Path(args.run_dir) / "config.yaml"]
        if any(same_file(out, path) for path in inputs):
            raise OutputPathError(f"chart file {out} is one of the run's own files; write the chart elsewhere")
        title = args.title or f"{args.run_dir}{f' ({args.rules})' if args.rules else ''}"
        out = plot_curves(curves, out, title, run_teams(args.run_dir, args.rules))
    except (OutputPathError, ValueError) as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    for name, curve in curves.items():
        last = -1
        print(
            f"{name.replace('_', ' ', 1)}: {100 * curve['win_rate'][last]:.1f}% [{100 * curve['low'][last]:.1f}, "
            f"{100 * curve['high'][last]:.1f}] after {curve['minutes'][last]:.1f} min, "
            f"{curve['decisions'][last]:,} decisions"
        )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
