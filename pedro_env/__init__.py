"""pedro-rl: Pedro (Cinch / Double Pedro) as a vectorized numpy engine, a PettingZoo AEC env and a batched env.

>>> import pedro_env
>>> env = pedro_env.env()            # PettingZoo AEC, 4 players, Cinch rules to 62
>>> venv = pedro_env.PedroVectorEnv(num_envs=256)
"""

from __future__ import annotations

from pedro_env.actions import NUM_ACTIONS, action_to_str, str_to_action
from pedro_env.aec import env, raw_env
from pedro_env.config import ConfigError, PedroConfig, make_config
from pedro_env.gym import PedroGymEnv, uniform_random_policy
from pedro_env.vector import IllegalActionError, PedroVectorEnv, VectorStep

__all__ = [
    "NUM_ACTIONS",
    "ConfigError",
    "IllegalActionError",
    "PedroConfig",
    "PedroGymEnv",
    "PedroVectorEnv",
    "VectorStep",
    "action_to_str",
    "env",
    "make_config",
    "raw_env",
    "str_to_action",
    "uniform_random_policy",
]
__version__ = "0.1.0"
