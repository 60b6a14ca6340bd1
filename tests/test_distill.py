"""train.distill: the labelled positions (deterministic, values only on legal cards), the fit (moves the card play
toward the search's settled choices, keeps the other phases), the written policy, and the command's one-line errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from agents import PPO_POLICY_PATH, PPO_POLICY_SPEC, make_agent
from agents.checkpoint import load_checkpoint
from agents.networks import masked_log_probs
from agents.policy import migrated_payload, network_from_checkpoint, observation_layout
from pedro_env.actions import PLAY_OFFSET
from pedro_env.config import make_config
from train.distill import (
    DistillError,
    FitSettings,
    anchor_positions,
    distilled_policy,
    fit,
    label_positions,
    main,
    side_rows,
    with_play_units,
)

SEARCH = "search:pimc,samples=4"


@pytest.fixture(scope="module")
def labels() -> dict[str, np.ndarray]:
    return label_positions(240, seed=5, search=SEARCH)


def test_labels_are_play_decisions_valued_on_their_legal_cards(labels: dict[str, np.ndarray]) -> None:
    observations, masks, values = labels["observations"], labels["masks"], labels["values"]
    assert observations.shape == (240, 954) and observations.dtype == np.uint8
    assert masks.shape == values.shape == (240, 133) and values.dtype == np.float32
    assert not masks[:, :PLAY_OFFSET].any() and (masks[:, PLAY_OFFSET:].sum(axis=1) > 1).all()
    np.testing.assert_array_equal(np.isfinite(values), masks)


def test_labels_are_the_same_for_the_same_seed_and_leave_beside_seats_alone(labels: dict[str, np.ndarray]) -> None:
    again = label_positions(40, seed=5, search=SEARCH)
    for key, array in again.items():
        np.testing.assert_array_equal(array, labels[key][:40])
    beside = label_positions(40, seed=5, search=SEARCH, beside="rule:heuristic", beside_seats=(1, 3))
    assert not np.array_equal(beside["observations"], again["observations"])


def test_fit_moves_the_card_play_toward_the_search_and_keeps_the_bids(labels: dict[str, np.ndarray]) -> None:
    config = make_config()
    reference = make_agent(PPO_POLICY_SPEC, config).network
    before = {key: value.clone() for key, value in reference.state_dict().items()}
    settings = FitSettings(epochs=6, lr=1e-3, batch_size=64, anchors=2000, held_out=0.1, seed=3)
    fitted = fit(reference, config, labels, settings, log=lambda line: None)
    assert all(torch.equal(before[key], value) for key, value in reference.state_dict().items())

    def agreement(network: torch.nn.Module) -> float:
        values = labels["values"]
        ordered = -np.sort(-values, axis=1)
        settled = ordered[:, 0] - ordered[:, 1] >= settings.margin
        with torch.no_grad():
            chosen = network.logits(torch.from_numpy(labels["observations"]), torch.from_numpy(labels["masks"]))
        return float(np.mean(chosen.argmax(1).numpy()[settled] == values.argmax(1)[settled]))

    assert agreement(fitted) > agreement(reference) + 0.05
    observations, masks = (torch.from_numpy(array) for array in anchor_positions(make_agent(PPO_POLICY_SPEC), 500, 9))
    with torch.no_grad():
        kept = fitted.logits(observations, masks).argmax(1) == reference.logits(observations, masks).argmax(1)
    assert float(kept.float().mean()) > 0.9


def test_a_fit_of_one_side_moves_that_sides_card_play_and_keeps_the_others(labels: dict[str, np.ndarray]) -> None:
    config = make_config()
    observations = labels["observations"]
    making = side_rows(observations, config, "making")
    np.testing.assert_array_equal(side_rows(observations, config, "defending"), ~making)
    assert side_rows(observations, config, "all").all() and 0.2 < making.mean() < 0.8
    reference = make_agent(PPO_POLICY_SPEC, config).network
    settings = FitSettings(sides="making", epochs=6, lr=1e-3, batch_size=64, anchors=500, held_out=0.1, seed=3)
    fitted = fit(reference, config, labels, settings, log=lambda line: None)
    with torch.no_grad():
        args = torch.from_numpy(observations), torch.from_numpy(labels["masks"])
        before, after = masked_log_probs(reference.logits(*args)), masked_log_probs(fitted.logits(*args))
        divergence = (before.exp() * (before - after)).masked_fill(~args[1], 0).sum(1).numpy()
    assert divergence[~making].mean() < divergence[making].mean() / 2  # 0.08 vs 0.23 nats
    with pytest.raises(DistillError, match="sides must be one of all, making, defending"):
        side_rows(observations, config, "attacking")


def test_the_written_policy_loads_as_a_checkpoint_agent(labels: dict[str, np.ndarray], tmp_path: Path) -> None:
    label_file = tmp_path / "labels.npz"
    np.savez_compressed(label_file, **labels)
    out = tmp_path / "policy.pt"
    args = [str(out), str(label_file), "--epochs", "1", "--batch-size", "64", "--anchors", "500", "--lr", "1e-3"]
    assert main(["fit", *args]) == 0
    payload = load_checkpoint(out)
    assert payload["exported"]["settings"]["epochs"] == 1
    assert payload["exported"]["started_from"] == load_checkpoint(PPO_POLICY_PATH)["exported"]
    assert payload["network"] == migrated_payload(load_checkpoint(PPO_POLICY_PATH))["network"]
    assert payload["observation_layout"] == observation_layout()
    agent = make_agent(f"ckpt:{out}")
    observations, masks = labels["observations"][:8], labels["masks"][:8]
    assert masks[np.arange(8), agent.act(observations, masks, np.random.default_rng(0))].all()
    again = distilled_policy(payload, network_from_checkpoint(payload), [label_file], FitSettings())
    assert again["exported"]["labels"] == [str(label_file)]


def _error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    message = capsys.readouterr().err.strip()
    assert message.count("\n") == 0
    return message


def test_bad_input_is_one_line_that_names_the_problem(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.npz"
    damaged.write_bytes(b"not a zip file")
    other = tmp_path / "other.npz"
    np.savez(other, observations=np.zeros((2, 10), np.uint8), masks=np.zeros((2, 133), bool), values=np.zeros((2, 133)))
    out = str(tmp_path / "out.pt")
    assert "label file not found" in _error(capsys, ["fit", out, str(tmp_path / "missing.npz")])
    assert "damaged or not a label file" in _error(capsys, ["fit", out, str(damaged)])
    assert "10-entry observations; these rules need 954" in _error(capsys, ["fit", out, str(other)])
    assert "is a directory" in _error(capsys, ["fit", str(tmp_path), str(other)])
    assert "--epochs" in _error(capsys, ["fit", out, str(other), "--epochs", "0"])
    assert "checkpoint not found" in _error(capsys, ["fit", out, str(other), "--init", str(tmp_path / "no.pt")])
    assert "go together" in _error(capsys, ["labels", out, "--positions", "5", "--seed", "1", "--beside", "random"])
    assert "seats are 0, 1, 2 or 3" in _error(
        capsys, ["labels", out, "--positions", "5", "--seed", "1", "--beside", "random", "--beside-seats", "4"]
    )
    assert "--positions: must be an int from 1" in _error(capsys, ["labels", out, "--positions", "0", "--seed", "1"])
    assert "does not value cards" in _error(
        capsys, ["labels", out, "--positions", "5", "--seed", "1", "--search", "random"]
    )
    assert not Path(out).exists()


@pytest.mark.parametrize("units", [0, 16])
def test_grafted_play_units_move_the_card_play_and_nothing_else(units: int) -> None:
    config = make_config()
    reference = make_agent(PPO_POLICY_SPEC, config).network
    network, trainable = with_play_units(reference, units)
    assert network.shape.hidden_sizes == tuple(size + units for size in reference.shape.hidden_sizes)
    observations, masks = (torch.from_numpy(array) for array in anchor_positions(make_agent(PPO_POLICY_SPEC), 300, 4))
    every = torch.ones(len(observations), 133, dtype=torch.bool)
    optimizer = torch.optim.Adam(network.parameters(), lr=1e-2)
    for _ in range(10):  # pull every logit, the bids' included, toward one bid and one card
        log_probs = masked_log_probs(network.logits(observations, every))
        loss = -(log_probs[:, 5] + log_probs[:, PLAY_OFFSET + 12]).mean() + network.value(observations).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        before, after = reference.logits(observations, every), network.logits(observations, every)
        torch.testing.assert_close(after[:, :PLAY_OFFSET], before[:, :PLAY_OFFSET], rtol=0, atol=1e-5)
        torch.testing.assert_close(network.value(observations), reference.value(observations), rtol=0, atol=1e-5)
        assert (after[:, PLAY_OFFSET:] - before[:, PLAY_OFFSET:]).abs().max() > 1.0
    assert float(trainable["policy_head.weight"][:PLAY_OFFSET].sum()) == 0
    with pytest.raises(DistillError, match="shared trunk of two layers"):
        with_play_units(_separate(), 4)


def _separate() -> torch.nn.Module:
    from agents.networks import ActorCritic, NetworkShape

    shape = NetworkShape.from_dict({**make_agent(PPO_POLICY_SPEC).network.shape.to_dict(), "shared_trunk": False})
    return ActorCritic(shape, np.ones(954, np.float32))
