"""The trick search's transposition table: the values of trick starts already searched, exact or a bound.

One numpy array of ``TABLE_ENTRY`` records, open addressing with linear probing, its capacity a power of two,
doubled (:func:`grown_table`) before it is half full. A key is five uint64 words: the four hands (relative
seats), then ``tricks_left | seat << 8 | acc << 16`` (the solver's frame, ``FRAME.table_key``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from pedro_env.kernels.dealing import splitmix64

_HASH = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93], dtype=np.uint64)
"""The hash multipliers of a key's first four words."""

TABLE_ENTRY = np.dtype(
    [
        ("key", np.uint64, 5),
        ("value", np.float64),
        ("bound", np.int8),  # 0 exact, 1 a lower bound, -1 an upper bound
        ("used", np.uint8),
    ],
    align=True,
)
"""An entry: a trick start's key and its value."""
TABLE_START = 1 << 12  # first capacity of a transposition table (entries, a power of two; it doubles at half full)


@njit(cache=True, _nrt=False, inline="always")
def slot_of(table, key):
    """The slot of ``key`` (5,) uint64 in the open-addressing ``table`` (TABLE_ENTRY): where it is, else the free
    slot where it would go (linear probing; the capacity is a power of two)."""
    w0, w1, w2, w3, w4 = key[0], key[1], key[2], key[3], key[4]
    mask = np.uint64(table.shape[0] - 1)
    mixed = w0 * _HASH[0] ^ w1 * _HASH[1] ^ w2 * _HASH[2] ^ w3 * _HASH[3] ^ w4
    slot = splitmix64(mixed) & mask
    while table[slot].used:
        held = table[slot].key
        if held[0] == w0 and held[1] == w1 and held[2] == w2 and held[3] == w3 and held[4] == w4:
            return slot
        slot = (slot + np.uint64(1)) & mask
    return slot


@njit(cache=True, _nrt=False, inline="always")
def store_entry(table, table_count, key, value, bound):
    """Enter ``value`` (``bound``: 0 exact, 1 lower, -1 upper) under ``key`` (the table has room)."""
    entry = table[slot_of(table, key)]
    if not entry.used:
        entry.used = 1
        for word in range(5):
            entry.key[word] = key[word]
        table_count[0] += 1
    entry.value = value
    entry.bound = bound


@njit(cache=True)
def grown_table(table):
    """The table's entries in one of twice the capacity."""
    grown = np.zeros(2 * table.shape[0], dtype=TABLE_ENTRY)
    for old in range(table.shape[0]):
        if table[old].used:
            entry = grown[slot_of(grown, table[old].key)]
            entry.key[:] = table[old].key
            entry.value, entry.bound, entry.used = table[old].value, table[old].bound, 1
    return grown
