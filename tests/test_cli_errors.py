"""Every command-line tool meets a table of bad inputs: each ends in one line on stderr naming the problem,
exit status 2, and nothing already on disk changes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("yaml")

from test_play import write_policy_checkpoint  # noqa: E402

from agents import PPO_POLICY_PATH  # noqa: E402
from agents.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402
from arena.eval_cli import main as eval_main  # noqa: E402
from arena.play import main as play_main  # noqa: E402
from arena.replay import main as replay_main  # noqa: E402
from benchmarks.training import main as bench_main  # noqa: E402
from pedro_env.config import make_config  # noqa: E402
from train.cli import main as train_main  # noqa: E402
from train.config import make_train_config  # noqa: E402
from train.curve import main as curve_main  # noqa: E402
from train.trainer import Trainer  # noqa: E402

from conftest import REPO_ROOT  # noqa: E402

SMOKE = str(REPO_ROOT / "configs" / "smoke.yaml")
TINY = {
    "total_decisions": 1024,
    "num_envs": 16,
    "rollout_steps": 8,
    "hidden_sizes": [16],
    "torch_threads": 1,
    "eval_opponents": ["random"],
    "final_eval_pairs": 1,
    "env": {"target_score": 11},
}
THREE = ["--set", "num_players=3", "scoring=simple"]  # the rules of three players

# (tool, argv with {tmp} for the test directory, {file} for a plain file, {run} for a finished run, {four} for a
#  shipped policy of four players (the PPO policy) and {three} for a policy of three players; words the one-line error
#  must contain)
CASES: list[tuple[str, list[str], str]] = [
    ("train", ["{tmp}/nothing.yaml"], "config file not found"),
    ("train", ["smoky"], "'smoky' is no shipped config and no file: name one of best_response,"),
    ("train", ["{tmp}"], "is a directory"),
    ("train", ["{tmp}/int_key.yaml"], "unknown config key '1'"),  # a YAML scalar is text, a key too
    ("train", ["{tmp}/env_list.yaml"], "config key 'env' = ['1', '2'] is not allowed"),
    ("train", ["{tmp}/broken.yaml"], "is not valid YAML"),
    ("train", ["{tmp}/latin1.yaml"], "is not UTF-8"),
    ("train", [SMOKE, "--set", "lr"], "expected KEY=VALUE"),
    ("train", [SMOKE, "--set", "lr=["], "is not a YAML value"),
    ("train", [SMOKE, "--set", "env=[1, 2]"], "config key 'env'"),
    ("train", [SMOKE, "--set", "seed=-1"], "'seed' = -1 is not allowed: it takes an int from 0 to 2**32 - 1"),
    ("train", [SMOKE, "--set", "seed=99999999999999999999999"], "'seed'"),
    ("train", [SMOKE, "--set", "env.target_score=1000000000000"], "target_score"),
    ("train", [SMOKE, "--set", "lr=.nan"], "'lr'"),
    ("train", [SMOKE, "--set", "hidden_sizes=[100000000]"], "hidden_sizes"),
    ("train", [SMOKE, "--run-name", "../escape"], "names one directory under runs_dir"),
    ("train", [SMOKE, "--set", "runs_dir={file}/sub"], "cannot write run directory"),
    ("train", [SMOKE, "--from-start"], "--from-start goes with --resume"),
    ("train", [SMOKE, "--set", "runs_dir={tmp}", "--run-name", "run"], "already holds a run"),
    ("train", ["--resume", "{tmp}/missing"], "checkpoint not found"),
    ("train", ["--resume", "{run}"], "is complete"),
    ("train", ["--resume", "{run}", "--set", "num_envs=8"], "cannot change num_envs when resuming"),
    ("train", ["--resume", "{run}", "--from-start"], "has a checkpoint"),
    ("train", ["--resume", "{tmp}/edited"], "has a config that no longer checks"),
    ("train", ["--resume", "{tmp}/gutted"], "does not fit its own config"),
    ("train", ["--export", "{tmp}/missing", "{tmp}/x.pt"], "checkpoint not found"),
    ("train", ["--bogus"], "unrecognized arguments"),
    ("eval", ["random"], "at least two sides"),
    ("eval", ["random", "nope"], "unknown agent spec"),
    ("eval", ["random", "random", "--out", "{tmp}/"], "is a directory"),
    ("eval", ["random", "random", "--out", "{file}/x"], "is a file, not a directory"),
    ("eval", ["random", "random", "--save-replays", "{file}"], "is a file, not a directory"),
    ("eval", ["random", "random", "--seed", "-1"], "seed must be an int from 0 to 2**62"),
    ("eval", ["random", "random", "--seed", "99999999999999999999999"], "seed must be an int from 0 to 2**62"),
    ("eval", ["random", "random", "--workers", "-1"], "workers must be >= 1"),
    ("eval", ["random", "random", "--pairs", "abc"], "invalid int value"),
    ("eval", ["random", "random", "--set", "target_score=0"], "target_score"),
    ("eval", ["random", "search:pimc,samples=-1"], "samples"),
    ("eval", ["random", "--gauntlet", "--out", "{file}/x"], "is a file, not a directory"),
    ("eval", ["ckpt:{tmp}/missing.pt", "random"], "checkpoint not found"),
    ("play", ["--save", "{tmp}"], "is a directory"),
    ("play", ["--save", "{file}/x.json"], "is a file, not a directory"),
    ("play", ["--seat", "9"], "seat"),
    ("play", ["--opponents", "nope"], "unknown agent spec"),
    ("play", ["--seed", "-5"], "--seed must be an int from 0 to 2**62"),
    ("play", ["--set", "target_score=abc"], "target_score"),
    ("play", [*THREE, "--partner", "random"], "at 3 players everyone plays alone"),
    ("play", ["--set", "num_players=2", "--partner", "rule:heuristic"], "at 2 players everyone plays alone"),
    ("play", [*THREE, "--opponents", "random+random+random"], "one spec or 2 joined by '+'"),
    ("play", ["--set", "num_players=2", "--opponents", "random+random"], "takes one spec (there is one opponent)"),
    ("play", [*THREE, "--opponents", "ckpt:{four}"], "was trained for 4 players; these games have 3"),
    ("play", ["--set", "num_players=2", "--opponents", "ckpt:{four}"], "was trained for 4 players; these games have 2"),
    ("play", ["--opponents", "ckpt:{three}"], "was trained for 3 players; these games have 4"),
    ("eval", ["ckpt:{three}", "random"], "was trained for 3 players; these games have 4"),
    ("replay", ["{tmp}/missing.json"], "not found"),
    ("replay", ["{tmp}"], "directory"),
    ("replay", ["{file}"], "JSON"),
    ("bench", [SMOKE, "--updates", "0"], "--updates must be an int >= 1"),
    ("bench", ["{tmp}/nothing.yaml"], "config file not found"),
    ("bench", ["smoky"], "'smoky' is no shipped config and no file"),
    ("curve", ["{tmp}/missing"], "no TensorBoard scalars"),
    ("curve", ["{tmp}/tb", "--out", "{file}/chart.png"], "is a file, not a directory"),
    ("bench", [SMOKE, "--set", "num_envs=-1"], "'num_envs' = -1 is not allowed"),
]
TOOLS: dict[str, Callable[[Sequence[str] | None], int]] = {
    "train": train_main,
    "eval": eval_main,
    "play": play_main,
    "replay": replay_main,
    "bench": bench_main,
    "curve": curve_main,
}


def snapshot(directory: Path) -> dict[str, bytes]:
    return {str(path.relative_to(directory)): path.read_bytes() for path in directory.rglob("*") if path.is_file()}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with a finished run (``run``), a hand-edited and a gutted checkpoint, a policy of three players,
    a plain file and broken config files."""
    root = tmp_path_factory.mktemp("cli-errors")
    config = make_train_config(**TINY, runs_dir=str(root), run_name="run")
    trainer = Trainer(config)
    trainer.decisions = config.total_decisions
    trainer.updates = config.total_decisions // config.rollout_decisions  # the counters agree, as a run's do
    payload = trainer.state_dict()
    save_checkpoint(payload, root / "run" / "latest.pt")
    (root / "run" / "config.yaml").write_text("total_decisions: 1024\n")
    (root / "run" / "eval.json").write_text("{}\n")
    edited = load_checkpoint(root / "run")
    edited["config"]["num_envs"] = "many"
    save_checkpoint(edited, root / "edited" / "latest.pt")
    gutted = load_checkpoint(root / "run")
    gutted["model"] = {"nothing": torch.zeros(1)}
    gutted["counters"]["decisions"] = gutted["counters"]["updates"] = 0
    save_checkpoint(gutted, root / "gutted" / "latest.pt")
    (root / "file").write_text("not a directory, not JSON\n")
    write_policy_checkpoint(root / "three.pt", make_config(num_players=3, scoring="simple"))
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(root / "tb")) as writer:
        for name in ("win_rate", "win_rate_low", "win_rate_high"):
            writer.add_scalar(f"eval/vs_random/{name}", 0.5, 10)
    (root / "int_key.yaml").write_text("1: 2\n")
    (root / "env_list.yaml").write_text("env: [1, 2]\n")
    (root / "broken.yaml").write_text("lr: [\n")
    (root / "latin1.yaml").write_bytes("lr: 0.1 # caf\xe9\n".encode("latin-1"))
    return root


@pytest.mark.parametrize("tool, argv, words", CASES, ids=[f"{tool}-{i}" for i, (tool, _, _) in enumerate(CASES)])
def test_a_bad_input_is_one_line_status_2_and_changes_nothing(
    tool: str,
    argv: list[str],
    words: str,
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(workspace)
    monkeypatch.setattr("sys.stdin", open("/dev/null"))  # noqa: SIM115 - pedro-play must fail before reading
    names = {"tmp": str(workspace), "file": str(workspace / "file"), "run": str(workspace / "run")}
    names |= {"four": str(PPO_POLICY_PATH), "three": str(workspace / "three.pt")}
    before = snapshot(workspace)
    try:
        status = TOOLS[tool]([part.format(**names) for part in argv])
    except SystemExit as exit_:  # argparse's usage errors
        status = exit_.code
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert status == 2, captured
    assert len(lines) == 1, captured.err
    assert words in lines[0], lines[0]
    assert "Traceback" not in captured.err + captured.out
    assert snapshot(workspace) == before


@pytest.mark.parametrize("num_players", [2, 3])
def test_pedro_play_refuses_pretrained_while_its_file_is_missing(
    num_players: int, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``pretrained`` plays the shipped policy (agents.PRETRAINED_PATH) at every table size; while it is missing,
    one line naming where it should be, and status 2."""
    import agents
    import arena.match

    monkeypatch.setattr(agents, "PRETRAINED_PATH", tmp_path / "pretrained.pt")
    monkeypatch.setattr(arena.match, "_AGENT_CACHE", {})  # no policy built by an earlier test in this process
    rules = ["num_players=3", "scoring=simple"] if num_players == 3 else ["num_players=2"]
    assert play_main(["--set", *rules, "--opponents", "pretrained"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and f"the pretrained policy is not at {tmp_path / 'pretrained.pt'}" in lines[0], lines
