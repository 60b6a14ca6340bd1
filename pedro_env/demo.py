"""One seeded Pedro match with uniformly random legal play, shown as text; then the batched engine's pace.

The first deal is rendered (``render_mode="ansi"``) after the deal, after trumps are named, after the
discard and draw, and in the middle of play, and summed up from ``infos["deal"]``. Every deal then
gets one line (maker, bid, trumps, points per team, made or set, scores), and the match its result.
Finally :func:`engine_pace` times ``PedroVectorEnv`` of 256 games under random legal play for half a second and
prints its decisions per second (``python -m benchmarks.engine`` measures the engine properly, from a clone).

The match's output is a function of ``--seed`` and the config alone, so two runs print the same but for that pace.
A bad ``--seed`` (an int from 0 to 2**64 - 1) or ``--set KEY=VALUE`` ends in one line on stderr, exit status 2.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

import pedro_env
from pedro_env.actions import DISCARD_OFFSET, DONE_ACTION, PLAY_OFFSET, TRUMP_OFFSET, uniform_legal_actions
from pedro_env.cli import OneLineErrorParser, add_rule_overrides, one_line_on_interrupt, rule_config, seed_argument
from pedro_env.config import ConfigError, PedroConfig, make_config

EXAMPLES = """examples:
  python -m pedro_env.demo                      # seed 0, default rules (Cinch, 4 players, to 62), then the pace
  python -m pedro_env.demo --seed 7 --no-bench  # another match, no timing
  python -m pedro_env.demo --set num_players=2 six_card=true --no-bench  # two players, six cards
"""


def team_names(config: PedroConfig) -> list[str]:
    """``['team 0 (P0+P2)', ...]`` with four players, ``['P0', 'P1', ...]`` when every player is a team."""
    if config.num_teams == config.num_players:
        return [f"P{seat}" for seat in range(config.num_players)]
    return [
        f"team {team} (" + "+".join(f"P{s}" for s in range(config.num_players) if config.team_of_seat[s] == team) + ")"
        for team in range(config.num_teams)
    ]


def deal_line(number: int, deal: dict[str, Any]) -> str:
    """One line per deal: maker, bid, trumps, points per team, made or set, score change and scores."""
    points = "-".join(str(p) for p in deal["points"])
    delta = " ".join(f"{d:+d}" for d in deal["delta"])
    scores = " ".join(str(s) for s in deal["scores"])
    if deal["redeal"]:
        return f"deal {number:3d}  thrown in (all passed)                                 scores {scores}"
    result = "made" if deal["made"] else "set "
    renege = "" if deal["renege"] is None else f"  (renege by team {deal['renege']})"
    return (
        f"deal {number:3d}  maker P{deal['maker']} bid {deal['bid']:2d} trumps {deal['trump']}  points {points:>5}  "
        f"{result}  change {delta:>9}  scores {scores}{renege}"
    )


def deal_summary(deal: dict[str, Any], config: PedroConfig) -> list[str]:
    """A few sentences about one finished deal, built from its ``infos["deal"]`` dict."""
    names = team_names(config)
    if deal["redeal"]:
        return ["Everyone passed: the deal is thrown in and scores nothing."]
    maker_team = int(config.team_of_seat[deal["maker"]])
    maker = (
        f"P{deal['maker']}" if config.num_teams == config.num_players else f"P{deal['maker']} of {names[maker_team]}"
    )
    outcome = "made" if deal["made"] else "was set"
    lines = [f"{maker} bid {deal['bid']} in trumps {deal['trump']} and {outcome}."]
    if deal["renege"] is not None:
        lines.append(f"{names[deal['renege']]} reneged, which ended the deal.")
    lines.append("Points captured: " + ", ".join(f"{name} {p}" for name, p in zip(names, deal["points"])))
    lines.append("Score change:    " + ", ".join(f"{name} {d:+d}" for name, d in zip(names, deal["delta"])))
    lines.append("Scores:          " + ", ".join(f"{name} {s}" for name, s in zip(names, deal["scores"])))
    return lines


def show(title: str, text: str | None) -> None:
    print(f"--- {title} ---")
    print(text)
    print()


def play_match(seed: int, rules: dict[str, Any]) -> int:
    """Play one match with uniformly random legal actions, printing as it goes; returns the decisions taken."""
    env = pedro_env.env(render_mode="ansi", **rules)
    config: PedroConfig = env.unwrapped.config
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    print(f"Pedro match, seed {seed}, uniformly random legal play; config: {config}")
    print()
    show("deal 1: the cards are dealt", env.render())

    first_deal = True
    plays_in_first_deal = 0
    mid_play = 3 * config.num_players + 1  # three tricks done and the fourth led
    returns = dict.fromkeys(env.possible_agents, 0.0)
    deal_lines: list[str] = []
    decisions = 0
    for agent in env.agent_iter():
        observation, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        legal = np.flatnonzero(observation["action_mask"])
        action = int(rng.choice(legal))
        env.step(action)
        decisions += 1
        for name, reward in env.rewards.items():
            returns[name] += reward
        deal = env.infos[agent].get("deal")
        if deal is not None:
            if first_deal:
                first_deal = False
                print("--- deal 1 is over (from infos['deal']) ---")
                print("\n".join(deal_summary(deal, config)))
                print()
            deal_lines.append(deal_line(len(deal_lines) + 1, deal))
            continue
        if first_deal and env.agents:
            plays_in_first_deal = show_first_deal_moment(env, action, plays_in_first_deal, mid_play)
    print_match_result(env, config, deal_lines, decisions, returns)
    env.close()
    return decisions


def show_first_deal_moment(env: Any, action: int, plays: int, mid_play: int) -> int:
    """Render the table when ``action`` named trumps, ended the discard and draw, or was the ``mid_play``-th card
    of the first deal; returns the cards played in it so far (``plays`` before ``action``)."""
    # the next decision's legal actions tell which phase the deal has reached
    next_legal = np.flatnonzero(env.observe(env.agent_selection)["action_mask"])
    entering_play = next_legal.size > 0 and next_legal[0] >= PLAY_OFFSET and action < PLAY_OFFSET
    if TRUMP_OFFSET <= action < DISCARD_OFFSET:
        if entering_play:  # six_card: no discard and draw
            show("deal 1: trumps are named (six cards each, no discard and draw)", env.render())
        else:
            show("deal 1: trumps are named", env.render())
    elif entering_play and DISCARD_OFFSET <= action <= DONE_ACTION:
        show("deal 1: after the discard and draw", env.render())
    elif action >= PLAY_OFFSET:
        plays += 1
        if plays == mid_play:
            show("deal 1: in the middle of play", env.render())
    return plays


def print_match_result(
    env: Any, config: PedroConfig, deal_lines: list[str], decisions: int, returns: dict[str, float]
) -> None:
    """Every deal's line, then the match's result and each player's return."""
    print("--- every deal ---")
    print("\n".join(deal_lines))
    print()
    game = env.unwrapped.game
    names = team_names(config)
    played = f"{len(deal_lines)} deal(s), {decisions} decisions"
    scores = ", ".join(f"{name} {int(s)}" for name, s in zip(names, game.scores[0]))
    if game.terminated[0] and game.winner[0] >= 0:
        print(f"Match over after {played}: {names[int(game.winner[0])]} wins. {scores}")
    elif game.terminated[0]:
        print(f"Episode over after {played} (episode='deal'). {scores}")
    else:
        print(f"Match truncated after {played} (max_deals={config.max_deals}). {scores}")
        print("(random bidders overbid and are set almost every deal, so random matches seldom reach the target)")
    returns_text = ", ".join(f"{name} {value:+.3f}" for name, value in returns.items())
    print(f"Return per player (sum of rewards, reward={config.reward!r}): {returns_text}")


def engine_pace(config: PedroConfig, seconds: float = 0.5, games: int = 256, seed: int = 0) -> float:
    """Decisions per second of ``PedroVectorEnv`` of ``games`` games of ``config`` under uniformly random legal play,
    stepped for ``seconds`` after a warm-up step (the random choices timed too)."""
    venv = pedro_env.PedroVectorEnv(games, config, reuse_outputs=True)
    rng = np.random.default_rng(seed)
    out = venv.step(uniform_legal_actions(venv.reset(seed=seed).action_mask, rng))
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        out = venv.step(uniform_legal_actions(out.action_mask, rng))
        steps += 1
    return steps * games / (time.perf_counter() - start)


@one_line_on_interrupt("python -m pedro_env.demo")
def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineErrorParser(
        prog="python -m pedro_env.demo",
        description="Play one seeded Pedro match with uniformly random legal actions, print the table at a few\n"
        "moments of the first deal and a line per deal, then time the batched engine for half a second.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--seed",
        type=seed_argument,
        default=0,
        help="seed of the match and of the random players, 0 to 2**64 - 1 (default 0)",
    )
    parser.add_argument("--no-bench", action="store_true", help="skip timing the engine after the match")
    add_rule_overrides(parser)
    args = parser.parse_args(argv)
    try:
        _, overrides = rule_config(args)  # checked before the match starts printing
    except ConfigError as error:
        parser.error(f"--set: {error}")
    play_match(args.seed, overrides)
    if not args.no_bench:
        pace = engine_pace(make_config(**overrides))
        print(f"\nThe batched engine here: {pace:,.0f} decisions/s (PedroVectorEnv of 256 games, random legal play)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
