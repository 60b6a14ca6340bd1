"""Shared test helpers: scripted decks, random legal play, and a slow plain-Python reference of the rules.

The reference (``ref_*`` functions) is written from docs/rules.md alone, one game at a time with Python ints and
lists, so the tests can check the batched engine against something obviously correct. Cards are ids
``suit * 13 + rank`` (suits C D H S = 0..3, ranks 2..A = 0..12), as in docs/rules.md and pedro_env.actions.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

# A shell starts a background job (`nohup pytest ... &`) with Ctrl-C ignored, and every process the tests start would
# inherit that: the Ctrl-C tests would then see their tools ignore SIGINT. The tests are of a terminal's tools.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

TESTS_DIR = Path(__file__).resolve().parent
CONFORMANCE_FILES = sorted((TESTS_DIR / "conformance").glob("*.json"))

SUIT_LETTERS = "CDHS"
RANK_LETTERS = "23456789TJQKA"
ALL_CARD_NAMES = [rank + suit for suit in SUIT_LETTERS for rank in RANK_LETTERS]
NUM_ACTIONS = 133
HAND_AT_PLAY = 6
TRICKS_PER_DEAL = 6
TOTAL_POINTS = {"cinch": 14, "sancho": 23, "dom": 17, "pitch": 4}

# every value of each rule switch of docs/rules.md section 9 (and the episode keys reward and episode)
SWITCH_VALUES: dict[str, list[Any]] = {
    "num_players": [2, 3, 4],
    "variant": ["cinch", "sancho", "dom", "pitch"],
    "six_card": [False, True],
    "refill": ["maker_sorted", "top", "dealer_robs"],
    "all_pass": ["dealer_forced", "redeal"],
    "low": ["captured", "held"],
    "scoring": ["difference", "simple"],
    "renege": ["forbid", "penalty"],
    "reward": ["points", "win"],
    "episode": ["match", "deal"],
}

# action layout of docs/rules.md / pedro_env.actions, restated here so tests do not lean on engine constants
PASS, TRUMP_BASE, DISCARD_BASE, DONE, PLAY_BASE = 0, 24, 28, 80, 81


def load_vector(path: Path) -> dict[str, Any]:
    """One conformance vector (docs/rules.md section 12)."""
    with open(path) as handle:
        return json.load(handle)


# ---------------------------------------------------------------- cards and decks


def card_id(name: str) -> int:
    """``'5H'`` -> 29 (independent of pedro_env.cards)."""
    return SUIT_LETTERS.index(name[1]) * 13 + RANK_LETTERS.index(name[0])


def card_name(card: int) -> str:
    return RANK_LETTERS[card % 13] + SUIT_LETTERS[card // 13]


def cards_of(card_set: int) -> list[int]:
    """uint64 card set -> sorted card ids."""
    value = int(card_set)
    return [card for card in range(52) if value >> card & 1]


def names_of(card_set: int) -> set[str]:
    return {card_name(card) for card in cards_of(card_set)}


def bitset(cards: Sequence[int]) -> int:
    value = 0
    for card in cards:
        value |= 1 << int(card)
    return value


def popcount(card_set: int) -> int:
    return bin(int(card_set)).count("1")


def build_deck(
    hands: Mapping[int, Sequence[str]], dealer: int, num_players: int, stock: Sequence[str] = ()
) -> list[str]:
    """A 52-card deck (top first) that deals ``hands[seat]`` to every seat (docs/rules.md section 3).

    Packets of 3 go clockwise from eldest = (dealer + 1) % n: eldest gets deck[0:3], the next seat deck[3:6], ...
    The stock is ``stock`` in the given order, then every remaining card in card-id order.
    """
    sizes = {len(cards) for cards in hands.values()}
    assert len(hands) == num_players and len(sizes) == 1, "every seat needs a hand of the same size"
    hand_size = sizes.pop()
    assert hand_size % 3 == 0
    eldest = (dealer + 1) % num_players
    packets = {seat: [list(hands[seat][i : i + 3]) for i in range(0, hand_size, 3)] for seat in range(num_players)}
    deck: list[str] = []
    for round_index in range(hand_size // 3):
        for offset in range(num_players):
            deck += packets[(eldest + offset) % num_players][round_index]
    deck += list(stock)
    deck = [card.upper() for card in deck]
    assert len(set(deck)) == len(deck), f"a card is used twice: {sorted(deck)}"
    deck += [name for name in ALL_CARD_NAMES if name not in deck]
    assert len(deck) == 52
    return deck


# ---------------------------------------------------------------- random play


def random_legal_actions(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(B,) one uniformly drawn legal action per row of a (B, 133) 0/1 mask."""
    mask = np.asarray(mask, dtype=bool)
    assert mask.any(axis=1).all(), "a game has no legal action"
    keys = np.where(mask, rng.random(mask.shape), -1.0)
    return keys.argmax(axis=1)


def acting_legal_strings(env: Any) -> list[str]:
    """Sorted text forms of the acting agent's mask (as the conformance vectors list them)."""
    mask = env.observe(env.agent_selection)["action_mask"]
    return sorted(env.unwrapped.action_to_str(a) for a in np.flatnonzero(mask))


# ---------------------------------------------------------------- the reference rules (docs/rules.md, one game)


def ref_left_pedro(trump: int, variant: str) -> int | None:
    """The 5 of the same-colour suit (C<->S, D<->H), or None in pitch."""
    if variant == "pitch":
        return None
    same_colour = {0: 3, 3: 0, 1: 2, 2: 1}[trump]
    return same_colour * 13 + 3


def ref_is_trump(card: int, trump: int, variant: str) -> bool:
    return card // 13 == trump or card == ref_left_pedro(trump, variant)


def ref_suit(card: int, trump: int, variant: str) -> int:
    """Effective suit: trumps for every trump, else the printed suit."""
    return trump if ref_is_trump(card, trump, variant) else card // 13


def ref_trump_order(trump: int, variant: str) -> list[int]:
    """Trumps high to low: A K Q J T 9 8 7 6 5(right) 5(left) 4 3 2 (no left Pedro in pitch)."""
    order = [trump * 13 + rank for rank in range(12, -1, -1)]
    left = ref_left_pedro(trump, variant)
    if left is not None:
        order.insert(order.index(trump * 13 + 3) + 1, left)
    return order


def ref_card_points(card: int, trump: int, variant: str) -> int:
    """docs/rules.md section 7: High (A) 1, Low (2) 1, Jack 1, Game (T) 1, Pedros 5, sancho 9 = 9, dom 3 = 3."""
    if not ref_is_trump(card, trump, variant):
        return 0
    if card == ref_left_pedro(trump, variant):
        return 5
    rank = RANK_LETTERS[card % 13]
    values = {"A": 1, "2": 1, "J": 1, "T": 1}
    if variant != "pitch":
        values["5"] = 5
    if variant == "sancho":
        values["9"] = 9
    if variant == "dom":
        values["3"] = 3
    return values.get(rank, 0)


def ref_legal_plays(hand: Sequence[int], trump: int, led_card: int | None, variant: str) -> list[int]:
    """docs/rules.md section 6: follow a trump lead with a trump; on another lead follow suit or trump; else any."""
    if led_card is None:
        return sorted(hand)
    led_suit = ref_suit(led_card, trump, variant)
    follows = [c for c in hand if ref_suit(c, trump, variant) == led_suit]
    if not follows:
        return sorted(hand)
    if led_suit == trump:
        return sorted(follows)
    return sorted(set(follows) | {c for c in hand if ref_is_trump(c, trump, variant)})


def ref_trick_winner(trick: Mapping[int, int], leader: int, trump: int, variant: str) -> int:
    """Seat winning a complete trick ``{seat: card}``: the highest trump, else the highest card of the led suit."""
    order = ref_trump_order(trump, variant)
    trumps = {seat: card for seat, card in trick.items() if ref_is_trump(card, trump, variant)}
    if trumps:
        return min(trumps, key=lambda seat: order.index(trumps[seat]))
    led_suit = trick[leader] // 13
    followers = {seat: card for seat, card in trick.items() if card // 13 == led_suit}
    return max(followers, key=lambda seat: followers[seat] % 13)


def ref_legal_actions(state: Any, game: int, config: Any) -> list[int]:
    """The acting seat's legal actions in ``game`` of a PedroState, from docs/rules.md sections 4-6."""
    n = config.num_players
    phase = int(state.phase[game])
    actor = int(state.actor[game])
    dealer = int(state.dealer[game])
    total = TOTAL_POINTS[config.variant]
    if phase == 0:  # bid
        high = int(state.high_bid[game])
        bids = [value for value in range(max(config.min_bid, high + 1), total + 1)]
        forced = config.all_pass == "dealer_forced" and actor == dealer and high == 0
        return ([] if forced else [PASS]) + bids
    if phase == 1:  # trump
        return [TRUMP_BASE + suit for suit in range(4)]
    hand = cards_of(state.hands[game, actor])
    if phase == 2:  # discard
        held = len(hand)
        if bool(state.robbing[game]):
            return [DISCARD_BASE + c for c in hand if held > HAND_AT_PLAY] + ([DONE] if held == HAND_AT_PLAY else [])
        reserved = sum(HAND_AT_PLAY - popcount(state.hands[game, s]) for s in range(n) if state.done[game, s])
        stock_left = int(np.count_nonzero(state.in_stock[game]))
        may_discard = reserved + (HAND_AT_PLAY - (held - 1)) <= stock_left
        return [DISCARD_BASE + c for c in hand if may_discard] + ([DONE] if held <= HAND_AT_PLAY else [])
    if phase == 3:  # play
        leading = int(state.trick_size[game]) == 0
        led = None if leading else int(state.trick[game, int(state.trick_leader[game])])
        return [PLAY_BASE + c for c in ref_legal_plays(hand, int(state.trump[game]), led, config.variant)]
    return []


def ref_match_winner(scores: Sequence[int], target: int, maker_team: int, made: bool) -> int:
    """docs/rules.md section 8; -1 while the match goes on."""
    reached = [team for team, score in enumerate(scores) if score >= target]
    if len(reached) == 1:
        return reached[0]
    if not reached:
        return -1
    if maker_team in reached and made:
        return maker_team
    others = [team for team in reached if team != maker_team]
    if not others:
        return -1
    best = max(scores[team] for team in others)
    leaders = [team for team in others if scores[team] == best]
    return leaders[0] if len(leaders) == 1 else -1


def ref_score_deal(points: Sequence[int], maker_team: int, bid: int, scoring: str) -> tuple[bool, list[int]]:
    """docs/rules.md section 7: (made, delta per team)."""
    made = points[maker_team] >= bid
    if not made:
        return False, [-bid if team == maker_team else points[team] for team in range(len(points))]
    if scoring == "simple":
        return True, list(points)
    assert len(points) == 2
    lead = points[0] - points[1]
    return True, [max(lead, 0), max(-lead, 0)]


REPO_ROOT = Path(__file__).resolve().parents[1]


def module_env() -> dict[str, str]:
    """This process's environment with the repository on PYTHONPATH, for ``python -m`` subprocesses."""
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT)}


def run_python(
    *arguments: str,
    stdin: str | None = None,
    cwd: Path | None = None,
    timeout: float = 600,
    memory_bytes: int | None = None,
) -> subprocess.CompletedProcess[str]:
    """``python ARGUMENTS`` with the repository on PYTHONPATH; stdin given as text, output captured; with
    ``memory_bytes`` the child's address space is capped there (RLIMIT_AS), so a case without bound fails fast."""

    def limit_memory() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))

    return subprocess.run(
        [sys.executable, *arguments],
        input=stdin,
        capture_output=True,
        text=True,
        env=module_env(),
        cwd=cwd,
        timeout=timeout,
        preexec_fn=limit_memory if memory_bytes is not None else None,
    )


def run_module(
    module: str, *args: str, stdin: str | None = None, cwd: Path | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """``python -m MODULE ARGS`` (:func:`run_python`)."""
    return run_python("-m", module, *args, stdin=stdin, cwd=cwd, timeout=timeout)


def start_module(module: str, *args: str, cwd: Path | None = None, text: bool = False) -> subprocess.Popen:
    """``python -m MODULE ARGS`` started in the background (repository on PYTHONPATH), stdout and stderr piped."""
    return subprocess.Popen(
        [sys.executable, "-m", module, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=text,
        env=module_env(),
        cwd=cwd,
    )


@contextlib.contextmanager
def killed_on_failure(process: Any, group: bool = False) -> Iterator[None]:
    """Kill ``process`` (its whole session with ``group``: a launcher, torchrun and the ranks) where the block fails,
    so that a run left training does not slow the tests after it into failures of their own; the failure then
    carries what it wrote to stderr."""
    try:
        yield
    except BaseException as error:
        if process.poll() is None:
            if group:
                os.killpg(process.pid, signal.SIGKILL)
            else:
                process.kill()
        _, err = process.communicate()
        if hasattr(error, "add_note"):  # Python 3.11 on
            error.add_note(f"its stderr: {err}")
        raise


# ---------------------------------------------------------------- a tiny training run


def tiny_config(**overrides: object) -> Any:
    """A training config of a few updates on a tiny batch (train.config.make_train_config with ``overrides``)."""
    from train.config import make_train_config

    values = {
        "total_decisions": 4 * 32 * 16,
        "num_envs": 32,
        "rollout_steps": 16,
        "hidden_sizes": [32],
        "update_epochs": 2,
        "num_minibatches": 2,
        "opponent_share": 0.5,
        "baseline_opponents": ["rule:heuristic"],
        "league_size": 2,
        "league_interval": 1024,
        "eval_interval": 1024,
        "eval_opponents": ["random"],
        "eval_partners": False,
        "eval_league": 0,
        "eval_pairs": 2,
        "final_eval_pairs": 0,
        "checkpoint_interval": 1024,
        "torch_threads": 1,
        "env": {"target_score": 11},
    }
    values.update(overrides)
    return make_train_config(**values)


def whole_and_resumed(config: Any, tmp_path: Path) -> tuple[Any, Any]:
    """``config`` trained whole, and apart stopped after two updates and resumed from its checkpoint: the two
    trainers (train.run.run_training's), checked to end at ``total_decisions`` with equal networks."""
    import torch

    from agents.checkpoint import load_checkpoint
    from train.run import run_training

    whole = run_training(config, tmp_path / "whole", progress=False)
    first = run_training(config, tmp_path / "split", progress=False, max_updates=2)
    assert first.decisions < config.total_decisions
    resumed = run_training(config, tmp_path / "split", load_checkpoint(tmp_path / "split"), progress=False)
    assert resumed.decisions == whole.decisions == config.total_decisions
    for name, tensor in whole.network.state_dict().items():
        assert torch.equal(tensor, resumed.network.state_dict()[name]), name
    return whole, resumed


# ---------------------------------------------------------------- a weak agent for the harness tests


class PassingAgent:
    """Passes whenever it may (bids the minimum when forced), then plays its first legal action: a weak agent
    (an :class:`agents.base.Agent` by duck typing, so this module need not import the package)."""

    name = "test:passing"

    def __init__(self, config: Any) -> None:
        self.config = config

    def act(self, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return np.argmax(action_masks, axis=1).astype(np.int64)


@pytest.fixture
def passing_spec(monkeypatch: pytest.MonkeyPatch) -> str:
    """Registers PassingAgent as the spec ``test:passing`` (in this process only)."""
    import agents

    monkeypatch.setitem(agents.REGISTRY, "test", {"passing": "conftest:PassingAgent"})
    return "test:passing"
