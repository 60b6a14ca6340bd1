"""OpenSpiel's bots as our agents: ``openspiel:ismcts`` runs OpenSpiel's own ISMCTSBot on ``python_pedro``.

Like every agent it sees only its observation. Each decision it samples a world consistent with that
observation (the viewer at seat 0; the search agents' samplers: :func:`agents.search.worlds.sample_worlds`
before play, :class:`~pedro_env.deal_sampler.HandSampler` in play), starts a ``python_pedro`` state there
(:meth:`PedroGame.position_state`) and runs OpenSpiel's ISMCTSBot (``open_spiel.python.algorithms.ismcts``,
the Python one: the C++ bot cannot call back a Python game's resampling), whose root resampler draws a fresh
world per simulation. Options (``openspiel:ismcts,simulations=1000,rollout=openspiel``):

- ``simulations``: ISMCTS simulations per decision; ``uct_c``: its exploration constant;
- ``rollout``: ``engine`` (uniform random play in one compiled call on the engine's match, no OpenSpiel state
  per step) or ``openspiel`` (OpenSpiel's RandomRolloutEvaluator through the game's API; same play, slower);
- ``horizon``: ``deal`` (the search's game ends with the deal: values are the deal's points reward) or
  ``match`` (played to the end of the match, later deals dealt at random).
"""

from __future__ import annotations

import math
import random

import numpy as np

from agents.base import Agent
from agents.search.worlds import play_worlds, sample_worlds
from pedro_env.cards import RuleTables
from pedro_env.config import PedroConfig, make_config
from pedro_env.deal_sampler import relaxed_sampler
from pedro_env.knowledge import hidden_cards
from pedro_env.single_game import SingleGame
from pedro_env.state import PLAY
from pedro_env.view import PublicView, decode_observations

try:
    import pyspiel
    from open_spiel.python.algorithms import ismcts, mcts

    from pedro_env.openspiel_game import GAME_NAME, PedroGame, PedroGameState
except ImportError as error:  # the openspiel extra is optional
    raise ImportError(f"openspiel:* agents need OpenSpiel ({error}): pip install -e '.[openspiel]'") from None

ROLLOUTS = ("engine", "openspiel")
HORIZONS = ("deal", "match")


class EngineRolloutEvaluator:
    """OpenSpiel's Evaluator interface (``evaluate``, ``prior``): the returns after uniformly random play to the end
    of the game, played in one compiled call on a copy of the state's engine match (:meth:`SingleGame.play_out`;
    later deals hashed from a random seed); a uniform prior. The same play as OpenSpiel's RandomRolloutEvaluator,
    without an OpenSpiel state per step."""

    def __init__(self, random_state: np.random.RandomState) -> None:
        self.random_state = random_state

    def evaluate(self, state: PedroGameState) -> np.ndarray:
        match = state.match.copy()
        match.state.seed[0] = self.random_state.randint(2**62)
        return np.array(state.returns()) + match.play_out(self.random_state.randint(2**32))

    def prior(self, state: PedroGameState) -> list[tuple[int, float]]:
        legal = state.legal_actions()
        return [(action, 1.0 / len(legal)) for action in legal]


class IsmctsAgent(Agent):
    """``openspiel:ismcts``: OpenSpiel's ISMCTSBot from a world sampled from the observation (module docstring)."""

    def __init__(
        self,
        config: PedroConfig,
        simulations: int = 100,
        uct_c: float = 2.0,
        rollout: str = "engine",
        horizon: str = "deal",
    ) -> None:
        super().__init__(config)
        if simulations < 1:
            raise ValueError(f"simulations must be an int >= 1, got {simulations}")
        if not (math.isfinite(uct_c) and uct_c > 0):  # nan would make every UCT score nan
            raise ValueError(f"uct_c must be a finite float above 0, got {uct_c}")
        if rollout not in ROLLOUTS:
            raise ValueError(f"rollout must be one of {', '.join(ROLLOUTS)}, got {rollout!r}")
        if horizon not in HORIZONS:
            raise ValueError(f"horizon must be one of {', '.join(HORIZONS)}, got {horizon!r}")
        self.simulations, self.uct_c, self.rollout, self.horizon = int(simulations), float(uct_c), rollout, horizon
        episode = {"episode": "deal", "reward": "points"} if horizon == "deal" else {"episode": "match"}
        self.search_config = make_config(config, **episode)
        self.game: PedroGame = pyspiel.load_game(GAME_NAME, vars_of(self.search_config))
        self.tables = RuleTables.for_variant(config.variant)
        self._match: SingleGame | None = None  # the engine match each sampled world is set into

    def act(self, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        observations, action_masks = np.atleast_2d(observations), np.atleast_2d(action_masks)
        actions = np.zeros(observations.shape[0], dtype=np.int64)
        for game, (observation, mask) in enumerate(zip(observations, action_masks)):
            legal = np.flatnonzero(mask)
            if legal.size == 1:
                actions[game] = legal[0]
                continue
            actions[game] = self._search(decode_observations(observation, self.config), rng)
        return actions

    def _search(self, view: PublicView, rng: np.random.Generator) -> int:
        random_state = np.random.RandomState(int(rng.integers(2**31)))
        rnd = random.Random(int(rng.integers(2**62)))
        if self.rollout == "engine":
            evaluator = EngineRolloutEvaluator(random_state)
        else:
            evaluator = mcts.RandomRolloutEvaluator(n_rollouts=1, random_state=random_state)
        bot = ismcts.ISMCTSBot(self.game, evaluator, self.uct_c, self.simulations, random_state=random_state)
        bot.set_resampler(lambda _state, _player: self._world(view, rnd))
        return int(bot.step(self._world(view, rnd)))

    def _world(self, view: PublicView, rnd: random.Random) -> PedroGameState:
        """A ``python_pedro`` state at a world consistent with ``view`` (the viewer at seat 0, to act)."""
        config = self.search_config
        if view.phase[0] == PLAY:
            deal = relaxed_sampler(hidden_cards(view, 0, self.tables), {}).sample(rnd)
            world = play_worlds(view, 0, config, [deal])
        else:
            world, _ = sample_worlds(view, 0, config, 1, np.random.default_rng(rnd.getrandbits(63)))
        world.seed[0] = rnd.getrandbits(63)
        if self._match is None:
            self._match = SingleGame.at_position(world, config)
        else:
            self._match.set_position(world)
        return self.game.position_state(self._match)  # a copy: the agent's match is only a template


def vars_of(config: PedroConfig) -> dict:
    """A config as ``python_pedro``'s parameters."""
    return {name: getattr(config, name) for name in config.__dataclass_fields__}
