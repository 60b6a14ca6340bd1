"""The ``search:policy`` agent: the look-ahead of ``search:full`` with a learned policy as the model of every player.

Where ``search:full`` assumes ``rule:heuristic`` at every other seat, this agent assumes the policy
(``policy``, played greedily; default the long recipe's PPO policy ``models/ppo_policy.pt`` under the default
rules, ``pretrained`` under any other) in three places:

1. **Worlds weighted by the policy** (:func:`policy_log_likelihood`): each sampled world is weighted by
   the policy's probability of every observed action of the other seats that the view lets it
   replay: the bids and passes of the auction and the maker's trump (from the hands as dealt), and
   the cards already played to the current trick. Probabilities are floored at ``floor`` and raised
   to ``temper``, so a player unlike the policy shifts weight instead of ruling worlds out.
2. **The policy plays the rollouts**: every candidate in every world is played to the end of the
   deal with the policy at every seat (:func:`~agents.search.rollout.play_out`, one forward a step for
   the whole batch).
3. **The policy's prior orders and prunes the candidates**: a candidate the policy gives less than
   ``prune`` is not searched (its top choice always is), the policy's own discard plan is searched
   beside the heuristic plans, and ties go to the policy's choice.

Play decisions are searched too: ``play_samples`` deals of the unseen cards consistent with the view
(:class:`~pedro_env.deal_sampler.HandSampler`, voids and the kept-trumps belief), each legal card
played out in each. Every decision's worlds come from a generator seeded by ``seed`` and a digest of
the view, so a decision is a pure function of what the player has seen.
"""

from __future__ import annotations

import hashlib
import random

import numpy as np

from agents import PPO_POLICY_SPEC, PRETRAINED_PATH
from agents.policy import PolicyAgent, rules_differ
from agents.search.agent import current_trick
from agents.search.lookahead import LookaheadAgent, Search
from agents.search.worlds import auction_start, play_worlds, sample_worlds
from pedro_env.actions import PASS_ACTION, PLAY_OFFSET, TRUMP_OFFSET
from pedro_env.cards import CARD_BIT, NO_CARDS, RuleTables
from pedro_env.config import PedroConfig, make_config
from pedro_env.deal_sampler import relaxed_sampler
from pedro_env.encoding import ObservationEncoder
from pedro_env.knowledge import hidden_cards
from pedro_env.rules import legal_action_mask, step
from pedro_env.state import BID, DISCARD, NOT_BID, PLAY, TRUMP, PedroState
from pedro_env.view import PublicView, decode_observations


def dealt_hands(
    worlds: PedroState, view: PublicView, game: int, tables: RuleTables, rng: np.random.Generator
) -> np.ndarray:
    """(W, n) uint64: each world's hands as dealt, before any discard or draw: a seat's discards go back, and the
    cards it drew (``view.drawn``) come out, its non-trumps first (a player keeps trumps and draws at random)."""
    hands = worlds.hands.copy()
    n = view.config.num_players
    trump = int(view.trump[game])
    is_trump = tables.is_trump[trump] if trump >= 0 else np.zeros(52, dtype=bool)
    for seat in range(1, n):
        drawn = int(view.drawn[game, seat])
        if drawn:
            for world in range(worlds.batch_size):
                held = np.flatnonzero((int(hands[world, seat]) >> np.arange(52)) & 1)
                order = held[np.lexsort((rng.random(held.size), is_trump[held]))]
                hands[world, seat] &= ~np.bitwise_or.reduce(CARD_BIT[order[:drawn]], initial=NO_CARDS)
        hands[:, seat] |= view.discards[game, seat]
    return hands


def policy_log_likelihood(
    worlds: PedroState, view: PublicView, game: int, config: PedroConfig, policy: PolicyAgent, floor: float
) -> np.ndarray:
    """(W,) float: the sum over the other seats' observed actions of log max(p, ``floor``), p the policy's probability
    of the action in that world: the auction and the maker's trump (before play; not when the dealer robs the pack,
    whose opponents' hands as dealt are unknown), and the current trick's cards (in play)."""
    total = np.zeros(worlds.batch_size)
    tables = RuleTables.for_variant(config.variant)
    encoder = ObservationEncoder(config, tables)
    log_floor = float(np.log(floor))

    def observed(state: PedroState, seat: int, action: int) -> None:
        observations = encoder.encode(state, np.full(state.batch_size, seat))
        masks = legal_action_mask(state, config, tables)
        total[:] += np.maximum(policy.log_probabilities(observations, masks)[:, action], log_floor)

    if int(view.phase[game]) == PLAY:
        _replay_trick(worlds, view, game, config, tables, observed)
    elif not view.robbing[game]:
        _replay_auction(worlds, view, game, config, tables, observed)
    return total


def _replay_auction(worlds, view, game, config, tables, observed) -> None:
    """Step the auction (and the maker's trump) of each world from the hands as dealt, scoring each other seat's."""
    n = config.num_players
    auction = auction_start(worlds, dealt_hands(worlds, view, game, tables, np.random.default_rng(0)))
    dealer = int(view.dealer[game])
    bids = [int(x) for x in view.bids[game]]
    high, maker = 0, -1
    for offset in range(1, n + 1):  # eldest first, the dealer last
        seat = (dealer + offset) % n
        if bids[seat] == NOT_BID:
            return
        auction.actor[:] = seat
        auction.high_bid[:] = high
        auction.maker[:] = maker
        if seat != 0:
            observed(auction, seat, bids[seat] if bids[seat] != 0 else PASS_ACTION)
        auction.bids[:, seat] = bids[seat]
        if bids[seat] > high:
            high, maker = bids[seat], seat
    trump = int(view.trump[game])
    if trump >= 0 and maker > 0:
        auction.phase[:] = TRUMP
        auction.actor[:] = maker
        auction.high_bid[:] = high
        auction.maker[:] = maker
        observed(auction, maker, TRUMP_OFFSET + trump)


def _replay_trick(worlds, view, game, config, tables, observed) -> None:
    """Take the current trick's cards back into the hands that played them and replay them, scoring each."""
    n = config.num_players
    leader, cards = current_trick(view, game)
    if not cards:
        return
    trick = worlds.copy()
    trump = int(view.trump[game])
    led = int(tables.effective_suit[trump, cards[0]])
    for index, card in enumerate(cards):
        seat = (leader + index) % n
        trick.hands[:, seat] |= CARD_BIT[card]
        trick.played[:, seat] &= ~CARD_BIT[card]
        following = int(tables.effective_suit[trump, card]) == led or tables.is_trump[trump, card]
        if index and not following:  # the void this card showed was not known before it
            trick.voids[:, seat] &= np.uint8(~(1 << led) & 0xFF)
    trick.trick[:] = -1
    trick.trick_size[:] = 0
    trick.actor[:] = leader
    for index, card in enumerate(cards):
        seat = (leader + index) % n
        observed(trick, seat, PLAY_OFFSET + card)
        step(trick, np.full(trick.batch_size, PLAY_OFFSET + card, dtype=np.int64), config)


DEFAULT_MODEL = PPO_POLICY_SPEC
"""The players' model under the default rules unless ``policy=`` names another: the PPO policy, trained there. As
the model, the distilled policy of the long recipe (a wider network) cost 1.36 times the time per deal for no
measured gain (docs/search.md)."""


def default_model(config: PedroConfig) -> str:
    """The agent spec of the players' model in games of ``config`` unless ``policy=`` names another:
    :data:`DEFAULT_MODEL` under the default rules (however a game is cut and rewarded), where it was trained, else
    ``pretrained``, trained under every rule set; ValueError in one line naming the file when it is missing."""
    if not rules_differ(make_config(), config):
        return DEFAULT_MODEL
    if not PRETRAINED_PATH.is_file():
        raise ValueError(
            f"the default model of the players under these rules, the shipped policy {PRETRAINED_PATH}, is "
            "missing: policy=ckpt:PATH gives another model"
        )
    return "pretrained"


class PolicySearchAgent(LookaheadAgent):
    """``search:policy``: ``search:full``'s look-ahead with a learned policy as the model of every player.

    Options (spec ``search:policy,samples=32,...``):

    - ``policy`` (:func:`default_model`: the PPO policy under the default rules, ``pretrained`` under any other):
      the policy (``ckpt:PATH`` or ``pretrained``; played greedily);
    - ``samples`` (32): worlds per bid, trump or discard decision; ``play_samples`` (24): per play decision;
    - ``bid_span`` (4), ``hopeless`` (3.0), ``deny`` (true), ``max_kept_off`` (3): the candidates of ``search:full``
      (a hand passes unsearched only when the policy would pass too);
    - ``prune`` (0.01): candidates the policy gives less probability are not searched (its top one always is);
    - ``floor`` (0.01), ``temper`` (0.5): a world's weight is the product over the other seats' observed actions of
      max(p, floor) ** temper (``temper=0``: every world alike);
    - ``seed`` (0): mixed into every decision's world generator.
    """

    def __init__(
        self,
        config: PedroConfig,
        policy: str | None = None,
        samples: int = 32,
        play_samples: int = 24,
        bid_span: int = 4,
        hopeless: float = 3.0,
        prune: float = 0.01,
        floor: float = 0.01,
        temper: float = 0.5,
        deny: bool = True,
        max_kept_off: int = 3,
        seed: int = 0,
    ) -> None:
        policy = default_model(config) if policy is None else policy
        if not isinstance(policy, str) or not (policy == "pretrained" or policy.startswith(("pretrained,", "ckpt:"))):
            raise ValueError(f"policy must be a learned policy, pretrained or ckpt:PATH, got {policy!r}")
        if int(play_samples) < 1 or not 0.0 < float(floor) <= 1.0 or float(temper) < 0 or not 0 <= float(prune) < 1:
            raise ValueError(
                f"play_samples must be >= 1, floor in (0, 1], temper >= 0 and prune in [0, 1), got "
                f"play_samples={play_samples}, floor={floor}, temper={temper}, prune={prune}"
            )
        super().__init__(
            config,
            samples=samples,
            bid_span=bid_span,
            hopeless=hopeless,
            deny=deny,
            max_kept_off=max_kept_off,
            rollout=policy,
            seed=seed,
        )
        self.policy: PolicyAgent = self.rollout
        self.trained_rules_note = self.policy.trained_rules_note  # its model's rules (arena.match.other_rules_note)
        self.trained_rules_subject = "'s model"
        self.play_samples = int(play_samples)
        self.prune = float(prune)
        self.floor = float(floor)
        self.temper = float(temper)
        self.tables = RuleTables.for_variant(config.variant)
        self.stats.searches["play"] = 0
        self.relaxed: dict[str, int] = {}

    # ------------------------------------------------------------------ entry point

    def act(self, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        observations = np.asarray(observations)
        if observations.ndim == 1:
            observations = observations[None, :]
        masks = np.asarray(action_masks).reshape(observations.shape[0], -1).astype(bool)
        view = decode_observations(observations, self.config)
        priors = self.policy.log_probabilities(observations, masks)
        actions = priors.argmax(axis=1).astype(np.int64)
        searches: list[Search] = []
        choosing = masks.sum(axis=1) > 1
        for game in np.flatnonzero(choosing):
            game = int(game)
            phase = int(view.phase[game])
            if phase == PLAY:
                found = self._play_search(view, observations[game], game, masks[game], priors[game])
            elif phase == BID:
                found = self._guided_bid(view, game, masks[game], priors[game])
            elif phase == TRUMP:
                found = self._guided_search(view, game, self._trump_candidates(masks[game]), priors[game], "trump")
            else:
                found = self._discard_search(view, game)
            if isinstance(found, Search):
                searches.append(found)
            elif phase != DISCARD:
                actions[game] = found
        self._run(searches)
        for game in np.flatnonzero((view.phase == DISCARD) & choosing):
            actions[game] = self._follow_plan(view, observations[game], int(game), masks[game])
        for search in searches:
            if search.kind != "discard":
                actions[search.game] = search.choice
        return actions

    # ------------------------------------------------------------------ candidates

    def _guided_bid(self, view: PublicView, game: int, mask: np.ndarray, prior: np.ndarray) -> Search | int:
        """Pass unsearched when the policy passes and the hand is hopeless; else the search over the bid candidates."""
        if int(prior.argmax()) == PASS_ACTION and mask[PASS_ACTION] and self.hopeless_hand(view, game):
            self.stats.pruned_bids += 1
            return PASS_ACTION
        candidates = self.bid_candidates(view, game, mask, int(prior.argmax()))
        return self._guided_search(view, game, candidates, prior, "bid")

    def _ordered(self, candidates: list[int], prior: np.ndarray) -> list[int]:
        """The candidates worth searching, most probable first: the favourite always, the others above ``prune``."""
        favourite = int(prior.argmax())
        floor = np.log(self.prune) if self.prune > 0 else -np.inf
        kept = {c for c in candidates if prior[c] >= floor} | {favourite}
        return sorted(kept, key=lambda c: -prior[c])

    def _guided_search(self, view: PublicView, game: int, candidates: list[int], prior: np.ndarray, kind: str):
        candidates = self._ordered(candidates, prior)
        if len(candidates) == 1:
            return candidates[0]
        worlds, weights = self._worlds(view, game)
        return Search(game, kind, candidates, worlds, weights)

    def keep_candidates(self, view: PublicView, game: int) -> list[int]:
        """``search:full``'s discard plans with the policy's own plan first (what it would keep, discarding alone)."""
        plans = super().keep_candidates(view, game)
        mine = self._policy_plan(view, game)
        return [mine] + [plan for plan in plans if plan != mine]

    def _policy_plan(self, view: PublicView, game: int) -> int:
        """The cards the policy keeps from the turn-start hand of game ``game`` of ``view`` (its discards, in one world:
        nothing it sees changes while it discards)."""
        world, _ = sample_worlds(view, game, self.world_config, 1, np.random.default_rng(0))
        encoder = ObservationEncoder(self.world_config, self.tables)
        hand = int(view.hand[game])
        for _ in range(hand.bit_count() + 1):
            if int(world.phase[0]) != DISCARD or int(world.actor[0]) != 0:
                break
            mask = legal_action_mask(world, self.world_config, self.tables)
            action = self.policy.log_probabilities(encoder.encode(world, np.zeros(1, dtype=np.intp)), mask).argmax(1)
            step(world, action.astype(np.int64), self.world_config)
        return hand & ~int(world.discards[0, 0])

    # ------------------------------------------------------------------ worlds

    def _tempered(self, log_likelihood: np.ndarray) -> np.ndarray:
        scaled = self.temper * log_likelihood
        return np.exp(scaled - scaled.max())

    def world_weights(self, worlds: PedroState, view: PublicView, game: int) -> np.ndarray:
        """(W,) float: each world's tempered likelihood under the policy (every world alike with ``temper=0``)."""
        if self.temper == 0:
            return np.ones(worlds.batch_size)
        likelihood = policy_log_likelihood(worlds, view, game, self.world_config, self.policy, self.floor)
        return self._tempered(likelihood)

    def _play_search(
        self, view: PublicView, observation: np.ndarray, game: int, mask: np.ndarray, prior: np.ndarray
    ) -> Search | int:
        candidates = self._ordered([int(a) for a in np.flatnonzero(mask)], prior)
        if len(candidates) == 1:
            return candidates[0]
        digest = hashlib.blake2b(np.ascontiguousarray(observation).tobytes(), digest_size=8).digest()
        rnd = random.Random(self.seed * 1_000_003 + int.from_bytes(digest, "little"))
        sampler = relaxed_sampler(hidden_cards(view, game, self.tables, kept_trumps=True), self.relaxed)
        worlds = play_worlds(view, game, self.world_config, [sampler.sample(rnd) for _ in range(self.play_samples)])
        return Search(
            game, "play", candidates, worlds, self.world_weights(worlds, view, game), trump=int(view.trump[game])
        )
