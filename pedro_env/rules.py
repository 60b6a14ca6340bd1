"""The Pedro engine: dealing, bidding, trumps, the dispatch of a step to its phase, and the end of a deal.

One rules implementation for every environment: the AEC env is a batch of one. ``step`` applies one
action per game to a batch of ``B`` games in place; each phase is handled on the index array of the
games in that phase, so there is no per-game Python loop. Decks come from a ``deck_source``:
by default a counter-based hash of ``(seed, match_index, deal_index)``, so a game's deals depend
only on its own seed and a batch plays exactly like the same games one by one.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pedro_env import exchange
from pedro_env.actions import (
    DISCARD_OFFSET,
    DONE_ACTION,
    NUM_ACTIONS,
    PASS_ACTION,
    PLAY_OFFSET,
    TRUMP_OFFSET,
)
from pedro_env.cards import CARD_BIT, MAX_TOTAL_POINTS, NO_CARDS, RuleTables
from pedro_env.config import PedroConfig
from pedro_env.scoring import deal_points, match_winner, score_deal, score_renege
from pedro_env.state import BID, DISCARD, NOT_BID, NUM_PHASES, OVER, PLAY, TRUMP, PedroState
from pedro_env.tricks import legal_plays, trick_winner

DeckSource = Callable[[PedroState, np.ndarray], np.ndarray]
"""``deck_source(state, games) -> (len(games), 52)`` card ids, top first, for each game's next deal."""

TRICKS_PER_DEAL = 6

# ---------------------------------------------------------------- randomness

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser, elementwise on uint64 (wrapping arithmetic)."""
    z = x + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _stream(seed: np.ndarray, *counters: np.ndarray) -> np.ndarray:
    """(k,) uint64 key of a seed and counters: a different key for every (seed, counters) tuple."""
    key = _splitmix64(np.asarray(seed, dtype=np.uint64))
    for counter in counters:
        key = _splitmix64(key ^ np.asarray(counter).astype(np.uint64))
    return key


def hashed_decks(seed: np.ndarray, match_index: np.ndarray, deal_index: np.ndarray) -> np.ndarray:
    """(k, 52) int8 shuffled decks, a pure function of each game's (seed, match, deal)."""
    key = _stream(seed, match_index, deal_index + 1)
    card_keys = _splitmix64(key[:, None] + np.arange(52, dtype=np.uint64)[None, :] * _GOLDEN)
    return np.argsort(card_keys, axis=1).astype(np.int8)


def hashed_dealers(seed: np.ndarray, match_index: np.ndarray, num_players: int) -> np.ndarray:
    """(k,) int8 first dealer of each match (standing in for the cut)."""
    return (_stream(seed, match_index, np.zeros_like(match_index)) % np.uint64(num_players)).astype(np.int8)


def seed_deck_source(state: PedroState, games: np.ndarray) -> np.ndarray:
    """The default deck source: decks hashed from each game's seed and counters."""
    return hashed_decks(state.seed[games], state.match_index[games], state.deal_index[games])


# ---------------------------------------------------------------- dealing


def _deal_offsets(num_players: int, hand_size: int) -> np.ndarray:
    """(num_players * hand_size,) int8: which player, counted from eldest, gets each dealt deck position.

    Packets of 3, clockwise from eldest: eldest gets 0..2, the next player 3..5, and round again.
    """
    positions = np.arange(num_players * hand_size)
    return ((positions // 3) % num_players).astype(np.int8)


def start_deal(state: PedroState, games: np.ndarray, config: PedroConfig, deck_source: DeckSource) -> None:
    """Deal the next deck to ``games`` (their dealer and deal_index already set) and open the bidding."""
    if games.size == 0:
        return
    n, dealt = config.num_players, config.num_players * config.hand_size
    decks = np.asarray(deck_source(state, games), dtype=np.int8)
    eldest = (state.dealer[games] + 1) % n
    dealt_bits = CARD_BIT[decks[:, :dealt]]  # (k, dealt)
    receiver = _deal_offsets(n, config.hand_size)
    for offset in range(n):
        hand = np.bitwise_or.reduce(np.where(receiver == offset, dealt_bits, NO_CARDS), axis=1)
        state.hands[games, (eldest + offset) % n] = hand
    state.stock[games] = decks[:, dealt:]
    state.in_stock[games] = True
    state.bids[games] = NOT_BID
    state.high_bid[games] = 0
    state.maker[games] = -1
    state.trump[games] = -1
    for per_deal_sets in (state.discards, state.open_draws, state.set_aside, state.played, state.won):
        per_deal_sets[games] = NO_CARDS
    state.done[games] = False
    state.robbing[games] = False
    state.voids[games] = 0
    state.drawn[games] = 0
    state.trick[games] = -1
    state.trick_leader[games] = -1
    state.trick_size[games] = 0
    state.tricks_done[games] = 0
    state.last_trick[games] = -1
    state.last_trick_winner[games] = -1
    state.low_team[games] = -1
    state.phase[games] = BID
    state.actor[games] = eldest


def new_match(
    state: PedroState,
    games: np.ndarray,
    config: PedroConfig,
    deck_source: DeckSource = seed_deck_source,
    dealers: np.ndarray | None = None,
) -> None:
    """Start a fresh match in ``games`` (seed and match_index already set): scores 0, first dealer, first deal."""
    state.scores[games] = 0
    state.deal_index[games] = 0
    state.winner[games] = -1
    state.dealer[games] = (
        hashed_dealers(state.seed[games], state.match_index[games], config.num_players) if dealers is None else dealers
    )
    start_deal(state, games, config, deck_source)


def initial_state(
    config: PedroConfig,
    seeds: np.ndarray,
    deck_source: DeckSource = seed_deck_source,
    dealers: np.ndarray | None = None,
) -> PedroState:
    """A batch of fresh matches, one per seed (uint64-convertible ints)."""
    seeds = np.asarray(seeds, dtype=np.uint64).reshape(-1)
    state = PedroState.empty(config, seeds.size)
    state.seed[:] = seeds
    new_match(state, np.arange(seeds.size), config, deck_source, dealers)
    return state


# ---------------------------------------------------------------- legal actions


def games_by_phase(phase: np.ndarray) -> list[np.ndarray | None]:
    """For each acting phase BID..PLAY, the index array of the games in it (None when there are none)."""
    b = phase.shape[0]
    counts = np.bincount(phase, minlength=NUM_PHASES + 1).tolist()
    return [
        _every_game(b) if count == b else np.flatnonzero(phase == p) if count else None
        for p, count in enumerate(counts[:NUM_PHASES])
    ]


def legal_action_mask(state: PedroState, config: PedroConfig, tables: RuleTables) -> np.ndarray:
    """(B, 133) bool: the actor's legal actions in every game (all False where the phase is OVER)."""
    b = state.batch_size
    mask = np.zeros((b, NUM_ACTIONS), dtype=bool)
    bidding, naming, discarding, playing = games_by_phase(state.phase)

    if bidding is not None:
        bid_allowed = _bid_allowed(config)
        mask[bidding, : MAX_TOTAL_POINTS + 1] = bid_allowed[state.high_bid[bidding]]  # pass and bids above the high bid
        if config.all_pass == "dealer_forced":
            dealer_must_bid = (state.actor[bidding] == state.dealer[bidding]) & (state.high_bid[bidding] == 0)
            mask[bidding[dealer_must_bid], PASS_ACTION] = False
    if naming is not None:
        mask[naming, TRUMP_OFFSET : TRUMP_OFFSET + 4] = True

    if discarding is None and playing is None:
        return mask
    # card actions: the legal card set of every game, unpacked to 52 flags once
    card_sets = np.zeros((b, 2), dtype=np.uint64)  # column 0 discards, column 1 plays
    if discarding is not None:
        hand = state.hands[discarding, state.actor[discarding]]
        may_discard, may_say_done = exchange.discard_options(state, discarding, config)
        card_sets[discarding, 0] = np.where(may_discard, hand, NO_CARDS)
        mask[discarding, DONE_ACTION] = may_say_done
    if playing is not None:
        hand = state.hands[playing, state.actor[playing]]
        led_card = state.trick[playing, state.trick_leader[playing]]  # -1 while leading
        card_sets[playing, 1] = legal_plays(hand, state.trump[playing], led_card, tables)
    cards = np.unpackbits(card_sets.view(np.uint8), axis=1, bitorder="little").view(bool)  # (B, 128)
    mask[:, DISCARD_OFFSET:DONE_ACTION] = cards[:, :52]
    mask[:, PLAY_OFFSET:] = cards[:, 64:116]
    return mask


_BID_ALLOWED: dict[tuple[int, int], np.ndarray] = {}


def _bid_allowed(config: PedroConfig) -> np.ndarray:
    """(MAX_TOTAL_POINTS + 1, 1 + MAX_TOTAL_POINTS) bool: [high bid] -> legal pass and bid actions."""
    key = (config.min_bid, config.total_points)
    if key not in _BID_ALLOWED:
        values = np.arange(MAX_TOTAL_POINTS + 1)
        table = (
            (values[None, :] > values[:, None])
            & (values[None, :] >= config.min_bid)
            & (values[None, :] <= config.total_points)
        )
        table[:, PASS_ACTION] = True
        table.setflags(write=False)
        _BID_ALLOWED[key] = table
    return _BID_ALLOWED[key]


# ---------------------------------------------------------------- phases


def _apply_bids(state: PedroState, games: np.ndarray, actions: np.ndarray, config: PedroConfig) -> None:
    seats = state.actor[games]
    state.bids[games, seats] = actions
    raised = actions != PASS_ACTION
    state.high_bid[games] = np.where(raised, actions, state.high_bid[games])
    state.maker[games] = np.where(raised, seats, state.maker[games])
    dealer_spoke = seats == state.dealer[games]
    state.phase[games] = np.where(dealer_spoke, TRUMP, BID)
    state.actor[games] = np.where(dealer_spoke, state.maker[games], (seats + 1) % config.num_players)
    thrown_in = games[dealer_spoke & (state.high_bid[games] == 0)]
    state.deal_over[thrown_in] = True
    state.last_redeal[thrown_in] = True


def _apply_trumps(
    state: PedroState, games: np.ndarray, actions: np.ndarray, config: PedroConfig, tables: RuleTables
) -> None:
    state.trump[games] = actions - TRUMP_OFFSET
    if config.six_card:
        _start_play(state, games, config, tables)
    else:
        state.phase[games] = DISCARD
        state.actor[games] = (state.dealer[games] + 1) % config.num_players


def _start_play(state: PedroState, games: np.ndarray, config: PedroConfig, tables: RuleTables) -> None:
    """The maker leads the first trick; remember which team holds Low (for ``low="held"``)."""
    state.phase[games] = PLAY
    state.actor[games] = state.maker[games]
    state.trick_leader[games] = state.maker[games]
    holds_low = (state.hands[games] & tables.low_set[state.trump[games]][:, None]) != 0  # (k, n)
    holder_team = config.team_of_seat[holds_low.argmax(axis=1)]
    state.low_team[games] = np.where(holds_low.any(axis=1), holder_team, -1)


def _apply_plays(
    state: PedroState, games: np.ndarray, actions: np.ndarray, config: PedroConfig, tables: RuleTables
) -> None:
    n = config.num_players
    seats = state.actor[games]
    cards = actions - PLAY_OFFSET
    if config.renege == "penalty":
        led_card = state.trick[games, state.trick_leader[games]]
        hand = state.hands[games, seats]
        legal = legal_plays(hand, state.trump[games], led_card, tables)
        reneged = (legal & CARD_BIT[cards]) == 0
        offenders = games[reneged]
        state.deal_over[offenders] = True
        state.last_renege[offenders] = config.team_of_seat[seats[reneged]]
        games, seats, cards = games[~reneged], seats[~reneged], cards[~reneged]
    card_bits = CARD_BIT[cards]
    _record_voids(state, games, seats, card_bits, tables)
    state.hands[games, seats] &= ~card_bits
    state.played[games, seats] |= card_bits
    state.trick[games, seats] = cards
    state.trick_size[games] += 1
    state.actor[games] = (seats + 1) % n

    complete = games[state.trick_size[games] == n]
    if complete.size == 0:
        return
    trick = state.trick[complete]
    winner = trick_winner(trick, state.trick_leader[complete], state.trump[complete], tables)
    state.won[complete, config.team_of_seat[winner]] |= np.bitwise_or.reduce(CARD_BIT[trick], axis=1)
    state.last_trick[complete] = trick
    state.last_trick_winner[complete] = winner
    state.trick[complete] = -1
    state.trick_size[complete] = 0
    state.tricks_done[complete] += 1
    state.trick_leader[complete] = winner
    state.actor[complete] = winner
    state.deal_over[complete[state.tricks_done[complete] == TRICKS_PER_DEAL]] = True


def _record_voids(
    state: PedroState, games: np.ndarray, seats: np.ndarray, card_bits: np.ndarray, tables: RuleTables
) -> None:
    """A follower who neither follows the led suit nor trumps a non-trump lead shows a void in the led suit.

    (Trumping a non-trump lead shows nothing: trumping is always allowed.) Public, kept in ``voids``.
    """
    led_card = state.trick[games, state.trick_leader[games]]  # -1 while leading
    key = state.trump[games].astype(np.intp) * 53 + np.where(led_card < 0, 52, led_card)  # [trump, led] of (4, 53)
    shows_void = (tables.answers.take(key) & card_bits) == 0  # leading: led_suit_bit is 0, nothing is recorded
    state.voids[games, seats] |= np.where(shows_void, tables.led_suit_bit.take(key), np.uint8(0))


# ---------------------------------------------------------------- end of a deal


def _finish_deals(
    state: PedroState, games: np.ndarray, config: PedroConfig, tables: RuleTables, deck_source: DeckSource
) -> None:
    """Score the deals that ended in ``games`` (or record them thrown in), decide matches, deal again."""
    thrown_in = state.last_redeal[games]
    state.last_maker[games] = np.where(thrown_in, -1, state.maker[games])
    state.last_bid[games] = np.where(thrown_in, 0, state.high_bid[games])
    state.last_trump[games] = np.where(thrown_in, -1, state.trump[games])
    state.last_points[games] = 0
    state.last_delta[games] = 0
    state.last_made[games] = -1

    scored = games[~thrown_in]
    won = np.zeros(games.size, dtype=bool)
    if scored.size:
        maker_team = config.team_of_seat[state.maker[scored]]
        bid = state.high_bid[scored].astype(np.int32)
        points = deal_points(
            state.won[scored], state.trump[scored], state.low_team[scored], tables, config.low == "held"
        )
        made, delta = score_deal(points, maker_team, bid, config.scoring)
        renege_team = state.last_renege[scored]
        if config.renege == "penalty":
            reneged = renege_team >= 0
            renege_made, renege_delta = score_renege(
                renege_team, maker_team, bid, config.num_teams, config.total_points
            )
            made = np.where(reneged, renege_made, made)
            delta = np.where(reneged[:, None], renege_delta, delta)
        state.scores[scored] += delta
        state.last_points[scored] = points
        state.last_delta[scored] = delta
        state.last_made[scored] = made
        winner = match_winner(state.scores[scored], config.target_score, maker_team, made)
        state.winner[scored] = winner
        won[~thrown_in] = winner >= 0
        if config.reward == "points":
            _credit_points(state, scored, delta, config)

    if config.reward == "win":
        winners = games[won]
        team_reward = np.where(np.arange(config.num_teams)[None, :] == state.winner[winners][:, None], 1.0, -1.0)
        state.rewards[winners] += team_reward[:, config.team_of_seat]

    one_deal = np.full(games.size, config.episode == "deal")
    truncated = ~won & ~one_deal & (state.deal_index[games] + 1 >= config.max_deals)
    over = won | one_deal | truncated
    state.terminated[games[won | (one_deal & ~truncated)]] = True
    state.truncated[games[truncated]] = True
    state.phase[games[over]] = OVER
    state.trick_leader[games[over]] = -1  # no trick follows

    going_on = games[~over]
    state.deal_index[going_on] += 1
    state.dealer[going_on] = (state.dealer[going_on] + 1) % config.num_players
    start_deal(state, going_on, config, deck_source)


def _credit_points(state: PedroState, games: np.ndarray, delta: np.ndarray, config: PedroConfig) -> None:
    """reward="points": each seat gets (its team's delta - the opponents' mean delta) / total points."""
    teams = config.num_teams
    others_mean = (delta.sum(axis=1, keepdims=True) - delta) / (teams - 1)
    team_reward = (delta - others_mean) / config.total_points
    state.rewards[games] += team_reward[:, config.team_of_seat].astype(np.float32)


# ---------------------------------------------------------------- step


def step(
    state: PedroState, actions: np.ndarray, config: PedroConfig, deck_source: DeckSource = seed_deck_source
) -> None:
    """Apply one action per game, in place. Actions must be legal (see :func:`legal_action_mask`);
    with ``renege="penalty"`` a play of a held card outside the legal set is a renege. Games whose
    phase is OVER ignore their action. Afterwards ``rewards``, ``deal_over``, ``terminated`` and
    ``truncated`` describe this step, and the ``last_*`` fields any deal that ended in it."""
    tables = RuleTables.for_variant(config.variant)
    actions = np.asarray(actions).astype(np.int16)
    if state.deal_over.any():  # clear what the previous step's deal endings reported
        state.rewards[:] = 0.0
        state.deal_over[:] = False
        state.last_redeal[:] = False
        state.last_renege[:] = -1
        state.terminated[:] = False
        state.truncated[:] = False
    games_in = games_by_phase(state.phase)  # found before any handler moves games on: each game acts once

    if games_in[BID] is not None:
        _apply_bids(state, games_in[BID], actions[games_in[BID]], config)
    if games_in[TRUMP] is not None:
        _apply_trumps(state, games_in[TRUMP], actions[games_in[TRUMP]], config, tables)
    if games_in[DISCARD] is not None:
        games = games_in[DISCARD]
        play_begins = exchange.apply_discard_phase(state, games, actions[games], config, tables)
        if play_begins.size:
            _start_play(state, play_begins, config, tables)
    if games_in[PLAY] is not None:
        _apply_plays(state, games_in[PLAY], actions[games_in[PLAY]], config, tables)

    if state.deal_over.any():
        _finish_deals(state, np.flatnonzero(state.deal_over), config, tables, deck_source)


_EVERY_GAME: dict[int, np.ndarray] = {}


def _every_game(batch_size: int) -> np.ndarray:
    """arange(batch_size), cached (read-only)."""
    if batch_size not in _EVERY_GAME:
        games = np.arange(batch_size)
        games.setflags(write=False)
        _EVERY_GAME[batch_size] = games
    return _EVERY_GAME[batch_size]
