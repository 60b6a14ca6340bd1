"""What a training checkpoint holds of the trainer, and how a resumed run takes it back (:class:`CheckpointState`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from agents.checkpoint import pack_arrays, unpack_arrays
from agents.policy import observation_layout
from train.distributed import checkpoint_world_size_error
from train.stats import tag_of


class CheckpointState:
    """The :class:`train.trainer.Trainer`'s checkpoint methods (a mixin over its attributes): the shared state
    (network, optimizer, counters, league) and each rank's own (games, random streams, game statistics)."""

    def rank_state(self) -> dict[str, Any]:
        """What is this rank's own: its games, its random streams, its game statistics since the last log."""
        step = self.step
        step_arrays = {
            "actor": step.actor,
            "observation": step.observation,
            "action_mask": step.action_mask,
            "rewards": step.rewards,
        }
        return {
            "rng": {
                "trainer": self.rng.bit_generator.state,
                "opponents": self.opponent_rng.bit_generator.state,
                "sampler": self.sampler.get_state(),
            },
            "env": pack_arrays(self.venv.snapshot()),
            "step": pack_arrays(step_arrays),
            "games": pack_arrays(
                {
                    "seat_controller": self.seat_controller,
                    "learner_team": self.learner_team,
                    "game_opponent": self.game_opponent,
                    "game_partner": self.game_partner,
                    "game_group": self.game_group,
                    "bid_assist": self.bid_assist,
                }
            ),
            "game_stats": dict(self.game_stats.values),
        }

    def state_dict(self) -> dict[str, Any]:
        """Everything a resumed run needs, as tensors and plain values (see agents.checkpoint).

        The shared parts (network, optimizer, counters, league) and rank 0's own (:meth:`rank_state`) at the
        top; with several ranks ``world_size`` and ``rank_states``, the other ranks' own parts in rank order.
        A collective with several ranks: every rank calls it, rank 0 writes the result.
        """
        own = self.rank_state()
        others = self.exchange.gather(own)[1:] if self.ranks.distributed else []
        payload = {
            "config": self.config.to_dict(),
            "network": self.shape.to_dict(),
            "model": self.network.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "counters": {
                "decisions": self.decisions,
                "updates": self.updates,
                "elapsed_s": self.elapsed_s,
                "next_league": self.next_league,
                "next_eval": self.next_eval if math.isfinite(self.next_eval) else -1,
                "next_checkpoint": self.next_checkpoint,
            },
            **own,
            "league": self.pool.state_dict(),
            "latest_eval": self.latest_eval,
            "latest_headline": self.latest_headline,
            "observation_layout": observation_layout(self.pedro_config),
        }
        if self.ranks.distributed:
            payload["world_size"] = self.ranks.world_size
            payload["rank_states"] = others
        return payload

    def load_state_dict(self, payload: dict[str, Any]) -> None:
        """Continue from :meth:`state_dict` (a checkpoint of a run with the same structure and world size)."""
        world_size = int(payload.get("world_size", 1))
        if world_size != self.ranks.world_size:
            raise ValueError(checkpoint_world_size_error(world_size, self.ranks.world_size))
        self.network.load_state_dict(payload["model"])
        if self.acting_network is not self.network:
            self.acting_network.load_state_dict(payload["model"])
        self.optimizer.load_state_dict(payload["optimizer"])
        counters = payload["counters"]
        self.decisions = int(counters["decisions"])
        self.updates = int(counters["updates"])
        self.elapsed_s = float(counters["elapsed_s"])
        self.next_league = int(counters["next_league"])
        self.next_eval = math.inf if int(counters["next_eval"]) < 0 else int(counters["next_eval"])
        if not self.config.eval_interval:
            self.next_eval = math.inf
        self.next_checkpoint = int(counters["next_checkpoint"])
        self.pool.load_state_dict(payload["league"])
        self.latest_eval = _latest_eval(payload["latest_eval"])
        self.latest_headline = str(payload.get("latest_headline", ""))
        self.load_rank_state(payload if self.ranks.rank == 0 else payload["rank_states"][self.ranks.rank - 1])

    def load_rank_state(self, payload: dict[str, Any]) -> None:
        """This rank's own part of a checkpoint (:meth:`rank_state`)."""
        self.rng.bit_generator.state = payload["rng"]["trainer"]
        self.opponent_rng.bit_generator.state = payload["rng"]["opponents"]
        self.sampler.set_state(payload["rng"]["sampler"])
        self.step = self.venv.restore(unpack_arrays(payload["env"]))
        saved_step = unpack_arrays(payload["step"])
        if not (
            np.array_equal(saved_step["actor"], self.step.actor)
            and np.array_equal(saved_step["observation"], self.step.observation)
        ):
            raise ValueError("the checkpoint's environment does not reproduce its saved observations")
        self.step.rewards[:] = saved_step["rewards"]
        games = unpack_arrays(payload["games"])
        self.seat_controller[:] = games["seat_controller"]
        self.learner_team[:] = games["learner_team"]
        for name in ("game_opponent", "game_partner", "game_group", "bid_assist"):  # absent in older checkpoints
            if name in games:
                getattr(self, name)[:] = games[name]
        self.game_stats.values = {name: float(value) for name, value in payload["game_stats"].items()}


def _latest_eval(latest: dict[str, Any]) -> dict[str, float]:
    if any(isinstance(values, dict) for values in latest.values()):  # before the gauntlet: {spec: {name: value}}
        latest = {
            f"vs_{tag_of(spec)}/{name}": value for spec, values in latest.items() for name, value in values.items()
        }
    return {key: float(value) for key, value in latest.items()}
