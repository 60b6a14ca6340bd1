"""``pedro-play``: play a match in the terminal with any agents as partner and opponents.

    pedro-play --partner rule:heuristic --opponents ckpt:runs/x/latest.pt --seed 7
    pedro-play --set num_players=3 scoring=simple --opponents search:pimc+rule:cautious

You sit at seat P0 (``--seat`` moves you); at four players your partner sits opposite, at two or
three everyone plays alone (no partner: ``--opponents`` seats the others). Before each of your moves
the table is drawn from your side (your hand sorted, trumps marked ``*``; bids, trumps, the trick
with who played what, tricks and points won, scores), followed by your legal moves. Type a move in
docs/rules.md's text form (``bid 7``, ``pass``, ``trump H``, ``discard 9C``, ``done``, ``play 5H``) or
short (``7``, ``p``, ``H``, ``9C``, ``d``, ``5H``); ``?`` lists the legal moves again, ``q`` quits.
Anything illegal or mistyped is explained and asked again. Every deal ends with a summary (who took
which point card, the bid made or set, the new scores). ``--save FILE`` writes the match as a
replay record (``pedro-replay FILE`` shows it again). Input may be piped: one move per line.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from agents import Agent, AgentSpecError
from arena.match import build_agent, other_rules_note
from arena.replay import MatchRecord, record_from_game
from pedro_env.actions import DISCARD_OFFSET, MAX_TOTAL_POINTS, PLAY_OFFSET, action_to_str, str_to_action
from pedro_env.cards import CARD_NAMES, SUITS, RuleTables, str_to_card, suit_of_str
from pedro_env.cli import (
    INTERRUPTED_STATUS,
    OneLineErrorParser,
    OutputPathError,
    add_rule_overrides,
    check_output_file,
    one_line_on_interrupt,
    quiet_on_broken_pipe,
    rule_config,
)
from pedro_env.config import ConfigError, PedroConfig
from pedro_env.kernels.tricks import trick_winner
from pedro_env.single_game import SingleGame
from pedro_env.state import Phase

DEFAULT_AGENT = "rule:heuristic"  # at every seat not named
HELP_LINE = "moves: bid N / N, pass / p, trump S / S, discard XX / XX, done / d, play XX / XX; ? legal moves, q quit"


class MoveError(ValueError):
    """A typed move that is mistyped or not legal now (the message says which, and what is)."""


def legal_texts(legal: Sequence[int]) -> list[str]:
    return [action_to_str(action) for action in legal]


def describe_legal(legal: Sequence[int]) -> str:
    """The legal moves, compactly: ``bid 7 .. bid 14, pass`` stays readable, cards are listed by name."""
    texts = legal_texts(legal)
    plays = [text.split()[1] for text in texts if text.startswith("play ")]
    discards = [text.split()[1] for text in texts if text.startswith("discard ")]
    others = [text for text in texts if not text.startswith(("play ", "discard "))]
    parts = []
    if plays:
        parts.append("play " + " ".join(plays))
    if discards:
        parts.append("discard " + " ".join(discards))
    bids = [text for text in others if text.startswith("bid ")]
    if len(bids) > 3:
        others = [text for text in others if not text.startswith("bid ")]
        parts.append(f"{bids[0]} .. {bids[-1].split()[1]}")
    parts.extend(others)
    return ", ".join(parts)


def parse_move(text: str, legal: Sequence[int], phase: int) -> int:
    """A typed move -> the legal action it names; MoveError saying what is wrong otherwise."""
    words = text.strip().lower()
    if not words:
        raise MoveError("type a move (? lists the legal ones)")
    action: int | None = None
    bid = re.fullmatch(r"(?:bid\s+)?(\d+)", words)
    if bid is not None and not 1 <= int(bid.group(1)) <= MAX_TOTAL_POINTS:
        raise MoveError(f"bid {int(bid.group(1))} is not legal now; legal: {describe_legal(legal)}")
    reason = ""
    try:
        action = str_to_action(words)
    except ValueError as error:
        reason = str(error).partition(": ")[2]
        if words in ("p", "pass"):
            action = str_to_action("pass")
        elif words in ("d", "done"):
            action = str_to_action("done")
        elif words.isdigit():
            action = str_to_action(f"bid {int(words)}") if 1 <= int(words) <= 23 else None
        elif phase == Phase.TRUMP:
            try:
                action = str_to_action(f"trump {SUITS[suit_of_str(words)]}")
            except (ValueError, IndexError):
                action = None
        else:
            try:
                card = str_to_card(words)
            except ValueError:
                card = None
            if card is not None:
                offset = DISCARD_OFFSET if phase == Phase.DISCARD else PLAY_OFFSET
                action = offset + card
    if action is None:
        because = f": {reason}" if reason and not reason.startswith("the forms are") else ""
        raise MoveError(f"cannot read {text.strip()!r}{because} ({HELP_LINE})")
    if action not in legal:
        raise MoveError(f"{action_to_str(action)} is not legal now; legal: {describe_legal(legal)}")
    return action


@dataclass
class DealLog:
    """The point cards captured in the current deal, by seat, followed trick by trick."""

    trump: int = -1
    leader: int = -1
    trick: dict[int, int] = field(default_factory=dict)  # seat -> card in the current trick
    captured: list[tuple[int, int]] = field(default_factory=list)  # (card, winning seat)

    def reset(self) -> None:
        self.trump, self.leader, self.trick, self.captured = -1, -1, {}, []

    def play(self, seat: int, card: int, trump: int, num_players: int, tables: RuleTables) -> int | None:
        """Record a card; returns the trick's winner when this card completes it."""
        if not self.trick:
            self.leader = seat
        self.trump = trump
        self.trick[seat] = card
        if len(self.trick) < num_players:
            return None
        cards = np.array([[self.trick[s] for s in range(num_players)]], dtype=np.int8)
        winner = int(trick_winner(cards, np.array([self.leader]), np.array([trump]), tables)[0])
        for card in self.trick.values():
            if tables.points[trump, card] > 0:
                self.captured.append((card, winner))
        self.trick = {}
        return winner


@dataclass
class Seat:
    """Who plays a seat: ``agent`` None for the person at the keyboard."""

    label: str
    agent: Agent | None


def narrate_deal_end(deal: dict, log: DealLog, config: PedroConfig, tables: RuleTables, seats: list[Seat]) -> str:
    """The end of a deal in words: maker and bid, point cards by who took them, made or set, scores."""
    if deal["redeal"]:
        return "Everybody passed: the deal is thrown in and dealt again."
    lines = [f"Deal over: P{deal['maker']} ({seats[deal['maker']].label}) bid {deal['bid']} in {deal['trump']}."]
    taken = ", ".join(
        f"{CARD_NAMES[card]} ({tables.points[log.trump, card]}) by P{seat}" for card, seat in sorted(log.captured)
    )
    lines.append(f"Point cards taken: {taken or 'none'}.")
    if config.low == "held":
        lines.append("(Low counts for the side that held it when play began.)")
    sides = side_names(config)
    points = ", ".join(f"{side} {p}" for side, p in zip(sides, deal["points"]))
    verdict = "made" if deal["made"] else "set"
    lines.append(f"Points: {points}. The bid of {deal['bid']} is {verdict}.")
    if deal.get("renege") is not None:
        lines.append(f"{sides[deal['renege']].capitalize()} reneged and was penalised.")
    changes = ", ".join(f"{side} {delta:+d}" for side, delta in zip(sides, deal["delta"]))
    scores = ", ".join(f"{side} {score}" for side, score in zip(sides, deal["scores"]))
    lines.append(f"Score changes: {changes}. Scores: {scores}.")
    return "\n".join(lines)


def side_names(config: PedroConfig) -> list[str]:
    """What the narration calls each team: ``team 0``, ``team 1`` for partnerships, the seat (``P2``) where
    everyone plays alone (team = seat)."""
    if config.num_teams == config.num_players:
        return [f"P{seat}" for seat in range(config.num_players)]
    return [f"team {team}" for team in range(config.num_teams)]


def play_interactive_match(
    seats: list[Seat],
    config: PedroConfig,
    seed: int,
    read_line: Callable[[str], str],
    write: Callable[[str], None],
) -> MatchRecord:
    """Play one match; ``read_line(prompt)`` gives the person's moves (EOFError ends the match early).

    Before each of the person's moves ``write`` gets the other seats' moves since their last one, the
    table from their seat and the legal moves; typing ``q`` ends the match where it stands.
    """
    game = SingleGame(config)
    game.reset(seed=seed)
    state = game.started("play")  # the match's state arrays, stepped in place
    tables = RuleTables.build(config.variant)
    rng = np.random.default_rng(seed)
    log = DealLog()
    events: list[str] = []  # what happened since the person last saw the table
    players = [who.label for who in seats]
    thoughts: list[dict | None] = []  # a policy's thoughts at each action (replay records keep them)
    while not game.over:
        actor = game.actor
        who = seats[actor]
        if who.agent is None:
            if events:
                write("\n".join(events))
                events = []
            write("\n" + game.render(viewer=actor))
            action = _ask_move(game.legal_actions(), int(state.phase[0]), actor, read_line, write)
            if action is None:
                write("You left the match.")
                return record_from_game(game, players, "pedro-play", thoughts)
            thoughts.append(None)
        else:
            observation, mask = game.observe(actor), game.mask_bytes.copy()
            action = int(who.agent.act(observation[None], mask[None], rng)[0])
            events.append(f"P{actor} ({who.label}): {action_to_str(action)}")
            thoughts.append(agent_thoughts(who.agent, observation, mask))
        trump = int(state.trump[0])
        game.step(action)
        events.extend(_after_move(game, action, actor, trump, log, tables, seats))
    write("\n".join(events))
    record = record_from_game(game, players, "pedro-play", thoughts)
    write(_match_end_text(record, config, [seat for seat, who in enumerate(seats) if who.agent is None]))
    return record


def agent_thoughts(agent: Agent, observation: np.ndarray, action_mask: np.ndarray) -> dict | None:
    """What a policy agent made of a decision (its ``decision_thoughts``), None for agents without thoughts."""
    describe = getattr(agent, "decision_thoughts", None)
    return describe(observation, action_mask) if describe is not None else None


def _ask_move(
    legal: list[int], phase: int, actor: int, read_line: Callable[[str], str], write: Callable[[str], None]
) -> int | None:
    """The person's move, asked again until it is legal; None when they quit (EOFError when input ends)."""
    write(f"Your move, P{actor}. Legal: {describe_legal(legal)}")
    while True:
        try:
            text = read_line("> ")
        except EOFError:
            write("Input ended before the match did.")
            raise
        if text.strip().lower() in ("q", "quit", "exit"):
            return None
        if text.strip() in ("?", "help"):
            write(f"Legal: {describe_legal(legal)}\n({HELP_LINE})")
            continue
        try:
            return parse_move(text, legal, phase)
        except MoveError as error:
            write(f"  {error}")


def _after_move(
    game: SingleGame, action: int, actor: int, trump: int, log: DealLog, tables: RuleTables, seats: list[Seat]
) -> list[str]:
    """What ``action`` (just played by ``actor`` under ``trump``) ended: a trick (its winner), a deal (its story)."""
    config = game.config
    events = []
    text = action_to_str(action)
    if text.startswith("play "):
        winner = log.play(actor, str_to_card(text.split()[1]), trump, config.num_players, tables)
        if winner is not None:
            events.append(f"  P{winner} ({seats[winner].label}) wins the trick.")
    if game.deal_ended:
        events.append(narrate_deal_end(game.deal_info(), log, config, tables, seats))
        log.reset()
    return events


def _match_end_text(record: MatchRecord, config: PedroConfig, human_seats: list[int]) -> str:
    """The final line: the winning team and the scores (and whether the person won), or a stop without winner."""
    sides = side_names(config)
    scores = ", ".join(f"{side} {score}" for side, score in zip(sides, record.result["scores"]))
    winner = record.result["winner"]
    if winner is None:
        return f"\nMatch stopped after {record.result['deals']} deals without a winner. Scores: {scores}."
    mine = [seat for seat in human_seats if int(config.team_of_seat[seat]) == winner]
    verdict = " You win!" if mine else (" You lose." if human_seats else "")
    return f"\nMatch over: {sides[winner]} wins. Scores: {scores}.{verdict}"


def split_specs(text: str, count: int) -> list[str]:
    """``'rule:heuristic'`` -> the same spec ``count`` times; ``'a+b'`` -> one per position."""
    parts = [part.strip() for part in text.split("+") if part.strip()]
    if len(parts) == 1:
        return parts * count
    if len(parts) != count:
        allowed = "one spec (there is one opponent)" if count == 1 else f"one spec or {count} joined by '+'"
        raise AgentSpecError(f"--opponents takes {allowed}, got {text!r}")
    return parts


def build_seats(config: PedroConfig, human_seat: int, partner: str | None, opponents: str) -> list[Seat]:
    """Who plays each seat: the person at ``human_seat``, ``partner`` (default rule:heuristic) opposite at four
    players, the ``opponents`` (one spec, or one per other seat joined by '+') elsewhere. With two or three players
    everyone plays alone: a ``partner`` is refused (AgentSpecError), as is an agent that does not fit the table."""
    n = config.num_players
    if not 0 <= human_seat < n:
        raise AgentSpecError(f"--seat {human_seat} is not allowed: seats are 0..{n - 1}")
    team = int(config.team_of_seat[human_seat])
    others = [seat for seat in range(n) if int(config.team_of_seat[seat]) != team]
    if partner is not None and len(others) == n - 1:
        raise AgentSpecError(
            f"--partner: at {n} players everyone plays alone (no partner); --opponents names the other {n - 1} seats"
        )
    partner = partner or DEFAULT_AGENT
    opponent_specs = split_specs(opponents, len(others))
    seats: list[Seat] = []
    for seat in range(n):
        if seat == human_seat:
            seats.append(Seat("you", None))
        elif int(config.team_of_seat[seat]) == team:
            seats.append(Seat(partner, build_agent(partner, config)) if partner != "human" else Seat("you", None))
        else:
            spec = opponent_specs[others.index(seat)]
            seats.append(Seat(spec, build_agent(spec, config)))
    return seats


EXAMPLES = """examples:
  pedro-play                                             # you and rule:heuristic against two rule:heuristic
  pedro-play --partner pretrained --opponents pretrained # the shipped trained policy at the other three seats
  pedro-play --partner rule:cautious --opponents search:pimc --seed 7
  pedro-play --partner search:full --opponents search:pimc    # the look-ahead search as your partner
  pedro-play --opponents ckpt:runs/quickstart/latest.pt --save my_match.json
  pedro-play --set target_score=21 variant=sancho
  pedro-play --set num_players=3 scoring=simple --opponents search:pimc+rule:cautious   # three players, each alone
  pedro-play --set num_players=3 scoring=simple --opponents pretrained   # the shipped three-player policy
  pedro-play --set num_players=2 --opponents rule:heuristic             # two players, head to head
  pedro-replay my_match.json                             # watch it again
"""


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog="pedro-play",
        description="Play a Pedro match in the terminal against agents (moves as text: bid 7, trump H, play 5H).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--partner",
        default=None,
        help="agent spec of your partner at 4 players: random, rule:heuristic (default), rule:cautious, search:pimc, "
        "search:full (look-ahead bids, trumps and discards), pretrained (the shipped trained policy), ckpt:PATH; "
        "with 2 or 3 players everyone plays alone and there is no partner",
    )
    parser.add_argument(
        "--opponents",
        default=DEFAULT_AGENT,
        help="one agent spec for every opponent (the same choices, default rule:heuristic), or one per opponent "
        "joined by '+': two at 4 players, the other seats at 2 or 3 (a policy plays only the table size it was "
        "trained for; pretrained the one whose file is shipped)",
    )
    parser.add_argument("--seat", type=int, default=0, help="your seat, 0..n-1 (default 0)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the deals and the agents (default: random)")
    add_rule_overrides(parser)
    parser.add_argument("--save", metavar="FILE", help="write the match as a replay record (JSON)")
    return parser


@quiet_on_broken_pipe
@one_line_on_interrupt("pedro-play")  # Ctrl-C while the agents load or the match is saved
def main(argv: Sequence[str] | None = None) -> int:
    """``pedro-play``: 0 after a match (or a quit), 1 when input ends early, 2 for bad arguments, 130 on Ctrl-C
    (one line on stderr, as every command says it)."""
    args = build_parser().parse_args(argv)
    try:
        config, _ = rule_config(args)
        seats = build_seats(config, args.seat, args.partner, args.opponents)
        if args.seed is not None and not 0 <= args.seed <= 2**62:
            raise ConfigError(f"--seed must be an int from 0 to 2**62, got {args.seed}")
        if args.save:
            check_output_file(args.save, "replay file (--save)")
    except (ConfigError, AgentSpecError, OutputPathError) as error:
        print(f"pedro-play: error: {error}", file=sys.stderr)
        return 2
    notes = {seat.label: other_rules_note(seat.label, seat.agent) for seat in seats}  # one note per agent
    for note in notes.values():
        if note:
            print(f"pedro-play: note: {note}", file=sys.stderr)
    seed = args.seed if args.seed is not None else int(np.random.SeedSequence().entropy % 1_000_000)
    names = ", ".join(f"P{seat} {who.label}" for seat, who in enumerate(seats))
    print(f"Pedro, seed {seed} ({names}). {HELP_LINE}", flush=True)

    def read_line(prompt: str) -> str:
        print(prompt, end="", flush=True)
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        if not sys.stdin.isatty():
            print(line.rstrip("\n"))  # echo piped moves so the transcript reads like a session
        return line

    code = 0
    record: MatchRecord | None = None
    try:
        record = play_interactive_match(seats, config, seed, read_line, lambda text: print(text, flush=True))
    except EOFError:
        code = 1
    except KeyboardInterrupt:
        print(flush=True)  # ends the prompt's line on stdout; stderr gets one line
        print("pedro-play: interrupted", file=sys.stderr)
        code = INTERRUPTED_STATUS
    if args.save and record is not None:
        try:
            path = record.save(args.save)
        except (OSError, OutputPathError) as error:
            return _save_elsewhere(record, _cannot_write(args.save, error))
        print(f"saved the match to {path} (pedro-replay {path})")
    return code


def _cannot_write(path: str | Path, error: OSError | OutputPathError) -> str:
    """``cannot write PATH: REASON``, the user's path named (OutputPathError's message already is that)."""
    return str(error) if isinstance(error, OutputPathError) else f"cannot write {path}: {error.strerror or error}"


def _save_elsewhere(record: MatchRecord, problem: str) -> int:
    """The match could not be written where asked (the disk filled up during play; nothing cut is left there): save
    it in the temporary directory instead and say where, in one line; status 1."""
    fallback = Path(tempfile.gettempdir()) / f"pedro-match-{os.getpid()}-{time.time_ns()}.json"
    try:
        path = record.save(fallback)
    except (OSError, OutputPathError):
        print(f"pedro-play: error: {problem} (nor {fallback})", file=sys.stderr)
        return 1
    print(f"pedro-play: error: {problem}; saved the match to {path} instead", file=sys.stderr)
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
