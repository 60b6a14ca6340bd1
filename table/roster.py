"""The agents a table offers: every shipped spec, ``pretrained``, and the checkpoints under ``--models DIR``.

A client names an agent by its roster name only (``rule:heuristic``, ``models:run1/latest.pt``); the
server maps the name to a spec it built itself, so no path a client sends is ever opened. Search
agents keep caches between calls, so each match gets its own; the others are shared
(:func:`arena.match.build_agent`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from agents import PRETRAINED_PATH, REGISTRY, Agent, AgentSpecError, make_agent
from arena.match import build_agent
from pedro_env.config import PedroConfig

MAX_MODELS = 200  # checkpoints listed from --models DIR at most
ABOUT = {
    "random": "uniformly random legal moves",
    "rule:heuristic": "hand-written rules: bids on its estimate of the points it can take",
    "rule:cautious": "the rule agent that bids less and defends more",
    "search:pimc": "rule bids, look-ahead card play (perfect-information Monte Carlo)",
    "search:full": "sampled look-ahead for bids, trumps and discards, PIMC in the play (thinks ~0.1-1 s a move)",
    "search:policy": "look-ahead at every move with the shipped policy as everyone's model (thinks ~0.1-1 s a move)",
    "pretrained": "the shipped self-play PPO policy",
}
NEEDS_POLICY = ("search:policy",)  # offered only where the shipped policy loads (torch installed)


class UnknownAgentError(ValueError):
    """A name that is not on the roster (the message lists the names that are)."""


@dataclass(frozen=True)
class RosterEntry:
    """One agent on offer: ``name`` (what clients send), ``kind`` (random, rule, search or policy), ``about``
    (one line) and ``spec`` (the agent spec the server builds it from; never sent)."""

    name: str
    kind: str
    about: str
    spec: str

    def public(self) -> dict[str, str]:
        return {"name": self.name, "kind": self.kind, "about": self.about}


def find_models(models_dir: str | Path) -> list[tuple[str, Path]]:
    """``(models:RELATIVE, path)`` of every ``*.pt`` under ``models_dir`` (links not followed), sorted, at most
    :data:`MAX_MODELS`."""
    root = Path(models_dir).resolve()
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders.sort()
        for name in sorted(files):
            if name.endswith(".pt"):
                path = Path(folder) / name
                found.append((f"models:{path.relative_to(root).as_posix()}", path))
                if len(found) >= MAX_MODELS:
                    return found
    return found


class Roster:
    """The agents a table offers, by name (see the module docstring)."""

    def __init__(self, models_dir: str | Path | None = None) -> None:
        names = ["random"] + [f"{kind}:{name}" for kind, names in REGISTRY.items() for name in names]
        policy_loads = PRETRAINED_PATH.is_file() and _has_torch()
        names = [name for name in names if policy_loads or name not in NEEDS_POLICY]
        entries = [RosterEntry(name, name.split(":")[0], ABOUT.get(name, ""), name) for name in names]
        if policy_loads:
            entries.append(RosterEntry("pretrained", "policy", ABOUT["pretrained"], "pretrained"))
        if models_dir is not None and _has_torch():
            for name, path in find_models(models_dir):
                entries.append(
                    RosterEntry(name, "policy", f"a checkpoint from {Path(models_dir).name}/", f"ckpt:{path}")
                )
        self.entries = {entry.name: entry for entry in entries}

    def public(self) -> list[dict[str, str]]:
        return [entry.public() for entry in self.entries.values()]

    def entry(self, name: object) -> RosterEntry:
        if not isinstance(name, str) or name not in self.entries:
            shown = repr(name)[:60]
            raise UnknownAgentError(f"unknown agent {shown}: allowed are {', '.join(self.entries)}")
        return self.entries[name]

    def build(self, name: object, config: PedroConfig) -> Agent:
        """The agent ``name`` for games of ``config``; UnknownAgentError, or AgentSpecError for a checkpoint that
        does not load (its message names the roster name, not the path)."""
        entry = self.entry(name)
        try:
            agent = make_agent(entry.spec, config) if entry.kind == "search" else build_agent(entry.spec, config)
        except AgentSpecError as error:
            message = str(error).replace(entry.spec.removeprefix("ckpt:"), entry.name)
            raise AgentSpecError(f"agent {entry.name} cannot play: {message}") from None
        agent.name = entry.name  # thoughts and records name the roster entry, never a server path
        return agent

    def policy_names(self) -> list[str]:
        return [entry.name for entry in self.entries.values() if entry.kind == "policy"]


def _has_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True
