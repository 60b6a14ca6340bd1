"""The flat discrete action space (133 actions, the same for every config) and its text form.

The layout is the offsets below; :data:`ACTION_GROUPS` names each run of indices with its text form and
meaning (docs/environment.md shows it as a table generated from them). A card id is ``suit * 13 + rank``
(:mod:`pedro_env.cards`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pedro_env.cards import MAX_TOTAL_POINTS, SUITS, card_to_str, relabelled_cards, str_to_card, suit_of_str

PASS_ACTION = 0
BID_OFFSET = 0  # action = BID_OFFSET + bid value, for bid values 1 .. MAX_TOTAL_POINTS
TRUMP_OFFSET = 1 + MAX_TOTAL_POINTS  # 24
DISCARD_OFFSET = TRUMP_OFFSET + 4  # 28
DONE_ACTION = DISCARD_OFFSET + 52  # 80
PLAY_OFFSET = DONE_ACTION + 1  # 81
NUM_ACTIONS = PLAY_OFFSET + 52  # 133


@dataclass(frozen=True)
class ActionGroup:
    """A run of action indices ``first`` .. ``last`` that share a text form and a meaning."""

    first: int
    last: int
    text: str  # the text form, ``N`` / ``S`` / ``XX`` standing for a bid, a suit letter, a card
    meaning: str


ACTION_GROUPS = (
    ActionGroup(PASS_ACTION, PASS_ACTION, "pass", "pass in the bidding"),
    ActionGroup(
        BID_OFFSET + 1,
        BID_OFFSET + MAX_TOTAL_POINTS,
        "bid N",
        f"bid N, N = index{f' - {BID_OFFSET}' if BID_OFFSET else ''} "
        "(only min_bid <= N <= the variant's total is ever legal)",
    ),
    ActionGroup(
        TRUMP_OFFSET,
        DISCARD_OFFSET - 1,
        "trump S",
        f"name trumps: suit index = index - {TRUMP_OFFSET} (C D H S = 0..3)",
    ),
    ActionGroup(
        DISCARD_OFFSET, DONE_ACTION - 1, "discard XX", f"discard card XX face up: card id = index - {DISCARD_OFFSET}"
    ),
    ActionGroup(DONE_ACTION, DONE_ACTION, "done", "finish discarding (the robbing dealer: at exactly 6 cards)"),
    ActionGroup(PLAY_OFFSET, NUM_ACTIONS - 1, "play XX", f"play card XX to the trick: card id = index - {PLAY_OFFSET}"),
)
"""The action layout in order, every index from 0 to NUM_ACTIONS - 1 in exactly one group."""


def action_to_str(action: int) -> str:
    """Action index -> its text form (``'bid 7'``, ``'play 5H'``). Raises ValueError outside 0..132."""
    a = int(action)
    if a == PASS_ACTION:
        return "pass"
    if 1 <= a <= MAX_TOTAL_POINTS:
        return f"bid {a - BID_OFFSET}"
    if TRUMP_OFFSET <= a < DISCARD_OFFSET:
        return f"trump {SUITS[a - TRUMP_OFFSET]}"
    if DISCARD_OFFSET <= a < DONE_ACTION:
        return f"discard {card_to_str(a - DISCARD_OFFSET)}"
    if a == DONE_ACTION:
        return "done"
    if PLAY_OFFSET <= a < NUM_ACTIONS:
        return f"play {card_to_str(a - PLAY_OFFSET)}"
    raise ValueError(f"action {action!r} is outside the action space 0..{NUM_ACTIONS - 1}")


_FORMS = "'pass', 'bid N', 'trump S', 'discard XX', 'done', 'play XX'"


def str_to_action(text: str) -> int:
    """Text form -> action index; case-insensitive, ``10`` accepted for ``T``. Raises ValueError naming the forms."""
    words = text.strip().lower().split()
    try:
        if words == ["pass"]:
            return PASS_ACTION
        if words == ["done"]:
            return DONE_ACTION
        if len(words) == 2:
            verb, arg = words
            if verb == "bid":
                value = int(arg)
                if not 1 <= value <= MAX_TOTAL_POINTS:
                    raise ValueError(f"bid {value} is outside 1..{MAX_TOTAL_POINTS}")
                return BID_OFFSET + value
            if verb == "trump":
                return TRUMP_OFFSET + suit_of_str(arg)
            if verb == "discard":
                return DISCARD_OFFSET + str_to_card(arg)
            if verb == "play":
                return PLAY_OFFSET + str_to_card(arg)
    except ValueError as error:
        raise ValueError(f"cannot read action {text!r}: {error}") from None
    raise ValueError(f"cannot read action {text!r}: the forms are {_FORMS}")


def uniform_legal_actions(action_masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(B,) int64: one legal action per row, uniformly at random (argmax of noise in (0, 1] on legal entries)."""
    noise = 1.0 - rng.random(action_masks.shape, dtype=np.float32)  # (0, 1]: a legal entry always beats a masked 0
    return np.argmax(noise * action_masks, axis=1).astype(np.int64)


ACTION_TEXTS = tuple(action_to_str(action) for action in range(NUM_ACTIONS))

def relabelled_actions(suit_map: np.ndarray) -> np.ndarray:
    """(133,) int64: old action -> the same action once suits are relabelled by ``suit_map`` (4,) old -> new.

    Trump, discard and play actions move with their suit or card; pass, bids and done stay. A relabelled
    mask or logit row is ``new[..., relabelled_actions(m)] = old``.
    """
    actions = np.arange(NUM_ACTIONS)
    actions[TRUMP_OFFSET : TRUMP_OFFSET + 4] = TRUMP_OFFSET + np.asarray(suit_map, dtype=np.int64)
    actions[DISCARD_OFFSET : DISCARD_OFFSET + 52] = DISCARD_OFFSET + relabelled_cards(suit_map)
    actions[PLAY_OFFSET : PLAY_OFFSET + 52] = PLAY_OFFSET + relabelled_cards(suit_map)
    return actions

"""The text form of every action, by index."""
