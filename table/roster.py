"""The agents a table offers: every shipped spec, ``pretrained``, and the checkpoints under ``--models DIR``.

A client names an agent by its roster name only (``rule:heuristic``, ``models:run1/latest.pt``); the
server maps the name to a spec it built itself, so no path a client sends is ever opened, and an
error names the roster entry, never the server's path to its file. Search
agents keep caches between calls, so each match gets its own; the others are shared
(:func:`arena.match.build_agent`).

Each entry says which table sizes it plays: the rule, search and random agents every size; a learned
policy only the number of players it was trained for (its observation's size depends on it):
``pretrained`` every size while its shipped file exists, a ``--models`` checkpoint the ``num_players`` it recorded
(read once, the tensors mapped and not read), and ``search:policy`` the sizes whose default models exist.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agents import PPO_POLICY_PATH, PRETRAINED_PATH, REGISTRY, Agent, AgentSpecError, make_agent
from arena.match import build_agent
from pedro_env.config import PedroConfig

MAX_MODELS = 200  # checkpoints listed from --models DIR at most
TABLE_SIZES = (2, 3, 4)  # the numbers of players Pedro is played by (docs/rules.md section 9)
ABOUT = {
    "random": "uniformly random legal moves",
    "rule:heuristic": "hand-written rules: bids on its estimate of the points it can take",
    "rule:cautious": "the rule agent that bids less and defends more",
    "search:pimc": "rule bids, look-ahead card play (perfect-information Monte Carlo)",
    "search:full": "sampled look-ahead for bids, trumps and discards, PIMC in the play (thinks ~0.1-1 s a move)",
    "search:policy": "look-ahead at every move with a shipped policy as everyone's model (thinks ~0.1-1 s a move)",
    "pretrained": "the shipped self-play PPO policy, trained under every rule set",
    "openspiel:ismcts": "OpenSpiel's ISMCTS (100 simulations a move) on the python_pedro game",
}
NEEDS_POLICY = ("search:policy",)  # offered only where a shipped policy loads (torch installed)
SHIPPED_FILES = (PRETRAINED_PATH, PPO_POLICY_PATH)
ABSOLUTE_PATH = re.compile(r"(?<![\w.:~])/[^\s'\",;()]+")  # what is left of a server path once the known ones are named


class UnknownAgentError(ValueError):
    """A name that is not on the roster (the message lists the names that are)."""


@dataclass(frozen=True)
class RosterEntry:
    """One agent on offer: ``name`` (what clients send), ``kind`` (random, rule, search or policy), ``about``
    (one line), ``spec`` (the agent spec the server builds it from; never sent), ``players`` (the table sizes it
    plays) and ``unfit`` (why it plays no other size, naming no server path; empty when it plays them all)."""

    name: str
    kind: str
    about: str
    spec: str
    players: tuple[int, ...] = TABLE_SIZES
    unfit: str = ""

    def public(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "about": self.about,
            "players": list(self.players),
            "unfit": self.unfit,
        }


def find_models(models_dir: str | Path) -> list[tuple[str, Path]]:
    """``(models:RELATIVE, path)`` of every ``*.pt`` under ``models_dir``, sorted, at most :data:`MAX_MODELS`.
    Links are not followed, to folders or to files: a link could lead out of the folder the server was given."""
    root = Path(models_dir).resolve()
    found = []
    for folder, subfolders, files in os.walk(root):  # os.walk descends into no linked folder
        subfolders.sort()
        for name in sorted(files):
            path = Path(folder) / name
            if name.endswith(".pt") and not path.is_symlink():
                found.append((f"models:{path.relative_to(root).as_posix()}", path))
                if len(found) >= MAX_MODELS:
                    return found
    return found


class Roster:
    """The agents a table offers, by name (see the module docstring)."""

    def __init__(self, models_dir: str | Path | None = None) -> None:
        names = ["random"] + [f"{kind}:{name}" for kind, names in REGISTRY.items() for name in names]
        names = [name for name in names if not name.startswith("openspiel:") or _has_pyspiel()]
        entries = [RosterEntry(name, name.split(":")[0], ABOUT.get(name, ""), name) for name in names]
        if _has_torch():
            entries.append(RosterEntry("pretrained", "policy", ABOUT["pretrained"], "pretrained"))
        entries = [shipped_policy_sizes(entry) for entry in entries if entry.name not in NEEDS_POLICY or _has_torch()]
        entries = [entry for entry in entries if entry.players]  # a shipped policy missing at every size
        if models_dir is not None and _has_torch():
            for name, path in find_models(models_dir):
                entries.append(checkpoint_entry(name, path, Path(models_dir).name))
        self.entries = {entry.name: entry for entry in entries}

    def public(self) -> list[dict[str, Any]]:
        return [entry.public() for entry in self.entries.values()]

    def entry(self, name: object) -> RosterEntry:
        if not isinstance(name, str) or name not in self.entries:
            shown = repr(name)[:60]
            raise UnknownAgentError(f"unknown agent {shown}: allowed are {', '.join(self.entries)}")
        return self.entries[name]

    def build(self, name: object, config: PedroConfig) -> Agent:
        """The agent ``name`` for games of ``config``; UnknownAgentError (an unknown name, or one that does not play
        this table size), or AgentSpecError for a checkpoint that does not load (its message names the roster name,
        not the path)."""
        entry = self.entry(name)
        if not entry.players:
            raise AgentSpecError(f"agent {entry.name} cannot play: {entry.unfit}")
        if config.num_players not in entry.players:
            fitting = ", ".join(self.names_for(config.num_players))
            raise UnknownAgentError(
                f"agent {entry.name} does not play {config.num_players} players ({entry.unfit}): "
                f"{config.num_players} players take {fitting}"
            )
        try:
            agent = make_agent(entry.spec, config) if entry.kind == "search" else build_agent(entry.spec, config)
        except AgentSpecError as error:
            raise AgentSpecError(f"agent {entry.name} cannot play: {without_paths(str(error), entry)}") from None
        agent.name = entry.name  # thoughts and records name the roster entry, never a server path
        return agent

    def names_for(self, num_players: int) -> list[str]:
        """The roster names that play games of ``num_players``."""
        return [entry.name for entry in self.entries.values() if num_players in entry.players]

    def policy_names(self, num_players: int | None = None) -> list[str]:
        """The learned policies on offer (those that play ``num_players``, if given)."""
        return [
            entry.name
            for entry in self.entries.values()
            if entry.kind == "policy" and (num_players is None or num_players in entry.players)
        ]


def without_paths(message: str, entry: RosterEntry) -> str:
    """``message`` with the server's paths to ``entry``'s files written as its roster name (a checkpoint's, the
    shipped policies'), and any other absolute path as ``<server file>``: errors name what the client named."""
    for path in sorted({entry.spec.removeprefix("ckpt:"), *map(str, SHIPPED_FILES)}, key=len, reverse=True):
        message = message.replace(path, entry.name)
    return ABSOLUTE_PATH.sub("<server file>", message)


def shipped_policy_sizes(entry: RosterEntry) -> RosterEntry:
    """``entry`` with the table sizes it plays where it runs on shipped policy files (``pretrained``, and
    ``search:policy``'s default models: the PPO policy under the default rules, ``pretrained`` under any other, so
    four players need both); others as they are."""
    if entry.name == "pretrained":
        needed, what = {size: (PRETRAINED_PATH,) for size in TABLE_SIZES}, "shipped"
    elif entry.name == "search:policy":
        needed = {size: (PRETRAINED_PATH, PPO_POLICY_PATH) if size == 4 else (PRETRAINED_PATH,) for size in TABLE_SIZES}
        what = "its models are shipped"
    else:
        return entry
    players = tuple(size for size, paths in needed.items() if all(path.is_file() for path in paths))
    shipped = " and ".join(str(size) for size in players)
    unfit = f"{what} for {shipped} players only" if players else "its shipped file is missing"
    return replace(entry, players=players, unfit="" if players == TABLE_SIZES else unfit)


def checkpoint_entry(name: str, path: Path, folder: str) -> RosterEntry:
    """The roster entry of the checkpoint at ``path``, playing the number of players it recorded (none when it
    cannot be read; building it then says why)."""
    from agents.checkpoint import CheckpointError, load_checkpoint
    from agents.policy import trained_rule_sets

    entry = RosterEntry(name, "policy", f"a checkpoint from {folder}/", f"ckpt:{path}")
    try:
        trained = sorted({rules.num_players for rules in trained_rule_sets(load_checkpoint(path, mmap=True))})
    except CheckpointError as error:
        return replace(entry, players=(), unfit=without_paths(str(error), entry))
    sizes = " or ".join(map(str, trained))
    return replace(entry, players=tuple(trained), unfit=f"it was trained for {sizes} players")


def _has_pyspiel() -> bool:
    """Whether OpenSpiel is installed (the openspiel extra): the openspiel:* agents are offered only then."""
    try:
        import pyspiel  # noqa: F401
    except ImportError:
        return False
    return True


def _has_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True
