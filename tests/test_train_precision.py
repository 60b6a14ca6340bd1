"""Training in bfloat16 (``precision``): the weights, optimizer and outputs stay float32, the acting copy is the
network in bfloat16, the update computes what the games were played with, and ``auto`` follows the device."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("yaml")
pytest.importorskip("tensorboard")

from test_train import tiny_config  # noqa: E402

from agents.networks import StackedLogits, autocast_precision, masked_log_probs  # noqa: E402
from pedro_env.vector import PedroVectorEnv  # noqa: E402
from train.config import TrainConfigError, make_train_config  # noqa: E402
from train.devices import resolve_precision  # noqa: E402
from train.trainer import Trainer  # noqa: E402


def test_precision_is_checked_and_auto_follows_the_cpus_bfloat16_support(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(TrainConfigError, match=r"'precision' = 'half' is not allowed: allowed values are auto, float"):
        make_train_config(precision="half")
    cpu = torch.device("cpu")
    assert resolve_precision("float32", cpu) == torch.float32
    assert resolve_precision("bfloat16", cpu) == torch.bfloat16
    for avx512_bf16, amx, expected in ((False, False, torch.float32), (True, False, torch.bfloat16),
                                       (False, True, torch.bfloat16)):  # fmt: skip
        monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda value=avx512_bf16: value, raising=False)
        monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda value=amx: value, raising=False)
        assert resolve_precision("auto", cpu) == expected
    monkeypatch.delattr(torch.cpu, "_is_avx512_bf16_supported")
    monkeypatch.delattr(torch.cpu, "_is_amx_tile_supported")
    assert resolve_precision("auto", cpu) == torch.float32  # a torch without the checks: float32


@pytest.mark.parametrize("layout", ["shared_trunk", "two_networks", "centralized_critic"])
def test_bfloat16_training_keeps_float32_weights_and_acts_with_their_bfloat16_copy(layout: str) -> None:
    trainer = Trainer(
        tiny_config(
            precision="bfloat16",
            hidden_sizes=[32, 16],
            shared_trunk=layout == "shared_trunk",
            centralized_critic=layout == "centralized_critic",
        )
    )
    for _ in range(2):
        stats = trainer.train_step()
        assert all(math.isfinite(stats[key]) for key in ("policy_loss", "value_loss", "entropy", "approx_kl"))
        assert all(parameter.dtype == torch.float32 for parameter in trainer.network.parameters())
        acting = dict(trainer.acting_network.named_parameters())
        for name, parameter in trainer.network.named_parameters():
            assert acting[name].dtype == torch.bfloat16
            assert torch.equal(acting[name], parameter.detach().to(torch.bfloat16))  # the update's weights
    assert trainer.rollout.log_probs.dtype == np.float32 and (trainer.rollout.log_probs <= 0).all()


def test_the_update_computes_the_log_probabilities_the_games_were_played_with() -> None:
    """The autocast forward of the update (inputs scaled in bfloat16 once) and the acting copy agree: PPO's first
    pass starts at a ratio of 1, as in float32."""
    trainer = Trainer(tiny_config(precision="bfloat16", hidden_sizes=[64, 64]))
    rollout = trainer.collect()
    rows = np.flatnonzero(rollout.learner.reshape(-1))
    observations = torch.from_numpy(rollout.observations.reshape(-1, rollout.observations.shape[-1])[rows])
    masks = torch.from_numpy(rollout.masks.reshape(-1, rollout.masks.shape[-1])[rows])
    actions = torch.from_numpy(rollout.actions.reshape(-1)[rows])
    with torch.no_grad(), autocast_precision("cpu", torch.bfloat16):
        scaled = trainer.network.scaled_observations(observations, torch.bfloat16)
        logits, values = trainer.network(scaled, masks)
    assert logits.dtype == torch.float32 and values.dtype == torch.float32
    log_probs = masked_log_probs(logits).gather(1, actions[:, None]).squeeze(1).numpy()
    assert np.abs(log_probs - rollout.log_probs.reshape(-1)[rows]).max() < 1e-3
    assert np.abs(values.numpy() - rollout.values.reshape(-1)[rows]).max() < 1e-3
    with torch.no_grad():  # and float32 is a different arithmetic: bfloat16 is not silently float32
        full = masked_log_probs(trainer.network(observations, masks)[0]).gather(1, actions[:, None]).squeeze(1)
    assert np.abs(full.numpy() - rollout.log_probs.reshape(-1)[rows]).max() > 1e-5


def test_a_bfloat16_league_forward_gives_float32_logits_near_each_members_own() -> None:
    trainer = Trainer(tiny_config(precision="bfloat16", league_size=2, hidden_sizes=[32, 16]))
    trainer.pool.add_snapshot(trainer.network, 1)
    networks = [agent.network for agent in trainer.pool.league]
    step = PedroVectorEnv(32, config=trainer.pedro_config).reset(seed=5)
    observations = torch.from_numpy(step.observation).reshape(2, 16, -1)
    masks = torch.from_numpy(step.action_mask.view(bool)).reshape(2, 16, -1)
    stacked = StackedLogits(networks, torch.bfloat16)(observations, masks)
    assert stacked.dtype == torch.float32
    for member, network in enumerate(networks):
        with torch.no_grad():
            own = network.logits(observations[member], masks[member])
        legal = masks[member]
        assert torch.allclose(stacked[member][legal], own[legal], atol=0.05)
        assert (stacked[member][~legal] == own[~legal]).all()  # masked entries stay masked
