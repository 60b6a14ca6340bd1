"""Policies saved in observation layout version 1 (sized per config) read version 2 exactly: the migrated network
gives the same logits and values on the same positions, and a version-1 policy is refused for the table sizes and
variants its layout did not have."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import pedro_env
from agents.networks import ActorCritic, NetworkShape
from agents.policy import check_readable, migrated_payload, network_from_checkpoint
from pedro_env.actions import NUM_ACTIONS
from pedro_env.config import make_config
from pedro_env.layout_v1 import v1_entries, v1_full_state_entries, v1_pieces, v1_scale, v1_size
from pedro_env.observation_layout import FULL_STATE_SIZE, OBSERVATION_SIZE

from conftest import REPO_ROOT, random_legal_actions

RULES: dict[str, dict[str, Any]] = {
    "default": {},
    "sancho-robs": {"variant": "sancho", "refill": "dealer_robs"},
    "three-players": {"num_players": 3, "scoring": "simple", "variant": "dom"},
    "two-players-six-card": {"num_players": 2, "six_card": True, "variant": "pitch"},
}


def version1_payload(rules: dict[str, Any], centralized: bool, shared: bool = False) -> dict[str, Any]:
    """A randomly initialised policy of layout version 1, as pedro-train saved them before version 2."""
    config = make_config(**rules)
    size = v1_size(config)
    critic = size + 52 * config.num_players + 52 if centralized else size
    shape = NetworkShape(size, critic, NUM_ACTIONS, (32, 16), shared_trunk=shared)
    torch.manual_seed(len(rules))
    network = ActorCritic(shape, v1_scale(config))
    return {
        "config": {"env": dict(rules)},
        "network": shape.to_dict(),
        "model": network.state_dict(),
        "observation_layout": [[name, size] for name, size in v1_pieces(config)],
    }, network


def positions(rules: dict[str, Any], steps: int = 120) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(B, 954) observations, (B, 1214) full states and (B, 133) masks of seeded random play."""
    venv = pedro_env.PedroVectorEnv(8, **rules)
    rng = np.random.default_rng(3)
    out = venv.reset(seed=3)
    observations, full, masks = [], [], []
    for _ in range(steps):
        observations.append(out.observation.copy())
        full.append(venv.encoder.encode_full_state(venv.state, venv.state.actor))
        masks.append(out.action_mask.astype(bool))
        out = venv.step(random_legal_actions(out.action_mask, rng))
    return np.concatenate(observations), np.concatenate(full), np.concatenate(masks)


@pytest.mark.parametrize("centralized", [False, True], ids=["critic-reads-observation", "centralized-critic"])
@pytest.mark.parametrize("name", list(RULES))
def test_a_migrated_network_computes_the_same_function(name: str, centralized: bool) -> None:
    rules = RULES[name]
    config = make_config(**rules)
    payload, old = version1_payload(rules, centralized)
    new = network_from_checkpoint(payload)
    assert new.shape.observation_size == OBSERVATION_SIZE
    assert new.shape.critic_input_size == (FULL_STATE_SIZE if centralized else OBSERVATION_SIZE)
    observations, full, masks = positions(rules)
    old_observations = np.ascontiguousarray(observations[:, v1_entries(config)])
    critic_new = full if centralized else observations
    critic_old = np.ascontiguousarray(full[:, v1_full_state_entries(config)]) if centralized else old_observations
    old.eval()
    with torch.no_grad():
        logits_old, values_old = old.logits_and_value(
            torch.from_numpy(old_observations), torch.from_numpy(masks), torch.from_numpy(critic_old)
        )
        logits_new, values_new = new.logits_and_value(
            torch.from_numpy(observations), torch.from_numpy(masks), torch.from_numpy(critic_new)
        )
    legal = torch.from_numpy(masks)
    assert torch.allclose(logits_old[legal], logits_new[legal], atol=1e-4)
    assert torch.allclose(values_old, values_new, atol=1e-4)


def test_a_shared_trunk_migrates_too() -> None:
    payload, old = version1_payload({}, centralized=False, shared=True)
    new = network_from_checkpoint(payload)
    observations, _, masks = positions({}, steps=30)
    old_observations = np.ascontiguousarray(observations[:, v1_entries(make_config())])
    with torch.no_grad():
        a = old.eval().logits(torch.from_numpy(old_observations), torch.from_numpy(masks))
        b = new.logits(torch.from_numpy(observations), torch.from_numpy(masks))
    assert torch.allclose(a[torch.from_numpy(masks)], b[torch.from_numpy(masks)], atol=1e-4)


def test_a_payload_of_this_version_is_not_touched() -> None:
    payload, _ = version1_payload({}, centralized=False)
    migrated = migrated_payload(payload)
    assert migrated_payload(migrated) is migrated


@pytest.mark.parametrize(
    "rules, words",
    [
        ({"num_players": 3, "scoring": "simple"}, "was trained for 4 players; these games have 3"),
        ({"variant": "sancho"}, "layout version 1 reads only the table size and variant"),
    ],
)
def test_a_version_1_policy_is_refused_where_its_layout_could_not_read(rules: dict[str, Any], words: str) -> None:
    payload, _ = version1_payload({}, centralized=False)
    with pytest.raises(ValueError, match=words) as error:
        check_readable(payload, make_config(**rules), "policy.pt")
    assert "\n" not in str(error.value)
    check_readable(payload, make_config(target_score=21, six_card=True), "policy.pt")  # same layout: read


@pytest.mark.parametrize("path", sorted((Path(REPO_ROOT) / "models").glob("*.pt")), ids=lambda path: path.name)
def test_every_shipped_policy_loads_in_this_layout(path: Path) -> None:
    from agents.checkpoint import load_checkpoint
    from agents.policy import trained_rule_sets

    payload = load_checkpoint(path)
    network = network_from_checkpoint(payload)
    assert network.shape.observation_size == OBSERVATION_SIZE
    for rules in trained_rule_sets(payload):
        check_readable(payload, rules, path.name)


def test_a_training_run_of_layout_version_1_is_not_resumed_but_its_weights_start_a_new_one(tmp_path: Path) -> None:
    """A checkpoint of version 1 holds an optimizer of the old network: resuming it is refused in one line naming
    both versions and what to do; init_from reads its weights, migrated."""
    from agents.checkpoint import CheckpointError, save_checkpoint
    from train.run import run_training

    from conftest import tiny_config

    payload, _ = version1_payload({"target_score": 11}, centralized=False)
    payload["config"]["env"] = {"target_score": 11}
    save_checkpoint(payload, tmp_path / "old" / "latest.pt")
    with pytest.raises(CheckpointError) as refused:
        run_training(tiny_config(), tmp_path / "old", payload, progress=False)
    message = str(refused.value)
    assert "observation layout version 1; this version reads 2" in message and "init_from=" in message
    assert "\n" not in message
    from train.trainer import Trainer

    trainer = Trainer(tiny_config(init_from=str(tmp_path / "old"), hidden_sizes=[32, 16], shared_trunk=False))
    assert trainer.network.shape.observation_size == OBSERVATION_SIZE
