"""The shipped policy (``pretrained``, models/pretrained.pt): it loads safely, records the layout and rules it was
trained on, refuses games with another observation layout, and beats random. The candidate to replace it
(models/candidate.pt, ``ckpt:models/candidate.pt``) loads the same way and records how it was distilled."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from agents import PRETRAINED_PATH, AgentSpecError, make_agent  # noqa: E402
from agents.checkpoint import load_checkpoint  # noqa: E402
from agents.policy import PolicyAgent, observation_layout  # noqa: E402
from arena.evaluate import evaluate  # noqa: E402
from pedro_env.config import make_config  # noqa: E402
from pedro_env.vector import PedroVectorEnv  # noqa: E402


def test_the_shipped_policy_is_small_and_loads_with_weights_only() -> None:
    assert PRETRAINED_PATH.is_file(), "models/pretrained.pt is part of the repository"
    assert PRETRAINED_PATH.stat().st_size <= 10 * 1024 * 1024
    payload = torch.load(PRETRAINED_PATH, map_location="cpu", weights_only=True)
    assert set(payload) >= {"format", "config", "network", "model", "observation_layout", "exported"}
    assert "optimizer" not in payload and "env" not in payload  # the policy alone, no training state
    rules = make_config(**payload["config"]["env"])
    assert rules == make_config()  # trained on the default rules
    assert payload["observation_layout"] == observation_layout(rules)  # and on today's observation layout
    assert load_checkpoint(PRETRAINED_PATH)["exported"]["decisions"] > 0


def test_the_candidate_records_its_distillation_and_keeps_the_shipped_bids() -> None:
    candidate_path = PRETRAINED_PATH.with_name("candidate.pt")
    assert candidate_path.stat().st_size <= 10 * 1024 * 1024
    payload = torch.load(candidate_path, map_location="cpu", weights_only=True)
    assert payload["observation_layout"] == observation_layout(make_config())
    exported = payload["exported"]
    assert exported["source"] == "train.distill fit" and exported["settings"]["sides"] == "making"
    assert len(exported["labels"]) == 6 and exported["started_from"]["decisions"] > 0
    step = PedroVectorEnv(64).reset(seed=5)  # every game opens with a bid: only the card play was distilled
    chosen = [
        make_agent(spec).act(step.observation, step.action_mask, np.random.default_rng(0))
        for spec in (f"ckpt:{candidate_path}", "pretrained")
    ]
    assert (chosen[0] == chosen[1]).all()


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
        ("pretrained,greedy=maybe", ["greedy takes true or false", "'maybe'"]),
        ("pretrained,temp=2", ["unknown option 'temp'", "greedy=true|false"]),
        ("ckpt:runs/nowhere,temp=2", ["unknown option 'temp'"]),
    ],
)
def test_policy_options_are_checked(spec: str, words: list[str]) -> None:
    with pytest.raises(AgentSpecError) as caught:
        make_agent(spec)
    for word in words:
        assert word in str(caught.value)
