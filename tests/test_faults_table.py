"""The table's part of the fault suite (issue 56): what a client names is bounded before the work, heavy work stays off
the event loop, every refusal is a 4xx with one line naming what the client sent (never a server path), only finite
numbers go in or out, slow clients are cut off, and ``pedro-table``'s usage errors are one line with status 2."""

from __future__ import annotations

import json
import re
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the web extra (pip install -e '.[web]') is not installed")
from fastapi.testclient import TestClient  # noqa: E402

from arena.replay import MatchRecord, record_from_env  # noqa: E402
from pedro_env.aec import raw_env  # noqa: E402
from pedro_env.config import make_config  # noqa: E402
from table import app as table_app  # noqa: E402
from table.app import create_app  # noqa: E402
from table.cli import main as pedro_table  # noqa: E402
from table.cli import server_config  # noqa: E402
from table.roster import Roster, find_models  # noqa: E402
from table.sessions import ReplaySession, TableError  # noqa: E402

SERVER_PATH = re.compile(r"(^|[\s'\"(])/\w")  # an absolute path in a message


def played_record(seed: int = 1, **rules: Any) -> dict[str, Any]:
    """The record of a match under ``rules`` (JSON form), everyone taking the first legal move (random moves play
    to the deal limit: thousands of actions)."""
    env = raw_env(config=make_config(**rules))
    env.reset(seed=seed)
    while not (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
        env.step(int(env.legal_actions()[0]))
    return record_from_env(env, [], "test").to_dict()


@pytest.fixture(scope="module")
def record() -> dict[str, Any]:
    return played_record(target_score=5)


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app())


def one_line_error(answer: Any, status: int) -> str:
    """The answer's error, checked: the status, one line, no server path."""
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert "\n" not in error and not SERVER_PATH.search(error), error
    return error


# ---------------------------------------------------------------- item 4: bounded uploads, off the event loop


def test_a_replay_is_built_off_the_event_loop_while_other_requests_go_on(
    record: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replay's build is held until /api/options has answered: on the event loop it would hold that too."""
    entered, release = threading.Event(), threading.Event()
    build = ReplaySession.to_json

    def held_build(session: ReplaySession) -> dict[str, Any]:
        entered.set()
        release.wait(10)
        return build(session)

    monkeypatch.setattr(ReplaySession, "to_json", held_build)
    with TestClient(create_app()) as client:
        answers: list[Any] = []
        upload = threading.Thread(target=lambda: answers.append(client.post("/api/replays", json=record)))
        upload.start()
        try:
            assert entered.wait(10), "the upload did not reach its build"
            start = time.monotonic()
            assert client.get("/api/options").status_code == 200
            assert time.monotonic() - start < 2 and upload.is_alive()
        finally:
            release.set()
            upload.join(20)
    assert answers[0].status_code == 201, answers[0].text


def test_a_record_past_the_action_count_is_refused_before_it_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    def not_read(cls: type, document: Any) -> None:
        raise AssertionError("the record was read before its actions were counted")

    monkeypatch.setattr(MatchRecord, "from_dict", classmethod(not_read))
    document = {"format": "pedro-rl/replay", "version": 2, "actions": ["pass"] * 6001}
    start = time.monotonic()
    error = one_line_error(TestClient(create_app()).post("/api/replays", json=document), 413)
    assert error == "the record holds 6001 actions; the table opens up to 6000" and time.monotonic() - start < 2


def test_the_replay_answer_grows_with_the_actions_not_with_actions_times_deals() -> None:
    """Every frame carried every deal summary before it (48.7 MB for 6,000 actions); now the summaries come once."""
    document = played_record(seed=3, target_score=62)
    answer = TestClient(create_app()).post("/api/replays", json=document)
    assert answer.status_code == 201, answer.text
    replay = answer.json()
    frames, deals = replay["frames"], replay["deals"]
    assert len(deals) == replay["result"]["deals"] >= 10 and deals[0]["number"] == 1
    assert [frame["deals_done"] for frame in (frames[0], frames[-1])] == [0, len(deals)]
    assert all("deals" not in frame for frame in frames)
    assert len(answer.content) < 1200 * len(frames)


def test_a_full_table_refuses_before_it_builds_agents_or_reads_an_upload(
    record: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    client = TestClient(create_app(max_sessions=1, max_upload_bytes=5000))
    assert client.post("/api/matches", json={"seed": 1}).status_code == 201
    assert client.post("/api/replays", json=record).status_code == 201
    built: list[str] = []
    monkeypatch.setattr(Roster, "build", lambda self, name, config: built.append(name))
    monkeypatch.setattr(table_app, "_replay_from", lambda body, limit: built.append("replay"), raising=False)
    assert "holds 1 matches already" in one_line_error(client.post("/api/matches", json={"seed": 2}), 503)
    assert "holds 1 replays already" in one_line_error(client.post("/api/replays", json=record), 503)
    # a body past the size limit: the store is asked first, so the answer is the 503, not the 413 of reading it
    assert client.post("/api/replays", content=b"x" * 6000).status_code == 503
    assert built == []


# ---------------------------------------------------------------- item 5: finite numbers only


@pytest.mark.parametrize(
    "change, where",
    [
        (lambda document: document["thoughts"].__setitem__(0, {"agent": "x", "top": [["bid 7", "NaN"]]}), "[0]"),
        (lambda document: document["thoughts"].__setitem__(1, {"agent": "x", "top": [], "value": "Infinity"}), ""),
        (lambda document: document["result"].__setitem__("deals", "1e400"), ""),
    ],
)
def test_a_number_that_is_not_finite_is_refused_naming_its_key(
    client: TestClient, record: dict[str, Any], change: Any, where: str
) -> None:
    document = json.loads(json.dumps(record))
    document["thoughts"] = [None] * len(document["actions"])
    change(document)
    text = re.sub(r'"(NaN|Infinity|1e400)"', r"\1", json.dumps(document))  # the bare literals JSON's parser reads
    error = one_line_error(client.post("/api/replays", content=text.encode()), 422)
    assert re.match(r"^(thoughts\[\d\]\.(top\[0\]\[1\]|value)|result\.deals): not a finite number", error), error


def test_a_new_match_or_a_move_with_a_number_past_a_float_names_the_key(client: TestClient) -> None:
    for body in (b'{"seat": 1e400}', b'{"seat": NaN}'):
        answer = client.post("/api/matches", content=body)  # sent as text/plain, as curl -d does
        assert one_line_error(answer, 422).startswith("seat: not a finite number")
    rules = client.post("/api/matches", content=b'{"rules": {"target_score": -Infinity}}')
    assert one_line_error(rules, 422).startswith("rules.target_score: not a finite number")
    match = client.post("/api/matches", json={"seed": 1}).json()
    move = client.post(f"/api/matches/{match['id']}/move", content=b'{"action": NaN}')
    assert one_line_error(move, 422).startswith("action: not a finite number")


def test_no_answer_holds_nan() -> None:
    with pytest.raises(TableError, match="not finite") as refused:
        table_app.json_bytes({"policy": {"value": float("nan")}})
    assert refused.value.status == 500
    assert table_app.json_bytes({"value": 0.5}) == b'{"value":0.5}'


# ---------------------------------------------------------------- item 6: 4xx with one line, not 500


@pytest.mark.parametrize("action", ["play ZZ", "pass\u0000"])
def test_an_upload_holding_no_action_is_a_422(client: TestClient, record: dict[str, Any], action: str) -> None:
    document = {**record, "actions": [*record["actions"][:3], action, *record["actions"][4:]], "thoughts": []}
    error = one_line_error(client.post("/api/replays", json=document), 422)
    assert error.startswith("the record does not replay: action 4 (") and "does not replay" in error


def test_a_models_file_that_no_longer_loads_is_a_422_in_the_analysis(tmp_path: Path, record: dict[str, Any]) -> None:
    from agents import PPO_POLICY_PATH

    shutil.copyfile(PPO_POLICY_PATH, tmp_path / "gone.pt")
    client = TestClient(create_app(models_dir=tmp_path))
    (tmp_path / "gone.pt").write_bytes(b"overwritten while the table runs")
    match = client.post("/api/matches", json={"seed": 1}).json()
    if match["status"] == "agent_turn":
        client.post(f"/api/matches/{match['id']}/advance")
    else:
        client.post(f"/api/matches/{match['id']}/move", json={"action": match["view"]["legal"][0]})
    client.post(f"/api/matches/{match['id']}/resign")
    replay = client.post("/api/replays", json=record).json()
    params = {"decision": 0, "policy": "models:gone.pt"}
    for path in (f"/api/matches/{match['id']}/analysis", f"/api/replays/{replay['id']}/analysis"):
        error = one_line_error(client.get(path, params=params), 422)
        assert error.startswith("agent models:gone.pt cannot play: ") and str(tmp_path) not in error


def test_a_policy_under_rules_it_cannot_read_is_named_not_its_path(tmp_path: Path) -> None:
    """A --models policy whose layout cannot read sancho (the PPO policy) is refused by its roster name, never the
    server's path; ``pretrained``, trained under every rule set, plays it and answers the analysis."""
    from agents import PPO_POLICY_PATH

    shutil.copyfile(PPO_POLICY_PATH, tmp_path / "ppo.pt")
    client = TestClient(create_app(models_dir=tmp_path))
    answer = client.post("/api/matches", json={"partner": "models:ppo.pt", "rules": {"variant": "sancho"}, "seed": 1})
    error = one_line_error(answer, 422)
    assert error.startswith("agent models:ppo.pt cannot play: ") and str(tmp_path) not in error
    sancho = {"partner": "pretrained", "rules": {"variant": "sancho"}}
    assert client.post("/api/matches", json=sancho).status_code == 201
    replay = client.post("/api/replays", json=played_record(variant="sancho", target_score=5)).json()
    analysis = client.get(f"/api/replays/{replay['id']}/analysis", params={"decision": 0})
    assert analysis.status_code == 200 and analysis.json()["policy"]["agent"] == "pretrained"
    named = client.get(f"/api/replays/{replay['id']}/analysis", params={"decision": 0, "policy": "models:ppo.pt"})
    assert one_line_error(named, 422).startswith("agent models:ppo.pt cannot play: ")


# ---------------------------------------------------------------- items 11 and 15: the command and its server


@pytest.mark.parametrize(
    "arguments, words",
    [
        (["--port", "70000"], "argument --port: must be a port from 0 to 65535, got '70000'"),
        (["--port", "-1"], "argument --port: must be a port from 0 to 65535, got '-1'"),
        (["--host", ""], "argument --host: must name an address such as 127.0.0.1"),
        (["--host", " "], "argument --host: must name an address such as 127.0.0.1"),
    ],
)
def test_pedro_table_usage_errors_are_one_line_and_status_2(
    arguments: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as ended:
        pedro_table(arguments)
    err = capsys.readouterr().err
    assert ended.value.code == 2 and err.count("\n") == 1 and err.startswith(f"pedro-table: error: {words}"), err


def test_models_follows_no_link_out_of_its_folder(tmp_path: Path) -> None:
    outside, models = tmp_path / "outside", tmp_path / "models"
    (outside / "deep").mkdir(parents=True)
    models.mkdir()
    for path in (outside / "secret.pt", outside / "deep" / "other.pt", models / "mine.pt"):
        path.write_bytes(b"")
    (models / "link.pt").symlink_to(outside / "secret.pt")
    (models / "folder").symlink_to(outside / "deep")
    assert [name for name, _ in find_models(models)] == ["models:mine.pt"]


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, int]]:
    """A table served as ``pedro-table`` serves it, a request's read bounded to 1 s."""
    from test_table_browser import serving

    with serving(server_config(create_app(), read_seconds=1.0)) as address:
        yield address


def answer_to(
    address: tuple[str, int], parts: list[bytes], pause: float = 0.0, limit: float = 6.0
) -> tuple[bytes, float]:
    """Send ``parts`` ``pause`` seconds apart (stopping once the server answers or closes) and read until it closes;
    what came back and the seconds it took."""
    start = time.monotonic()
    with socket.create_connection(address, timeout=limit) as connection:
        connection.settimeout(pause or limit)
        received = b""
        for part in parts:
            try:
                connection.sendall(part)
                received += connection.recv(65536)
                break  # answered or closed
            except TimeoutError:
                continue
            except OSError:  # closed under the send
                break
        connection.settimeout(limit)
        while chunk := connection.recv(65536):
            received += chunk
    return received, time.monotonic() - start


def test_half_sent_headers_and_a_trickled_body_are_cut_off(served: tuple[str, int]) -> None:
    received, seconds = answer_to(served, [b"GET /api/options HTTP/1.1\r\nHost: table\r\n"])
    assert received.startswith(b"HTTP/1.1 408 ") and seconds < 4, received
    assert b'"the request did not arrive within 1 s"' in received
    head = (
        b"POST /api/replays HTTP/1.1\r\nHost: table\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    )
    received, seconds = answer_to(served, [head] + [b"[" * 10] * 100, pause=0.2)
    assert received.startswith(b"HTTP/1.1 408 ") and seconds < 4, received
    received, _ = answer_to(served, [b"GET /api/options HTTP/1.1\r\nHost: table\r\nConnection: close\r\n\r\n"])
    assert received.startswith(b"HTTP/1.1 200 ")  # a request sent whole is answered as ever


# ---------------------------------------------------------------- item 17: a test run leaves the clone clean


def test_the_browser_test_writes_the_readmes_screenshots_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import test_table_browser as browser

    class Page:
        def __init__(self) -> None:
            self.paths: list[Path] = []

        def screenshot(self, path: str) -> None:
            self.paths.append(Path(path))

    page = Page()
    monkeypatch.delenv(browser.WRITE_SCREENSHOTS, raising=False)
    browser.save_screenshot(page, "table-play.png", tmp_path)
    assert page.paths == [tmp_path / "table-play.png"]
    monkeypatch.setenv(browser.WRITE_SCREENSHOTS, "1")
    browser.save_screenshot(page, "table-play.png", tmp_path)
    assert page.paths[1:] == [tmp_path / "table-play.png", browser.IMAGES_DIR / "table-play.png"]


def test_ctrl_c_closes_the_table_in_one_line_with_status_130() -> None:
    import signal
    import subprocess
    import sys
    import urllib.request

    from conftest import module_env

    server = subprocess.Popen(
        [sys.executable, "-m", "table.cli", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=module_env(),
    )
    assert server.stdout is not None
    address = re.fullmatch(rb"pedro-table: open (http://127.0.0.1:\d+/) \(Ctrl-C stops\)\n", server.stdout.readline())
    assert address is not None
    deadline = time.monotonic() + 30
    while True:  # serving: the Ctrl-C below reaches uvicorn's loop, not the start
        try:
            with urllib.request.urlopen(address.group(1).decode() + "api/options", timeout=5) as answer:
                assert answer.status == 200
            break
        except OSError:
            assert time.monotonic() < deadline, "the table did not answer"
            time.sleep(0.1)
    server.send_signal(signal.SIGINT)
    _, error = server.communicate(timeout=60)
    assert server.returncode == 130 and error == b"pedro-table: interrupted; the table is closed\n"
