"""Card sets as Python ints, and the lookups the compiled trick search reads besides the engine's tables.

Card sets are Python ints in the search's Python code (bit ``card`` set per member, card = suit * 13 +
rank as in :mod:`pedro_env.cards`) and uint64 in its kernels. The rules themselves (legal plays, the
trick winner, deal scoring) come from :mod:`pedro_env.kernels`; :func:`search_tables` adds what only
the search needs, per variant, trump suit and Low rule, as one int64 array laid out by the ``L_*``
offsets below:

- ``L_POINTS + card``: trick value of a card (0 for Low under ``low="held"``: Low was decided when play
  began); ``L_POINT_CARDS``: the cards with a trick value;
- ``L_STRENGTH + card``: trick strength (trumps 20..33, others their rank);
- ``L_TRUMP_SUIT_BITS``: the trumps of the trump suit (bit order is strength order there);
  ``L_LEFT_PEDRO_BIT`` / ``L_LEFT_PEDRO_STRENGTH``: the one trump outside it (0 / -1 in pitch);
- ``L_STRONGER + s + 1``: the trumps stronger than strength ``s`` (s = -1 .. 33);
- ``L_ABOVE + card``: the cards of its effective suit stronger than it, the left Pedro left out, and
  ``L_LEFT_PEDRO_ABOVE + card``: whether the left Pedro is stronger too (1 / 0).

Card sets are stored as their uint64 bit patterns. The search's constant inputs besides, one int64 array
(``TrickSearch.params``), are laid out by the ``S_*`` offsets.

The compiled search is this file, :mod:`~agents.search.values`, :mod:`~agents.search.move_order`,
:mod:`~agents.search.transposition` and :mod:`~agents.search.solver`; each of their kernels is cached with a
digest of all five (SOLVER_SOURCES).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pedro_env.cards import RuleTables
from pedro_env.kernels.cache import register_kernel_sources

SOLVER_SOURCES = tuple(
    Path(__file__).with_name(name)
    for name in ("tables.py", "values.py", "move_order.py", "transposition.py", "solver.py")
)
register_kernel_sources(*SOLVER_SOURCES)  # before the first kernel of any of them

NO_LEAD = 52  # the led-card index of the engine's trick tables when nobody has led

L_POINTS = 0
L_STRENGTH = L_POINTS + 52
L_ABOVE = L_STRENGTH + 52
L_LEFT_PEDRO_ABOVE = L_ABOVE + 52
L_STRONGER = L_LEFT_PEDRO_ABOVE + 52  # 35 entries
L_TRUMP_SUIT_BITS = L_STRONGER + 35
L_LEFT_PEDRO_BIT = L_TRUMP_SUIT_BITS + 1
L_LEFT_PEDRO_STRENGTH = L_LEFT_PEDRO_BIT + 1
L_POINT_CARDS = L_LEFT_PEDRO_STRENGTH + 1
L_SIZE = L_POINT_CARDS + 1

# the search's constant inputs (TrickSearch.params): players, teams, trump suit, objective score (1) or points (0),
# the maker's team, the bid, simple scoring (1), then per relative seat its team and its sign (+1 my side, -1 the
# others)
S_PLAYERS, S_TEAMS, S_TRUMP, S_BY_SCORE, S_MAKER_TEAM, S_BID, S_SIMPLE, S_TEAM_OF_SEAT = range(8)  # 4 entries
S_SIGN = S_TEAM_OF_SEAT + 4  # 4 entries
S_SIZE = S_SIGN + 4


def card_list(card_set: int) -> list[int]:
    """Python-int card set -> its cards in increasing id order."""
    cards = []
    while card_set:
        low_bit = card_set & -card_set
        cards.append(low_bit.bit_length() - 1)
        card_set ^= low_bit
    return cards


def _bits(card_set: int) -> int:
    """A card set (< 2**52) as the int64 holding the same bits."""
    return int(np.uint64(card_set).view(np.int64))


_SEARCH_TABLES: dict[tuple[str, int, bool], np.ndarray] = {}


def search_tables(variant: str, trump: int, low_held: bool) -> np.ndarray:
    """The (cached, read-only) (L_SIZE,) int64 search lookups of a variant, trump suit and Low rule."""
    key = (variant, trump, low_held)
    if key in _SEARCH_TABLES:
        return _SEARCH_TABLES[key]
    tables = RuleTables.for_variant(variant)
    points = tables.points[trump].astype(np.int64)
    if low_held:
        points[int(tables.low_card[trump])] = 0
    strength = tables.trick_strength[trump].astype(np.int64)
    trumps = int(tables.trump_set[trump])
    suit_of = tables.effective_suit[trump]
    left_pedro = [card for card in card_list(trumps) if card // 13 != trump]
    left_pedro_bit = 1 << left_pedro[0] if left_pedro else 0
    look = np.zeros(L_SIZE, dtype=np.int64)
    look[L_POINTS : L_POINTS + 52] = points
    look[L_STRENGTH : L_STRENGTH + 52] = strength
    for card in range(52):
        above = 0
        for other in card_list(int(tables.suit_set[trump, suit_of[card]])):
            if strength[other] > strength[card]:
                if 1 << other == left_pedro_bit:
                    look[L_LEFT_PEDRO_ABOVE + card] = 1
                else:
                    above |= 1 << other
        look[L_ABOVE + card] = _bits(above)
    for s in range(-1, 34):
        look[L_STRONGER + s + 1] = _bits(sum(1 << c for c in card_list(trumps) if strength[c] > s))
    look[L_TRUMP_SUIT_BITS] = _bits(trumps & ~left_pedro_bit)
    look[L_LEFT_PEDRO_BIT] = _bits(left_pedro_bit)
    look[L_LEFT_PEDRO_STRENGTH] = strength[left_pedro[0]] if left_pedro else -1
    look[L_POINT_CARDS] = _bits(sum(1 << card for card in range(52) if points[card]))
    look.setflags(write=False)
    _SEARCH_TABLES[key] = look
    return look
