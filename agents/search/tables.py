"""The rule tables the search reads, as Python ints and lists, built once per variant (and trump).

Card sets are Python ints: bit ``card`` set per member, card = suit * 13 + rank as in
:mod:`pedro_env.cards`. The engine's :class:`~pedro_env.cards.RuleTables` are copied into nested
Python lists (:class:`PlayTables`, per variant; :class:`TrumpTables`, per variant, trump suit and Low
rule), so the search's inner loop never touches numpy; the test suite checks the move generator and
trick winner here against :mod:`pedro_env.tricks`.
"""

from __future__ import annotations

from dataclasses import dataclass

from pedro_env.cards import RuleTables

NO_LEAD = 52  # the led-card index of the trick tables when nobody has led


def card_list(card_set: int) -> list[int]:
    """Python-int card set -> its cards in increasing id order."""
    cards = []
    while card_set:
        low_bit = card_set & -card_set
        cards.append(low_bit.bit_length() - 1)
        card_set ^= low_bit
    return cards


@dataclass(frozen=True)
class PlayTables:
    """The engine's trick tables for one variant as nested Python lists, indexed ``[trump]...``.

    ``follow[t][led]`` / ``trump_allowed[t][led]`` int card sets (led 52 = nobody led);
    ``beats[t][led][card]`` strength of ``card`` in a trick led by ``led`` (-1: cannot win it);
    ``strength[t][card]`` trick strength (trumps 20..33); ``points[t][card]`` point value;
    ``trump_set[t]`` int; ``suit_set[t][s]`` int, the cards of effective suit ``s``;
    ``effective_suit[t][card]``; ``low_card[t]`` the 2 of trumps.
    """

    follow: list[list[int]]
    trump_allowed: list[list[int]]
    beats: list[list[list[int]]]
    strength: list[list[int]]
    points: list[list[int]]
    trump_set: list[int]
    suit_set: list[list[int]]
    effective_suit: list[list[int]]
    low_card: list[int]

    @staticmethod
    def from_rule_tables(tables: RuleTables) -> PlayTables:
        return PlayTables(
            follow=[[int(x) for x in row] for row in tables.follow_set],
            trump_allowed=[[int(x) for x in row] for row in tables.trump_allowed],
            beats=tables.beats.astype(int).tolist(),
            strength=tables.trick_strength.astype(int).tolist(),
            points=tables.points.astype(int).tolist(),
            trump_set=[int(x) for x in tables.trump_set],
            suit_set=[[int(x) for x in row] for row in tables.suit_set],
            effective_suit=tables.effective_suit.astype(int).tolist(),
            low_card=tables.low_card.astype(int).tolist(),
        )

    def legal_plays(self, hand: int, trump: int, led_card: int) -> int:
        """Card set the holder of ``hand`` may play; ``led_card`` -1 when leading (docs/rules.md section 6)."""
        led = NO_LEAD if led_card < 0 else led_card
        follows = hand & self.follow[trump][led]
        return follows | (hand & self.trump_allowed[trump][led]) if follows else hand

    def trick_winner(self, cards: list[int], leader: int, trump: int) -> int:
        """Seat winning a complete trick: ``cards[seat]`` the card each seat played, ``leader`` the seat that led."""
        strengths = self.beats[trump][cards[leader]]
        best = max(range(len(cards)), key=lambda seat: strengths[cards[seat]])
        return best


_PLAY_TABLES: dict[str, PlayTables] = {}


def play_tables(variant: str) -> PlayTables:
    """The (cached) :class:`PlayTables` of a variant."""
    if variant not in _PLAY_TABLES:
        _PLAY_TABLES[variant] = PlayTables.from_rule_tables(RuleTables.for_variant(variant))
    return _PLAY_TABLES[variant]


@dataclass(frozen=True)
class TrumpTables:
    """Per (variant, trump, Low rule) lookups for the search, built once (see :func:`trump_tables`).

    ``points[card]`` trick value (0 for Low under ``low="held"``); ``point_cards`` the cards with
    points; ``point_sum`` subset of ``point_cards`` -> its points; ``strength[card]`` trick strength;
    ``trump_suit_bits`` the trumps in the trump suit's bits, where bit order is strength order;
    ``left_pedro_bit`` / ``left_pedro_strength`` the one trump outside them (0 / -1 in pitch);
    ``stronger_than[s + 1]`` the trumps stronger than strength ``s`` (s = -1 .. 33); ``above[card]``
    the cards of its effective suit stronger than it, the left Pedro left out, and
    ``left_pedro_above[card]`` whether the left Pedro is stronger too; ``feed_order[led][card]`` the
    move-order key of a card thrown to a trick led by ``led`` that my side is winning (points first,
    then the weakest); ``duck_order[led][card]`` the key of a card that loses it (weakest first,
    points last).
    """

    points: list[int]
    point_cards: int
    point_sum: dict[int, int]
    strength: list[int]
    trump_suit_bits: int
    left_pedro_bit: int
    left_pedro_strength: int
    stronger_than: list[int]
    above: list[int]
    left_pedro_above: list[bool]
    feed_order: list[list[int]]
    duck_order: list[list[int]]


_TRUMP_TABLES: dict[tuple[str, int, bool], TrumpTables] = {}


def trump_tables(variant: str, trump: int, low_held: bool) -> TrumpTables:
    """The (cached) :class:`TrumpTables` of a variant, trump suit and Low rule."""
    key = (variant, trump, low_held)
    if key in _TRUMP_TABLES:
        return _TRUMP_TABLES[key]
    tables = play_tables(variant)
    points = list(tables.points[trump])
    if low_held:
        points[tables.low_card[trump]] = 0  # Low was decided when play began
    strength = tables.strength[trump]
    trumps = tables.trump_set[trump]
    suit_of = tables.effective_suit[trump]
    left_pedro = [card for card in card_list(trumps) if card // 13 != trump]
    left_pedro_bit = 1 << left_pedro[0] if left_pedro else 0
    point_cards = sum(1 << card for card in range(52) if points[card])
    point_list = card_list(point_cards)
    point_sum: dict[int, int] = {}
    for subset in range(1 << len(point_list)):
        members = [card for k, card in enumerate(point_list) if subset >> k & 1]
        point_sum[sum(1 << card for card in members)] = sum(points[card] for card in members)
    above = [0] * 52
    left_pedro_above = [False] * 52
    for card in range(52):
        for other in card_list(tables.suit_set[trump][suit_of[card]]):
            if strength[other] > strength[card]:
                if 1 << other == left_pedro_bit:
                    left_pedro_above[card] = True
                else:
                    above[card] |= 1 << other
    beats = tables.beats[trump]
    result = TrumpTables(
        points=points,
        point_cards=point_cards,
        point_sum=point_sum,
        strength=strength,
        trump_suit_bits=trumps & ~left_pedro_bit,
        left_pedro_bit=left_pedro_bit,
        left_pedro_strength=strength[left_pedro[0]] if left_pedro else -1,
        stronger_than=[sum(1 << c for c in card_list(trumps) if strength[c] > s) for s in range(-1, 34)],
        above=above,
        left_pedro_above=left_pedro_above,
        feed_order=[[64 * points[card] - beats[led][card] for card in range(52)] for led in range(53)],
        duck_order=[[-beats[led][card] - 64 * points[card] for card in range(52)] for led in range(53)],
    )
    _TRUMP_TABLES[key] = result
    return result
