"""Pedro as a PettingZoo AEC environment: a batch of one over the same engine as the vector env.

=====================  =================================================================
Agents                 ``player_0 .. player_{n-1}`` (4 by default; seats 0+2 vs 1+3)
Action space           ``Discrete(133)`` (layout in :mod:`pedro_env.actions`)
Observation space      ``Dict(observation=Box(0, 255, (D,), uint8), action_mask=Box(0, 1, (133,), int8))``
State space            ``Box(0, 255, (D + n*52 + 52,), uint8)``: the acting player's view plus all hands and the stock
Rewards                ``points`` (per deal: team delta - opponents' mean delta, / total points) or ``win``
Render modes           ``ansi`` (returns the table as text), ``human`` (prints it)
=====================  =================================================================

The observation layout is in :mod:`pedro_env.observation_layout`. The action mask is all zeros for agents
that are not acting. ``reset(seed, options={"dealer": int, "decks": [[52 card strings], ...]})``
injects the first dealer and the decks of the successive deals (top first); when the decks run
out, the env's seed (an int from 0 to 2**64 - 1) deals. Every agent's ``info`` carries ``"deal"``
(docs/rules.md section 11) on the step where a deal ends.

Errors, each with a one-line message: ConfigError (a ValueError) for a bad config; SeedError (a
ValueError and a TypeError) for a bad seed; ValueError for bad reset options or an unreadable action
text; IllegalActionError (a ValueError) for an action the actor may not take; RuntimeError for a
call out of order (``step``, ``observe``, ``last``, ``state`` before ``reset``, or ``step`` once
every agent has left the finished episode; :func:`env`'s PettingZoo wrapper reports a call before
``reset`` first, in its own words).

Version history: v0, the first release.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.env_logger import EnvLogger
from pettingzoo.utils.wrappers.order_enforcing import AECOrderEnforcingIterable, AECOrderEnforcingIterator

from pedro_env.actions import ACTION_TEXTS, NUM_ACTIONS, action_to_str, str_to_action
from pedro_env.cards import SUITS, RuleTables, card_to_str, str_to_card
from pedro_env.config import PedroConfig, check_seed, make_config, short_repr
from pedro_env.encoding import ObservationEncoder
from pedro_env.kernels import steps
from pedro_env.kernels.observations import aec_observe
from pedro_env.observation_layout import full_state_size
from pedro_env.render import render_table
from pedro_env.rules import hashed_decks, legal_action_mask, new_match, seed_deck_source, start_deal
from pedro_env.state import OVER, PedroState
from pedro_env.vector import IllegalActionError, illegal_action_message, renege_allowed

OPTION_KEYS = ("dealer", "decks")


SEQUENCE_TYPES = (list, tuple, np.ndarray)  # what a list of decks, and each deck, may be


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


class raw_env(AECEnv):
    """The bare Pedro AEC environment; :func:`env` wraps it in PettingZoo's order enforcement."""

    metadata = {"render_modes": ["ansi", "human"], "name": "pedro_v0", "is_parallelizable": False}

    def __init__(self, render_mode: str | None = None, config: PedroConfig | None = None, **overrides: Any) -> None:
        super().__init__()
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode = {render_mode!r} is not allowed: allowed values are None, 'ansi', 'human'")
        self.render_mode = render_mode
        self.config = make_config(config, **overrides)
        self.tables = RuleTables.for_variant(self.config.variant)
        self.encoder = ObservationEncoder(self.config, self.tables)
        n = self.config.num_players
        self.possible_agents = [f"player_{seat}" for seat in range(n)]
        self.agents: list[str] = []
        self.agent_name_mapping = {agent: seat for seat, agent in enumerate(self.possible_agents)}
        observation_space = spaces.Dict(
            {
                "observation": spaces.Box(0, 255, (self.encoder.size,), dtype=np.uint8),
                "action_mask": spaces.Box(0, 1, (NUM_ACTIONS,), dtype=np.int8),
            }
        )
        self.observation_spaces = {agent: observation_space for agent in self.possible_agents}
        self.action_spaces = {agent: spaces.Discrete(NUM_ACTIONS) for agent in self.possible_agents}
        self.state_space = spaces.Box(0, 255, (full_state_size(self.config),), dtype=np.uint8)
        self.game: PedroState | None = None
        self._seed: int | None = None
        self._match_index = -1
        self._decks = np.zeros((0, 52), dtype=np.int8)
        self._masks = np.zeros((1, NUM_ACTIONS), dtype=bool)  # the kernels write the actor's mask here
        self._mask = self._masks[0]
        self._mask_bytes = self._mask.view(np.int8)
        self._viewers = [np.array([seat], dtype=np.int64) for seat in range(n)]
        self._actions = np.zeros(1, dtype=np.int64)
        self._pending_games = np.zeros(1, dtype=np.int64)
        self._no_mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
        self._over = False  # the match is over (phase OVER): no agent acts
        self._deal_shown = False  # rewards and infos show the deal that ended in the last step
        self._step_call: tuple | None = None  # (compiled aec_step, its arguments), set by reset
        self._observe_kernel = None  # compiled aec_observe, set by reset

    # ---- text forms (docs/rules.md section 11) ----
    @staticmethod
    def action_to_str(action: int) -> str:
        return action_to_str(action)

    @staticmethod
    def str_to_action(text: str) -> int:
        return str_to_action(text)

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    # ---- episode ----
    def _deck_source(self, state: PedroState, games: np.ndarray) -> np.ndarray:
        deal = int(state.deal_index[0])
        if deal < len(self._decks):
            return self._decks[deal : deal + 1]
        return hashed_decks(state.seed[games], state.match_index[games], state.deal_index[games])

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        """Start a match. ``seed``: an int from 0 to 2**64 - 1 (None: the next match of the last seed, or a
        random seed the first time); ``options``: ``dealer`` (0..n-1) and ``decks`` (see the module docstring)."""
        if seed is not None:
            seed = check_seed(seed)
        if options is not None and not isinstance(options, dict):
            raise ValueError(f"options must be a dict (keys {', '.join(OPTION_KEYS)}), got {type(options).__name__}")
        options = dict(options or {})
        unknown = sorted(set(options) - set(OPTION_KEYS))
        if unknown:
            # a warning, not an error: PettingZoo's api_test probes reset with an arbitrary option
            warnings.warn(
                f"ignoring unknown reset option(s) {unknown}: Pedro reads only {', '.join(OPTION_KEYS)}", stacklevel=2
            )
        n = self.config.num_players
        dealer = options.get("dealer")
        if dealer is not None and (
            isinstance(dealer, bool) or not isinstance(dealer, (int, np.integer)) or not 0 <= dealer < n
        ):
            raise ValueError(f"options['dealer'] = {short_repr(dealer)} is not allowed: allowed values are 0..{n - 1}")
        self._decks = (
            parse_decks(options["decks"]) if options.get("decks") is not None else np.zeros((0, 52), dtype=np.int8)
        )
        if seed is not None:
            self._seed, self._match_index = seed, 0
        elif self._seed is None:
            self._seed, self._match_index = int(np.random.SeedSequence().entropy % 2**64), 0
        else:
            self._match_index += 1
        self.game = PedroState.empty(self.config, 1)
        self.game.seed[0] = self._seed
        self.game.match_index[0] = self._match_index
        dealers = None if dealer is None else np.array([dealer], dtype=np.int8)
        deck_source = self._deck_source if len(self._decks) else seed_deck_source
        new_match(self.game, np.arange(1), self.config, deck_source, dealers)
        self.first_dealer = int(self.game.dealer[0])  # with action_history and deck_of_deal: a replay record
        self.action_history: list[str] = []

        self.agents = self.possible_agents[:]
        self.rewards = {agent: 0.0 for agent in self.agents}
        self._cumulative_rewards = {agent: 0.0 for agent in self.agents}
        self.terminations = {agent: False for agent in self.agents}
        self.truncations = {agent: False for agent in self.agents}
        self.infos: dict[str, dict] = {agent: {} for agent in self.agents}
        self._deal_shown = False
        self._bind_kernels(self.game)
        self._refresh()

    def _bind_kernels(self, game: PedroState) -> None:
        """The compiled step and observation of this game, called without numba's dispatch: every argument
        but the game's buffer is the env's own array, of the types they are compiled for."""
        step_args = (
            game.buffer,
            game.element_offsets,
            self.encoder.statics,
            self._actions,
            len(self._decks) == 0,  # no injected decks: the kernel deals the hashed ones itself
            self._pending_games,
            self._masks,
            *steps.step_scratch(self.encoder.params),
        )
        self._step_call = (steps.entry_point(steps.aec_step, *step_args), step_args)
        observation = np.empty(self.encoder.size, dtype=np.uint8)
        self._observe_kernel = steps.entry_point(
            aec_observe, game.buffer, game.element_offsets, self.encoder.statics, self._viewers[0], observation
        )

    def _refresh(self) -> None:
        """The mask, the actor and whether the match is over, read from the game (after reset or a deal dealt
        from an injected deck)."""
        assert self.game is not None
        legal_action_mask(self.game, self.config, self.tables, out=self._masks)
        self._over = bool(self.game.phase[0] == OVER)
        if not self._over:
            self.agent_selection = self.possible_agents[int(self.game.actor[0])]

    def _started(self, call: str) -> PedroState:
        """The game; RuntimeError if ``reset`` has not been called yet."""
        if self.game is None:
            raise RuntimeError(f"call reset() before {call}(): the env has no match yet")
        return self.game

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        game = self._started("observe")
        seat = self.agent_name_mapping.get(agent) if isinstance(agent, str) else None
        if seat is None:
            raise ValueError(f"unknown agent {short_repr(agent)}: the agents are {', '.join(self.possible_agents)}")
        observation = np.empty(self.encoder.size, dtype=np.uint8)
        self._observe_kernel(game.buffer, game.element_offsets, self.encoder.statics, self._viewers[seat], observation)
        acting = agent == self.agent_selection and not self._over
        mask = self._mask_bytes.copy() if acting else self._no_mask.copy()
        return {"observation": observation, "action_mask": mask}

    def last(self, observe: bool = True) -> tuple:
        self._started("last")
        agent = self.agent_selection
        return (
            self.observe(agent) if observe else None,
            self._cumulative_rewards[agent],
            self.terminations[agent],
            self.truncations[agent],
            self.infos[agent],
        )

    def state(self) -> np.ndarray:
        """The full state (all hands and the stock) seen from the acting seat, for centralized critics."""
        game = self._started("state")
        return self.encoder.encode_full_state(game, game.actor.astype(np.intp))[0]

    def legal_actions(self) -> list[int]:
        """Legal action indices of the acting agent."""
        return [int(a) for a in np.flatnonzero(self._mask)]

    def step(self, action: int | str | None) -> None:
        """Apply the acting agent's action (an index 0..132 or its text form; None for a finished agent)."""
        game = self._started("step")
        agent = self.agent_selection
        if agent not in self.terminations:
            raise RuntimeError("the episode is over and every agent has left it: call reset() to start another")
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if type(action) is not int:
            action = self._action_index(action, agent)
        in_range = 0 <= action < NUM_ACTIONS
        if not (in_range and self._mask[action]):
            if not (in_range and renege_allowed(game, self.config, np.array([action]))[0]):
                raise IllegalActionError(illegal_action_message(action, self._mask, f"for {agent}"))

        self._cumulative_rewards[agent] = 0.0
        self._actions[0] = action
        step_kernel, step_args = self._step_call
        status = step_kernel(*step_args)
        waiting = status & steps.AEC_WAITING
        if waiting:  # the next deal's deck comes from the injected ones
            start_deal(game, self._pending_games[:1], self.config, self._deck_source)
        self.action_history.append(ACTION_TEXTS[action])
        if status & steps.AEC_DEAL_OVER:  # rewards, infos and episode ends only change when a deal ends
            self.rewards = dict(zip(self.possible_agents, game.rewards[0].tolist()))
            deal_info = self.deal_info()
            self.infos = {a: {"deal": dict(deal_info)} for a in self.agents}
            if status & (steps.AEC_TERMINATED | steps.AEC_TRUNCATED):
                terminated, truncated = bool(status & steps.AEC_TERMINATED), bool(status & steps.AEC_TRUNCATED)
                self.terminations = {a: terminated for a in self.agents}
                self.truncations = {a: truncated for a in self.agents}
            self._deal_shown = True
            self._accumulate_rewards()
        elif self._deal_shown:
            self.rewards = {a: 0.0 for a in self.agents}
            self.infos = {a: {} for a in self.agents}
            self._deal_shown = False
        if waiting:
            self._refresh()
        else:
            self._over = bool(status & steps.AEC_OVER)
            if not self._over:
                self.agent_selection = self.possible_agents[status >> steps.AEC_ACTOR_SHIFT]
        if self.render_mode == "human":
            self.render()

    def _action_index(self, action: Any, agent: str) -> int:
        """A stepped action that is not a plain int (a text form, a numpy integer) as its index; an
        IllegalActionError naming ``agent`` for anything else."""
        if isinstance(action, str):
            return str_to_action(action)
        if action is None or isinstance(action, bool) or not isinstance(action, (int, np.integer)):
            raise IllegalActionError(
                f"{agent} must step an int action in 0..{NUM_ACTIONS - 1} (or its text form), got {short_repr(action)}"
            )
        return int(action)

    def deck_of_deal(self, deal: int) -> list[str]:
        """The deck (52 card strings, top first) that deal ``deal`` (0 = the first, thrown-in deals counted) of
        the current match uses: the injected one, else the one hashed from the seed. For replays."""
        game = self._started("deck_of_deal")
        if isinstance(deal, bool) or not isinstance(deal, (int, np.integer)) or not 0 <= deal < 2**31:
            raise ValueError(f"deal must be an int from 0 to 2**31 - 1 (an int32 index), got {short_repr(deal)}")
        if deal < len(self._decks):
            deck = self._decks[deal]
        else:
            deck = hashed_decks(game.seed[:1], game.match_index[:1], np.array([deal], dtype=game.deal_index.dtype))[0]
        return [card_to_str(int(card)) for card in deck]

    def deal_info(self) -> dict[str, Any]:
        """The ``"deal"`` info (docs/rules.md section 11) of the deal that ended in the last step."""
        game = self.game
        assert game is not None
        redeal = bool(game.last_redeal[0])
        made = int(game.last_made[0])
        renege = int(game.last_renege[0])
        return {
            "redeal": redeal,
            "maker": None if redeal else int(game.last_maker[0]),
            "bid": None if redeal else int(game.last_bid[0]),
            "trump": None if redeal else SUITS[int(game.last_trump[0])],
            "points": [int(p) for p in game.last_points[0]],
            "made": None if made < 0 else bool(made),
            "delta": [int(d) for d in game.last_delta[0]],
            "scores": [int(s) for s in game.scores[0]],
            "renege": None if renege < 0 else renege,
        }

    def render(self) -> str | None:
        if self.render_mode is None:
            return None
        text = render_table(self._started("render"), self.config)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        pass


class OrderEnforcing(wrappers.OrderEnforcingWrapper):
    """PettingZoo's order enforcement with the checks of ``agent_iter``, ``last`` and ``step`` made here
    directly: the same errors and warnings, without a wrapper attribute lookup per read (PettingZoo's reads
    every attribute of the env through ``__getattr__``, about half the time of a step)."""

    def last(self, observe: bool = True) -> tuple:
        if not self._has_reset:
            raise AttributeError("agent_selection cannot be accessed before reset")
        return self.env.last(observe)

    def step(self, action: Any) -> None:
        if not self._has_reset:
            EnvLogger.error_step_before_reset()
        elif not self.env.agents:
            self._has_updated = True
            EnvLogger.warn_step_after_terminated_truncated()
        else:
            self._has_updated = True
            self.env.step(action)

    def agent_iter(self, max_iter: int = 2**63) -> AgentIterable:
        if not self._has_reset:
            EnvLogger.error_agent_iter_before_reset()
        return AgentIterable(self, max_iter)


class AgentIterable(AECOrderEnforcingIterable):
    def __iter__(self) -> AgentIterator:
        return AgentIterator(self.env, self.max_iter)


class AgentIterator(AECOrderEnforcingIterator):
    """PettingZoo's order-enforcing agent iterator, reading the bare env's agents directly."""

    def __next__(self) -> str:
        wrapper = self.env
        bare = wrapper.env
        if not bare.agents or self.iters_til_term <= 0:
            raise StopIteration
        self.iters_til_term -= 1
        assert wrapper._has_updated, "need to call step() or reset() in a loop over `agent_iter`"
        wrapper._has_updated = False
        return bare.agent_selection


def env(render_mode: str | None = None, **config: Any) -> AECEnv:
    """The Pedro AEC env wrapped in order enforcement (PettingZoo's, see :class:`OrderEnforcing`; config keys:
    docs/rules.md section 9)."""
    return OrderEnforcing(raw_env(render_mode=render_mode, **config))
