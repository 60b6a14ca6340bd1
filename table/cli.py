"""``pedro-table``: serve the table (docs/table.md) on 127.0.0.1 and print its address."""

from __future__ import annotations

import argparse
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

from pedro_env.cli import OneLineErrorParser, int_at_least, positive_seconds

LOOPBACK = ("127.0.0.1", "localhost", "::1")

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
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int_at_least(0), default=0, help="port (default 0: a free one)")
    parser.add_argument("--models", metavar="DIR", help="offer every checkpoint (*.pt) under DIR as an agent")
    parser.add_argument("--max-sessions", type=int_at_least(1), default=64, help="matches (and replays) held at once")
    parser.add_argument(
        "--idle-seconds", type=positive_seconds, default=1800.0, help="drop a match or replay unused this long (1800)"
    )
    parser.add_argument(
        "--max-upload", type=int_at_least(1024), default=2_000_000, metavar="BYTES", help="largest record accepted"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """0 after Ctrl-C, 2 for bad arguments, a port in use or a missing --models folder."""
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
    except OSError as error:
        print(f"pedro-table: error: cannot listen on {args.host}:{args.port}: {error.strerror}", file=sys.stderr)
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
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2))
    try:
        server.run(sockets=[listener])
    except KeyboardInterrupt:
        pass
    return 0


def _one_torch_thread() -> None:
    """Requests run in a thread pool: one torch thread each keeps policies from fighting over the cores."""
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(1)


if __name__ == "__main__":
    raise SystemExit(main())
