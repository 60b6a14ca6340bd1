"""The model cards (docs/models/) are current: every shipped model has one, and each is what ``python -m
tools.model_cards`` writes from the model file, docs/training.md and README.md, so a figure changed in README or a
model retrained shows up as a stale card."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")

from agents import PPO_POLICY_PATH, PRETRAINED_PATH  # noqa: E402
from tools.model_cards import BY_RULES, CARDS_DIR, INDEX, MODELS, PPO_STUDY, card_name, main, pages  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
GENERATED = pages()


def test_every_shipped_model_has_a_card_in_the_index() -> None:
    shipped = {PRETRAINED_PATH, PPO_POLICY_PATH}
    assert {model.path for model in MODELS} == shipped
    listed = GENERATED[f"{CARDS_DIR}/{INDEX}"]
    assert all(f"]({card_name(model)})" in listed for model in MODELS)


@pytest.mark.parametrize("page", sorted(GENERATED))
def test_the_committed_cards_are_current(page: str) -> None:
    committed = REPO_ROOT / page
    assert committed.is_file() and committed.read_text() == GENERATED[page], (
        f"{page} is out of date: run python -m tools.model_cards"
    )


def test_the_check_passes_and_a_changed_figure_changes_the_card(tmp_path: Path) -> None:
    assert main(["--check"]) == 0
    for source in ("README.md", "docs/training.md", PPO_STUDY, BY_RULES):
        (tmp_path / source).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO_ROOT / source, tmp_path / source)
    readme = tmp_path / "README.md"
    readme.write_text(
        readme.read_text().replace("| vs `rule:heuristic` | 1000 | 86.1%", "| vs `rule:heuristic` | 1000 | 11.1%")
    )
    changed = pages(tmp_path)
    assert "| vs `rule:heuristic` | 1000 | 11.1%" in changed[f"{CARDS_DIR}/pretrained.md"]
    assert changed[f"{CARDS_DIR}/ppo_policy.md"] == GENERATED[f"{CARDS_DIR}/ppo_policy.md"]
