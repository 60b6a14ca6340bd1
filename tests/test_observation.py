"""Observations: nothing hidden leaks (docs/rules.md section 10), the fast encoder equals a slow reference built from
the layout table in pedro_env/encoding.py, and observation_scale keeps entries small."""

from __future__ import annotations

from collections import Counter
from functools import cache
from typing import Any

import numpy as np
import pytest

import pedro_env
from pedro_env.cards import RuleTables
from pedro_env.config import make_config
from pedro_env.encoding import ObservationEncoder
from pedro_env.observation_layout import (
    OBSERVATION_SIZE,
    RULE_SWITCHES,
    observation_offsets,
    observation_scale,
    piece_slices,
)
from pedro_env.state import PedroState

from conftest import PASS, TOTAL_POINTS, cards_of, random_legal_actions, ref_card_points

BID, TRUMP, DISCARD, PLAY, OVER = 0, 1, 2, 3, 4

STATE_CONFIGS: dict[str, dict[str, Any]] = {
    "four-players": {"target_score": 21},
    "four-players-dealer-robs-sancho": {"refill": "dealer_robs", "variant": "sancho", "target_score": 21},
    "three-players": {"num_players": 3, "scoring": "simple", "target_score": 21, "variant": "dom"},
    "three-players-robs": {"num_players": 3, "scoring": "simple", "refill": "dealer_robs", "target_score": 21},
    "two-players": {"num_players": 2, "target_score": 21, "variant": "pitch", "refill": "top"},
    "two-players-six-card": {"num_players": 2, "six_card": True, "target_score": 21},
}


def encoder_for(config: Any) -> ObservationEncoder:
    return ObservationEncoder(config, RuleTables.build(config.variant))


def pass_heavy_actions(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Random legal actions that pass 60% of the time a pass is legal (so bids stay low and matches end)."""
    actions = random_legal_actions(mask, rng)
    return np.where((mask[:, PASS] == 1) & (rng.random(mask.shape[0]) < 0.6), PASS, actions)


# chance of keeping a state of each phase: the one-step trump phase is kept often, long phases rarely
KEEP_PROBABILITY = np.array([0.08, 0.6, 0.08, 0.06, 0.0])


@cache
def sampled_states(name: str, num_envs: int = 4, steps: int = 400) -> tuple[Any, tuple[PedroState, ...]]:
    """(config, single-game states) snapshotted from random play, every phase included."""
    venv = pedro_env.PedroVectorEnv(num_envs, **STATE_CONFIGS[name])
    rng = np.random.default_rng(len(name))
    out = venv.reset(seed=len(name))
    states = []
    for _ in range(steps):
        keep = rng.random(num_envs) < KEEP_PROBABILITY[venv.state.phase]
        states += [venv.state.select(np.array([game])) for game in np.flatnonzero(keep)]
        out = venv.step(pass_heavy_actions(out.action_mask, rng))
    phases = Counter(int(state.phase[0]) for state in states)
    assert all(phases[phase] >= 5 for phase in (BID, TRUMP, PLAY)), phases
    assert venv.config.six_card or phases[DISCARD] >= 5, phases
    if venv.config.refill == "dealer_robs":
        assert sum(bool(state.robbing[0]) for state in states) >= 3
    return venv.config, tuple(states)


def finished_state(config: dict[str, Any], seed: int) -> tuple[Any, PedroState]:
    """A state whose episode is over (phase OVER), from the AEC env."""
    env = pedro_env.env(**config)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    while not (any(env.terminations.values()) or any(env.truncations.values())):
        mask = env.observe(env.agent_selection)["action_mask"]
        env.step(int(pass_heavy_actions(mask[None], rng)[0]))
    return env.unwrapped.config, env.unwrapped.game.copy()


# ---------------------------------------------------------------- the slow reference encoder


def reference_pieces(state: PedroState, viewer: int, config: Any) -> list[tuple[str, list[int]]]:
    """The observation of ``viewer`` for game 0 of ``state``, piece by piece, straight from the layout table: seat
    pieces of 4 blocks, team pieces of 3, bid blocks of 25 (the largest total points, 23, plus 2), 0s where the
    config has no such seat, team or bid."""
    n, teams, total = config.num_players, config.num_teams, TOTAL_POINTS[config.variant]
    seat_at = [(viewer + r) % n for r in range(n)]  # relative seat -> absolute seat
    my_team = viewer % teams
    team_at = [(my_team + r) % teams for r in range(teams)]  # relative team -> absolute team
    phase = int(state.phase[0])
    trump = int(state.trump[0])

    def card_flags(card_set: int) -> list[int]:
        members = set(cards_of(card_set))
        return [int(card in members) for card in range(52)]

    def one_hot(size: int, index: int | None) -> list[int]:
        return [int(i == index) for i in range(size)]

    def seats(values: list[int], width: int = 1) -> list[int]:
        return values + [0] * (width * (4 - n))

    def teams_of(values: list[int], width: int = 1) -> list[int]:
        return values + [0] * (width * (3 - teams))

    def relative(seat: int) -> int | None:
        return None if seat < 0 else (seat - viewer) % n

    trick_cards = 0
    for seat in range(n):
        if state.trick[0, seat] >= 0:
            trick_cards |= 1 << int(state.trick[0, seat])
    bids: list[int] = []
    for seat in seat_at:
        bid = int(state.bids[0, seat])  # -1 not yet spoken, 0 passed, k bid k
        bids += one_hot(25, bid + 1)
    assert total + 2 <= 25
    points = []  # nothing is won before trumps are named
    for team in team_at:
        won = cards_of(state.won[0, team]) if trump >= 0 else []
        points.append(sum(ref_card_points(card, trump, config.variant) for card in won))
    rules = [int(getattr(config, key) == value) for key, value in RULE_SWITCHES] + [config.min_bid]
    return [
        ("hand", card_flags(state.hands[0, viewer])),
        ("open_draws", card_flags(state.open_draws[0])),
        ("discards", seats(sum((card_flags(state.discards[0, s]) for s in seat_at), []), 52)),
        ("set_aside", card_flags(state.set_aside[0])),
        ("played", seats(sum((card_flags(state.played[0, s]) for s in seat_at), []), 52)),
        ("trick", card_flags(trick_cards)),
        ("won", teams_of(sum((card_flags(state.won[0, t]) for t in team_at), []), 52)),
        ("phase", one_hot(4, phase if phase < 4 else None)),
        ("dealer", seats(one_hot(n, relative(int(state.dealer[0]))))),
        ("bids", seats(bids, 25)),
        ("maker", seats(one_hot(n, relative(int(state.maker[0])) if state.maker[0] >= 0 else None))),
        ("trump", one_hot(4, trump if trump >= 0 else None)),
        ("done", seats([int(state.done[0, s]) for s in seat_at])),
        ("drawn", seats([int(state.drawn[0, s]) for s in seat_at])),
        ("hand_sizes", seats([len(cards_of(state.hands[0, s])) for s in seat_at])),
        ("stock_left", [int(np.count_nonzero(state.in_stock[0]))]),
        ("robbing", [int(bool(state.robbing[0]))]),
        ("trick_leader", seats(one_hot(n, relative(int(state.trick_leader[0])) if phase == PLAY else None))),
        ("voids", seats(sum(([int(state.voids[0, s]) >> suit & 1 for suit in range(4)] for s in seat_at), []), 4)),
        ("tricks_done", [int(state.tricks_done[0])]),
        ("points", teams_of(points)),
        (
            "to_go",
            teams_of(
                [
                    min(max(config.target_score - int(state.scores[0, t]), 0), 2 * config.target_score, 255)
                    for t in team_at
                ]
            ),
        ),
        ("target", [min(config.target_score, 255)]),
        ("rules", rules),
    ]


def compare_with_reference(config: Any, state: PedroState, skip: tuple[str, ...] = ()) -> None:
    encoder = encoder_for(config)
    offsets = piece_slices()
    for viewer in range(config.num_players):
        fast = encoder.encode(state, np.array([viewer]))[0]
        pieces = reference_pieces(state, viewer, config)
        assert list(offsets) == [name for name, _ in pieces]
        assert fast.size == sum(len(values) for _, values in pieces)
        for name, values in pieces:
            if name in skip:
                continue
            assert list(fast[offsets[name]]) == values, f"piece {name!r}, viewer {viewer}, phase {int(state.phase[0])}"


def test_layout_offsets_follow_the_table() -> None:
    offsets = piece_slices()
    sizes = {name: piece.stop - piece.start for name, piece in offsets.items()}
    assert sizes == {
        "hand": 52,
        "open_draws": 52,
        "discards": 208,
        "set_aside": 52,
        "played": 208,
        "trick": 52,
        "won": 156,
        "phase": 4,
        "dealer": 4,
        "bids": 100,
        "maker": 4,
        "trump": 4,
        "done": 4,
        "drawn": 4,
        "hand_sizes": 4,
        "stock_left": 1,
        "robbing": 1,
        "trick_leader": 4,
        "voids": 16,
        "tricks_done": 1,
        "points": 3,
        "to_go": 3,
        "target": 1,
        "rules": 16,
    }
    starts = [piece.start for piece in offsets.values()]
    assert starts == sorted(starts) and starts[0] == 0
    assert all(a.stop == b.start for a, b in zip(list(offsets.values()), list(offsets.values())[1:]))
    assert list(offsets.values())[-1].stop == OBSERVATION_SIZE == 954


@pytest.mark.parametrize(
    "rules", [{}, {"num_players": 3, "scoring": "simple"}, {"num_players": 2, "variant": "sancho", "six_card": True}]
)
def test_every_config_has_one_size_and_fills_its_first_blocks(rules: dict[str, Any]) -> None:
    """Every env has the one size; a config's offsets are the first blocks of each piece (its seats and teams)."""
    config = make_config(**rules)
    env = pedro_env.env(**rules)
    assert env.observation_space("player_0")["observation"].shape == (OBSERVATION_SIZE,)
    for name, used in observation_offsets(config).items():
        whole = piece_slices()[name]
        assert used.start == whole.start and used.stop <= whole.stop


@pytest.mark.parametrize("name", list(STATE_CONFIGS))
def test_fast_encoder_equals_reference(name: str) -> None:
    config, states = sampled_states(name)
    for state in states:
        compare_with_reference(config, state)


@pytest.mark.parametrize("name", ["four-players", "three-players"])
def test_maker_piece_follows_the_high_bidder(name: str) -> None:
    """Docstring: "maker: one-hot relative seat of the high bidder so far (the maker once bidding ends)"."""
    config, states = sampled_states(name)
    offsets = observation_offsets(config)
    encoder = encoder_for(config)
    bidding = [s for s in states if int(s.phase[0]) == BID]
    assert any(s.high_bid[0] > 0 for s in bidding) and any(s.high_bid[0] == 0 for s in bidding)
    for state in bidding:
        for viewer in range(config.num_players):
            maker = encoder.encode(state, np.array([viewer]))[0][offsets["maker"]]
            if state.high_bid[0] == 0:
                assert not maker.any()
            else:
                assert maker.sum() == 1 and maker[(int(state.maker[0]) - viewer) % config.num_players] == 1


@pytest.mark.parametrize(
    "config",
    [
        {"target_score": 5},
        {"num_players": 2, "target_score": 5},
        {"episode": "deal"},
        {"max_deals": 1, "num_players": 3, "scoring": "simple"},
    ],
)
def test_finished_episode_observation(config: dict[str, Any]) -> None:
    resolved, state = finished_state(config, seed=2)
    assert int(state.phase[0]) == OVER
    # the trick leader after the last trick is checked on its own below
    compare_with_reference(resolved, state, skip=("trick_leader",))


def test_trick_leader_piece_is_zero_once_the_episode_is_over() -> None:
    """Docstring: "trick_leader: one-hot relative seat that led the current trick (0s outside play)"."""
    config, state = finished_state({"episode": "deal"}, seed=2)
    assert int(state.phase[0]) == OVER
    offsets = observation_offsets(config)
    for viewer in range(config.num_players):
        assert not encoder_for(config).encode(state, np.array([viewer]))[0][offsets["trick_leader"]].any()


# ---------------------------------------------------------------- leaks


def hidden_cards(state: PedroState, viewer: int, config: Any) -> list[int]:
    """Cards ``viewer`` cannot see: other hands (less the maker's face-up draws) and the cards still in the stock."""
    public = int(state.open_draws[0])
    unseen = set()
    for seat in range(config.num_players):
        if seat != viewer:
            unseen |= set(cards_of(int(state.hands[0, seat]) & ~public))
    unseen |= {int(card) for card, present in zip(state.stock[0], state.in_stock[0]) if present}
    return sorted(unseen)


def relabel(state: PedroState, mapping: dict[int, int], config: Any, seats: list[int]) -> PedroState:
    """A copy with every card in ``mapping`` renamed, in the hands of ``seats`` and the stock; the hidden
    ``low_team`` is recomputed so the copy stays a consistent game."""
    changed = state.copy()
    for seat in seats:
        cards = cards_of(changed.hands[0, seat])
        changed.hands[0, seat] = np.uint64(sum(1 << mapping.get(c, c) for c in cards))
    changed.stock[0] = [mapping.get(int(c), int(c)) for c in changed.stock[0]]
    trump = int(changed.trump[0])
    if int(changed.phase[0]) == PLAY:
        low = trump * 13
        holders = [
            s for s in range(config.num_players) if (int(changed.hands[0, s]) | int(changed.played[0, s])) >> low & 1
        ]
        changed.low_team[0] = holders[0] % config.num_teams if holders else -1
    return changed


@pytest.mark.parametrize("name", list(STATE_CONFIGS))
def test_hidden_cards_do_not_change_the_observation(name: str) -> None:
    config, states = sampled_states(name)
    encoder = encoder_for(config)
    rng = np.random.default_rng(11)
    swaps = own_changes = 0
    for state in states:
        for viewer in range(config.num_players):
            before = encoder.encode(state, np.array([viewer]))[0]
            unseen = hidden_cards(state, viewer, config)
            others = [s for s in range(config.num_players) if s != viewer]
            if len(unseen) >= 2:
                permuted = rng.permutation(unseen)
                mapping = {int(a): int(b) for a, b in zip(unseen, permuted)}
                changed = relabel(state, mapping, config, others)
                swaps += any(a != b for a, b in mapping.items())
                after = encoder.encode(changed, np.array([viewer]))[0]
                assert np.array_equal(before, after), f"viewer {viewer} sees hidden cards, phase {int(state.phase[0])}"
            own = cards_of(state.hands[0, viewer])
            if unseen and own:
                mine, theirs = own[int(rng.integers(len(own)))], unseen[int(rng.integers(len(unseen)))]
                changed = relabel(state, {mine: theirs, theirs: mine}, config, list(range(config.num_players)))
                after = encoder.encode(changed, np.array([viewer]))[0]
                assert not np.array_equal(before, after), "the viewer's own hand is not in its observation"
                own_changes += 1
    assert swaps > 50 and own_changes > 50


def test_leak_check_notices_a_leaky_encoder() -> None:
    """The swap test can fail: observations that add the left neighbour's hand, or the stock, change under it."""
    config, states = sampled_states("four-players")
    encoder = encoder_for(config)
    rng = np.random.default_rng(5)
    noticed = Counter[str]()
    for state in states[:60]:
        unseen = hidden_cards(state, 0, config)
        if len(unseen) < 2:
            continue
        changed = relabel(state, dict(zip(unseen, rng.permutation(unseen).tolist())), config, [1, 2, 3])
        for name, leak in (
            ("left hand", lambda s: int(s.hands[0, 1])),
            ("stock", lambda s: tuple(s.stock[0][s.in_stock[0]].tolist())),
        ):
            before = (encoder.encode(state, np.array([0]))[0].tobytes(), leak(state))
            after = (encoder.encode(changed, np.array([0]))[0].tobytes(), leak(changed))
            noticed[name] += before != after
    assert noticed["left hand"] > 20 and noticed["stock"] > 10, noticed


# ---------------------------------------------------------------- scale


SCALE_CONFIGS = {
    "default": {},
    "target-100": {"target_score": 100},
    "two-players-dealer-robs": {"num_players": 2, "refill": "dealer_robs"},
    "three-players-dealer-robs": {"num_players": 3, "scoring": "simple", "refill": "dealer_robs"},
    "four-players-dealer-robs": {"refill": "dealer_robs"},
}


@pytest.mark.parametrize("name", list(SCALE_CONFIGS))
def test_observation_scale_keeps_entries_small(name: str) -> None:
    venv = pedro_env.PedroVectorEnv(32, **SCALE_CONFIGS[name])
    scale = observation_scale(venv.config)
    assert scale.shape == (venv.observation_size,) and np.all(scale > 0)
    offsets = observation_offsets(venv.config)
    rng = np.random.default_rng(0)
    out = venv.reset(seed=0)
    largest = np.zeros(venv.observation_size, dtype=np.float32)
    for _ in range(1500):
        out = venv.step(random_legal_actions(out.action_mask, rng))
        largest = np.maximum(largest, (out.observation.astype(np.float32) * scale).max(axis=0))
    too_big = {
        piece: round(float(largest[where].max()), 2) for piece, where in offsets.items() if largest[where].max() > 1.5
    }
    assert not too_big, f"scaled entries above 1.5: {too_big}"
