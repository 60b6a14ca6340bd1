"""The one KEY=VALUE reader (pedro_env/keys.py): the same text means the same value for rule keys, agent options
and training keys, in every command; ranges and choices come from the declarations beside the fields."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents import AgentSpecError, make_agent, parse_spec
from pedro_env.config import ConfigError, PedroConfig, make_config, parse_override
from pedro_env.keys import FALSE_TEXTS, TRUE_TEXTS, Key, declared_keys, key, read_text

pytest.importorskip("yaml")

from train.config import TrainConfigError, load_train_config  # noqa: E402

BOOL_TEXTS = [(text, True) for text in TRUE_TEXTS] + [(text, False) for text in FALSE_TEXTS]


@pytest.mark.parametrize(("text", "value"), BOOL_TEXTS + [("YES", True), ("Off", False)])
def test_a_boolean_text_means_one_value_in_every_reader(tmp_path: Path, text: str, value: bool) -> None:
    assert parse_override(f"six_card={text}") == ("six_card", value)  # pedro-eval, pedro-play, pedro-table --set
    assert load_train_config(None, [f"env.six_card={text}"]).pedro_config.six_card is value  # pedro-train --set
    config = tmp_path / "config.yaml"
    config.write_text(f"eval_partners: {text}\nenv:\n  six_card: {text}\n")  # a YAML config: the same text
    loaded = load_train_config(config)
    assert loaded.pedro_config.six_card is value and loaded.eval_partners is value
    assert make_agent(f"rule:heuristic,deny={text}").personality.deny is value  # an agent spec's option


def test_a_text_that_is_no_boolean_is_refused_alike_in_every_reader() -> None:
    tail = "= 'maybe' is not allowed: it takes true or false (or yes/no, on/off, 1/0)"
    with pytest.raises(ConfigError) as rule_error:
        parse_override("six_card=maybe")
    with pytest.raises(TrainConfigError) as train_error:
        load_train_config(None, ["env.six_card=maybe"])
    with pytest.raises(AgentSpecError) as agent_error:
        make_agent("rule:heuristic,deny=maybe")
    with pytest.raises(AgentSpecError) as checkpoint_error:
        parse_spec("pretrained,greedy=maybe")
    for error in (rule_error, train_error, agent_error, checkpoint_error):
        assert str(error.value).endswith(tail) and "\n" not in str(error.value), str(error.value)
    assert parse_spec("pretrained,greedy=1").options == {"greedy": "1"}  # read as true when the policy is built


def test_numbers_are_read_alike() -> None:
    assert parse_override("target_score=1e2") == ("target_score", 100)
    assert load_train_config(None, ["total_decisions=1e6", "lr=1e-4"]).total_decisions == 1_000_000
    assert load_train_config(None, ["num_envs=1_024"]).num_envs == 1024
    assert make_agent("search:pimc,samples=8.0,confidence=3").samples == 8
    for reader in (lambda: parse_override("target_score=2.5"), lambda: load_train_config(None, ["num_envs=2.5"])):
        with pytest.raises((ConfigError, TrainConfigError), match="= '2.5' is not allowed: it takes an int"):
            reader()


@pytest.mark.parametrize("text", ["nan", "inf", "-inf"])
def test_nan_and_inf_are_refused_where_a_range_is_declared(text: str) -> None:
    with pytest.raises(TrainConfigError, match=r"'lr' = .* is not allowed: it takes a number >= 0.0"):
        load_train_config(None, [f"lr={text}"])
    if text == "inf":  # no range declared: inf is a number (never overcall the partner)
        assert make_agent(f"rule:heuristic,partner_overcall_margin={text}").personality.partner_overcall_margin > 1e300


def test_a_python_value_is_checked_by_its_type_and_never_read_as_text() -> None:
    with pytest.raises(ConfigError, match="'six_card' = 'yes' is not allowed: allowed values are False, True"):
        make_config(six_card="yes")
    with pytest.raises(ConfigError, match="'num_players' = '4' is not allowed: allowed values are 2, 3, 4"):
        make_config(num_players="4")
    assert make_config(six_card=True).six_card is True


def test_the_declarations_say_what_a_key_takes() -> None:
    rules = declared_keys(PedroConfig)
    assert rules["target_score"].describe() == "an int from 1 to 10000"
    assert rules["variant"].describe() == "one of cinch, sancho, dom, pitch"
    listed = Key("sizes", tuple[int, ...], key((), low=1, high=2**20, non_empty=True).metadata["allowed"])
    assert listed.describe() == "a non-empty list of ints from 1 to 2**20"
    assert listed.value("64, 32", "config key 'sizes'") == (64, 32)
    assert read_text(" none ", float | None) is None and read_text("0.5", float | None) == 0.5
