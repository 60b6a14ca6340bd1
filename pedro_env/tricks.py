"""Following suit and winning tricks (RULES.md section 6). Pure functions over batches; nothing mutates.

All arrays carry a leading batch axis ``B``; ``trump`` is the named suit (0..3) of each game.
"""

from __future__ import annotations

import numpy as np

from pedro_env.cards import RuleTables


def legal_cards(
    hand: np.ndarray, trump: np.ndarray, led_card: np.ndarray, leading: np.ndarray, tables: RuleTables
) -> np.ndarray:
    """Cards the actor may play, (B, 52) bool.

    hand (B, 52) bool; trump (B,) 0..3; led_card (B,) the card that led the trick (ignored where
    ``leading``); leading (B,) bool, the actor leads. A trump lead must be followed with a trump when
    the actor has one; on a non-trump lead the actor may follow the led suit or trump, and plays
    anything when void in the led suit.
    """
    is_trump = tables.is_trump[trump]  # (B, 52)
    led = np.where(leading, 0, led_card)
    rows = np.arange(hand.shape[0])
    led_suit = tables.effective_suit[trump, led]  # (B,)
    led_is_trump = is_trump[rows, led]
    follows = hand & (tables.effective_suit[trump] == led_suit[:, None])
    can_follow = follows.any(axis=1)
    on_non_trump_lead = follows | (hand & is_trump)
    constrained = np.where(led_is_trump[:, None], follows, on_non_trump_lead)
    free = leading | ~can_follow
    return np.where(free[:, None], hand, constrained)


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
