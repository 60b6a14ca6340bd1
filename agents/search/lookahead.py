"""The ``search:full`` agent: sampled look-ahead for bids, trumps and discards, PIMC in the play.

For a bid, trump or discard decision with a choice the agent

1. draws ``samples`` worlds consistent with its view (:func:`~agents.search.worlds.sample_worlds`),
   weighted by how well the model bidder explains the auction so far
   (:func:`~agents.search.worlds.auction_weights`, ``infer``);
2. plays every candidate out in every world, all in one engine batch
   (:func:`~agents.search.rollout.play_out`): the candidate first, then the rollout agent for every
   seat to the end of the deal;
3. takes the candidate with the best weighted mean deal value: its team's score change less the
   opponents', under the config's scoring, so a bid made or set counts as the rules count it.

Candidates. Bids: pass and the bids from the one needed up to ``bid_span`` above it, or above the model
bidder's own bid when no partner is still to speak (:meth:`LookaheadAgent.bid_candidates`; the dealer,
last to speak, only the one needed); a hand whose best estimate (:meth:`RuleBasedAgent.estimate_points`)
is more than ``hopeless`` points short of the bid needed passes without a search. Trumps: the four
suits. Discards: whole discard plans, the cards kept (:meth:`LookaheadAgent.keep_candidates`), chosen
once per turn and followed card by card; a defender's plans include throwing its point trumps out
of play (``deny``). Play: :class:`~agents.search.agent.PimcAgent` (options ``play_samples``,
``play_depth``, ``play_exact``).

Every decision's worlds are drawn from a generator seeded by the agent's ``seed`` and a digest of
the public facts of the turn (:func:`turn_digest`), so a decision is a pure function of what the
agent has seen: the same view gives the same choice, in any process and any batch, and a discard
plan chosen at the first discard of a turn is found again (or recomputed identically) at the next.
Only the play search draws on the ``rng`` given to :meth:`LookaheadAgent.act`.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field, replace

import numpy as np

from agents import make_agent
from agents.base import Agent
from agents.rule_based import HeuristicAgent
from agents.search.agent import PimcAgent
from agents.search.rollout import concatenate, plan_actions, play_out
from agents.search.worlds import auction_weights, sample_worlds
from pedro_env.actions import DISCARD_OFFSET, DONE_ACTION, NUM_ACTIONS, PASS_ACTION, TRUMP_OFFSET
from pedro_env.cards import HAND_AT_PLAY, bits_to_cards
from pedro_env.config import PedroConfig
from pedro_env.state import BID, DISCARD, NOT_BID, PLAY, TRUMP, PedroState
from pedro_env.view import PublicView, decode_observations

PLAN_CACHE_SIZE = 4096
PLAY_MAX_NODES = 150_000  # the play search's node budget per decision


@dataclass
class LookaheadStats:
    """Counters of the look-ahead searches (for tuning and for the report)."""

    searches: dict[str, int] = field(default_factory=lambda: {"bid": 0, "trump": 0, "discard": 0})
    pruned_bids: int = 0
    worlds_played: int = 0
    relaxed_worlds: int = 0


@dataclass
class Search:
    """One decision to search: its ``candidates`` (actions, or card sets kept for ``kind="discard"``), played out
    in ``worlds`` weighted by ``weights``; ``choice`` is filled in by the search."""

    game: int
    kind: str  # "bid", "trump" or "discard"
    candidates: list[int]
    worlds: PedroState
    weights: np.ndarray
    digest: int = 0  # the turn's digest (discard plans are cached by it)
    trump: int = -1
    choice: int = -1
    values: np.ndarray | None = None  # (C,) float64: each candidate's weighted mean deal value, filled in by the search
    remember: bool = True  # a discard search's choice goes to the plan cache (not for :meth:`action_values`)


def turn_digest(view: PublicView, game: int) -> int:
    """A 64-bit digest of the public facts of game ``game``'s turn, the viewer's own discards of this turn
    given back to its hand (so every decision of one discard turn has the same digest)."""
    own_discards = int(view.discards[game, 0])
    parts = [
        np.array([int(view.hand[game]) | own_discards], dtype=np.uint64),
        view.discards[game, 1:],
        view.bids[game],
        view.done[game, 1:],
        view.drawn[game],
        view.hand_sizes[game, 1:],
        view.to_go[game],
        np.array(
            [view.phase[game], view.dealer[game], view.maker[game], view.trump[game], view.robbing[game]],
            dtype=np.int16,
        ),
        np.array([view.stock_left[game]], dtype=np.int16),
    ]
    digest = hashlib.blake2b(b"".join(np.ascontiguousarray(p).tobytes() for p in parts), digest_size=8)
    return int.from_bytes(digest.digest(), "little")


def turn_start_view(view: PublicView, game: int) -> PublicView:
    """Game ``game`` of ``view`` alone, as it was when the viewer's current discard turn began (its
    discards of this turn back in its hand)."""
    one = replace(view, **{name: getattr(view, name)[game : game + 1].copy() for name in _VIEW_ARRAYS})
    own = one.discards[0, 0]
    one.hand[0] |= own
    one.hand_sizes[0, 0] += int(np.bitwise_count(own))
    one.discards[0, 0] = 0
    return one


_VIEW_ARRAYS = [name for name in PublicView.__dataclass_fields__ if name != "config"]


class LookaheadAgent(Agent):
    """``search:full``: bids, trumps and discards by sampled look-ahead, the play by PIMC.

    Options (spec ``search:full,samples=40,...``):

    - ``samples`` (40): worlds per decision, shared by all its candidates;
    - ``bid_span`` (4): bids considered above the one needed (with no partner still to speak, above the model
      bidder's own bid when that is higher);
    - ``hopeless`` (3.0): pass without a search when the best estimate is this far below the bid needed;
    - ``infer`` (0.3): auction inference, the weight of a world per spoken bid the model bidder would
      not have made (1: no inference);
    - ``deny`` (true): a defender's discard plans may throw its point trumps (but the ace) out of play;
    - ``max_kept_off`` (3): most non-trumps a discard plan keeps;
    - ``rollout`` (``rule:heuristic``): the agent that plays every seat in the look-ahead;
    - ``play_samples`` (64), ``play_depth`` (4), ``play_exact`` (6), ``play_min_samples`` (4),
      ``play_confidence`` (2.0): the play search (``search:pimc``'s options ``samples``, ``depth``, ``exact``,
      ``min_samples``, ``confidence``; deeper than its defaults, with an earlier stop);
    - ``seed`` (0): mixed into every decision's world generator.
    """

    def __init__(
        self,
        config: PedroConfig,
        samples: int = 40,
        bid_span: int = 4,
        hopeless: float = 3.0,
        infer: float = 0.3,
        deny: bool = True,
        max_kept_off: int = 3,
        rollout: str = "rule:heuristic",
        play_samples: int = 64,
        play_depth: int = 4,
        play_exact: int = 6,
        play_min_samples: int = 4,
        play_confidence: float = 2.0,
        seed: int = 0,
    ) -> None:
        super().__init__(config)
        if int(samples) < 1 or int(bid_span) < 0 or int(max_kept_off) < 0:
            raise ValueError(
                f"samples must be >= 1 and bid_span, max_kept_off >= 0, got samples={samples}, "
                f"bid_span={bid_span}, max_kept_off={max_kept_off}"
            )
        if not 0.0 < float(infer) <= 1.0:
            raise ValueError(f"infer must be in (0, 1], got {infer}")
        self.samples = int(samples)
        self.bid_span = int(bid_span)
        self.hopeless = float(hopeless)
        self.infer = float(infer)
        self.deny = bool(deny)
        self.max_kept_off = int(max_kept_off)
        self.seed = int(seed)
        self.world_config = replace(config, episode="deal")
        self.rollout = make_agent(rollout, self.world_config)
        self.model = HeuristicAgent(config)  # the hand estimate, card values and the model bidder
        self.world_model = HeuristicAgent(self.world_config)
        self._no_draws = np.random.default_rng(0)  # the model player's rng: a rule agent draws nothing
        self.player = PimcAgent(
            config,
            samples=play_samples,
            depth=play_depth,
            exact=play_exact,
            min_samples=play_min_samples,
            confidence=play_confidence,
            max_nodes=PLAY_MAX_NODES,
        )
        self.stats = LookaheadStats()
        self._plans: OrderedDict[int, int] = OrderedDict()

    # ------------------------------------------------------------------ entry point

    def act(self, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        observations = np.asarray(observations)
        if observations.ndim == 1:
            observations = observations[None, :]
        masks = np.asarray(action_masks).reshape(observations.shape[0], -1).astype(bool)
        view = decode_observations(observations, self.config)
        actions = masks.argmax(axis=1).astype(np.int64)
        playing = np.flatnonzero(view.phase == PLAY)
        if playing.size:
            actions[playing] = self.player.act(observations[playing], masks[playing], rng)
        searches: list[Search] = []
        for game in np.flatnonzero((view.phase != PLAY) & (masks.sum(axis=1) > 1)):
            game = int(game)
            phase = int(view.phase[game])
            if phase == BID:
                found = self._bid_search(view, observations[game], game, masks[game])
            elif phase == TRUMP:
                suits = self._trump_candidates(masks[game])
                found = self._action_search(view, observations[game], game, suits, "trump")
            else:
                found = self._discard_search(view, game)
            if isinstance(found, Search):
                searches.append(found)
            elif phase != DISCARD:
                actions[game] = found
        self._run(searches)
        for game in np.flatnonzero((view.phase == DISCARD) & (masks.sum(axis=1) > 1)):
            actions[game] = self._follow_plan(view, observations[game], int(game), masks[game])
        for search in searches:
            if search.kind != "discard":
                actions[search.game] = search.choice
        return actions

    def action_values(self, observation: np.ndarray, action_mask: np.ndarray, include: tuple[int, ...] = ()) -> dict:
        """``{action: value}`` for one decision ((D,) observation, (133,) mask): the weighted mean deal value (the
        team's score change less the opponents', in points) of each candidate the agent weighs, plus the legal
        actions of ``include``. Bids and trumps: the candidates of :meth:`act` (no hopeless pruning); discards: the
        best plan each legal discard (or done) is consistent with, missing where no plan is; the play: PIMC's
        mean value of each legal card. The same worlds as :meth:`act`, so the best candidate is its choice."""
        observations = np.asarray(observation)[None, :]
        mask = np.asarray(action_mask).reshape(-1).astype(bool)
        view = decode_observations(observations, self.config)
        phase = int(view.phase[0])
        legal = [int(action) for action in np.flatnonzero(mask)]
        if phase == PLAY:
            return self.player.action_values(observations[0], mask, np.random.default_rng(self.seed))
        if phase == DISCARD:
            return self._discard_values(view, legal)
        if phase == BID:
            candidates = self.bid_candidates(view, 0, mask, self._model_action(observations[0], mask))
        else:
            candidates = self._trump_candidates(mask)
        candidates += [action for action in include if action in legal and action not in candidates]
        kind = "bid" if phase == BID else "trump"
        found = self._action_search(view, observations[0], 0, candidates, kind) if candidates else None
        if not isinstance(found, Search):
            return {}
        self._run([found])
        assert found.values is not None
        return dict(zip(found.candidates, found.values.tolist()))

    def _discard_values(self, view: PublicView, legal: list[int]) -> dict:
        """Each legal discard action's value: the best of this turn's plans that it is consistent with."""
        start = turn_start_view(view, 0)
        plans = self.keep_candidates(start, 0)
        hand = int(view.hand[0])
        possible = [keep for keep in plans if keep & ~hand == 0]  # every card the plan keeps is still held
        if len(possible) < 2:
            return {}
        worlds, weights = self._worlds(start, 0)
        search = Search(0, "discard", possible, worlds, weights, trump=int(start.trump[0]), remember=False)
        self._run([search])
        assert search.values is not None
        values: dict[int, float] = {}
        for action in legal:
            card = action - DISCARD_OFFSET
            fits = [
                value
                for keep, value in zip(possible, search.values.tolist())
                if (keep | hand == keep if action == DONE_ACTION else not keep >> card & 1)
            ]
            if fits:
                values[action] = max(fits)
        return values

    # ------------------------------------------------------------------ the three decisions

    def _bid_search(self, view: PublicView, observation: np.ndarray, game: int, mask: np.ndarray) -> Search | int:
        """Pass or bid: the action when no search is needed, else the search to run."""
        if mask[PASS_ACTION] and self.hopeless_hand(view, game):
            self.stats.pruned_bids += 1
            return PASS_ACTION
        candidates = self.bid_candidates(view, game, mask, self._model_action(observation, mask))
        return self._action_search(view, observation, game, candidates, "bid")

    def bid_candidates(self, view: PublicView, game: int, mask: np.ndarray, model_bid: int = PASS_ACTION) -> list[int]:
        """Pass (when legal) and the legal bids from the one needed up to ``bid_span`` above it; when no partner of
        the viewer is still to speak, up to ``bid_span`` above the model player's own bid ``model_bid`` if that is
        higher. A partner still to speak can make the side's high bid (the rollouts play it as the model bidder),
        but alone the viewer's bid is its side's last, and the players after it take the contract over a low one
        with the bid needed. The dealer, last to speak, bids only what is needed."""
        needed = max(self.config.min_bid, int(view.bids[game].max()) + 1)
        if int(view.dealer[game]) == 0:
            return [PASS_ACTION] * bool(mask[PASS_ACTION]) + [needed] * bool(mask[needed])
        partners = np.flatnonzero(self.model.team_of_seat == 0)[1:]
        partner_to_speak = bool((view.bids[game, partners] == NOT_BID).any())
        reach = needed if partner_to_speak else max(needed, model_bid)
        top = min(self.config.total_points, reach + self.bid_span)
        return [PASS_ACTION] * bool(mask[PASS_ACTION]) + [bid for bid in range(needed, top + 1) if mask[bid]]

    def hopeless_hand(self, view: PublicView, game: int) -> bool:
        """Whether the viewer's best estimate (:meth:`HeuristicAgent.estimate_points`) is more than ``hopeless``
        points short of the bid needed."""
        needed = max(self.config.min_bid, int(view.bids[game].max()) + 1)
        hand = bits_to_cards(view.hand[game : game + 1])
        estimate = float(self.model.estimate_points(hand, view.dealer[game : game + 1] == 0).max())
        return estimate + self.hopeless < needed

    def _model_action(self, observation: np.ndarray, mask: np.ndarray) -> int:
        """The model player's action for one (D,) observation and (133,) mask."""
        return int(self.model.act(observation, mask[None, :], self._no_draws)[0])

    @staticmethod
    def _trump_candidates(mask: np.ndarray) -> list[int]:
        return [TRUMP_OFFSET + suit for suit in range(4) if mask[TRUMP_OFFSET + suit]]

    def _action_search(
        self, view: PublicView, observation: np.ndarray, game: int, candidates: list[int], kind: str
    ) -> Search | int:
        """The search over candidate first actions (the model player's own choice first: ties go to it),
        or the only candidate."""
        if len(candidates) == 1:
            return candidates[0]
        mask = np.zeros((1, NUM_ACTIONS), dtype=bool)
        mask[0, candidates] = True
        choice = int(self.model.act(observation, mask, self._no_draws)[0])
        if choice in candidates:
            candidates = [choice] + [c for c in candidates if c != choice]
        worlds, weights = self._worlds(view, game)
        return Search(game, kind, candidates, worlds, weights)

    def _discard_search(self, view: PublicView, game: int) -> Search | None:
        """The search over discard plans of this turn, or None when the plan is known (cached) or the only one."""
        digest = turn_digest(view, game)
        if digest in self._plans:
            self._plans.move_to_end(digest)
            return None
        start = turn_start_view(view, game)
        candidates = self.keep_candidates(start, 0)
        if len(candidates) == 1:
            self._remember_plan(digest, candidates[0])
            return None
        worlds, weights = self._worlds(start, 0)
        return Search(game, "discard", candidates, worlds, weights, digest=digest, trump=int(start.trump[0]))

    def _follow_plan(self, view: PublicView, observation: np.ndarray, game: int, mask: np.ndarray) -> int:
        """The next discard (or done) of this turn's plan; the model player's choice where the plan has none."""
        keep = self.discard_plan(view, game)
        trump = int(view.trump[game])
        keep_value = self.model.keep_value[trump][None]
        planned = plan_actions(view.hand[game : game + 1], mask[None, :], np.array([keep], dtype=np.uint64), keep_value)
        if planned[0] >= 0:
            return int(planned[0])
        return int(self.model.act(observation, mask[None, :], self._no_draws)[0])

    def discard_plan(self, view: PublicView, game: int) -> int:
        """The card set the viewer keeps in game ``game``'s discard turn (cached by :func:`turn_digest`)."""
        digest = turn_digest(view, game)
        if digest not in self._plans:
            search = self._discard_search(view, game)
            self._run([search] if search is not None else [])
        return self._plans[digest]

    def _remember_plan(self, digest: int, keep: int) -> None:
        self._plans[digest] = keep
        if len(self._plans) > PLAN_CACHE_SIZE:
            self._plans.popitem(last=False)

    # ------------------------------------------------------------------ searches

    def _worlds(self, view: PublicView, game: int) -> tuple[PedroState, np.ndarray]:
        digest = turn_digest(view, game)
        rng = np.random.default_rng([self.seed, digest])
        worlds, relaxed = sample_worlds(view, game, self.world_config, self.samples, rng)
        self.stats.relaxed_worlds += relaxed
        return worlds, self.world_weights(worlds, view, game)

    def world_weights(self, worlds: PedroState, view: PublicView, game: int) -> np.ndarray:
        """(W,) float: how much each world of game ``game`` counts (:func:`auction_weights`, ``infer``)."""
        return auction_weights(worlds, view, game, self.world_config, self.world_model, self.infer)

    def _run(self, searches: list[Search]) -> None:
        """Play every candidate of every search in every one of its worlds, all in one engine batch, and record
        each search's choice (discard plans go to the plan cache). A world's value does not depend on the rest
        of the batch, so searching games together or one at a time chooses the same."""
        if not searches:
            return
        batches, first, plan, keep, keep_value = [], [], [], [], []
        for search in searches:
            w, count = search.worlds.batch_size, len(search.candidates)
            batches.append(search.worlds.select(np.tile(np.arange(w), count)))
            candidates = np.repeat(np.array(search.candidates, dtype=np.uint64), w)
            is_plan = search.kind == "discard"
            first.append(np.full(w * count, -1) if is_plan else candidates.astype(np.int64))
            plan.append(np.full(w * count, is_plan))
            keep.append(candidates if is_plan else np.zeros(w * count, dtype=np.uint64))
            keep_value.append(np.broadcast_to(self.model.keep_value[max(search.trump, 0)], (w * count, 52)))
            self.stats.searches[search.kind] += 1
        worlds = concatenate(batches)
        rng = np.random.default_rng(0)  # the shipped rollout agents draw nothing; a sampling one draws from this
        values = play_out(
            worlds,
            self.world_config,
            self.rollout,
            rng,
            np.concatenate(first),
            np.concatenate(plan),
            np.concatenate(keep),
            np.concatenate(keep_value),
        )
        self.stats.worlds_played += worlds.batch_size
        offset = 0
        for search in searches:
            w, count = search.worlds.batch_size, len(search.candidates)
            block = values[offset : offset + w * count].reshape(count, w)
            offset += w * count
            search.values = (block * search.weights[None, :]).sum(axis=1) / search.weights.sum()
            search.choice = search.candidates[_best(block, search.weights)]
            if search.kind == "discard" and search.remember:
                self._remember_plan(search.digest, search.choice)

    def keep_candidates(self, view: PublicView, game: int) -> list[int]:
        """Discard plans for the turn-start hand of game ``game``: the card sets to keep, the model player's
        plan (its trumps, the best six of them when it has more) first.

        Non-robbing: the trumps (the six most useful at most) plus the ``m`` highest non-trumps, ``m`` up to
        ``max_kept_off`` and the room left under six. The robbing dealer keeps exactly six: the most useful
        ``6 - m`` trumps and ``m`` highest non-trumps. With ``deny``, a defender also plans without its point
        trumps but the ace, and without its Pedros only (those go out of play, scoring for nobody)."""
        tables = self.model.tables
        trump = int(view.trump[game])
        hand = int(view.hand[game])
        value = self.model.keep_value[trump]
        cards = sorted((c for c in range(52) if hand >> c & 1), key=lambda c: -int(value[c]))
        is_trump = tables.is_trump[trump]
        trumps = [c for c in cards if is_trump[c]]
        others = [c for c in cards if not is_trump[c]]
        denials: list[set[int]] = [set()]
        maker = int(view.maker[game])
        defender = maker >= 0 and self.model.team_of_seat[maker] != 0
        if self.deny and defender:
            points = tables.points[trump]
            ace = int(self.model.trump_order[trump, 0])
            every_point = {c for c in trumps if points[c] > 0 and c != ace}
            pedros = {c for c in trumps if points[c] == 5}
            for denial in (pedros, every_point):
                if denial and denial not in denials:
                    denials.append(denial)
        robbing = bool(view.robbing[game])
        plans: list[int] = []
        for denial in denials:
            kept_trumps = [c for c in trumps if c not in denial]
            if robbing:
                low = max(0, HAND_AT_PLAY - len(kept_trumps))
                high = min(len(others), HAND_AT_PLAY, low + self.max_kept_off)
                options = [kept_trumps[: HAND_AT_PLAY - m] + others[:m] for m in range(low, high + 1)]
                options = [keep for keep in options if len(keep) == HAND_AT_PLAY]
            elif len(kept_trumps) >= HAND_AT_PLAY:
                options = [kept_trumps[:HAND_AT_PLAY]]
            else:
                room = min(len(others), HAND_AT_PLAY - len(kept_trumps), self.max_kept_off)
                options = [kept_trumps + others[:m] for m in range(room + 1)]
            for keep in options:
                keep_set = sum(1 << c for c in keep)
                if keep_set not in plans:
                    plans.append(keep_set)
        return plans or [hand]


def _best(values: np.ndarray, weights: np.ndarray) -> int:
    """Index of the candidate (row of ``values`` (C, W)) with the best weighted mean; ties to the first."""
    means = (values * weights[None, :]).sum(axis=1) / weights.sum()
    return int(np.flatnonzero(means >= means.max() - 1e-9)[0])
