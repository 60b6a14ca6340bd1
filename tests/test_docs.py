"""The docs as a reader meets them: a short README, links that resolve, snippets that run, generated tables current.

Pages: README.md, CHANGELOG.md, docs/*.md and the model cards of docs/models/ (and, for links only, the studies of
docs/studies/, which are history and not run). A relative link must name a file of the repository and, with
``#anchor``, a heading of that file (GitHub's anchor rule). The README's Python snippets, and those of
docs/, run in a fresh process with the sizes of :data:`SMALLER` (each substitution must still find its
text); a snippet followed by a ``text`` block must print exactly that block.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tools.doc_tables import PAGES, rewrite

REPO_ROOT = Path(__file__).resolve().parents[1]
README = REPO_ROOT / "README.md"
PAGES_READ = [
    README,
    REPO_ROOT / "CHANGELOG.md",
    *sorted((REPO_ROOT / "docs").glob("*.md")),
    *sorted((REPO_ROOT / "docs" / "models").glob("*.md")),  # the model cards (tools/model_cards.py)
]
STUDIES = sorted((REPO_ROOT / "docs" / "studies").glob("*.md"))
README_MOST_LINES = 300
# docs/training.md: a reference (how training works, the recipes, the keys); studies elsewhere
TRAINING_MOST_LINES = 350

SMALLER: dict[str, list[tuple[str, str]]] = {
    "README.md": [
        ("seed=0).learn(total_timesteps=100_000)", "seed=0, n_steps=16, batch_size=16).learn(total_timesteps=64)"),
        ("for _ in range(1000):", "for _ in range(100):"),
    ],
    "docs/environment.md": [("for _ in range(1000):", "for _ in range(50):")],
    "docs/openspiel.md": [("max_simulations=100,", "max_simulations=10,")],
}
"""Page -> (text, its smaller stand-in) applied to the page's snippets before they run (tests stay fast)."""

FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.DOTALL | re.MULTILINE)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def page_name(path: Path) -> str:
    return path.relative_to(REPO_ROOT).as_posix()


def prose(text: str) -> str:
    """``text`` without fenced code blocks and inline code spans (links there are examples, not links)."""
    return re.sub(r"`[^`\n]*`", "", FENCE.sub("", text))


def github_anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    anchors: set[str] = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", FENCE.sub("", text), re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        anchor, copy = slug, 0
        while anchor in anchors:
            copy += 1
            anchor = f"{slug}-{copy}"
        anchors.add(anchor)
    return anchors


def test_the_readme_is_a_short_guide() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= README_MOST_LINES, f"README.md has {len(lines)} lines; keep it to {README_MOST_LINES}"
    commands = FENCE.search(README.read_text())
    assert commands is not None and commands.group(1) == "bash", "README.md opens with its two commands"
    assert "pedro-train configs/ppo_selfplay.yaml" in commands.group(2)
    assert "python -m pytest -q -n 2 tests" in commands.group(2)


def test_the_training_page_is_a_reference() -> None:
    lines = (REPO_ROOT / "docs" / "training.md").read_text().splitlines()
    assert len(lines) <= TRAINING_MOST_LINES, (
        f"docs/training.md has {len(lines)} lines; keep it to {TRAINING_MOST_LINES} (a study goes to docs/studies/)"
    )


@pytest.mark.parametrize("page", PAGES_READ + STUDIES, ids=page_name)
def test_every_relative_link_resolves(page: Path) -> None:
    text = page.read_text()
    broken = []
    for target in LINK.findall(prose(text)):
        if re.match(r"[a-z]+:", target):
            continue  # absolute addresses are test_layout's concern
        path_part, _, anchor = target.partition("#")
        linked = (page.parent / path_part).resolve() if path_part else page
        if not linked.exists() or REPO_ROOT not in (linked, *linked.parents):
            broken.append(target)
        elif anchor and linked.suffix == ".md" and anchor not in github_anchors(linked.read_text()):
            broken.append(target)
    assert not broken, f"{page_name(page)}: links that do not resolve: {', '.join(broken)}"


def test_the_anchor_rule_matches_githubs() -> None:
    text = "# The Gymnasium envs: `Pedro-v0`\n## 11.3 Actions (133, the same)\n## Notes\n## Notes\n"
    assert github_anchors(text) == {"the-gymnasium-envs-pedro-v0", "113-actions-133-the-same", "notes", "notes-1"}


def snippets() -> list[tuple[str, int, str, str | None]]:
    """(page, number, Python source with SMALLER applied, the ``text`` block right after it or None)."""
    found = []
    for page in PAGES_READ:
        name, text = page_name(page), page.read_text()
        blocks = list(FENCE.finditer(text))
        for number, block in enumerate(blocks):
            if block.group(1) != "python":
                continue
            after = blocks[number + 1] if number + 1 < len(blocks) else None
            output = None
            if after is not None and after.group(1) == "text" and not text[block.end() : after.start()].strip():
                output = after.group(2)
            source = block.group(2)
            for old, new in SMALLER.get(name, []):
                source = source.replace(old, new)
            found.append((name, number, source, output))
    return found


def test_every_smaller_size_still_finds_its_text() -> None:
    for name, substitutions in SMALLER.items():
        code = "".join(block.group(2) for block in FENCE.finditer((REPO_ROOT / name).read_text()))
        for old, _ in substitutions:
            assert old in code, f"{name} no longer has {old!r} in a code block: update SMALLER in tests/test_docs.py"


SNIPPETS = snippets()


@pytest.mark.parametrize(
    "page,number,source,output", SNIPPETS, ids=[f"{page}:{number}" for page, number, *_ in SNIPPETS]
)
def test_the_python_snippets_run(page: str, number: int, source: str, output: str | None, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", source], cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"{page}, code block {number}:\n{done.stderr}"
    if output is not None:
        assert done.stdout == output, f"{page}, code block {number} prints:\n{done.stdout}"


def test_there_are_snippets_to_run() -> None:
    assert {page for page, *_ in SNIPPETS} >= {"README.md", "docs/environment.md"}


@pytest.mark.parametrize("page", list(PAGES))
def test_the_generated_tables_are_current(page: str) -> None:
    text = (REPO_ROOT / page).read_text()
    assert rewrite(text, PAGES[page], page) == text, f"{page} is out of date: run python -m tools.doc_tables"
