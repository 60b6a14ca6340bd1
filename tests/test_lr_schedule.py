"""The learning rate over a run (train/schedule.py): linear decay as before without restarts, and warm restarts
(``lr_restarts``, ``lr_restart``) that jump the rate, clear Adam's moments and resume exactly."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("yaml")
pytest.importorskip("tensorboard")

from train.config import TrainConfigError, make_train_config  # noqa: E402
from train.schedule import LearningRateSchedule  # noqa: E402

from conftest import tiny_config, whole_and_resumed  # noqa: E402


@pytest.mark.parametrize("num_updates", [1, 7, 733])
def test_without_restarts_the_rate_is_the_linear_decay_of_before(num_updates: int) -> None:
    schedule = LearningRateSchedule.of_run(3e-4, (), 0.0, 32_768, num_updates)
    for update in range(num_updates + 1):
        assert schedule.rate(update) == 3e-4 * max(0.0, 1.0 - update / num_updates)  # bit for bit: runs unchanged
        assert not schedule.restarts_at(update)
    flat = LearningRateSchedule.of_run(3e-4, (), 0.0, 32_768, num_updates, anneal=False)
    assert {flat.rate(update) for update in range(num_updates)} == {3e-4}


def test_each_restart_jumps_to_its_rate_and_decays_to_zero_by_the_next() -> None:
    # 40 updates of 1,000 decisions; restarts at 10,000 and 25,500 decisions: updates 10 and 26
    schedule = LearningRateSchedule.of_run(3e-4, (10_000, 25_500), 1e-4, 1_000, 40)
    assert schedule.starts == (0, 10, 26)
    assert [update for update in range(40) if schedule.restarts_at(update)] == [10, 26]
    assert schedule.rate(0) == 3e-4 and schedule.rate(5) == pytest.approx(1.5e-4)
    assert schedule.rate(9) == pytest.approx(3e-5) and schedule.rate(10) == 1e-4
    assert schedule.rate(18) == pytest.approx(1e-4 * (1 - 8 / 16)) and schedule.rate(26) == 1e-4
    assert schedule.rate(39) == pytest.approx(1e-4 / 14)
    assert [schedule.segment(update) for update in (0, 9, 10, 25, 26, 39)] == [0, 0, 1, 1, 2, 2]
    assert LearningRateSchedule.of_run(3e-4, (10_000,), 0.0, 1_000, 40).rate(10) == 3e-4  # lr_restart 0: lr
    constant = LearningRateSchedule.of_run(3e-4, (10_000,), 1e-4, 1_000, 40, anneal=False)
    assert [constant.rate(update) for update in (0, 9, 10, 39)] == [3e-4, 3e-4, 1e-4, 1e-4]


@pytest.mark.parametrize(
    "values,message",
    [
        ({"lr_restarts": [2_000, 1_000]}, r"'lr_restarts' = \[2000, 1000\] is not allowed: decision counts in"),
        ({"lr_restarts": [1_000, 1_000]}, r"'lr_restarts' = \[1000, 1000\] is not allowed"),
        ({"lr_restarts": [5_000], "total_decisions": 5_000}, r"each below 'total_decisions' \(5000\)"),
        ({"lr_restarts": [0]}, r"lr_restarts"),
        ({"lr_restart": 1e-4}, r"'lr_restart' > 0 needs 'lr_restarts'"),
        ({"lr_restart": -1.0}, r"lr_restart"),
    ],
)
def test_bad_restarts_are_one_line_naming_the_key(values: dict, message: str) -> None:
    with pytest.raises(TrainConfigError, match=message) as raised:
        make_train_config(**values)
    assert "\n" not in str(raised.value)


def test_a_restart_clears_adams_moments_and_a_run_resumed_across_it_ends_exactly(tmp_path: Path) -> None:
    # 4 updates of 512 decisions, each 2 epochs of 2 minibatches; the restart at 1,024 decisions is update 2,
    # where the run stopped after two updates resumes
    config = tiny_config(lr_restarts=[1024], lr_restart=1e-4)
    whole, resumed = whole_and_resumed(config, tmp_path)
    for trainer in (whole, resumed):
        steps = {float(state["step"]) for state in trainer.optimizer.state.values()}
        assert steps == {8.0}, steps  # two updates of four steps since the restart (sixteen without it)
        assert trainer.optimizer.param_groups[0]["lr"] == pytest.approx(1e-4 * (1 - 1 / 2))
    plain = tiny_config()
    from train.run import run_training

    unrestarted = run_training(plain, tmp_path / "plain", progress=False)
    assert {float(state["step"]) for state in unrestarted.optimizer.state.values()} == {16.0}
