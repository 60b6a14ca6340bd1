"""Every training key: :class:`TrainConfig`, one frozen dataclass, each field with its type, its range or choices
(:func:`pedro_env.keys.key`, beside the field) and a docstring under it (its ``--list-keys`` line and its row in
docs/training.md's table).

Reading a config (YAML and ``KEY=VALUE`` text) and the checks across keys live in :mod:`train.config`, which
every caller imports; this module only declares.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any

from arena.gauntlet import GAUNTLET_BASELINES
from pedro_env.config import PedroConfig, make_config
from pedro_env.keys import key
from train.rules_mix import ENTRY_FORM, RuleSet, rule_sets

DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = ("auto", "float32", "bfloat16")
MAX_HIDDEN = 65_536  # units per hidden layer
PARTNER_OPPONENTS = ("pool", "baselines", "partner")
OPPONENT_SAMPLINGS = ("uniform", "pfsp")
PHASE_NAMES = ("bid", "trump", "discard", "play")
TEACHER_SIDES = ("maker", "defender")
AGENT_SPEC_LIST = "a list of agent specs, e.g. [random, rule:heuristic]"


class TrainConfigError(ValueError):
    """A training config key or value that is not allowed (the message names it and the allowed values)."""


@dataclass(frozen=True)
class TrainConfig:
    """Every setting of a self-play PPO run (``pedro-train``). Decisions count every seat's actions in every game."""

    # ---- the run ----
    run_name: str = ""
    """Name of the run directory under ``runs_dir`` (empty: ``<config file stem>-<date-time>``)."""
    runs_dir: str = "runs"
    """Directory holding the run directories."""
    seed: int = key(1, low=0, high=2**32 - 1)  # the games of a run are seeded seed * 2**32 + i, within uint64
    """Seeds the deals, the network initialisation, the sampling of actions and the opponents."""
    device: str = key("auto", choices=DEVICES)
    """``auto`` (CUDA when available, else CPU), ``cpu`` or ``cuda``."""
    precision: str = key("float32", choices=PRECISIONS)
    """The network's arithmetic while training (the policy's and the league's forwards, the update): ``float32``,
    ``bfloat16`` (an autocast: weights, optimizer state, losses and outputs stay float32; about 3x the matrix pace
    on a CPU with AVX-512 BF16 or AMX) or ``auto`` (bfloat16 where the device multiplies it natively, else
    float32). Evaluation and the exported policy always run float32."""
    torch_threads: int = key(1, low=0, high=1024)
    """Threads torch may use on CPU (0: one per core). One keeps its speed beside other processes; one per core is
    faster only alone on the machine (docs/training.md, "Threads")."""
    total_decisions: int = key(12_000_000, low=1, high=2**62)  # counters travel as int64
    """Length of the run in decisions (environment steps summed over all games)."""

    # ---- the games ----
    env: Mapping[str, Any] = key(
        default_factory=lambda: MappingProxyType({}), words="a mapping of rule keys (pedro_env PedroConfig)"
    )
    """Rule and episode options of the games (PedroConfig keys, e.g. ``{target_score: 62, variant: cinch}``)."""
    num_envs: int = key(512, low=1, high=2**20)
    """Games stepped together in the batched environment (per rank: a job of N ranks plays N * num_envs)."""
    rollout_steps: int = key(64, low=1)
    """Environment steps per game between two updates (a rollout holds num_envs * rollout_steps decisions)."""
    rules_mix: tuple[Mapping[str, Any], ...] = key((), words=f"a list of entries {ENTRY_FORM}")
    """Train one network on several rule sets at once: entries ``{set: {RULE_KEY: VALUE}, weight: W, name: N}``, each
    ``env`` with ``set`` on top, playing a share of ``num_envs`` proportional to ``weight`` (default 1), logged as
    ``eval/<name>/`` and ``game/<name>/`` (name default: the set as ``KEY=VALUE,...``, or ``default``). Empty: ``env``
    alone. docs/training.md, "Training across rule sets"."""

    # ---- the network ----
    hidden_sizes: tuple[int, ...] = key(
        (256, 256),
        low=1,
        high=MAX_HIDDEN,
        non_empty=True,
        words=f"a list of ints from 1 to {MAX_HIDDEN}, e.g. [256, 256]",
    )
    """Widths of the hidden layers of the actor (and of the critic)."""
    init_from: str = ""
    """The network's starting weights: a checkpoint (``runs/NAME/latest.pt``, a run directory, an exported policy) or
    ``pretrained``; empty: random. Its network must be this config's, its rules any (a resume reads its own)."""
    shared_trunk: bool = True
    """Actor and critic share the hidden layers (two heads; half the compute). A centralized critic has its own."""
    centralized_critic: bool = False
    """The critic sees the full state (every hand, the stock) during training; the actor sees only its observation."""

    # ---- PPO ----
    lr: float = key(3e-4, low=0.0)
    """Adam learning rate."""
    anneal_lr: bool = True
    """Decay the learning rate linearly to 0 over ``total_decisions`` (over each segment, with ``lr_restarts``)."""
    lr_restarts: tuple[int, ...] = key((), low=1, high=2**62, words="a list of decision counts, e.g. [24_000_000]")
    """Warm restarts: at each of these decisions (increasing, below ``total_decisions``) the learning rate jumps to
    ``lr_restart`` and Adam's moment estimates start afresh; each segment decays to 0 by the next
    (train/schedule.py)."""
    lr_restart: float = key(0.0, low=0.0)
    """The learning rate each of ``lr_restarts`` jumps to (0: ``lr``)."""
    gamma: float = key(0.99, low=0.0, high=1.0)
    """Discount per decision of the same seat."""
    gae_lambda: float = key(0.95, low=0.0, high=1.0)
    """GAE lambda."""
    update_epochs: int = key(3, low=1)
    """Passes over each rollout."""
    num_minibatches: int = key(4, low=1)
    """Minibatches per pass."""
    clip_coef: float = key(0.2, low=0.0)
    """PPO ratio clip."""
    clip_vloss: bool = True
    """Clip the value loss around the rollout's values."""
    ent_coef: float = key(0.01, low=0.0)
    """Entropy bonus (entropy over legal actions only)."""
    bid_entropy_boost: float = key(1.0, low=0.0)
    """The entropy bonus of bidding decisions is ``ent_coef`` times this (keeps the policy trying bids)."""
    vf_coef: float = key(0.5, low=0.0)
    """Value-loss weight."""
    max_grad_norm: float = key(0.5, low=0.0)
    """Gradient-norm clip."""
    target_kl: float = key(0.0, low=0.0)
    """Stop an update's passes early once the approximate KL exceeds this (0: never)."""
    norm_adv: bool = True
    """Normalise advantages per minibatch."""

    # ---- opponents ----
    opponent_share: float = key(0.25, low=0.0, high=1.0)
    """Share of games in which the other teams are an opponent (a league snapshot or a baseline, the same at every
    seat not the policy's), not the policy."""
    partner_share: float = key(0.45, low=0.0, high=1.0)
    """Share of games in which one seat of the policy's team is a baseline partner (against ``partner_opponents``).
    Four players only: individual games (two or three players) take 0 and refuse any other value."""
    partner_opponents: str = key("pool", choices=PARTNER_OPPONENTS)
    """The other team in partner games: ``pool`` (any pool member, as in opponent games), ``baselines``, or
    ``partner`` (two of the partner's own baseline, as in the gauntlet's partner entries)."""
    baseline_opponents: tuple[str, ...] = key(("rule:heuristic", "rule:cautious"), words=AGENT_SPEC_LIST)
    """Agent specs that join the opponent pool (any spec of agents.make_agent; empty: league only)."""
    league_size: int = key(5, low=0)
    """Frozen past policies kept in the opponent pool (0: no league); the oldest leaves first."""
    league_interval: int = key(2_000_000, low=1)
    """Decisions between two snapshots of the policy into the league."""
    bid_assist_share: float = key(0.0, low=0.0, high=1.0)
    """Share of games in which a ``bid_assistants`` agent bids for one team's policy seats (the policy plays the rest),
    so it also plays contracts it would not bid yet; those bids are not trained on."""
    bid_assistants: tuple[str, ...] = key(("rule:heuristic",), words=AGENT_SPEC_LIST)
    """Agent specs that bid in assisted games (one drawn per game)."""
    teacher: str = ""
    """Kickstarting: an agent spec whose choices the policy is pulled towards early in the run (empty: none)."""
    teacher_coef: float = key(1.0, low=0.0)
    """Initial weight of the cross-entropy from the policy to the teacher's action (added to the PPO loss)."""
    teacher_decisions: int = key(0, low=0)
    """Decisions over which the teacher's weight decays linearly to ``teacher_floor``."""
    teacher_floor: float = key(0.0, low=0.0)
    """The teacher's weight after ``teacher_decisions``, for the rest of the run (a lasting pull towards it)."""
    teacher_phases: tuple[str, ...] = key(
        ("trump", "discard", "play"), choices=PHASE_NAMES, words=f"a list of phases from {', '.join(PHASE_NAMES)}"
    )
    """Phases in which the teacher is imitated (bid, trump, discard, play); the others are learned by RL alone."""
    teacher_sides: tuple[str, ...] = key(("maker", "defender"), choices=TEACHER_SIDES, non_empty=True)
    """Whose decisions the teacher labels: the maker's side (my team holds the high bid), the defenders, or both."""
    teacher_margin: float = key(0.0, low=0.0)
    """Label only the play decisions where the teacher's card beats its next best by at least this many points (mean
    over the deals a ``search:pimc`` teacher samples); 0: every decision."""
    opponent_sampling: str = key("uniform", choices=OPPONENT_SAMPLINGS)
    """Who is met: ``uniform`` over the pool (and the partners), or ``pfsp``, favouring those the policy loses to."""
    pfsp_exponent: float = key(2.0, low=0.0)
    """With ``pfsp``: a member is drawn with weight ``(1 - win rate) ** pfsp_exponent + pfsp_floor``."""
    pfsp_floor: float = key(0.05, low=0.0)
    """With ``pfsp``: the weight every member keeps, however often the policy beats it."""

    # ---- evaluation, logging, checkpoints ----
    eval_interval: int = key(2_000_000, low=0)
    """Decisions between two evaluations with the harness (0: only the final one, if ``final_eval_pairs``)."""
    eval_opponents: tuple[str, ...] = key(GAUNTLET_BASELINES, words=AGENT_SPEC_LIST)
    """Baselines of the evaluation gauntlet, met as opponents (eval/vs_<spec>/) and partners (eval/with_<spec>/)."""
    eval_partners: bool = True
    """The gauntlet also seats each baseline as the policy's partner against two of it. Four players only: individual
    games take false and refuse true."""
    eval_rules: tuple[str, ...] = key((), words="a list of names of rules_mix entries")
    """The names of the ``rules_mix`` rule sets that the periodic evaluations play (empty: every one); the final
    evaluation plays every one."""
    eval_league: int = key(2, low=0)
    """The most recent league snapshots that join the gauntlet (as opponents and partners; not in the worst case)."""
    eval_pairs: int = key(100, low=1)
    """Duplicate match pairs per baseline-opponent entry of the gauntlet in a periodic evaluation."""
    eval_partner_pairs: int = key(50, low=0)
    """Duplicate match pairs per partner entry and per league-snapshot entry in a periodic evaluation (0: none)."""
    eval_search_pairs: int = key(4, low=0)
    """Duplicate match pairs per search-agent entry (seconds per match) in a periodic evaluation (0: leave out)."""
    final_eval_pairs: int = key(500, low=0)
    """Duplicate match pairs per baseline-opponent entry in the evaluation table written at the end of the run."""
    final_partner_pairs: int = key(200, low=0)
    """Duplicate match pairs per partner entry and per league-snapshot entry in the final table (0: none)."""
    final_search_pairs: int = key(30, low=0)
    """Duplicate match pairs per search-agent entry in the final table (0: leave out)."""
    eval_workers: int = key(0, low=0)
    """Processes playing the evaluation matches (0: one per core; with several ranks each plays a share with its
    machine's cores divided among the ranks on it); training waits while they play."""
    eval_seed: int = key(1_000_000, low=0, high=2**62)  # evaluation deal seeds are eval_seed + p, int64
    """Seed of the evaluation deals (the same deals at every evaluation, so curves compare like with like)."""
    checkpoint_interval: int = key(5_000_000, low=1)
    """Decisions between two checkpoints (``latest.pt`` is rewritten; one is always written at the end)."""
    keep_checkpoints: bool = False
    """Also keep every interval checkpoint as ``checkpoint-<decisions>.pt``."""
    log_interval: int = key(1, low=1)
    """Updates between two writes of the loss and game scalars."""

    # ---- derived ----
    @property
    def rollout_decisions(self) -> int:
        """Decisions gathered per update."""
        return self.num_envs * self.rollout_steps

    @property
    def num_updates(self) -> int:
        """Updates in the run (the last may overshoot ``total_decisions`` by less than one rollout)."""
        return max(1, math.ceil(self.total_decisions / self.rollout_decisions))

    @functools.cached_property
    def pedro_config(self) -> PedroConfig:
        """The rules of ``env`` (validated once, when the config was made): the games' rules, or with ``rules_mix``
        the rules its entries change."""
        return make_config(**self.env)

    @functools.cached_property
    def rule_sets(self) -> tuple[RuleSet, ...]:
        """The rule sets of the games: one per ``rules_mix`` entry, or ``env``'s rules alone, named ``default``."""
        return rule_sets(self.rules_mix, self.env, self.pedro_config)

    def to_dict(self) -> dict[str, Any]:
        """Plain YAML/JSON-ready values (tuples as lists)."""
        out: dict[str, Any] = {}
        for item in fields(self):
            value = getattr(self, item.name)
            out[item.name] = (
                list(value) if isinstance(value, tuple) else (dict(value) if isinstance(value, Mapping) else value)
            )
        out["rules_mix"] = [{**entry, "set": dict(entry["set"])} for entry in self.rules_mix]
        return out
