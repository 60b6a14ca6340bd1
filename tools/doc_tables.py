"""The reference tables of docs/, generated from the code so they cannot drift.

    python -m tools.doc_tables            # rewrite the tables in docs/
    python -m tools.doc_tables --check    # exit 1 if a page differs from what the code says

Each table sits between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` markers in the page that owns it
(:data:`PAGES`): the env config keys (:class:`pedro_env.config.PedroConfig`), the actions
(:data:`pedro_env.actions.ACTION_GROUPS`), the observation pieces and sizes
(:data:`pedro_env.observation_layout.PIECES`), the rule agents' options (:class:`agents.rule_based.Personality`)
and the training keys (:class:`train.config.TrainConfig`). The values a key takes come from its type and the range
or choices declared beside it (:mod:`pedro_env.keys`), the meanings from the docstrings under each field; the test
suite runs the check.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import fields
from pathlib import Path

from agents.rule_based import CAUTIOUS, HEURISTIC, Personality
from pedro_env.actions import ACTION_GROUPS, action_to_str
from pedro_env.cli import OneLineErrorParser
from pedro_env.config import ALLOWED_VALUES, PedroConfig, field_docs
from pedro_env.keys import declared_keys
from pedro_env.observation_layout import PIECES, RULE_SWITCHES, ObservationPiece, piece_slices
from train.config import config_reference

REPO_ROOT = Path(__file__).resolve().parents[1]


def _markdown(text: str) -> str:
    return text.replace("``", "`").replace("|", "\\|")


def rules_table() -> str:
    docs, default = field_docs(PedroConfig), PedroConfig()
    rows = ["| key | values | default | meaning |", "|---|---|---|---|"]
    for item in fields(PedroConfig):
        allowed = ALLOWED_VALUES[item.name]
        values = ", ".join(f"`{value!r}`" for value in allowed) if isinstance(allowed, tuple) else allowed
        rows.append(f"| `{item.name}` | {values} | `{getattr(default, item.name)!r}` | {_markdown(docs[item.name])} |")
    return "\n".join(rows)


def actions_table() -> str:
    rows = ["| index | text | example | meaning |", "|---|---|---|---|"]
    for group in ACTION_GROUPS:
        index = f"{group.first}" if group.first == group.last else f"{group.first} .. {group.last}"
        example = f"`{action_to_str(group.last)}`" if group.first == group.last else f"`{action_to_str(group.first)}`"
        rows.append(f"| {index} | `{group.text}` | {example} = {group.first} | {_markdown(group.meaning)} |")
    return "\n".join(rows)


_BLOCKS = {"one": "", "seat": "4", "team": "3"}


def piece_size_rule(piece: ObservationPiece) -> str:
    """A piece's size as blocks times width: ``4 * 52`` (a block per relative seat), ``3`` (per relative team)."""
    blocks = _BLOCKS[piece.blocks]
    if not blocks:
        return str(piece.width)
    return blocks if piece.width == 1 else f"{blocks} * {piece.width}"


def observation_table() -> str:
    rows = ["| piece | size | indices | meaning |", "|---|---|---|---|"]
    for piece in PIECES:
        where = piece_slices()[piece.name]
        indices = f"{where.start}" if where.stop - where.start == 1 else f"{where.start} .. {where.stop - 1}"
        rows.append(f"| `{piece.name}` | {piece_size_rule(piece)} | {indices} | {_markdown(piece.meaning)} |")
    return "\n".join(rows)


def observation_rules_table() -> str:
    start = piece_slices()["rules"].start
    rows = ["| index | entry | 1 when |", "|---|---|---|"]
    for offset, (key, value) in enumerate(RULE_SWITCHES):
        shown = "true" if value is True else value
        rows.append(f"| {start + offset} | `{key}={shown}` | the config's `{key}` is `{value!r}` |")
    rows.append(f"| {start + len(RULE_SWITCHES)} | `min_bid` | a count: the lowest bid allowed |")
    return "\n".join(rows)


def _option_value(value: object) -> str:
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if value is None:
        return "`none`"
    if value == float("inf"):
        return "`inf`"
    return f"`{value:g}`" if isinstance(value, float) else f"`{value}`"


def rule_options_table() -> str:
    docs = field_docs(Personality)
    rows = ["| option | values | `rule:heuristic` | `rule:cautious` | meaning |", "|---|---|---|---|---|"]
    for name, option in declared_keys(Personality).items():
        heuristic, cautious = getattr(HEURISTIC, name), getattr(CAUTIOUS, name)
        rows.append(
            f"| `{name}` | {option.describe()} | {_option_value(heuristic)} | {_option_value(cautious)} | "
            f"{_markdown(docs[name])} |"
        )
    return "\n".join(rows)


def train_table() -> str:
    rows = ["| key | values | default | meaning |", "|---|---|---|---|"]
    for key, default, allowed, meaning in config_reference():
        rows.append(f"| `{key}` | {_markdown(allowed)} | `{default}` | {_markdown(meaning)} |")
    return "\n".join(rows)


PAGES: dict[str, dict[str, Callable[[], str]]] = {
    "docs/environment.md": {
        "rules-config": rules_table,
        "actions": actions_table,
        "observation": observation_table,
        "observation-rules": observation_rules_table,
    },
    "docs/agents.md": {"rule-options": rule_options_table},
    "docs/openspiel.md": {"rules-config": rules_table},  # python_pedro's parameters are the config keys
    "docs/training.md": {"train-config": train_table},
}
"""Page (relative to the repository root) -> the tables it owns, by marker name."""


def rewrite(text: str, tables: dict[str, Callable[[], str]], page: str = "the page") -> str:
    """``text`` with every marked table replaced by its generated form (ValueError if a marker is missing)."""
    for name, build in tables.items():
        pattern = re.compile(rf"(<!-- {name}:start -->\n).*?(<!-- {name}:end -->)", re.DOTALL)
        if not pattern.search(text):
            raise ValueError(f"{page} lacks the markers <!-- {name}:start --> ... <!-- {name}:end -->")
        table = build()
        text = pattern.sub(lambda match, table=table: match.group(1) + table + "\n" + match.group(2), text)
    return text


def check_answer(stale: list[str], command: str, what: str) -> int:
    """``--check``'s answer: the ``stale`` pages named on stderr with the ``command`` that rewrites them, status 1;
    or ``what`` up to date, status 0."""
    if stale:
        print(f"out of date: {', '.join(stale)}: run {command}", file=sys.stderr)
        return 1
    print(f"{what} up to date")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineErrorParser(prog="python -m tools.doc_tables", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only check; exit 1 if a page is out of date")
    parser.add_argument("--root", default=str(REPO_ROOT), help="the repository root holding docs/")
    args = parser.parse_args(argv)
    stale = []
    for page, tables in PAGES.items():
        path = Path(args.root) / page
        text = path.read_text()
        try:
            updated = rewrite(text, tables, page)
        except ValueError as error:
            print(f"python -m tools.doc_tables: error: {error}", file=sys.stderr)
            return 2
        if updated == text:
            continue
        stale.append(page)
        if not args.check:
            path.write_text(updated)
    if args.check:
        return check_answer(stale, "python -m tools.doc_tables", "docs/ reference tables")
    print(f"rewrote the tables in {', '.join(stale)}" if stale else "docs/ reference tables already up to date")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
