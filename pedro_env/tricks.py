"""Following suit and winning tricks (docs/rules.md section 6). Pure functions over batches; nothing mutates.

All arrays carry a leading batch axis ``B``; ``trump`` is the named suit (0..3) of each game.
"""

from __future__ import annotations

import numpy as np

from pedro_env.cards import RuleTables


def legal_plays(hand: np.ndarray, trump: np.ndarray, led_card: np.ndarray, tables: RuleTables) -> np.ndarray:
    """Card set (B,) uint64 the actor may play.

    hand (B,) uint64 card set; trump (B,) 0..3; led_card (B,) the card that led the trick, -1 when
    the actor leads. A trump lead must be followed with a trump when the actor has one; on a
    non-trump lead the actor may follow the led suit or trump; void in the led suit (or leading),
    the actor plays anything.
    """
    key = trump.astype(np.intp) * 53 + np.where(led_card < 0, 52, led_card)  # [trump, led] of the (4, 53) tables
    follows = hand & tables.follow_set.take(key)
    return np.where(follows == 0, hand, follows | (hand & tables.trump_allowed.take(key)))


def trick_winner(trick: np.ndarray, leader: np.ndarray, trump: np.ndarray, tables: RuleTables) -> np.ndarray:
    """Seat winning each complete trick, (B,) int8.

    trick (B, n) card per seat; leader (B,) seat that led. The highest trump wins; without trumps,
    the highest card of the led (effective) suit.
    """
    led_card = trick[np.arange(trick.shape[0]), leader]
    strength = tables.beats[trump[:, None], led_card[:, None], trick]  # (B, n)
    return strength.argmax(axis=1).astype(np.int8)
