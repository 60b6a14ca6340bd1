"""Following suit and winning tricks (RULES.md section 6). Pure functions over batches; nothing mutates.

All arrays carry a leading batch axis ``B``; ``trump`` is the named suit (0..3) of each game.
"""

from __future__ import annotations

import numpy as np

from pedro_env.cards import RuleTables


def legal_plays(
    hand: np.ndarray, trump: np.ndarray, led_card: np.ndarray, leading: np.ndarray, tables: RuleTables
) -> np.ndarray:
    """Card set (B,) uint64 the actor may play.

    hand (B,) uint64 card set; trump (B,) 0..3; led_card (B,) the card that led the trick (ignored
    where ``leading``); leading (B,) bool, the actor leads. A trump lead must be followed with a trump
    when the actor has one; on a non-trump lead the actor may follow the led suit or trump, and plays
    anything when void in the led suit.
    """
    led = np.where(leading, 0, led_card)
    led_suit = tables.effective_suit[trump, led]
    follows = hand & tables.suit_set[trump, led_suit]
    on_non_trump_lead = follows | (hand & tables.trump_set[trump])
    constrained = np.where(tables.is_trump[trump, led], follows, on_non_trump_lead)
    return np.where(leading | (follows == 0), hand, constrained)


def trick_winner(trick: np.ndarray, leader: np.ndarray, trump: np.ndarray, tables: RuleTables) -> np.ndarray:
    """Seat winning each complete trick, (B,) int8.

    trick (B, n) card per seat; leader (B,) seat that led. The highest trump wins; without trumps,
    the highest card of the led (effective) suit.
    """
    rows = np.arange(trick.shape[0])[:, None]
    trump_col = trump[:, None]
    led_card = trick[rows[:, 0], leader]
    led_suit = tables.effective_suit[trump, led_card][:, None]
    strength = tables.trick_strength[trump_col, trick].astype(np.int16)
    in_play = tables.is_trump[trump_col, trick] | (tables.effective_suit[trump_col, trick] == led_suit)
    return np.argmax(np.where(in_play, strength, -1), axis=1).astype(np.int8)
