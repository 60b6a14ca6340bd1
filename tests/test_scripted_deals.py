"""Hand-built deals with scripted actions: exact masks at the tricky points and exact deal results.

Decks are built with ``build_deck`` (conftest) so every hand is known: eldest = (dealer + 1) % n gets
deck[0:3], the next seat deck[3:6], ... and the stock is what is left, top first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

import pedro_env
from pedro_env.observation_layout import observation_offsets

from conftest import ALL_CARD_NAMES, build_deck, names_of

Step = tuple  # (seat, action text) or (seat, action text, expected sorted legal list)

# ---- deal A: four players, six cards, dealer 3, P0 makes hearts and takes every trick.
# P1's only trump is 2H (Low); P3's last trump is the left Pedro 5D.
DEAL_A = {
    0: ["AH", "KH", "3H", "AC", "AS", "AD"],
    1: ["2H", "4C", "4S", "4D", "6C", "6S"],
    2: ["5H", "JH", "7C", "7S", "7D", "8C"],
    3: ["5D", "TH", "9C", "9S", "9D", "8S"],
}


def deal_a_bidding(bid: int) -> list[Step]:
    return [(0, f"bid {bid}"), (1, "pass"), (2, "pass"), (3, "pass"), (0, "trump H")]


DEAL_A_PLAY: list[Step] = [
    (0, "play AH"),
    (1, "play 2H", ["play 2H"]),
    (2, "play JH", ["play 5H", "play JH"]),
    (3, "play TH", ["play 5D", "play TH"]),
    (0, "play KH"),
    (1, "play 4C", ["play 4C", "play 4D", "play 4S", "play 6C", "play 6S"]),
    (2, "play 5H", ["play 5H"]),
    (3, "play 5D", ["play 5D"]),  # the left Pedro, the only trump, must follow
    (0, "play 3H"),
    (1, "play 4S"),
    (2, "play 7C"),
    (3, "play 9C"),
    (0, "play AC"),
    (1, "play 6C", ["play 6C"]),
    (2, "play 8C", ["play 8C"]),
    (3, "play 8S"),
    (0, "play AS"),
    (1, "play 6S", ["play 6S"]),
    (2, "play 7S", ["play 7S"]),
    (3, "play 9S", ["play 9S"]),
    (0, "play AD"),
    (1, "play 4D"),
    (2, "play 7D"),
    (3, "play 9D"),
]

# ---- deal B: four players, six cards, dealer 3, P0 makes hearts for 1 and takes only the ace.
DEAL_B = {
    0: ["AH", "2C", "3C", "4C", "6C", "7C"],
    1: ["KH", "5H", "JH", "AS", "KS", "QS"],
    2: ["3H", "2S", "3S", "4S", "6S", "7S"],
    3: ["QH", "5D", "TH", "2H", "AC", "KC"],
}
DEAL_B_SCRIPT: list[Step] = [
    (0, "bid 1"),
    (1, "pass"),
    (2, "pass"),
    (3, "pass"),
    (0, "trump H"),
    (0, "play AH"),
    (1, "play KH", ["play 5H", "play JH", "play KH"]),
    (2, "play 3H", ["play 3H"]),
    (3, "play QH", ["play 2H", "play 5D", "play QH", "play TH"]),
    (0, "play 2C"),
    (1, "play 5H"),
    (2, "play 2S"),
    (3, "play 5D"),  # right Pedro beats left Pedro
    (1, "play JH"),
    (2, "play 3S"),
    (3, "play TH", ["play 2H", "play TH"]),
    (0, "play 3C"),
    (1, "play AS"),
    (2, "play 4S", ["play 4S", "play 6S", "play 7S"]),
    (3, "play 2H"),
    (0, "play 4C"),
    (3, "play AC"),
    (0, "play 6C", ["play 6C", "play 7C"]),
    (1, "play KS"),
    (2, "play 6S"),
    (3, "play KC"),
    (0, "play 7C"),
    (1, "play QS"),
    (2, "play 7S"),
]


class Table:
    """One AEC env on injected decks; ``do`` steps scripted actions, checking seats and (optionally) masks."""

    def __init__(self, dealer: int, decks: Sequence[Sequence[str]], **config: Any) -> None:
        self.env = pedro_env.env(**config)
        self.env.reset(seed=0, options={"dealer": dealer, "decks": [list(deck) for deck in decks]})
        self.unwrapped = self.env.unwrapped
        self.deals: list[dict[str, Any]] = []

    @property
    def game(self) -> Any:
        return self.unwrapped.game

    def legal(self) -> list[str]:
        mask = self.env.observe(self.env.agent_selection)["action_mask"]
        return sorted(self.unwrapped.action_to_str(a) for a in np.flatnonzero(mask))

    def hand(self, seat: int) -> set[str]:
        return names_of(self.game.hands[0, seat])

    def do(self, script: Sequence[Step]) -> None:
        for number, step in enumerate(script):
            seat, action = step[0], step[1]
            where = f"script step {number} {step}"
            assert self.env.agent_selection == f"player_{seat}", where
            if len(step) > 2:
                assert self.legal() == sorted(step[2]), where
            agent = self.env.agent_selection
            self.env.step(self.unwrapped.str_to_action(action))
            if "deal" in self.env.infos[agent]:
                self.deals.append(self.env.infos[agent]["deal"])


def deal_info(
    maker: int | None,
    bid: int | None,
    trump: str | None,
    points: list[int],
    made: bool | None,
    delta: list[int],
    scores: list[int],
    renege: int | None = None,
) -> dict[str, Any]:
    return {
        "redeal": maker is None,
        "maker": maker,
        "bid": bid,
        "trump": trump,
        "points": points,
        "made": made,
        "delta": delta,
        "scores": scores,
        "renege": renege,
    }


def shuffled_deck(seed: int) -> list[str]:
    order = np.random.default_rng(seed).permutation(52)
    return [ALL_CARD_NAMES[i] for i in order]


# ---------------------------------------------------------------- dealing


@pytest.mark.parametrize(
    "num_players,six_card,dealer", [(4, False, 3), (4, True, 1), (3, False, 0), (2, False, 1), (2, True, 0)]
)
def test_deck_dealt_in_packets_of_three_from_eldest(num_players: int, six_card: bool, dealer: int) -> None:
    deck = shuffled_deck(num_players * 10 + dealer)
    config = {"num_players": num_players, "six_card": six_card}
    if num_players == 3:
        config["scoring"] = "simple"
    table = Table(dealer, [deck], **config)
    hand_size = 6 if six_card else 9
    eldest = (dealer + 1) % num_players
    for offset in range(num_players):
        seat = (eldest + offset) % num_players
        expected = [deck[3 * (r * num_players + offset) + k] for r in range(hand_size // 3) for k in range(3)]
        assert table.hand(seat) == set(expected), f"seat {seat}"
    stock = [ALL_CARD_NAMES[c] for c in table.game.stock[0]]
    assert stock == deck[num_players * hand_size :]
    assert table.env.agent_selection == f"player_{eldest}"
    assert int(table.game.dealer[0]) == dealer


def test_build_deck_gives_the_hands() -> None:
    for dealer in range(4):
        table = Table(dealer, [build_deck(DEAL_A, dealer, 4)], six_card=True)
        for seat, cards in DEAL_A.items():
            assert table.hand(seat) == set(cards)


# ---------------------------------------------------------------- bidding


def test_dealer_forced_to_bid_when_others_pass() -> None:
    table = Table(3, [shuffled_deck(1)])
    table.do([(0, "pass", ["pass"] + [f"bid {v}" for v in range(1, 15)]), (1, "pass"), (2, "pass")])
    assert table.legal() == sorted(f"bid {v}" for v in range(1, 15))
    table.do([(3, "bid 2"), (3, "trump S", ["trump C", "trump D", "trump H", "trump S"])])
    assert table.deals == []


def test_dealer_forced_respects_min_bid_and_variant_total() -> None:
    table = Table(1, [shuffled_deck(2)], min_bid=6, variant="dom")
    table.do([(2, "pass", ["pass"] + [f"bid {v}" for v in range(6, 18)]), (3, "pass"), (0, "pass")])
    assert table.legal() == sorted(f"bid {v}" for v in range(6, 18))


def test_dealer_may_pass_after_a_bid_and_bids_must_rise() -> None:
    table = Table(3, [shuffled_deck(3)])
    table.do(
        [
            (0, "bid 5"),
            (1, "pass", ["pass"] + [f"bid {v}" for v in range(6, 15)]),
            (2, "bid 9"),
            (3, "pass", ["pass"] + [f"bid {v}" for v in range(10, 15)]),
        ]
    )
    assert table.env.agent_selection == "player_2"
    assert table.legal() == ["trump C", "trump D", "trump H", "trump S"]


def test_all_pass_redeal_throws_in_the_deal() -> None:
    first, second = shuffled_deck(4), shuffled_deck(5)
    table = Table(3, [first, second], all_pass="redeal", target_score=1)
    table.do([(0, "pass"), (1, "pass"), (2, "pass")])
    assert table.legal() == sorted(["pass"] + [f"bid {v}" for v in range(1, 15)])
    table.do([(3, "pass")])
    assert table.deals == [deal_info(None, None, None, [0, 0], None, [0, 0], [0, 0])]
    assert not any(table.env.terminations.values())  # a thrown-in deal never ends the match, even to 1
    # the next dealer (P0) deals the second deck, starting with eldest P1
    assert int(table.game.dealer[0]) == 0
    assert table.env.agent_selection == "player_1"
    assert table.hand(1) == set(second[0:3] + second[12:15] + second[24:27])
    assert all(reward == 0 for reward in table.env.rewards.values())


# ---------------------------------------------------------------- following suit


def test_left_pedro_must_follow_a_trump_lead_and_full_deal_a() -> None:
    table = Table(3, [build_deck(DEAL_A, 3, 4)], six_card=True)
    table.do(deal_a_bidding(1) + DEAL_A_PLAY)
    assert table.deals == [deal_info(0, 1, "H", [14, 0], True, [14, 0], [14, 0])]
    assert table.env.rewards == {"player_0": 1.0, "player_1": -1.0, "player_2": 1.0, "player_3": -1.0}


def test_may_trump_instead_of_following_and_left_pedro_is_not_its_printed_suit() -> None:
    deal = {
        0: ["AD", "2D", "3D", "4D", "6D", "7D"],
        1: ["KD", "9S", "5C", "8H", "9H", "TH"],  # spades trumps: 5C is the left Pedro
        2: ["TS", "8C", "9C", "TC", "JC", "QC"],
        3: ["8D", "9D", "TD", "JD", "QD", "KC"],
    }
    table = Table(3, [build_deck(deal, 3, 4)], six_card=True)
    table.do(
        [
            (0, "bid 1"),
            (1, "pass"),
            (2, "pass"),
            (3, "pass"),
            (0, "trump S"),
            (0, "play AD"),
            (1, "play 9S", ["play 5C", "play 9S", "play KD"]),  # follow or trump, never discard a heart
            (2, "play TS", [f"play {c}" for c in deal[2]]),  # void in diamonds: anything
            (3, "play 8D", ["play 8D", "play 9D", "play JD", "play QD", "play TD"]),
            # P2 won with the ten of trumps and leads a club; P1's 5C is a trump, so P1 is void in clubs
            (2, "play 8C"),
            (3, "play KC", ["play KC"]),
            (0, "play 2D", ["play 2D", "play 3D", "play 4D", "play 6D", "play 7D"]),
            (1, "play 8H", ["play 5C", "play 8H", "play 9H", "play KD", "play TH"]),
        ]
    )
    # no trump fell on the club trick: the king of the led suit wins it
    assert int(table.game.tricks_done[0]) == 2
    assert int(table.game.last_trick_winner[0]) == 3
    assert table.env.agent_selection == "player_3"
    assert table.deals == []
    # voids shown: trumping a diamond lead (P1, P2) shows nothing; discarding on the club lead shows a club
    # void (P0's 2D, and P1's 8H although P1 holds 5C: the left Pedro is a trump, not a club)
    clubs = 1 << 0
    assert [int(v) for v in table.game.voids[0]] == [clubs, clubs, 0, 0]
    offsets = observation_offsets(table.unwrapped.config)
    voids_seen_by_p2 = table.env.observe("player_2")["observation"][offsets["voids"]].reshape(4, 4)
    assert voids_seen_by_p2.tolist() == [[0, 0, 0, 0], [0, 0, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0]]  # me, left, P0, P1


def test_made_but_opponents_scored_more_difference_and_simple() -> None:
    difference = Table(3, [build_deck(DEAL_B, 3, 4)], six_card=True)
    difference.do(DEAL_B_SCRIPT)
    assert difference.deals == [deal_info(0, 1, "H", [1, 13], True, [0, 12], [0, 12])]
    simple = Table(3, [build_deck(DEAL_B, 3, 4)], six_card=True, scoring="simple")
    simple.do(DEAL_B_SCRIPT)
    assert simple.deals == [deal_info(0, 1, "H", [1, 13], True, [1, 13], [1, 13])]


# ---------------------------------------------------------------- scoring


@pytest.mark.parametrize(
    "low,scoring,bid,expected",
    [
        ("captured", "difference", 1, ([14, 0], True, [14, 0])),
        ("held", "difference", 1, ([13, 1], True, [12, 0])),
        ("held", "simple", 1, ([13, 1], True, [13, 1])),
        ("captured", "simple", 1, ([14, 0], True, [14, 0])),
        ("held", "difference", 13, ([13, 1], True, [12, 0])),
        ("held", "difference", 14, ([13, 1], False, [-14, 1])),  # set: the bid is subtracted
        ("held", "simple", 14, ([13, 1], False, [-14, 1])),
    ],
)
def test_low_held_or_captured_and_scoring(low: str, scoring: str, bid: int, expected: tuple) -> None:
    points, made, delta = expected
    table = Table(3, [build_deck(DEAL_A, 3, 4)], six_card=True, low=low, scoring=scoring)
    table.do(deal_a_bidding(bid) + DEAL_A_PLAY)
    assert table.deals == [deal_info(0, bid, "H", points, made, delta, delta)]


def test_low_not_in_play_scores_for_nobody() -> None:
    # deal A with the 2H swapped for 8H: the 2 of trumps stays in the stock
    deal = {seat: list(cards) for seat, cards in DEAL_A.items()}
    deal[1][0] = "8H"
    script = list(DEAL_A_PLAY)
    script[1] = (1, "play 8H", ["play 8H"])
    for low in ("captured", "held"):
        table = Table(3, [build_deck(deal, 3, 4)], six_card=True, low=low)
        table.do(deal_a_bidding(13) + script)
        assert table.deals == [deal_info(0, 13, "H", [13, 0], True, [13, 0], [13, 0])]


# ---------------------------------------------------------------- renege penalty


def test_renege_by_defenders_scores_total_for_the_others() -> None:
    table = Table(3, [build_deck(DEAL_A, 3, 4), shuffled_deck(9)], six_card=True, renege="penalty")
    table.do(deal_a_bidding(6) + [(0, "play AH"), (1, "play 4C", ["play 2H"])])
    assert table.deals == [deal_info(0, 6, "H", [0, 0], True, [14, 0], [14, 0], renege=1)]
    # the deal ended at once: the next deal is dealt by P0
    assert int(table.game.dealer[0]) == 0 and table.env.agent_selection == "player_1"


def test_renege_by_makers_subtracts_the_bid() -> None:
    table = Table(3, [build_deck(DEAL_A, 3, 4)], six_card=True, renege="penalty")
    table.do(deal_a_bidding(6) + DEAL_A_PLAY[:4] + [(0, "play KH"), (1, "play 4C"), (2, "play 7C", ["play 5H"])])
    # points are those of the tricks completed so far: AH 2H JH TH to team 0
    assert table.deals == [deal_info(0, 6, "H", [4, 0], False, [-6, 14], [-6, 14], renege=0)]


def test_renege_only_with_a_held_card() -> None:
    table = Table(3, [build_deck(DEAL_A, 3, 4)], six_card=True, renege="penalty")
    table.do(deal_a_bidding(6) + [(0, "play AH")])
    with pytest.raises(pedro_env.IllegalActionError):
        table.env.step(table.unwrapped.str_to_action("play AS"))  # P0 holds AS, not P1
    with pytest.raises(pedro_env.IllegalActionError):
        table.env.step(table.unwrapped.str_to_action("pass"))


def test_renege_forbidden_by_default() -> None:
    table = Table(3, [build_deck(DEAL_A, 3, 4)], six_card=True)
    table.do(deal_a_bidding(6) + [(0, "play AH")])
    with pytest.raises(pedro_env.IllegalActionError):
        table.env.step(table.unwrapped.str_to_action("play 4C"))


# ---------------------------------------------------------------- discard and draw

# four players, nine cards, dealer 3; hearts will be trumps (left Pedro 5D). The stock holds three trumps deep
# down: TH at 10, 5D at 14, 2H at 15.
STOCK = ["JS", "QS", "KS", "AS", "5S", "5C", "2C", "3C", "4C", "6C", "TH", "7C", "8C", "9C", "5D", "2H"]
DRAW_HANDS = {
    0: ["AH", "KH", "QH", "JH", "2D", "3D", "4D", "6D", "7D"],
    1: ["9H", "8H", "TD", "JD", "QD", "KD", "AD", "2S", "3S"],
    2: ["7H", "6H", "8D", "9D", "4S", "6S", "7S", "8S", "9S"],
    3: ["5H", "4H", "3H", "TS", "TC", "JC", "QC", "KC", "AC"],
}
DRAW_BIDDING: list[Step] = [(0, "bid 1"), (1, "pass"), (2, "pass"), (3, "pass"), (0, "trump H")]


def discards(seat: int, cards: Sequence[str]) -> list[Step]:
    return [(seat, f"discard {card}") for card in cards] + [(seat, "done")]


def test_maker_sorted_draws_trumps_face_up_from_deep_in_the_stock() -> None:
    table = Table(3, [build_deck(DRAW_HANDS, 3, 4, STOCK)])
    table.do(DRAW_BIDDING)
    assert table.legal() == sorted(f"discard {c}" for c in DRAW_HANDS[0])  # 9 cards: no done yet
    table.do(
        discards(0, ["2D", "3D", "4D", "6D", "7D"])
        + discards(1, ["2S", "3S", "TD", "JD", "QD"])
        + discards(2, ["4S", "6S", "7S", "8S"])
        + discards(3, ["TC", "JC", "QC", "KC", "AC"])
    )
    game = table.game
    assert table.hand(0) == {"AH", "KH", "QH", "JH", "TH", "5D"}
    assert table.hand(1) == {"9H", "8H", "KD", "AD", "JS", "QS"}
    assert table.hand(2) == {"7H", "6H", "8D", "9D", "9S", "KS"}
    assert table.hand(3) == {"5H", "4H", "3H", "TS", "AS", "5S"}
    assert names_of(game.open_draws[0]) == {"TH", "5D"}
    assert names_of(game.set_aside[0]) == {"2H"}
    assert list(game.drawn[0]) == [2, 2, 1, 2]
    left = {STOCK[i] for i in np.flatnonzero(game.in_stock[0])}
    assert left == {"5C", "2C", "3C", "4C", "6C", "7C", "8C", "9C"}
    assert table.env.agent_selection == "player_0"  # the maker leads
    # the face-up draws and the set-aside trumps are public: they are in P1's observation
    offsets = observation_offsets(table.unwrapped.config)
    observation = table.env.observe("player_1")["observation"]
    assert {ALL_CARD_NAMES[c] for c in np.flatnonzero(observation[offsets["open_draws"]])} == {"TH", "5D"}
    assert {ALL_CARD_NAMES[c] for c in np.flatnonzero(observation[offsets["set_aside"]])} == {"2H"}


def test_refill_top_draws_face_down_from_the_top() -> None:
    table = Table(3, [build_deck(DRAW_HANDS, 3, 4, STOCK)], refill="top")
    table.do(
        DRAW_BIDDING
        + discards(0, ["2D", "3D", "4D", "6D", "7D"])
        + discards(1, ["2S", "3S", "TD", "JD", "QD"])
        + discards(2, ["4S", "6S", "7S", "8S"])
        + discards(3, ["TC", "JC", "QC", "KC", "AC"])
    )
    game = table.game
    assert table.hand(0) == {"AH", "KH", "QH", "JH", "JS", "QS"}
    assert table.hand(1) == {"9H", "8H", "KD", "AD", "KS", "AS"}
    assert table.hand(2) == {"7H", "6H", "8D", "9D", "9S", "5S"}
    assert table.hand(3) == {"5H", "4H", "3H", "TS", "5C", "2C"}
    assert int(game.open_draws[0]) == 0
    assert names_of(game.set_aside[0]) == {"TH", "5D", "2H"}


def test_dealer_robs_the_pack() -> None:
    table = Table(3, [build_deck(DRAW_HANDS, 3, 4, STOCK)], refill="dealer_robs")
    table.do(
        DRAW_BIDDING
        + discards(0, ["2D", "3D", "4D", "6D", "7D"])
        + discards(1, ["2S", "3S", "TD", "JD", "QD"])
        + discards(2, ["4S", "6S", "7S", "8S"])
    )
    # non-dealers were refilled from the top; the dealer took the other 11 stock cards without discarding first
    assert table.hand(0) == {"AH", "KH", "QH", "JH", "JS", "QS"}
    assert table.hand(1) == {"9H", "8H", "KD", "AD", "KS", "AS"}
    assert table.hand(2) == {"7H", "6H", "8D", "9D", "9S", "5S"}
    robbed = set(DRAW_HANDS[3]) | set(STOCK[5:])
    assert table.hand(3) == robbed and len(robbed) == 20
    assert table.env.agent_selection == "player_3"
    assert table.legal() == sorted(f"discard {c}" for c in robbed)  # no reservation rule, no done above 6
    assert int(table.game.drawn[0, 3]) == 11
    keep = ["5H", "4H", "3H", "TH", "5D", "2H"]
    table.do([(3, f"discard {c}") for c in sorted(robbed - set(keep))])
    assert table.legal() == ["done"]
    table.do([(3, "done")])
    assert table.hand(3) == set(keep)
    assert table.env.agent_selection == "player_0"  # the maker leads
    assert int(table.game.set_aside[0]) == 0 and not table.game.in_stock[0].any()


def test_reservation_rule_forbids_a_discard() -> None:
    deck = shuffled_deck(11)
    table = Table(3, [deck])
    table.do([(0, "bid 1"), (1, "pass"), (2, "pass"), (3, "pass"), (0, "trump C")])
    for seat, keep in ((0, 0), (1, 0), (2, 2), (3, 6)):
        hand = sorted(table.hand(seat))
        for card in hand[: len(hand) - keep]:
            assert f"discard {card}" in table.legal()
            table.do([(seat, f"discard {card}")])
        # P2: 12 reserved for P0 and P1, 2 more for itself: 14 of the 16 stock cards; P3: 16 reserved
        assert table.legal() == ["done"], f"seat {seat} holding {keep}"
        table.do([(seat, "done")])
    assert [len(table.hand(seat)) for seat in range(4)] == [6, 6, 6, 6]
    assert list(table.game.drawn[0]) == [6, 6, 4, 0]
    assert not table.game.in_stock[0].any()


def test_done_needs_at_most_six_cards() -> None:
    table = Table(3, [shuffled_deck(12)])
    table.do([(0, "bid 1"), (1, "pass"), (2, "pass"), (3, "pass"), (0, "trump D")])
    hand = sorted(table.hand(0))
    for card in hand[:3]:
        assert "done" not in table.legal()
        table.do([(0, f"discard {card}")])
    assert "done" in table.legal()


# ---------------------------------------------------------------- the end of a match


def test_both_cross_target_maker_made_wins() -> None:
    deal_one = build_deck(DEAL_B, 3, 4)
    deal_two = build_deck(DEAL_A, 0, 4)
    table = Table(3, [deal_one, deal_two], six_card=True, scoring="simple", low="held", target_score=14, reward="win")
    table.do(DEAL_B_SCRIPT)
    assert table.deals == [deal_info(0, 1, "H", [1, 13], True, [1, 13], [1, 13])]
    assert not any(table.env.terminations.values())
    # second deal: dealer P0, eldest P1; everyone passes, the dealer must bid
    table.do([(1, "pass"), (2, "pass"), (3, "pass"), (0, "bid 13"), (0, "trump H")] + DEAL_A_PLAY)
    assert table.deals[1] == deal_info(0, 13, "H", [13, 1], True, [13, 1], [14, 14])
    assert all(table.env.terminations.values())
    assert table.env.rewards == {"player_0": 1.0, "player_1": -1.0, "player_2": 1.0, "player_3": -1.0}
    assert int(table.game.winner[0]) == 0


def test_maker_set_other_team_wins_alone() -> None:
    table = Table(
        3,
        [build_deck(DEAL_B, 3, 4), build_deck(DEAL_A, 0, 4)],
        six_card=True,
        scoring="simple",
        low="held",
        target_score=14,
        reward="win",
    )
    table.do(DEAL_B_SCRIPT + [(1, "pass"), (2, "pass"), (3, "pass"), (0, "bid 14"), (0, "trump H")] + DEAL_A_PLAY)
    assert table.deals[1] == deal_info(0, 14, "H", [13, 1], False, [-14, 1], [-13, 14])
    assert all(table.env.terminations.values())
    assert table.env.rewards == {"player_0": -1.0, "player_1": 1.0, "player_2": -1.0, "player_3": 1.0}
