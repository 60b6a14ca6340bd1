"""A table's sessions: matches being played and replays being watched, bounded in number and idle time.

A :class:`MatchSession` is one match: a :class:`~pedro_env.single_game.SingleGame`, who sits where, the decisions so far
with what a policy thought at each, and the deal summaries. Every change goes through one method
that checks it first and raises :class:`TableError` (an HTTP status and a one-line message) leaving
the match as it was. A :class:`SessionStore` holds at most ``cap`` sessions of a kind and drops
those idle for ``idle_seconds``; a request takes its place (:meth:`SessionStore.place`) before it
builds anything, so a full store refuses at once. Each session has a lock, so two requests never
change one match at once (the second is told the match is busy), while other sessions go on.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np

from agents import Agent
from arena.play import agent_thoughts
from arena.replay import (
    MatchRecord,
    ReplayError,
    checked_result,
    match_result,
    printable,
    record_from_game,
    replay_steps,
)
from pedro_env.actions import action_to_str, str_to_action
from pedro_env.config import PedroConfig, short_repr
from pedro_env.single_game import SingleGame
from table.views import deal_summary, decision_entry, table_view


class TableError(Exception):
    """A request the table refuses: ``status`` (4xx/5xx), a one-line ``message``, and extra JSON fields."""

    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.message, self.extra = status, message, extra


@dataclass
class MatchSession:
    """One match at the table (see the module docstring). ``agents[seat]`` is None at the person's seat."""

    config: PedroConfig
    seat: int
    players: list[str]
    agents: list[Agent | None]
    seed: int
    searching_seats: frozenset[int] = frozenset()  # seats of search agents (their moves run in a thread)
    notes: tuple[str, ...] = ()  # one line per policy trained under other rules than the match's
    id: str = field(default_factory=lambda: secrets.token_urlsafe(12))
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_used: float = field(default_factory=time.monotonic)
    resigned: bool = False

    def __post_init__(self) -> None:
        self.game = SingleGame(self.config)
        self.game.reset(seed=self.seed)
        self.rng = np.random.default_rng(self.seed)
        self.decisions: list[dict[str, Any]] = []
        self.thoughts: list[dict[str, Any] | None] = []
        self.deals: list[dict[str, Any]] = []

    # ---------------------------------------------------------------- reading
    @property
    def over(self) -> bool:
        return self.resigned or self.game.over

    @property
    def actor(self) -> int:
        return self.game.actor

    def status(self) -> str:
        if self.over:
            return "over"
        return "your_turn" if self.agents[self.actor] is None else "agent_turn"

    def agent_thinks_long(self) -> bool:
        """Whether the seat to move is a search agent (its move takes up to seconds)."""
        return not self.over and self.actor in self.searching_seats

    def to_json(self, since: int = 0) -> dict[str, Any]:
        """docs/table.md's ``Match``, with the decisions from ``since`` on (``decisions_from``; all of them once the
        match is over); while the match runs, the other seats' thoughts stay hidden (they read hidden cards)."""
        over = self.over
        since = 0 if over else min(max(int(since), 0), len(self.decisions))  # at the end, all: thoughts revealed
        decisions = [
            entry if over or entry["seat"] == self.seat else {**entry, "thoughts": None}
            for entry in self.decisions[since:]
        ]
        return {
            "id": self.id,
            "seat": self.seat,
            "players": self.players,
            "status": self.status(),
            "view": table_view(self.game, None if over else self.seat, self.deals, over=over),
            "decisions_from": since,
            "decisions": decisions,
            "resigned": self.resigned,
            "result": self.record().result if over else None,
            "notes": list(self.notes),
        }

    def record(self) -> MatchRecord:
        return record_from_game(self.game, self.players, "pedro-table", self.thoughts)

    # ---------------------------------------------------------------- changing
    def move(self, text: Any) -> None:
        """The person's move ``text`` (docs/rules.md section 11's form); TableError if it is not theirs to make
        now or not legal (the message and ``legal`` list the legal moves)."""
        if self.over:
            raise TableError(409, "the match is over: start a new match")
        if self.agents[self.actor] is not None:
            raise TableError(409, f"not your turn: P{self.actor} ({self.players[self.actor]}) is to move (advance)")
        legal = [action_to_str(action) for action in self.game.legal_actions()]
        if not isinstance(text, str):
            raise TableError(422, f"a move is an action string such as {legal[0]!r}", legal=legal)
        try:
            action = str_to_action(text)
        except ValueError as error:
            raise TableError(422, f"cannot read the move {text[:40]!r}: {error}", legal=legal) from None
        if action not in self.game.legal_actions():
            raise TableError(422, f"{action_to_str(action)} is not legal now; legal: {', '.join(legal)}", legal=legal)
        self._step(action, None)

    def advance(self) -> None:
        """One move of the agent whose turn it is; TableError when it is the person's turn or the match is over."""
        if self.over:
            raise TableError(409, "the match is over: start a new match")
        agent = self.agents[self.actor]
        if agent is None:
            raise TableError(409, "it is your turn: the table waits for your move")
        observation, mask = self.game.observe(self.actor), self.game.mask_bytes.copy()
        action = int(agent.act(observation[None], mask[None], self.rng)[0])
        self._step(action, agent_thoughts(agent, observation, mask))

    def resign(self) -> None:
        if self.over:
            raise TableError(409, "the match is already over")
        self.resigned = True

    def _step(self, action: int, thoughts: dict[str, Any] | None) -> None:
        entry = decision_entry(self.game, len(self.decisions), action)
        entry["thoughts"] = thoughts
        self.game.step(action)
        self.decisions.append(entry)
        self.thoughts.append(thoughts)
        if self.game.deal_ended:
            self.deals.append(deal_summary(len(self.deals) + 1, self.game.deal_info()))


@dataclass
class ReplaySession:
    """A record opened in the viewer (checked: it replays to its recorded result); ``scan`` caches the search's
    values of its decisions once computed."""

    record: MatchRecord
    id: str = field(default_factory=lambda: secrets.token_urlsafe(12))
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_used: float = field(default_factory=time.monotonic)
    scan: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """docs/table.md's ``Replay``: every frame with all hands open, the decisions, where each deal starts, and
        the deal summaries once (``deals``; a frame's ``deals_done`` says how many of them precede it, so the answer
        grows with the actions, not with actions times deals). ReplayError for a record that does not replay."""
        record = self.record
        actions = parsed_actions(record)
        frames, decisions, deal_starts, deals = [], [], [], []
        previous_deal = 0
        pending: dict[str, Any] = {}  # the decision about to be taken, read before its action
        for game, _, action in replay_steps(record):
            if action is not None:
                index = len(decisions)
                entry = {**pending, "thoughts": record.thoughts[index] if record.thoughts else None}
                decisions.append(entry)
                if game.deal_ended:
                    deals.append(deal_summary(len(deals) + 1, game.deal_info()))
            frame = table_view(game, None, [])
            del frame["deals"]
            frame["deals_done"] = len(deals)
            frames.append(frame)
            if len(decisions) < len(actions):
                pending = decision_entry(game, len(decisions), actions[len(decisions)])
                if pending["deal"] != previous_deal:
                    deal_starts.append(len(decisions))
                    previous_deal = pending["deal"]
        checked_result(record, game)
        return {
            "id": self.id,
            "players": record.players or [f"P{seat}" for seat in range(record.pedro_config.num_players)],
            "source": record.source,
            "seed": record.seed,
            "frames": frames,
            "decisions": decisions,
            "deal_starts": deal_starts,
            "deals": deals,
            "result": record.result or match_result(game),
            "pair_key": pair_key(record),
        }


def parsed_actions(record: MatchRecord) -> list[int]:
    """The record's actions as action numbers; ReplayError naming the first that is no action (``play ZZ``)."""
    actions = []
    for number, text in enumerate(record.actions):
        try:
            actions.append(str_to_action(text))
        except ValueError as error:
            shown = printable(short_repr(text))
            raise ReplayError(f"action {number + 1} ({shown}) does not replay: {printable(str(error))}") from None
    return actions


def pair_key(record: MatchRecord) -> str:
    """Equal for the two halves of a duplicate pair (the same rules, first dealer and first deck)."""
    text = json.dumps([record.config, record.dealer, record.decks[:1]], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


Session = TypeVar("Session")


class SessionStore(Generic[Session]):
    """At most ``cap`` sessions of one ``kind`` ("match", "replay"), each dropped after ``idle_seconds`` unused."""

    def __init__(self, kind: str, cap: int, idle_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.kind, self.cap, self.idle_seconds, self.clock = kind, int(cap), float(idle_seconds), clock
        self.plural = kind + ("es" if kind.endswith("ch") else "s")
        self._sessions: dict[str, Any] = {}
        self._placed = 0  # places taken by requests still building their session
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._sessions)

    def add(self, session: Any, placed: bool = False) -> None:
        """Keep ``session``; TableError 503 when the store is full of sessions still in use (not checked again when
        ``placed``: the place was taken by :meth:`place`)."""
        with self._lock:
            self._drop_idle()
            if not placed:
                self._refuse_when_full()
            session.last_used = self.clock()
            self._sessions[session.id] = session

    @contextlib.contextmanager
    def place(self) -> Iterator[Callable[[Any], None]]:
        """Take a place for a session about to be built, refusing (TableError 503) at once when the store is full,
        so a refused request costs no work; yields the function that keeps the built session there. The place is
        given back when the block ends, kept or not."""
        with self._lock:
            self._drop_idle()
            self._refuse_when_full()
            self._placed += 1
        try:
            yield lambda session: self.add(session, placed=True)
        finally:
            with self._lock:
                self._placed -= 1

    def _refuse_when_full(self) -> None:
        if len(self._sessions) + self._placed >= self.cap:
            raise TableError(
                503,
                f"the table holds {self.cap} {self.plural} already (its cap); one is dropped after "
                f"{self.idle_seconds:.0f} s unused, try again then",
            )

    def get(self, session_id: str) -> Any:
        """The session ``session_id`` (marked as used); TableError 404 if unknown or expired."""
        with self._lock:
            self._drop_idle()
            session = self._sessions.get(session_id)
            if session is None:
                raise TableError(
                    404,
                    f"no {self.kind} {session_id[:40]!r} here: it ended, expired after "
                    f"{self.idle_seconds:.0f} s unused, or the server restarted",
                )
            session.last_used = self.clock()
            return session

    def _drop_idle(self) -> None:
        now = self.clock()
        for key in [key for key, s in self._sessions.items() if now - s.last_used > self.idle_seconds]:
            del self._sessions[key]
