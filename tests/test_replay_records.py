"""pedro-replay on broken records: one line on stderr naming the problem, status 2, never a traceback; a record
without a result says so; strings from a record are printed escaped; deal summaries read as words."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pedro_env
from arena.replay import MatchRecord, ReplayError, main, printable, record_from_env, replay_match

from conftest import run_module


def played_record(target_score: int = 11, max_deals: int = 3, seed: int = 4) -> dict[str, Any]:
    """The JSON form of a short match of random legal play in the AEC env."""
    env = pedro_env.env(target_score=target_score, max_deals=max_deals)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _agent in env.agent_iter():
        observation, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            break
        env.step(int(rng.choice(np.flatnonzero(observation["action_mask"]))))
    return record_from_env(env, players=["random"] * 4, source="test").to_dict()


@pytest.fixture(scope="module")
def record() -> dict[str, Any]:
    return played_record()


def replay_cli(path: Path, capsys: pytest.CaptureFixture[str], *options: str) -> tuple[int, str, str]:
    """``pedro-replay PATH OPTIONS`` in-process: (status, stdout, stderr)."""
    status = main([str(path), *options])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def assert_one_line_error(status: int, err: str, *words: str) -> None:
    assert status == 2, err
    assert err.endswith("\n") and err.count("\n") == 1, f"not one line: {err!r}"
    assert err.startswith("pedro-replay: error: ") and "Traceback" not in err
    for word in words:
        assert word in err, f"{word!r} missing from {err!r}"


def set_card(record: dict, text: Any) -> None:
    record["decks"][0][0] = text


# name -> (change to the record, words the error must contain)
BROKEN_RECORDS: dict[str, tuple[Any, tuple[str, ...]]] = {
    "bad card": (lambda r: set_card(r, "ZZ"), ("decks[0][0]", "unknown card 'ZZ'", "C D H S")),
    "card id out of range": (lambda r: set_card(r, 60), ("decks[0][0]", "60", "0..51")),
    "card as a float": (lambda r: set_card(r, 1.5), ("decks[0][0]", "1.5", "'AH'")),
    "51-card deck": (lambda r: r["decks"][0].pop(), ("decks[0]", "52 cards", "51")),
    "53-card deck": (lambda r: r["decks"][0].append("AH"), ("decks[0]", "52 cards", "53")),
    "duplicated card": (lambda r: set_card(r, r["decks"][0][1]), ("decks[0]", "exactly once", "2 times", "lacks")),
    "dealer True": (lambda r: r.update(dealer=True), ("dealer", "0..3", "True")),
    "dealer '1'": (lambda r: r.update(dealer="1"), ("dealer", "0..3", "'1'")),
    "dealer 10**30": (lambda r: r.update(dealer=10**30), ("dealer", "0..3", str(10**30))),
    "dealer -1": (lambda r: r.update(dealer=-1), ("dealer", "0..3", "-1")),
    "dealer null": (lambda r: r.update(dealer=None), ("dealer", "0..3")),
    "seed 'abc'": (lambda r: r.update(seed="abc"), ("seed", "2**64 - 1", "'abc'")),
    "seed 1.5": (lambda r: r.update(seed=1.5), ("seed", "2**64 - 1", "1.5")),
    "seed -1": (lambda r: r.update(seed=-1), ("seed", "2**64 - 1", "-1")),
    "seed 2**64": (lambda r: r.update(seed=2**64), ("seed", "2**64 - 1", str(2**64))),
    "seed True": (lambda r: r.update(seed=True), ("seed", "True")),
    "config a list": (lambda r: r.update(config=[1, 2]), ("config must be a dict",)),
    "config unknown key": (lambda r: r["config"].update(config=1), ("unknown config key 'config'", "num_players")),
    "config bad value": (lambda r: r["config"].update(num_players=7), ("num_players", "2, 3, 4")),
    "decks a dict": (lambda r: r.update(decks={"0": []}), ("decks must be a list",)),
    "deck a string": (lambda r: r["decks"].__setitem__(0, "AH KH"), ("decks[0] must be a list",)),
    "actions a dict": (lambda r: r.update(actions={"a": 1}), ("actions must be a list",)),
    "actions a string": (lambda r: r.update(actions="pass"), ("actions must be a list",)),
    "action an int": (lambda r: r["actions"].__setitem__(0, 5), ("actions[0] must be an action string",)),
    "unreadable action": (lambda r: r["actions"].__setitem__(0, "fold"), ("action 1 ('fold') does not replay",)),
    "players a dict": (lambda r: r.update(players={"0": "x"}), ("players must be a list of strings",)),
    "players too few": (lambda r: r.update(players=["x"]), ("players lists 1 names", "4 players")),
    "result a list": (lambda r: r.update(result=[1]), ("result must be a dict",)),
    "result without winner": (lambda r: r["result"].pop("winner"), ("result lacks winner",)),
    "result scores of strings": (lambda r: r["result"].update(scores=["a", "b"]), ("result's scores",)),
    "a result that differs": (lambda r: r["result"].update(deals=99), ("the replay ends with", "99 deals")),
    "version 3": (lambda r: r.update(version=3), ("replay version 3, this version reads 1 and 2",)),
    "thoughts not a list": (lambda r: r.update(thoughts="x"), ("thoughts must be",)),
    "thoughts too short": (lambda r: r.update(thoughts=[None]), ("thoughts must be a list of",)),
    "a thought without top": (
        lambda r: r.update(thoughts=[{"agent": "p"}] * len(r["actions"])),
        ("thoughts[0]'s top",),
    ),
    "a thought with NaN": (
        lambda r: r.update(thoughts=[{"agent": "p", "top": [["pass", float("nan")]]}] * len(r["actions"])),
        ("thoughts[0]'s top", "finite probabilities"),
    ),
    "version True": (lambda r: r.update(version=True), ("replay version True",)),
    "no format": (lambda r: r.pop("format"), ("not a pedro-rl replay record",)),
    **{
        f"no {key}": (lambda r, key=key: r.pop(key), ("the record lacks", key))
        for key in ("config", "dealer", "decks", "actions")
    },
}


@pytest.mark.parametrize("name", list(BROKEN_RECORDS))
def test_a_broken_record_is_one_line_and_status_2(
    name: str, record: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    change, words = BROKEN_RECORDS[name]
    broken = copy.deepcopy(record)
    change(broken)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    status, _, err = replay_cli(path, capsys, "--deals")
    assert_one_line_error(status, err, *words)
    with pytest.raises(ReplayError):  # the library raises the one documented error
        replay_match(MatchRecord.load(path))


@pytest.mark.parametrize(
    "name,content,words",
    [
        ("not-json.json", "{not json", ("not a JSON replay record", "line 1")),
        ("empty.json", "", ("is empty",)),
        ("blank.json", "  \n", ("is empty",)),
        ("latin1.json", b"\xff\xfe{", ("cannot read", "utf-8")),
        ("deep.json", "[" * 100_000, ("not a JSON replay record",)),
        ("huge-int.json", '{"format": "pedro-rl/replay", "version": ' + "9" * 5000 + "}", ("not a JSON",)),
        ("nan.json", "NaN", ("not a pedro-rl replay record",)),
        ("list.json", "[1, 2]", ("not a pedro-rl replay record",)),
    ],
)
def test_unreadable_files_are_one_line_errors(
    name: str, content: str | bytes, words: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    status, _, err = replay_cli(path, capsys)
    assert_one_line_error(status, err, name, *words)


def test_a_missing_file_and_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = replay_cli(tmp_path / "nope.json", capsys)
    assert_one_line_error(status, err, "replay file not found", "nope.json")
    status, _, err = replay_cli(tmp_path, capsys)
    assert_one_line_error(status, err, "is a directory")


def test_the_installed_command_ends_a_bad_record_in_one_line(record: dict, tmp_path: Path) -> None:
    """Through ``python -m`` as ``pedro-replay`` runs it: status 2 and no traceback (once a ValueError's)."""
    broken = copy.deepcopy(record)
    broken["decks"][0][0] = "ZZ"
    path = tmp_path / "bad-card.json"
    path.write_text(json.dumps(broken))
    done = run_module("arena.replay", str(path))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "unknown card 'ZZ'" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("result", ["missing", None, {}])
def test_a_record_without_a_result_does_not_claim_to_match(
    result: Any, record: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = copy.deepcopy(record)
    if result == "missing":
        del document["result"]
    else:
        document["result"] = result
    path = tmp_path / "no-result.json"
    path.write_text(json.dumps(document))
    status, out, err = replay_cli(path, capsys, "--deals")
    assert status == 0, err
    last = out.strip().splitlines()[-1]
    assert "matches the record" not in out
    assert last.startswith("result: ") and "the record holds no result to compare with" in last
    assert replay_match(MatchRecord.load(path)) == record["result"]


def test_a_record_with_its_result_says_it_matches(
    record: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "match.json"
    path.write_text(json.dumps(record))
    status, out, _ = replay_cli(path, capsys, "--deals")
    assert status == 0 and out.strip().splitlines()[-1].endswith("(matches the record)")


def test_control_characters_from_a_record_are_printed_escaped(
    record: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = copy.deepcopy(record)
    document["players"] = ["\x1b[31mred", "two\nlines", "bell\x07", "rtl\u202eevil"]
    document["source"] = "\x1b[2J"
    path = tmp_path / "names.json"
    path.write_text(json.dumps(document))
    status, out, err = replay_cli(path, capsys)
    assert status == 0, err
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "P0 \\x1b[31mred, P1 two\\nlines, P2 bell\\x07, P3 rtl\\u202eevil" in out
    # an escape in the file name is escaped too, and in the error a bad string value ends in
    document["players"][0] = 7
    path = tmp_path / "\x1b[31m.json"
    path.write_text(json.dumps(document))
    status, _, err = replay_cli(path, capsys)
    assert_one_line_error(status, err, "\\x1b[31m.json")
    assert "\x1b" not in err
    document["players"] = [1]
    document["config"]["variant"] = "\x1b[2J"
    path.write_text(json.dumps(document))
    status, _, err = replay_cli(path, capsys)
    assert_one_line_error(status, err, "variant")
    assert "\x1b" not in err


def test_printable_escapes_only_what_a_terminal_would_act_on() -> None:
    assert printable("P0 rule:heuristic é ♠") == "P0 rule:heuristic é ♠"
    assert printable("\x1b[2J\r\n\t\x00") == "\\x1b[2J\\r\\n\\t\\x00"


def test_deal_summaries_are_lines_of_words(record: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "match.json"
    path.write_text(json.dumps(record))
    status, out, _ = replay_cli(path, capsys, "--deals")
    assert status == 0
    lines = out.strip().splitlines()
    deal_lines = [line for line in lines if line.startswith("deal ")]
    assert len(deal_lines) == record["result"]["deals"] and "{" not in out and "'redeal'" not in out
    for number, line in enumerate(deal_lines, start=1):
        assert line.startswith(f"deal {number}: ")
        assert ("thrown in" in line) or (" bid " in line and ("made" in line or "set" in line))
        assert "scores team 0 " in line and "team 1 " in line
    scores = record["result"]["scores"]
    assert deal_lines[-1].endswith(f"scores team 0 {scores[0]}, team 1 {scores[1]}")
    assert lines[-1].startswith(f"result: scores team 0 {scores[0]}, team 1 {scores[1]}; winner ")
    # the full replay prints each action in its canonical form and the same summaries
    status, full, _ = replay_cli(path, capsys)
    assert status == 0 and [line for line in full.splitlines() if line.startswith("deal ")] == deal_lines
    assert f"-- P{(record['dealer'] + 1) % 4} " in full
