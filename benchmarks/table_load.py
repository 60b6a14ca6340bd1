"""A bounded load test of ``pedro-table`` on loopback: many clients at once, each playing a whole match.

    python -m benchmarks.table_load --clients 50

Starts ``pedro-table`` in its own process on a free port of 127.0.0.1 (pinned to the last CPU, the clients
to the others, unless ``--no-pin``), then runs ``--clients`` clients
at once (threads), each playing one match to its end with random legal moves against rule agents
(every ``--policy-every``-th client against the ``pretrained`` policy), while ``--search-clients``
more play against ``search:full`` (their latencies are reported apart: the point is that the others
do not wait for them). Prints the failures (any answer but 200) and the p50, p95 and max latency of a
move, as the server measured it (its ``Server-Timing`` header) and as the client saw it. Exit status
1 when a request failed.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import httpx2 as httpx
import numpy as np

from pedro_env.cli import one_line_on_interrupt


@dataclass
class ClientLog:
    """One client's requests: (server ms, client ms) per move or advance, and the failures (one line each)."""

    kind: str
    timings: list[tuple[float, float]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    deals: int = 0


def play_one_match(base: str, opponents: str, target: int, seed: int, log: ClientLog) -> None:
    """Play a whole match at ``base`` with random legal moves; every answer is logged in ``log``."""
    rng = random.Random(seed)
    with httpx.Client(base_url=base, timeout=120) as client:
        body = {
            "seat": 0,
            "partner": opponents,
            "opponents": opponents,
            "seed": seed,
            "rules": {"target_score": target},
        }
        answer = client.post("/api/matches", json=body)
        if answer.status_code != 201:
            log.failures.append(f"new match: {answer.status_code} {answer.text[:200]}")
            return
        match = answer.json()
        known = 0  # decisions received so far: each answer brings the new ones only, as the page asks
        while match["status"] != "over":
            known = match["decisions_from"] + len(match["decisions"])
            start = time.perf_counter()
            if match["status"] == "agent_turn":
                answer = client.post(f"/api/matches/{match['id']}/advance", params={"since": known})
            else:
                action = rng.choice(match["view"]["legal"])
                answer = client.post(
                    f"/api/matches/{match['id']}/move", params={"since": known}, json={"action": action}
                )
            client_ms = (time.perf_counter() - start) * 1000
            if answer.status_code != 200:
                log.failures.append(f"{answer.request.url.path}: {answer.status_code} {answer.text[:200]}")
                return
            server_ms = float(answer.headers["server-timing"].split("dur=")[1])
            log.timings.append((server_ms, client_ms))
            match = answer.json()
        log.deals = len(match["view"]["deals"])


def start_server(max_sessions: int, cpu: int | None) -> tuple[subprocess.Popen, str]:
    """``pedro-table`` on a free loopback port (pinned to ``cpu`` unless None), and its address."""
    server = subprocess.Popen(
        [sys.executable, "-m", "table.cli", "--max-sessions", str(max_sessions)],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=None if cpu is None else lambda: os.sched_setaffinity(0, {cpu}),
    )
    line = server.stdout.readline()
    if "http://" not in line:
        server.kill()
        raise RuntimeError(f"pedro-table did not start: {line!r}")
    return server, line.split("open ")[1].split(" ")[0].rstrip("/")


def percentiles(values: list[float]) -> str:
    if not values:
        return "no requests"
    p50, p95 = np.percentile(values, [50, 95])
    return f"p50 {p50:.1f} ms, p95 {p95:.1f} ms, max {max(values):.1f} ms"


@one_line_on_interrupt("python -m benchmarks.table_load")
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.table_load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50, help="clients against rule agents or the policy (50)")
    parser.add_argument("--policy-every", type=int, default=5, help="every N-th client plays pretrained (5)")
    parser.add_argument("--search-clients", type=int, default=1, help="clients against search:full besides (1)")
    parser.add_argument("--target", type=int, default=62, help="target score of each match (62: a whole match)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--no-pin", action="store_true", help="leave the server and the clients on any core (default: apart)"
    )
    args = parser.parse_args(argv)
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    server_cpu = cpus[-1] if len(cpus) >= 2 and not args.no_pin else None
    server, base = start_server(args.clients + args.search_clients, server_cpu)
    if server_cpu is not None:  # the clients' threads on the other cores, so the two do not take turns on one
        os.sched_setaffinity(0, set(cpus[:-1]))
    logs = []
    for number in range(args.clients):
        policy = args.policy_every > 0 and number % args.policy_every == args.policy_every - 1
        logs.append(ClientLog("pretrained" if policy else "rule:heuristic"))
    logs += [ClientLog("search:full") for _ in range(args.search_clients)]
    threads = [
        threading.Thread(target=play_one_match, args=(base, log.kind, args.target, args.seed + number, log))
        for number, log in enumerate(logs)
    ]
    start = time.perf_counter()
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        server.terminate()
        server.wait(timeout=30)
    seconds = time.perf_counter() - start
    failures = [failure for log in logs for failure in log.failures]
    quick = [log for log in logs if log.kind != "search:full"]
    requests = sum(len(log.timings) for log in logs)
    pinned = f"; server on CPU {server_cpu}, clients on the others" if server_cpu is not None else ""
    print(
        f"{len(logs)} clients at once ({len(quick)} against rule agents or pretrained, {args.search_clients} against "
        f"search:full), matches to {args.target}: {requests} moves in {seconds:.1f} s, "
        f"{sum(log.deals for log in logs)} deals, {len(failures)} failed requests{pinned}"
    )
    for kind in sorted({log.kind for log in logs}):
        timings = [timing for log in logs if log.kind == kind for timing in log.timings]
        print(
            f"  against {kind}: {len(timings)} moves; on the server {percentiles([t[0] for t in timings])}; "
            f"at the client {percentiles([t[1] for t in timings])}"
        )
    quick_server = [timing[0] for log in quick for timing in log.timings]
    print(f"  rule agents and pretrained together, on the server: {percentiles(quick_server)}")
    for failure in failures[:5]:
        print(f"  failed: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
