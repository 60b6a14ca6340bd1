"""``pedro-train --export CHECKPOINT OUT.pt`` writes the policy as ONNX beside it (OUT.onnx), and any runtime plays it.

onnxruntime, given each shipped policy's graph and three fresh networks' (a shared trunk, separate actor and critic,
a centralized critic), picks the torch policy's greedy action at every one of over 10,000 positions each, from every
phase (bid, trump, discard, play), at 2, 3 and 4 players under several rule sets, with logits and values as torch
computes them; the metadata says what the policy is; the outputs are checked before any work.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")

from agents import PPO_POLICY_PATH, PRETRAINED_PATH, make_agent  # noqa: E402
from agents.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402
from agents.networks import ActorCritic, NetworkShape  # noqa: E402
from agents.onnx_policy import ONNX_FORMAT  # noqa: E402
from agents.policy import (  # noqa: E402
    PolicyAgent,
    network_from_checkpoint,
    observation_layout,
    policy_payload,
    recorded_layout_version,
    trained_rule_sets,
)
from pedro_env.cli import OutputPathError  # noqa: E402
from pedro_env.config import make_config  # noqa: E402
from pedro_env.observation_layout import (  # noqa: E402
    FULL_STATE_SIZE,
    LAYOUT_VERSION,
    OBSERVATION_SIZE,
    observation_scale,
    piece_slices,
)
from pedro_env.vector import PedroVectorEnv  # noqa: E402
from train.cli import main as train_main  # noqa: E402

from conftest import random_legal_actions  # noqa: E402

POSITIONS = 10_000  # per policy, at least
GAMES = 64  # games stepped together while collecting positions
KEPT = 0.25  # the share of each step's positions kept, so the kept ones spread over several deals of every game
PHASES = ("bid", "trump", "discard", "play")
MIN_PER_PHASE = 20  # positions of each phase under each rule set, at least
TABLE_RULES = {2: {"num_players": 2}, 3: {"num_players": 3, "scoring": "simple"}, 4: {}}
SWITCHES = [{}, {"six_card": True}, {"refill": "dealer_robs"}, {"low": "held", "renege": "penalty"}]
"""Switches a shipped policy is asked to play on top of the four-player rules (at two and three players: those rules
alone, so that each rule set still gives every phase enough positions)."""
MIX = [
    {},
    {"variant": "sancho", "six_card": True},
    {"num_players": 3, "scoring": "simple", "variant": "dom"},
    {"num_players": 3, "scoring": "simple", "refill": "dealer_robs"},
    {"num_players": 2, "variant": "pitch"},
    {"num_players": 2, "refill": "top", "min_bid": 2, "all_pass": "redeal"},
]
"""The rules_mix of the fresh networks: every table size, every variant."""
SHIPPED = {path.stem: path for path in (PRETRAINED_PATH, PPO_POLICY_PATH)}


@pytest.fixture(autouse=True)
def one_torch_thread() -> Any:
    """torch on one thread (its default, one per core, is many times slower beside the other test workers)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def exported(source: Path, out: Path) -> tuple[Path, Any]:
    """``pedro-train --export SOURCE OUT``: the ONNX file beside OUT, and an onnxruntime session of it."""
    assert train_main(["--export", str(source), str(out)]) == 0
    graph = out.with_suffix(".onnx")
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return graph, ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])


def positions(agent: PolicyAgent | None, config: Any, count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` (observation, mask) rows of games of ``config``: ``agent`` plays the even games (greedy) and random
    legal actions the odd ones (all of them without an agent), so the positions are the policy's own and odd ones;
    :data:`KEPT` of each step's positions are kept."""
    env, rng = PedroVectorEnv(GAMES, config), np.random.default_rng(seed)
    step = env.reset(seed=seed)
    observations, masks = [], []
    while sum(len(rows) for rows in observations) < count:
        kept = rng.random(GAMES) < KEPT
        observations.append(step.observation[kept])
        masks.append(step.action_mask[kept].astype(bool))
        actions = random_legal_actions(step.action_mask, rng)
        if agent is not None:
            actions[::2] = agent.act(step.observation[::2], step.action_mask[::2], rng)
        step = env.step(actions)
    return np.concatenate(observations)[:count], np.concatenate(masks)[:count]


def phases(observations: np.ndarray) -> np.ndarray:
    """(N,) the phase of each observation (0 bid, 1 trump, 2 discard, 3 play): its one-hot ``phase`` piece."""
    one_hot = observations[:, piece_slices()["phase"]]
    assert (one_hot.sum(axis=1) == 1).all()
    return one_hot.argmax(axis=1)


def assert_onnx_plays_as_torch(session: Any, agent: PolicyAgent, observations: np.ndarray, masks: np.ndarray) -> None:
    """onnxruntime's greedy actions equal the torch agent's at every row; logits (legal entries) and values agree."""
    outputs = session.run(None, {"observation": observations.astype(np.float32), "action_mask": masks})
    logits = outputs[0]
    onnx_actions = np.where(masks, logits, -np.inf).argmax(axis=1)
    torch_actions = agent.act(observations, masks, np.random.default_rng(0))
    differ = np.flatnonzero(onnx_actions != torch_actions)
    assert differ.size == 0, f"{differ.size} of {len(masks)} positions differ, the first at row {differ[:1]}"
    network, rows, legal = agent.network, torch.from_numpy(observations), torch.from_numpy(masks)
    with torch.no_grad():
        torch_logits = network.logits(rows, legal).numpy()
    np.testing.assert_allclose(logits[masks], torch_logits[masks], rtol=1e-4, atol=1e-4)
    assert (logits[~masks] == torch_logits[~masks]).all()  # the mask's constant, exactly
    if network.shape.critic_input_size == network.shape.observation_size:
        with torch.no_grad():
            torch_values = network.value(rows).numpy()
        np.testing.assert_allclose(outputs[1], torch_values, rtol=1e-4, atol=1e-4)
    else:
        assert len(outputs) == 1  # a centralized critic's value needs the full state: no value output


def check_positions(session: Any, policy_file: Path, rule_sets: list[dict[str, Any]], play: bool, seed: int) -> int:
    """:func:`assert_onnx_plays_as_torch` over positions of every rule set (at least MIN_PER_PHASE of each phase
    the rule set has: six-card Pedro has no discard); the number of positions checked."""
    checked = 0
    for index, overrides in enumerate(rule_sets):
        config = make_config(**overrides)
        agent = make_agent(f"ckpt:{policy_file}", config)
        assert isinstance(agent, PolicyAgent)
        observations, masks = positions(agent if play else None, config, -(-POSITIONS // len(rule_sets)), seed + index)
        counts = np.bincount(phases(observations), minlength=len(PHASES))
        played = counts if not config.six_card else np.delete(counts, PHASES.index("discard"))  # six cards: no discard
        assert played.min() >= MIN_PER_PHASE, f"{overrides}: positions per phase {dict(zip(PHASES, counts))}"
        assert_onnx_plays_as_torch(session, agent, observations, masks)
        assert_onnx_plays_as_torch(session, agent, observations[:1], masks[:1])  # the batch axis takes any size
        checked += len(masks)
    return checked


@pytest.mark.parametrize("name", list(SHIPPED))
def test_onnxruntime_plays_each_shipped_policy_as_torch_does(name: str, tmp_path: Path) -> None:
    path = SHIPPED[name]
    graph, session = exported(path, tmp_path / f"{name}.pt")
    trained = load_checkpoint(path)
    sizes = sorted({rules.num_players for rules in trained_rule_sets(trained)})
    rule_sets = [{**TABLE_RULES[size], **switches} for size in sizes for switches in SWITCHES[: 4 if size == 4 else 1]]
    assert check_positions(session, tmp_path / f"{name}.pt", rule_sets, play=True, seed=7) >= POSITIONS
    metadata = session.get_modelmeta().custom_metadata_map
    assert metadata["format"] == ONNX_FORMAT and metadata["source"] == str(path)
    layout_version = recorded_layout_version(trained["observation_layout"])
    assert metadata["source_layout_version"] == str(layout_version) == ("1" if name == "ppo_policy" else "2")
    assert metadata["observation_layout_version"] == str(LAYOUT_VERSION)
    assert json.loads(metadata["rules"]) == [asdict(rules) for rules in trained_rule_sets(trained)]
    assert metadata["table_sizes"] == ",".join(map(str, sizes)) and metadata["outputs"] == "logits,value"
    assert json.loads(metadata["train_config"]) == json.loads(json.dumps(trained["config"], default=str))
    assert json.loads(metadata["exported"])["source"] == trained["exported"]["source"]


def fresh_policy(path: Path, shared_trunk: bool, centralized: bool, seed: int) -> Path:
    """A freshly initialised network trained under :data:`MIX`, its weights drawn wide (so no two logits tie), saved
    as a checkpoint of 1,234 decisions."""
    torch.manual_seed(seed)
    critic = FULL_STATE_SIZE if centralized else OBSERVATION_SIZE
    network = ActorCritic(NetworkShape(OBSERVATION_SIZE, critic, 133, (64, 48), shared_trunk), observation_scale())
    with torch.no_grad():
        for name, parameter in network.named_parameters():
            parameter.normal_(0.0, 0.2 if name.endswith("weight") else 0.05)
    payload = policy_payload(network, make_config())
    payload["config"] = {"env": {"target_score": 21}, "rules_mix": [{"set": rules} for rules in MIX]}
    payload["counters"] = {"decisions": 1234}
    return save_checkpoint(payload, path)


@pytest.mark.parametrize(
    "shared_trunk,centralized", [(True, False), (False, False), (False, True)], ids=["shared", "separate", "central"]
)
def test_onnxruntime_plays_a_fresh_policy_at_every_table_size(
    shared_trunk: bool, centralized: bool, tmp_path: Path
) -> None:
    source = fresh_policy(tmp_path / "run.pt", shared_trunk, centralized, seed=3)
    graph, session = exported(source, tmp_path / "policy.pt")
    rule_sets = [{"target_score": 21, **rules} for rules in MIX]
    assert check_positions(session, tmp_path / "policy.pt", rule_sets, play=not centralized, seed=11) >= POSITIONS
    metadata = session.get_modelmeta().custom_metadata_map
    assert json.loads(metadata["rules"]) == [asdict(make_config(**rules)) for rules in rule_sets]
    assert metadata["table_sizes"] == "2,3,4" and metadata["decisions"] == "1234"
    assert json.loads(metadata["observation_layout"]) == observation_layout()
    assert metadata["observation_size"] == str(OBSERVATION_SIZE) and metadata["num_actions"] == "133"
    assert json.loads(metadata["action_texts"])[:2] == ["pass", "bid 1"]
    assert metadata["outputs"] == ("logits" if centralized else "logits,value")
    assert [(node.name, node.type, node.shape) for node in session.get_inputs()] == [
        ("observation", "tensor(float)", ["batch", OBSERVATION_SIZE]),
        ("action_mask", "tensor(bool)", ["batch", 133]),
    ]
    loaded = network_from_checkpoint(load_checkpoint(tmp_path / "policy.pt"))
    assert json.loads(metadata["network"]) == loaded.shape.to_dict()
    onnx.checker.check_model(onnx.load(graph))


def test_the_graph_and_the_torch_file_record_one_provenance_kept_through_a_second_export(tmp_path: Path) -> None:
    """The ONNX metadata's ``exported`` and ``decisions`` are those of the torch file written beside it, and an
    exported policy exported again keeps its record (its run, decisions and seconds), not the export's zeros."""
    source = fresh_policy(tmp_path / "run.pt", True, False, seed=2)
    for given, out in [(source, tmp_path / "first.pt"), (tmp_path / "first.pt", tmp_path / "second.pt")]:
        assert train_main(["--export", str(given), str(out)]) == 0
        written = load_checkpoint(out)["exported"]
        assert written == {"source": str(source), "decisions": 1234, "training_s": 0.0}
        metadata = {entry.key: entry.value for entry in onnx.load(out.with_suffix(".onnx")).metadata_props}
        assert json.loads(metadata["exported"]) == written and metadata["decisions"] == "1234"
        assert metadata["source"] == str(given)


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


def test_the_onnx_output_is_checked_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = fresh_policy(tmp_path / "run.pt", True, False, seed=1)
    training = tmp_path / "training.onnx"  # a training checkpoint under an .onnx name: never written over
    save_checkpoint({"config": {}, "network": {}, "model": {}, "optimizer": {}}, training)
    (tmp_path / "folder.onnx").mkdir()
    own = tmp_path / "own.onnx"
    own.write_bytes(source.read_bytes())
    for source_file, out, words in [
        (source, tmp_path / "policy.onnx", f"give e.g. {tmp_path / 'policy.pt'}, which writes"),
        (source, tmp_path / "training.pt", f"{training} is a training checkpoint"),
        (source, tmp_path / "folder.pt", f"--export output {tmp_path / 'folder.onnx'} is a directory"),
        (own, tmp_path / "own.pt", f"--export would write over its own checkpoint {own}"),
        (source, f"{tmp_path}/new/", f"--export output {tmp_path}/new/ is a directory"),  # not new.onnx beside it
    ]:
        before = sorted(path.name for path in tmp_path.iterdir())
        assert train_main(["--export", str(source_file), str(out)]) == 2
        assert words in one_line(capsys.readouterr().err)
        assert sorted(path.name for path in tmp_path.iterdir()) == before  # nothing written


def test_a_failed_onnx_write_and_a_missing_onnx_package_say_what_was_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import train.export

    source = fresh_policy(tmp_path / "run.pt", True, False, seed=1)
    out, graph = tmp_path / "policy.pt", tmp_path / "policy.onnx"
    graph.write_bytes(b"an earlier export")

    @contextlib.contextmanager
    def full_disk(path: Path, mode: str = "wb") -> Any:
        raise OutputPathError(f"cannot write {path}: No space left on device")
        yield

    monkeypatch.setattr(train.export, "atomic_output", full_disk)
    assert train_main(["--export", str(source), str(out)]) == 1
    line = one_line(capsys.readouterr().err)
    assert line.endswith(f"cannot write {graph}: No space left on device; {out} was written, {graph} is as it was")
    assert graph.read_bytes() == b"an earlier export" and "optimizer" not in load_checkpoint(out)
    monkeypatch.undo()
    monkeypatch.setattr(train.export, "onnx_available", lambda: False)
    out.unlink()
    graph.unlink()
    assert train_main(["--export", str(source), str(out)]) == 0
    assert "no ONNX file: the onnx package is not installed" in capsys.readouterr().out
    assert out.is_file() and not graph.exists()
