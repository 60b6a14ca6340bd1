"""Match records (JSON) and ``pedro-replay``: any match saved as config + decks + actions, replayed exactly.

A record::

    {"format": "pedro-rl/replay", "version": 2,
     "config": {PedroConfig keys},          the rules
     "dealer": 2,                            the first dealer
     "decks": [["7H", "AS", ...], ...],      each deal's deck, 52 cards top first (thrown-in deals count)
     "players": ["human", "rule:heuristic", ...],   who sat at each seat (for the reader)
     "actions": ["bid 7", "pass", ...],      every action in order, in docs/rules.md section 11's text form
     "seed": 12 | null, "source": "pedro-play",
     "result": {"scores": [..], "winner": 0 | null, "deals": 11},
     "thoughts": [null, {"agent": "pretrained", "top": [["bid 7", 0.81], ...], "value": 0.12}, ...]}

``thoughts`` (version 2, optional): one entry per action, what a policy made of the position when it
moved (its most probable actions and its value estimate), null for the other movers. Version 1
records (no thoughts) are read as well.

Replaying feeds the decks and the first dealer to a :class:`pedro_env.single_game.SingleGame`
(``reset(options=...)``) and steps the actions: the same match, deal by deal, whatever produced it.
:func:`replay_match` checks that the replay ends with the recorded result (a record may hold none:
``result`` missing, null or ``{}``).

Errors: every way a record can be wrong (unreadable file, not a regular file, larger than
:data:`MAX_RECORD_BYTES`, not JSON, a key missing or of the wrong type, a bad card, deck, dealer or seed,
an action that does not replay, a result that differs) is a :class:`ReplayError` with a one-line message;
``pedro-replay`` prints it as ``pedro-replay: error: ...`` on stderr and exits with status 2 (Ctrl-C: one
line, status 130). Strings from a record are printed through :func:`printable`. A record is saved whole or
not at all (:func:`pedro_env.cli.atomic_output`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import stat
import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from arena.ratings import config_dict
from pedro_env.cards import card_to_str
from pedro_env.cli import OneLineErrorParser, atomic_output, one_line_on_interrupt, quiet_on_broken_pipe
from pedro_env.config import ConfigError, PedroConfig, SeedError, check_seed, make_config, short_repr
from pedro_env.rules import hashed_dealers, hashed_decks
from pedro_env.single_game import SingleGame, parse_decks

REPLAY_FORMAT = "pedro-rl/replay"
REPLAY_VERSION = 2
READABLE_VERSIONS = (1, 2)
REQUIRED_KEYS = ("config", "dealer", "decks", "actions")
OPTIONAL_KEYS = ("players", "seed", "source", "result", "thoughts")
RESULT_KEYS = ("scores", "winner", "deals")
# the most a record file may hold: a match of 1,000 deals with every policy thought is a few MB (the table's
# uploads stop at 2 MB); read whole, parsed JSON takes about ten times its size in memory
MAX_RECORD_BYTES = 16 * 1024 * 1024


class ReplayError(ValueError):
    """A record that cannot be read or does not replay to its recorded result (a one-line message)."""


def printable(text: str) -> str:
    """``text`` with every unprintable character (ANSI escapes, newlines, other controls) written as a Python
    escape such as ``\\x1b``: safe to print whatever a record holds."""
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _type_error(key: str, expected: str, value: Any) -> ReplayError:
    return ReplayError(f"{key} must be {expected}, got {type(value).__name__} {printable(short_repr(value))}")


def _checked_result(result: Any, config: PedroConfig) -> dict[str, Any]:
    """The record's ``result`` as a dict of scores (one int per team), winner (team or None) and deals (>= 1);
    ``{}`` when the record holds no result."""
    if result is None or (isinstance(result, dict) and not result):
        return {}
    if not isinstance(result, dict):
        raise _type_error("result", "a dict of scores, winner and deals (or null)", result)
    missing = [key for key in RESULT_KEYS if key not in result]
    if missing:
        raise ReplayError(f"result lacks {', '.join(missing)}: a result holds {', '.join(RESULT_KEYS)}")
    scores, winner, deals = (result[key] for key in RESULT_KEYS)
    teams = config.num_teams
    if not isinstance(scores, list) or len(scores) != teams or not all(_is_int(score) for score in scores):
        raise _type_error("result's scores", f"a list of {teams} ints (one per team)", scores)
    if winner is not None and not (_is_int(winner) and 0 <= winner < teams):
        raise _type_error("result's winner", f"a team 0..{teams - 1} or null", winner)
    if not (_is_int(deals) and deals >= 1):
        raise _type_error("result's deals", "an int >= 1", deals)
    return {
        "scores": [int(score) for score in scores],
        "winner": None if winner is None else int(winner),
        "deals": int(deals),
    }


def _checked_thoughts(thoughts: Any, actions: int) -> list[dict[str, Any] | None]:
    """The record's ``thoughts``: ``[]`` or one entry per action, each null or ``{"agent", "top", "value"}``."""
    if not isinstance(thoughts, list) or (thoughts and len(thoughts) != actions):
        raise _type_error("thoughts", f"a list of {actions} entries (one per action) or []", thoughts)
    for number, entry in enumerate(thoughts):
        if entry is None:
            continue
        where = f"thoughts[{number}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("agent"), str):
            raise _type_error(where, 'null or a dict of "agent", "top" and "value"', entry)
        top = entry.get("top")
        if not isinstance(top, list) or not all(
            isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str) and _is_number(pair[1])
            for pair in top
        ):
            raise _type_error(f"{where}'s top", "a list of [action, probability] pairs, finite probabilities", top)
        if entry.get("value") is not None and not _is_number(entry["value"]):
            raise _type_error(f"{where}'s value", "a finite number or null", entry["value"])
    return thoughts


def _is_number(value: Any) -> bool:
    """A finite int or float (NaN and infinities are not JSON, and a page's JSON reader refuses them)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass
class MatchRecord:
    """One match: enough to replay it exactly (see the module docstring). Checked when built: ReplayError if not."""

    config: dict[str, Any]
    dealer: int
    decks: list[list[str]]
    actions: list[str]
    players: list[str] = field(default_factory=list)
    seed: int | None = None
    source: str = ""
    result: dict[str, Any] = field(default_factory=dict)
    thoughts: list[dict[str, Any] | None] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not isinstance(self.config, dict):
            raise _type_error("config", "a dict of config keys (docs/rules.md section 9)", self.config)
        known = [item.name for item in fields(PedroConfig)]
        unknown = [key for key in self.config if key not in known]
        if unknown:
            key = printable(short_repr(unknown[0]))
            raise ReplayError(f"config: unknown config key {key}: known keys are {', '.join(known)}")
        try:
            self._pedro_config = make_config(**self.config)
        except ConfigError as error:
            raise ReplayError(f"config: {printable(str(error))}") from None
        players = self._pedro_config.num_players
        if not (_is_int(self.dealer) and 0 <= self.dealer < players):
            raise _type_error("dealer", f"a seat 0..{players - 1}", self.dealer)
        try:
            parse_decks(self.decks, where="decks")
        except ValueError as error:
            raise ReplayError(printable(str(error))) from None
        if not isinstance(self.actions, list):
            raise _type_error("actions", "a list of action strings", self.actions)
        for number, action in enumerate(self.actions):
            if not isinstance(action, str):
                raise _type_error(f"actions[{number}]", "an action string ('pass', 'bid 7', 'play AH', ...)", action)
        if not isinstance(self.players, list) or not all(isinstance(name, str) for name in self.players):
            raise _type_error("players", "a list of strings", self.players)
        if self.players and len(self.players) != players:
            raise ReplayError(f"players lists {len(self.players)} names, but the config seats {players} players")
        if self.seed is not None:
            try:
                check_seed(self.seed)
            except SeedError:
                raise _type_error("seed", "null or an int from 0 to 2**64 - 1", self.seed) from None
        if not isinstance(self.source, str):
            raise _type_error("source", "a string", self.source)
        self.result = _checked_result(self.result, self._pedro_config)
        self.thoughts = _checked_thoughts(self.thoughts, len(self.actions))

    def to_dict(self) -> dict[str, Any]:
        return {"format": REPLAY_FORMAT, "version": REPLAY_VERSION, **asdict(self)}

    def save(self, path: str | Path) -> Path:
        """Write the record as JSON, whole or not at all (OutputPathError naming ``path`` if it cannot be)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_output(path, "w") as handle:  # ASCII: json escapes every other character
            json.dump(self.to_dict(), handle, indent=1)
        return path

    @classmethod
    def from_dict(cls, document: Any) -> MatchRecord:
        """A record from its JSON form (the module docstring); ReplayError naming the first thing wrong."""
        if not isinstance(document, dict) or not isinstance(document.get("format"), str):
            raise ReplayError(f"not a pedro-rl replay record (no format {REPLAY_FORMAT!r})")
        if document["format"] != REPLAY_FORMAT:
            raise ReplayError(f"not a pedro-rl replay record (no format {REPLAY_FORMAT!r})")
        version = document.get("version")
        if not _is_int(version) or version not in READABLE_VERSIONS:
            readable = " and ".join(str(v) for v in READABLE_VERSIONS)
            raise ReplayError(f"replay version {printable(short_repr(version))}, this version reads {readable}")
        missing = [key for key in REQUIRED_KEYS if key not in document]
        if missing:
            raise ReplayError(f"the record lacks {', '.join(missing)} (a record holds {', '.join(REQUIRED_KEYS)})")
        # unknown keys are left out: a newer writer may add some
        return cls(**{key: document[key] for key in REQUIRED_KEYS + OPTIONAL_KEYS if key in document})

    @classmethod
    def load(cls, path: str | Path) -> MatchRecord:
        """Read a record from a JSON file; ReplayError (naming the file) if it cannot be read or is not a record."""
        shown = printable(str(path))
        path = Path(path)
        try:
            is_dir, exists = path.is_dir(), path.exists()
        except (OSError, ValueError) as error:  # ValueError: an embedded NUL
            raise ReplayError(f"cannot read {shown}: {printable(str(error))}") from None
        if is_dir:
            raise ReplayError(f"{shown} is a directory, not a replay record")
        if not exists:
            raise ReplayError(f"replay file not found: {shown}")
        try:
            text = _read_record_file(path, shown).decode("utf-8")
        except UnicodeDecodeError as error:
            raise ReplayError(f"cannot read {shown}: {printable(str(error))}") from None
        if not text.strip():
            raise ReplayError(f"{shown} is empty, not a replay record")
        try:
            document = json.loads(text)
        except (ValueError, RecursionError) as error:  # JSONDecodeError, an int too long, nesting too deep
            raise ReplayError(f"{shown} is not a JSON replay record: {printable(str(error))}") from None
        try:
            return cls.from_dict(document)
        except ReplayError as error:
            raise ReplayError(f"{shown}: {error}") from None

    @property
    def pedro_config(self) -> PedroConfig:
        return self._pedro_config


def _read_record_file(path: Path, shown: str) -> bytes:
    """The bytes of a regular file of at most MAX_RECORD_BYTES; a device, a pipe or a bigger file is refused before
    it is read (opened without blocking, so a pipe with no writer cannot hang the reader)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as error:
        raise ReplayError(f"cannot read {shown}: {error.strerror or error}") from None
    with open(descriptor, "rb") as handle:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise ReplayError(f"{shown} is not a regular file (a device, pipe or socket), not a replay record")
        try:
            data = handle.read(MAX_RECORD_BYTES + 1) if status.st_size <= MAX_RECORD_BYTES else b""
        except OSError as error:
            raise ReplayError(f"cannot read {shown}: {error.strerror or error}") from None
    if status.st_size > MAX_RECORD_BYTES or len(data) > MAX_RECORD_BYTES:  # the size, or what it grew to
        raise ReplayError(f"{shown} is larger than {MAX_RECORD_BYTES:,} bytes, the most a replay record may hold")
    return data


def match_result(game: SingleGame) -> dict[str, Any]:
    """Scores, winner (team, or None) and deals played of the game's match as it stands."""
    state = game.started("match_result")
    winner = int(state.winner[0])
    return {
        "scores": [int(score) for score in state.scores[0]],
        "winner": winner if winner >= 0 else None,
        "deals": int(state.deal_index[0]) + 1,  # deals started, thrown-in ones included
    }


def record_from_env(
    env: Any, players: Sequence[str] = (), source: str = "env", thoughts: Sequence[dict[str, Any] | None] = ()
) -> MatchRecord:
    """A record of the match a Pedro AEC env (wrapped or raw) has played since its last reset (see
    :func:`record_from_game`)."""
    return record_from_game(env.unwrapped.single_game, players, source, thoughts)


def record_from_game(
    game: SingleGame, players: Sequence[str] = (), source: str = "env", thoughts: Sequence[dict[str, Any] | None] = ()
) -> MatchRecord:
    """A record of the match ``game`` has played since its last reset: its first dealer, decks and action history;
    ``players`` names who sat at each seat, ``thoughts`` what a policy thought at each action (both optional)."""
    state = game.state
    if state is None:
        raise ReplayError("the env has not been reset: there is no match to record")
    deals = int(state.deal_index[0]) + 1
    return MatchRecord(
        config=config_dict(game.config),
        dealer=game.first_dealer,
        decks=[game.deck_of_deal(deal) for deal in range(deals)],
        actions=list(game.action_history),
        players=list(players),
        seed=game.seed,
        source=source,
        result=match_result(game),
        thoughts=list(thoughts),
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
    """A record of a match dealt from ``seed`` (0 to 2**64 - 1; match 0), as the batched env and pedro-eval deal it."""
    seeds = np.full(deals, check_seed(seed), dtype=np.uint64)
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


def replay_steps(record: MatchRecord) -> Iterator[tuple[SingleGame, int | None, str | None]]:
    """Yield ``(game, None, None)`` after the reset, then ``(game, seat, action)`` after each recorded action
    (``action`` in its canonical text form). ReplayError for an action that does not replay."""
    game = SingleGame(record.pedro_config)
    try:
        game.reset(seed=record.seed or 0, options={"dealer": record.dealer, "decks": record.decks})
    except ValueError as error:  # a record changed since it was checked
        raise ReplayError(printable(str(error))) from None
    yield game, None, None
    for number, action in enumerate(record.actions):
        shown = printable(short_repr(action))
        if game.over:
            raise ReplayError(f"action {number + 1} ({shown}) comes after the match ended")
        actor = game.actor
        try:
            game.step(action)
        except ValueError as error:
            raise ReplayError(f"action {number + 1} ({shown}) does not replay: {printable(str(error))}") from None
        yield game, actor, game.action_history[-1]


def describe_teams(values: Sequence[int], signed: bool = False) -> str:
    """``[9, 5]`` -> ``'team 0 9, team 1 5'`` (``+9`` with ``signed``)."""
    return ", ".join(
        f"team {team} {value:+d}" if signed else f"team {team} {value}" for team, value in enumerate(values)
    )


def describe_result(result: dict[str, Any]) -> str:
    """A result dict (scores, winner, deals) as one line of words."""
    winner = "none" if result["winner"] is None else f"team {result['winner']}"
    return f"scores {describe_teams(result['scores'])}; winner {winner}; {result['deals']} deals"


def describe_deal(number: int, deal: dict[str, Any]) -> str:
    """The ``"deal"`` info of the ``number``-th deal (1 = the first) as one line of words."""
    if deal["redeal"]:
        return f"deal {number}: everybody passed, thrown in; scores {describe_teams(deal['scores'])}"
    verdict = "made" if deal["made"] else "set"
    parts = [
        f"deal {number}: P{deal['maker']} bid {deal['bid']} in {deal['trump']}, {verdict}",
        f"points {describe_teams(deal['points'])}",
        f"changes {describe_teams(deal['delta'], signed=True)}",
        f"scores {describe_teams(deal['scores'])}",
    ]
    if deal["renege"] is not None:
        parts.append(f"team {deal['renege']} reneged and was penalised")
    return "; ".join(parts)


def checked_result(record: MatchRecord, game: SingleGame) -> dict[str, Any]:
    """The result of a replayed match; ReplayError if it differs from the one the record holds (if any)."""
    result = match_result(game)
    if record.result and any(record.result[key] != result[key] for key in RESULT_KEYS):
        raise ReplayError(
            f"the replay ends with {describe_result(result)}, but the record says {describe_result(record.result)}"
        )
    return result


def replay_match(record: MatchRecord) -> dict[str, Any]:
    """Replay a whole record; returns the result, raising ReplayError if it differs from the recorded one."""
    for game, _, _ in replay_steps(record):
        final = game
    return checked_result(record, final)


@quiet_on_broken_pipe
@one_line_on_interrupt("pedro-replay")
def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineErrorParser(
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
        names = ", ".join(f"P{seat} {printable(name)}" for seat, name in enumerate(players))
        print(f"replay of {printable(args.file)}: {names}")
        deals_over = 0
        for game, actor, action in replay_steps(record):
            deal = game.deal_info() if action is not None and game.deal_ended else None
            if not args.deals:
                print(f"\n-- P{actor} {action}" if action is not None else "")
                print(game.render())
            if deal is not None:
                deals_over += 1
                print(describe_deal(deals_over, deal))
            if args.step and action is not None and not args.deals:
                try:
                    answer = input("[Enter: next, q: quit] ")
                except EOFError:  # the input ended: stop as q does
                    return 0
                if answer.strip().lower() == "q":
                    return 0
        result = checked_result(record, game)
        unfinished = "" if game.over else ", the match unfinished"
        verdict = "matches the record" if record.result else "the record holds no result to compare with"
        print(f"result: {describe_result(result)}{unfinished} ({verdict})")
        sys.stdout.flush()
    except ReplayError as error:
        print(f"pedro-replay: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
