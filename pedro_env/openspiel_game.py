"""Pedro as an OpenSpiel game: ``python_pedro``, registered with ``pyspiel`` when this module is imported.

Needs the ``openspiel`` extra. A face of the engine like the AEC env: a state holds one
:class:`~pedro_env.single_game.SingleGame` (the batch-of-one driver) and steps it; no rule is decided here.

- Game: one match (``episode="deal"``: one deal). Parameters: the config keys of docs/rules.md section 9,
  with their defaults (:data:`PARAMETERS`).
- Chance: first the first dealer (``num_players`` outcomes, uniform), then each deal's deck card by card,
  top first: 52 chance nodes, outcome = card id, uniform over the cards not yet dealt. The engine deals the
  whole deck once it is complete (:meth:`SingleGame.redeal`), so the history fixes the state.
- Actions: the engine's 133 (:mod:`pedro_env.actions`; ``action_to_string`` gives their text); ``apply_action``
  takes only ``legal_actions()`` (a renege is never one, under ``renege="penalty"`` too).
- Rewards: the env's (``reward`` key): ``rewards()`` those of the last decision (kept through the chance
  nodes that follow it, as OpenSpiel's tests collect them), ``returns()`` their sum.
- Observation tensor: the player's observation (:mod:`pedro_env.observation_layout`) as float32; the
  information-state tensor is the same encoding. Both are zeros at chance nodes (no card is seen until the
  deal is complete). Observers see as one player: a public-only or all-players observer is refused.
- Information-state string: perfect recall, the player's view of the history: the first dealer, then per deal
  its dealer, the player's dealt hand, every decision (all public), what the refill turned face up and the
  draw counts, and the player's current hand. Observation string: the table as the player sees it.
- ``resample_from_infostate``: the same history with the current deal's deck replaced by one drawn by
  :func:`~pedro_env.consistent_decks.consistent_deck`.

:meth:`PedroGame.position_state` starts a state at an engine position (searches that begin from one
player's observation; its ``history()`` starts there and it has no deck to resample).
"""

from __future__ import annotations

import random
from dataclasses import fields
from typing import Any

import numpy as np
import pyspiel

from pedro_env.actions import ACTION_TEXTS, DONE_ACTION, NUM_ACTIONS
from pedro_env.cards import CARD_NAMES, set_to_list
from pedro_env.config import PedroConfig, make_config
from pedro_env.consistent_decks import consistent_deck, own_dealt_hand
from pedro_env.observation_layout import OBSERVATION_SIZE
from pedro_env.render import render_table
from pedro_env.rules import IllegalActionError, illegal_action_message
from pedro_env.single_game import SingleGame
from pedro_env.state import DISCARD, PLAY

GAME_NAME = "python_pedro"
PARAMETERS = {field.name: field.default for field in fields(PedroConfig)}
"""The game's parameters and their defaults: every config key (docs/rules.md section 9)."""
CHANCE_CARDS = 52  # chance nodes per deal: the deck, top first


def _bound_per_deal(config: PedroConfig) -> int:
    """Most actions (chance included) a deal can take: the deck, bids, trump, every discard, the dones, the plays."""
    n = config.num_players
    return CHANCE_CARDS + n + 1 + 52 + n + 1 + 6 * n


def game_type(config: PedroConfig) -> pyspiel.GameType:
    """The GameType of a config: zero-sum but for three players playing for the win (+1 one, -1 two)."""
    zero_sum = config.reward == "points" or config.num_teams == 2
    return pyspiel.GameType(
        short_name=GAME_NAME,
        long_name="Pedro (pedro-rl engine)",
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
        chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
        information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
        utility=pyspiel.GameType.Utility.ZERO_SUM if zero_sum else pyspiel.GameType.Utility.GENERAL_SUM,
        reward_model=pyspiel.GameType.RewardModel.REWARDS,
        max_num_players=4,
        min_num_players=2,
        provides_information_state_string=True,
        provides_information_state_tensor=True,
        provides_observation_string=True,
        provides_observation_tensor=True,
        parameter_specification=PARAMETERS,
    )


def game_info(config: PedroConfig) -> pyspiel.GameInfo:
    """Sizes and bounds: a points reward is at most 2 a deal in size (a score change of at most the total)."""
    deals = 1 if config.episode == "deal" else config.max_deals
    bound = 1.0 if config.reward == "win" else 2.0 * deals
    zero_sum = config.reward == "points" or config.num_teams == 2
    return pyspiel.GameInfo(
        num_distinct_actions=NUM_ACTIONS,
        max_chance_outcomes=CHANCE_CARDS,
        num_players=config.num_players,
        min_utility=-bound,
        max_utility=bound,
        utility_sum=0.0 if zero_sum else None,
        max_game_length=1 + deals * _bound_per_deal(config),
    )


class PedroGame(pyspiel.Game):
    """``python_pedro`` for one config (its parameters: :data:`PARAMETERS`)."""

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        given = dict(params or {})
        unknown = sorted(set(given) - set(PARAMETERS))
        if unknown:
            raise ValueError(f"unknown {GAME_NAME} parameter(s) {unknown}: allowed are {', '.join(PARAMETERS)}")
        self.config = make_config(**{**PARAMETERS, **given})
        super().__init__(game_type(self.config), game_info(self.config), {**PARAMETERS, **given})

    def new_initial_state(self) -> PedroGameState:
        return PedroGameState(self)

    def make_py_observer(self, iig_obs_type: Any = None, params: dict | None = None) -> PedroObserver:
        if params:
            raise ValueError(f"{GAME_NAME} observers take no parameters, got {params}")
        one_player = pyspiel.PrivateInfoType.SINGLE_PLAYER
        if iig_obs_type is not None and not (iig_obs_type.public_info and iig_obs_type.private_info == one_player):
            # a public-only observer would be handed the player's hand, an all-players one only the player's
            raise ValueError(
                f"{GAME_NAME} observes as one player sees the table (public_info=True, private_info=SINGLE_PLAYER), "
                f"got public_info={iig_obs_type.public_info}, private_info={iig_obs_type.private_info.name}"
            )
        perfect_recall = iig_obs_type is not None and iig_obs_type.perfect_recall
        return PedroObserver(perfect_recall)

    def position_state(self, match: SingleGame) -> PedroGameState:
        """A state at ``match``'s position (its config must be this game's): returns count from there, each
        player's information begins with its observation there, and ``resample_from_infostate`` is unavailable."""
        if match.config != self.config:
            raise ValueError(f"the match's config {match.config} is not this game's {self.config}")
        state = PedroGameState(self)
        state._match = match.copy()
        state._first_dealer = int(match.state.dealer[0])
        state._dealing, state._position, state._header = False, True, "position"
        state._past = tuple(f"position {match.observe(p).tobytes().hex()}\n" for p in range(self.config.num_players))
        return state


class _Shared:
    """A value that clones share (never changed after it is made): deepcopy gives the same object."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __deepcopy__(self, memo: dict) -> _Shared:
        return self


class PedroGameState(pyspiel.State):
    """One match (see the module docstring). Every attribute is plain data or copies itself: ``clone()``
    deep-copies them, ``serialize()`` pickles them."""

    def __init__(self, game: PedroGame) -> None:
        super().__init__(game)
        n = game.config.num_players
        self._config = game.config
        self._match: SingleGame | None = None  # the engine; None until the first deck is complete
        self._first_dealer = -1  # -1 until the first chance outcome
        self._deck = b""  # the current deal's cards dealt so far (its chance outcomes)
        self._dealing = True  # the current deal's deck is not complete yet
        self._deal_start: _Shared | None = None  # the match as the current deal began (resampling replays it)
        self._decisions = b""  # the current deal's decisions, one byte each
        self._log = ""  # the current deal's public events as text
        self._dealt: tuple[int, ...] = (-1,) * n  # each player's dealt hand (card set), -1 unknown
        self._past: tuple[str, ...] = ("",) * n  # each player's information string of the finished deals
        self._deals = 0  # deals begun
        self._header = ""  # the current deal's number and dealer as text
        self._position = False  # built at a position (PedroGame.position_state)
        self._returns = [0.0] * n
        # the engine's float32 rewards are multiples of 1 / ((teams - 1) * total points): recovered exactly here
        self._reward_scale = float((game.config.num_teams - 1) * game.config.total_points)
        self._rewards = [0.0] * n

    # ---- OpenSpiel's State API ----
    def current_player(self) -> int:
        if self._replayed is not None:
            return self._replayed[len(self._replay_done)]
        if self._dealing:
            return pyspiel.PlayerId.CHANCE
        if self._match.over:
            return pyspiel.PlayerId.TERMINAL
        return self._match.actor

    def is_terminal(self) -> bool:
        return self._replayed is None and not self._dealing and self._match.over

    def _legal_actions(self, player: int) -> list[int]:
        return self._match.legal_actions()

    def chance_outcomes(self) -> list[tuple[int, float]]:
        if self._first_dealer < 0:
            n = self._config.num_players
            return [(seat, 1.0 / n) for seat in range(n)]
        left = [card for card in range(CHANCE_CARDS) if card not in self._deck]
        return [(card, 1.0 / len(left)) for card in left]

    def _apply_action(self, action: int) -> None:
        if self._replayed is not None:  # resample_from_infostate records the history only
            self._replay_done.append(action)
            return
        if self._dealing:  # rewards() keeps the last decision's (a deal's end) until the next decision
            self._deal_card(action)
            return
        match = self._match
        phase, robbing, actor = int(match.state.phase[0]), bool(match.state.robbing[0]), match.actor
        if not (0 <= action < NUM_ACTIONS and match.legal_mask[action]):  # the engine would take a "penalty" renege
            raise IllegalActionError(illegal_action_message(action, match.legal_mask, f"for player {actor}"))
        match.step(action)
        self._rewards = [round(float(r) * self._reward_scale) / self._reward_scale for r in match.state.rewards[0]]
        self._returns = [total + r for total, r in zip(self._returns, self._rewards)]
        self._decisions += bytes([action])
        self._log += f" P{actor}:{ACTION_TEXTS[action]}"
        if match.deal_ended:
            self._past = tuple(past + self._deal_text(p) + "\n" for p, past in enumerate(self._past))
            self._dealing = not match.over
            self._deck, self._decisions, self._log, self._deal_start = b"", b"", "", None
        elif action == DONE_ACTION and phase == DISCARD and not robbing:
            if match.state.phase[0] == PLAY or match.state.robbing[0]:  # this "done" refilled the hands
                self._log += " " + self._refill_text()

    def _deal_card(self, card: int) -> None:
        if self._first_dealer < 0:
            self._first_dealer = card
            self._past = tuple(f"first dealer P{card}\n" for _ in self._past)
            return
        self._deck += bytes([card])
        if len(self._deck) < CHANCE_CARDS:
            return
        deck = list(self._deck)
        if self._match is None:
            self._match = SingleGame(self._config)
            self._match.reset(seed=0, options={"dealer": self._first_dealer, "decks": [deck]})
        else:
            self._match.redeal(deck)
        self._dealing = False
        self._deals += 1
        self._deal_start = _Shared(self._match.copy())
        dealer = int(self._match.state.dealer[0])
        self._header = f"deal {self._deals} dealer P{dealer}"
        self._dealt = tuple(own_dealt_hand(deck, self._config, dealer, p) for p in range(self._config.num_players))

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            return f"first dealer P{action}" if self._first_dealer < 0 else f"deal {CARD_NAMES[action]}"
        return ACTION_TEXTS[action]

    def rewards(self) -> list[float]:
        return list(self._rewards)

    def returns(self) -> list[float]:
        return list(self._returns)

    def __str__(self) -> str:
        """The whole state in short: deal, phase, actor, scores, every hand, the trick, the public card sets."""
        if self._dealing:
            return f"deal {self._deals + 1}: {len(self._deck)} of {CHANCE_CARDS} cards dealt"
        state = self._match.state

        def cards(card_set: Any) -> str:
            return " ".join(CARD_NAMES[card] for card in set_to_list(card_set)) or "-"

        hands = "; ".join(f"P{seat} {cards(hand)}" for seat, hand in enumerate(state.hands[0]))
        trick = " ".join("-" if card < 0 else CARD_NAMES[card] for card in state.trick[0])
        return (
            f"{self._header} phase {int(state.phase[0])} actor P{self._match.actor} scores {state.scores[0].tolist()}"
            f" bids {state.bids[0].tolist()} trump {int(state.trump[0])} | {hands} | trick {trick} | played "
            f"{'; '.join(cards(c) for c in state.played[0])} | stock {state.stock[0][state.in_stock[0]].tolist()}"
        )

    # ---- what a player knows ----
    @property
    def match(self) -> SingleGame | None:
        """The engine's match (None before the first deck is complete); do not step it."""
        return self._match

    def _deal_text(self, player: int) -> str:
        dealt = self._dealt[player]
        hand = "?" if dealt < 0 else " ".join(CARD_NAMES[card] for card in set_to_list(dealt))
        return f"{self._header} hand {hand}:{self._log}"

    def _refill_text(self) -> str:
        state = self._match.state
        drawn = ",".join(str(int(count)) for count in state.drawn[0])
        open_draws = " ".join(CARD_NAMES[card] for card in set_to_list(state.open_draws[0]))
        aside = " ".join(CARD_NAMES[card] for card in set_to_list(state.set_aside[0]))
        return f"refill[drawn {drawn}; face up {open_draws}; set aside {aside}]"

    def information_state_text(self, player: int) -> str:
        """The perfect-recall information string of ``player`` (module docstring)."""
        if self._dealing:
            return f"{self._past[player]}deal {self._deals + 1}: {len(self._deck)} cards dealt"
        hand = " ".join(CARD_NAMES[card] for card in set_to_list(self._match.state.hands[0, player]))
        return f"{self._past[player]}{self._deal_text(player)} | holding {hand}"

    def observation_text(self, player: int) -> str:
        """The table as ``player`` sees it (its hand only)."""
        if self._dealing:
            return f"deal {self._deals + 1}: {len(self._deck)} of {CHANCE_CARDS} cards dealt"
        return render_table(self._match.state, self._config, viewer=player)

    def observation_vector(self, player: int) -> np.ndarray:
        """(D,) uint8: ``player``'s observation (zeros while a deck is dealt)."""
        if self._dealing:
            return np.zeros(OBSERVATION_SIZE, dtype=np.uint8)
        return self._match.observe(player)

    # ---- resampling ----
    _replayed: list[int] | None = None  # while a resampled state records its history: the player of each action
    _replay_done: list[int] | None = None  # and the actions recorded so far

    def resample_from_infostate(self, player: int, probability_sampler: Any) -> PedroGameState:
        """A state whose ``information_state_string(player)`` is this one's: this history with the current deal's
        deck replaced (every deck consistent with the player's knowledge is possible; see consistent_decks).
        ``probability_sampler()`` gives the uniform numbers (OpenSpiel's UniformProbabilitySampler)."""
        if self._position:
            raise RuntimeError("a state built at a position (PedroGame.position_state) has no history to resample")
        rnd = random.Random(int(probability_sampler() * 2**53))
        if self._dealing or self._match.over:
            deck = rnd.sample([c for c in range(CHANCE_CARDS)], len(self._deck)) if self._dealing else []
            return self._with_history(deck, None)
        deck, replayed = consistent_deck(
            self._match, self._deal_start.value, self._decisions, self._dealt[player], player, rnd
        )
        return self._with_history(deck, replayed)

    def _with_history(self, deck: list[int], replayed: SingleGame | None) -> PedroGameState:
        """A new state with this history, the current deal's cards so far replaced by ``deck`` and the engine by
        ``replayed`` (None: a copy of this one's); its history is recorded through ``apply_action``."""
        history = self.full_history()
        tail = list(deck) + list(self._decisions) if deck else []  # the current deal's actions, new cards first
        actions = [step.action for step in history[: len(history) - len(tail)]] + tail
        clone = self.get_game().new_initial_state()
        clone._replayed, clone._replay_done = [step.player for step in history], []
        for action in actions:
            clone.apply_action(action)
        del clone._replayed, clone._replay_done
        for name, value in self.__dict__.items():
            setattr(clone, name, value if name in ("_past", "_deal_start") else _copied(value))
        if deck:
            clone._deck = bytes(deck)
        if replayed is not None:
            dealer = int(replayed.state.dealer[0])
            clone._match = replayed
            clone._dealt = tuple(own_dealt_hand(deck, self._config, dealer, p) for p in range(self._config.num_players))
        return clone


def _copied(value: Any) -> Any:
    """An independent copy of a state attribute (the engine copies itself; the rest is immutable or a short list)."""
    if isinstance(value, SingleGame):
        return value.copy()
    return list(value) if isinstance(value, list) else value


class PedroObserver:
    """OpenSpiel's Python observer of ``python_pedro``: ``tensor`` (and ``dict["observation"]``) the player's
    observation as float32, its string the information string (``perfect_recall``) or the table as seen."""

    def __init__(self, perfect_recall: bool) -> None:
        self.perfect_recall = perfect_recall
        self.tensor = np.zeros(OBSERVATION_SIZE, dtype=np.float32)
        self.dict = {"observation": self.tensor}

    def set_from(self, state: PedroGameState, player: int) -> None:
        self.tensor[:] = state.observation_vector(player)

    def string_from(self, state: PedroGameState, player: int) -> str:
        return state.information_state_text(player) if self.perfect_recall else state.observation_text(player)


GAME_TYPE = game_type(make_config())
pyspiel.register_game(GAME_TYPE, PedroGame)
