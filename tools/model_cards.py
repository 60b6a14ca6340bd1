"""The shipped models' cards, docs/models/<model>.md, and their index, generated so they cannot drift.

    python -m tools.model_cards            # rewrite docs/models/
    python -m tools.model_cards --check    # exit 1 if a page differs from what the sources say

Each fact has one owner, which the card reads: the rules, layout, network, size and provenance from the model file
itself (:data:`agents.PRETRAINED_PATH`, :data:`agents.PPO_POLICY_PATH`); the recipe's commands and costs from
docs/training.md; the gauntlet, figures and command, from README.md's "How strong they are" and, at other table
sizes, from docs/strength_by_rules.md, or for the PPO policy, which README does not table, from the study that
measured it. A card says where each came from. Only :data:`MODELS` (which file, its title, where its recipe and
gauntlet are) is written here. The test suite runs the check.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agents import PPO_POLICY_PATH, PRETRAINED_PATH
from agents.checkpoint import load_checkpoint
from agents.onnx_policy import has_value_output
from agents.policy import network_from_checkpoint, recorded_layout_version, trained_rule_sets
from pedro_env.cli import OneLineErrorParser
from pedro_env.config import PedroConfig
from pedro_env.observation_layout import LAYOUT_VERSION, OBSERVATION_SIZE
from tools.doc_tables import check_answer

REPO_ROOT = Path(__file__).resolve().parents[1]
CARDS_DIR = "docs/models"
INDEX = "README.md"
STRENGTH_HEADING = "### How strong they are"
PPO_STUDY = "docs/studies/2026-12-04-partnering-the-search-agents.md"
DOCS = "../"  # docs/ seen from a card
STRENGTH_LINK = DOCS + "../README.md#how-strong-they-are"
BY_RULES = "docs/strength_by_rules.md"  # the gauntlets README leaves out: other table sizes, every rule set
BY_RULES_HEADING = "## At three and two players"
PLAYERS = {2: "two players", 3: "three players", 4: "four players"}


@dataclass(frozen=True)
class ShippedModel:
    """A shipped file and where its card's facts live."""

    path: Path
    title: str  # the card's heading
    spec: str  # the agent spec that plays it at its table size
    about: str  # one sentence: what it is
    recipe: tuple[tuple[str, str], ...]  # (a docs/training.md heading, the text its commands contain; '' all)
    gauntlet_in_readme: bool = True  # else in PPO_STUDY (README has no table of it)


MODELS = (
    ShippedModel(
        PRETRAINED_PATH,
        "`pretrained`",
        "pretrained",
        "The shipped policy, one network for every table size and rule set of docs/rules.md section 9: the long "
        "recipe's PPO policy trained four stages more on the games of seventeen rule sets at once.",
        (
            ("### The long recipe", ""),
            ("### Individual play: two and three players", "individual3-one"),
            ("## Training across rule sets", "rules_from_ppo"),
            ("## Training across rule sets", "--export runs/rules-ppo4"),
        ),
    ),
    ShippedModel(
        PPO_POLICY_PATH,
        "The PPO policy",
        f"ckpt:{PPO_POLICY_PATH.name}",  # made repository-relative in the commands
        "The long recipe's PPO policy: the model of every player inside `search:policy` under the default rules, "
        "where the shipped policy's mixed stages and `python -m train.distill` start.",
        (("### The long recipe", ""),),
        gauntlet_in_readme=False,
    ),
)
"""The shipped models in the order of the index."""


def shown(path: Path) -> str:
    """A path as the docs name it: relative to the repository root where it lies inside it."""
    try:
        return path.resolve().relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return str(path)


def card_name(model: ShippedModel) -> str:
    return f"{model.path.stem}.md"


def spec_of(model: ShippedModel) -> str:
    return f"ckpt:{shown(model.path)}" if model.spec.startswith("ckpt:") else model.spec


def section(text: str, heading: str) -> str:
    """The lines under ``heading`` up to the next heading of its level or above (ValueError if it is missing)."""
    level = len(heading) - len(heading.lstrip("#"))
    match = re.search(rf"^{re.escape(heading)}[^\n]*\n(.*?)(?=^#{{1,{level}}} |\Z)", text, re.DOTALL | re.MULTILINE)
    if match is None:
        raise ValueError(f"no heading {heading!r}")
    return match.group(1)


def bash_lines(text: str) -> list[str]:
    """The lines of the ```bash blocks in ``text``, a command continued with ``\\`` kept as its lines."""
    return [
        line
        for block in re.findall(r"^```bash\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
        for line in block.splitlines()
    ]


def recipe_commands(model: ShippedModel, training: str) -> list[str]:
    """The commands of docs/training.md that made ``model`` (its :attr:`ShippedModel.recipe`), in order."""
    lines: list[str] = []
    for heading, contains in model.recipe:
        lines += [line for line in bash_lines(section(training, heading)) if contains in line]
    return lines


def recipe_costs(commands: list[str], training: str) -> list[str]:
    """The rows of docs/training.md's recipe table whose command begins one of ``commands`` (links made a card's)."""
    rows = []
    for row in section(training, "## The recipes").splitlines():
        named = re.match(r"\| `([^`]+)`", row)
        if named and any(line == named.group(1) or line.startswith(named.group(1) + " ") for line in commands):
            rows.append(relinked(row, f"{DOCS}training.md", DOCS))
    return rows


def relinked(text: str, page: str, folder: str) -> str:
    """``text`` with its relative markdown links made a card's: ``(#anchor)`` to ``page#anchor``, ``(path)`` to
    ``folder + path`` (the folder of the page the text came from, seen from docs/models/)."""
    text = re.sub(r"\]\(#", f"]({page}#", text)
    return re.sub(r"\]\((?!https?:|#|\.\./|/)", f"]({folder}", text)


def gauntlet_blocks(model: ShippedModel, text: str, heading: str) -> list[str]:
    """The blocks (bold title, command, table) under ``heading`` of ``text`` for ``model``'s file: those whose title
    names its spec and whose first paragraph its file, in the page's order."""
    named = re.compile(rf"`(?:[^`\s]*/)?{re.escape(model.path.name)}`")
    return [
        block.strip()
        for block in re.split(r"^(?=\*\*)", section(text, heading), flags=re.MULTILINE)
        if block.startswith(f"**`{model.spec}`") and named.search(block.split("\n\n")[0])
    ]


def readme_gauntlet(model: ShippedModel, readme: str) -> str:
    """README's gauntlet blocks for ``model``'s file (ValueError where none is)."""
    blocks = gauntlet_blocks(model, readme, STRENGTH_HEADING)
    if not blocks:
        raise ValueError(f"README.md has no gauntlet of {model.path.name} under {STRENGTH_HEADING!r}")
    return "\n\n".join(blocks)


def study_gauntlet(readme: str, study: str) -> str:
    """The PPO policy's gauntlet from :data:`PPO_STUDY`: the column "the third stage" of its table, with the
    command."""
    table = re.search(r"^\|[^\n]*\| the third stage \|\n\|[-:| ]+\|\n((?:\|[^\n]*\n)+)", study, re.MULTILINE)
    if table is None:
        raise ValueError(f"{PPO_STUDY} has no table with the column 'the third stage'")
    rows = []
    for row in table.group(1).splitlines():
        entry, pairs, _, third = (cell.strip() for cell in row.strip().strip("|").split("|"))
        rows.append(f"| {entry} | {pairs} | {third.replace('**', '')} |")
    command = bash_lines(readme_gauntlet(MODELS[0], readme))[0].split("   #")[0]
    today = command.replace("pedro-eval pretrained ", f"pedro-eval {spec_of(MODELS[-1])} ")
    return "\n".join(
        [
            f"From [the study that measured it]({DOCS}studies/{Path(PPO_STUDY).name}) on 2026-12-04, when `pretrained` "
            "was this file, with that day's code: README's command for `pretrained` (the same deals), which for "
            "this file reads today",
            "",
            "```bash",
            today,
            "```",
            "",
            "| entry | pairs | win rate [95%] |",
            "|---|---:|---|",
            *rows,
            "",
            "Its other entries were not measured. README tables `search:policy`, the look-ahead with this policy "
            f"as its model of the players ([README]({STRENGTH_LINK})).",
        ]
    )


def rules_section(rule_sets: list[PedroConfig], version: int) -> list[str]:
    """The rules it was trained under: one row per rule key and a column per rule set (bold where not the default),
    or for a mix of more than three rule sets one row per rule set with the switches it sets."""
    default = asdict(PedroConfig())
    reads = "at its table size and variant" if version != LAYOUT_VERSION else "at its table sizes"
    lines = ["## The rules it plays", ""]
    if len(rule_sets) > 3:
        return [
            *lines,
            f"The {len(rule_sets)} rule sets it was trained under at once (the file's training config, `env` with each "
            "`rules_mix` entry's `set` on top), each a share of the games of every batch. Its observation says which "
            "game is played, so it plays other combinations of these switches too, without a note.",
            "",
            "| rule set | rules (`--set`) |",
            "|---:|---|",
            *(
                f"| {number} | {play_settings(rules).removeprefix(' --set ') or 'the default'} |"
                for number, rules in enumerate(rule_sets)
            ),
        ]
    header = "value" if len(rule_sets) == 1 else " | ".join(f"rule set {number}" for number in range(len(rule_sets)))
    lines += [
        "The rules it was trained under (the file's training config, `env`; bold: not the default). Games of other "
        f"switches {reads} it reads too; `pedro-eval` and `pedro-play` name the rules that differ.",
        "",
        f"| key | {header} |",
        "|---|" + "---|" * len(rule_sets),
    ]
    for key, value in default.items():
        values = [asdict(rules)[key] for rules in rule_sets]
        lines.append(f"| `{key}` | " + " | ".join(f"**`{v!r}`**" if v != value else f"`{v!r}`" for v in values) + " |")
    return lines


def players(rule_sets: list[PedroConfig]) -> str:
    """The table sizes a model was trained at: ``four players``, ``2, 3 and 4 players``."""
    sizes = sorted({rules.num_players for rules in rule_sets})
    return PLAYERS[sizes[0]] if len(sizes) == 1 else f"{', '.join(map(str, sizes[:-1]))} and {sizes[-1]} players"


def plays(rule_sets: list[PedroConfig]) -> str:
    """What a model plays, from the rule sets it was trained under: its table sizes and variants."""
    variants = list(dict.fromkeys(rules.variant for rules in rule_sets))
    kinds = (
        f"the {variants[0]} variant"
        if len(variants) == 1
        else f"the {', '.join(variants[:-1])} and {variants[-1]} variants"
    )
    return f"{players(rule_sets)}, {kinds}"


def play_settings(rules: PedroConfig) -> str:
    """``--set KEY=VALUE ...`` of the rules that differ from the default's ('' where none do)."""
    default = asdict(PedroConfig())
    changed = [f"{key}={value}" for key, value in asdict(rules).items() if value != default[key]]
    return f" --set {' '.join(changed)}" if changed else ""


def own_settings(rule_sets: list[PedroConfig]) -> str:
    """``--set ...`` of a model trained under one rule set that is not the default ('' otherwise: its spec alone)."""
    return play_settings(rule_sets[0]) if len(rule_sets) == 1 else ""


def provenance(exported: dict[str, Any]) -> list[str]:
    """What the file records of where it came from, as list items."""
    items = []
    if "labels" in exported:
        labels = ", ".join(f"`{label}`" for label in exported["labels"])
        settings = ", ".join(f"{key}={value}" for key, value in exported.get("settings", {}).items())
        items += [f"- made by `{exported['source']}` from the labels {labels}", f"- with the settings {settings}"]
        exported, whence = exported.get("started_from", {}), "- from a policy exported from"
    else:
        whence = "- exported from"
    decisions, seconds = int(exported.get("decisions", 0)), float(exported.get("training_s", 0.0))
    items.append(
        f"{whence} `{exported.get('source', '?')}` after {decisions:,} training decisions ({seconds / 60:.1f} "
        "minutes of training wall time, as that run counted it)"
    )
    return items


def recipe_section(model: ShippedModel, payload: dict[str, Any], training: str) -> list[str]:
    """The commands that made it and their costs (docs/training.md), and what the file records."""
    commands = recipe_commands(model, training)
    config = payload["config"]
    return [
        "## Its recipe",
        "",
        f"The commands that made it ([training.md]({DOCS}training.md#the-recipes)):",
        "",
        "```bash",
        *commands,
        "```",
        "",
        "| command | what it makes | cost |",
        "|---|---|---|",
        *recipe_costs(commands, training),
        "",
        "What the file records:",
        "",
        *provenance(payload.get("exported", {})),
        f"- the training config of its last PPO stage: seed {config.get('seed')}, "
        f"{config.get('total_decisions'):,} decisions over {config.get('num_envs')} games, lr {config.get('lr')}, "
        f"teacher `{config.get('teacher') or 'none'}`, init_from `{config.get('init_from') or 'none'}`",
    ]


def parameters(model: dict[str, Any]) -> int:
    """Weights and biases in a state dict (the observation scales are buffers, not parameters)."""
    return sum(int(tensor.numel()) for name, tensor in model.items() if not name.endswith("_scale"))


def summary_rows(model: ShippedModel, payload: dict[str, Any], rule_sets: list[PedroConfig]) -> list[str]:
    """The card's first table: agent spec, table, layout, the ONNX graph, network, parameters, file size."""
    recorded = payload.get("observation_layout") or []
    version = recorded_layout_version(recorded)
    network = network_from_checkpoint(payload)
    rules, settings = rule_sets[0], own_settings(rule_sets)
    shape = network.shape
    stored, loaded = parameters(payload["model"]), parameters(network.state_dict())
    layout = f"version {version} ({OBSERVATION_SIZE:,} entries)"
    if version != LAYOUT_VERSION:
        layout = (
            f"recorded in version {version} ({sum(size for _, size in recorded):,} entries, the layout of "
            f"{PLAYERS[rules.num_players]} and the {rules.variant} variant: it reads only those games); read as "
            f"version {LAYOUT_VERSION} ({OBSERVATION_SIZE:,} entries) once loaded, its first layer's columns moved "
            f"to their entries ([training.md]({DOCS}training.md#the-run-directory-checkpoints-and-resuming))"
        )
    trunk = "a shared trunk with a policy head and a value head" if shape.shared_trunk else "separate actor and critic"
    outputs = "logits and value" if has_value_output(network) else "logits"
    size = model.path.stat().st_size
    return [
        "| | |",
        "|---|---|",
        f"| agent spec | `{spec_of(model)}`{f' in games of `{settings.strip()}`' if settings else ''} |",
        f"| plays | {plays(rule_sets)} |",
        f"| observation layout | {layout} |",
        f"| ONNX export | reads layout version {LAYOUT_VERSION}; outputs {outputs} ([export.md]({DOCS}export.md)) |",
        f"| network | hidden layers {list(shape.hidden_sizes)}, {trunk}; {shape.num_actions} actions |",
        f"| parameters | {stored:,}" + (f" as stored; {loaded:,} as loaded |" if stored != loaded else " |"),
        f"| file | {size:,} bytes ({size / 1e6:.1f} MB) |",
    ]


def other_tables(model: ShippedModel, by_rules: str) -> str:
    """:data:`BY_RULES`'s gauntlet blocks for ``model``'s file at other table sizes, with where they come from
    (empty where there are none)."""
    blocks = gauntlet_blocks(model, by_rules, BY_RULES_HEADING)
    if not blocks:
        return ""
    anchor = re.sub(r"[^a-z0-9 -]", "", BY_RULES_HEADING.lstrip("# ").lower()).replace(" ", "-")
    page = f"{DOCS}{Path(BY_RULES).name}"
    return f"\n\nFrom [{Path(BY_RULES).name}]({page}#{anchor}):\n\n" + relinked("\n\n".join(blocks), page, DOCS)


def card(model: ShippedModel, readme: str, training: str, study: str, by_rules: str) -> str:
    """The card of ``model`` (markdown)."""
    payload = load_checkpoint(model.path)
    rule_sets = trained_rule_sets(payload)
    spec, settings, name = spec_of(model), own_settings(rule_sets), model.path.stem
    figures = (
        f"From [README.md]({STRENGTH_LINK}), which owns the figures:\n\n"
        + relinked(readme_gauntlet(model, readme), f"{DOCS}../README.md", f"{DOCS}../")
        + other_tables(model, by_rules)
        if model.gauntlet_in_readme
        else study_gauntlet(readme, study)
    )
    lines = [
        f"# {model.title}: `{shown(model.path)}`",
        "",
        f"*Generated by `python -m tools.model_cards` from the file, [training.md]({DOCS}training.md) and the "
        f"[README]({STRENGTH_LINK}); do not edit. All cards: [README.md]({INDEX}).*",
        "",
        model.about,
        "",
        *summary_rows(model, payload, rule_sets),
        "",
        *rules_section(rule_sets, recorded_layout_version(payload.get("observation_layout") or [])),
        "",
        *recipe_section(model, payload, training),
        "",
        "## Its gauntlet",
        "",
        figures,
        "",
        "## Commands",
        "",
        "```bash",
        f"pedro-eval {spec} --gauntlet{settings}   # evaluate: against every baseline, worst first",
        f"pedro-play{settings} --opponents {spec}   # play against it",
        f"pedro-train --export {shown(model.path)} {name}.pt   # export: {name}.pt and {name}.onnx",
        "```",
        "",
    ]
    return "\n".join(lines)


def index(readme: str) -> str:
    """docs/models/README.md: one row per card."""
    rows = []
    for model in MODELS:
        payload = load_checkpoint(model.path, mmap=True)
        rule_sets = trained_rule_sets(payload)
        size = model.path.stat().st_size / 1e6
        spec, settings = spec_of(model), own_settings(rule_sets).replace(" --set", ":")
        what = players(rule_sets) if len(rule_sets) == 1 else f"{plays(rule_sets)}, {len(rule_sets)} rule sets"
        card_link = f"[{model.title}]({card_name(model)})"
        rows.append(f"| {card_link} | `{shown(model.path)}` | `{spec}` | {what}{settings} | {size:.1f} MB |")
    return "\n".join(
        [
            "# The shipped models",
            "",
            "*Generated by `python -m tools.model_cards`; do not edit.* One card per file of `models/`: what it is, "
            "the rules it plays, its observation layout, its recipe, its gauntlet, its size and the commands that "
            f"evaluate, play and export it ([export.md]({DOCS}export.md): the ONNX file any runtime runs).",
            "",
            "| card | file | agent spec | plays | size |",
            "|---|---|---|---|---|",
            *rows,
            "",
        ]
    )


def pages(root: Path = REPO_ROOT) -> dict[str, str]:
    """Page path (relative to ``root``) -> its generated text."""
    readme = (root / "README.md").read_text()
    training = (root / "docs" / "training.md").read_text()
    study = (root / PPO_STUDY).read_text()
    by_rules = (root / BY_RULES).read_text()
    generated = {f"{CARDS_DIR}/{INDEX}": index(readme)}
    for model in MODELS:
        generated[f"{CARDS_DIR}/{card_name(model)}"] = card(model, readme, training, study, by_rules)
    return generated


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineErrorParser(prog="python -m tools.model_cards", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only check; exit 1 if a page is out of date")
    args = parser.parse_args(argv)
    try:
        generated = pages()
    except ValueError as error:
        print(f"python -m tools.model_cards: error: {error}", file=sys.stderr)
        return 2
    stale = [
        page
        for page, text in generated.items()
        if not (REPO_ROOT / page).is_file() or (REPO_ROOT / page).read_text() != text
    ]
    if args.check:
        return check_answer(stale, "python -m tools.model_cards", "docs/models/")
    for page in stale:
        (REPO_ROOT / page).parent.mkdir(parents=True, exist_ok=True)
        (REPO_ROOT / page).write_text(generated[page])
    print(f"rewrote {', '.join(stale)}" if stale else "docs/models/ already up to date")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
