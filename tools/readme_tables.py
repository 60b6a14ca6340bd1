"""The README's config reference, generated from the config dataclasses so it cannot drift.

    python -m tools.readme_tables            # rewrite the tables in README.md
    python -m tools.readme_tables --check    # exit 1 if README.md differs from what the dataclasses say

Each table sits between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` markers: ``rules-config``
(:class:`pedro_env.config.PedroConfig`, docs/rules.md section 9 and the episode keys) and
``train-config`` (:class:`train.config.TrainConfig`). The meanings are the docstrings under each
field; the test suite runs the check.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path

from pedro_env.cli import OneLineErrorParser
from pedro_env.config import ALLOWED_VALUES, PedroConfig, field_docs
from train.config import config_reference

README = Path(__file__).resolve().parents[1] / "README.md"


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


def train_table() -> str:
    rows = ["| key | values | default | meaning |", "|---|---|---|---|"]
    for key, default, allowed, meaning in config_reference():
        rows.append(f"| `{key}` | {_markdown(allowed)} | `{default}` | {_markdown(meaning)} |")
    return "\n".join(rows)


TABLES = {"rules-config": rules_table, "train-config": train_table}


def rewrite(text: str) -> str:
    """``text`` with every marked table replaced by its generated form (ValueError if a marker is missing)."""
    for name, build in TABLES.items():
        pattern = re.compile(rf"(<!-- {name}:start -->\n).*?(<!-- {name}:end -->)", re.DOTALL)
        if not pattern.search(text):
            raise ValueError(f"README.md lacks the markers <!-- {name}:start --> ... <!-- {name}:end -->")
        table = build()
        text = pattern.sub(lambda match, table=table: match.group(1) + table + "\n" + match.group(2), text)
    return text


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineErrorParser(prog="python -m tools.readme_tables", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only check; exit 1 if README.md is out of date")
    parser.add_argument("--readme", default=str(README), help="the README to rewrite or check")
    args = parser.parse_args(argv)
    path = Path(args.readme)
    text = path.read_text()
    updated = rewrite(text)
    if args.check:
        if updated != text:
            print(f"{path} is out of date: run python -m tools.readme_tables", file=sys.stderr)
            return 1
        print(f"{path}: config reference up to date")
        return 0
    path.write_text(updated)
    print(f"rewrote the config reference in {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
