"""CPU time of a ``pedro-play`` move: what runs between two of the person's moves.

    python -m benchmarks.play                         # 30 matches, rule:heuristic at the other three seats
    python -m benchmarks.play --matches 100 --partner pretrained --opponents pretrained

The person at seat 0 plays a uniformly random legal move the instant it is asked for; everything else is
``pedro-play``'s own loop (:func:`arena.play.play_interactive_match`): the agents' moves, the table from
the person's seat, the narration of tricks and deals, with the text collected instead of printed. One
warm-up match first (the kernels' cache is loaded, the agents built), then process CPU time over the
matches, divided by the person's moves. Deterministic for a given ``--seed``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from agents import AgentSpecError
from arena import play
from pedro_env.cli import OneLineErrorParser, int_at_least, one_line_on_interrupt
from pedro_env.config import make_config


def cpu_per_move(matches: int, partner: str, opponents: str, seed: int) -> tuple[float, int]:
    """(seconds of process CPU per move of the person, the person's moves) over ``matches`` matches."""
    config = make_config()
    seats = play.build_seats(config, 0, partner, opponents)
    rng = np.random.default_rng(seed)
    moves = 0

    def random_move(legal, phase, actor, read_line, write) -> int:
        nonlocal moves
        moves += 1
        return int(legal[rng.integers(len(legal))])

    text: list[str] = []
    asked = play._ask_move
    play._ask_move = random_move  # the person's prompt, answered at once
    try:
        play.play_interactive_match(seats, config, seed + matches, lambda prompt: "", text.append)  # warm-up
        moves = 0
        start = time.process_time()
        for match in range(matches):
            play.play_interactive_match(seats, config, seed + match, lambda prompt: "", text.append)
        return (time.process_time() - start) / max(moves, 1), moves
    finally:
        play._ask_move = asked


@one_line_on_interrupt("python -m benchmarks.play")
def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineErrorParser(prog="python -m benchmarks.play", description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches", type=int_at_least(1), default=30, help="timed matches (default 30)")
    parser.add_argument("--partner", default="rule:heuristic", help="agent spec of the person's partner")
    parser.add_argument("--opponents", default="rule:heuristic", help="agent spec of both opponents")
    parser.add_argument(
        "--seed", type=int_at_least(0), default=0, help="seed of the deals and of the person's moves (default 0)"
    )
    args = parser.parse_args(argv)
    try:
        seconds, moves = cpu_per_move(args.matches, args.partner, args.opponents, args.seed)
    except AgentSpecError as error:
        parser.error(str(error))
    print(
        f"{args.matches} matches, {moves} moves of the person: {1000 * seconds:.3f} ms of CPU per move "
        f"(partner {args.partner}, opponents {args.opponents})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
