"""The table's web app: the JSON API of docs/table.md over :mod:`table.sessions`, and the page's static files.

Every handler is a plain function, or reads its body and hands the work to the thread pool, so an
agent thinking, a search, a scan or a replay being built occupies one thread and never the event
loop, and other sessions go on. Every refusal is a :class:`~table.sessions.TableError` answered as
``{"error": one line, ...}`` with its status, naming what the client sent and never a server path.
What a client names is bounded before the work: a new match or replay takes its place in its store
first (a full store refuses at once), bodies are read up to a size limit, a record's actions are
counted before it is read, and only finite numbers are accepted (``NaN``, ``Infinity`` and ``1e400``
are refused naming their key); no answer holds a number that is not finite.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from pathlib import Path
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from agents import AgentSpecError
from arena.match import other_rules_note
from arena.replay import MatchRecord, ReplayError, printable
from pedro_env.config import ALLOWED_VALUES, ConfigError, PedroConfig, SeedError, check_seed, field_docs, make_config
from table.analysis import Analyst, analyse, scan
from table.roster import Roster, UnknownAgentError
from table.sessions import MatchSession, ReplaySession, SessionStore, TableError

STATIC_DIR = Path(__file__).parent / "static"
MATCH_KEYS = ("seat", "partner", "opponents", "rules", "seed")
RULE_KEYS = (
    "num_players",
    "target_score",
    "min_bid",
    "all_pass",
    "variant",
    "six_card",
    "refill",
    "scoring",
    "low",
    "renege",
)  # docs/rules.md section 9: what a table may set (episode keys stay the match's)
MAX_SEED = 2**62
MAX_MOVE_BYTES = 1000  # a move is {"action": "bid 7"}
MAX_MATCH_BYTES = 10_000  # a new match names a seat, a few agents, ten rule keys and a seed
REPLAY_BUILDERS = 1  # replays built at once (a second of CPU each, the GIL held): more uploads wait their turn
MAX_TABLE_TARGET = 500  # a browser match to more points than this is not a session anybody finishes


def rule_options() -> list[dict[str, Any]]:
    """The section-9 switches a table offers: key, default, choices (or min and max) and one line about it."""
    defaults = PedroConfig()
    about = {key: " ".join(text.replace("``", "").split()) for key, text in field_docs(PedroConfig).items()}
    options = []
    for key in RULE_KEYS:
        allowed = ALLOWED_VALUES[key]
        option: dict[str, Any] = {"key": key, "default": getattr(defaults, key), "about": about.get(key, "")}
        if isinstance(allowed, tuple):
            option["choices"] = list(allowed)
        else:
            option["min"], option["max"] = 1, MAX_TABLE_TARGET if key == "target_score" else 23
        options.append(option)
    return options


def create_app(
    models_dir: str | Path | None = None,
    max_sessions: int = 64,
    idle_seconds: float = 1800.0,
    max_upload_bytes: int = 2_000_000,
    max_record_actions: int = 6000,
) -> FastAPI:
    """The app: ``models_dir`` adds its checkpoints to the agents; at most ``max_sessions`` matches and as many
    replays, each dropped after ``idle_seconds`` unused; uploads up to ``max_upload_bytes`` holding at most
    ``max_record_actions`` actions. The routes, in the order docs/table.md lists them, are short closures over
    this app's stores and limits (:func:`_add_match_routes`, :func:`_add_replay_routes`)."""
    app = FastAPI(title="pedro-table", docs_url=None, redoc_url=None, openapi_url=None)
    roster = Roster(models_dir)
    analyst = Analyst(roster)
    matches: SessionStore[MatchSession] = SessionStore("match", max_sessions, idle_seconds)
    replays: SessionStore[ReplaySession] = SessionStore("replay", max_sessions, idle_seconds)
    app.state.matches, app.state.replays, app.state.roster = matches, replays, roster
    app.add_middleware(ServerTiming)
    _add_error_handlers(app)
    limits = {"max_sessions": max_sessions, "idle_seconds": idle_seconds, "max_upload_bytes": max_upload_bytes}
    _add_match_routes(app, matches, analyst, limits)
    _add_replay_routes(app, replays, analyst, max_upload_bytes, max_record_actions)
    app.mount("/", StaticFiles(directory=STATIC_DIR, html=True), name="static")
    return app


def _add_error_handlers(app: FastAPI) -> None:
    """Every refusal as ``{"error": one line, ...}`` with its status: the table's own, HTTP's, a bad parameter's."""

    @app.exception_handler(TableError)
    def table_error(request: Request, error: TableError) -> JSONResponse:
        return JSONResponse({"error": error.message, **error.extra}, status_code=error.status)

    @app.exception_handler(StarletteHTTPException)
    def http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        message = "no such page" if error.status_code == 404 else str(error.detail)
        return JSONResponse({"error": message}, status_code=error.status_code)

    @app.exception_handler(RequestValidationError)
    def validation_error(request: Request, error: RequestValidationError) -> JSONResponse:
        first = error.errors()[0] if error.errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ()) if part not in ("query", "path", "body"))
        return JSONResponse({"error": f"{where or 'request'}: {first.get('msg', 'invalid')}"}, status_code=422)


def _add_match_routes(
    app: FastAPI, matches: SessionStore[MatchSession], analyst: Analyst, limits: dict[str, Any]
) -> None:
    """``/api/options`` (the agents, the rules and ``limits``) and the ``/api/matches`` routes over ``matches``."""
    roster = analyst.roster

    @app.get("/api/options")
    def options() -> Response:
        return json_answer({"agents": roster.public(), "rules": rule_options(), "limits": limits})

    @app.post("/api/matches", status_code=201)
    async def new_match(request: Request) -> Response:
        with matches.place() as keep:  # a full table refuses before any agent is built
            body = _parsed(await _read_body(request, MAX_MATCH_BYTES, "new match"), "new match", empty={})
            session = await run_in_threadpool(_match_from_request, {} if body is None else body, roster)
            keep(session)
        return json_answer(session.to_json(), 201)

    @app.get("/api/matches/{match_id}")
    def get_match(match_id: str, since: int = 0) -> Response:
        session = matches.get(match_id)
        with session.lock:  # waits for a move being made (in a thread of the pool: other sessions go on)
            return json_answer(session.to_json(since))

    @app.post("/api/matches/{match_id}/move")
    async def move(match_id: str, request: Request, since: int = 0) -> Response:
        body = _parsed(await _read_body(request, MAX_MOVE_BYTES, "move"), "move")
        if not isinstance(body, dict) or set(body) != {"action"}:
            raise TableError(422, 'a move is {"action": "bid 7"} (one key, action)')
        return await _locked(matches.get(match_id), lambda s: s.move(body["action"]), since)

    @app.post("/api/matches/{match_id}/advance")
    async def advance(match_id: str, since: int = 0) -> Response:
        session = matches.get(match_id)
        return await _locked(session, MatchSession.advance, since, in_thread=session.agent_thinks_long())

    @app.post("/api/matches/{match_id}/resign")
    async def resign(match_id: str, since: int = 0) -> Response:
        return await _locked(matches.get(match_id), MatchSession.resign, since)

    @app.get("/api/matches/{match_id}/record")
    def match_record(match_id: str) -> Response:
        session = matches.get(match_id)
        with session.lock:
            document = session.record().to_dict()
        headers = {"Content-Disposition": f'attachment; filename="pedro-match-{session.seed}.json"'}
        return Response(json.dumps(document, indent=1), media_type="application/json", headers=headers)

    @app.get("/api/matches/{match_id}/analysis")
    def match_analysis(match_id: str, decision: int, search: bool = False, policy: str | None = None) -> Response:
        return json_answer(_match_analysis(analyst, matches.get(match_id), decision, search, policy))


def _match_analysis(
    analyst: Analyst, session: MatchSession, decision: int, search: bool, policy: str | None
) -> dict[str, Any]:
    """The analysis of ``decision`` of a match at the table; TableError 403 for another seat's decision while the
    match runs (the others' thoughts read cards the person cannot see)."""
    with session.lock:
        record, over = session.record(), session.over
        seat = session.actor
    last = len(record.actions) if not over else len(record.actions) - 1
    _check_decision(decision, last)
    if not over:
        mover = session.decisions[decision]["seat"] if decision < len(record.actions) else seat
        if mover != session.seat:
            raise TableError(
                403,
                f"decision {decision} is P{mover}'s: while the match runs only your own decisions are "
                "analysed (the others' read cards you cannot see)",
            )
    name = _policy_name(policy, analyst.roster, record.pedro_config.num_players)
    return _analysis(analyst, record, decision, name, search, record.players)


def _add_replay_routes(
    app: FastAPI, replays: SessionStore[ReplaySession], analyst: Analyst, max_upload_bytes: int, max_actions: int
) -> None:
    """The ``/api/replays`` routes over ``replays``: uploads of up to ``max_upload_bytes`` holding at most
    ``max_actions`` actions, built a few at a time; their analysis and one scan at a time."""
    roster = analyst.roster
    scans = threading.Semaphore(1)  # one scan at a time: each keeps the search busy for seconds
    builders = anyio.CapacityLimiter(REPLAY_BUILDERS)

    @app.post("/api/replays", status_code=201)
    async def open_replay(request: Request) -> Response:
        with replays.place() as keep:  # a full store refuses before the body is read
            body = await _read_body(request, max_upload_bytes)
            # parsing, checking and replaying take up to a second: in a thread, a few at a time, off the event loop
            session, answer = await anyio.to_thread.run_sync(_replay_from, body, max_actions, limiter=builders)
            keep(session)
        return Response(answer, status_code=201, media_type="application/json")

    @app.get("/api/replays/{replay_id}/analysis")
    def replay_analysis(replay_id: str, decision: int, search: bool = False, policy: str | None = None) -> Response:
        session = replays.get(replay_id)
        _check_decision(decision, len(session.record.actions) - 1)
        policy = _policy_name(policy, roster, session.record.pedro_config.num_players)
        if search and session.scan is not None and decision in session.scan["values"]:
            answer = _analysis(analyst, session.record, decision, policy, False, [])
            answer["search"] = session.scan["values"][decision]
            return json_answer(answer)
        players = session.record.players
        return json_answer(_analysis(analyst, session.record, decision, policy, search, players))

    @app.post("/api/replays/{replay_id}/scan")
    def replay_scan(replay_id: str) -> Response:
        session = replays.get(replay_id)
        if not scans.acquire(blocking=False):
            raise TableError(503, "another scan is running (one at a time): try again when it ends")
        try:
            if session.scan is None:
                session.scan = scan(analyst, session.record)
        finally:
            scans.release()
        return json_answer({"marks": session.scan["marks"], "scanned": session.scan["scanned"]})


def json_answer(document: Any, status: int = 200) -> Response:
    """``document`` (plain JSON types) as a JSON answer, written by ``json.dumps`` (FastAPI's own encoder walks every
    value first, which cost ~2 ms a move on a long match); TableError 500 rather than an answer holding ``NaN``."""
    return Response(json_bytes(document), status_code=status, media_type="application/json")


def json_bytes(document: Any) -> bytes:
    """``document`` as compact JSON; TableError 500 if it holds a number that is not finite (which is not JSON)."""
    try:
        return json.dumps(document, separators=(",", ":"), allow_nan=False).encode()
    except ValueError:
        raise TableError(500, "the answer holds a number that is not finite (NaN or Infinity): not sent") from None


class ServerTiming:
    """ASGI middleware: every answer says how long the server took to start it (``Server-Timing: app;dur=MS``),
    read by the load test."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()

        async def timed_send(message: dict) -> None:
            if message["type"] == "http.response.start":
                elapsed = f"app;dur={(time.perf_counter() - start) * 1000:.2f}"
                message = {**message, "headers": [*message.get("headers", []), (b"server-timing", elapsed.encode())]}
            await send(message)

        await self.app(scope, receive, timed_send)


async def _locked(session: MatchSession, change: Any, since: int, in_thread: bool = False) -> Response:
    """Apply ``change`` to ``session`` under its lock (409 if another request holds it) and answer the match with
    its decisions from ``since``. A search agent's move runs in the thread pool (it thinks for up to seconds); the
    others take well under a millisecond and run at once, sparing the hop to a thread."""
    if not session.lock.acquire(blocking=False):
        raise TableError(409, "the match is busy with another request: wait for its answer")
    try:
        if in_thread:
            await run_in_threadpool(change, session)
        else:
            change(session)
        return json_answer(session.to_json(since))
    finally:
        session.lock.release()


def _check_decision(decision: int, last: int) -> None:
    if not 0 <= decision <= last:
        raise TableError(422, f"decision {decision} is not in this match: decisions are 0..{last}")


def _policy_name(policy: str | None, roster: Roster, num_players: int) -> str | None:
    """``policy`` if it is a policy on the roster that plays games of ``num_players``; TableError otherwise."""
    if policy is not None and policy not in roster.policy_names(num_players):
        allowed = ", ".join(roster.policy_names(num_players)) or "none"
        raise TableError(422, f"unknown policy {policy[:40]!r} for {num_players} players: allowed are {allowed}")
    return policy


def _analysis(
    analyst: Analyst, record: MatchRecord, decision: int, policy: str | None, search: bool, players: list[str]
) -> dict[str, Any]:
    """:func:`table.analysis.analyse`, a policy that cannot be built (a ``--models`` file that no longer loads, or
    rules it cannot read) refused with one line naming it (422)."""
    try:
        return analyse(analyst, record, decision, policy, search, players)
    except (UnknownAgentError, AgentSpecError) as error:
        raise TableError(422, printable(str(error))[:300]) from None


async def _read_body(request: Request, limit: int, what: str = "upload") -> bytes:
    """The request body, refused (413) past ``limit`` bytes before it is all read."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise TableError(413, f"the {what} is {int(declared)} bytes; the limit is {limit}")
    body = bytearray()
    try:
        async for chunk in request.stream():
            body.extend(chunk)
            if len(body) > limit:
                raise TableError(413, f"the {what} is over the limit of {limit} bytes")
    except ClientDisconnect:  # the client went, or the server closed a body that came too slowly (table/cli.py)
        raise TableError(408, f"the {what} ended before its body was sent") from None
    return bytes(body)


def _parsed(body: bytes, what: str = "upload", empty: Any = None) -> Any:
    """``body`` parsed as JSON (``empty`` for an empty body, where given); TableError 422 if it is not JSON or holds
    a number that is not finite, naming where."""
    if empty is not None and not body.strip():
        return empty
    try:
        document = json.loads(body)
    except (ValueError, RecursionError) as error:
        kind = "a JSON replay record" if what == "upload" else "JSON"
        raise TableError(422, f"the {what} is not {kind}: {printable(str(error))[:120]}") from None
    where = first_non_finite(document)
    if where is not None:
        raise TableError(
            422, f"{where}: not a finite number (NaN, Infinity or past a float's range); the table takes finite ones"
        )
    return document


def first_non_finite(document: Any) -> str | None:
    """Where ``document``'s first number that is not finite sits (``seat``, ``thoughts[3].top[0][1]``, ``the body``
    for a bare one); None when every number is finite. JSON's parser reads ``NaN``, ``Infinity`` and ``1e400`` as
    such floats; a stack, not recursion, walks the nesting the parser allowed."""
    stack: list[tuple[str, Any]] = [("", document)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            return where[-120:] or "the body"  # the innermost keys, where a nesting is deep
        if isinstance(value, dict):
            keys = [printable(str(key))[:40] for key in value]
            stack.extend(
                reversed([(f"{where}.{key}" if where else key, item) for key, item in zip(keys, value.values())])
            )
        elif isinstance(value, list):
            stack.extend(reversed([(f"{where}[{index}]", item) for index, item in enumerate(value)]))
    return None


def _replay_from(body: bytes, max_actions: int) -> tuple[ReplaySession, bytes]:
    """A replay session of the uploaded record ``body`` and its answer (docs/table.md's ``Replay``, JSON); TableError
    for a body that is not a record this table opens or a record that does not replay. Runs in a worker thread."""
    session = ReplaySession(_record_from(_parsed(body), max_actions))
    try:
        answer = session.to_json()  # replays it: a record that does not replay is refused here
    except ReplayError as error:
        raise TableError(422, f"the record does not replay: {printable(str(error))[:200]}") from None
    return session, json_bytes(answer)


def _record_from(document: Any, max_actions: int) -> MatchRecord:
    """The record ``document``, its actions counted before anything in it is read; TableError if it is too long or
    not a record."""
    actions = document.get("actions") if isinstance(document, dict) else None
    if isinstance(actions, list) and len(actions) > max_actions:
        raise TableError(413, f"the record holds {len(actions)} actions; the table opens up to {max_actions}")
    try:
        return MatchRecord.from_dict(document)
    except (ReplayError, TypeError) as error:
        raise TableError(422, f"not a record this table opens: {printable(str(error))[:200]}") from None


def _match_from_request(body: Any, roster: Roster) -> MatchSession:
    """A new match from ``{"seat", "partner", "opponents", "rules", "seed"}``; TableError naming the first bad key."""
    if not isinstance(body, dict):
        raise TableError(422, "a new match is a JSON object: " + ", ".join(MATCH_KEYS))
    unknown = [key for key in body if key not in MATCH_KEYS]
    if unknown:
        raise TableError(422, f"unknown key {str(unknown[0])[:40]!r}: a new match takes {', '.join(MATCH_KEYS)}")
    config = _match_rules(body.get("rules", {}))
    n = config.num_players
    seat = body.get("seat", 0)
    if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < n:
        raise TableError(422, f"seat must be a seat 0..{n - 1}, got {str(seat)[:20]!r}")
    seed = body.get("seed")
    if seed is None:
        seed = int.from_bytes(os.urandom(4), "little")
    try:
        check_seed(seed)
    except SeedError:
        raise TableError(422, f"seed must be null or an int from 0 to 2**62, got {str(seed)[:30]!r}") from None
    if seed > MAX_SEED:
        raise TableError(422, f"seed must be null or an int from 0 to 2**62, got {seed}")
    names = _seat_names(body, config, seat)
    try:
        agents = [None if s == seat else roster.build(name, config) for s, name in enumerate(names)]
    except (UnknownAgentError, AgentSpecError) as error:
        raise TableError(422, str(error)) from None
    searching = frozenset(s for s, name in enumerate(names) if s != seat and roster.entry(name).kind == "search")
    notes = dict.fromkeys(other_rules_note(name, agent) for name, agent in zip(names, agents) if agent is not None)
    return MatchSession(
        config=config,
        seat=seat,
        players=names,
        agents=agents,
        seed=seed,
        searching_seats=searching,
        notes=tuple(note for note in notes if note),
    )


def _match_rules(rules: Any) -> PedroConfig:
    """The rules of a new match from its ``rules`` object (three players score simple unless told otherwise)."""
    rules = {} if rules is None else rules
    if not isinstance(rules, dict):
        raise TableError(422, "rules must be an object of rule keys: " + ", ".join(RULE_KEYS))
    bad = [key for key in rules if key not in RULE_KEYS]
    if bad:
        raise TableError(422, f"unknown rule key {str(bad[0])[:40]!r}: the rules are {', '.join(RULE_KEYS)}")
    if isinstance(rules.get("target_score"), int) and rules["target_score"] > MAX_TABLE_TARGET:
        raise TableError(422, f"target_score {rules['target_score']} is over the table's limit of {MAX_TABLE_TARGET}")
    if rules.get("num_players") == 3 and "scoring" not in rules:
        rules = {**rules, "scoring": "simple"}  # the default that fits: three-player Pedro scores simple only
    try:
        return make_config(**rules)
    except ConfigError as error:
        raise TableError(422, str(error)) from None


def _seat_names(body: dict[str, Any], config: PedroConfig, seat: int) -> list[str]:
    """The roster name at each seat (``"you"`` at ``seat``): the partner opposite at four players, the opponents in
    seat order; with two or three players everyone plays alone, and a ``partner`` is refused."""
    n = config.num_players
    team = int(config.team_of_seat[seat])
    others = [s for s in range(n) if int(config.team_of_seat[s]) != team]
    if "partner" in body and len(others) == n - 1:
        raise TableError(422, f"partner: at {n} players everyone plays alone (no partner); name the opponents only")
    opponents = body.get("opponents", "rule:heuristic")
    opponents = [opponents] * len(others) if isinstance(opponents, str) else opponents
    if not isinstance(opponents, list) or len(opponents) != len(others):
        raise TableError(422, f"opponents must be one agent name or a list of {len(others)}")
    partner = body.get("partner", "rule:heuristic")
    return ["you" if s == seat else opponents[others.index(s)] if s in others else partner for s in range(n)]
