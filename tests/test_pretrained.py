"""The shipped policies: ``pretrained`` (models/pretrained.pt), one network for every table size and rule set of
docs/rules.md section 9, and the long recipe's PPO policy (models/ppo_policy.pt, search:policy's model under the
default rules). Both load safely and record the layout and rules they were trained on; ``pretrained`` records its
recipe's last stage, plays every rule set it was trained under at every table size, and beats random; the PPO policy
refuses the variants its layout cannot read."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from agents import (  # noqa: E402
    PPO_POLICY_PATH,
    PRETRAINED_PATH,
    AgentSpecError,
    make_agent,
)
from agents.checkpoint import load_checkpoint  # noqa: E402
from agents.policy import PolicyAgent, check_readable, migrated_payload, trained_rule_sets  # noqa: E402
from arena.evaluate import evaluate  # noqa: E402
from pedro_env.config import make_config  # noqa: E402


@pytest.mark.parametrize("path", [PRETRAINED_PATH, PPO_POLICY_PATH], ids=["pretrained", "ppo_policy"])
def test_the_shipped_policies_are_small_and_load_with_weights_only(path) -> None:
    assert path.is_file(), f"models/{path.name} is part of the repository"
    assert path.stat().st_size <= 10 * 1024 * 1024
    payload = torch.load(path, map_location="cpu", weights_only=True)
    assert set(payload) >= {"format", "config", "network", "model", "observation_layout", "exported"}
    assert "optimizer" not in payload and "env" not in payload  # the policy alone, no training state
    for rules in trained_rule_sets(payload):
        check_readable(payload, rules, path.name)  # its recorded layout reads the games it was trained on


def test_pretrained_was_trained_under_every_table_size_and_variant_at_once() -> None:
    payload = load_checkpoint(PRETRAINED_PATH)
    rule_sets = trained_rule_sets(payload)
    assert len(rule_sets) == 17 and rule_sets[0] == make_config()
    assert {rules.num_players for rules in rule_sets} == {2, 3, 4}
    assert {rules.variant for rules in rule_sets} == {"cinch", "sancho", "dom", "pitch"}
    assert {rules.refill for rules in rule_sets} == {"maker_sorted", "top", "dealer_robs"}
    assert payload["exported"]["source"] == "runs/rules-ppo4"  # the recipe's last stage, not a machine's path
    assert payload["config"]["init_from"] == "runs/rules-ppo3/latest.pt"
    assert trained_rule_sets(load_checkpoint(PPO_POLICY_PATH)) == [make_config()]


@pytest.mark.parametrize(
    "rules",
    [
        {"num_players": 2},
        {"num_players": 3, "scoring": "simple"},
        {"variant": "sancho"},
        {"variant": "pitch", "six_card": True},
        {"num_players": 3, "scoring": "simple", "refill": "dealer_robs", "variant": "dom"},
    ],
    ids=lambda rules: ",".join(f"{key}={value}" for key, value in rules.items()),
)
def test_pretrained_plays_every_table_and_rule_set_without_a_note_and_beats_a_random_field(rules: dict) -> None:
    config = make_config(**rules)
    agent = make_agent("pretrained", config)
    assert isinstance(agent, PolicyAgent) and agent.name == "pretrained" and agent.trained_rules_note == ""
    head = evaluate("pretrained", "random", config=config, pairs=2, seed=321)
    assert head.sides[0].wins == head.matches == 2 * (2 if config.num_players == 4 else config.num_players)


def test_search_policy_models_the_players_with_the_ppo_policy_unless_told() -> None:
    ppo = migrated_payload(load_checkpoint(PPO_POLICY_PATH))["model"]
    for spec, models_with_ppo in (("search:policy", True), ("search:policy,policy=pretrained", False)):
        weights = make_agent(spec).policy.network.state_dict()
        same = weights.keys() == ppo.keys() and all(torch.equal(weights[name], ppo[name]) for name in ppo)
        assert same == models_with_ppo, spec


def test_pretrained_is_an_agent_spec_and_the_ppo_policy_refuses_another_layout() -> None:
    agent = make_agent("pretrained")
    assert isinstance(agent, PolicyAgent) and agent.greedy and agent.name == "pretrained"
    assert not make_agent("pretrained,greedy=false").greedy
    with pytest.raises(AgentSpecError, match="reads another observation layout"):
        make_agent(f"ckpt:{PPO_POLICY_PATH}", make_config(variant="sancho"))


def test_pretrained_beats_random() -> None:
    head = evaluate("pretrained", "random", pairs=4, seed=123)
    assert head.sides[0].wins == head.matches == 8


@pytest.mark.parametrize(
    "spec,words",
    [
        ("pretrained,greedy=maybe", ["option 'greedy' = 'maybe' is not allowed: it takes true or false"]),
        ("pretrained,temp=2", ["unknown option 'temp'", "greedy=true|false"]),
        ("ckpt:runs/nowhere,temp=2", ["unknown option 'temp'"]),
    ],
)
def test_policy_options_are_checked(spec: str, words: list[str]) -> None:
    with pytest.raises(AgentSpecError) as caught:
        make_agent(spec)
    for word in words:
        assert word in str(caught.value)
