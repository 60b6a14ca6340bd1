"""The shipped policies: ``pretrained`` (models/pretrained.pt) and the PPO policy it was distilled from
(models/ppo_policy.pt, search:policy's default model), and the individual ones ``pretrained`` plays at two and
three players (models/pretrained_2p.pt, models/pretrained_3p.pt). All load safely and record the layout and
rules they were trained on; ``pretrained`` records its distillation, bids as the PPO policy, refuses games with
another observation layout, and beats random at every table size."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from agents import (  # noqa: E402
    PPO_POLICY_PATH,
    PPO_POLICY_SPEC,
    PRETRAINED_PATH,
    AgentSpecError,
    make_agent,
    pretrained_path,
)
from agents.checkpoint import load_checkpoint  # noqa: E402
from agents.policy import PolicyAgent, check_readable, migrated_payload  # noqa: E402
from arena.evaluate import evaluate  # noqa: E402
from pedro_env.config import make_config  # noqa: E402
from pedro_env.vector import PedroVectorEnv  # noqa: E402


@pytest.mark.parametrize("path", [PRETRAINED_PATH, PPO_POLICY_PATH], ids=["pretrained", "ppo_policy"])
def test_the_shipped_policies_are_small_and_load_with_weights_only(path) -> None:
    assert path.is_file(), f"models/{path.name} is part of the repository"
    assert path.stat().st_size <= 10 * 1024 * 1024
    payload = torch.load(path, map_location="cpu", weights_only=True)
    assert set(payload) >= {"format", "config", "network", "model", "observation_layout", "exported"}
    assert "optimizer" not in payload and "env" not in payload  # the policy alone, no training state
    rules = make_config(**payload["config"]["env"])
    assert rules == make_config()  # trained on the default rules
    check_readable(payload, rules, path.name)  # its recorded layout reads today's games


INDIVIDUAL_RULES = {2: {"num_players": 2}, 3: {"num_players": 3, "scoring": "simple"}}


@pytest.mark.parametrize("num_players", [2, 3])
def test_the_individual_policies_are_shipped_for_their_table_size(num_players: int) -> None:
    path = pretrained_path(num_players)
    assert path.is_file(), f"models/{path.name} is part of the repository"
    assert path.stat().st_size <= 10 * 1024 * 1024
    payload = torch.load(path, map_location="cpu", weights_only=True)
    assert "optimizer" not in payload
    rules = make_config(**payload["config"]["env"])
    assert rules == make_config(**INDIVIDUAL_RULES[num_players])
    check_readable(payload, rules, path.name)
    assert not str(payload["exported"]["source"]).startswith("/")  # a run name, not a path of the machine that made it


@pytest.mark.parametrize("num_players", [2, 3])
def test_pretrained_plays_the_policy_of_the_table_size_and_beats_a_random_field(num_players: int) -> None:
    rules = make_config(**INDIVIDUAL_RULES[num_players])
    agent = make_agent("pretrained", rules)
    assert isinstance(agent, PolicyAgent) and agent.name == "pretrained"
    head = evaluate("pretrained", "random", config=rules, pairs=2, seed=321)
    assert head.sides[0].wins == head.matches == 2 * num_players
    with pytest.raises(AgentSpecError, match=f"trained for {num_players} players; these games have 4"):
        make_agent(f"ckpt:{pretrained_path(num_players)}")


def test_pretrained_records_its_distillation_from_the_ppo_policy_and_bids_as_it_does() -> None:
    exported = load_checkpoint(PRETRAINED_PATH)["exported"]
    assert exported["source"] == "train.distill fit" and exported["settings"]["sides"] == "making"
    assert len(exported["labels"]) == 6
    assert exported["started_from"] == load_checkpoint(PPO_POLICY_PATH)["exported"]
    assert exported["started_from"]["decisions"] > 0
    step = PedroVectorEnv(64).reset(seed=5)  # every game opens with a bid: only the card play was distilled
    chosen = [
        make_agent(spec).act(step.observation, step.action_mask, np.random.default_rng(0))
        for spec in ("pretrained", PPO_POLICY_SPEC)
    ]
    assert (chosen[0] == chosen[1]).all()


def test_search_policy_models_the_players_with_the_ppo_policy_unless_told() -> None:
    ppo = migrated_payload(load_checkpoint(PPO_POLICY_PATH))["model"]
    for spec, models_with_ppo in (("search:policy", True), ("search:policy,policy=pretrained", False)):
        weights = make_agent(spec).policy.network.state_dict()
        same = weights.keys() == ppo.keys() and all(torch.equal(weights[name], ppo[name]) for name in ppo)
        assert same == models_with_ppo, spec


def test_pretrained_is_an_agent_spec_and_refuses_another_layout() -> None:
    agent = make_agent("pretrained")
    assert isinstance(agent, PolicyAgent) and agent.greedy and agent.name == "pretrained"
    assert not make_agent("pretrained,greedy=false").greedy
    with pytest.raises(AgentSpecError, match="reads another observation layout"):
        make_agent("pretrained", make_config(variant="sancho"))


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
