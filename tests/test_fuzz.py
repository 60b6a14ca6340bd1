"""Seeded fuzzing of every entry point that takes outside input: configs, seeds, reset options (decks, dealer),
action streams (AEC env and PedroVectorEnv) and replay records. Deterministic (fixed seeds, no hypothesis).

The documented errors, each with a non-empty one-line message, are the only exceptions allowed:

=========================  ==================================================================================
entry point                raises
=========================  ==================================================================================
``make_config``, env init  ConfigError (a ValueError); ValueError for ``render_mode`` and ``num_envs``
seeds (``reset``,          SeedError (a ValueError and a TypeError): an int 0..2**64 - 1, or 0..2**64 - B for
``restart``)               a vector env of B games
AEC ``reset`` options      ValueError (dealer, decks, options not a dict)
AEC ``step`` / ``observe`` IllegalActionError (a ValueError), ValueError (unreadable text, an action other than
                           None for a finished agent), RuntimeError (before ``reset``, after the episode)
vector ``step``/restart    IllegalActionError, ValueError, SeedError; RuntimeError before ``reset``
replay records             ReplayError (a ValueError) from ``MatchRecord.from_dict``/``load``/``replay_match``;
                           ``pedro-replay``: status 2 and one line on stderr
=========================  ==================================================================================

An illegal action leaves the env as it was. Over 10,000 generated cases in all (``CASES`` below).
"""

from __future__ import annotations

import copy
import json
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pedro_env
from arena.replay import MatchRecord, ReplayError, main, record_from_env, replay_match
from pedro_env.aec import raw_env
from pedro_env.config import ALLOWED_VALUES, ConfigError, PedroConfig, SeedError, make_config
from pedro_env.vector import IllegalActionError, PedroVectorEnv

from conftest import ALL_CARD_NAMES, TOTAL_POINTS

# generated cases per test (test_every_junk_value_in_every_record_field adds about 1,300 more)
CASES = {"configs": 4000, "decks": 1500, "aec actions": 3000, "vector actions": 600, "records": 1200, "files": 120}

NOT_JSON = object()  # marks junk that json cannot write
JUNK: list[Any] = [
    None,
    True,
    False,
    -1,
    0,
    1,
    2,
    3,
    4,
    7,
    52,
    133,
    2**31,
    2**63,
    2**64 - 1,
    2**64,
    10**30,
    -(10**30),
    1.5,
    2.0,
    float("nan"),
    float("inf"),
    "",
    "4",
    "cinch",
    "pass",
    "AH",
    "\x1b[31m",
    "x" * 300,
    [],
    [1],
    [None, "a"],
    {},
    {"a": 1},
    np.int64(2),
    np.uint64(3),
    np.float32(1.0),
    np.bool_(True),
    np.array([1, 2]),
    np.zeros((2, 2)),
    b"pass",
    (1, 2),
    {1, 2},
    object(),
]


def pick(rng: np.random.Generator, items: list[Any]) -> Any:
    return items[int(rng.integers(len(items)))]


def assert_documented(error: BaseException, allowed: tuple[type[BaseException], ...]) -> None:
    """A documented error type with a non-empty one-line message."""
    assert isinstance(error, allowed), f"{type(error).__name__}: {error}"
    message = str(error)
    assert message and "\n" not in message, f"not one line: {message!r}"


# ---------------------------------------------------------------- seeds and calls out of order (one by one)


@pytest.mark.parametrize("seed", [2**64, 2**70, -1, "7", 1.5, True, np.int64(-3), b"7", [1]])
def test_a_bad_seed_is_refused_with_the_allowed_range(seed: Any) -> None:
    for reset in (raw_env().reset, PedroVectorEnv(2).reset):
        with pytest.raises(SeedError) as caught:
            reset(seed=seed)
        assert "0 to 2**64 -" in str(caught.value) and isinstance(caught.value, (ValueError, TypeError))


def test_seeds_cover_exactly_the_uint64_range_and_accept_numpy_ints() -> None:
    top = raw_env()
    top.reset(seed=2**64 - 1)
    zero, seventy = raw_env(), raw_env()
    zero.reset(seed=0)
    with pytest.raises(SeedError):
        seventy.reset(seed=2**70)  # once silently the same match as seed 0
    for seed in (np.uint64(2**64 - 1), np.int64(5), np.uint8(7)):
        env = raw_env()
        env.reset(seed=seed)
        assert env._seed == int(seed)
    assert top.deck_of_deal(0) != zero.deck_of_deal(0)


def test_the_vector_env_keeps_every_game_seed_in_range() -> None:
    """Game i is seeded seed + i, so the base seed goes up to 2**64 - num_envs and no game wraps to seed 0."""
    venv = PedroVectorEnv(3)
    venv.reset(seed=2**64 - 3)
    assert venv.state is not None and venv.state.seed.tolist() == [2**64 - 3, 2**64 - 2, 2**64 - 1]
    with pytest.raises(SeedError, match=r"2\*\*64 - 3"):
        venv.reset(seed=2**64 - 2)
    venv.restart(np.array([1]), np.array([2**64 - 1], dtype=np.uint64), np.array([2]))
    for games, seeds, dealers in [
        ([0], [-1], None),
        ([0], [1.5], None),
        ([0], [2**64], None),
        ([0], ["1"], None),
        ([0, 1], [1], None),
        ([3], [1], None),
        ([0, 0], [1, 2], None),
        ([0], [1], [4]),
        ([[0]], [1], None),
        ([0.0], [1], None),
    ]:
        with pytest.raises(ValueError):
            venv.restart(np.array(games), seeds, dealers)


def test_a_raw_env_used_before_reset_says_so() -> None:
    env = raw_env()
    for call in (lambda: env.step(0), lambda: env.observe("player_0"), lambda: env.last(), env.state):
        with pytest.raises(RuntimeError, match=r"call reset\(\) before"):
            call()


def test_stepping_after_every_agent_left_says_the_episode_is_over() -> None:
    env = raw_env(target_score=1, max_deals=1)
    env.reset(seed=1)
    while env.agents:
        dead = env.terminations[env.agent_selection] or env.truncations[env.agent_selection]
        env.step(None if dead else env.legal_actions()[0])
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step(None)
    env.reset(seed=1)
    env.step(env.legal_actions()[0])


# ---------------------------------------------------------------- configs


def valid_values(key: str) -> list[Any]:
    allowed = ALLOWED_VALUES[key]
    if isinstance(allowed, tuple):
        return list(allowed)
    values = {"target_score": [1, 11, 62, 10_000, np.int32(21)], "min_bid": [1, 4, 6], "max_deals": [1, 5, 200, 10**6]}
    return values[key]


def config_is_valid(overrides: dict[str, Any]) -> bool:
    """An independent statement of the config rules (docs/rules.md section 9)."""
    defaults = {field: getattr(PedroConfig(), field) for field in ALLOWED_VALUES}
    if set(overrides) - set(defaults):
        return False
    values = {**defaults, **overrides}
    for key, value in values.items():
        if isinstance(value, (bool, np.bool_)) != (key == "six_card"):
            return False
        allowed = ALLOWED_VALUES[key]
        if isinstance(allowed, tuple):
            if not isinstance(value, (str, int, np.integer)) or value not in allowed:
                return False
        elif not isinstance(value, (int, np.integer)) or value < 1:
            return False
    if values["target_score"] > 10_000 or values["max_deals"] > 1_000_000:
        return False
    if values["min_bid"] > TOTAL_POINTS[values["variant"]]:
        return False
    if values["num_players"] == 3 and values["scoring"] != "simple":
        return False
    return not (values["reward"] == "win" and values["episode"] == "deal")


def random_overrides(rng: np.random.Generator) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    for key in ALLOWED_VALUES:
        if rng.random() < 0.3:
            overrides[key] = pick(rng, valid_values(key)) if rng.random() < 0.75 else pick(rng, JUNK)
    if rng.random() < 0.05:
        overrides[pick(rng, ["players", "Variant", "seed", "render_mode_", "x" * 80])] = 1
    return overrides


def test_fuzz_configs() -> None:
    rng = np.random.default_rng(1)
    accepted = 0
    for case in range(CASES["configs"]):
        overrides = random_overrides(rng)
        expected = config_is_valid(overrides)
        builders: list[Callable[..., Any]] = [make_config]
        if case % 40 == 0:  # building envs is slower: a sample
            builders += [raw_env, lambda **kw: PedroVectorEnv(2, **kw)]
        for build in builders:
            try:
                built = build(**overrides)
            except ConfigError as error:
                assert_documented(error, (ConfigError,))
                assert not expected, f"{overrides} refused: {error}"
                continue
            assert expected, f"{overrides} accepted"
            accepted += 1
            config = built if isinstance(built, PedroConfig) else built.config
            assert all(type(getattr(config, key)) in (int, str, bool) for key in ALLOWED_VALUES)
    assert accepted > CASES["configs"] // 10
    for junk in JUNK:  # the base config itself
        if junk is not None:
            with pytest.raises(ConfigError):
                make_config(junk)


# ---------------------------------------------------------------- decks, dealer, seed, options of the AEC reset


def card_name_of(card: Any) -> str | None:
    """The canonical name of a deck entry (a card string in any case, ``10`` for ``T``, or an id 0..51), else None."""
    if isinstance(card, str):
        name = card.strip().upper()
        name = "T" + name[2:] if name.startswith("10") else name
        return name if name in ALL_CARD_NAMES else None
    if isinstance(card, (int, np.integer)) and not isinstance(card, bool) and 0 <= card < 52:
        return ALL_CARD_NAMES[int(card)]
    return None


def deck_names(deck: Any) -> list[str] | None:
    """The 52 canonical names of a valid deck, else None."""
    if not isinstance(deck, (list, tuple, np.ndarray)):
        return None
    names = [card_name_of(card) for card in deck]
    return names if None not in names and len(names) == 52 and len(set(names)) == 52 else None  # type: ignore[return-value]


def random_deck(rng: np.random.Generator) -> Any:
    """A deck in one of its accepted forms, often corrupted."""
    order = rng.permutation(52)
    form = int(rng.integers(5))
    if form == 4:
        return np.array([ALL_CARD_NAMES[card] for card in order]) if rng.random() < 0.5 else order
    spellings: list[Callable[[int], Any]] = [
        lambda card: ALL_CARD_NAMES[card],
        lambda card: ALL_CARD_NAMES[card].lower().replace("t", "10"),  # lower case and 10 are accepted too
        int,
        np.int16,
    ]
    cards: list[Any] = [spellings[form](int(card)) for card in order]
    corruption = int(rng.integers(8))
    position = int(rng.integers(52))
    if corruption == 0:
        cards.pop(position)
    elif corruption == 1:
        cards.append(pick(rng, cards))
    elif corruption == 2:
        cards[position] = pick(rng, cards)
    elif corruption == 3:
        cards[position] = pick(rng, ["ZZ", "", "1H", "AHH", "A", "\x00", "11C", " ", "A\x1bH", " ah "])
    elif corruption == 4:
        cards[position] = pick(rng, JUNK)
    elif corruption == 5:
        cards = cards[:position]
    elif corruption == 6:
        return tuple(cards)
    return cards


def is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def is_seed(seed: Any) -> bool:
    return is_int(seed) and 0 <= seed < 2**64


def test_fuzz_reset_decks_dealer_seed_and_options() -> None:
    rng = np.random.default_rng(2)
    envs = {players: raw_env(num_players=players, scoring="simple") for players in (2, 3, 4)}
    for env in envs.values():
        env.reset(seed=0)  # so that a later reset(seed=None), the next match of this seed, is deterministic
    successes = 0
    for _ in range(CASES["decks"]):
        players = pick(rng, [2, 3, 4])
        env = envs[players]
        decks: Any = [random_deck(rng) for _ in range(int(rng.integers(4)))]
        names = [deck_names(deck) for deck in decks]
        valid = None not in names
        options: Any = {"decks": decks}
        if rng.random() < 0.5:
            options["dealer"] = dealer = pick(rng, [0, players - 1, np.int8(1)] + JUNK)
            valid &= dealer is None or (is_int(dealer) and 0 <= dealer < players)  # None: drawn from the seed
        seed = pick(rng, [0, 5, 2**64 - 1, np.uint64(9)] + JUNK) if rng.random() < 0.3 else 0
        valid &= seed is None or is_seed(seed)
        roll = rng.random()
        if roll < 0.05:
            options, valid = pick(rng, [[1], "dealer", 3, ("decks",)]), False
        elif roll < 0.1:
            options["decks"] = pick(rng, ["AH KH", 5, {"a": 1}, b"AH", np.int64(3)])
            valid = False
        try:
            env.reset(seed=seed, options=options)
        except ValueError as error:  # SeedError included
            assert_documented(error, (ValueError,))
            assert not valid, f"refused: {error}"
            continue
        assert valid, f"accepted {options} with seed {seed!r}"
        successes += 1
        for number, deck in enumerate(names):
            assert env.deck_of_deal(number) == deck
        if options.get("dealer") is not None:
            assert env.first_dealer == options["dealer"]
    assert successes > CASES["decks"] // 10


# ---------------------------------------------------------------- action streams


def fuzz_configs(rng: np.random.Generator, count: int) -> list[PedroConfig]:
    """Valid configs of short matches, every rule option somewhere among them."""
    configs = []
    while len(configs) < count:
        overrides = {key: pick(rng, valid_values(key)) for key in ALLOWED_VALUES if rng.random() < 0.5}
        overrides.update(target_score=int(rng.integers(1, 12)), max_deals=int(rng.integers(1, 4)))
        if config_is_valid(overrides):
            configs.append(make_config(**overrides))
    return configs


def junk_action(rng: np.random.Generator, legal: list[int]) -> Any:
    """Mostly something other than a legal action: an illegal index, or not an index at all."""
    illegal = [action for action in range(133) if action not in legal]
    texts = ["fold", "bid 99", "play ZZ", "trump X", "", "bid", " pass pass", "bid 1_0", "play \x1b"]
    return pick(rng, [pick(rng, illegal), 133, -1, 10**30, -(2**63), np.uint64(2**64 - 1), *texts, *JUNK])


def action_index(action: Any) -> int | None:
    """The index an action stands for (its text form read), or None for what is no action at all."""
    if isinstance(action, str):
        try:
            return pedro_env.str_to_action(action)
        except ValueError:
            return None
    if isinstance(action, (int, np.integer)) and not isinstance(action, bool):
        return int(action)
    return None


def test_fuzz_aec_action_streams() -> None:
    rng = np.random.default_rng(3)
    steps = refused = 0
    configs = fuzz_configs(rng, 12)
    while steps + refused < CASES["aec actions"]:
        env = raw_env(config=pick(rng, configs))
        env.reset(seed=int(rng.integers(2**63)))
        while env.agents and steps + refused < CASES["aec actions"]:
            agent = env.agent_selection
            if env.terminations[agent] or env.truncations[agent]:
                with pytest.raises(ValueError):
                    env.step(0)  # PettingZoo: only None for a finished agent
                env.step(None)
                continue
            legal = env.legal_actions()
            if rng.random() < 0.7:
                action = pick(rng, legal)
                form = int(rng.integers(3))
                text = pedro_env.action_to_str(action)
                env.step(f" {text.upper()}" if form == 0 else np.int32(action) if form == 1 else action)
                steps += 1
                continue
            junk = junk_action(rng, legal)
            observation = env.observe(agent)["observation"].tobytes()
            before = (agent, legal, len(env.action_history))
            try:
                env.step(junk)
            except (ValueError, RuntimeError) as error:
                assert_documented(error, (ValueError,))
                assert (env.agent_selection, env.legal_actions(), len(env.action_history)) == before
                assert env.observe(agent)["observation"].tobytes() == observation
                refused += 1
                continue
            # accepted: a legal action after all, or a renege (a held card played illegally) under renege="penalty"
            renege = env.config.renege == "penalty" and env.action_history[-1].startswith("play ")
            assert action_index(junk) in legal or renege, junk
            steps += 1
        if not env.agents:
            with pytest.raises(RuntimeError, match="episode is over"):
                env.step(None)
        for name in ("player_9", 3, None):
            with pytest.raises(ValueError):
                env.observe(name)  # type: ignore[arg-type]
    assert refused > CASES["aec actions"] // 5 and steps > CASES["aec actions"] // 2


def test_fuzz_vector_action_streams() -> None:
    rng = np.random.default_rng(4)
    configs = fuzz_configs(rng, 6)
    cases = refused = 0
    while cases < CASES["vector actions"]:
        num_envs = int(rng.integers(1, 6))
        venv = PedroVectorEnv(num_envs, config=pick(rng, configs))
        with pytest.raises(RuntimeError):
            venv.step(np.zeros(num_envs, dtype=np.int64))
        seed = pick(rng, [0, 2**64 - num_envs, 2**64 - num_envs + 1, np.uint64(5)] + JUNK[1:])  # JUNK[0]: None
        try:
            out = venv.reset(seed=seed)
        except SeedError as error:
            assert_documented(error, (SeedError,))
            out = venv.reset(seed=int(rng.integers(2**62)))
        cases += 1
        for _ in range(30):
            legal = np.array([pick(rng, list(np.flatnonzero(row))) for row in out.action_mask])
            roll = rng.random()
            if roll < 0.6:
                out = venv.step(legal.astype(pick(rng, [np.int64, np.uint8, np.int16, np.uint64])))
                cases += 1
                continue
            if roll < 0.7:
                games = rng.permutation(num_envs)[: int(rng.integers(num_envs + 1))]
                seeds = pick(
                    rng,
                    [
                        rng.integers(0, 2**63, games.size),
                        np.full(games.size, 2**64 - 1, np.uint64),
                        -np.ones(games.size, np.int64),
                        [1.5] * games.size,
                        ["x"] * games.size,
                        [2**64] * games.size,
                    ],
                )
                dealers = pick(rng, [None, rng.integers(0, venv.num_players, games.size), [9] * games.size])
                try:
                    out = venv.restart(games, seeds, dealers)
                except ValueError as error:
                    assert_documented(error, (ValueError,))
                cases += 1
                continue
            actions: Any = legal.copy()
            variant = int(rng.integers(6))
            if variant == 0:
                actions[int(rng.integers(num_envs))] = pick(rng, [133, 10_000, 80, 0, 24])
            elif variant == 1:
                actions = actions.astype(np.float64)
            elif variant == 2:
                actions = np.append(actions, 0)
            elif variant == 3:
                actions = [pedro_env.action_to_str(a) for a in actions]
            elif variant == 4:
                actions = pick(rng, JUNK)
            else:
                actions = np.array([10**30] * num_envs, dtype=object)
            try:
                out = venv.step(actions)
            except ValueError as error:
                refused += 1
                assert_documented(error, (IllegalActionError, ValueError))
                # nothing moved: restarting no game reports the batch exactly as before
                again = venv.restart(np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.uint64))
                assert np.array_equal(again.actor, out.actor) and np.array_equal(again.action_mask, out.action_mask)
                assert np.array_equal(again.observation, out.observation)
            cases += 1
    assert refused > CASES["vector actions"] // 10


# ---------------------------------------------------------------- replay records


def played_records(rng: np.random.Generator, count: int) -> list[dict[str, Any]]:
    """JSON forms of short matches of random legal play under varied configs."""
    records = []
    for config in fuzz_configs(rng, count):
        env = raw_env(config=config)
        env.reset(seed=int(rng.integers(2**64, dtype=np.uint64)))
        while env.agents:
            agent = env.agent_selection
            env.step(None if env.terminations[agent] or env.truncations[agent] else pick(rng, env.legal_actions()))
        players = [pick(rng, ["random", "rule:heuristic", "\x1b[31mred", "é ♠"]) for _ in env.possible_agents]
        records.append(record_from_env(env, players, "fuzz").to_dict())
    return records


def mutate(rng: np.random.Generator, record: dict[str, Any]) -> tuple[Any, bool]:
    """A copy of ``record`` (the JSON form) with one change; and whether the change keeps it replaying to the
    recorded result (False: it may replay or not, but only a ReplayError may stop it)."""
    document = copy.deepcopy(record)
    kind = int(rng.integers(24))
    decks, actions = document["decks"], document["actions"]
    if not decks and kind in (6, 7, 8):
        kind = 10
    keeps = False
    if kind == 0:
        del document[pick(rng, list(document))]
    elif kind == 1:
        del document[pick(rng, ["players", "seed", "source"])]
        keeps = True
    elif kind == 2:
        document[pick(rng, list(document))] = pick(rng, JUNK)
    elif kind == 3:
        document[pick(rng, ["junk", "notes", "\x1b"])] = pick(rng, JUNK)  # unknown keys are left out
        keeps = True
    elif kind == 4:
        document["config"][pick(rng, list(ALLOWED_VALUES))] = pick(rng, JUNK)
    elif kind == 5:
        document["config"][pick(rng, ["players", "seed", "config"])] = 1
    elif kind == 6:
        pick(rng, decks)[int(rng.integers(52))] = pick(rng, ["ZZ", "", 60, None, "5h", "10S", 3, 1.0, True])
    elif kind == 7:
        pick(rng, decks).pop()
    elif kind == 8:
        deck = pick(rng, decks)
        first, second = rng.integers(52, size=2)
        deck[first], deck[second] = deck[second], deck[first]  # a valid deck, not the recorded one
    elif kind == 9:
        document["decks"] = decks[: int(rng.integers(len(decks) + 1))]  # the decks left out, the seed deals
        keeps = True
    elif kind == 10:
        decks.append(pick(rng, [list(ALL_CARD_NAMES), ["AH"] * 52, "junk", []]))
    elif kind == 11:
        document["actions"] = actions[: int(rng.integers(len(actions)))]
    elif kind == 12:
        del actions[int(rng.integers(len(actions)))]
    elif kind == 13:
        actions[int(rng.integers(len(actions)))] = pick(rng, ["fold", "bid 99", "play ZZ", 7, None, ["pass"], "pass"])
    elif kind == 14:
        actions.append(pick(rng, ["pass", "done", "play AH"]))  # after the match ended
    elif kind == 15:
        index = int(rng.integers(len(actions)))
        actions[index] = f"  {actions[index].upper()} "  # text forms ignore case and spaces
        keeps = True
    elif kind == 16:
        document["players"] = [pick(rng, ["\x1b[2J", "a\nb", "\u202e", "", "x" * 200]) for _ in document["players"]]
        keeps = True
    elif kind == 17:
        document["players"] = pick(rng, [["x"], [1, 2, 3, 4], "abcd", {"0": "x"}])
    elif kind == 18:
        document["seed"] = pick(rng, [None, 0, 2**64 - 1])  # the recorded decks deal every deal
        keeps = True
    elif kind == 19:
        del document["result"]
        keeps = True
    elif kind == 20:
        document["result"][pick(rng, ["scores", "winner", "deals"])] = pick(rng, JUNK)
    elif kind == 21:
        document["dealer"] = pick(rng, [True, "1", 10**30, -1, 1.0, 9])
    elif kind == 22:
        return pick(rng, [None, [], "record", 3, [document]]), False
    else:
        document["version"] = pick(rng, [2, True, "1", None, 1.0])
    return document, keeps


def check_replay(document: Any, record: dict[str, Any], keeps_result: bool) -> bool:
    """Load and replay ``document``; True if it replayed, False if it was refused (with a ReplayError only)."""
    try:
        result = replay_match(MatchRecord.from_dict(document))
    except ReplayError as error:
        assert_documented(error, (ReplayError,))
        assert not keeps_result, f"refused a record that should replay: {error}"
        return False
    if keeps_result:
        assert result == record["result"]
    return True


def test_fuzz_replay_records() -> None:
    rng = np.random.default_rng(5)
    records = played_records(rng, 12)
    for record in records:
        check_replay(record, record, keeps_result=True)
    replayed = 0
    for _ in range(CASES["records"]):
        record = pick(rng, records)
        document, keeps_result = mutate(rng, record)
        if keeps_result and rng.random() < 0.2 and {"decks", "actions", "players", "result"} <= set(document):
            document, keeps_result = mutate(rng, document)[0], False  # two changes: only no crash is asked
        replayed += check_replay(document, record, keeps_result)
    assert CASES["records"] // 5 < replayed < CASES["records"] * 4 // 5  # both outcomes well exercised


def test_every_junk_value_in_every_record_field() -> None:
    """Each JUNK value in each top-level key, config key and result key of a record: a result or a ReplayError."""
    record = played_records(np.random.default_rng(7), 1)[0]
    places = [(key,) for key in record] + [("config", key) for key in ALLOWED_VALUES]
    places += [("result", key) for key in ("scores", "winner", "deals")] + [("decks", 0), ("actions", 0)]
    for place in places:
        for junk in JUNK:
            document = copy.deepcopy(record)
            holder = document
            for step in place[:-1]:
                holder = holder[step]
            holder[place[-1]] = junk
            check_replay(document, record, keeps_result=False)


def test_fuzz_replay_files_through_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``pedro-replay FILE [--deals]`` in-process on mutated and byte-corrupted files: status 0, or 2 and one line."""
    rng = np.random.default_rng(6)
    records = played_records(rng, 3)
    path = tmp_path / "record.json"
    for case in range(CASES["files"]):
        document, _ = mutate(rng, pick(rng, records))
        try:
            text = json.dumps(document)
        except (TypeError, ValueError):  # junk that JSON cannot hold (sets, arrays, objects)
            text = json.dumps(pick(rng, records))
        if case % 3 == 0:
            cut = int(rng.integers(len(text) + 1))
            text = text[:cut] + pick(rng, ["", "\x00", "\udcff", "}", "\x1b[2J", string.printable]) + text[cut + 1 :]
        path.write_text(text, errors="surrogateescape")
        status = main([str(path), "--deals"] if case % 4 else [str(path)])  # every 4th prints every table
        out, err = capsys.readouterr()
        assert status in (0, 2), status
        if status == 2:
            assert err.count("\n") == 1 and err.startswith("pedro-replay: error: "), err
        else:
            assert err == "" and out.splitlines()[-1].startswith("result: ")
        assert not any(char != "\n" and not char.isprintable() for char in out + err), (out + err)[:200]
