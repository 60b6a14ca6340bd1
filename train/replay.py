"""Match records (JSON) and ``pedro-replay``: any match saved as config + decks + actions, replayed exactly.

A record::

    {"format": "pedro-rl/replay", "version": 1,
     "config": {PedroConfig keys},          the rules
     "dealer": 2,                            the first dealer
     "decks": [["7H", "AS", ...], ...],      each deal's deck, 52 cards top first (thrown-in deals count)
     "players": ["human", "rule:heuristic", ...],   who sat at each seat (for the reader)
     "actions": ["bid 7", "pass", ...],      every action in order, in RULES.md section 11's text form
     "seed": 12 | null, "source": "pedro-play",
     "result": {"scores": [..], "winner": 0 | null, "deals": 11}}

Replaying feeds the decks and the first dealer to the AEC env (``reset(options=...)``) and steps
the actions: the same match, deal by deal, whatever produced it. :func:`replay_match` checks that
the replay ends with the recorded result.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pedro_env.aec import raw_env
from pedro_env.cards import card_to_str
from pedro_env.config import ConfigError, PedroConfig, make_config
from pedro_env.render import render_table
from pedro_env.rules import hashed_dealers, hashed_decks
from train import quiet_on_broken_pipe
from train.ratings import config_dict

REPLAY_FORMAT = "pedro-rl/replay"
REPLAY_VERSION = 1


class ReplayError(ValueError):
    """A record that cannot be read or does not replay to its recorded result."""


@dataclass
class MatchRecord:
    """One match: enough to replay it exactly (see the module docstring)."""

    config: dict[str, Any]
    dealer: int
    decks: list[list[str]]
    actions: list[str]
    players: list[str] = field(default_factory=list)
    seed: int | None = None
    source: str = ""
    result: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"format": REPLAY_FORMAT, "version": REPLAY_VERSION, **asdict(self)}

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=1))
        return path

    @classmethod
    def load(cls, path: str | Path) -> MatchRecord:
        path = Path(path)
        if not path.is_file():
            raise ReplayError(f"replay file not found: {path}")
        try:
            document = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise ReplayError(f"{path} is not a JSON replay record: {error}") from None
        if not isinstance(document, dict) or document.get("format") != REPLAY_FORMAT:
            raise ReplayError(f"{path} is not a pedro-rl replay record (no format {REPLAY_FORMAT!r})")
        if document.get("version") != REPLAY_VERSION:
            raise ReplayError(
                f"{path}: replay version {document.get('version')!r}, this version reads {REPLAY_VERSION}"
            )
        keys = {"config", "dealer", "decks", "actions", "players", "seed", "source", "result"}
        missing = {"config", "dealer", "decks", "actions"} - set(document)
        if missing:
            raise ReplayError(f"{path}: the record lacks {', '.join(sorted(missing))}")
        return cls(**{key: value for key, value in document.items() if key in keys})

    @property
    def pedro_config(self) -> PedroConfig:
        try:
            return make_config(**self.config)
        except ConfigError as error:
            raise ReplayError(f"the record's config is not valid: {error}") from None


def match_result(env: raw_env) -> dict[str, Any]:
    """Scores, winner (team, or None) and deals played of the env's match as it stands."""
    game = env.game
    assert game is not None
    winner = int(game.winner[0])
    return {
        "scores": [int(score) for score in game.scores[0]],
        "winner": winner if winner >= 0 else None,
        "deals": int(game.deal_index[0]) + 1,  # deals started, thrown-in ones included
    }


def record_from_env(env: Any, players: Sequence[str] = (), source: str = "env") -> MatchRecord:
    """A record of the match a Pedro AEC env (wrapped or raw) has played since its last reset.

    Uses the env's ``first_dealer``, ``action_history`` and ``deck_of_deal``; ``players`` names who sat
    at each seat (optional).
    """
    raw = env.unwrapped
    game = raw.game
    if game is None:
        raise ReplayError("the env has not been reset: there is no match to record")
    deals = int(game.deal_index[0]) + 1
    return MatchRecord(
        config=config_dict(raw.config),
        dealer=int(raw.first_dealer),
        decks=[raw.deck_of_deal(deal) for deal in range(deals)],
        actions=list(raw.action_history),
        players=list(players),
        seed=raw._seed,
        source=source,
        result=match_result(raw),
    )


def record_from_seed(
    config: PedroConfig,
    seed: int,
    actions: list[str],
    deals: int,
    players: Sequence[str],
    source: str,
    result: dict[str, Any],
) -> MatchRecord:
    """A record of a match dealt from ``seed`` (match 0), as the batched env and pedro-eval deal it."""
    seeds = np.full(deals, seed % 2**64, dtype=np.uint64)
    decks = hashed_decks(seeds, np.zeros(deals, dtype=np.int64), np.arange(deals, dtype=np.int32))
    dealer = int(hashed_dealers(seeds[:1], np.zeros(1, dtype=np.int64), config.num_players)[0])
    return MatchRecord(
        config=config_dict(config),
        dealer=dealer,
        decks=[[card_to_str(int(card)) for card in deck] for deck in decks],
        actions=list(actions),
        players=list(players),
        seed=int(seed),
        source=source,
        result=result,
    )


def replay_steps(record: MatchRecord) -> Iterator[tuple[raw_env, int | None, str | None]]:
    """Yield ``(env, None, None)`` after the reset, then ``(env, seat, action)`` after each recorded action."""
    env = raw_env(config=record.pedro_config, render_mode="ansi")
    env.reset(
        seed=record.seed if record.seed is not None else 0, options={"dealer": record.dealer, "decks": record.decks}
    )
    yield env, None, None
    for number, action in enumerate(record.actions):
        if env.game is None or env.terminations[env.agent_selection] or env.truncations[env.agent_selection]:
            raise ReplayError(f"action {number + 1} ({action!r}) comes after the match ended")
        actor = int(env.game.actor[0])
        try:
            env.step(action)
        except ValueError as error:
            raise ReplayError(f"action {number + 1} ({action!r}) does not replay: {error}") from None
        yield env, actor, action


def checked_result(record: MatchRecord, env: raw_env) -> dict[str, Any]:
    """The result of a replayed match; ReplayError if it differs from the one the record holds."""
    result = match_result(env)
    if record.result and any(record.result.get(key) != result[key] for key in result):
        raise ReplayError(f"the replay ends with {result}, the record says {record.result}")
    return result


def replay_match(record: MatchRecord) -> dict[str, Any]:
    """Replay a whole record; returns the result, raising ReplayError if it differs from the recorded one."""
    for env, _, _ in replay_steps(record):
        final = env
    return checked_result(record, final)


@quiet_on_broken_pipe
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="pedro-replay",
        description="Replay a saved match (from pedro-play, pedro-eval --save-replays or the env) step by step.",
        epilog="examples:\n  pedro-replay match.json              # every table, one after another\n"
        "  pedro-replay match.json --step       # wait for Enter after each action\n"
        "  pedro-replay match.json --deals      # only the deal summaries and the result",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", help="a replay record (JSON)")
    parser.add_argument("--step", action="store_true", help="wait for Enter after each action (q to stop)")
    parser.add_argument("--deals", action="store_true", help="print only the deal summaries and the result")
    args = parser.parse_args(argv)
    try:
        record = MatchRecord.load(args.file)
        players = record.players or [f"P{seat}" for seat in range(record.pedro_config.num_players)]
        print(f"replay of {args.file}: {', '.join(f'P{s} {name}' for s, name in enumerate(players))}")
        for env, actor, action in replay_steps(record):
            deal = env.infos[env.possible_agents[0]].get("deal") if action is not None else None
            if not args.deals:
                print(f"\n-- P{actor} {action}" if action is not None else "")
                print(render_table(env.game, env.config))
            if deal is not None:
                print(f"deal over: {deal}")
            if args.step and action is not None and not args.deals:
                if input("[Enter: next, q: quit] ").strip().lower() == "q":
                    return 0
        result = checked_result(record, env)
        scores, winner, deals = result["scores"], result["winner"], result["deals"]
        print(f"result: scores {scores}, winner {winner}, {deals} deals (matches the record)")
        sys.stdout.flush()
    except (ReplayError, EOFError) as error:
        print(f"pedro-replay: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
