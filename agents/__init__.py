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
                       (``search:policy,policy=ckpt:PATH``; default: docs/search.md)
``ckpt:PATH``          a trained policy checkpoint (written by the trainer)
``pretrained``         the policy shipped in ``models/pretrained.pt``: one network for every table size and
                       rule set of docs/rules.md section 9 (its recipe: docs/training.md)
``openspiel:ismcts``   OpenSpiel's ISMCTSBot on ``python_pedro`` (the openspiel extra; docs/openspiel.md):
                       ``openspiel:ismcts,simulations=1000,rollout=engine,horizon=deal``
=====================  ==========================================================================

``ckpt:`` and ``pretrained`` take ``,greedy=false`` to sample from the policy instead of playing
its most probable action. An option's text is read by its type as every ``KEY=VALUE`` is (:mod:`pedro_env.keys`):
a rule agent's by the fields of its Personality, a search's by its constructor's annotations.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.base import Agent, RandomAgent
from pedro_env.actions import uniform_legal_actions
from pedro_env.config import PedroConfig, make_config
from pedro_env.keys import Key, declared_keys, parameter_keys, split_assignment

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
    "openspiel": {"ismcts": "agents.openspiel_bots:IsmctsAgent"},  # needs the openspiel extra
}
AGENT_SPECS = (
    ["random"] + [f"{kind}:{name}" for kind, names in REGISTRY.items() for name in names] + ["ckpt:PATH", "pretrained"]
)


def shipped_folder(package: Path, name: str) -> Path:
    """A folder of files the repository keeps at its top and the wheel ships as the package data of ``package`` (a
    package's folder; pyproject.toml's package-dir maps the one copy in): ``package/name`` in a wheel's install,
    else ``name`` beside the package (a clone, editable or not)."""
    installed = package / name
    return installed if installed.is_dir() else package.parent / name


MODELS_DIR = shipped_folder(Path(__file__).resolve().parent, "models")
"""The shipped policies: the repository's ``models/``, ``agents/models/`` in a wheel's install."""
PRETRAINED_PATH = MODELS_DIR / "pretrained.pt"
"""The shipped policy (a checkpoint holding only the policy): one network for every table size and rule set of
docs/rules.md section 9, the agent spec ``pretrained``."""


PPO_POLICY_PATH = MODELS_DIR / "ppo_policy.pt"
"""The long recipe's PPO policy of four players, before its card play was distilled: ``search:policy``'s default
model of the players under the default rules and where ``python -m train.distill`` starts."""
PPO_POLICY_SPEC = f"ckpt:{PPO_POLICY_PATH}"
"""The agent spec of :data:`PPO_POLICY_PATH`."""


GREEDY = Key("greedy", bool)
"""A checkpoint's one option: play its most probable action (true) or sample (false)."""


def _option_texts(parts: list[str], spec: str) -> dict[str, str]:
    """``['samples=32', 'depth=2']`` -> ``{'samples': '32', 'depth': '2'}``: the text of each option, read by its
    type when the agent is built (:func:`option_values`)."""
    options: dict[str, str] = {}
    for part in parts:
        assignment = split_assignment(part)
        if assignment is None:
            raise AgentSpecError(f"agent spec {spec!r}: option {part!r} is not KEY=VALUE")
        options[assignment[0]] = assignment[1]
    return options


def option_keys(agent_class: type) -> dict[str, Key]:
    """Option name -> :class:`~pedro_env.keys.Key` of an agent class: the fields of its ``option_fields``
    dataclass (the rule agents' Personality), else the annotated keywords of its constructor (the searches)."""
    option_fields = getattr(agent_class, "option_fields", None)
    return declared_keys(option_fields) if option_fields is not None else parameter_keys(agent_class.__init__)


def option_values(agent_class: type, texts: dict[str, str], spec: str) -> dict[str, Any]:
    """An agent spec's option texts read by their types (the same reader as every KEY=VALUE); AgentSpecError in
    one line naming the option, its text and what it takes, or the options there are."""
    declared = option_keys(agent_class)
    values = {}
    for name, text in texts.items():
        if name not in declared:
            raise AgentSpecError(f"agent spec {spec!r}: unknown option {name!r}; it takes {', '.join(declared)}")
        values[name] = declared[name].value(text, f"agent spec {spec!r}: option {name!r}", AgentSpecError)
    return values


@dataclass(frozen=True)
class AgentSpec:
    """A parsed agent spec: ``kind`` is ``random``, a :data:`REGISTRY` kind (``rule``, ``search``, ``openspiel``),
    ``ckpt`` or ``pretrained``; ``name`` the registered agent or the checkpoint path (``ckpt``; the shipped file for
    ``pretrained``); ``options`` the text of each ``,KEY=VALUE`` part (read by the option's type when the agent is
    built)."""

    text: str
    kind: str
    name: str
    options: dict[str, str]


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
    return AgentSpec(text, kind, name, _option_texts(option_parts, text))


def _split_checkpoint_options(text: str) -> tuple[str, dict[str, str]]:
    """``'runs/x/latest.pt,greedy=false'`` -> ``('runs/x/latest.pt', {'greedy': 'false'})``; a comma that is part of
    an existing path stays in it. A checkpoint takes only ``greedy=true|false`` (checked here)."""
    path_text, options = text, {}
    while "," in path_text and "=" in path_text.rsplit(",", 1)[1] and not Path(path_text).exists():
        path_text, option = path_text.rsplit(",", 1)
        options.update(_option_texts([option], f"ckpt:{text}"))
    unknown = sorted(set(options) - {"greedy"})
    if unknown:
        raise AgentSpecError(
            f"agent spec ckpt:{text}: unknown option {unknown[0]!r}; a checkpoint takes greedy=true|false"
        )
    if "greedy" in options:
        GREEDY.value(options["greedy"], f"agent spec ckpt:{text}: option 'greedy'", AgentSpecError)
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
        if not PRETRAINED_PATH.is_file():
            raise AgentSpecError(
                f"the pretrained policy is not at {PRETRAINED_PATH}: it ships in the repository's models/ folder and "
                "in the wheel (reinstall: pip install -e . or the wheel)"
            )
        agent = _load_checkpoint_agent(parsed, config)
        agent.name = parsed.text
        return agent
    module_name, class_name = REGISTRY[parsed.kind][parsed.name].split(":")
    try:
        agent_class = getattr(importlib.import_module(module_name), class_name)
    except ImportError as error:  # an optional extra (openspiel:*) that is not installed
        raise AgentSpecError(f"agent spec {spec!r}: {error}") from None
    given = option_values(agent_class, parsed.options, parsed.text)
    try:
        agent = agent_class(config, **{**given, **options})
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
        greedy = GREEDY.value(parsed.options.get("greedy", "true"), f"agent spec {parsed.text}", AgentSpecError)
        agent = load_policy_agent(parsed.name, config, greedy=greedy)
    except (CheckpointError, ValueError) as error:
        raise AgentSpecError(f"agent spec {parsed.text}: {error}") from None
    agent.name = parsed.text
    return agent
