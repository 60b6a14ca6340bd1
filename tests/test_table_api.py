"""pedro-table's HTTP API (docs/table.md) through FastAPI's test client: play, watch, analyse, and every refusal."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the web extra (pip install -e '.[web]') is not installed")
from fastapi.testclient import TestClient  # noqa: E402

from arena.replay import MatchRecord, replay_match  # noqa: E402
from table.app import RULE_KEYS, create_app  # noqa: E402
from table.sessions import SessionStore, TableError  # noqa: E402

SHORT = {"target_score": 5}


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app())


def new_match(client: TestClient, **body) -> dict:
    body = {"seat": 0, "opponents": "rule:heuristic", "seed": 5, "rules": SHORT, **body}
    if body["rules"].get("num_players", 4) == 4:  # a partner sits opposite at four players only
        body = {"partner": "rule:heuristic", **body}
    answer = client.post("/api/matches", json=body)
    assert answer.status_code == 201, answer.text
    return answer.json()


def play_out(client: TestClient, match: dict, choose=lambda legal: legal[0]) -> dict:
    """Play ``match`` to its end: the person's moves by ``choose``, the agents' by advance."""
    for _ in range(5000):
        if match["status"] == "over":
            return match
        if match["status"] == "agent_turn":
            answer = client.post(f"/api/matches/{match['id']}/advance")
        else:
            answer = client.post(f"/api/matches/{match['id']}/move", json={"action": choose(match["view"]["legal"])})
        assert answer.status_code == 200, answer.text
        match = answer.json()
    raise AssertionError("the match did not end")


def test_options_list_the_agents_by_name_and_every_rule_switch(client: TestClient) -> None:
    options = client.get("/api/options").json()
    names = [agent["name"] for agent in options["agents"]]
    for name in ("random", "rule:heuristic", "rule:cautious", "search:pimc", "search:full", "pretrained"):
        assert name in names
    assert not any("/" in name or name.startswith("ckpt") for name in names)
    assert [rule["key"] for rule in options["rules"]] == list(RULE_KEYS)
    variant = next(rule for rule in options["rules"] if rule["key"] == "variant")
    assert variant["choices"] == ["cinch", "sancho", "dom", "pitch"] and variant["default"] == "cinch"
    assert options["limits"]["max_sessions"] == 64


def test_each_answer_brings_the_decisions_the_page_lacks(client: TestClient) -> None:
    match = new_match(client, partner="pretrained", seed=17)
    held = list(match["decisions"])
    while match["status"] != "over":
        change = "advance" if match["status"] == "agent_turn" else "move"
        body = {"action": match["view"]["legal"][0]} if change == "move" else None
        match = client.post(f"/api/matches/{match['id']}/{change}", params={"since": len(held)}, json=body).json()
        if match["status"] != "over":
            assert match["decisions_from"] == len(held) and len(match["decisions"]) == 1
            held += match["decisions"]
    assert match["decisions_from"] == 0 and len(match["decisions"]) == len(held) + 1  # all, the thoughts revealed
    assert [d["action"] for d in match["decisions"][:-1]] == [d["action"] for d in held]
    assert any(d["thoughts"] for d in match["decisions"]) and not any(d["thoughts"] for d in held)


def test_a_whole_match_is_played_recorded_and_replays_to_its_result(client: TestClient) -> None:
    match = new_match(client, partner="pretrained")
    view = match["view"]
    assert match["status"] == "your_turn" or match["status"] == "agent_turn"
    assert view["hands"][0] is not None and view["hands"][1:] == [None, None, None]
    assert view["hand_sizes"] == [9, 9, 9, 9]
    match = play_out(client, match)
    assert match["result"]["winner"] in (0, 1) and max(match["result"]["scores"]) >= 5
    assert match["view"]["over"] and all(hand is not None for hand in match["view"]["hands"])
    assert match["view"]["deals"] and match["view"]["deals"][0]["number"] == 1
    document = client.get(f"/api/matches/{match['id']}/record")
    assert "attachment" in document.headers["content-disposition"]
    record = MatchRecord.from_dict(document.json())
    assert record.players == ["you", "rule:heuristic", "pretrained", "rule:heuristic"]
    assert replay_match(record) == match["result"]
    # the partner is a policy: its probabilities and value were recorded at each of its moves, and only its
    assert all((entry is not None) == (seat == 2) for entry, seat in zip(record.thoughts, _seats(match)))
    first = next(entry for entry in record.thoughts if entry is not None)
    assert first["agent"] == "pretrained" and 0 < first["top"][0][1] <= 1 and isinstance(first["value"], float)


def _seats(match: dict) -> list[int]:
    return [decision["seat"] for decision in match["decisions"]]


def test_while_a_match_runs_the_person_sees_only_what_their_seat_may_see(client: TestClient) -> None:
    match = new_match(client, partner="pretrained", opponents="pretrained", seed=11)
    for _ in range(12):  # a few moves in
        if match["status"] == "agent_turn":
            match = client.post(f"/api/matches/{match['id']}/advance").json()
        else:
            match = client.post(f"/api/matches/{match['id']}/move", json={"action": match["view"]["legal"][-1]}).json()
    assert match["status"] != "over"
    assert [hand is None for hand in match["view"]["hands"]] == [False, True, True, True]
    assert match["view"]["stock"] is None
    assert all(decision["thoughts"] is None for decision in match["decisions"])
    other = next(decision for decision in match["decisions"] if decision["seat"] != 0)
    answer = client.get(f"/api/matches/{match['id']}/analysis", params={"decision": other["index"]})
    assert answer.status_code == 403 and "only your own decisions" in answer.json()["error"]
    mine = next(decision for decision in match["decisions"] if decision["seat"] == 0)
    answer = client.get(f"/api/matches/{match['id']}/analysis", params={"decision": mine["index"]})
    assert answer.status_code == 200 and answer.json()["policy"]["agent"] == "pretrained"


def test_an_illegal_move_is_refused_with_the_legal_moves_and_changes_nothing(client: TestClient) -> None:
    match = new_match(client, seed=21)
    while match["status"] == "agent_turn":
        match = client.post(f"/api/matches/{match['id']}/advance").json()
    before = client.get(f"/api/matches/{match['id']}").json()
    for body, status, words in [
        ({"action": "play AS"}, 422, "is not legal now; legal: "),
        ({"action": "fold"}, 422, "cannot read the move 'fold'"),
        ({"action": 7}, 422, "a move is an action string"),
        ({"action": "pass", "extra": 1}, 422, 'a move is {"action": "bid 7"}'),
        ({}, 422, 'a move is {"action": "bid 7"}'),
    ]:
        answer = client.post(f"/api/matches/{match['id']}/move", json=body)
        assert answer.status_code == status and words in answer.json()["error"], answer.text
        assert "\n" not in answer.json()["error"]
    assert (
        client.post(f"/api/matches/{match['id']}/move", json={"action": "play AS"}).json()["legal"]
        == (before["view"]["legal"])
    )
    assert client.post(f"/api/matches/{match['id']}/advance").status_code == 409
    assert client.get(f"/api/matches/{match['id']}").json() == before


def test_out_of_turn_over_and_unknown_matches_are_refused(client: TestClient) -> None:
    match = new_match(client, seat=1, seed=3)  # seat 1 speaks after seat 0 at the first deal unless it deals
    while match["status"] == "your_turn":
        match = client.post(f"/api/matches/{match['id']}/move", json={"action": match["view"]["legal"][0]}).json()
    answer = client.post(f"/api/matches/{match['id']}/move", json={"action": "pass"})
    assert answer.status_code == 409 and "not your turn" in answer.json()["error"]
    resigned = client.post(f"/api/matches/{match['id']}/resign").json()
    assert resigned["status"] == "over" and resigned["resigned"]
    assert resigned["view"]["phase"] == "over" and resigned["view"]["actor"] is None and resigned["view"]["over"]
    for path in ("move", "advance", "resign"):
        answer = client.post(f"/api/matches/{match['id']}/{path}", json={"action": "pass"})
        assert answer.status_code == 409 and "over" in answer.json()["error"]
    assert MatchRecord.from_dict(client.get(f"/api/matches/{match['id']}/record").json()).result["winner"] is None
    answer = client.get("/api/matches/nosuchmatch")
    assert answer.status_code == 404 and "no match 'nosuchmatch' here" in answer.json()["error"]


@pytest.mark.parametrize(
    "body, words",
    [
        ({"partner": "ckpt:/etc/passwd"}, "unknown agent 'ckpt:/etc/passwd': allowed are random, rule:heuristic"),
        ({"opponents": ["rule:heuristic"]}, "opponents must be one agent name or a list of 2"),
        ({"opponents": 5}, "opponents must be one agent name or a list of 2"),
        ({"rules": {"colour": "red"}}, "unknown rule key 'colour'"),
        ({"rules": {"reward": "win"}}, "unknown rule key 'reward'"),
        ({"rules": {"variant": "skat"}}, "'variant' = 'skat' is not allowed: allowed values are cinch, sancho"),
        ({"rules": {"target_score": 100000}}, "over the table's limit of 500"),
        ({"rules": []}, "rules must be an object"),
        ({"seat": 4}, "seat must be a seat 0..3"),
        ({"seat": True}, "seat must be a seat 0..3"),
        ({"seed": -1}, "seed must be null or an int from 0 to 2**62"),
        ({"seed": "x"}, "seed must be null or an int"),
        ({"colour": 1}, "unknown key 'colour': a new match takes seat, partner, opponents, rules, seed"),
    ],
)
def test_a_bad_new_match_gets_one_line_naming_the_problem(client: TestClient, body: dict, words: str) -> None:
    answer = client.post("/api/matches", json={"seed": 1, **body})
    assert answer.status_code == 422 and words in answer.json()["error"], answer.text
    assert "\n" not in answer.json()["error"]


def test_malformed_requests_get_a_4xx_with_one_line(client: TestClient) -> None:
    assert (
        client.post("/api/matches", content=b"{not json", headers={"content-type": "application/json"}).status_code
        == 422
    )
    answer = client.get("/api/matches/x/analysis", params={"decision": "abc"})
    assert answer.status_code == 422 and "decision" in answer.json()["error"]
    assert client.get("/nothing/here").json() == {"error": "no such page"}
    assert client.get("/api/../../etc/passwd").status_code == 404


def test_the_rules_of_a_new_match_are_every_section_9_switch(client: TestClient) -> None:
    rules = {
        "num_players": 3,
        "scoring": "simple",
        "variant": "sancho",
        "six_card": True,
        "all_pass": "redeal",
        "target_score": 3,
    }
    match = new_match(client, rules=rules, opponents=["random", "rule:cautious"])
    assert match["players"] == ["you", "random", "rule:cautious"] and match["view"]["hand_sizes"] == [6, 6, 6]
    # three players score simple only: a client that leaves scoring out gets that, one that asks otherwise is told
    answer = client.post("/api/matches", json={"rules": {"num_players": 3, "scoring": "difference"}})
    assert answer.status_code == 422 and "three-player Pedro allows only 'simple'" in answer.json()["error"]
    match = play_out(client, match, choose=lambda legal: legal[-1])
    assert match["status"] == "over"


def test_a_policy_trained_under_other_rules_comes_with_a_note_and_one_that_cannot_read_them_is_refused(
    sized_client: TestClient,
) -> None:
    """A checkpoint trained under the default rules plays six-card games with the note pedro-eval and pedro-play
    print (once, though it sits at two seats); pretrained and search:policy, trained under every rule set (its
    model there), and the rule agents have none; a variant a policy's layout cannot read is one line, 422."""
    rules = {"six_card": True, "target_score": 5}
    match = new_match(sized_client, partner="search:policy", opponents="models:four.pt", rules=rules)
    how = "was trained under other rules: target_score 62 (here 5), six_card False (here True); it plays these as it"
    assert match["notes"] == [f"models:four.pt {how} learned its own"]
    assert sized_client.get(f"/api/matches/{match['id']}").json()["notes"] == match["notes"]
    assert new_match(sized_client, partner="pretrained", rules={"six_card": True, "variant": "sancho"})["notes"] == []
    answer = sized_client.post("/api/matches", json={"partner": "models:four.pt", "rules": {"variant": "sancho"}})
    assert answer.status_code == 422
    error = answer.json()["error"]
    assert error.startswith("agent models:four.pt cannot play:") and "reads another observation layout" in error
    assert "\n" not in error and "/" not in error.split("cannot play:")[1].split("(")[0]


def test_replays_open_with_frames_decisions_and_deal_starts(client: TestClient) -> None:
    match = play_out(client, new_match(client, seed=8, partner="pretrained"))
    document = client.get(f"/api/matches/{match['id']}/record").json()
    replay = client.post("/api/replays", json=document)
    assert replay.status_code == 201, replay.text
    replay = replay.json()
    actions = len(document["actions"])
    assert len(replay["frames"]) == actions + 1 and len(replay["decisions"]) == actions
    assert replay["deal_starts"][0] == 0 and len(replay["deal_starts"]) == replay["result"]["deals"]
    assert all(hand is not None for hand in replay["frames"][0]["hands"])
    assert [d["action"] for d in replay["decisions"]] == document["actions"]
    assert replay["decisions"][0]["thoughts"] == document["thoughts"][0]
    policy_move = next(d for d in replay["decisions"] if d["seat"] == 2 and d["trick"] >= 0)
    analysis = client.get(
        f"/api/replays/{replay['id']}/analysis", params={"decision": policy_move["index"], "search": True}
    ).json()
    assert analysis["policy"]["recorded"] and analysis["policy"]["agent"] == "pretrained"
    if analysis["search"] is not None:  # a single legal card has no values
        actions_valued = [action for action, _ in analysis["search"]["values"]]
        assert analysis["search"]["agent"] == "search:pimc" and analysis["chosen"] in actions_valued
        assert analysis["search"]["loss"] >= 0 and analysis["search"]["best"] == actions_valued[0]
    # a version-1 record (no thoughts) opens too, and the policy's view is computed on request
    old = {key: value for key, value in document.items() if key != "thoughts"} | {"version": 1}
    reopened = client.post("/api/replays", json=old).json()
    assert all(decision["thoughts"] is None for decision in reopened["decisions"])
    computed = client.get(f"/api/replays/{reopened['id']}/analysis", params={"decision": policy_move["index"]}).json()
    assert not computed["policy"]["recorded"]
    assert computed["policy"]["top"] == analysis["policy"]["top"]


def test_the_search_values_bids_and_marks_mistakes(client: TestClient) -> None:
    match = play_out(client, new_match(client, seed=4, rules={"target_score": 1}), choose=lambda legal: legal[-1])
    document = client.get(f"/api/matches/{match['id']}/record").json()
    replay = client.post("/api/replays", json=document).json()
    bid = next(d for d in replay["decisions"] if d["seat"] == 0 and d["trick"] < 0)
    analysis = client.get(f"/api/replays/{replay['id']}/analysis", params={"decision": bid["index"], "search": 1})
    search = analysis.json()["search"]
    assert search["agent"] == "search:full" and bid["action"] in [action for action, _ in search["values"]]
    scanned = client.post(f"/api/replays/{replay['id']}/scan").json()
    assert scanned["scanned"] > 0
    assert all(mark["loss"] >= 1.0 and mark["action"] != mark["best"] for mark in scanned["marks"])
    # always bidding the most, always discarding the last card: the person's bid of 14 is a mistake
    assert any(mark["seat"] == 0 for mark in scanned["marks"])


def test_a_bad_upload_is_refused_with_one_line(tmp_path: Path) -> None:
    small = TestClient(create_app(max_upload_bytes=2000, max_record_actions=10))
    assert small.post("/api/replays", content=b"x" * 3000).status_code == 413
    for content, words in [
        (b"{", "the upload is not a JSON replay record"),
        (b"[1, 2]", "not a record this table opens: not a pedro-rl replay record"),
        (json.dumps({"format": "pedro-rl/replay", "version": 9}).encode(), "replay version 9"),
    ]:
        answer = small.post("/api/replays", content=content)
        assert answer.status_code == 422 and words in answer.json()["error"], answer.text
    client = TestClient(create_app(max_record_actions=10))
    match = play_out(client, new_match(client, seed=2))
    document = client.get(f"/api/matches/{match['id']}/record").json()
    assert "up to 10" in client.post("/api/replays", json=document).json()["error"]
    document["result"]["deals"] = 99
    answer = TestClient(create_app()).post("/api/replays", json=document)
    assert answer.status_code == 422 and "the replay ends with" in answer.json()["error"]


def test_sessions_are_capped_and_expire() -> None:
    client = TestClient(create_app(max_sessions=2))
    first = new_match(client)
    new_match(client)
    answer = client.post("/api/matches", json={"seed": 1})
    assert answer.status_code == 503 and "holds 2 matches already (its cap)" in answer.json()["error"]
    assert client.get(f"/api/matches/{first['id']}").status_code == 200
    now = [0.0]
    store = SessionStore("replay", cap=1, idle_seconds=10, clock=lambda: now[0])
    session = type("S", (), {"id": "a", "last_used": 0.0})()
    store.add(session)
    now[0] = 11.0
    with pytest.raises(TableError, match="expired after 10 s unused"):
        store.get("a")
    store.add(type("S", (), {"id": "b", "last_used": 0.0})())  # the idle one made room
    assert len(store) == 1


def test_one_match_takes_one_request_at_a_time(client: TestClient) -> None:
    match = new_match(client, opponents="search:full", seat=0, seed=9)
    session = client.app.state.matches.get(match["id"])
    with session.lock:
        answer = client.post(f"/api/matches/{match['id']}/advance")
    assert answer.status_code == 409 and "busy" in answer.json()["error"]


def test_checkpoints_under_models_join_by_name_and_a_bad_one_is_one_line(tmp_path: Path) -> None:
    from agents import PPO_POLICY_PATH

    (tmp_path / "run1").mkdir()
    (tmp_path / "run1" / "latest.pt").write_bytes(PPO_POLICY_PATH.read_bytes())
    (tmp_path / "broken.pt").write_bytes(b"not a checkpoint")
    client = TestClient(create_app(models_dir=tmp_path))
    names = [agent["name"] for agent in client.get("/api/options").json()["agents"]]
    assert "models:run1/latest.pt" in names and "models:broken.pt" in names
    match = new_match(client, partner="models:run1/latest.pt")
    assert match["players"][2] == "models:run1/latest.pt"
    answer = client.post("/api/matches", json={"partner": "models:broken.pt"})
    assert answer.status_code == 422 and "agent models:broken.pt cannot play" in answer.json()["error"]
    assert str(tmp_path) not in answer.json()["error"]


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A --models folder: a policy of three players, a copy of the PPO policy (four players, the default rules), and
    a file that is no checkpoint."""
    from test_play import table_rules, write_policy_checkpoint

    from agents import PPO_POLICY_PATH

    folder = tmp_path_factory.mktemp("models")
    write_policy_checkpoint(folder / "three" / "latest.pt", table_rules(3))
    (folder / "four.pt").write_bytes(PPO_POLICY_PATH.read_bytes())
    (folder / "broken.pt").write_bytes(b"not a checkpoint")
    return folder


@pytest.fixture(scope="module")
def sized_client(models_dir: Path) -> TestClient:
    return TestClient(create_app(models_dir=models_dir))


def shipped_sizes(paths_by_size: dict[int, tuple[Path, ...]]) -> list[int]:
    """The table sizes whose files all exist, given the files each size needs."""
    return [size for size in (2, 3, 4) if all(path.is_file() for path in paths_by_size[size])]


def test_the_roster_says_which_table_sizes_each_agent_plays(sized_client: TestClient, models_dir: Path) -> None:
    from agents import PPO_POLICY_PATH, PRETRAINED_PATH

    agents = {agent["name"]: agent for agent in sized_client.get("/api/options").json()["agents"]}
    for name in ("random", "rule:heuristic", "rule:cautious", "search:pimc", "search:full"):
        assert agents[name]["players"] == [2, 3, 4] and agents[name]["unfit"] == ""
    assert agents["pretrained"]["players"] == shipped_sizes({size: (PRETRAINED_PATH,) for size in (2, 3, 4)})
    search_models = {2: (PRETRAINED_PATH,), 3: (PRETRAINED_PATH,), 4: (PRETRAINED_PATH, PPO_POLICY_PATH)}
    assert agents.get("search:policy", {"players": []})["players"] == shipped_sizes(search_models)
    assert agents["models:three/latest.pt"]["players"] == [3]
    assert agents["models:three/latest.pt"]["unfit"] == "it was trained for 3 players"
    assert agents["models:four.pt"]["players"] == [4]
    assert agents["models:broken.pt"]["players"] == [] and "models:broken.pt" in agents["models:broken.pt"]["unfit"]
    assert str(models_dir) not in json.dumps(agents)


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_a_match_seats_only_agents_that_play_its_table_size(sized_client: TestClient, num_players: int) -> None:
    """Every agent on the roster at every seat it could take: a table size it plays starts a match, any other is
    refused with one line naming the roster entry, its reason and the agents that fit."""
    rules = {"num_players": num_players, "target_score": 5}
    for agent in sized_client.get("/api/options").json()["agents"]:
        body = {"opponents": agent["name"], "rules": rules, "seed": 1}
        if num_players == 4:
            body["partner"] = agent["name"]
        answer = sized_client.post("/api/matches", json=body)
        if num_players in agent["players"]:
            assert answer.status_code == 201, answer.text
            assert answer.json()["players"] == ["you", *[agent["name"]] * (num_players - 1)]
            sized_client.post(f"/api/matches/{answer.json()['id']}/resign")
            continue
        error = answer.json()["error"]
        assert answer.status_code == 422 and "\n" not in error and "/tmp" not in error, answer.text
        if agent["players"]:
            assert error.startswith(f"agent {agent['name']} does not play {num_players} players ({agent['unfit']}): ")
            assert f"{num_players} players take random, rule:heuristic" in error
        else:
            assert error.startswith(f"agent {agent['name']} cannot play: ")


@pytest.mark.parametrize("num_players", [2, 3])
def test_everyone_plays_alone_at_two_and_three_players(sized_client: TestClient, num_players: int) -> None:
    rules = {"num_players": num_players, "target_score": 5}
    answer = sized_client.post("/api/matches", json={"partner": "random", "rules": rules})
    assert answer.status_code == 422 and f"at {num_players} players everyone plays alone" in answer.json()["error"]
    answer = sized_client.post("/api/matches", json={"opponents": ["random"] * num_players, "rules": rules})
    assert answer.status_code == 422
    assert f"opponents must be one agent name or a list of {num_players - 1}" in answer.json()["error"]


def test_a_policy_of_three_players_plays_and_is_asked_at_a_table_of_three(sized_client: TestClient) -> None:
    """The policy's thoughts are recorded at its moves; the analysis asks the first policy that plays the table size
    (pretrained, the shipped policy of three players), any other that plays it on request, and refuses by name one
    of another table size."""
    opponents = ["models:three/latest.pt", "rule:cautious"]
    match = new_match(sized_client, rules={"num_players": 3, "target_score": 5}, opponents=opponents, seed=3)
    assert match["players"] == ["you", *opponents] and match["view"]["scores"] == [0, 0, 0]
    played = play_out(sized_client, match)
    record = MatchRecord.from_dict(sized_client.get(f"/api/matches/{match['id']}/record").json())
    assert replay_match(record) == played["result"]
    assert all((thought is not None) == (seat == 1) for thought, seat in zip(record.thoughts, _seats(played)))
    mine = next(decision["index"] for decision in played["decisions"] if decision["seat"] == 0)
    analysis = sized_client.get(f"/api/matches/{match['id']}/analysis", params={"decision": mine}).json()
    assert analysis["policy"]["agent"] == "pretrained" and not analysis["policy"]["recorded"]
    params = {"decision": mine, "policy": "models:three/latest.pt"}
    analysis = sized_client.get(f"/api/matches/{match['id']}/analysis", params=params).json()
    assert analysis["policy"]["agent"] == "models:three/latest.pt" and not analysis["policy"]["recorded"]
    params = {"decision": mine, "policy": "models:four.pt"}
    answer = sized_client.get(f"/api/matches/{match['id']}/analysis", params=params)
    assert answer.status_code == 422
    assert answer.json()["error"] == (
        "unknown policy 'models:four.pt' for 3 players: allowed are pretrained, models:three/latest.pt"
    )


def test_the_page_is_served_from_the_package(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and "<html" in page.text.lower()
    assert "http://" not in page.text and "https://" not in page.text  # nothing from the network


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_command_binds_loopback_prints_the_address_and_refuses_bad_arguments(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "table.cli"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        assert line.startswith("pedro-table: open http://127.0.0.1:") and line.rstrip().endswith("(Ctrl-C stops)")
        port = int(line.split(":")[3].split("/")[0])
        busy = subprocess.run([*command, "--port", str(port)], capture_output=True, text=True, timeout=60)
        assert busy.returncode == 2 and "cannot listen on 127.0.0.1" in busy.stderr
    finally:
        server.terminate()
        server.wait(timeout=20)
    missing = subprocess.run([*command, "--models", str(tmp_path / "none")], capture_output=True, text=True)
    assert missing.returncode == 2 and "not a folder" in missing.stderr
    port = _free_port()
    wide = subprocess.Popen(
        [*command, "--host", "0.0.0.0", "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert f"http://0.0.0.0:{port}/" in wide.stdout.readline()
        time.sleep(0.2)
    finally:
        wide.terminate()
        _, stderr = wide.communicate(timeout=20)
    assert "warning: listening on 0.0.0.0, reachable from other machines" in stderr


def test_records_of_pedro_eval_open_and_the_halves_of_a_pair_share_a_key(client: TestClient, tmp_path: Path) -> None:
    from arena.eval_cli import main as pedro_eval

    code = pedro_eval(
        ["rule:heuristic", "random", "--pairs", "2", "--seed", "3", "--set", "target_score=5"]
        + ["--save-replays", str(tmp_path / "replays"), "--out", str(tmp_path / "out")]
    )
    assert code == 0
    keys = {}
    for path in sorted((tmp_path / "replays").glob("*.json")):
        answer = client.post("/api/replays", content=path.read_bytes())
        assert answer.status_code == 201, answer.text
        keys[path.name] = answer.json()["pair_key"]
    pairs = {name.split("-rot")[0] for name in keys}
    assert len(keys) == 4 and len(pairs) == 2
    for pair in pairs:
        halves = [key for name, key in keys.items() if name.startswith(pair + "-rot")]
        assert len(halves) == 2 and halves[0] == halves[1]
    assert len(set(keys.values())) == 2


def test_the_tables_record_is_read_by_pedro_replay(client: TestClient, tmp_path: Path) -> None:
    from arena.replay import main as pedro_replay

    match = play_out(client, new_match(client, seed=6, partner="pretrained"))
    path = tmp_path / "table.json"
    path.write_bytes(client.get(f"/api/matches/{match['id']}/record").content)
    assert pedro_replay([str(path), "--deals"]) == 0


def test_the_load_test_plays_whole_matches_and_prints_its_figures() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.table_load", "--clients", "3", "--policy-every", "3", "--target", "3"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    first, *rest = done.stdout.splitlines()
    assert first.startswith("4 clients at once (3 against rule agents or pretrained, 1 against search:full)")
    assert ", 0 failed requests" in first
    assert any(line.startswith("  against pretrained:") and "p95" in line for line in rest)
    assert any(line.startswith("  rule agents and pretrained together, on the server: p50") for line in rest)


def test_a_pedro_play_record_opens_in_the_viewer(client: TestClient) -> None:
    from test_play import first_legal_move

    from arena.play import build_seats, play_interactive_match
    from pedro_env.config import make_config

    config = make_config(target_score=5)
    transcript: list[str] = []
    seats = build_seats(config, 0, "pretrained", "rule:heuristic")
    record = play_interactive_match(seats, config, 4, lambda prompt: first_legal_move(transcript), transcript.append)
    replay = client.post("/api/replays", json=record.to_dict())
    assert replay.status_code == 201, replay.text
    opened = replay.json()
    assert [d["action"] for d in opened["decisions"]] == record.actions and opened["source"] == "pedro-play"
    assert any(d["thoughts"] for d in opened["decisions"])  # the partner's thoughts, recorded by pedro-play
