"""The ``search:pimc`` agent: perfect-information Monte Carlo in the play phase.

For every play decision with more than one legal card the agent

1. reads what it knows from the public view (:func:`~pedro_env.knowledge.hidden_cards`);
2. draws up to ``samples`` deals of the unseen cards that satisfy it
   (:class:`~pedro_env.deal_sampler.HandSampler`), stopping early once the choice is clear or the
   node budget is spent;
3. solves each deal with alpha-beta over the remaining cards (:class:`~agents.search.solver.TrickSearch`):
   to the end of the deal when at most ``exact`` tricks are left, else ``depth`` tricks ahead and a
   static estimate beyond, giving a value for every legal card;
4. plays the legal card with the best mean value (ties: the card with fewer points, then the weaker).

Bids, trumps and discards are delegated to ``rule:heuristic`` (:mod:`agents.rule_based`) in one
batched call. All randomness comes from the ``rng`` given to :meth:`PimcAgent.act` (one draw seeds
a ``random.Random`` for the decisions of that call), so a seeded evaluation is reproducible.
``renege="penalty"``: the agent never reneges; it only plays cards of the legal set (the action mask).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import numpy as np

from agents import make_agent  # agents/__init__ imports this package only on demand, so there is no cycle
from agents.base import Agent
from agents.search.solver import TrickSearch
from agents.search.tables import card_list
from agents.search.values import DealScoring
from pedro_env.actions import PLAY_OFFSET
from pedro_env.cards import RuleTables
from pedro_env.config import PedroConfig
from pedro_env.deal_sampler import relaxed_sampler
from pedro_env.knowledge import hidden_cards
from pedro_env.state import PLAY
from pedro_env.view import PublicView, decode_observations


@dataclass
class SearchStats:
    """Counters of the agent's searches (for tuning and for the report)."""

    decisions: int = 0
    samples: int = 0
    nodes: int = 0
    fallback_samples: int = 0
    relaxed: dict[str, int] = field(default_factory=dict)


class PimcAgent(Agent):
    """``search:pimc``: perfect-information Monte Carlo in the play phase, the heuristic agent elsewhere.

    Options (spec ``search:pimc,samples=64,depth=3,...``; the defaults were tuned against
    ``rule:heuristic`` in duplicate within about 1 s of CPU per match to 62 on one core; docs/search.md):

    - ``samples`` (64): most deals drawn per decision;
    - ``min_samples`` (12) and ``confidence`` (3.5): stop drawing once the best card beats every other
      by ``confidence`` standard errors of their mean paired difference (or ties it in every sample);
      ``confidence=0`` always draws ``samples``;
    - ``max_nodes`` (400000): also stop once the searches of a decision have visited this many nodes
      (after ``min_samples``), which bounds the rare very hard positions;
    - ``depth`` (3): tricks searched (the current one counts), the static estimate beyond;
    - ``exact`` (5): search to the end of the deal whenever at most this many tricks are left;
    - ``objective`` (``score``): ``score`` or ``points`` (:mod:`agents.search.solver`); ``score``
      applies when the search reaches the end of the deal, ``points`` otherwise;
    - ``kept_trumps`` (true): the discard belief of :func:`hidden_cards`;
    - ``contested_share`` (0.5): the share of a contested point card the static estimate gives its
      holder's side (0.5: contested cards count for nobody);
    - ``heuristic`` (``rule:heuristic``): the agent spec for bids, trumps and discards.

    ``stats`` (:class:`SearchStats`) counts decisions, samples, nodes, constructive-fallback samples and
    relaxed constraints.
    """

    def __init__(
        self,
        config: PedroConfig,
        samples: int = 64,
        depth: int = 3,
        exact: int = 5,
        objective: str = "score",
        kept_trumps: bool = True,
        min_samples: int = 12,
        confidence: float = 3.5,
        max_nodes: int = 400_000,
        contested_share: float = 0.5,
        heuristic: str = "rule:heuristic",
    ) -> None:
        super().__init__(config)
        if int(samples) < 1 or int(depth) < 1:
            raise ValueError(f"samples and depth must be >= 1, got samples={samples}, depth={depth}")
        if objective not in ("points", "score"):
            raise ValueError(f"objective must be 'points' or 'score', got {objective!r}")
        self.samples = int(samples)
        self.depth = int(depth)
        self.exact = max(int(exact), self.depth)
        self.objective = objective
        self.kept_trumps = bool(kept_trumps)
        self.min_samples = max(2, int(min_samples))
        self.confidence = float(confidence)
        self.max_nodes = int(max_nodes)
        self.contested_share = float(contested_share)
        self.tables = RuleTables.for_variant(config.variant)
        # per trump suit, each card's tie-break key among equal values: fewer points, then weaker
        self._tie_keys = [
            [(-int(self.tables.points[t, c]), -int(self.tables.trick_strength[t, c])) for c in range(52)]
            for t in range(4)
        ]
        self.stats = SearchStats()
        self.heuristic = make_agent(heuristic, config)

    def act(self, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return self.act_with_margins(observations, action_masks, rng)[0]

    def act_with_margins(
        self, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(actions, margins)``, both (B,): :meth:`act`'s choices (the same for the same ``rng``) and by how much
        each searched card beats the next best (float64, points: mean values over the deals sampled; 0 where cards
        tie); ``inf`` where the agent did not search (outside the play phase, or one legal card)."""
        observations = np.asarray(observations)
        if observations.ndim == 1:
            observations = observations[None, :]
        action_masks = np.asarray(action_masks).reshape(observations.shape[0], -1)
        view = decode_observations(observations, self.config)
        actions = np.zeros(observations.shape[0], dtype=np.int64)
        margins = np.full(observations.shape[0], np.inf)
        playing = view.phase == PLAY
        others = np.flatnonzero(~playing)
        if others.size:
            actions[others] = self.heuristic.act(observations[others], action_masks[others], rng)
        games = np.flatnonzero(playing)
        if games.size:
            rnd = random.Random(int(rng.integers(2**63)))
            for game in games:
                card, margins[game] = self._choose(view, int(game), action_masks[game], rnd)
                actions[game] = PLAY_OFFSET + card
        return actions, margins

    def action_values(self, observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator) -> dict:
        """``{action: value}`` of one play decision ((D,) observation, (133,) mask): each legal card's mean value over
        the deals sampled (as :meth:`choose_card` samples them; the deal value of ``objective``, in points).
        ``{}`` outside the play phase or with one legal card."""
        observations = np.asarray(observation)[None, :]
        mask = np.asarray(action_mask).reshape(-1)
        view = decode_observations(observations, self.config)
        legal = sum(1 << int(card) for card in np.flatnonzero(mask[PLAY_OFFSET:]))
        if int(view.phase[0]) != PLAY or legal.bit_count() < 2:
            return {}
        history = self._sampled_values(view, 0, legal, random.Random(int(rng.integers(2**63))))
        return {PLAY_OFFSET + card: sum(values) / len(values) for card, values in history.items()}

    def choose_card(self, view: PublicView, game: int, action_mask: np.ndarray, rnd: random.Random) -> int:
        """The card to play in game ``game`` of ``view`` (its phase is PLAY)."""
        return self._choose(view, game, action_mask, rnd)[0]

    def _choose(self, view: PublicView, game: int, action_mask: np.ndarray, rnd: random.Random) -> tuple[int, float]:
        """``(card, margin)``: :meth:`choose_card`'s card and its mean value minus the best other card's (points;
        ``inf`` with one legal card)."""
        legal = sum(1 << int(card) for card in np.flatnonzero(action_mask[PLAY_OFFSET:]))
        cards = card_list(legal)
        if len(cards) == 1:
            return cards[0], math.inf
        self.stats.decisions += 1
        history = self._sampled_values(view, game, legal, rnd)
        tie_keys = self._tie_keys[int(view.trump[game])]
        # best mean value; ties to the card that gives away the least (fewest points, then weakest)
        best = max(cards, key=lambda card: (round(sum(history[card]), 6), *tie_keys[card]))
        runner_up = max(round(sum(history[card]), 6) for card in cards if card != best)
        return best, max(0.0, (round(sum(history[best]), 6) - runner_up) / len(history[best]))

    def _sampled_values(self, view: PublicView, game: int, legal: int, rnd: random.Random) -> dict[int, list[float]]:
        """``history[card]``: the value of each card of ``legal`` in every deal sampled (one entry per sample,
        in sampling order); sampling stops as the class docstring says."""
        trump = int(view.trump[game])
        n = self.config.num_players
        sampler = relaxed_sampler(hidden_cards(view, game, self.tables, self.kept_trumps), self.stats.relaxed)
        leader, trick_cards = current_trick(view, game)
        teams = self.config.num_teams
        low_held = self.config.low == "held"
        scoring = None
        if self.objective == "score":
            maker = int(view.maker[game])
            scoring = DealScoring(teams, maker % teams, int(view.high_bid[game]), self.config.scoring == "difference")
        my_hand = int(view.hand[game])
        tricks_left = my_hand.bit_count()  # counting the current trick: I have not played to it yet
        depth = tricks_left if tricks_left <= self.exact else self.depth
        search = TrickSearch(self.config.variant, trump, n, teams, depth, self.contested_share, low_held, scoring)
        captured = [sum(search.points[card] for card in card_list(int(won))) for won in view.won[game]]
        low_bit = 1 << int(self.tables.low_card[trump])
        low_played_by = [seat for seat in range(n) if int(view.played[game, seat]) & low_bit]
        history: dict[int, list[float]] = {card: [] for card in card_list(legal)}
        used = 0
        for used in range(1, self.samples + 1):
            hands = sampler.sample(rnd)
            hands[0] = my_hand
            deal_points = captured
            if low_held and scoring is not None:  # Low scores for the team of the seat that held it at play start
                holders = low_played_by or [seat for seat in range(n) if hands[seat] & low_bit]
                if holders:
                    deal_points = list(captured)
                    deal_points[holders[0] % teams] += 1
            values = search.root_values(hands, leader, trick_cards, legal, deal_points)
            for card, value in values.items():
                history[card].append(value)
            if used >= self.min_samples and (search.nodes >= self.max_nodes or self._settled(history)):
                break
        self.stats.samples += used
        self.stats.nodes += search.nodes
        self.stats.fallback_samples += sampler.fallbacks
        return history

    def _settled(self, history: dict[int, list[float]]) -> bool:
        """Whether more samples would hardly change the choice: the best card's values beat every other card's,
        paired by sample, by ``confidence`` standard errors of the mean difference (or equal them in every sample)."""
        if self.confidence <= 0:
            return False
        best = max(history, key=lambda card: sum(history[card]))
        best_values = history[best]
        count = len(best_values)
        for card, values in history.items():
            if card == best:
                continue
            differences = [b - v for b, v in zip(best_values, values)]
            mean = sum(differences) / count
            if mean == 0 and not any(differences):
                continue  # interchangeable in every sample so far
            variance = sum((d - mean) ** 2 for d in differences) / (count - 1)
            if mean <= self.confidence * math.sqrt(variance / count):
                return False
        return True


def current_trick(view: PublicView, game: int) -> tuple[int, list[int]]:
    """``(leader, trick_cards)`` of game ``game``'s current trick: the relative seat that led it and the cards
    played to it so far, in play order."""
    n = view.config.num_players
    leader = int(view.trick_leader[game])
    trick_cards: list[int] = []
    for offset in range(n):
        seat = (leader + offset) % n
        card = int(view.trick[game, seat])
        if card < 0:
            break
        trick_cards.append(card)
    return leader, trick_cards
