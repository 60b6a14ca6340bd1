"""``pedro-table``: serve the table (docs/table.md) on 127.0.0.1 and print its address.

The server bounds what a connection may hold (:func:`server_config`): a request's headers and body must
arrive within :data:`READ_SECONDS` of its first byte (else 408 and the connection closed), an idle
connection closes after :data:`KEEP_ALIVE_SECONDS`, headers are at most :data:`MAX_HEADER_BYTES`, and
past :data:`MAX_CONNECTIONS` open connections a request is answered 503.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pedro_env.cli import (
    INTERRUPTED_STATUS,
    OneLineErrorParser,
    int_at_least,
    one_line_on_interrupt,
    positive_seconds,
)

LOOPBACK = ("127.0.0.1", "localhost", "::1")
MAX_PORT = 65535
READ_SECONDS = 30.0  # a request's headers and body, from its first byte: a 2 MB upload needs well under a second
KEEP_ALIVE_SECONDS = 5  # an idle connection between requests
MAX_HEADER_BYTES = 16_384  # a request's line and headers (uvicorn answers 400 past it)
MAX_CONNECTIONS = 256  # open connections (and requests in progress) before a request is answered 503

if TYPE_CHECKING:
    import uvicorn

EXAMPLES = """examples:
  pedro-table                          # a free port on 127.0.0.1; open the address it prints
  pedro-table --port 8765 --models runs/   # the checkpoints under runs/ join the agents
  pedro-table --host 0.0.0.0 --port 8765   # other machines may connect (no accounts: trusted networks only)
"""


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog="pedro-table",
        description="Play Pedro against the agents in the browser, watch saved matches, see what the agents think.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--host", type=host_name, default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)"
    )
    parser.add_argument("--port", type=port_number, default=0, help="port 0..65535 (default 0: a free one)")
    parser.add_argument("--models", metavar="DIR", help="offer every checkpoint (*.pt) under DIR as an agent")
    parser.add_argument("--max-sessions", type=int_at_least(1), default=64, help="matches (and replays) held at once")
    parser.add_argument(
        "--idle-seconds", type=positive_seconds, default=1800.0, help="drop a match or replay unused this long (1800)"
    )
    parser.add_argument(
        "--max-upload", type=int_at_least(1024), default=2_000_000, metavar="BYTES", help="largest record accepted"
    )
    return parser


def host_name(text: str) -> str:
    """An argparse ``type``: an address to bind, not empty (an empty one would bind every interface unannounced)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must name an address such as 127.0.0.1 or 0.0.0.0, got an empty one")
    return text


def port_number(text: str) -> int:
    """An argparse ``type``: a TCP port, an int from 0 (a free one) to 65535."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"must be a port from 0 to {MAX_PORT}, got {text!r}")
    return value


@one_line_on_interrupt("pedro-table")
def main(argv: Sequence[str] | None = None) -> int:
    """130 after Ctrl-C, 2 for bad arguments, a port in use or a missing --models folder."""
    args = build_parser().parse_args(argv)
    if args.models is not None and not Path(args.models).is_dir():
        print(f"pedro-table: error: --models {args.models}: not a folder", file=sys.stderr)
        return 2
    try:
        import uvicorn

        from table.app import create_app
    except ImportError as error:
        print(f"pedro-table: error: {error}; install the web extra: pip install -e '.[web]'", file=sys.stderr)
        return 2
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # answers go out in two writes (head, body): without TCP_NODELAY (which accepted sockets inherit) the second
    # waits for the client's delayed ACK, about 40 ms a request
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        listener.bind((args.host, args.port))
    except (OSError, OverflowError, UnicodeError) as error:  # in use, no such address, a name past its limits
        reason = getattr(error, "strerror", None) or str(error)
        print(f"pedro-table: error: cannot listen on {args.host}:{args.port}: {reason}", file=sys.stderr)
        return 2
    _one_torch_thread()
    app = create_app(
        models_dir=args.models,
        max_sessions=args.max_sessions,
        idle_seconds=args.idle_seconds,
        max_upload_bytes=args.max_upload,
    )
    port = listener.getsockname()[1]
    shown = f"[{args.host}]" if family == socket.AF_INET6 else args.host
    if args.host not in LOOPBACK:
        print(
            f"pedro-table: warning: listening on {args.host}, reachable from other machines; the table has no accounts",
            file=sys.stderr,
        )
    print(f"pedro-table: open http://{shown}:{port}/ (Ctrl-C stops)", flush=True)
    server = uvicorn.Server(server_config(app))
    try:
        server.run(sockets=[listener])
    except KeyboardInterrupt:  # uvicorn closed the table, then passed the Ctrl-C on
        print("pedro-table: interrupted; the table is closed", file=sys.stderr)
        return INTERRUPTED_STATUS
    return 0


def server_config(app: Any, read_seconds: float = READ_SECONDS) -> uvicorn.Config:
    """uvicorn's config for ``app`` with the bounds of the module docstring (a request read within
    ``read_seconds``)."""
    import uvicorn

    return uvicorn.Config(
        app,
        http=bounded_protocol(read_seconds),
        log_level="warning",
        timeout_graceful_shutdown=2,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        limit_concurrency=MAX_CONNECTIONS,
    )


def bounded_protocol(read_seconds: float) -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol with a deadline on reading each request: its headers and body must arrive within
    ``read_seconds`` of its first byte (of the connection, for the first), else the answer is 408 and the connection
    closes. uvicorn bounds the time between requests and the size of headers, not this: without it, half-sent
    headers or a body sent ten bytes a second hold a connection for ever. (Defined here, not at import, so that
    ``pedro-table`` without the web extra says what to install instead of a traceback.)"""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    body = json.dumps({"error": f"the request did not arrive within {read_seconds:g} s"}).encode()
    timed_out = (
        b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
        + f"content-length: {len(body)}\r\n\r\n".encode()
        + body
    )
    reading = (h11.IDLE, h11.SEND_BODY)  # the client's states while its request is not all read

    class BoundedH11Protocol(H11Protocol):
        read_deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self.read_deadline = self.loop.call_later(read_seconds, self.read_timed_out)

        def data_received(self, data: bytes) -> None:
            if self.read_deadline is None and self.conn.their_state is h11.IDLE:  # a request after the last
                self.read_deadline = self.loop.call_later(read_seconds, self.read_timed_out)
            super().data_received(data)
            if self.conn.their_state not in reading:
                self.stop_deadline()

        def connection_lost(self, exc: Exception | None) -> None:
            self.stop_deadline()
            super().connection_lost(exc)

        def stop_deadline(self) -> None:
            if self.read_deadline is not None:
                self.read_deadline.cancel()
                self.read_deadline = None

        def read_timed_out(self) -> None:
            self.read_deadline = None
            if self.transport.is_closing() or self.conn.their_state not in reading:
                return
            if self.cycle is None or not self.cycle.response_started:
                self.transport.write(timed_out)
            self.transport.close()

    return BoundedH11Protocol


def _one_torch_thread() -> None:
    """Requests run in a thread pool: one torch thread each keeps policies from fighting over the cores."""
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(1)


if __name__ == "__main__":
    raise SystemExit(main())
