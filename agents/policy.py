"""Learned policies as agents: ``ckpt:PATH`` loads the actor of a pedro-train checkpoint.

``ckpt:runs/NAME/latest.pt`` (or ``ckpt:runs/NAME``, which reads its ``latest.pt``) plays the most
probable legal action; ``ckpt:PATH,greedy=false`` samples from the policy instead, drawing from the
``rng`` of :meth:`PolicyAgent.act` so seeded evaluations stay reproducible. The actor runs on CPU.

A policy travels without its training state as a small payload (:func:`policy_payload`: the rules,
the network shape and weights, and the observation layout it reads), as bytes to evaluation
workers (:func:`policy_bytes`) or as a file (the shipped ``pretrained`` policy). One trained for other table
sizes than the games it is asked to play is refused in those words. A policy saved in layout version 1 (sized
per config, before 2026-12-06) is read by moving its first layer's columns to their version-2 entries
(:func:`migrated_payload`: the same function of the same games), for the games whose version-1 layout it
recorded (its table size and variant); a recorded layout that is neither is refused naming the first piece
that differs.
"""

from __future__ import annotations

import io
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agents.base import Agent
from agents.networks import ActorCritic, NetworkShape, gumbel_max_actions
from pedro_env.actions import action_to_str
from pedro_env.config import PedroConfig, make_config
from pedro_env.layout_v1 import v1_entries, v1_full_state_entries, v1_pieces, v1_scale, v1_size
from pedro_env.observation_layout import (
    FULL_STATE_SIZE,
    LAYOUT_VERSION,
    OBSERVATION_SIZE,
    observation_pieces,
    observation_scale,
    observation_size,
)


class PolicyAgent(Agent):
    """The actor of an :class:`ActorCritic`: argmax (``greedy``) or a sample of its masked softmax."""

    def __init__(self, config: PedroConfig, network: ActorCritic, greedy: bool = True) -> None:
        super().__init__(config)
        expected = observation_size(config)
        if network.shape.observation_size != expected:
            raise ValueError(
                f"the policy reads observations of {network.shape.observation_size} entries, but games of this config "
                f"have {expected} (the observation size depends on the number of players and the variant)"
            )
        self.network = network
        self.greedy = bool(greedy)
        self.trained_rules_note = ""  # set by the loaders: how the training rules differ from config

    @torch.no_grad()
    def act(self, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if self.greedy:  # a forced move needs no forward (sampling draws for every row, so it keeps them all)
            masks = np.atleast_2d(np.asarray(action_masks)).astype(bool, copy=False)
            actions = masks.argmax(axis=1).astype(np.int64)
            choosing = np.flatnonzero(masks.sum(axis=1) > 1)
            if choosing.size:
                observations = np.atleast_2d(np.asarray(observations))
                logits = self.network.logits(
                    torch.from_numpy(np.ascontiguousarray(observations[choosing])), _bool_tensor(masks[choosing])
                )
                actions[choosing] = torch.argmax(logits, dim=-1).numpy()
            return actions
        logits = self.network.logits(torch.from_numpy(np.ascontiguousarray(observations)), _bool_tensor(action_masks))
        return gumbel_max_actions(logits.numpy(), rng)

    @torch.no_grad()
    def thoughts(self, observations: np.ndarray, action_masks: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """(B, D) observations, (B, 133) masks -> (B, 133) float32 action probabilities (0 where illegal) and the
        (B,) float32 value estimates, None when the critic reads more than the observation (a centralized critic)."""
        observations = torch.from_numpy(np.ascontiguousarray(observations))
        masks = _bool_tensor(action_masks)
        if self.network.shape.critic_input_size != self.network.shape.observation_size:
            return torch.softmax(self.network.logits(observations, masks), dim=-1).numpy(), None
        logits, values = self.network.logits_and_value(observations, masks)
        return torch.softmax(logits, dim=-1).numpy(), values.numpy()

    @torch.no_grad()
    def log_probabilities(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """(B, D) observations, (B, 133) masks -> (B, 133) float32 log-probabilities of the masked softmax (very
        negative where illegal)."""
        logits = self.network.logits(torch.from_numpy(np.ascontiguousarray(observations)), _bool_tensor(action_masks))
        return torch.log_softmax(logits, dim=-1).numpy()

    def decision_thoughts(self, observation: np.ndarray, action_mask: np.ndarray, top: int = 5) -> dict[str, Any]:
        """One decision's thoughts as a replay record keeps them (:mod:`arena.replay`): ``{"agent", "top": [[action
        text, probability], ...], "value"}``, the ``top`` most probable legal actions (4 places; value None without
        one)."""
        mask = np.asarray(action_mask).reshape(-1)
        probabilities, values = self.thoughts(np.asarray(observation)[None], mask[None])
        order = [int(a) for a in np.argsort(-probabilities[0], kind="stable")[:top] if mask[a]]
        return {
            "agent": self.name,
            "top": [[action_to_str(action), round(float(probabilities[0, action]), 4)] for action in order],
            "value": None if values is None else round(float(values[0]), 4),
        }


def _bool_tensor(masks: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(masks).astype(bool, copy=False))


def observation_layout(config: PedroConfig | None = None) -> list[list[Any]]:
    """The observation's pieces as ``[[name, size], ...]`` (what a saved policy records it reads; every config's)."""
    return [[name, int(size)] for name, size in observation_pieces(config)]


def trained_rule_sets(payload: dict[str, Any]) -> list[PedroConfig]:
    """The rules a checkpoint's policy was trained under: its ``env``, or each entry of its ``rules_mix`` (``env``
    with the entry's ``set`` on top). Rules that cannot be read count as the default's."""
    recorded = payload.get("config") if isinstance(payload.get("config"), dict) else {}
    env = recorded.get("env") if isinstance(recorded.get("env"), dict) else {}
    mix = recorded.get("rules_mix") if isinstance(recorded.get("rules_mix"), list) else []
    sets = [entry.get("set", {}) for entry in mix if isinstance(entry, dict)] or [{}]
    rule_sets = []
    for overrides in sets:
        try:
            rule_sets.append(make_config(**{**env, **(overrides if isinstance(overrides, dict) else {})}))
        except (TypeError, ValueError):
            rule_sets.append(PedroConfig())
    return rule_sets


TABLE_RECIPES = {4: "pedro-train ppo_selfplay", 3: "pedro-train individual3 --nproc 2", 2: "pedro-train individual2"}
"""Number of players -> the command that trains a policy for that table size (the configs' headers say how)."""


def check_table_size(payload: dict[str, Any], config: PedroConfig, source: str) -> None:
    """Raise ValueError when the policy in ``payload`` was trained at none of ``config``'s table size."""
    trained = sorted({rules.num_players for rules in trained_rule_sets(payload)})
    playing = config.num_players
    if playing not in trained:
        recipe = TABLE_RECIPES[playing]
        sizes = " or ".join(map(str, trained))
        raise ValueError(
            f"{source} was trained for {sizes} players; these games have {playing} "
            f"(train one for {playing} players: {recipe}, or play pretrained, trained for every table)"
        )


def recorded_layout_version(recorded: Any) -> int:
    """The layout version of a recorded ``[[name, size], ...]``: 1 without the ``rules`` piece, else this one."""
    try:
        names = [str(name) for name, _ in recorded]
    except (TypeError, ValueError):
        return LAYOUT_VERSION  # compared, and refused as malformed, by check_layout
    return LAYOUT_VERSION if "rules" in names else 1


def check_layout(recorded: Any, config: PedroConfig, source: str) -> None:
    """Raise ValueError when a policy's recorded observation layout cannot read games of ``config``: a version-2
    layout that is not this one, or a version-1 layout that is not ``config``'s (another table size or variant)."""
    if recorded is None:  # written before layouts were recorded: the size check of PolicyAgent still applies
        return
    version = recorded_layout_version(recorded)
    expected = observation_layout() if version == LAYOUT_VERSION else [[name, size] for name, size in v1_pieces(config)]
    try:
        recorded = [[str(name), int(size)] for name, size in recorded]
    except (TypeError, ValueError):
        raise ValueError(f"{source} holds a malformed observation layout (expected [[name, size], ...])") from None
    if recorded == expected:
        return
    advice = (
        "a policy of layout version 1 reads only the table size and variant it was trained for; retrain it"
        if version == 1
        else "an older encoding; retrain it"
    )
    for index, (want, have) in enumerate(zip(expected, recorded)):
        if want != have:
            raise ValueError(
                f"{source} reads another observation layout (version {version}): piece {index} is {have[0]!r} of "
                f"{have[1]} entries, but these games encode {want[0]!r} of {want[1]} ({advice})"
            )
    raise ValueError(
        f"{source} reads another observation layout (version {version}): {len(recorded)} pieces recorded, these "
        f"games have {len(expected)} ({advice})"
    )


def check_resumable_layout(payload: dict[str, Any], source: str) -> None:
    """Raise ValueError (one line) when a training checkpoint was written in another layout version: its optimizer
    state belongs to that layout's network, so the run cannot go on; its weights can start a new one."""
    recorded = payload.get("observation_layout")
    version = recorded_layout_version(recorded) if recorded is not None else 1
    if version != LAYOUT_VERSION:
        raise ValueError(
            f"{source} was written in observation layout version {version}; this version reads {LAYOUT_VERSION}, so "
            f"the run cannot be resumed: start a new run from its weights (init_from={source})"
        )


def check_readable(payload: dict[str, Any], config: PedroConfig, source: str) -> None:
    """Raise ValueError (one line) when the policy of ``payload`` cannot play games of ``config``: trained at
    another table size, or its recorded layout cannot read them (:func:`check_layout`)."""
    check_table_size(payload, config, source)
    check_layout(payload.get("observation_layout"), config, source)


def _remapped_columns(weight: torch.Tensor, entries: np.ndarray, ratio: np.ndarray, width: int) -> torch.Tensor:
    """A first layer's (H, D1) weights as (H, width): column ``i`` moved to ``entries[i]`` and multiplied by
    ``ratio[i]`` (the old scale over the new), 0 in the columns nothing moves to."""
    moved = torch.zeros(weight.shape[0], width, dtype=weight.dtype)
    moved[:, torch.from_numpy(entries)] = weight * torch.from_numpy(ratio).to(weight.dtype)[None, :]
    return moved


def migrated_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """A payload of layout version 1 as one of this version: the network reads this layout, computing the same
    function of the same games (first layers' columns moved to their entries and rescaled; the new entries, the
    ``rules`` piece among them, weighted 0). A payload of this version is returned as it is."""
    shape = NetworkShape.from_dict(payload["network"])
    trained = trained_rule_sets(payload)[0]
    recorded = payload.get("observation_layout")
    old = recorded_layout_version(recorded) == 1 if recorded is not None else shape.observation_size == v1_size(trained)
    if not old:
        return payload
    entries = v1_entries(trained)
    ratio = v1_scale(trained) / observation_scale()[entries]
    centralized = shape.critic_input_size != shape.observation_size
    model = dict(payload["model"])
    for key in ("actor.0.weight", "trunk.0.weight"):
        if key in model:
            model[key] = _remapped_columns(model[key], entries, ratio, OBSERVATION_SIZE)
    if "critic.0.weight" in model:
        if centralized:
            full_ratio = np.concatenate([ratio, np.ones(shape.critic_input_size - shape.observation_size)])
            critic = _remapped_columns(
                model["critic.0.weight"], v1_full_state_entries(trained), full_ratio, FULL_STATE_SIZE
            )
        else:
            critic = _remapped_columns(model["critic.0.weight"], entries, ratio, OBSERVATION_SIZE)
        model["critic.0.weight"] = critic
    critic_size = FULL_STATE_SIZE if centralized else OBSERVATION_SIZE
    scale = torch.from_numpy(observation_scale())
    critic_scale = torch.ones(critic_size)
    critic_scale[:OBSERVATION_SIZE] = scale
    model["actor_scale"], model["critic_scale"] = scale, critic_scale
    network = {**shape.to_dict(), "observation_size": OBSERVATION_SIZE, "critic_input_size": critic_size}
    return {**payload, "network": network, "model": model, "observation_layout": observation_layout()}


def policy_payload(network: ActorCritic, config: PedroConfig) -> dict[str, Any]:
    """The policy alone, as a checkpoint-shaped dict (readable by ``ckpt:``): rules, shape, weights, layout."""
    from dataclasses import asdict

    return {
        "config": {"env": asdict(config)},
        "network": network.shape.to_dict(),
        "model": {name: tensor.detach().to("cpu", copy=True) for name, tensor in network.state_dict().items()},
        "observation_layout": observation_layout(),
        "observation_layout_version": LAYOUT_VERSION,
    }


def policy_bytes(network: ActorCritic, config: PedroConfig) -> bytes:
    """:func:`policy_payload` serialized (``torch.save``), e.g. to hand a policy to evaluation workers."""
    buffer = io.BytesIO()
    torch.save(policy_payload(network, config), buffer)
    return buffer.getvalue()


def policy_agent_from_bytes(data: bytes, config: PedroConfig, greedy: bool = True, name: str = "policy") -> PolicyAgent:
    """The agent of :func:`policy_bytes` (read with ``weights_only=True``)."""
    payload = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    check_readable(payload, config, name)
    agent = PolicyAgent(config, network_from_checkpoint(payload), greedy=greedy)
    agent.name = name
    return agent


def network_from_checkpoint(payload: dict[str, Any]) -> ActorCritic:
    """The ActorCritic saved in a checkpoint payload (see :mod:`agents.checkpoint`; one of layout version 1
    migrated), in eval mode on CPU."""
    payload = migrated_payload(payload)
    shape = NetworkShape.from_dict(payload["network"])
    network = ActorCritic(shape, observation_scale())
    network.load_state_dict(payload["model"])
    network.eval()
    return network


def load_policy_agent(path: str, config: PedroConfig, greedy: bool = True) -> PolicyAgent:
    """``ckpt:PATH`` -> a PolicyAgent; raises agents.checkpoint.CheckpointError for a bad file."""
    from agents.checkpoint import CheckpointError, load_checkpoint

    payload = load_checkpoint(path)
    check_readable(payload, config, f"checkpoint {path}")
    try:
        network = network_from_checkpoint(payload)
    except (KeyError, TypeError, RuntimeError, ValueError) as error:
        raise CheckpointError(f"checkpoint {path} holds a network that cannot be rebuilt: {error}") from None
    agent = PolicyAgent(config, network, greedy=greedy)
    agent.trained_rules_note = trained_rules_note(payload, config)
    return agent


def trained_rules_note(payload: dict[str, Any], config: PedroConfig) -> str:
    """How the rules a policy was trained under differ from ``config`` (``''`` when they are the same, or when it
    was trained across several rule sets: its observation says which game is played), e.g.
    ``"target_score 62 (here 21)"``: the observation may fit while the game is another one."""
    if len(trained_rule_sets(payload)) > 1:
        return ""
    try:
        trained = make_config(**payload["config"].get("env", {}))
    except (ValueError, TypeError, KeyError, AttributeError):
        return "rules not recorded"
    return ", ".join(
        f"{name} {getattr(trained, name)!r} (here {getattr(config, name)!r})" for name in rules_differ(trained, config)
    )


def rules_differ(one: PedroConfig, other: PedroConfig) -> list[str]:
    """The rule keys whose values differ between ``one`` and ``other``, in the config's order; how games are cut and
    rewarded (:data:`EPISODE_KEYS`) is not a rule."""
    from dataclasses import fields

    return [
        item.name
        for item in fields(one)
        if item.name not in EPISODE_KEYS and getattr(one, item.name) != getattr(other, item.name)
    ]


EPISODE_KEYS = ("reward", "episode", "max_deals")  # how games are cut and rewarded, not how they are played


def load_initial_weights(path: str | Path, source: str, shape: NetworkShape) -> dict[str, Any]:
    """The weights of the checkpoint or run directory at ``path`` (``source``: what ``init_from`` called it), checked
    against the network of this run; raises CheckpointError saying what does not fit. Any table size or rules may
    start from them: every config has one observation layout, and a version-1 policy is migrated from its own
    rules."""
    from agents.checkpoint import CheckpointError, load_checkpoint

    payload = load_checkpoint(path)
    try:
        check_layout(payload.get("observation_layout"), trained_rule_sets(payload)[0], f"init_from {source}")
    except ValueError as error:
        raise CheckpointError(str(error)) from None
    try:
        payload = migrated_payload(payload)
        saved = NetworkShape.from_dict(payload["network"])
    except (KeyError, TypeError, ValueError) as error:
        raise CheckpointError(f"init_from {source} holds a network that cannot be rebuilt: {error}") from None
    if saved != shape:
        differences = ", ".join(
            f"{item.name} {getattr(saved, item.name)!r} (this config: {getattr(shape, item.name)!r})"
            for item in fields(NetworkShape)
            if getattr(saved, item.name) != getattr(shape, item.name)
        )
        raise CheckpointError(f"init_from {source} holds another network: {differences}")
    return payload["model"]
