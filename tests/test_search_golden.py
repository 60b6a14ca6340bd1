"""The trick search and the PIMC agent against a golden record of their values, node counts and choices.

``tests/golden/search_values.json`` was recorded from the table-driven Python solver before the compiled
one replaced it (issue 15, item 6). For play positions of every rules config in tests/test_search.py
(seeded heuristic play), the record holds the root value of every legal card and the nodes visited for
the true deal and two sampled deals under three search settings, and the card ``search:pimc`` (with
its defaults then, RECORDED_DEFAULTS) chooses with a seeded generator, with the samples it drew and
the nodes it visited. The compiled solver must reproduce every figure exactly: same values, same
pruning, same decisions.
Record again (only when the search changes on purpose) with ``python tests/test_search_golden.py --record``.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_search import CONFIGS, play_positions

import pedro_env
from agents.search import DealScoring, HandSampler, PimcAgent, TrickSearch, card_list, hidden_cards
from pedro_env.cards import RuleTables
from pedro_env.kernels.tricks import legal_plays

RECORDED_DEFAULTS = {"samples": 24, "min_samples": 4, "confidence": 2.0, "max_nodes": 150_000}  # search:pimc's then
GOLDEN_FILE = Path(__file__).resolve().parent / "golden" / "search_values.json"
POSITIONS_PER_CONFIG = 16
SETTINGS = (  # (objective, depth, contested_share): the agent's default, a points search, a skewed estimate
    ("score", 3, 0.5),
    ("points", 2, 0.5),
    ("score", 2, 0.75),
)


def positions(name: str) -> list[tuple[Any, int, list[int]]]:
    """POSITIONS_PER_CONFIG play decisions of the config's seeded heuristic games, taken in turn from the
    first trick of a deal to the last (each trick equally often)."""
    chosen = []
    for view, game, truth in play_positions(CONFIGS[name], "rule:heuristic", 400, seed=31):
        if int(view.tricks_done[game]) == len(chosen) % 6:
            chosen.append((view, game, truth))
        if len(chosen) == POSITIONS_PER_CONFIG:
            break
    return chosen


def search_record(name: str) -> list[dict[str, Any]]:
    """The record of one config: per position the searches' values and nodes, and the agent's choice."""
    config = pedro_env.make_config(**CONFIGS[name])
    tables = RuleTables.for_variant(config.variant)
    n, teams = config.num_players, config.num_teams
    agent = PimcAgent(config, **RECORDED_DEFAULTS)
    records = []
    for number, (view, game, truth) in enumerate(positions(name)):
        trump, leader = int(view.trump[game]), int(view.trick_leader[game])
        trick = [int(view.trick[game, (leader + k) % n]) for k in range(n)]
        trick = trick[: trick.index(-1)] if -1 in trick else trick
        led = np.array([trick[0] if trick else -1])
        legal = int(legal_plays(np.array([truth[0]], dtype=np.uint64), np.array([trump]), led, tables)[0])
        rnd = random.Random(number)
        sampler = HandSampler(hidden_cards(view, game, tables))
        deals = [list(truth)] + [sampler.sample(rnd) for _ in range(2)]
        for deal in deals[1:]:
            deal[0] = truth[0]
        maker_team, bid = int(view.maker[game]) % teams, int(view.high_bid[game])
        scoring = DealScoring(teams, maker_team, bid, config.scoring == "difference")
        searches = []
        for objective, depth, share in SETTINGS:
            search = TrickSearch(
                config.variant, trump, n, teams, depth, share, config.low == "held",
                scoring if objective == "score" else None,
            )  # fmt: skip
            captured = [sum(search.points[c] for c in card_list(int(w))) for w in view.won[game]]
            for deal in deals:
                before = search.nodes
                values = search.root_values(list(deal), leader, trick, legal, captured)
                by_card = {str(c): v for c, v in sorted(values.items())}
                searches.append({"values": by_card, "nodes": search.nodes - before})
        mask = np.zeros(133, dtype=bool)
        for card in card_list(legal):
            mask[81 + card] = True
        samples, nodes = agent.stats.samples, agent.stats.nodes
        card = agent.choose_card(view, game, mask, random.Random(1000 + number))
        records.append(
            {
                "searches": searches,
                "choice": card,
                "samples": agent.stats.samples - samples,
                "nodes": agent.stats.nodes - nodes,
            }
        )
    return records


def load_golden() -> dict[str, list[dict[str, Any]]]:
    with open(GOLDEN_FILE) as handle:
        return json.load(handle)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_search_reproduces_golden_record(name: str) -> None:
    expected = load_golden()[name]
    actual = search_record(name)
    assert len(actual) == len(expected) == POSITIONS_PER_CONFIG
    for number, (got, want) in enumerate(zip(actual, expected)):
        for k, (got_search, want_search) in enumerate(zip(got["searches"], want["searches"])):
            assert got_search["values"] == want_search["values"], f"{name} position {number} search {k}: values"
            assert got_search["nodes"] == want_search["nodes"], f"{name} position {number} search {k}: nodes"
        assert (got["choice"], got["samples"], got["nodes"]) == (want["choice"], want["samples"], want["nodes"]), (
            f"{name} position {number}: the agent's choice"
        )


def record() -> None:
    golden = {name: search_record(name) for name in CONFIGS}
    GOLDEN_FILE.parent.mkdir(exist_ok=True)
    with open(GOLDEN_FILE, "w") as handle:
        json.dump(golden, handle, separators=(",", ":"))
        handle.write("\n")
    print(f"wrote {GOLDEN_FILE} ({GOLDEN_FILE.stat().st_size} bytes)")


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python tests/test_search_golden.py --record")
    record()
