"""Card tables (docs/rules.md sections 1, 2, 7) and the text forms of cards and actions (section 11)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from pedro_env import NUM_ACTIONS, action_to_str, str_to_action
from pedro_env.actions import ACTION_GROUPS
from pedro_env.cards import (
    RuleTables,
    bits_to_cards,
    card_to_str,
    cards_to_bits,
    left_pedro,
    set_to_list,
    str_to_card,
)

from conftest import ALL_CARD_NAMES, TOTAL_POINTS, card_id, card_name

VARIANTS = ["cinch", "sancho", "dom", "pitch"]
SAME_COLOUR = {"C": "S", "S": "C", "D": "H", "H": "D"}


@pytest.fixture(scope="module", params=VARIANTS)
def variant_tables(request: pytest.FixtureRequest) -> tuple[str, RuleTables]:
    return request.param, RuleTables.build(request.param)


def trumps_high_to_low(tables: RuleTables, trump: int) -> list[str]:
    trumps = [card for card in range(52) if tables.is_trump[trump, card]]
    return [card_name(card) for card in sorted(trumps, key=lambda card: -int(tables.trick_strength[trump, card]))]


@pytest.mark.parametrize("trump", "CDHS")
def test_trump_order_with_pedros(trump: str) -> None:
    for variant in ("cinch", "sancho", "dom"):
        tables = RuleTables.build(variant)
        t = "CDHS".index(trump)
        expected = (
            [rank + trump for rank in "AKQJT9876"]
            + ["5" + trump, "5" + SAME_COLOUR[trump]]
            + [rank + trump for rank in "432"]
        )
        assert trumps_high_to_low(tables, t) == expected, variant
        strengths = [int(tables.trick_strength[t, card_id(name)]) for name in expected]
        assert len(set(strengths)) == 14, "two trumps share a strength"


@pytest.mark.parametrize("trump", "CDHS")
def test_pitch_has_thirteen_trumps_and_no_left_pedro(trump: str) -> None:
    tables = RuleTables.build("pitch")
    t = "CDHS".index(trump)
    assert trumps_high_to_low(tables, t) == [rank + trump for rank in "AKQJT98765432"]
    five_same_colour = card_id("5" + SAME_COLOUR[trump])
    assert not tables.is_trump[t, five_same_colour]
    assert tables.effective_suit[t, five_same_colour] == "CDHS".index(SAME_COLOUR[trump])
    assert tables.points[t, card_id("5" + trump)] == 0


@pytest.mark.parametrize("trump", "CDHS")
def test_left_pedro_is_a_trump_and_not_of_its_printed_suit(trump: str) -> None:
    t = "CDHS".index(trump)
    printed = "CDHS".index(SAME_COLOUR[trump])
    left = card_id("5" + SAME_COLOUR[trump])
    assert left_pedro(t) == left
    for variant in ("cinch", "sancho", "dom"):
        tables = RuleTables.build(variant)
        assert tables.is_trump[t, left]
        assert tables.effective_suit[t, left] == t
        printed_suit_cards = [c for c in range(52) if tables.effective_suit[t, c] == printed]
        assert left not in printed_suit_cards
        assert len(printed_suit_cards) == 12
        # the other suits keep A K Q ... 2 in order, the left Pedro missing from its printed suit
        for suit in range(4):
            if suit == t:
                continue
            members = [c for c in range(52) if tables.effective_suit[t, c] == suit]
            ordered = [card_name(c) for c in sorted(members, key=lambda c: -int(tables.trick_strength[t, c]))]
            letter = "CDHS"[suit]
            expected = [rank + letter for rank in "AKQJT98765432" if not (suit == printed and rank == "5")]
            assert ordered == expected


def test_point_values_sum_per_variant(variant_tables: tuple[str, RuleTables]) -> None:
    variant, tables = variant_tables
    for trump in range(4):
        assert int(tables.points[trump].astype(int).sum()) == TOTAL_POINTS[variant]
        letter = "CDHS"[trump]
        expected = {"A" + letter: 1, "2" + letter: 1, "J" + letter: 1, "T" + letter: 1}
        if variant != "pitch":
            expected["5" + letter] = 5
            expected["5" + SAME_COLOUR[letter]] = 5
        if variant == "sancho":
            expected["9" + letter] = 9
        if variant == "dom":
            expected["3" + letter] = 3
        actual = {card_name(c): int(tables.points[trump, c]) for c in range(52) if tables.points[trump, c]}
        assert actual == expected


def test_total_points_constants() -> None:
    assert TOTAL_POINTS == {"cinch": 14, "sancho": 23, "dom": 17, "pitch": 4}
    from pedro_env.config import make_config

    for variant, total in TOTAL_POINTS.items():
        assert make_config(variant=variant).total_points == total


@pytest.mark.parametrize("card", range(52))
def test_card_text_round_trip(card: int) -> None:
    text = card_to_str(card)
    assert text == ALL_CARD_NAMES[card] == card_name(card)
    assert text == text.upper()
    assert str_to_card(text) == card
    assert str_to_card(text.lower()) == card
    assert str_to_card(f"  {text.lower()} ") == card


def test_ten_written_as_10() -> None:
    for suit in "CDHS":
        assert str_to_card("10" + suit) == str_to_card("T" + suit) == card_id("T" + suit)
        assert str_to_card("10" + suit.lower()) == card_id("T" + suit)
    assert str_to_action("play 10H") == str_to_action("PLAY th") == str_to_action("play TH")
    assert str_to_action("discard 10c") == str_to_action("discard TC")


def test_every_action_has_one_text_form() -> None:
    texts = [action_to_str(a) for a in range(NUM_ACTIONS)]
    assert len(set(texts)) == NUM_ACTIONS == 133
    for action, text in enumerate(texts):
        assert str_to_action(text) == action
        assert str_to_action(text.lower()) == action
        assert str_to_action(text.swapcase()) == action
    assert texts[0] == "pass"
    assert texts[1:24] == [f"bid {value}" for value in range(1, 24)]
    assert texts[24:28] == ["trump C", "trump D", "trump H", "trump S"]
    assert texts[28:80] == [f"discard {name}" for name in ALL_CARD_NAMES]
    assert texts[80] == "done"
    assert texts[81:133] == [f"play {name}" for name in ALL_CARD_NAMES]
    for text in texts:
        assert re.fullmatch(r"pass|done|bid \d+|trump [CDHS]|(discard|play) [2-9TJQKA][CDHS]", text), text


def test_the_action_groups_cover_the_space_in_order_with_their_text_forms() -> None:
    covered = [a for group in ACTION_GROUPS for a in range(group.first, group.last + 1)]
    assert covered == list(range(NUM_ACTIONS))
    for group in ACTION_GROUPS:
        verb = group.text.split()[0]
        assert {action_to_str(a).split()[0] for a in range(group.first, group.last + 1)} == {verb}, group


@pytest.mark.parametrize("action", [-1, 133, 1000])
def test_action_to_str_rejects_outside_the_space(action: int) -> None:
    with pytest.raises(ValueError, match="0..132"):
        action_to_str(action)


@pytest.mark.parametrize("text", ["jump", "", "bid", "pass 3", "play", "discard", "trump", "done now", "play AH KH"])
def test_bad_action_text_names_the_forms(text: str) -> None:
    with pytest.raises(ValueError) as caught:
        str_to_action(text)
    message = str(caught.value)
    assert repr(text) in message
    for form in ("pass", "bid N", "trump S", "discard XX", "done", "play XX"):
        assert form in message, f"{form!r} missing from {message!r}"


@pytest.mark.parametrize("text", ["play 1H", "play AX", "discard 11C", "play 5", "discard HH"])
def test_bad_card_in_action_names_the_card_forms(text: str) -> None:
    with pytest.raises(ValueError) as caught:
        str_to_action(text)
    message = str(caught.value)
    assert repr(text) in message
    assert "2 3 4 5 6 7 8 9 T J Q K A" in message and "C D H S" in message


@pytest.mark.parametrize("text", ["bid 0", "bid 24", "bid x", "trump X", "trump HH"])
def test_bad_bid_or_suit_text_raises(text: str) -> None:
    with pytest.raises(ValueError, match=re.escape(repr(text))):
        str_to_action(text)


@pytest.mark.parametrize("text", ["", "1H", "AX", "11C", "A", "AHS", "0H"])
def test_bad_card_string_raises(text: str) -> None:
    with pytest.raises(ValueError, match="C D H S"):
        str_to_card(text)


@pytest.mark.parametrize("card", [-1, 52])
def test_card_to_str_rejects_bad_ids(card: int) -> None:
    with pytest.raises(ValueError, match="0..51"):
        card_to_str(card)


def test_bit_sets_round_trip() -> None:
    rng = np.random.default_rng(7)
    members = rng.random((5, 3, 52)) < 0.4
    sets = cards_to_bits(members)
    assert sets.dtype == np.uint64 and sets.shape == (5, 3)
    assert np.array_equal(bits_to_cards(sets), members)
    for value, row in zip(sets.reshape(-1), members.reshape(-1, 52)):
        assert set_to_list(value) == list(np.flatnonzero(row))
        assert int(value) == sum(1 << int(c) for c in np.flatnonzero(row))


@pytest.mark.parametrize("variant", VARIANTS)
def test_shared_tables_are_built_once_and_read_only(variant: str) -> None:
    shared = RuleTables.for_variant(variant)
    assert RuleTables.for_variant(variant) is shared
    fresh = RuleTables.build(variant)
    assert shared.has_pedros == fresh.has_pedros
    for name, table in vars(shared).items():
        if isinstance(table, np.ndarray):
            assert np.array_equal(table, getattr(fresh, name)) and table.dtype == getattr(fresh, name).dtype, name
            assert not table.flags.writeable, name
    with pytest.raises(KeyError):
        RuleTables.for_variant("bridge")
