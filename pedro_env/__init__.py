"""pedro-rl: Pedro (Cinch / Double Pedro) as one compiled, batched rules engine behind a PettingZoo AEC env,
a batched env and Gymnasium envs (docs/environment.md).

>>> import pedro_env
>>> env = pedro_env.env()            # PettingZoo AEC, 4 players, Cinch rules to 62
>>> game = pedro_env.SingleGame()      # one match, the driver under every one-game face
>>> venv = pedro_env.PedroVectorEnv(num_envs=256)
>>> gym_venv = pedro_env.PedroGymVectorEnv(num_envs=64)  # Gymnasium VectorEnv: one learner seat per game
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pedro_env.actions import NUM_ACTIONS, action_to_str, str_to_action
from pedro_env.aec import env, raw_env
from pedro_env.config import ConfigError, PedroConfig, SeedError, make_config
from pedro_env.gym import PedroGymEnv, uniform_random_policy
from pedro_env.rules import IllegalActionError
from pedro_env.single_game import SingleGame
from pedro_env.vector import PedroVectorEnv, VectorStep

if TYPE_CHECKING:
    from pedro_env.gym_vector import PedroGymVectorEnv

__all__ = [
    "NUM_ACTIONS",
    "ConfigError",
    "IllegalActionError",
    "PedroConfig",
    "PedroGymEnv",
    "PedroGymVectorEnv",
    "PedroVectorEnv",
    "SeedError",
    "SingleGame",
    "VectorStep",
    "action_to_str",
    "env",
    "make_config",
    "raw_env",
    "str_to_action",
    "uniform_random_policy",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """``PedroGymVectorEnv`` on first use: importing it here would make ``python -m pedro_env.gym_vector`` warn."""
    if name == "PedroGymVectorEnv":
        from pedro_env.gym_vector import PedroGymVectorEnv

        return PedroGymVectorEnv
    raise AttributeError(f"module 'pedro_env' has no attribute {name!r}")
