"""Following suit and winning tricks (docs/rules.md section 6) for batches, over the compiled per-game kernels.

All arrays carry a leading batch axis ``B``; ``trump`` is the named suit (0..3) of each game.
"""

from __future__ import annotations

import numpy as np

from pedro_env import kernels
from pedro_env.cards import RuleTables


def legal_plays(hand: np.ndarray, trump: np.ndarray, led_card: np.ndarray, tables: RuleTables) -> np.ndarray:
    """Card set (B,) uint64 the actor may play.

    hand (B,) uint64 card set; trump (B,) 0..3; led_card (B,) the card that led the trick, -1 when
    the actor leads. A trump lead must be followed with a trump when the actor has one; on a
    non-trump lead the actor may follow the led suit or trump; void in the led suit (or leading),
    the actor plays anything.
    """
    hand, trump, led_card = np.broadcast_arrays(hand, trump, led_card)
    out = np.empty(hand.size, dtype=np.uint64)
    kernels.legal_play_sets(
        hand.astype(np.uint64).reshape(-1),
        trump.astype(np.int64).reshape(-1),
        led_card.astype(np.int64).reshape(-1),
        tables.kernel_table,
        out,
    )
    return out.reshape(hand.shape)


def trick_winner(trick: np.ndarray, leader: np.ndarray, trump: np.ndarray, tables: RuleTables) -> np.ndarray:
    """Seat winning each complete trick, (B,) int8.

    trick (B, n) card per seat; leader (B,) seat that led. The highest trump wins; without trumps,
    the highest card of the led (effective) suit.
    """
    trick = np.ascontiguousarray(trick, dtype=np.int64)
    out = np.empty(trick.shape[0], dtype=np.int8)
    kernels.trick_winners(
        trick,
        np.asarray(leader, dtype=np.int64).reshape(-1),
        np.asarray(trump, dtype=np.int64).reshape(-1),
        tables.kernel_table,
        out,
    )
    return out
