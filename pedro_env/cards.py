"""Cards, suits, ranks and the lookup tables the engine indexes in its hot path.

A card is an integer ``0 .. 51``: ``card = suit * 13 + rank`` with suits ``C D H S`` = ``0 .. 3``
and ranks ``2 3 4 5 6 7 8 9 T J Q K A`` = ``0 .. 12``. A *card set* is a ``uint64`` with bit
``card`` set for each member (so set algebra, counts and legal-move tests are single array ops).
Every table here is built once at import; the tables that depend on the variant are a
:class:`RuleTables`, built once per variant on first use (:meth:`RuleTables.for_variant`).
"""

from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass

import numpy as np

if sys.byteorder != "little":  # bits_to_cards reads the bytes of a uint64 lowest first
    raise ImportError("pedro_env needs a little-endian machine")

SUITS = "CDHS"
RANKS = "23456789TJQKA"
NUM_CARDS = 52
HAND_AT_PLAY = 6  # cards every player holds when play begins (docs/rules.md section 5)
TRICKS_PER_DEAL = 6

CLUBS, DIAMONDS, HEARTS, SPADES = range(4)
RANK_TWO, RANK_THREE, RANK_FIVE, RANK_NINE, RANK_TEN, RANK_JACK, RANK_ACE = 0, 1, 3, 7, 8, 9, 12

# card -> printed suit / rank, shape (52,), int8
CARD_SUIT = np.repeat(np.arange(4, dtype=np.int8), 13)
CARD_RANK = np.tile(np.arange(13, dtype=np.int8), 4)

# suit -> the other suit of its colour (clubs <-> spades, diamonds <-> hearts)
SAME_COLOUR_SUIT = np.array([SPADES, HEARTS, DIAMONDS, CLUBS], dtype=np.int8)

CARD_NAMES = [RANKS[r] + SUITS[s] for s in range(4) for r in range(13)]

ONE = np.uint64(1)
NO_CARDS = np.uint64(0)
CARD_BIT = (ONE << np.arange(52, dtype=np.uint64)).astype(np.uint64)  # (52,) uint64: the set {card}
CARD_BIT.setflags(write=False)


def _colour_preserving_suit_maps() -> np.ndarray:
    maps = [
        suit_map
        for suit_map in itertools.permutations(range(4))
        if all(suit_map[SAME_COLOUR_SUIT[suit]] == SAME_COLOUR_SUIT[suit_map[suit]] for suit in range(4))
    ]
    return np.array(maps, dtype=np.int8)


SUIT_SYMMETRIES = _colour_preserving_suit_maps()
"""(8, 4) int8: the suit relabellings the rules cannot tell apart, row ``k`` maps old suit -> new suit.

They keep same-colour pairs together (the left Pedro's suit follows the trump suit), so a deal and
its relabelled copy play alike; row 0 is the identity. docs/training.md, "Distilling the search".
"""
SUIT_SYMMETRIES.setflags(write=False)


def relabelled_cards(suit_map: np.ndarray) -> np.ndarray:
    """(52,) int64: old card id -> its card id once suits are relabelled by ``suit_map`` (4,) old -> new."""
    cards = np.arange(NUM_CARDS)
    return np.asarray(suit_map, dtype=np.int64)[cards // 13] * 13 + cards % 13


def bits_to_cards(card_sets: np.ndarray) -> np.ndarray:
    """(..., ) uint64 card sets -> (..., 52) bool membership."""
    card_sets = np.ascontiguousarray(card_sets, dtype=np.uint64)
    bits = np.unpackbits(card_sets.view(np.uint8).reshape(*card_sets.shape, 8), axis=-1, bitorder="little")
    return bits[..., :52].view(bool)


def cards_to_bits(members: np.ndarray) -> np.ndarray:
    """(..., 52) bool membership -> (...,) uint64 card sets."""
    members = np.asarray(members, dtype=bool)
    packed = np.zeros((*members.shape[:-1], 8), dtype=np.uint8)
    packed[..., :7] = np.packbits(members, axis=-1, bitorder="little")
    return packed.view(np.uint64)[..., 0]


def set_to_list(card_set: int | np.integer) -> list[int]:
    """One uint64 card set -> its cards in increasing id order."""
    value = int(card_set)
    return [card for card in range(52) if value >> card & 1]


_NAME_TO_CARD = {name: card for card, name in enumerate(CARD_NAMES)}


def card_of(suit: int, rank: int) -> int:
    """The card id of a suit index and a rank index."""
    return suit * 13 + rank


def card_to_str(card: int) -> str:
    """``12 -> 'AC'``; raises ValueError for an id outside 0..51."""
    if not 0 <= int(card) < NUM_CARDS:
        raise ValueError(f"card id {card!r} is outside 0..51")
    return CARD_NAMES[int(card)]


def str_to_card(text: str) -> int:
    """``'ah'``, ``'AH'``, ``'10h'``, ``'TH'`` -> card id. Case-insensitive; ``10`` means ``T``."""
    name = text.strip().upper()
    if name.startswith("10"):
        name = "T" + name[2:]
    if name not in _NAME_TO_CARD:
        raise ValueError(
            f"unknown card {text!r}: a card is a rank of {' '.join(RANKS)} (or 10) and a suit of {' '.join(SUITS)}, "
            "e.g. 'AH', '10C', '5s'"
        )
    return _NAME_TO_CARD[name]


def suit_of_str(text: str) -> int:
    """``'h'`` -> 2. Raises ValueError naming the allowed letters."""
    letter = text.strip().upper()
    if len(letter) != 1 or letter not in SUITS:
        raise ValueError(f"unknown suit {text!r}: allowed are {', '.join(SUITS)}")
    return SUITS.index(letter)


# Point cards per variant: (rank, points) of the trump suit, plus the Pedros where the variant has them.
# Cinch: High (A) 1, Low (2) 1, Jack 1, Game (T) 1, right Pedro 5, left Pedro 5 = 14.
VARIANT_POINT_RANKS: dict[str, tuple[tuple[int, int], ...]] = {
    "cinch": ((RANK_ACE, 1), (RANK_TWO, 1), (RANK_JACK, 1), (RANK_TEN, 1)),
    "sancho": ((RANK_ACE, 1), (RANK_TWO, 1), (RANK_JACK, 1), (RANK_TEN, 1), (RANK_NINE, 9)),
    "dom": ((RANK_ACE, 1), (RANK_TWO, 1), (RANK_JACK, 1), (RANK_TEN, 1), (RANK_THREE, 3)),
    "pitch": ((RANK_ACE, 1), (RANK_TWO, 1), (RANK_JACK, 1), (RANK_TEN, 1)),
}
PEDRO_POINTS = 5
VARIANT_TOTAL_POINTS = {"cinch": 14, "sancho": 23, "dom": 17, "pitch": 4}
MAX_TOTAL_POINTS = max(VARIANT_TOTAL_POINTS.values())


def _trick_tables(
    is_trump: np.ndarray,
    effective_suit: np.ndarray,
    trick_strength: np.ndarray,
    trump_set: np.ndarray,
    suit_set: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(follow_set, trump_allowed, beats)`` of :class:`RuleTables` from its per-trump card tables: per trump and
    led card (52: none led, left empty / -1), the cards that follow suit, the trumps a hand may play instead,
    and each card's strength in the trick (-1: it cannot win)."""
    follow_set = np.zeros((4, 53), dtype=np.uint64)
    trump_allowed = np.zeros((4, 53), dtype=np.uint64)
    beats = np.full((4, 53, 52), -1, dtype=np.int8)
    for trump in range(4):
        for led in range(52):
            led_suit = effective_suit[trump, led]
            follow_set[trump, led] = suit_set[trump, led_suit]
            trump_allowed[trump, led] = NO_CARDS if is_trump[trump, led] else trump_set[trump]
            can_win = is_trump[trump] | (effective_suit[trump] == led_suit)
            beats[trump, led] = np.where(can_win, trick_strength[trump], -1)
    return follow_set, trump_allowed, beats


@dataclass(frozen=True)
class RuleTables:
    """Per-variant lookup tables, indexed ``[trump_suit, card]``; all shape (4, 52).

    - ``is_trump``: bool, the card is a trump when that suit is named (the left Pedro included).
    - ``effective_suit``: int8, 0..3, the suit the card follows (trump suit for every trump).
    - ``trick_strength``: int8, higher wins. Trumps 20 + order (2 = 20 .. A = 33, left Pedro just
      below the right one); other cards their rank 0..12 (only counted when of the led suit).
    - ``points``: int8, points the card is worth for this trump suit (0 for non-point cards).
    - ``low_card``: (4,) int8, the 2 of each trump suit (Low).

    Card-set forms (uint64): ``trump_set[trump]`` (4,) every trump; ``suit_set[trump, suit]`` (4, 4)
    the cards of each effective suit; ``point_sets[trump, k]`` (4, K) the point cards worth
    ``point_values[k]`` (K,) int16; ``low_set[trump]`` (4,) the 2 of trumps.

    Trick tables, indexed ``[trump, led_card]`` with ``led_card`` 52 meaning "nobody has led":
    ``follow_set`` (4, 53) uint64 the cards that follow the led card's effective suit (empty when
    leading); ``trump_allowed`` (4, 53) uint64 the trumps a follower may play instead (all trumps on
    a non-trump lead, none on a trump lead); ``beats`` (4, 53, 52) int8 the strength of each card in
    a trick led by ``led_card``, -1 for cards that cannot win it (off-suit non-trumps);
    ``answers`` (4, 53) uint64 ``follow_set | trump_allowed``, the cards that show no void;
    ``led_suit_bit`` (4, 53) uint8 ``1 << effective suit`` of the led card (0 when nobody has led).
    ``kernel_table``: all of them flattened into one int64 array for :mod:`pedro_env.kernels`, at the
    ``T_*`` offsets below (:func:`pack_tables`).
    """

    has_pedros: bool
    is_trump: np.ndarray
    effective_suit: np.ndarray
    trick_strength: np.ndarray
    points: np.ndarray
    low_card: np.ndarray
    trump_set: np.ndarray
    suit_set: np.ndarray
    point_values: np.ndarray
    point_sets: np.ndarray
    low_set: np.ndarray
    follow_set: np.ndarray
    trump_allowed: np.ndarray
    beats: np.ndarray
    answers: np.ndarray
    led_suit_bit: np.ndarray
    kernel_table: np.ndarray  # (T_SIZE,) int64: these tables flattened for the compiled kernels (T_* offsets)

    @staticmethod
    def for_variant(variant: str) -> RuleTables:
        """The tables of ``variant``, built on first use and shared after (read-only): what the engine,
        the renderer and the agents use. KeyError for an unknown variant."""
        tables = _VARIANT_TABLES.get(variant)
        if tables is None:
            tables = _VARIANT_TABLES[variant] = RuleTables.build(variant)
        return tables

    @staticmethod
    def build(variant: str) -> RuleTables:
        """Build a fresh set of tables (:meth:`for_variant` gives the shared one)."""
        has_pedros = variant != "pitch"
        is_trump = np.zeros((4, NUM_CARDS), dtype=bool)
        effective_suit = np.tile(CARD_SUIT, (4, 1))
        trick_strength = np.tile(CARD_RANK, (4, 1)).astype(np.int8)
        points = np.zeros((4, NUM_CARDS), dtype=np.int8)
        for trump in range(4):
            for rank in range(13):
                card = card_of(trump, rank)
                is_trump[trump, card] = True
                # order 2 3 4 [5L] 5R 6 .. A: ranks from the 5 up move one step to leave room for the left Pedro
                trick_strength[trump, card] = 20 + rank + (1 if has_pedros and rank >= RANK_FIVE else 0)
            for rank, value in VARIANT_POINT_RANKS[variant]:
                points[trump, card_of(trump, rank)] = value
            if has_pedros:
                left_pedro = card_of(int(SAME_COLOUR_SUIT[trump]), RANK_FIVE)
                is_trump[trump, left_pedro] = True
                effective_suit[trump, left_pedro] = trump
                trick_strength[trump, left_pedro] = 20 + RANK_FIVE
                points[trump, card_of(trump, RANK_FIVE)] = PEDRO_POINTS
                points[trump, left_pedro] = PEDRO_POINTS
        low_card = np.array([card_of(t, RANK_TWO) for t in range(4)], dtype=np.int8)
        trump_set = cards_to_bits(is_trump)
        suit_set = cards_to_bits(effective_suit[:, None, :] == np.arange(4)[None, :, None])
        point_values = np.unique(points[points > 0]).astype(np.int16)
        point_sets = cards_to_bits(points[:, None, :] == point_values[None, :, None])
        low_set = CARD_BIT[low_card]
        follow_set, trump_allowed, beats = _trick_tables(is_trump, effective_suit, trick_strength, trump_set, suit_set)
        answers = follow_set | trump_allowed
        led_suit_bit = np.zeros((4, 53), dtype=np.uint8)
        led_suit_bit[:, :52] = np.uint8(1) << effective_suit.astype(np.uint8)
        tables = (
            is_trump,
            effective_suit,
            trick_strength,
            points,
            low_card,
            trump_set,
            suit_set,
            point_values,
            point_sets,
            low_set,
            follow_set,
            trump_allowed,
            beats,
            answers,
            led_suit_bit,
        )
        for table in tables:
            table.setflags(write=False)
        unpacked = RuleTables(has_pedros, *tables, kernel_table=np.zeros(0, dtype=np.int64))
        return RuleTables(has_pedros, *tables, kernel_table=pack_tables(unpacked))


_VARIANT_TABLES: dict[str, RuleTables] = {}  # variant -> its tables, filled by RuleTables.for_variant

# the variant tables flattened for the kernels, at these offsets (index [trump, led] of the (4, 53) trick tables:
# trump * 53 + led, led 52 = none)
MAX_POINT_VALUES = 5
T_FOLLOW = 0
T_TRUMP_ALLOWED = T_FOLLOW + 4 * 53
T_ANSWERS = T_TRUMP_ALLOWED + 4 * 53
T_LED_SUIT_BIT = T_ANSWERS + 4 * 53
T_BEATS = T_LED_SUIT_BIT + 4 * 53  # [trump, led, card] of (4, 53, 52)
T_IS_TRUMP = T_BEATS + 4 * 53 * 52  # [trump, card] of (4, 52)
T_LOW_SET = T_IS_TRUMP + 4 * 52  # [trump]
T_POINT_SETS = T_LOW_SET + 4  # [trump, k] of (4, MAX_POINT_VALUES)
T_POINT_VALUES = T_POINT_SETS + 4 * MAX_POINT_VALUES  # [k]
T_NUM_POINT_VALUES = T_POINT_VALUES + MAX_POINT_VALUES
T_SIZE = T_NUM_POINT_VALUES + 1


def pack_tables(tables: RuleTables) -> np.ndarray:
    """(T_SIZE,) int64 of a RuleTables, for the kernels."""
    tab = np.zeros(T_SIZE, dtype=np.int64)
    tab[T_FOLLOW : T_FOLLOW + 212] = tables.follow_set.reshape(-1)
    tab[T_TRUMP_ALLOWED : T_TRUMP_ALLOWED + 212] = tables.trump_allowed.reshape(-1)
    tab[T_ANSWERS : T_ANSWERS + 212] = tables.answers.reshape(-1)
    tab[T_LED_SUIT_BIT : T_LED_SUIT_BIT + 212] = tables.led_suit_bit.reshape(-1)
    tab[T_BEATS : T_BEATS + 4 * 53 * 52] = tables.beats.reshape(-1)
    tab[T_IS_TRUMP : T_IS_TRUMP + 208] = tables.is_trump.reshape(-1)
    tab[T_LOW_SET : T_LOW_SET + 4] = tables.low_set
    count = tables.point_values.size
    assert count <= MAX_POINT_VALUES
    point_sets = np.zeros((4, MAX_POINT_VALUES), dtype=np.int64)
    point_sets[:, :count] = tables.point_sets
    tab[T_POINT_SETS : T_POINT_SETS + 4 * MAX_POINT_VALUES] = point_sets.reshape(-1)
    tab[T_POINT_VALUES : T_POINT_VALUES + count] = tables.point_values
    tab[T_NUM_POINT_VALUES] = count
    tab.setflags(write=False)
    return tab


def left_pedro(trump: int) -> int:
    """The 5 of the same-colour suit of ``trump`` (a trump in Pedro variants)."""
    return card_of(int(SAME_COLOUR_SUIT[trump]), RANK_FIVE)
