"""The fault suite's config cases (issue 56, items 1 and 9): YAML is read in time and memory bounded by its text
(no aliases, a bounded file, bounded nesting), a key given twice is refused by name, ``KEY=VALUE`` text has a
bounded length in every command, and no error message prints a huge value whole."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("yaml")

from arena.eval_cli import main as eval_main  # noqa: E402
from pedro_env.config import MAX_ASSIGNMENT_CHARS, ConfigError, parse_override, short_repr  # noqa: E402
from train.config import (  # noqa: E402
    MAX_CONFIG_BYTES,
    MAX_YAML_DEPTH,
    TrainConfigError,
    load_train_config,
    make_train_config,
    parse_assignment,
    read_config_file,
)

from conftest import REPO_ROOT, run_python  # noqa: E402

MEMORY_LIMIT = 1 << 30  # the bomb below would take gigabytes; the refusal must fit in 1 GiB with torch imported
LETTERS = "abcdefghi"
# nine nested aliases of nine: 400 bytes of YAML that expand to 9**9 = 387,420,489 items
BOMB_ANCHORS = ", ".join(
    [f"&a [{', '.join(['x'] * 9)}]"]
    + [f"&{cur} [{', '.join([f'*{prev}'] * 9)}]" for prev, cur in zip(LETTERS, LETTERS[1:])]
)
BOMB_FILE = "bombs: [" + BOMB_ANCHORS + "]\nbaseline_opponents: *i\n"


@pytest.mark.parametrize("place", ["config file", "--set"])
def test_an_alias_bomb_is_one_line_and_status_2_in_bounded_memory(tmp_path: Path, place: str) -> None:
    config = tmp_path / "bomb.yaml"
    if place == "config file":
        config.write_text(BOMB_FILE)
        extra: list[str] = []
    else:
        config.write_text((REPO_ROOT / "configs" / "smoke.yaml").read_text())
        extra = ["--set", f"lr={{bombs: [{BOMB_ANCHORS}], value: *i}}"]
    result = run_python("-m", "train.cli", str(config), *extra, cwd=tmp_path, timeout=60, memory_bytes=MEMORY_LIMIT)
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("pedro-train: error: "), result.stderr[-2000:]
    assert "alias '*a'" in result.stderr and "line" in result.stderr


def test_an_alias_is_refused_before_it_is_expanded(tmp_path: Path) -> None:
    config = tmp_path / "bomb.yaml"
    config.write_text(BOMB_FILE)
    start = time.perf_counter()
    with pytest.raises(TrainConfigError, match=rf"^config file {config}: alias '\*a' at line 1 is not allowed"):
        read_config_file(config)
    with pytest.raises(TrainConfigError, match=r"^--set 'lr': alias '\*a' at line 1 is not allowed"):
        parse_assignment(f"lr=[{BOMB_ANCHORS}, *i]")
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize(
    ("text", "key", "where"),
    [
        ("num_envs: 8\nnum_envs: 16\n", "'num_envs'", "at lines 1 and 2"),
        ("env:\n  target_score: 31\nnum_envs: 8\nenv:\n  variant: sancho\n", "'env'", "at lines 1 and 4"),
        ("env:\n  target_score: 31\n  variant: dom\n  target_score: 21\n", "'env.target_score'", "at lines 2 and 4"),
        ("env: {target_score: 31, target_score: 21}\n", "'env.target_score'", "on line 1"),
        ("lr: 1e-4\n'lr': 2e-4\n", "'lr'", "at lines 1 and 2"),  # quoted or plain, the same key
    ],
    ids=["top level", "two env blocks", "inside env", "flow mapping", "quoted"],
)
def test_a_key_given_twice_is_refused_by_name_and_file(tmp_path: Path, text: str, key: str, where: str) -> None:
    config = tmp_path / "twice.yaml"
    config.write_text(text)
    with pytest.raises(TrainConfigError) as caught:
        load_train_config(config)
    assert str(caught.value) == f"config file {config}: key {key} is given twice {where}: give it once"


def test_two_spellings_of_one_key_are_refused(tmp_path: Path) -> None:
    config = tmp_path / "twice.yaml"
    config.write_text("num-envs: 8\nnum_envs: 16\n")
    with pytest.raises(TrainConfigError, match="keys 'num-envs' and 'num_envs' both name 'num_envs'"):
        load_train_config(config)


def test_a_key_given_twice_in_a_set_value_is_refused() -> None:
    with pytest.raises(TrainConfigError, match=r"^--set 'env': key 'target_score' is given twice on line 1"):
        load_train_config(None, ["env={target_score: 31, target_score: 21}"])


def test_the_same_key_in_two_places_is_not_a_duplicate(tmp_path: Path) -> None:
    config = tmp_path / "fine.yaml"
    config.write_text("seed: 3\nenv:\n  seed: 3\n")  # env.seed is wrong for other reasons, not twice
    with pytest.raises(TrainConfigError, match="unknown config key 'seed'"):
        load_train_config(config)
    config.write_text("num_envs: 8\nenv: {target_score: 31}\nbaseline_opponents: [random, random]\n")
    assert load_train_config(config).baseline_opponents == ("random", "random")


def test_a_config_file_past_the_size_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    config = tmp_path / "big.yaml"
    config.write_text("num_envs: 8\n" + "#" * MAX_CONFIG_BYTES + "\n")
    with pytest.raises(TrainConfigError, match=f"^config file {config} is larger than 65,536 bytes"):
        load_train_config(config)
    config.write_text("num_envs: 8\n" + "#" * (MAX_CONFIG_BYTES - 20) + "\n")  # just within: read
    assert load_train_config(config).num_envs == 8


def test_a_device_is_not_read_as_a_config_file() -> None:
    with pytest.raises(TrainConfigError, match="^config file /dev/zero is not a regular file"):
        load_train_config("/dev/zero")


def test_nesting_past_the_limit_is_refused(tmp_path: Path) -> None:
    deep = MAX_YAML_DEPTH + 1
    config = tmp_path / "deep.yaml"
    config.write_text("hidden_sizes: " + "[" * 100 + "]" * 100 + "\n")
    with pytest.raises(TrainConfigError, match=f"nest more than {MAX_YAML_DEPTH} deep at line 1"):
        load_train_config(config)
    with pytest.raises(TrainConfigError, match=f"^--set 'lr': lists and mappings nest more than {MAX_YAML_DEPTH}"):
        parse_assignment("lr=" + "[" * deep + "]" * deep)


def test_an_int_past_pythons_digit_limit_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "digits.yaml"
    config.write_text("seed: " + "7" * 5000 + "\n")  # text, read by the key's type (pedro_env.keys)
    with pytest.raises(TrainConfigError, match=r"^config key 'seed' = '7777.*\.\.\. is not allowed: it takes an int"):
        load_train_config(config)
    config.write_text("seed: !!int " + "7" * 5000 + "\n")  # typed by YAML itself
    with pytest.raises(TrainConfigError, match="a value YAML cannot read: Exceeds the limit") as caught:
        load_train_config(config)
    assert "\n" not in str(caught.value) and "sys.set_int_max_str_digits" not in str(caught.value)


def test_key_value_text_past_the_limit_is_refused_naming_it() -> None:
    long = "lr=" + "1" * MAX_ASSIGNMENT_CHARS
    with pytest.raises(TrainConfigError, match=f"has {len(long):,} characters: at most 4,096 are read") as caught:
        parse_assignment(long)
    assert len(str(caught.value)) < 120
    with pytest.raises(ConfigError, match="at most 4,096 are read"):
        parse_override("target_score=" + "1" * MAX_ASSIGNMENT_CHARS)
    assert parse_override("target_score=" + "0" * (MAX_ASSIGNMENT_CHARS - 20) + "31") == ("target_score", 31)


def test_pedro_eval_refuses_a_long_set_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    status = eval_main(["random", "random", "--pairs", "1", "--set", "variant=" + "x" * 10_000])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and "at most 4,096 are read" in err and len(err) < 200


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("baseline_opponents", list(range(1_000_000))),  # a list of ints where agent specs belong
        ("lr", "x" * 1_000_000),
        ("num_envs", [[1] * 1000] * 1000),
        ("env", "y" * 1_000_000),
        ("x" * 1_000_000, 1),  # an unknown key
    ],
    ids=["list", "string", "nested", "env", "unknown key"],
)
def test_an_error_never_prints_a_huge_value_whole(key: str, value: object) -> None:
    start = time.perf_counter()
    with pytest.raises(TrainConfigError) as caught:
        make_train_config(**{key: value})
    assert time.perf_counter() - start < 1.0
    message = str(caught.value)
    assert "..." in message and len(message) < 2000 and "\n" not in message


class _NeverPrinted:
    def __repr__(self) -> str:
        raise AssertionError("short_repr printed an item it cuts off")


def test_short_repr_cuts_a_huge_value_before_printing_it() -> None:
    value = [0] * 10_000 + [_NeverPrinted()]
    assert short_repr(value) == repr([0] * 100)[:57] + "..."
    assert short_repr(tuple(value)) == repr((0,) * 100)[:57] + "..."
    assert short_repr(dict.fromkeys(range(10_000)) | {"late": _NeverPrinted()}).startswith("{0: None, 1: None")
    assert short_repr("z" * 10**7) == "'" + "z" * 56 + "..."
    assert short_repr({"a": 1, "b": [2]}) == "{'a': 1, 'b': [2]}"  # what fits is printed as repr prints it


@pytest.mark.parametrize("config", sorted((REPO_ROOT / "configs").glob("*.yaml")), ids=lambda path: path.name)
def test_every_shipped_config_reads_under_these_rules(config: Path) -> None:
    assert config.stat().st_size < MAX_CONFIG_BYTES // 8
    load_train_config(config)
