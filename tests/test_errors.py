"""Clear errors: bad config keys and values, illegal actions (AEC and vector), bad reset options."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pedro_env

from conftest import ALL_CARD_NAMES, build_deck

# key -> (a bad value, words the message must contain besides the key)
BAD_VALUES: dict[str, tuple[Any, list[str]]] = {
    "num_players": (5, ["2", "3", "4"]),
    "target_score": (0, ["1 to 10000"]),
    "min_bid": (15, ["14"]),
    "all_pass": ("reshuffle", ["dealer_forced", "redeal"]),
    "variant": ("auction", ["cinch", "sancho", "dom", "pitch"]),
    "six_card": ("yes", ["False", "True"]),
    "refill": ("bottom", ["maker_sorted", "top", "dealer_robs"]),
    "scoring": ("double", ["difference", "simple"]),
    "low": ("lost", ["captured", "held"]),
    "renege": ("allow", ["forbid", "penalty"]),
    "reward": ("score", ["points", "win"]),
    "episode": ("trick", ["match", "deal"]),
    "max_deals": (0, ["from 1 to 1000000"]),
}


@pytest.mark.parametrize("key", list(BAD_VALUES))
def test_bad_value_names_key_and_allowed_values(key: str) -> None:
    value, allowed = BAD_VALUES[key]
    for make in (pedro_env.make_config, pedro_env.env, lambda **kw: pedro_env.PedroVectorEnv(2, **kw)):
        with pytest.raises(pedro_env.ConfigError) as caught:
            make(**{key: value})
        message = str(caught.value)
        assert repr(key) in message or key in message
        assert repr(value) in message
        for word in allowed:
            assert word in message, f"{word!r} missing from {message!r}"


@pytest.mark.parametrize(
    "key,value",
    [
        ("num_players", True),
        ("six_card", 1),
        ("target_score", 1.5),
        ("target_score", True),
        ("target_score", 10**12),  # once an OverflowError in the encoder
        ("target_score", 2**31 - 1),  # once a silently wrapped points-to-go
        ("max_deals", -3),
        ("max_deals", 2**31),  # deal counters are int32
        ("min_bid", 0),
        ("variant", None),
        ("num_players", "4"),
    ],
)
def test_wrong_types_rejected(key: str, value: Any) -> None:
    with pytest.raises(pedro_env.ConfigError, match=key):
        pedro_env.make_config(**{key: value})


def test_config_error_is_a_value_error() -> None:
    assert issubclass(pedro_env.ConfigError, ValueError)
    assert issubclass(pedro_env.IllegalActionError, ValueError)


def test_unknown_key_names_it_and_the_known_keys() -> None:
    with pytest.raises(pedro_env.ConfigError) as caught:
        pedro_env.env(players=4)
    message = str(caught.value)
    assert "'players'" in message
    for key in BAD_VALUES:
        assert key in message


def test_min_bid_checked_against_the_variant() -> None:
    assert pedro_env.make_config(variant="pitch", min_bid=4).min_bid == 4
    with pytest.raises(pedro_env.ConfigError, match="min_bid"):
        pedro_env.make_config(variant="pitch", min_bid=5)
    assert pedro_env.make_config(variant="sancho", min_bid=23).min_bid == 23


def test_three_players_need_simple_scoring() -> None:
    with pytest.raises(pedro_env.ConfigError) as caught:
        pedro_env.make_config(num_players=3, scoring="difference")
    assert "scoring" in str(caught.value) and "simple" in str(caught.value)
    with pytest.raises(pedro_env.ConfigError, match="scoring"):
        pedro_env.env(num_players=3)  # the default scoring is difference
    assert pedro_env.make_config(num_players=3, scoring="simple").num_teams == 3


def test_win_reward_needs_match_episodes() -> None:
    with pytest.raises(pedro_env.ConfigError) as caught:
        pedro_env.make_config(reward="win", episode="deal")
    assert "reward" in str(caught.value) and "match" in str(caught.value)


def test_config_is_frozen() -> None:
    config = pedro_env.make_config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.num_players = 2  # type: ignore[misc]


# ---------------------------------------------------------------- illegal actions


def legal_texts(env: Any) -> list[str]:
    mask = env.observe(env.agent_selection)["action_mask"]
    return [env.unwrapped.action_to_str(a) for a in np.flatnonzero(mask)]


def test_aec_illegal_action_names_it_and_the_legal_ones() -> None:
    env = pedro_env.env()
    env.reset(seed=0)
    legal = legal_texts(env)
    with pytest.raises(pedro_env.IllegalActionError) as caught:
        env.step(env.unwrapped.str_to_action("play AH"))
    message = str(caught.value)
    assert "play AH" in message and env.agent_selection in message
    for text in legal:
        assert re.search(rf"\b{re.escape(text)}\b", message), text
    # nothing happened: the same agent still acts with the same options
    assert legal_texts(env) == legal


@pytest.mark.parametrize("action", [133, -1, 10_000])
def test_aec_action_outside_the_space(action: int) -> None:
    env = pedro_env.env()
    env.reset(seed=0)
    with pytest.raises(pedro_env.IllegalActionError, match=str(action)):
        env.step(action)


def test_aec_text_actions_accepted_and_checked() -> None:
    env = pedro_env.env()
    env.reset(seed=0)
    agent = env.agent_selection
    env.step("pass")
    assert env.agent_selection != agent
    with pytest.raises(pedro_env.IllegalActionError, match="trump H"):
        env.step("trump H")
    with pytest.raises(ValueError, match="pass"):
        env.step("fold")


def test_aec_illegal_play_during_play_lists_the_legal_cards() -> None:
    hands = {
        0: ["AH", "KH", "3H", "AC", "AS", "AD"],
        1: ["2H", "4C", "4S", "4D", "6C", "6S"],
        2: ["5H", "JH", "7C", "7S", "7D", "8C"],
        3: ["5D", "TH", "9C", "9S", "9D", "8S"],
    }
    env = pedro_env.env(six_card=True)
    env.reset(seed=0, options={"dealer": 3, "decks": [build_deck(hands, 3, 4)]})
    for action in ("bid 1", "pass", "pass", "pass", "trump H", "play AH"):
        env.step(action)
    with pytest.raises(pedro_env.IllegalActionError) as caught:
        env.step("play 4C")
    message = str(caught.value)
    assert "play 4C" in message and "play 2H" in message and "player_1" in message


def test_vector_illegal_action_names_game_action_and_legal_ones() -> None:
    venv = pedro_env.PedroVectorEnv(3)
    out = venv.reset(seed=0)
    actions = np.array([int(np.flatnonzero(row)[0]) for row in out.action_mask])
    actions[1] = pedro_env.str_to_action("discard 2C")
    with pytest.raises(pedro_env.IllegalActionError) as caught:
        venv.step(actions)
    message = str(caught.value)
    assert "discard 2C" in message and "game 1" in message
    for action in np.flatnonzero(out.action_mask[1]):
        assert pedro_env.action_to_str(action) in message
    # the batch is unchanged: the legal actions still step
    actions[1] = int(np.flatnonzero(out.action_mask[1])[0])
    venv.step(actions)


def test_vector_rejects_bad_action_arrays() -> None:
    venv = pedro_env.PedroVectorEnv(2)
    with pytest.raises(RuntimeError, match="reset"):
        venv.step(np.zeros(2, dtype=np.int64))
    venv.reset(seed=0)
    with pytest.raises(ValueError, match="shape"):
        venv.step(np.zeros(3, dtype=np.int64))
    with pytest.raises(ValueError):
        venv.step(np.zeros(2, dtype=np.float32))
    with pytest.raises(pedro_env.IllegalActionError, match="133"):
        venv.step(np.array([133, 0]))
    with pytest.raises(pedro_env.IllegalActionError, match=str(2**64 - 1)):
        venv.step(np.array([2**64 - 1, 0], dtype=np.uint64))


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int16, np.int32])
def test_vector_steps_legal_actions_of_any_integer_dtype(dtype: type) -> None:
    reference, other = pedro_env.PedroVectorEnv(4), pedro_env.PedroVectorEnv(4)
    out, other_out = reference.reset(seed=3), other.reset(seed=3)
    for _ in range(40):
        actions = np.array([int(np.flatnonzero(row)[-1]) for row in out.action_mask])
        out, other_out = reference.step(actions), other.step(actions.astype(dtype))
        assert np.array_equal(out.observation, other_out.observation)


@pytest.mark.parametrize("num_envs", [0, -1, 2.5, True])
def test_vector_rejects_bad_batch_sizes(num_envs: Any) -> None:
    with pytest.raises(ValueError, match="num_envs"):
        pedro_env.PedroVectorEnv(num_envs)


# ---------------------------------------------------------------- reset options


@pytest.mark.parametrize("dealer", [4, -1, 1.0, True, "0"])
def test_dealer_out_of_range(dealer: Any) -> None:
    env = pedro_env.env()
    with pytest.raises(ValueError) as caught:
        env.reset(seed=0, options={"dealer": dealer})
    message = str(caught.value)
    assert "dealer" in message and "0..3" in message


def test_dealer_range_follows_the_player_count() -> None:
    env = pedro_env.env(num_players=2)
    with pytest.raises(ValueError, match="0..1"):
        env.reset(seed=0, options={"dealer": 2})
    env.reset(seed=0, options={"dealer": 1})
    assert env.agent_selection == "player_0"


def test_deck_with_a_duplicate_card() -> None:
    deck = list(ALL_CARD_NAMES)
    deck[51] = deck[0]
    env = pedro_env.env()
    with pytest.raises(ValueError) as caught:
        env.reset(seed=0, options={"decks": [list(ALL_CARD_NAMES), deck]})
    message = str(caught.value)
    assert "decks" in message and "[1]" in message and "52" in message


@pytest.mark.parametrize("deck", [ALL_CARD_NAMES[:51], ALL_CARD_NAMES + ["AH"], ALL_CARD_NAMES[:51] + ["ZZ"]])
def test_deck_with_wrong_cards(deck: list[str]) -> None:
    env = pedro_env.env()
    with pytest.raises(ValueError):
        env.reset(seed=0, options={"decks": [deck]})


def test_decks_must_be_a_list_of_decks() -> None:
    env = pedro_env.env()
    with pytest.raises(ValueError, match="decks"):
        env.reset(seed=0, options={"decks": "AH KH"})


def test_unknown_reset_option_warns_and_is_ignored() -> None:
    """A misspelt option must not pass silently; it warns (PettingZoo's api_test passes arbitrary options)."""
    env = pedro_env.env()
    with pytest.warns(UserWarning) as caught:
        env.reset(seed=0, options={"dealr": 1})
    message = str(caught[0].message)
    assert "dealr" in message and "dealer" in message and "decks" in message
    plain = pedro_env.env()
    plain.reset(seed=0)
    assert env.agent_selection == plain.agent_selection


def test_render_mode_checked() -> None:
    with pytest.raises(ValueError, match="render_mode"):
        pedro_env.env(render_mode="rgb_array")


@pytest.mark.parametrize("trained, playing", [(4, 3), (4, 2), (3, 4), (3, 2), (2, 3)])
def test_a_policy_of_another_table_size_is_refused_in_one_line(trained: int, playing: int, tmp_path: Path) -> None:
    """A policy trained at one table size plays no other: every way a policy is loaded to play names the table sizes
    (before the layout) and where to train one, for ckpt: agents and the bytes of evaluation workers. (init_from
    starts training at any table size from its weights: one layout reads every config.)"""
    pytest.importorskip("torch")
    from test_play import table_rules, write_policy_checkpoint

    from agents import AgentSpecError, make_agent
    from agents.policy import policy_agent_from_bytes

    path = write_policy_checkpoint(tmp_path / "policy.pt", table_rules(trained))
    config = table_rules(playing)
    recipes = {4: "pedro-train ppo_selfplay", 3: "pedro-train individual3 --nproc 2", 2: "pedro-train individual2"}
    recipe = recipes[playing]
    words = (
        f"was trained for {trained} players; these games have {playing} "
        f"(train one for {playing} players: {recipe}, or play pretrained, trained for every table)"
    )
    with pytest.raises(AgentSpecError) as refused:
        make_agent(f"ckpt:{path}", config)
    assert str(refused.value) == f"agent spec ckpt:{path}: checkpoint {path} {words}"
    with pytest.raises(ValueError, match=re.escape(f"worker policy {words}")):
        policy_agent_from_bytes(path.read_bytes(), config, name="worker policy")
