"""Fit the rule agents' capture model (``agents.rule_based.CAPTURE_MODELS``) from self-play, and print it.

    python -m tools.fit_capture_models                          # every table: 2,000 steps of 512 games each
    python -m tools.fit_capture_models --tables 4:top 3:six_card --steps 500

For each table (players with a refill, or with ``six_card``) ``rule:heuristic`` plays itself at every
seat, the maker naming a random suit half the time (``--random-trumps``) and a bid drawn at random
among the legal ones a fifth of the time (``--explore-bids``), so every kind of hand appears as the
maker's. At each trump decision the maker's hand gives one sample per point card of the named suit:
the six features of :data:`agents.rule_based.CAPTURE_FEATURES` and whether the card is in the maker's
hand; when the deal ends, whether the maker's side captured it. A logistic regression (Newton's
method, a small ridge) per kind (``held``, ``unheld``) gives the weights, printed as the source of
``CAPTURE_MODELS``. A held ace is certain in the estimate, so it is left out of the fit.
docs/agents.md, "The fitted capture model", describes the model.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from agents.rule_based import CAPTURE_FEATURES, HeuristicAgent, capture_model_key
from pedro_env.actions import PASS_ACTION, TRUMP_OFFSET
from pedro_env.cards import RuleTables, bits_to_cards, cards_to_bits
from pedro_env.config import PedroConfig, make_config
from pedro_env.encoding import ObservationEncoder
from pedro_env.rules import hashed_decks, initial_state, legal_action_mask, new_match, step
from pedro_env.state import BID, OVER, TRUMP, PedroState

TABLES = [(players, refill) for players in (4, 3, 2) for refill in ("maker_sorted", "top", "dealer_robs", "six_card")]
RIDGE = 1e-3  # keeps the fit finite where a feature is constant in a small sample


@dataclass
class Samples:
    """Point trumps at trump decisions: features (one row each), held or not, captured by the maker's side."""

    features: list[np.ndarray] = field(default_factory=list)
    held: list[np.ndarray] = field(default_factory=list)
    captured: list[np.ndarray] = field(default_factory=list)
    open_deals: dict[int, tuple[int, np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)

    def open(self, game: int, maker_team: int, cards: np.ndarray, features: np.ndarray, held: np.ndarray) -> None:
        """A trump decision of ``game``: its point trumps wait for the deal's end."""
        self.open_deals[game] = (maker_team, cards, features, held)

    def close(self, game: int, won: np.ndarray) -> None:
        """``game``'s deal ended with ``won`` (T,) card sets per team: its point trumps are labelled."""
        if game not in self.open_deals:
            return
        maker_team, cards, features, held = self.open_deals.pop(game)
        taken = int(won[maker_team])
        self.features.append(features)
        self.held.append(held)
        self.captured.append(np.array([taken >> int(card) & 1 for card in cards], dtype=bool))


def table_config(players: int, refill: str) -> PedroConfig:
    if refill == "six_card":
        return make_config(num_players=players, six_card=True, scoring="simple" if players == 3 else "difference")
    return make_config(num_players=players, refill=refill, scoring="simple" if players == 3 else "difference")


def trump_features(agent: HeuristicAgent, hand: np.ndarray, trump: int, dealer: bool) -> tuple[np.ndarray, ...]:
    """(cards, (k, 6) features, (k,) held) of the point trumps of ``trump`` for a (52,) bool ``hand`` but a held ace,
    the features :meth:`HeuristicAgent.estimate_points` reads (:meth:`HeuristicAgent.trump_capture_features`)."""
    order = agent.trump_order[trump]
    held = hand[order]
    features = agent.trump_capture_features(int(cards_to_bits(hand[None, :])[0]), trump, dealer)
    fitted = agent.order_value[trump] > 0
    fitted[0] &= not held[0]  # a held ace is certain in the estimate: not fitted
    return order[fitted], features[fitted], held[fitted]


def self_play_samples(config: PedroConfig, steps: int, games: int, explore_bids: float, random_trumps: float,
                      seed: int) -> Samples:  # fmt: skip
    """Play ``steps`` steps of ``games`` games of ``rule:heuristic`` against itself and collect the samples."""
    agent = HeuristicAgent(config)
    encoder = ObservationEncoder(config, RuleTables.for_variant(config.variant))
    rng = np.random.default_rng(seed)
    samples = Samples()

    def recording_decks(state: PedroState, dealt: np.ndarray) -> np.ndarray:
        for game in dealt:  # the ending deal's captures are still in ``won``: its point trumps are labelled
            samples.close(int(game), state.won[game])
        return hashed_decks(state.seed[dealt], state.match_index[dealt], state.deal_index[dealt])

    state = initial_state(config, np.arange(games, dtype=np.uint64) + np.uint64(seed) * np.uint64(games),
                          deck_source=recording_decks)  # fmt: skip
    everyone = np.arange(games)
    for _ in range(steps):
        mask = legal_action_mask(state, config)
        actor = state.actor.astype(np.int64)
        actions = agent.act(encoder.encode(state, actor), mask, rng)
        bidding = np.flatnonzero((state.phase == BID) & (rng.random(games) < explore_bids))
        for game in bidding:
            actions[game] = rng.choice(np.flatnonzero(mask[game]))
        naming = np.flatnonzero(state.phase == TRUMP)
        for game in naming:
            if rng.random() < random_trumps:
                actions[game] = TRUMP_OFFSET + int(rng.integers(4))
            maker = int(actor[game])
            hand = bits_to_cards(state.hands[game : game + 1, maker])[0]
            dealer = maker == int(state.dealer[game])
            cards, features, held = trump_features(agent, hand, int(actions[game]) - TRUMP_OFFSET, dealer)
            samples.open(int(game), int(config.team_of_seat[maker]), cards, features, held)
        actions[state.phase == OVER] = PASS_ACTION
        step(state, actions, config, deck_source=recording_decks)
        over = everyone[state.phase == OVER]
        if over.size:  # the match ended with that deal: label it, then start the next match
            state.match_index[over] += 1
            new_match(state, over, config, recording_decks)
    return samples


def fit_logistic(features: np.ndarray, labels: np.ndarray, iterations: int = 50) -> np.ndarray:
    """Weights of ``P(label) = 1 / (1 + exp(-features @ w))`` by Newton's method with a small ridge."""
    weights = np.zeros(features.shape[1])
    for _ in range(iterations):
        chance = 1.0 / (1.0 + np.exp(-features @ weights))
        gradient = features.T @ (chance - labels) + RIDGE * weights
        hessian = (features * (chance * (1.0 - chance))[:, None]).T @ features + RIDGE * np.eye(features.shape[1])
        step_taken = np.linalg.solve(hessian, gradient)
        weights -= step_taken
        if np.abs(step_taken).max() < 1e-9:
            break
    return weights


def fit_table(samples: Samples) -> tuple[tuple[float, ...], tuple[float, ...], int]:
    """(held weights, unheld weights, samples) rounded to 3 places."""
    features = np.concatenate(samples.features)
    held = np.concatenate(samples.held)
    captured = np.concatenate(samples.captured).astype(np.float64)
    fitted = []
    for kind in (held, ~held):
        weights = fit_logistic(features[kind], captured[kind])
        fitted.append(tuple(round(float(w), 3) for w in weights))
    return fitted[0], fitted[1], int(captured.size)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.fit_capture_models", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--tables",
        nargs="+",
        default=[f"{p}:{r}" for p, r in TABLES],
        metavar="PLAYERS:REFILL",
        help="tables to fit (REFILL: maker_sorted, top, dealer_robs or six_card); default: all 12",
    )
    parser.add_argument("--steps", type=int, default=2000, help="steps of self-play per table (2000)")
    parser.add_argument("--games", type=int, default=512, help="games played at once (512)")
    parser.add_argument("--explore-bids", type=float, default=0.2, help="share of bids drawn at random (0.2)")
    parser.add_argument("--random-trumps", type=float, default=0.5, help="share of trumps named at random (0.5)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    tables = []
    for text in args.tables:
        players, _, refill = text.partition(":")
        if not players.isdigit() or (int(players), refill) not in TABLES:
            parser.error(
                f"--tables {text!r}: a table is PLAYERS:REFILL, one of " + ", ".join(f"{p}:{r}" for p, r in TABLES)
            )
        tables.append((int(players), refill))
    print(f"CAPTURE_FEATURES = {CAPTURE_FEATURES}")
    print("CAPTURE_MODELS: dict[tuple[int, str], CaptureModel] = {")
    for players, refill in tables:
        config = table_config(players, refill)
        samples = self_play_samples(config, args.steps, args.games, args.explore_bids, args.random_trumps, args.seed)
        held, unheld, count = fit_table(samples)
        print(f"    {capture_model_key(config)!r}: CaptureModel(  # {count:,} point trumps")
        print(f"        {held},")
        print(f"        {unheld},")
        print("    ),")
    print("}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
