"""pedro-play through a whole match from stdin, replay records (round trips from pedro-play, pedro-eval and
the env), and --help of every command-line tool."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import pedro_env
from arena.evaluate import evaluate
from arena.play import MoveError, build_seats, parse_move, play_interactive_match
from arena.replay import MatchRecord, ReplayError, record_from_env, replay_match
from arena.reports import save_replays
from pedro_env import make_config
from pedro_env.actions import str_to_action
from pedro_env.config import PedroConfig
from pedro_env.state import Phase

from conftest import run_module, start_module


def first_legal_move(transcript: list[str]) -> str:
    """What a scripted player types: the first legal move of the last 'Legal:' line, in short form."""
    legal = [line for text in transcript for line in text.splitlines() if "Legal: " in line][-1]
    first = legal.split("Legal: ", 1)[1].split(", ")[0]
    if first.startswith(("play ", "discard ")) or ".." in first:
        return first.split()[1]
    return first


def table_rules(num_players: int, **rules: object) -> PedroConfig:
    """The rules of a table of ``num_players`` (three players score simple, the only scoring they allow)."""
    return make_config(num_players=num_players, **({"scoring": "simple"} if num_players == 3 else {}), **rules)


def write_policy_checkpoint(path: Path, config: PedroConfig) -> Path:
    """An untrained policy for games of ``config`` written at ``path`` as ``pedro-train --export`` writes one (what
    ``ckpt:`` and the table's ``--models`` read)."""
    import torch

    from agents.checkpoint import save_checkpoint
    from agents.networks import ActorCritic, NetworkShape
    from agents.policy import policy_payload
    from pedro_env.actions import NUM_ACTIONS
    from pedro_env.observation_layout import observation_scale, observation_size

    torch.manual_seed(0)
    size = observation_size(config)
    network = ActorCritic(NetworkShape(size, size, NUM_ACTIONS, (16,)), observation_scale(config))
    return save_checkpoint(policy_payload(network, config), path)


def test_short_and_long_move_forms() -> None:
    bids = [str_to_action(text) for text in ("pass", "bid 7", "bid 8")]
    assert parse_move("7", bids, Phase.BID) == str_to_action("bid 7")
    assert parse_move("bid 8", bids, Phase.BID) == str_to_action("bid 8")
    assert parse_move("p", bids, Phase.BID) == str_to_action("pass")
    trumps = [str_to_action(f"trump {suit}") for suit in "CDHS"]
    assert parse_move("h", trumps, Phase.TRUMP) == str_to_action("trump H")
    discards = [str_to_action("discard 9C"), str_to_action("done")]
    assert parse_move("9c", discards, Phase.DISCARD) == str_to_action("discard 9C")
    assert parse_move("d", discards, Phase.DISCARD) == str_to_action("done")
    plays = [str_to_action("play 5H"), str_to_action("play 10S")]
    assert parse_move("5H", plays, Phase.PLAY) == str_to_action("play 5H")
    assert parse_move("TS", plays, Phase.PLAY) == str_to_action("play 10S")
    with pytest.raises(MoveError, match="play 6H is not legal now; legal: play 5H TS"):
        parse_move("6h", plays, Phase.PLAY)
    with pytest.raises(MoveError, match="cannot read 'xyzzy'"):
        parse_move("xyzzy", plays, Phase.PLAY)
    with pytest.raises(MoveError, match="bid 9 is not legal now"):
        parse_move("9", bids, Phase.BID)
    for out_of_range in ("bid 99", "99", "bid 0"):  # readable bids, just not legal: not "cannot read"
        with pytest.raises(MoveError, match=r"bid (99|0) is not legal now; legal: pass, bid 7, bid 8"):
            parse_move(out_of_range, bids, Phase.BID)
    with pytest.raises(MoveError, match="cannot read 'play ZZ': unknown card 'zz'"):
        parse_move("play ZZ", plays, Phase.PLAY)


def test_a_hidden_hand_of_one_card_reads_one_card() -> None:
    from pedro_env.render import render_table

    env = pedro_env.raw_env()
    env.reset(seed=5)
    while env.game.phase[0] != Phase.PLAY or bin(int(env.game.hands[0, 1])).count("1") != 1:
        env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0]))
    text = render_table(env.game, env.config, viewer=0)
    assert re.search(r"\b1 card\b(?!s)", text) and "1 cards" not in text and not re.search(r"\b1 (tricks|points)", text)


def test_pedro_play_records_what_a_policy_thought_at_each_of_its_moves() -> None:
    config = make_config(target_score=5)
    transcript: list[str] = []
    record = play_interactive_match(
        build_seats(config, 0, "pretrained", "rule:heuristic"),
        config,
        3,
        lambda prompt: first_legal_move(transcript),
        transcript.append,
    )
    seats = [int(step[1]) for step in _actors(record)]
    assert len(record.thoughts) == len(record.actions)
    assert all((thought is not None) == (seat == 2) for thought, seat in zip(record.thoughts, seats))
    thought = next(t for t in record.thoughts if t is not None)
    assert thought["agent"] == "pretrained" and sum(p for _, p in thought["top"]) <= 1.0001
    assert MatchRecord.from_dict(json.loads(json.dumps(record.to_dict()))).thoughts == record.thoughts


def _actors(record: MatchRecord) -> list[tuple[int, int]]:
    """(action number, seat that took it) of every action of ``record``."""
    from arena.replay import replay_steps

    return [(number, actor) for number, (_, actor, action) in enumerate(replay_steps(record)) if action is not None]


def test_pedro_play_runs_a_whole_match_from_stdin(tmp_path: Path) -> None:
    config = make_config(target_score=21)
    transcript: list[str] = []
    moves: list[str] = []

    def read_line(prompt: str) -> str:
        moves.append(first_legal_move(transcript))
        return moves[-1]

    expected = play_interactive_match(
        build_seats(config, 0, "rule:heuristic", "rule:cautious"), config, 11, read_line, transcript.append
    )
    assert expected.result["winner"] is not None and len(moves) > 20
    # the same moves through the real command, with a mistyped and an illegal line first
    stdin = "\n".join(["banana", "play 2C", "?", *moves]) + "\n"
    saved = tmp_path / "match.json"
    done = run_module(
        "arena.play",
        "--seed",
        "11",
        "--opponents",
        "rule:cautious",
        "--set",
        "target_score=21",
        "--save",
        str(saved),
        stdin=stdin,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "cannot read 'banana'" in out and "play 2C is not legal now" in out
    assert "Your move, P0. Legal:" in out and "Deal over:" in out and "Point cards taken:" in out
    assert "Match over: team" in out
    record = MatchRecord.load(saved)
    assert record.actions == expected.actions and record.result == expected.result
    assert replay_match(record) == expected.result
    # input that ends early is reported, not a traceback
    cut = run_module("arena.play", "--seed", "11", "--set", "target_score=21", stdin="\n".join(moves[:3]) + "\n")
    assert cut.returncode == 1 and "Input ended before the match did" in cut.stdout
    bad = run_module("arena.play", "--opponents", "rule:nobody")
    assert bad.returncode == 2 and "unknown agent spec 'rule:nobody'" in bad.stderr


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_pedro_play_seats_every_table_size_with_a_policy_among_the_agents(num_players: int, tmp_path: Path) -> None:
    """Two and three players play alone (team = seat): the other seats are all opponents, one spec each by '+'; four
    players seat a partner opposite. A policy trained for the table size plays, its thoughts recorded."""
    config = table_rules(num_players, target_score=11)
    policy = f"ckpt:{write_policy_checkpoint(tmp_path / 'policy.pt', config)}"
    opponents = "+".join([policy, "rule:cautious"][: 1 if num_players == 2 else 2])
    partner = "rule:heuristic" if num_players == 4 else None
    transcript: list[str] = []
    seats = build_seats(config, 0, partner, opponents)
    record = play_interactive_match(seats, config, 7, lambda prompt: first_legal_move(transcript), transcript.append)
    labels = {2: ["you", policy], 3: ["you", policy, "rule:cautious"], 4: ["you", policy, partner, "rule:cautious"]}
    assert record.players == labels[num_players]
    assert replay_match(record) == record.result and record.result["winner"] in range(config.num_teams)
    assert all((thought is not None) == (seat == 1) for thought, (_, seat) in zip(record.thoughts, _actors(record)))
    text = "\n".join(transcript)
    if num_players == 4:
        assert "Match over: team " in text and "Points: team 0 " in text
    else:  # everyone alone: the narration names the seats
        assert re.search(r"Match over: P[0-9] wins\. Scores: P0 -?\d+, P1 ", text) and "Points: P0 " in text


@pytest.mark.parametrize("num_players", [2, 3])
def test_pedro_play_from_stdin_at_a_table_of_individuals(num_players: int) -> None:
    """The command at two or three players: one --opponents spec seats every other player (here the shipped policy,
    trained for every table and rule set, so no note), and no partner."""
    config = table_rules(num_players, target_score=11)
    rules = [f"{key}={getattr(config, key)}" for key in ("num_players", "scoring", "target_score")]
    done = run_module("arena.play", "--seed", "3", "--opponents", "pretrained", "--set", *rules, stdin="?\n")
    assert done.returncode == 1 and "Input ended before the match did" in done.stdout, done.stderr
    others = ", ".join(f"P{seat} pretrained" for seat in range(1, num_players))
    assert f"Pedro, seed 3 (P0 you, {others})." in done.stdout
    assert done.stderr == ""


def test_pedro_play_seats_the_look_ahead_search_as_partner_and_opponents() -> None:
    small = "search:full,samples=2,play_samples=2,play_depth=1,play_exact=2"
    run = run_module("arena.play", "--seed", "5", "--partner", small, "--opponents", small, stdin="pass\n")
    assert run.returncode == 1 and "Input ended before the match did" in run.stdout, run.stderr
    assert "Your move, P0. Legal:" in run.stdout


def random_match_record(path: Path) -> MatchRecord:
    """A whole match to 21 of random legal play in the AEC env, recorded and saved at ``path``."""
    env = pedro_env.env(target_score=21)
    env.reset(seed=4)
    rng = np.random.default_rng(1)
    for _agent in env.agent_iter():
        observation, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            break
        env.step(int(rng.choice(np.flatnonzero(observation["action_mask"]))))
    record = record_from_env(env, players=["random"] * 4)
    record.save(path)
    return record


def test_replays_from_the_env_and_from_pedro_eval_replay_exactly(tmp_path: Path) -> None:
    path = tmp_path / "env.json"
    record = random_match_record(path)
    loaded = MatchRecord.load(path)
    assert loaded == record and replay_match(loaded) == record.result

    head = evaluate("rule:heuristic", "random", pairs=2, config={"target_score": 21}, record=True)
    paths = save_replays(head, tmp_path / "eval")
    assert len(paths) == 4
    for match, replay_path in zip(head.results, paths):
        replayed = MatchRecord.load(replay_path)
        assert replay_match(replayed)["deals"] == match.deals

    tampered = json.loads(path.read_text())
    tampered["actions"][-1] = "bid 99"
    (tmp_path / "tampered.json").write_text(json.dumps(tampered))
    with pytest.raises(ReplayError, match="does not replay"):
        replay_match(MatchRecord.load(tmp_path / "tampered.json"))
    (tmp_path / "junk.json").write_text("{not json")
    with pytest.raises(ReplayError, match="not a JSON replay record"):
        MatchRecord.load(tmp_path / "junk.json")
    shown = run_module("arena.replay", str(path), "--deals")
    assert shown.returncode == 0 and "matches the record" in shown.stdout
    missing = run_module("arena.replay", str(tmp_path / "nope.json"))
    assert missing.returncode == 2 and "replay file not found" in missing.stderr


@pytest.mark.parametrize("module", ["arena.replay", "arena.eval_cli"])
def test_a_reader_that_stops_early_gets_no_traceback(tmp_path: Path, module: str) -> None:
    """``pedro-replay match.json | head -1``: the command stops quietly when the pipe closes."""
    if module == "arena.replay":
        random_match_record(tmp_path / "match.json")
        args = [str(tmp_path / "match.json")]
    else:
        args = ["random", "random", "--pairs", "2", "--set", "target_score=11", "--no-progress"]
        args += ["--out", str(tmp_path / "eval")]
    process = start_module(module, *args)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.readline()
    process.stdout.close()  # as head does after its lines
    errors = process.stderr.read().decode()
    assert process.wait(timeout=300) == 0 and "Traceback" not in errors, errors


@pytest.mark.parametrize(
    "module",
    [
        "arena.eval_cli",
        "train.cli",
        "arena.play",
        "arena.replay",
        "benchmarks.play",
        "benchmarks.rule_agents",
        "benchmarks.training",
        "train.curve",
        "tools.doc_tables",
        "tools.fit_capture_models",
        "benchmarks.engine",
        "benchmarks.startup",
        "pedro_env.demo",
        "table.cli",
        "benchmarks.table_load",
    ],
)
def test_every_cli_has_help(module: str) -> None:
    done = run_module(module, "--help")
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout
    if module in ("arena.eval_cli", "train.cli", "arena.play", "arena.replay", "table.cli"):
        assert "examples:" in done.stdout


def test_the_play_bench_times_pedro_plays_own_loop_and_names_a_bad_spec() -> None:
    done = run_module("benchmarks.play", "--matches", "1", "--seed", "5")
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(
        r"1 matches, [1-9]\d* moves of the person: \d+\.\d{3} ms of CPU per move \(partner rule:heuristic, "
        r"opponents rule:heuristic\)\n",
        done.stdout,
    ), done.stdout
    bad = run_module("benchmarks.play", "--opponents", "rule:nobody")
    assert bad.returncode == 2 and bad.stdout == ""
    assert len(bad.stderr.splitlines()) == 1 and "unknown agent spec 'rule:nobody'" in bad.stderr, bad.stderr


@pytest.mark.parametrize("module,args", [("train.cli", ["--list-keys"]), ("arena.eval_cli", ["--help"])])
def test_a_reader_gone_before_the_first_line_gets_no_traceback(module: str, args: list[str]) -> None:
    process = start_module(module, *args, text=True)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # every write now fails with EPIPE
    errors = process.stderr.read()
    assert process.wait(timeout=60) == 0 and "Traceback" not in errors, errors
