"""Text rendering of one game of a batch: hands, bids, trumps, the current trick, tricks won, scores."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from pedro_env.cards import CARD_NAMES, SUITS, RuleTables, set_to_list
from pedro_env.config import PedroConfig
from pedro_env.state import NOT_BID, PASS, PedroState, Phase

PHASE_NAMES = {
    Phase.BID: "bidding",
    Phase.TRUMP: "naming trumps",
    Phase.DISCARD: "discard and draw",
    Phase.PLAY: "play",
    Phase.OVER: "over",
}


def sorted_cards(cards: Iterable[int], trump: int, tables: RuleTables) -> list[int]:
    """Card ids in the order a hand is shown: by suit then high to low; once trumps are named, trumps first
    (strongest first, the off-Pedro among them) and the other suits after."""
    if trump < 0:
        return sorted((int(c) for c in cards), key=lambda c: (-(c // 13), -(c % 13)))
    is_trump = tables.is_trump[trump]
    return sorted(
        (int(c) for c in cards),
        key=lambda c: (not is_trump[c], -int(tables.effective_suit[trump, c]), -int(tables.trick_strength[trump, c])),
    )


def _sorted_hand(cards: np.ndarray, trump: int, tables: RuleTables) -> str:
    """Cards high to low, trumps first and marked with ``*`` once trumps are named."""
    if cards.size == 0:
        return "-"
    marked = trump >= 0
    order = sorted_cards(cards, trump, tables)
    return " ".join(CARD_NAMES[c] + ("*" if marked and tables.is_trump[trump][c] else "") for c in order)


def _team_name(config: PedroConfig, team: int) -> str:
    seats = [s for s in range(config.num_players) if config.team_of_seat[s] == team]
    return "team " + str(team) + " (" + "+".join(f"P{s}" for s in seats) + ")"


def render_table(state: PedroState, config: PedroConfig, game: int = 0, viewer: int | None = None) -> str:
    """The table of ``game`` as text. With ``viewer``, other hands are shown only as card counts."""
    tables = RuleTables.for_variant(config.variant)
    n = config.num_players
    phase = Phase(int(state.phase[game]))
    trump = int(state.trump[game])
    dealer = int(state.dealer[game])
    lines = [
        f"Pedro ({config.variant}, {n} players, to {config.target_score}) - deal {int(state.deal_index[game]) + 1}, "
        f"dealer P{dealer}, phase: {PHASE_NAMES[phase]}",
        "Scores: " + ", ".join(f"{_team_name(config, t)} {int(s)}" for t, s in enumerate(state.scores[game])),
    ]
    bid_words = []
    for offset in range(1, n + 1):
        seat = (dealer + offset) % n
        bid = int(state.bids[game, seat])
        if bid != NOT_BID:
            bid_words.append(f"P{seat} " + ("pass" if bid == PASS else f"bid {bid}"))
    lines.append("Bids: " + (", ".join(bid_words) or "-"))
    if state.maker[game] >= 0 and phase != Phase.BID:
        lines.append(
            f"Maker: P{int(state.maker[game])} for {int(state.high_bid[game])}, trumps: "
            + (SUITS[trump] if trump >= 0 else "not named yet")
        )
    lines += [_seat_line(state, config, tables, game, seat, viewer) for seat in range(n)]
    set_aside = set_to_list(state.set_aside[game])
    if set_aside:
        lines.append("Trumps set aside: " + " ".join(CARD_NAMES[c] for c in set_aside))
    if phase == Phase.PLAY:
        lines += _trick_lines(state, n, game)
    if state.tricks_done[game] > 0:
        values = tables.points[max(trump, 0)]
        won = []
        for team in range(config.num_teams):
            cards = set_to_list(state.won[game, team])
            tricks, points = len(cards) // n, int(values[cards].sum())
            won.append(f"{_team_name(config, team)} {_count(tricks, 'trick')}, {_count(points, 'point')}")
        lines.append("Tricks won: " + "; ".join(won))
    return "\n".join(lines)


def _seat_line(
    state: PedroState, config: PedroConfig, tables: RuleTables, game: int, seat: int, viewer: int | None
) -> str:
    """One seat's line: the turn mark, the seat and its team, its hand (a card count for another seat than the
    viewer's), and whether it deals, what it discarded and drew."""
    trump = int(state.trump[game])
    cards = np.array(set_to_list(state.hands[game, seat]), dtype=int)
    shown = (
        _sorted_hand(cards, trump, tables)
        if viewer in (None, seat)
        else f"{cards.size} card{'s' if cards.size != 1 else ''}"
    )
    marks = []
    if seat == int(state.dealer[game]):
        marks.append("dealer")
    discarded = set_to_list(state.discards[game, seat])
    if discarded:
        marks.append("discarded " + " ".join(CARD_NAMES[c] for c in discarded))
    if state.drawn[game, seat]:
        marks.append(f"drew {int(state.drawn[game, seat])}")
    turn = ">" if Phase(int(state.phase[game])) != Phase.OVER and seat == state.actor[game] else " "
    return f"{turn} P{seat} [{_team_name(config, int(config.team_of_seat[seat]))}] {shown}" + (
        f"  ({'; '.join(marks)})" if marks else ""
    )


def _trick_lines(state: PedroState, n: int, game: int) -> list[str]:
    """The trick in play, and the last trick and who won it."""
    leader = int(state.trick_leader[game])
    played = [
        f"P{(leader + k) % n} {CARD_NAMES[int(state.trick[game, (leader + k) % n])]}"
        for k in range(int(state.trick_size[game]))
    ]
    lines = [f"Trick {int(state.tricks_done[game]) + 1}, led by P{leader}: " + (", ".join(played) or "-")]
    if state.last_trick_winner[game] >= 0:
        winner = int(state.last_trick_winner[game])
        last = ", ".join(f"P{s} {CARD_NAMES[int(c)]}" for s, c in enumerate(state.last_trick[game]))
        lines.append(f"Last trick ({last}) won by P{winner}")
    return lines


def _count(number: int, noun: str) -> str:
    """``1 card``, ``2 cards``."""
    return f"{number} {noun}{'' if number == 1 else 's'}"
