"""What a training checkpoint holds of the trainer, and how a resumed run takes it back (:class:`CheckpointState`).

A resumed run checks what it takes back (:func:`checked_counters`, and the shapes and ranges of the league's and
the games' arrays): a hand-edited or damaged checkpoint is refused with a ValueError naming the entry, before it
could train on nonsense or fail mid-run. A single-rules run keeps its games' entries (``env``, ``step``,
``games``, ``game_stats``) at the top of its part; a run across rule sets keeps them per rule set under
``rule_sets``, with each one's opponent win rates under ``rule_set_rates`` (the league's snapshots are saved
once), and refuses a checkpoint of another mix.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from agents.checkpoint import pack_arrays, unpack_arrays
from agents.policy import observation_layout
from pedro_env.observation_layout import LAYOUT_VERSION
from train.config import TrainConfig
from train.distributed import checkpoint_world_size_error
from train.stats import GameStats, tag_of
from train.table_group import TableGroup


def checked_counters(payload: dict[str, Any], config: TrainConfig) -> dict[str, Any]:
    """A checkpoint's counters (:meth:`CheckpointState.state_dict`), or ValueError naming the first that cannot be.

    The run stops only between updates, so ``decisions`` is always ``updates`` times the job's decisions per
    update (``num_envs * rollout_steps * world_size``; none of these changes on resume).
    """
    counters = payload.get("counters")
    if not isinstance(counters, dict):
        raise ValueError(f"its 'counters' entry is not a mapping of counters: {type(counters).__name__}")

    def whole(name: str, low: int) -> int:
        value = counters.get(name)
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
            raise ValueError(f"counter {name!r} = {value!r} is not allowed: it takes an int >= {low}")
        return int(value)

    decisions, updates = whole("decisions", 0), whole("updates", 0)
    world_size = payload.get("world_size", 1)
    per_update = config.rollout_decisions * (world_size if isinstance(world_size, int) else 1)
    if decisions != updates * per_update:
        raise ValueError(
            f"counter 'decisions' = {decisions:,} is not its {updates:,} updates of {per_update:,} decisions each"
        )
    elapsed = counters.get("elapsed_s")
    if isinstance(elapsed, bool) or not isinstance(elapsed, numbers.Real) or not 0 <= elapsed < math.inf:
        raise ValueError(f"counter 'elapsed_s' = {elapsed!r} is not allowed: it takes a finite number >= 0")
    next_eval = whole("next_eval", -1)
    if next_eval == 0:
        raise ValueError("counter 'next_eval' = 0 is not allowed: it takes -1 (no evaluation) or an int >= 1")
    return {
        "decisions": decisions,
        "updates": updates,
        "elapsed_s": float(elapsed),
        "next_league": whole("next_league", 1),
        "next_eval": next_eval,
        "next_checkpoint": whole("next_checkpoint", 1),
    }


def _fitting(name: str, saved: Any, target: np.ndarray, low: int | None = None, high: int | None = None) -> np.ndarray:
    """``saved`` (a checkpoint's array for ``target``) when it has ``target``'s shape and, for indices, values in
    ``[low, high)``; else ValueError naming it."""
    array = np.asarray(saved)
    if array.shape != target.shape:
        raise ValueError(f"its {name!r} array has shape {array.shape}; this run's is {target.shape}")
    if low is not None and high is not None and array.size and not (array.min() >= low and array.max() < high):
        raise ValueError(f"its {name!r} array holds values outside {low} .. {high - 1}")
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        raise ValueError(f"its {name!r} array holds values that are not finite")
    return array


def group_state(group: TableGroup) -> dict[str, Any]:
    """This rank's games of one rule set: the env, its current step, the seating and the statistics since the last
    log."""
    step = group.step
    step_arrays = {
        "actor": step.actor,
        "observation": step.observation,
        "action_mask": step.action_mask,
        "rewards": step.rewards,
    }
    return {
        "env": pack_arrays(group.venv.snapshot()),
        "step": pack_arrays(step_arrays),
        "games": pack_arrays(group.seating.arrays()),
        "game_stats": dict(group.game_stats.values),
    }


def load_group_state(group: TableGroup, payload: dict[str, Any]) -> None:
    """Continue ``group``'s games from :func:`group_state` (ValueError naming what does not fit)."""
    group.step = step = group.venv.restore(unpack_arrays(payload["env"]))
    saved_step = unpack_arrays(payload["step"])
    if not (
        np.array_equal(saved_step["actor"], step.actor) and np.array_equal(saved_step["observation"], step.observation)
    ):
        raise ValueError("the checkpoint's environment does not reproduce its saved observations")
    step.rewards[:] = _fitting("rewards", saved_step["rewards"], step.rewards)
    games = unpack_arrays(payload["games"])
    pool = len(group.pool)
    ranges = {  # each array's allowed indices
        "seat_controller": (-1, pool),
        "learner_team": (-1, group.rules.num_teams),
        "game_opponent": (-1, pool),
        "game_partner": (-1, len(group.pool.baselines)),
        "game_group": (0, len(group.stat_groups)),
        "bid_assist": (-1, len(group.assistants)),
    }
    for name, (low, high) in ranges.items():
        if name in games or name in ("seat_controller", "learner_team"):  # the others are absent in older ones
            target = getattr(group.seating, name)
            target[:] = _fitting(name, games[name], target, low, high)
    stats = payload["game_stats"]
    unknown = sorted(set(stats) - set(GameStats.NAMES))
    if unknown or not all(math.isfinite(float(value)) for value in stats.values()):
        raise ValueError(f"its game statistics are damaged (unknown {unknown} or values not finite)")
    group.game_stats.values = {**dict.fromkeys(GameStats.NAMES, 0.0), **{k: float(v) for k, v in stats.items()}}


class CheckpointState:
    """The :class:`train.trainer.Trainer`'s checkpoint methods (a mixin over its attributes): the shared state
    (network, optimizer, counters, league) and each rank's own (games, random streams, game statistics)."""

    def rank_state(self) -> dict[str, Any]:
        """What is this rank's own: its games, its random streams, its game statistics since the last log."""
        own: dict[str, Any] = {
            "rng": {
                "trainer": self.rng.bit_generator.state,
                "opponents": self.opponent_rng.bit_generator.state,
                "sampler": self.sampler.get_state(),
            }
        }
        if len(self.groups) == 1:
            return {**own, **group_state(self.groups[0])}
        return {**own, "rule_sets": [group_state(group) for group in self.groups]}

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
            "league": self.groups[0].pool.state_dict(),
            "latest_eval": self.latest_eval,
            "latest_headline": self.latest_headline,
            "observation_layout": observation_layout(),
            "observation_layout_version": LAYOUT_VERSION,
        }
        if len(self.groups) > 1:
            payload["rule_set_rates"] = [group.pool.rates_state_dict() for group in self.groups]
        if self.ranks.distributed:
            payload["world_size"] = self.ranks.world_size
            payload["rank_states"] = others
        return payload

    def load_state_dict(self, payload: dict[str, Any]) -> None:
        """Continue from :meth:`state_dict` (a checkpoint of a run with the same structure, rule sets and world
        size)."""
        world_size = int(payload.get("world_size", 1))
        if world_size != self.ranks.world_size:
            raise ValueError(checkpoint_world_size_error(world_size, self.ranks.world_size))
        self._check_rules_mix(payload)
        counters = checked_counters(payload, self.config)
        self.network.load_state_dict(payload["model"])
        if self.acting_network is not self.network:
            self.acting_network.load_state_dict(payload["model"])
        self.optimizer.load_state_dict(payload["optimizer"])
        self._check_optimizer_state()
        self.decisions = counters["decisions"]
        self.updates = counters["updates"]
        self.elapsed_s = counters["elapsed_s"]
        self.next_league = counters["next_league"]
        evaluates = counters["next_eval"] > 0 and self.config.eval_interval
        self.next_eval = counters["next_eval"] if evaluates else math.inf
        self.next_checkpoint = counters["next_checkpoint"]
        rates = payload["rule_set_rates"] if len(self.groups) > 1 else [payload["league"]]
        self._check_league(payload["league"], rates)
        self.league.load_state_dict(payload["league"])
        for group, own in zip(self.groups, rates):
            group.pool.load_rates_state_dict(own)
        self.latest_eval = _latest_eval(payload["latest_eval"])
        self.latest_headline = str(payload.get("latest_headline", ""))
        self.load_rank_state(payload if self.ranks.rank == 0 else payload["rank_states"][self.ranks.rank - 1])

    def load_rank_state(self, payload: dict[str, Any]) -> None:
        """This rank's own part of a checkpoint (:meth:`rank_state`)."""
        self.rng.bit_generator.state = payload["rng"]["trainer"]
        self.opponent_rng.bit_generator.state = payload["rng"]["opponents"]
        self.sampler.set_state(payload["rng"]["sampler"])
        parts = payload["rule_sets"] if len(self.groups) > 1 else [payload]
        for group, part in zip(self.groups, parts):
            load_group_state(group, part)

    def _check_rules_mix(self, payload: dict[str, Any]) -> None:
        """ValueError unless the checkpoint's run played this run's rule sets, with the same shares."""
        saved = payload["config"].get("rules_mix", [])
        if saved != self.config.to_dict()["rules_mix"]:
            names = "; ".join(str(entry.get("name", "?")) for entry in saved if isinstance(entry, dict)) or "none"
            mine = "; ".join(group.name for group in self.groups) if self.config.rules_mix else "none"
            raise ValueError(f"its rules_mix ({names}) is not this run's ({mine}): a resumed run plays its own mix")
        parts = payload.get("rule_sets", [])
        if len(self.groups) > 1 and (len(parts) != len(self.groups) or len(payload["rule_set_rates"]) != len(parts)):
            raise ValueError(f"it holds the games of {len(parts)} rule sets; this run plays {len(self.groups)}")

    def _check_optimizer_state(self) -> None:
        """ValueError unless every optimizer state tensor has its parameter's shape (torch checks only counts)."""
        parameters = [parameter for group in self.optimizer.param_groups for parameter in group["params"]]
        for parameter in parameters:
            for name, value in self.optimizer.state.get(parameter, {}).items():
                if hasattr(value, "shape") and value.dim() > 0 and value.shape != parameter.shape:
                    raise ValueError(
                        f"its optimizer state {name!r} has shape {tuple(value.shape)} for a parameter of "
                        f"{tuple(parameter.shape)}"
                    )

    def _check_league(self, league: dict[str, Any], rates: list[dict[str, Any]]) -> None:
        """ValueError unless the league's saved sizes, and each rule set's win rates (``rates``), fit this run's pools
        (before they are loaded)."""
        pool, size = self.pool, self.league.size
        if len(league["weights"]) != len(league["decisions"]) or len(league["weights"]) > size:
            raise ValueError(
                f"its league holds {len(league['weights'])} snapshots and {len(league['decisions'])} decision "
                f"counts; this run keeps at most {size}"
            )
        for decisions in league["decisions"]:
            if isinstance(decisions, bool) or not isinstance(decisions, numbers.Integral) or decisions < 0:
                raise ValueError(f"its league records a snapshot at {decisions!r} decisions")
        replace = league["next_replace"]
        if isinstance(replace, bool) or not isinstance(replace, numbers.Integral) or not 0 <= replace < max(size, 1):
            raise ValueError(f"its league's next_replace = {replace!r} is not a place in a league of {size}")
        for own in rates:
            for name in ("opponent_rates", "partner_rates"):
                if name in own:  # absent in checkpoints from before opponent sampling
                    for part in ("wins", "matches"):
                        _fitting(f"league {name} {part}", own[name][part], getattr(getattr(pool, name), part))


def _latest_eval(latest: dict[str, Any]) -> dict[str, float]:
    if any(isinstance(values, dict) for values in latest.values()):  # before the gauntlet: {spec: {name: value}}
        latest = {
            f"vs_{tag_of(spec)}/{name}": value for spec, values in latest.items() for name, value in values.items()
        }
    return {key: float(value) for key, value in latest.items()}
