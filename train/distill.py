"""Distilling a search's card play into a policy, offline: positions the search labels, then a supervised fit.

    python -m train.distill labels runs/distill/self-1.npz --positions 300000 --seed 1
    python -m train.distill labels runs/distill/mixed-4.npz --positions 250000 --seed 4 \
        --beside search:pimc --beside-seats 2
    python -m train.distill fit runs/distill/policy.pt runs/distill/self-1.npz runs/distill/mixed-4.npz --play-units 128

``labels``: ``--policy`` plays every seat of 64 games but ``--beside-seats`` (played by ``--beside``); at each
play decision of a policy seat with two legal cards or more, ``--search`` values every legal card
(:meth:`agents.search.PimcAgent.action_values`). The file (``numpy.savez_compressed``) holds ``observations``
(N, D) uint8, ``masks`` (N, 133) bool and ``values`` (N, 133) float32: each searched card's value in points of
the deal, ``-inf`` elsewhere.

``fit``: the policy's network is fitted to the labels (:func:`fit`) and written as an exported policy that
``ckpt:`` loads. The recipe, its figures and why: docs/training.md, "Distilling the search's card play".
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from agents import PPO_POLICY_PATH, PPO_POLICY_SPEC, AgentSpecError, make_agent
from agents.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from agents.networks import ActorCritic, NetworkShape, masked_log_probs
from agents.policy import PolicyAgent, check_layout, network_from_checkpoint
from pedro_env.actions import NUM_ACTIONS, PLAY_OFFSET, relabelled_actions
from pedro_env.cards import SUIT_SYMMETRIES
from pedro_env.cli import OneLineErrorParser, OutputPathError, check_output_file
from pedro_env.config import PedroConfig, make_config
from pedro_env.observation_layout import (
    observation_size,
    relabelled_observation_entries,
    viewer_team_makes,
)
from pedro_env.vector import PedroVectorEnv

LABEL_GAMES = 64
SIDES = ("all", "making", "defending")
MARGIN_BINS = ((0.0, 1e-9, "0 (tie)"), (1e-9, 1.0, "0 to 1"), (1.0, 2.0, "1 to 2"), (2.0, np.inf, ">= 2"))


class DistillError(ValueError):
    """A label file missing, damaged or made for another observation layout, or a network that cannot be grafted."""


def label_positions(
    positions: int,
    seed: int,
    policy: str = PPO_POLICY_SPEC,
    search: str = "search:pimc,samples=16",
    beside: str | None = None,
    beside_seats: Sequence[int] = (),
) -> dict[str, np.ndarray]:
    """``positions`` play decisions of ``policy``'s seats valued by ``search`` (module docstring: the arrays)."""
    config = make_config()
    player, searcher = make_agent(policy, config), make_agent(search, config)
    if not hasattr(searcher, "action_values"):
        raise AgentSpecError(f"--search {search!r} does not value cards: give a search:pimc spec")
    partner = make_agent(beside, config) if beside else None
    rng = np.random.default_rng(seed)
    venv = PedroVectorEnv(LABEL_GAMES, config=config)
    step = venv.reset(seed=seed * 1000)
    labelled_seats = np.array([seat not in beside_seats for seat in range(config.num_players)])
    observations, masks_out, values_out = [], [], []
    while len(observations) < positions:
        masks = step.action_mask.view(bool)
        actions = player.act(step.observation, masks, rng)
        ours = labelled_seats[step.actor] if partner is not None else np.ones(LABEL_GAMES, bool)
        if partner is not None and (~ours).any():
            theirs = np.flatnonzero(~ours)
            actions[theirs] = partner.act(step.observation[theirs], masks[theirs], rng)
        playing = (masks[:, PLAY_OFFSET:].sum(axis=1) > 1) & (masks[:, :PLAY_OFFSET].sum(axis=1) == 0) & ours
        for game in np.flatnonzero(playing):
            values = searcher.action_values(step.observation[game], masks[game], rng)
            if not values:
                continue
            row = np.full(NUM_ACTIONS, -np.inf, np.float32)
            for action, value in values.items():
                row[action] = value
            observations.append(step.observation[game].copy())
            masks_out.append(masks[game].copy())
            values_out.append(row)
        step = venv.step(actions)
    return {
        "observations": np.array(observations[:positions]),
        "masks": np.array(masks_out[:positions]),
        "values": np.array(values_out[:positions]),
    }


def load_labels(paths: Sequence[str | Path], config: PedroConfig) -> dict[str, np.ndarray]:
    """The label files concatenated, checked against ``config``'s observation size."""
    parts: dict[str, list[np.ndarray]] = {"observations": [], "masks": [], "values": []}
    for path in paths:
        try:
            with np.load(path) as data:
                for key in parts:
                    parts[key].append(data[key])
        except FileNotFoundError:
            raise DistillError(f"label file not found: {path}") from None
        except (OSError, ValueError, KeyError) as error:
            raise DistillError(
                f"label file {path} is damaged or not a label file (needs observations, masks, values): {error}"
            ) from None
        size = parts["observations"][-1].shape[-1]
        if size != observation_size(config):
            raise DistillError(
                f"label file {path} has {size}-entry observations; these rules need {observation_size(config)}"
            )
    return {key: np.concatenate(arrays) for key, arrays in parts.items()}


def anchor_positions(agent: PolicyAgent, positions: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(N, D) uint8 observations and (N, 133) bool masks of the bid, trump and discard decisions of a self-play."""
    venv = PedroVectorEnv(256, config=agent.config)
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


@dataclass(frozen=True)
class FitSettings:
    """The fit's knobs (docs/training.md): margin in points, the KL weights, Adam's step, batch rows."""

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


def _logits(network: torch.nn.Module, observations: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """(N, 133) masked logits, computed without gradients in slices of 8,192 rows."""
    with torch.no_grad():
        return torch.cat(
            [network.logits(observations[i : i + 8192], masks[i : i + 8192]) for i in range(0, len(observations), 8192)]
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
    return network.eval()


def distilled_policy(payload: dict, network: ActorCritic, sources: Sequence[str], settings: FitSettings) -> dict:
    """The exported-policy payload of the fitted network, the rest as in ``payload`` (the policy it started from)."""
    return {
        "config": payload["config"],
        "network": network.shape.to_dict(),
        "model": {key: value.detach().clone() for key, value in network.state_dict().items()},
        "observation_layout": payload.get("observation_layout"),
        "exported": {
            "source": "train.distill fit",
            "labels": [str(path) for path in sources],
            "settings": vars(settings),
            "started_from": payload.get("exported", {}),  # the starting policy's own record
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineErrorParser(prog="python -m train.distill", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    labels = commands.add_parser("labels", help="play decisions valued by the search, into a .npz file")
    labels.add_argument("out", help="the .npz file to write")
    labels.add_argument("--positions", type=int, required=True, help="play decisions to label")
    labels.add_argument("--seed", type=int, required=True, help="games and sampling seed")
    labels.add_argument(
        "--policy",
        default=PPO_POLICY_SPEC,
        help="agent spec playing the labelled seats (default the PPO policy, models/ppo_policy.pt)",
    )
    labels.add_argument("--search", default="search:pimc,samples=16", help="search:pimc spec that values the cards")
    labels.add_argument("--beside", help="agent spec playing --beside-seats (their decisions are not labelled)")
    labels.add_argument("--beside-seats", type=int, nargs="+", default=[], help="absolute seats 0..3 --beside plays")
    fitting = commands.add_parser("fit", help="fit a policy to label files; write an exported policy")
    fitting.add_argument("out", help="the policy file (.pt) to write")
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
        "them and the card-play logits (-1: train the whole network)",
    }
    fitting.add_argument(
        "--sides",
        choices=SIDES,
        default=defaults.sides,
        help="whose card plays to label: the viewer's team making the contract, defending it, or all (all)",
    )
    for name, kind in (("margin", float), ("beta", float), ("anchor_weight", float), ("lr", float)):
        fitting.add_argument(
            f"--{name.replace('_', '-')}", type=kind, default=getattr(defaults, name), help=helps[name]
        )
    for name in ("held_out", "anchors", "epochs", "batch_size", "seed", "play_units"):
        kind = float if name == "held_out" else int
        default = getattr(defaults, name)
        fitting.add_argument(
            f"--{name.replace('_', '-')}", type=kind, default=default, help=f"{helps[name]} ({default})"
        )
    args = parser.parse_args(argv)
    try:
        check_output_file(args.out)
        if args.command == "labels":
            if args.positions < 1:
                parser.error(f"--positions must be >= 1, got {args.positions}")
            if bool(args.beside) != bool(args.beside_seats) or any(not 0 <= seat < 4 for seat in args.beside_seats):
                parser.error("--beside and --beside-seats go together; seats are 0, 1, 2 or 3")
            arrays = label_positions(
                args.positions, args.seed, args.policy, args.search, args.beside, args.beside_seats
            )
            np.savez_compressed(args.out, **arrays)
            print(f"wrote {args.out}: {len(arrays['values']):,} labelled play decisions")
            return 0
        settings = FitSettings(**{name: getattr(args, name) for name in vars(defaults)})
        if settings.epochs < 1 or settings.batch_size < 1 or settings.anchors < 1 or not 0 < settings.held_out < 1:
            parser.error("--epochs, --batch-size and --anchors must be >= 1 and --held-out in (0, 1)")
        payload = load_checkpoint(args.init)
        config = make_config(**payload["config"].get("env", {}))
        check_layout(payload.get("observation_layout"), config, f"checkpoint {args.init}")
        network = fit(network_from_checkpoint(payload), config, load_labels(args.labels, config), settings)
        save_checkpoint(distilled_policy(payload, network, args.labels, settings), args.out)
        print(f"wrote {args.out}")
    except (AgentSpecError, CheckpointError, DistillError, OutputPathError) as error:
        parser.error(str(error))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
