"""Distilling a search's card play into a policy, offline: positions the search labels, then a supervised fit.

    python -m train.distill labels runs/distill/self-1.npz --positions 300000 --seed 1
    python -m train.distill labels runs/distill/mixed-4.npz --positions 250000 --seed 4 \
        --beside search:pimc --beside-seats 2
    python -m train.distill fit runs/distill/policy.pt runs/distill/self-1.npz runs/distill/mixed-4.npz --play-units 128

``labels``: ``--policy`` plays every seat of 64 games but ``--beside-seats`` (played by ``--beside``); at each
play decision of a policy seat with two legal cards or more, ``--search`` values every legal card
(:meth:`agents.search.PimcAgent.action_values`); the label file's layout: :mod:`train.distill_labels`.

``fit``: the policy's network is fitted to the labels (:func:`fit`) and written as an exported policy that
``ckpt:`` loads. The recipe, its figures and why: docs/training.md, "Distilling the search's card play".
Every count and knob has a range (:data:`FIT_RANGES`, :data:`~train.distill_labels.MAX_POSITIONS`) checked
before any work; an output is written whole or not at all, and never over one of the command's inputs.
"""

from __future__ import annotations

import argparse
import copy
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from agents import PPO_POLICY_PATH, PPO_POLICY_SPEC, AgentSpecError, parse_spec
from agents.checkpoint import LATEST_NAME, CheckpointError, load_checkpoint, save_checkpoint
from agents.networks import ActorCritic, NetworkShape, masked_log_probs
from agents.policy import PolicyAgent, check_layout, network_from_checkpoint, observation_layout
from pedro_env.actions import NUM_ACTIONS, PLAY_OFFSET, relabelled_actions
from pedro_env.cards import SUIT_SYMMETRIES
from pedro_env.cli import (
    OneLineErrorParser,
    OutputPathError,
    check_output_file,
    int_between,
    one_line_on_interrupt,
    same_file,
)
from pedro_env.config import SEED_LIMIT, PedroConfig, make_config, short_repr
from pedro_env.observation_layout import relabelled_observation_entries, viewer_team_makes
from pedro_env.vector import PedroVectorEnv
from train.distill_labels import (
    LABEL_SEED_MAX,
    MAX_POSITIONS,
    DistillError,
    label_file_path,
    label_positions,
    load_labels,
    write_labels,
)

PROG = "python -m train.distill"
SIDES = ("all", "making", "defending")
ANCHOR_GAMES = 256  # self-play games of the anchor positions; game i of seed S is seeded S + i
MAX_PLAY_UNITS = 4096  # grafted units per layer (the shipped recipe grafts 128)
MARGIN_BINS = ((0.0, 1e-9, "0 (tie)"), (1e-9, 1.0, "0 to 1"), (1.0, 2.0, "1 to 2"), (2.0, np.inf, ">= 2"))


def anchor_positions(agent: PolicyAgent, positions: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(N, D) uint8 observations and (N, 133) bool masks of the bid, trump and discard decisions of a self-play."""
    venv = PedroVectorEnv(ANCHOR_GAMES, config=agent.config)
    step = venv.reset(seed=seed)
    rng = np.random.default_rng(seed)
    observations, masks_out = [], []
    while sum(len(block) for block in observations) < positions:
        masks = step.action_mask.view(bool)
        deciding = (masks.sum(axis=1) > 1) & (masks[:, :PLAY_OFFSET].any(axis=1))
        observations.append(step.observation[deciding].copy())
        masks_out.append(masks[deciding].copy())
        step = venv.step(agent.act(step.observation, masks, rng))
    return np.concatenate(observations)[:positions], np.concatenate(masks_out)[:positions]


# knob -> (its allowed values in words, the test of a value): checked by FitSettings and by the command's parser
FIT_RANGES: dict[str, tuple[str, Callable[[float], bool]]] = {
    "margin": ("a number >= 0 (points)", lambda value: value >= 0),
    "beta": ("a number from 0 to 1000", lambda value: 0 <= value <= 1000),
    "anchor_weight": ("a number from 0 to 1000", lambda value: 0 <= value <= 1000),
    "lr": ("a number > 0 and <= 1", lambda value: 0 < value <= 1),
    "held_out": ("a number > 0 and < 1", lambda value: 0 < value < 1),
    "play_units": (
        f"-1 (train the whole network) or an int from 0 to {MAX_PLAY_UNITS}",
        lambda value: -1 <= value <= MAX_PLAY_UNITS,
    ),
    "anchors": (f"an int from 1 to {MAX_POSITIONS:,}", lambda value: 1 <= value <= MAX_POSITIONS),
    "epochs": ("an int from 1 to 10,000", lambda value: 1 <= value <= 10_000),
    "batch_size": ("an int from 1 to 1,000,000", lambda value: 1 <= value <= 1_000_000),
    "seed": (f"an int from 0 to 2**64 - {ANCHOR_GAMES}", lambda value: 0 <= value <= SEED_LIMIT - ANCHOR_GAMES),
}


def _fit_value(name: str, value: object, kind: type) -> bool:
    """Whether ``value`` is a finite ``kind`` (an int for an int knob) that :data:`FIT_RANGES` allows for ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int):
        return False
    return math.isfinite(value) and FIT_RANGES[name][1](value)


@dataclass(frozen=True)
class FitSettings:
    """The fit's knobs (docs/training.md): margin in points, the KL weights, Adam's step, batch rows; each in its
    range (:data:`FIT_RANGES`), else DistillError naming the knob and its allowed values."""

    margin: float = 0.5
    sides: str = "all"  # whose card plays the search labels: "all", "making" or "defending" (the rest kept)
    beta: float = 0.05
    anchor_weight: float = 1.0
    play_units: int = -1  # >= 0: graft this many hidden units per layer that only the card play reads (others fixed)
    anchors: int = 200_000
    epochs: int = 12
    lr: float = 3e-4
    batch_size: int = 1024
    held_out: float = 0.1
    seed: int = 0

    def __post_init__(self) -> None:
        if self.sides not in SIDES:
            raise DistillError(f"sides must be one of {', '.join(SIDES)}, got {short_repr(self.sides)}")
        for name, (allowed, _) in FIT_RANGES.items():
            value = getattr(self, name)
            if not _fit_value(name, value, type(getattr(FitSettings, name))):
                raise DistillError(f"{name} must be {allowed}, got {short_repr(value)}")


def _fit_argument(name: str) -> Callable[[str], float]:
    """An argparse ``type`` for the knob ``name``: its kind (the default's) in its range, else the allowed values."""
    kind = type(getattr(FitSettings, name))

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not _fit_value(name, value, kind):
            raise argparse.ArgumentTypeError(f"must be {FIT_RANGES[name][0]}, got {short_repr(text)}")
        return value

    return parse


def _logits(network: torch.nn.Module, observations: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """(N, 133) masked logits, computed without gradients in slices of 8,192 rows."""
    with torch.no_grad():
        return torch.cat(
            [network.logits(observations[i : i + 8192], masks[i : i + 8192]) for i in range(0, len(observations), 8192)]
            or [torch.empty((0, NUM_ACTIONS))]
        )


def search_margins(values: np.ndarray) -> np.ndarray:
    """(N,) the search's best card value minus its second best, in points (``values`` as a label file holds them)."""
    ordered = -np.sort(-values, axis=1)
    return ordered[:, 0] - ordered[:, 1]


def side_rows(observations: np.ndarray, config: PedroConfig, sides: str) -> np.ndarray:
    """(N,) bool: the rows whose viewer's team makes the contract (``"making"``), defends it (``"defending"``),
    or every row (``"all"``), by :func:`~pedro_env.observation_layout.viewer_team_makes`."""
    if sides not in SIDES:
        raise DistillError(f"sides must be one of {', '.join(SIDES)}, got {sides!r}")
    if sides == "all":
        return np.ones(len(observations), dtype=bool)
    making = viewer_team_makes(observations, config)
    return making if sides == "making" else ~making


def agreement_report(network: torch.nn.Module, labels: dict[str, np.ndarray], rows: np.ndarray) -> str:
    """One line: how often the network's card is the search's best, overall and by the search's margin."""
    if len(rows) == 0:
        return "no positions held out (too few positions for --held-out)"
    observations, masks = torch.from_numpy(labels["observations"][rows]), torch.from_numpy(labels["masks"][rows])
    chosen = _logits(network, observations, masks).argmax(1).numpy()
    values = labels["values"][rows]
    margin = search_margins(values)
    loss = values.max(axis=1) - values[np.arange(len(rows)), chosen]
    parts = [f"agree {np.mean(loss == 0):.3f}, loss {loss.mean():.3f} points/decision"]
    for low, high, name in MARGIN_BINS:
        inside = (margin >= low) & (margin < high)
        if inside.any():
            parts.append(f"{name}: {np.mean(loss[inside] == 0):.3f}")
    return "; ".join(parts)


def _suit_relabellings(config: PedroConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """(8, D) and (8, 133) int64 gather indices: row k of a relabelled batch is ``old[..., index[k]]``."""
    entries = [np.argsort(relabelled_observation_entries(config, suit_map)) for suit_map in SUIT_SYMMETRIES]
    actions = [np.argsort(relabelled_actions(suit_map)) for suit_map in SUIT_SYMMETRIES]
    return torch.from_numpy(np.stack(entries)), torch.from_numpy(np.stack(actions))


def _kept_share(
    network: ActorCritic, observations: torch.Tensor, masks: torch.Tensor, reference: torch.Tensor
) -> float:
    """Share of the rows whose most probable action is the reference's (``reference``: its log-probabilities)."""
    return float((_logits(network, observations, masks).argmax(1) == reference.argmax(1)).float().mean())


def with_play_units(network: ActorCritic, units: int) -> tuple[ActorCritic, dict[str, torch.Tensor]]:
    """A copy of a two-layer shared-trunk ``network`` with ``units`` more hidden units per layer, and per
    parameter a 0/1 mask of the entries that may move: the new units and the card-play logits' rows.

    The new units start with no outgoing weight and no old unit or other logit ever reads them, so
    the bid, trump and discard logits and the value stay the old network's (up to float rounding).
    """
    shape = network.shape
    if not shape.shared_trunk or len(shape.hidden_sizes) != 2:
        raise DistillError(f"play_units needs a shared trunk of two layers, not {shape.to_dict()}")
    first, second = shape.hidden_sizes
    wide = ActorCritic(
        NetworkShape.from_dict({**shape.to_dict(), "hidden_sizes": [first + units, second + units]}),
        network.actor_scale.numpy(),
    )
    old, new = network.state_dict(), wide.state_dict()
    trainable = {name: torch.zeros_like(value) for name, value in new.items()}
    for name, value in old.items():
        if value.dim() == 0 or name.endswith("_scale"):
            new[name] = value.clone()
            continue
        block = new[name]
        if name.startswith("trunk."):
            trainable[name][value.shape[0] :] = 1  # the new units' incoming weights and biases
        if value.dim() == 2 and name != "trunk.0.weight":
            block[:, value.shape[1] :] = 0  # no old output reads a new unit ...
        block[tuple(slice(0, size) for size in value.shape)] = value
        new[name] = block
    trainable["policy_head.weight"][PLAY_OFFSET:] = 1  # ... but the card-play logits, which may read every unit
    trainable["policy_head.bias"][PLAY_OFFSET:] = 1
    trainable["trunk.2.weight"][second:, :] = 1
    wide.load_state_dict(new)
    parameters = dict(wide.named_parameters())
    for name, parameter in parameters.items():
        parameter.register_hook(lambda grad, mask=trainable[name]: grad * mask)
    return wide, {name: trainable[name] for name in parameters}


def fit(
    reference: ActorCritic, config: PedroConfig, labels: dict[str, np.ndarray], settings: FitSettings, log=print
) -> ActorCritic:
    """A copy of ``reference`` fitted to the labels; ``reference`` stays unchanged.

    Loss per batch: cross-entropy to the search's best card on the positions of ``sides`` (the viewer's
    team making or defending the contract, or both) that it settles by ``margin`` or more, plus ``beta`` *
    KL(reference || network) on every position of ``sides``, plus ``anchor_weight`` * KL(reference ||
    network) on the other side's positions and on the reference's own bid, trump and discard decisions
    (so only the chosen card play moves). Every row is relabelled by a random suit symmetry
    (:data:`pedro_env.cards.SUIT_SYMMETRIES`).

    One function: the loss of a batch reads a dozen tensors and settings prepared above it, and
    the seeded draws (order, symmetries, anchors) stay in one visible sequence; split, they would travel
    through a dozen arguments.
    """
    torch.manual_seed(settings.seed)
    rng = np.random.default_rng(settings.seed)
    reference = reference.eval()
    grafted = settings.play_units >= 0
    network = (with_play_units(reference, settings.play_units)[0] if grafted else copy.deepcopy(reference)).train()
    values = labels["values"]
    on_side = torch.from_numpy(side_rows(labels["observations"], config, settings.sides))
    settled = torch.from_numpy(search_margins(values) >= settings.margin) & on_side
    best = torch.from_numpy(values.argmax(axis=1))
    observations, masks = torch.from_numpy(labels["observations"]), torch.from_numpy(labels["masks"])
    order = rng.permutation(len(values))
    held, train = order[: int(len(order) * settings.held_out)], order[int(len(order) * settings.held_out) :]
    anchor_obs, anchor_masks = (
        torch.from_numpy(array)
        for array in anchor_positions(PolicyAgent(config, reference), settings.anchors, settings.seed)
    )
    reference_log_probs = masked_log_probs(_logits(reference, observations, masks))
    anchor_log_probs = masked_log_probs(_logits(reference, anchor_obs, anchor_masks))
    entry_index, action_index = _suit_relabellings(config)
    optimizer = torch.optim.Adam(network.parameters(), lr=settings.lr)
    steps = settings.epochs * -(-len(train) // settings.batch_size)
    anchor_batch = max(1, settings.batch_size * settings.anchors // max(len(train), 1))
    share = float(settled.float().mean())
    log(
        f"{len(values):,} positions ({len(held):,} held out), {float(on_side.float().mean()):.3f} on the "
        f"{settings.sides} side, {share:.3f} labelled (settled by >= {settings.margin:g} points)"
    )
    log(f"reference: {agreement_report(reference, labels, held)}")

    def relabel(rows_obs, rows_masks, rows_log_probs):
        symmetry = torch.from_numpy(rng.integers(0, len(SUIT_SYMMETRIES), len(rows_obs)))
        actions = action_index[symmetry]
        return (
            torch.gather(rows_obs, 1, entry_index[symmetry]),
            torch.gather(rows_masks, 1, actions),
            torch.gather(rows_log_probs, 1, actions),
            actions,
        )

    def kl(reference_rows, log_probs, rows_masks):
        return (reference_rows.exp() * (reference_rows - log_probs)).masked_fill(~rows_masks, 0).sum(1)

    step = 0
    for epoch in range(settings.epochs):
        started = time.perf_counter()
        for batch in torch.from_numpy(rng.permutation(train)).split(settings.batch_size):
            for group in optimizer.param_groups:  # flat, then linear to 0 over the second half
                group["lr"] = settings.lr * min(1.0, 2.0 * (1.0 - step / steps))
            step += 1
            rows_obs, rows_masks, rows_ref, actions = relabel(
                observations[batch], masks[batch], reference_log_probs[batch]
            )
            new_best = torch.argsort(actions, dim=1).gather(1, best[batch][:, None])
            log_probs = masked_log_probs(network.logits(rows_obs, rows_masks))
            labelled = settled[batch]
            loss = -(log_probs[labelled].gather(1, new_best[labelled])).sum() / len(batch)
            weights = torch.where(on_side[batch], settings.beta, settings.anchor_weight)
            loss = loss + (weights * kl(rows_ref, log_probs, rows_masks)).mean()
            if not grafted:  # a grafted network's other phases cannot move
                anchors = torch.from_numpy(rng.integers(0, len(anchor_obs), anchor_batch))
                anchor_rows, anchor_row_masks, anchor_ref, _ = relabel(
                    anchor_obs[anchors], anchor_masks[anchors], anchor_log_probs[anchors]
                )
                anchor_lp = masked_log_probs(network.logits(anchor_rows, anchor_row_masks))
                loss = loss + settings.anchor_weight * kl(anchor_ref, anchor_lp, anchor_row_masks).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        seconds = time.perf_counter() - started
        kept = _kept_share(network, anchor_obs, anchor_masks, anchor_log_probs)
        log(f"epoch {epoch + 1}/{settings.epochs} ({seconds:.0f} s): {agreement_report(network, labels, held)}")
        log(f"  bids, trumps and discards as the reference chooses them: {kept:.3f}")
    if not all(bool(torch.isfinite(parameter).all()) for parameter in network.parameters()):
        raise DistillError(f"the fit diverged (weights no longer finite) at lr {settings.lr:g}; give a smaller --lr")
    return network.eval()


def distilled_policy(payload: dict, network: ActorCritic, sources: Sequence[str], settings: FitSettings) -> dict:
    """The exported-policy payload of the fitted network, the rest as in ``payload`` (the policy it started from)."""
    return {
        "config": payload["config"],
        "network": network.shape.to_dict(),
        "model": {key: value.detach().clone() for key, value in network.state_dict().items()},
        "observation_layout": observation_layout(),  # the network's: a policy of layout version 1 was migrated
        "exported": {
            "source": "train.distill fit",
            "labels": [str(path) for path in sources],
            "settings": vars(settings),
            "started_from": payload.get("exported", {}),  # the starting policy's own record
        },
    }


def _checkpoint_files(spec: str | None) -> list[Path]:
    """The checkpoint files an agent spec reads: ``ckpt:PATH`` (a run directory's ``latest.pt``), ``pretrained``,
    and a search's ``policy=`` spec."""
    if not spec:
        return []
    parsed = parse_spec(spec)
    if parsed.kind in ("ckpt", "pretrained"):
        path = Path(parsed.name)
        return [path / LATEST_NAME if path.is_dir() else path]
    inner = parsed.options.get("policy")
    return _checkpoint_files(inner) if isinstance(inner, str) else []


def _labels_command(parser: OneLineErrorParser, args: argparse.Namespace) -> int:
    seats = make_config().num_players
    if bool(args.beside) != bool(args.beside_seats) or any(not 0 <= seat < seats for seat in args.beside_seats):
        parser.error("--beside and --beside-seats go together; seats are 0, 1, 2 or 3")
    if len(set(args.beside_seats)) == seats:  # every seat --beside's: nothing would ever be labelled
        parser.error(
            f"--beside-seats {' '.join(map(str, args.beside_seats))} leaves no seat to label: "
            f"--beside takes at most {seats - 1} of the seats 0, 1, 2, 3"
        )
    out = check_output_file(label_file_path(args.out), "label file")
    for flag in ("policy", "search", "beside"):
        for path in _checkpoint_files(getattr(args, flag)):
            if same_file(out, path):
                raise OutputPathError(f"label file {out} is the checkpoint --{flag} reads; write the labels elsewhere")
    arrays = label_positions(args.positions, args.seed, args.policy, args.search, args.beside, args.beside_seats)
    written = write_labels(arrays, out)
    print(f"wrote {written}: {len(arrays['values']):,} labelled play decisions")
    return 0


def _fit_command(args: argparse.Namespace) -> int:
    out = check_output_file(args.out, "policy file")
    init = Path(args.init)
    if same_file(out, init / LATEST_NAME if init.is_dir() else init):
        raise OutputPathError(f"policy file {out} is the --init checkpoint; write the fitted policy elsewhere")
    for path in args.labels:
        if same_file(out, path):
            raise OutputPathError(f"policy file {out} is the label file {path}; write the fitted policy elsewhere")
    settings = FitSettings(**{name: getattr(args, name) for name in vars(FitSettings())})
    payload = load_checkpoint(args.init)
    config = make_config(**payload["config"].get("env", {}))
    check_layout(payload.get("observation_layout"), config, f"checkpoint {args.init}")
    network = fit(network_from_checkpoint(payload), config, load_labels(args.labels, config), settings)
    try:  # save_checkpoint writes a temporary file beside the output, then renames it: a cut write replaces nothing
        save_checkpoint(distilled_policy(payload, network, args.labels, settings), out)
    except (OSError, RuntimeError) as error:  # a full disk: OSError, or torch's zip writer's RuntimeError
        reason = getattr(error, "strerror", None) or short_repr(str(error).splitlines()[0] if str(error) else "")
        raise OutputPathError(f"cannot write policy file {out}: {reason}") from None
    print(f"wrote {out}")
    return 0


@one_line_on_interrupt(PROG)
def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineErrorParser(prog=PROG, description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    _add_labels_command(commands)
    _add_fit_command(commands)
    args = parser.parse_args(argv)
    try:
        return _labels_command(parser, args) if args.command == "labels" else _fit_command(args)
    except (AgentSpecError, CheckpointError, DistillError, OutputPathError) as error:
        parser.error(str(error))


def _add_labels_command(commands: argparse._SubParsersAction) -> None:
    """The ``labels`` command's arguments."""
    labels = commands.add_parser("labels", help="play decisions valued by the search, into a .npz file")
    labels.add_argument("out", help="the .npz file to write (.npz is added when missing)")
    labels.add_argument(
        "--positions",
        type=int_between(1, MAX_POSITIONS),
        required=True,
        help=f"play decisions to label (1 to {MAX_POSITIONS:,})",
    )
    labels.add_argument(
        "--seed",
        type=int_between(0, LABEL_SEED_MAX, " (its games are seeded SEED * 1000 + i, below 2**64)"),
        required=True,
        help=f"games and sampling seed (0 to {LABEL_SEED_MAX:,})",
    )
    labels.add_argument(
        "--policy",
        default=PPO_POLICY_SPEC,
        help="agent spec playing the labelled seats (default the PPO policy, models/ppo_policy.pt)",
    )
    labels.add_argument("--search", default="search:pimc,samples=16", help="search:pimc spec that values the cards")
    labels.add_argument("--beside", help="agent spec playing --beside-seats (their decisions are not labelled)")
    labels.add_argument(
        "--beside-seats",
        type=int,
        nargs="+",
        action="extend",
        default=[],
        help="absolute seats 0..3 --beside plays (at most 3)",
    )


def _add_fit_command(commands: argparse._SubParsersAction) -> None:
    """The ``fit`` command's arguments (FitSettings' fields, with their ranges and defaults)."""
    fitting = commands.add_parser("fit", help="fit a policy to label files; write an exported policy")
    fitting.add_argument("out", help="the policy file (.pt) to write (not an input of the fit)")
    fitting.add_argument("labels", nargs="+", help="label files written by the labels command")
    fitting.add_argument(
        "--init",
        default=str(PPO_POLICY_PATH),
        help="the policy to start from and stay near (default the PPO policy, models/ppo_policy.pt)",
    )
    defaults = FitSettings()
    helps = {
        "margin": "label only the plays the search settles by this many points or more",
        "beta": "weight of the KL divergence from the starting policy on every labelled position",
        "anchor_weight": "weight of the KL divergence on the starting policy's bids, trumps and discards and on "
        "the card plays of the side not labelled",
        "lr": "Adam's step size (flat, then linear to 0 over the second half)",
        "held_out": "share of the positions held out for the agreement report",
        "anchors": "bid, trump and discard decisions of the starting policy's self-play kept near",
        "epochs": "passes over the labelled positions",
        "batch_size": "positions per step",
        "seed": "split, order, relabelling and anchor seed",
        "play_units": "graft this many hidden units per layer that only the card play reads, and train only "
        "them and the card-play logits",
    }
    fitting.add_argument(
        "--sides",
        choices=SIDES,
        default=defaults.sides,
        help="whose card plays to label: the viewer's team making the contract, defending it, or all (all)",
    )
    for name, help_text in helps.items():
        fitting.add_argument(
            f"--{name.replace('_', '-')}",
            type=_fit_argument(name),
            default=getattr(defaults, name),
            help=f"{help_text}; {FIT_RANGES[name][0]} ({getattr(defaults, name)})",
        )


if __name__ == "__main__":
    raise SystemExit(main())
