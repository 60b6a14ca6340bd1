"""Agents for Pedro, all answering one batched call, and :func:`make_agent` to build any of them from a spec.

Specs:

=====================  ==========================================================================
``random``             uniformly random legal actions
``rule:heuristic``     the rule-based baseline (docs/agents.md describes every rule)
``rule:cautious``      a second rule-based personality that bids and plays differently
``search:pimc``        perfect-information Monte Carlo in the play phase (agents/search/);
                       options after commas: ``search:pimc,samples=32,depth=2``
``search:full``        look-ahead bids, trumps and discards (sampled worlds played out), PIMC in the play
``search:policy``      look-ahead at every decision with a learned policy as the model of every player
                       (``search:policy,policy=ckpt:PATH``; default the PPO policy ``models/ppo_policy.pt``)
``ckpt:PATH``          a trained policy checkpoint (written by the trainer)
``pretrained``         the policy shipped in ``models/pretrained.pt``: the PPO policy with its card play
                       distilled from ``search:pimc`` (its recipe: docs/training.md)
=====================  ==========================================================================

``ckpt:`` and ``pretrained`` take ``,greedy=false`` to sample from the policy instead of playing
its most probable action.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.base import Agent, RandomAgent
from pedro_env.actions import uniform_legal_actions
from pedro_env.config import PedroConfig, make_config

__all__ = [
    "AGENT_SPECS",
    "Agent",
    "AgentSpec",
    "AgentSpecError",
    "RandomAgent",
    "make_agent",
    "parse_spec",
    "uniform_legal_actions",
]


class AgentSpecError(ValueError):
    """An agent spec that names no agent, or a checkpoint that cannot be loaded."""


# kind -> name -> "module:Class"; imported on first use
REGISTRY: dict[str, dict[str, str]] = {
    "rule": {"heuristic": "agents.rule_based:HeuristicAgent", "cautious": "agents.rule_based:CautiousAgent"},
    "search": {
        "pimc": "agents.search:PimcAgent",
        "full": "agents.search:LookaheadAgent",
        "policy": "agents.search.guided:PolicySearchAgent",
    },
}
AGENT_SPECS = (
    ["random"] + [f"{kind}:{name}" for kind, names in REGISTRY.items() for name in names] + ["ckpt:PATH", "pretrained"]
)
MODELS_DIR = Path(__file__).resolve().parents[1] / "models"
PRETRAINED_PATH = MODELS_DIR / "pretrained.pt"
"""The shipped policy of four players (a checkpoint holding only the policy; it lives in the repository, beside this
package)."""
PRETRAINED_PATHS = {4: PRETRAINED_PATH, 3: MODELS_DIR / "pretrained_3p.pt", 2: MODELS_DIR / "pretrained_2p.pt"}
"""Number of players -> the shipped policy of that table size: ``pretrained`` plays the one that fits the game."""


def pretrained_path(num_players: int) -> Path:
    """The shipped policy for games of ``num_players`` (:data:`PRETRAINED_PATHS`; the file may be missing)."""
    return PRETRAINED_PATHS[num_players]


PPO_POLICY_PATH = MODELS_DIR / "ppo_policy.pt"
"""The long recipe's PPO policy, before its card play was distilled: ``search:policy``'s default model of the
players and where ``python -m train.distill`` starts (same layout as :data:`PRETRAINED_PATH`)."""
PPO_POLICY_SPEC = f"ckpt:{PPO_POLICY_PATH}"
"""The agent spec of :data:`PPO_POLICY_PATH`."""


def _parse_options(parts: list[str], spec: str) -> dict[str, Any]:
    """``['samples=32', 'depth=2']`` -> ``{'samples': 32, 'depth': 2}`` (ints, floats, true/false, else strings)."""
    options: dict[str, Any] = {}
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise AgentSpecError(f"agent spec {spec!r}: option {part!r} is not KEY=VALUE")
        parsed: Any = value
        if value.lower() in ("true", "false"):
            parsed = value.lower() == "true"
        else:
            for kind in (int, float):
                try:
                    parsed = kind(value)
                    break
                except ValueError:
                    pass
        options[key.strip()] = parsed
    return options


@dataclass(frozen=True)
class AgentSpec:
    """A parsed agent spec: ``kind`` is ``random``, ``rule``, ``search``, ``ckpt`` or ``pretrained``; ``name`` the
    registered agent (rule and search kinds) or the checkpoint path (``ckpt``; the shipped file for ``pretrained``);
    ``options`` the ``,KEY=VALUE`` parts, typed."""

    text: str
    kind: str
    name: str
    options: dict[str, Any]


def parse_spec(spec: str) -> AgentSpec:
    """The one parser of the agent-spec grammar (module docstring); AgentSpecError naming the allowed specs.

    Checks the grammar and the registry only: a checkpoint file is looked at when the agent is built.
    """
    text = spec.strip() if isinstance(spec, str) else ""
    if text == "random":
        return AgentSpec(text, "random", "random", {})
    kind, sep, rest = text.partition(":")
    if kind == "ckpt" and sep:
        path_text, options = _split_checkpoint_options(rest)
        if not path_text:
            raise AgentSpecError("agent spec 'ckpt:' needs a path: ckpt:runs/NAME/latest.pt")
        return AgentSpec(text, "ckpt", path_text, options)
    if text == "pretrained" or text.startswith("pretrained,"):
        _, options = _split_checkpoint_options(str(PRETRAINED_PATH) + text[len("pretrained") :])
        return AgentSpec(text, "pretrained", str(PRETRAINED_PATH), options)
    name, *option_parts = rest.split(",")
    if not sep or kind not in REGISTRY or name not in REGISTRY[kind]:
        raise AgentSpecError(f"unknown agent spec {spec!r}: allowed are {', '.join(AGENT_SPECS)}")
    return AgentSpec(text, kind, name, _parse_options(option_parts, text))


def _split_checkpoint_options(text: str) -> tuple[str, dict[str, Any]]:
    """``'runs/x/latest.pt,greedy=false'`` -> ``('runs/x/latest.pt', {'greedy': False})``; a comma that is part of
    an existing path stays in it. A checkpoint takes only ``greedy=true|false``."""
    path_text, options = text, {}
    while "," in path_text and "=" in path_text.rsplit(",", 1)[1] and not Path(path_text).exists():
        path_text, option = path_text.rsplit(",", 1)
        options.update(_parse_options([option], f"ckpt:{text}"))
    unknown = sorted(set(options) - {"greedy"})
    if unknown:
        raise AgentSpecError(
            f"agent spec ckpt:{text}: unknown option {unknown[0]!r}; a checkpoint takes greedy=true|false"
        )
    if not isinstance(options.get("greedy", True), bool):
        raise AgentSpecError(f"agent spec ckpt:{text}: greedy takes true or false, got {options['greedy']!r}")
    return path_text, options


def make_agent(spec: str, config: PedroConfig | None = None, **options: Any) -> Agent:
    """Build an agent from a spec string (see the module docstring) for games of ``config`` (default rules).

    Raises AgentSpecError naming the allowed specs for an unknown one, and a clear error for a
    checkpoint that is missing or cannot be loaded.
    """
    config = config or make_config()
    parsed = parse_spec(spec)
    if parsed.kind == "random":
        return RandomAgent(config)
    if parsed.kind == "ckpt":
        return _load_checkpoint_agent(parsed, config)
    if parsed.kind == "pretrained":
        path = pretrained_path(config.num_players)
        if not path.is_file():
            raise AgentSpecError(
                f"the pretrained policy of {config.num_players} players is not at {path}: it ships in the "
                "repository's models/ folder (install from a clone with pip install -e .)"
            )
        parsed = AgentSpec(parsed.text, parsed.kind, str(path), parsed.options)
        agent = _load_checkpoint_agent(parsed, config)
        agent.name = parsed.text
        return agent
    module_name, class_name = REGISTRY[parsed.kind][parsed.name].split(":")
    agent_class = getattr(importlib.import_module(module_name), class_name)
    try:
        agent = agent_class(config, **{**parsed.options, **options})
    except (TypeError, ValueError) as error:  # an unknown option, or a value out of range (samples=-1, samples=abc)
        raise AgentSpecError(f"agent spec {spec!r}: {error}") from None
    agent.name = parsed.text
    return agent


def _load_checkpoint_agent(parsed: AgentSpec, config: PedroConfig) -> Agent:
    """``ckpt:PATH[,greedy=false]`` (or ``pretrained``): the policy of a pedro-train checkpoint (agents/policy.py)."""
    path = Path(parsed.name)
    if not path.exists():
        raise AgentSpecError(f"checkpoint not found: {path} (agent spec {parsed.text})")
    try:
        from agents.checkpoint import CheckpointError
        from agents.policy import load_policy_agent
    except ImportError as error:  # torch is an optional dependency (the train extra)
        raise AgentSpecError(
            f"{parsed.text} needs torch ({error}); install: pip install torch==2.13.0 && pip install -e '.[train]'"
        ) from None
    try:
        agent = load_policy_agent(parsed.name, config, greedy=bool(parsed.options.get("greedy", True)))
    except (CheckpointError, ValueError) as error:
        raise AgentSpecError(f"agent spec {parsed.text}: {error}") from None
    agent.name = parsed.text
    return agent
