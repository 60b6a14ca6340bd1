"""One match of Pedro over the batched engine: the single-game driver under every one-game face.

:class:`SingleGame` is a batch of one of the same state arrays and compiled kernels as
:class:`pedro_env.PedroVectorEnv` (no second rules implementation): it seeds and deals (the seed's
hashed decks, or injected ones), checks an action against the legal mask (a renege the config allows
is legal), steps with the fused AEC kernel and keeps the match record a replay needs (first dealer,
action history, each deal's deck, the last deal's summary, whether the match is over). The PettingZoo
env (:mod:`pedro_env.aec`) keeps only PettingZoo's bookkeeping over it; the Gymnasium env, the browser
table, ``pedro-play`` and ``pedro-replay`` drive it directly.

Seats are absolute; the mover's name in messages is its PettingZoo agent name (``player_k``). Errors,
each with one line: SeedError for a bad seed, ValueError for bad reset options or an unreadable action
text, IllegalActionError for an action the actor may not take, RuntimeError for a call before ``reset``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from pedro_env.actions import ACTION_TEXTS, NUM_ACTIONS, str_to_action
from pedro_env.cards import SUITS, RuleTables, card_to_str, str_to_card
from pedro_env.config import PedroConfig, check_seed, make_config, short_repr
from pedro_env.encoding import ObservationEncoder
from pedro_env.kernels import steps
from pedro_env.kernels.observations import aec_observe
from pedro_env.render import render_table
from pedro_env.rules import (
    IllegalActionError,
    hashed_decks,
    illegal_action_message,
    legal_action_mask,
    new_match,
    renege_allowed,
    seed_deck_source,
    start_deal,
)
from pedro_env.state import BID, NOT_BID, OVER, PedroState

OPTION_KEYS = ("dealer", "decks")  # reset's options
SEQUENCE_TYPES = (list, tuple, np.ndarray)  # what a list of decks, and each deck, may be


def agent_names(num_players: int) -> list[str]:
    """The seats' names (``player_0`` ..), as PettingZoo's agents and every message about a mover call them."""
    return [f"player_{seat}" for seat in range(num_players)]


def parse_card(card: Any, where: str) -> int:
    """A card string (``'AH'``, ``'10c'``) or card id 0..51 -> card id; ValueError naming ``where`` otherwise."""
    if isinstance(card, str):
        try:
            return str_to_card(card)
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None
    if isinstance(card, bool) or not isinstance(card, (int, np.integer)) or not 0 <= card < 52:
        raise ValueError(f"{where} = {short_repr(card)} is not a card: a card is a string like 'AH' or an id 0..51")
    return int(card)


def parse_deck(deck: Any, where: str) -> list[int]:
    """One deck, 52 card strings (or ids) top first -> 52 card ids; ValueError naming ``where`` otherwise."""
    if not isinstance(deck, SEQUENCE_TYPES):
        raise ValueError(f"{where} must be a list of 52 card strings, got {type(deck).__name__} {short_repr(deck)}")
    cards = [parse_card(card, f"{where}[{index}]") for index, card in enumerate(deck)]
    if len(cards) != 52:
        raise ValueError(f"{where} must hold each of the 52 cards exactly once, got {len(cards)} cards")
    counts = np.bincount(cards, minlength=52)
    if (counts != 1).any():
        twice, missing = np.flatnonzero(counts > 1), np.flatnonzero(counts == 0)
        raise ValueError(
            f"{where} must hold each of the 52 cards exactly once: it holds {card_to_str(int(twice[0]))} "
            f"{counts[twice[0]]} times and lacks {card_to_str(int(missing[0]))}"
        )
    return cards


def parse_decks(decks: Any, where: str = "options['decks']") -> np.ndarray:
    """``[[52 card strings], ...]`` -> (k, 52) int8, each a permutation of the 52 cards; ValueError otherwise."""
    if not isinstance(decks, SEQUENCE_TYPES):
        raise ValueError(f"{where} must be a list of decks, each a list of 52 card strings, got {type(decks).__name__}")
    parsed = [parse_deck(deck, f"{where}[{number}]") for number, deck in enumerate(decks)]
    return np.asarray(parsed, dtype=np.int8).reshape(-1, 52)


def read_reset_options(options: Any, num_players: int) -> tuple[int | None, np.ndarray]:
    """``reset``'s ``options`` -> ``(first dealer or None, injected decks (k, 52) int8)``; ValueError for a bad
    one. An unknown key is a warning, not an error: PettingZoo's api_test probes reset with an arbitrary option."""
    if options is not None and not isinstance(options, dict):
        raise ValueError(f"options must be a dict (keys {', '.join(OPTION_KEYS)}), got {type(options).__name__}")
    options = dict(options or {})
    unknown = sorted(set(options) - set(OPTION_KEYS))
    if unknown:  # stacklevel: the caller of the face's reset (face -> SingleGame.reset -> here)
        warnings.warn(
            f"ignoring unknown reset option(s) {unknown}: Pedro reads only {', '.join(OPTION_KEYS)}", stacklevel=4
        )
    dealer = options.get("dealer")
    if dealer is not None and (
        isinstance(dealer, bool) or not isinstance(dealer, (int, np.integer)) or not 0 <= dealer < num_players
    ):
        allowed = f"0..{num_players - 1}"
        raise ValueError(f"options['dealer'] = {short_repr(dealer)} is not allowed: allowed values are {allowed}")
    decks = parse_decks(options["decks"]) if options.get("decks") is not None else np.zeros((0, 52), dtype=np.int8)
    return (None if dealer is None else int(dealer)), decks


class SingleGame:
    """One Pedro match, a batch of one over the engine (see the module docstring).

    After ``reset`` and every ``step``: ``state`` (the engine's PedroState, batch of one), ``actor`` (the seat to
    act), ``legal_mask`` ((133,) bool, all False once the match is over), ``over``, and for the match record
    ``first_dealer``, ``action_history`` (text forms), ``seed`` and ``match_index``; ``deal_ended`` says whether
    the last step ended a deal (its summary: :meth:`deal_info`), ``terminated`` and ``truncated`` how the match
    ended.
    """

    def __init__(self, config: PedroConfig | None = None, **overrides: Any) -> None:
        self.config = make_config(config, **overrides)
        self.tables = RuleTables.for_variant(self.config.variant)
        self.encoder = ObservationEncoder(self.config, self.tables)
        self.state: PedroState | None = None
        self.seed: int | None = None
        self.match_index = -1
        self.first_dealer = -1  # the match's first dealer (-1 before reset)
        self.action_history: list[str] = []
        self.actor = 0
        self.over = False  # the match is over (phase OVER): nobody acts
        self.terminated = False  # the match ended with a result (or its one deal, episode="deal")
        self.truncated = False  # the match hit max_deals
        self.status = 0  # the last step's AEC_* bits (pedro_env.kernels.steps), the next actor above them
        self._decks = np.zeros((0, 52), dtype=np.int8)  # injected decks, deal by deal
        self._masks = np.zeros((1, NUM_ACTIONS), dtype=bool)  # the kernels write the actor's mask here
        self.legal_mask = self._masks[0]
        self.mask_bytes = self.legal_mask.view(np.int8)  # the same mask as int8 (what observations carry)
        self._viewers = [np.array([seat], dtype=np.int64) for seat in range(self.config.num_players)]
        self._actions = np.zeros(1, dtype=np.int64)
        self._pending_games = np.zeros(1, dtype=np.int64)
        self._step_call: tuple | None = None  # (compiled aec_step, its arguments), set by reset
        self._observe_kernel: Any = None  # compiled aec_observe, set by reset

    # ---- the match ----
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        """Start a match. ``seed``: an int from 0 to 2**64 - 1 (None: the next match of the last seed, or a random
        seed the first time); ``options``: ``dealer`` (0..n-1) and ``decks`` (52 card strings each, top first, for
        the successive deals; the seed deals once they run out). Nothing changes when an argument is refused."""
        if seed is not None:
            seed = check_seed(seed)
        dealer, self._decks = read_reset_options(options, self.config.num_players)
        if seed is not None:
            self.seed, self.match_index = seed, 0
        elif self.seed is None:
            self.seed, self.match_index = int(np.random.SeedSequence().entropy % 2**64), 0
        else:
            self.match_index += 1
        state = PedroState.empty(self.config, 1)
        state.seed[0] = self.seed
        state.match_index[0] = self.match_index
        dealers = None if dealer is None else np.array([dealer], dtype=np.int8)
        deck_source = self._deck_source if len(self._decks) else seed_deck_source
        new_match(state, np.arange(1), self.config, deck_source, dealers)
        self.state = state
        self.first_dealer = int(state.dealer[0])
        self.action_history = []
        self.terminated = self.truncated = False
        self.status = 0
        self._bind_kernels(state)
        self._refresh()

    @classmethod
    def at_position(cls, state: PedroState, config: PedroConfig) -> SingleGame:
        """A match that goes on from a copy of ``state`` (one game of ``config``; its later deals hashed from its
        seed): what a search that starts from a sampled world steps."""
        game = cls(config)
        game.state = state.copy()
        game._bind_kernels(game.state)
        game.set_position(state)
        return game

    def set_position(self, state: PedroState) -> None:
        """Go on from a copy of ``state`` (one game of this config, as :meth:`at_position`) instead: the compiled
        kernels stay bound, so moving a match to another sampled world costs a copy of its arrays. Decks injected
        before are dropped: the later deals come from ``state``'s seed."""
        self.started("set_position").buffer[:] = state.buffer
        self._decks = np.zeros((0, 52), dtype=np.int8)
        if not self._step_call[1][4]:  # bound to wait for injected decks: the kernel deals the seed's, as at_position's
            self._bind_kernels(self.state)
        self.seed, self.match_index = int(state.seed[0]), int(state.match_index[0])
        self.first_dealer = int(state.dealer[0])
        self.action_history = []
        self.terminated = self.truncated = False
        self.status = 0
        self._refresh()

    def _deck_source(self, state: PedroState, games: np.ndarray) -> np.ndarray:
        deal = int(state.deal_index[0])
        if deal < len(self._decks):
            return self._decks[deal : deal + 1]
        return hashed_decks(state.seed[games], state.match_index[games], state.deal_index[games])

    def _bind_kernels(self, state: PedroState, like: SingleGame | None = None) -> None:
        """The compiled step and observation of this match, called without numba's dispatch: every argument
        but the state's buffer is this object's own array, of the types they are compiled for. ``like``: a match
        of the same config whose compiled functions serve (a copy skips looking them up)."""
        step_args = (
            state.buffer,
            state.element_offsets,
            self.encoder.statics,
            self._actions,
            len(self._decks) == 0,  # no injected decks: the kernel deals the hashed ones itself
            self._pending_games,
            self._masks,
            *steps.step_scratch(self.encoder.params),
        )
        if like is not None and like._step_call is not None and like._step_call[1][4] == step_args[4]:
            self._step_call, self._observe_kernel = (like._step_call[0], step_args), like._observe_kernel
            return
        self._step_call = (steps.entry_point(steps.aec_step, *step_args), step_args)
        observation = np.empty(self.encoder.size, dtype=np.uint8)
        self._observe_kernel = steps.entry_point(
            aec_observe, state.buffer, state.element_offsets, self.encoder.statics, self._viewers[0], observation
        )

    def _refresh(self) -> None:
        """The mask, the actor and whether the match is over, read from the state (after reset or a deal dealt
        from an injected deck)."""
        state = self.state
        assert state is not None
        legal_action_mask(state, self.config, self.tables, out=self._masks)
        self.over = bool(state.phase[0] == OVER)
        self.actor = int(state.actor[0])

    def started(self, call: str) -> PedroState:
        """The state; RuntimeError naming ``call`` if ``reset`` has not been called yet."""
        if self.state is None:
            raise RuntimeError(f"call reset() before {call}(): the env has no match yet")
        return self.state

    def step(self, action: Any) -> int:
        """Apply the actor's ``action`` (an index 0..132 or its text form); returns the step's AEC_* status bits.

        IllegalActionError (the state unchanged) for an action the actor may not take, a finished match's
        included; ValueError for an unreadable text."""
        state = self.started("step")
        if type(action) is not int:
            action = self._action_index(action)
        in_range = 0 <= action < NUM_ACTIONS
        if not (in_range and self.legal_mask[action]):
            if not (in_range and renege_allowed(state, self.config, np.array([action]))[0]):
                where = f"for player_{self.actor}"
                raise IllegalActionError(illegal_action_message(action, self.legal_mask, where))
        self._actions[0] = action
        step_kernel, step_args = self._step_call
        status = step_kernel(*step_args)
        self.action_history.append(ACTION_TEXTS[action])
        if status & steps.AEC_DEAL_OVER:  # the match ends with a deal
            self.terminated = bool(status & steps.AEC_TERMINATED)
            self.truncated = bool(status & steps.AEC_TRUNCATED)
        if status & steps.AEC_WAITING:  # the next deal's deck comes from the injected ones
            start_deal(state, self._pending_games[:1], self.config, self._deck_source)
            self._refresh()
        else:
            self.over = bool(status & steps.AEC_OVER)
            self.actor = status >> steps.AEC_ACTOR_SHIFT
        self.status = status
        return status

    def play_out(self, seed: int) -> np.ndarray:
        """Play uniformly random legal actions to the end of the match in compiled code (a search's rollout;
        ``seed``: 0 .. 2**32 - 1, the same seed the same play); returns (n,) float64, the rewards summed. The
        actions are not added to ``action_history``."""
        state = self.started("play_out")
        returns = np.zeros(self.config.num_players, dtype=np.float64)
        _, step_args = self._step_call
        while not self.over:
            self.status = steps.random_playout(*step_args, returns, seed)
            seed = (seed + 1) % 2**32
            if self.status & steps.AEC_DEAL_OVER:
                self.terminated = bool(self.status & steps.AEC_TERMINATED)
                self.truncated = bool(self.status & steps.AEC_TRUNCATED)
            if self.status & steps.AEC_WAITING:  # the next deal's deck comes from the injected ones
                start_deal(state, self._pending_games[:1], self.config, self._deck_source)
                self._refresh()
            else:
                self.over = bool(self.status & steps.AEC_OVER)
                self.actor = self.status >> steps.AEC_ACTOR_SHIFT
        return returns

    def redeal(self, deck: Any) -> None:
        """Deal the current deal again from ``deck`` (52 card strings or ids, top first) before anyone has acted in
        it: the OpenSpiel face (:mod:`pedro_env.openspiel_game`) draws a deal's cards as chance outcomes after the
        engine has begun it. The deck is kept as that deal's (:meth:`deck_of_deal`); RuntimeError once someone has
        acted."""
        state = self.started("redeal")
        deal = int(state.deal_index[0])
        if state.phase[0] != BID or (state.bids[0] != NOT_BID).any():
            raise RuntimeError(f"redeal() deals deal {deal} again before anyone has acted in it; someone has")
        decks = parse_decks([deck], "deck")
        if self._decks.shape[0] < deal + 1:  # keep the record: deck_of_deal answers this deck for this deal
            kept = np.zeros((deal + 1, 52), dtype=np.int8)
            kept[: self._decks.shape[0]] = self._decks
            for missing in range(self._decks.shape[0], deal):
                kept[missing] = [str_to_card(card) for card in self.deck_of_deal(missing)]
            self._decks = kept
        self._decks[deal] = decks[0]
        start_deal(state, np.zeros(1, dtype=np.int64), self.config, lambda _state, _games: decks)
        self._refresh()

    def copy(self) -> SingleGame:
        """An independent copy of this match (the config's tables and encoder shared): what a search that tries
        moves on a game, or OpenSpiel's ``clone``, needs."""
        twin = object.__new__(SingleGame)
        twin.__dict__.update(self.__dict__)
        twin.action_history = list(self.action_history)
        twin._decks = self._decks.copy()
        twin._masks = self._masks.copy()
        twin.legal_mask = twin._masks[0]
        twin.mask_bytes = twin.legal_mask.view(np.int8)
        twin._actions = np.zeros(1, dtype=np.int64)
        twin._pending_games = np.zeros(1, dtype=np.int64)
        if self.state is not None:
            twin.state = self.state.copy()
            twin._bind_kernels(twin.state, like=self)
        return twin

    def __deepcopy__(self, memo: dict) -> SingleGame:
        return self.copy()

    def __getstate__(self) -> dict[str, Any]:
        """What pickles: the config, the state and the match record (the compiled kernels are bound again on load)."""
        kept = dict(self.__dict__)
        for bound in ("tables", "encoder", "_step_call", "_observe_kernel", "legal_mask", "mask_bytes", "_viewers"):
            kept.pop(bound)
        return kept

    def __setstate__(self, kept: dict[str, Any]) -> None:
        self.__init__(kept["config"])
        self.__dict__.update(kept)
        self.legal_mask = self._masks[0]
        self.mask_bytes = self.legal_mask.view(np.int8)
        if self.state is not None:
            self._bind_kernels(self.state)

    def _action_index(self, action: Any) -> int:
        """A stepped action that is not a plain int (a text form, a numpy integer) as its index; an
        IllegalActionError naming the mover for anything else."""
        if isinstance(action, str):
            return str_to_action(action)
        if action is None or isinstance(action, bool) or not isinstance(action, (int, np.integer)):
            raise IllegalActionError(
                f"player_{self.actor} must step an int action in 0..{NUM_ACTIONS - 1} (or its text form), "
                f"got {short_repr(action)}"
            )
        return int(action)

    # ---- reading ----
    @property
    def deal_ended(self) -> bool:
        """Whether the last step ended a deal (False after ``reset``)."""
        return bool(self.status & steps.AEC_DEAL_OVER)

    def observe(self, seat: int) -> np.ndarray:
        """(D,) uint8: the observation of ``seat`` (layout: :mod:`pedro_env.observation_layout`)."""
        state, encoder = self.started("observe"), self.encoder
        observation = np.empty(encoder.size, dtype=np.uint8)
        self._observe_kernel(state.buffer, state.element_offsets, encoder.statics, self._viewers[seat], observation)
        return observation

    def legal_actions(self) -> list[int]:
        """Legal action indices of the actor (none once the match is over)."""
        return [int(a) for a in np.flatnonzero(self.legal_mask)]

    def full_state(self) -> np.ndarray:
        """(D + n*52 + 52,) uint8: the full state (all hands and the stock) seen from the acting seat."""
        state = self.started("state")
        return self.encoder.encode_full_state(state, state.actor.astype(np.intp))[0]

    def deck_of_deal(self, deal: int) -> list[str]:
        """The deck (52 card strings, top first) that deal ``deal`` (0 = the first, thrown-in deals counted) of
        the current match uses: the injected one, else the one hashed from the seed. For replays."""
        state = self.started("deck_of_deal")
        if isinstance(deal, bool) or not isinstance(deal, (int, np.integer)) or not 0 <= deal < 2**31:
            raise ValueError(f"deal must be an int from 0 to 2**31 - 1 (an int32 index), got {short_repr(deal)}")
        if deal < len(self._decks):
            deck = self._decks[deal]
        else:
            deal_index = np.array([deal], dtype=state.deal_index.dtype)
            deck = hashed_decks(state.seed[:1], state.match_index[:1], deal_index)[0]
        return [card_to_str(int(card)) for card in deck]

    def deal_info(self) -> dict[str, Any]:
        """The summary (docs/rules.md section 11) of the deal that ended last."""
        state = self.started("deal_info")
        redeal = bool(state.last_redeal[0])
        made = int(state.last_made[0])
        renege = int(state.last_renege[0])
        return {
            "redeal": redeal,
            "maker": None if redeal else int(state.last_maker[0]),
            "bid": None if redeal else int(state.last_bid[0]),
            "trump": None if redeal else SUITS[int(state.last_trump[0])],
            "points": [int(p) for p in state.last_points[0]],
            "made": None if made < 0 else bool(made),
            "delta": [int(d) for d in state.last_delta[0]],
            "scores": [int(s) for s in state.scores[0]],
            "renege": None if renege < 0 else renege,
        }

    def render(self, viewer: int | None = None) -> str:
        """The table as text, every hand open (``viewer``: that seat's side only)."""
        return render_table(self.started("render"), self.config, viewer=viewer)


def render_in_mode(game: SingleGame, render_mode: str | None) -> str | None:
    """What a face's ``render()`` answers in ``render_mode``: the table as text for ``ansi``, printed (and None)
    for ``human``, None without a mode. RuntimeError before ``reset`` for a mode."""
    if render_mode is None:
        return None
    text = game.render()
    if render_mode == "human":
        print(text)
        return None
    return text
