"""Training across rule sets (``rules_mix``, train/rules_mix.py and train/table_group.py): the key read and refused
in one line, the shares of the games, one forward a step over every rule set, the per-rule-set scalars and
tables, exact resume, a mix of one entry trained as the single-rules run, and two gloo ranks."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("yaml")
pytest.importorskip("tensorboard")

from test_distributed import _join, _leave, _spawn  # noqa: E402

from agents.checkpoint import CheckpointError, load_checkpoint  # noqa: E402
from agents.policy import policy_bytes  # noqa: E402
from arena.gauntlet import gauntlet_entries, run_gauntlet  # noqa: E402
from pedro_env import make_config  # noqa: E402
from train.cli import main as train_main  # noqa: E402
from train.config import TrainConfigError, load_train_config, make_train_config  # noqa: E402
from train.distributed import LocalBatch  # noqa: E402
from train.rules_mix import allot_games  # noqa: E402
from train.run import run_training  # noqa: E402
from train.trainer import Trainer  # noqa: E402

from conftest import REPO_ROOT, tiny_config, whole_and_resumed  # noqa: E402

# every table size, three variants (tiny_config's env plays to 11)
MIX = [
    {"set": {}, "weight": 2},
    {"set": {"six_card": True, "variant": "sancho"}},
    {"set": {"num_players": 3, "scoring": "simple", "refill": "dealer_robs", "target_score": 21}},
    "num_players=2,variant=pitch,name=heads-up",
    "scoring=simple,name=simple",
]
NAMES = [
    "default",
    "six_card=true,variant=sancho",
    "num_players=3,scoring=simple,refill=dealer_robs,target_score=21",
    "heads-up",
    "simple",
]
GAMES = [11, 6, 5, 5, 5]  # 32 games by weights 2, 1, 1, 1, 1: 10.7 and 5.3 each, the larger remainders first


def mixed_config(**overrides: object):
    """conftest's tiny run on the five rule sets of :data:`MIX` (:data:`GAMES` of 32), evaluated in-process, its
    matches cut at 12 deals (an untrained policy's run long)."""
    values = {"rules_mix": MIX, "eval_workers": 1, "env": {"target_score": 11, "max_deals": 12}}
    return tiny_config(**{**values, **overrides})


# ---------------------------------------------------------------- the key


def test_entries_are_read_from_mappings_and_texts_and_named_by_their_rules(tmp_path: Path) -> None:
    config = mixed_config()
    assert [rule_set.name for rule_set in config.rule_sets] == NAMES
    assert [rule_set.weight for rule_set in config.rule_sets] == [2.0, 1.0, 1.0, 1.0, 1.0]
    sancho, three = config.rule_sets[1].rules, config.rule_sets[2].rules
    assert sancho.six_card and sancho.variant == "sancho" and sancho.target_score == 11  # env with the set on top
    assert three.num_players == 3 and three.target_score == 21 and three.max_deals == 12
    assert config.pedro_config == make_config(target_score=11, max_deals=12)  # env's rules
    saved = config.to_dict()["rules_mix"]
    assert saved[3] == {"set": {"num_players": 2, "variant": "pitch"}, "weight": 1.0, "name": "heads-up"}
    assert make_train_config(**config.to_dict()) == config  # the resolved config reads back as itself
    text = (
        "default,weight=2; six_card=true,variant=sancho; num_players=3,scoring=simple,refill=dealer_robs,"
        "target_score=21; num_players=2,variant=pitch,name=heads-up; scoring=simple,name=simple"
    )
    given = load_train_config(None, ["env.target_score=11", "env.max_deals=12", f"rules_mix={text}"])
    assert given.rules_mix == config.rules_mix
    path = tmp_path / "mix.yaml"
    path.write_text("rules_mix:\n  - {set: {}, weight: 2}\n  - six_card=true\n  - {set: {variant: cinch}, name: x}\n")
    assert [rule_set.name for rule_set in load_train_config(path).rule_sets] == ["default", "six_card=true", "x"]
    single = tiny_config()
    assert [(rule_set.name, rule_set.rules) for rule_set in single.rule_sets] == [("default", single.pedro_config)]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (5, "config key 'rules_mix' = 5 is not allowed: it takes a list of entries {set:"),
        ([{"sett": {}}], "config key 'rules_mix[0]': unknown key 'sett': an entry takes set, weight, name"),
        (
            [{}, {"set": {"variant": "sanch"}}],
            "'rules_mix[1]' (variant=sanch): config key 'variant' = 'sanch' is not "
            "allowed: allowed values are cinch, sancho, dom, pitch",
        ),  # fmt: skip
        ([{"set": {"num_players": 3}}], "'rules_mix[0]' (num_players=3): config key 'scoring' = 'difference' is not"),
        (["six_card=maybe"], "config key 'rules_mix[0]': config key 'six_card' = 'maybe' is not allowed: it takes"),
        ([{"set": ["six_card"]}], "config key 'rules_mix[0].set' = ['six_card'] is not allowed: it takes a mapping"),
        ([{}, {"weight": 0}], "config key 'rules_mix[1].weight' = 0 is not allowed: it takes a number > 0"),
        (["weight=heavy"], "config key 'rules_mix[0].weight' = 'heavy' is not allowed: it takes a number > 0"),
        ([{"teacher_scale": -1}], "'rules_mix[0].teacher_scale' = -1 is not allowed: it takes a number >= 0"),
        (["teacher_scale=inf"], "'rules_mix[0].teacher_scale' = inf is not allowed: it takes a number >= 0"),
        ([{"name": "a/b"}], "config key 'rules_mix[0].name' = 'a/b' is not allowed: it takes 1 to 80 letters"),
        ([{}, {"set": {"target_score": 62}, "name": "default"}], "entries 0 and 1 are both named 'default'"),
        ([{}] * 65, "config key 'rules_mix' has 65 entries: at most 64 are allowed"),
    ],
)
def test_a_bad_entry_is_refused_in_one_line_naming_it(value: object, expected: str) -> None:
    with pytest.raises(TrainConfigError) as error:
        mixed_config(rules_mix=value)
    assert expected in str(error.value) and "\n" not in str(error.value)


def test_set_changes_one_key_of_one_entry(tmp_path: Path) -> None:
    """``--set rules_mix[N].KEY=VALUE`` (``rules_mix[N].set.RULE_KEY=VALUE`` for a rule) changes that entry alone, in a
    file's mapping or text entries; an index past the mix or an unknown key is one line."""
    path = tmp_path / "mix.yaml"
    path.write_text(
        "rules_mix:\n  - {set: {}, weight: 3, teacher: 'ckpt:runs/distill/policy.pt'}\n  - num_players=2\n"
        "  - {set: {refill: top}, teacher: 'rule:heuristic,deny=true'}\n"
    )
    overrides = [
        "env.target_score=11",
        "rules_mix[0].teacher=pretrained",
        "rules_mix[1].teacher_scale=2",
        "rules_mix[2].set.refill=dealer_robs",
        "rules_mix[2].weight=2",
    ]
    entries = load_train_config(path, overrides).rules_mix
    assert [dict(entry["set"]) for entry in entries] == [{}, {"num_players": 2}, {"refill": "dealer_robs"}]
    assert entries[0]["teacher"] == "pretrained" and entries[0]["weight"] == 3.0
    assert entries[1]["teacher_scale"] == 2.0 and entries[2]["weight"] == 2.0
    assert entries[2]["teacher"] == "rule:heuristic,deny=true"
    for override, expected in [
        ("rules_mix[3].teacher=random", "'rules_mix[3].teacher' names no entry: the mix has entries 0 to 2"),
        ("rules_mix[1].wieght=2", "config key 'rules_mix[1]': unknown key 'wieght': an entry takes set, weight"),
        ("rules_mix[0].set.refill=sideways", "config key 'refill' = 'sideways' is not allowed"),
    ]:
        with pytest.raises(TrainConfigError, match=re.escape(expected)):
            load_train_config(path, [override])


def test_the_mix_must_seat_every_rule_set_and_eval_rules_must_name_them() -> None:
    with pytest.raises(TrainConfigError, match="'num_envs' = 4 is less than the 5 rule sets of 'rules_mix'"):
        mixed_config(num_envs=4, num_minibatches=1)
    with pytest.raises(TrainConfigError, match="'eval_rules': 'six_card' is not a rule set of 'rules_mix': its names"):
        mixed_config(eval_rules=["default", "six_card"])
    assert mixed_config(eval_rules=["simple"]).eval_rules == ("simple",)
    with pytest.raises(TrainConfigError, match="its names are default$"):
        tiny_config(eval_rules=["simple"])


def test_partner_keys_apply_to_the_four_player_tables_of_a_mix() -> None:
    three = {"num_players": 3, "scoring": "simple"}
    config = mixed_config(num_envs=192, partner_share=0.3, partner_opponents="baselines", eval_partners=True)
    trainer = Trainer(config)
    for group in trainer.groups:
        alone = group.rules.num_players < 4
        assert group.config.partner_share == (0.0 if alone else 0.3) and group.config.eval_partners != alone
        assert group.config.partner_opponents == ("pool" if alone else "baselines")
        assert (trainer.seat_controller[group.games, group.rules.num_players :] == -1).all()  # seats it lacks
        assert (trainer.seating.game_partner[group.games] >= 0).any() != alone  # partner games at four players
    assert trainer.seating.seat_controller.shape == (192, 4) and trainer.credit.last.shape == (192, 4)
    with pytest.raises(TrainConfigError, match=r"but at every table of rules_mix \(3 players\) every player is alone"):
        tiny_config(env=three, rules_mix=[{}, {"set": {"target_score": 21}}], partner_share=0.3)


def test_the_games_are_shared_by_largest_remainders_with_one_game_at_least() -> None:
    assert allot_games(512, [3] + [1] * 16) == [80] + [27] * 16
    assert allot_games(32, [2, 1, 1, 1, 1]) == GAMES  # 10.7, 5.3, ...: the first of equal remainders wins
    assert allot_games(5, [100, 1, 1]) == [3, 1, 1]  # 4.9 and two 0.05 rounded to 0: raised to 1
    assert allot_games(3, [1, 1, 1]) == [1, 1, 1]
    trainer = Trainer(mixed_config())
    bounds = [(group.games.start, group.games.stop) for group in trainer.groups]
    assert bounds == [(0, 11), (11, 17), (17, 22), (22, 27), (27, 32)]
    assert [group.venv.num_envs for group in trainer.groups] == GAMES
    assert [group.venv.config for group in trainer.groups] == [rule_set.rules for rule_set in trainer.config.rule_sets]


# ---------------------------------------------------------------- the games


def test_one_forward_a_step_decides_for_every_rule_set(monkeypatch: pytest.MonkeyPatch) -> None:
    trainer = Trainer(mixed_config(opponent_share=0.5, teacher="rule:heuristic", teacher_decisions=10_000))
    calls: list[int] = []
    forward = trainer.acting_network.logits_and_value
    monkeypatch.setattr(
        trainer.acting_network, "logits_and_value", lambda x, *rest: calls.append(len(x)) or forward(x, *rest)
    )
    first = [group.step.observation.copy() for group in trainer.groups]
    rollout = trainer.collect()
    assert len(calls) == trainer.config.rollout_steps and sum(calls) == rollout.learner.sum()
    for group, observations in zip(trainer.groups, first):  # each group's games in its slice of the rollout
        assert np.array_equal(rollout.observations[0, group.games], observations)
    assert rollout.learner.any(axis=0).all() and (rollout.teacher_actions >= 0).any(axis=0)[GAMES[0] :].any()
    assert all(group.pool.league is trainer.league.agents for group in trainer.groups)  # one league for all
    rules = {rule_set.rules for rule_set in trainer.config.rule_sets}
    assert {group.pool.baselines[0].config for group in trainer.groups} == rules  # rule agents of each set's rules


def test_a_short_mixed_run_logs_and_tabulates_each_rule_set(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from train.curve import main as curve_main

    config = mixed_config(eval_rules=["heads-up"], final_eval_pairs=2, final_partner_pairs=0)
    trainer = run_training(config, tmp_path / "run", progress=False)
    events = EventAccumulator(str(tmp_path / "run"), size_guidance={"scalars": 0})
    events.Reload()
    tags = set(events.Tags()["scalars"])
    steps = {name: [point.step for point in events.Scalars(f"eval/{name}/worst/win_rate")] for name in NAMES}
    assert steps == {name: [1024, 2048] if name == "heads-up" else [2048] for name in NAMES}  # eval_rules
    assert "eval/worst/win_rate" not in tags and "eval/heads-up/vs_random/win_rate" in tags
    assert {"game/avg_bid", "game/default/avg_bid", "game/heads-up/bid_made_rate"} <= tags  # all games and each set
    assert "opponents/six_card=true,variant=sancho/rule_heuristic/weight" in tags
    table = (tmp_path / "run" / "eval.txt").read_text()
    assert [line for line in table.splitlines() if line.startswith("rules ")] == [f"rules {name}" for name in NAMES] * 2
    assert "1 entries, duplicate, seed 1000000, num_players=2 target_score=11 variant=pitch" in table
    assert "field format (the subject at one of 3 seats" in table
    saved = json.loads((tmp_path / "run" / "eval.json").read_text())
    assert [entry["name"] for entry in saved["rule_sets"]] == NAMES
    assert set(trainer.latest_eval) >= {f"{name}/worst/win_rate" for name in NAMES}
    assert trainer.latest_headline.split(": ")[0] in NAMES
    chart = ["--out", str(tmp_path / "curve.png")]
    assert curve_main([str(tmp_path / "run"), *chart]) == 2  # which rule set's curve?
    assert f"was evaluated per rule set: name one with --rules ({'; '.join(sorted(NAMES))})" in capsys.readouterr().err
    assert curve_main([str(tmp_path / "run"), *chart, "--rules", "heads-up"]) == 0
    assert "worst: " in capsys.readouterr().out


def test_an_interrupted_then_resumed_mixed_run_equals_an_uninterrupted_one(tmp_path: Path) -> None:
    config = mixed_config(
        opponent_sampling="pfsp",
        partner_share=0.3,
        teacher="rule:heuristic,deny=true",
        teacher_decisions=1024,
        bid_assist_share=0.2,
        eval_league=1,
        eval_partner_pairs=2,
    )
    whole, resumed = whole_and_resumed(config, tmp_path)
    saved = load_checkpoint(tmp_path / "split")
    assert len(saved["rule_sets"]) == len(saved["rule_set_rates"]) == len(MIX) and "env" not in saved
    assert whole.rng.bit_generator.state == resumed.rng.bit_generator.state
    for mine, other in zip(whole.groups, resumed.groups):
        assert np.array_equal(mine.venv.state.hands, other.venv.state.hands)
        assert np.array_equal(mine.pool.opponent_rates.matches, other.pool.opponent_rates.matches)
    assert sum(group.pool.opponent_rates.matches.sum() for group in whole.groups) > 0
    assert np.array_equal(whole.seating.seat_controller, resumed.seating.seat_controller)
    assert whole.latest_eval == resumed.latest_eval


def test_a_resume_under_another_mix_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    config = mixed_config(total_decisions=512, final_eval_pairs=0, eval_interval=0)
    run_training(config, tmp_path / "run", progress=False)
    payload = load_checkpoint(tmp_path / "run")
    other = mixed_config(rules_mix=MIX[:3], total_decisions=1024)
    with pytest.raises(
        CheckpointError,
        match=r"its rules_mix \(default; six_card=true,variant=sancho; .*; simple\) is not this run's \(default; ",
    ):
        run_training(other, tmp_path / "run", payload, progress=False)
    with pytest.raises(CheckpointError, match=r"its rules_mix \(default; .*\) is not this run's \(none\)"):
        run_training(tiny_config(total_decisions=1024), tmp_path / "run", payload, progress=False)
    assert train_main(["--resume", str(tmp_path / "run"), "--set", "rules_mix=default"]) == 2
    error = capsys.readouterr().err
    assert "cannot change rules_mix when resuming" in error and error.count("\n") == 1


def test_a_mix_of_one_entry_trains_as_the_single_rules_run() -> None:
    alone, mixed = Trainer(tiny_config(partner_share=0.3)), Trainer(tiny_config(partner_share=0.3, rules_mix=[{}]))
    for _ in range(2):
        alone.train_step()
        mixed.train_step()
    for name, tensor in alone.network.state_dict().items():
        assert torch.equal(tensor, mixed.network.state_dict()[name]), name
    assert np.array_equal(alone.seat_controller, mixed.seat_controller)
    assert alone.game_scalars() == mixed.game_scalars()  # one rule set: no game/<name>/ tags


# ---------------------------------------------------------------- two gloo ranks


def _mixed_rank(rank: int, world_size: int, init_file: str, out: str) -> None:
    exchange = _join(rank, world_size, init_file)
    trainer = Trainer(mixed_config(num_envs=16, opponent_sampling="pfsp"), ranks=exchange.ranks, exchange=exchange)
    for _ in range(3):
        trainer.train_step()
    weights = {name: tensor.numpy() for name, tensor in trainer.network.state_dict().items()}
    everyone = exchange.gather(weights)
    rates = exchange.gather([group.pool.opponent_rates.state_dict() for group in trainer.groups])
    scalars = trainer.game_scalars()  # summed over the ranks
    group = trainer.groups[1]
    result = trainer.evaluate(pairs=3, search_pairs=0, group=group)  # each rank plays a share of it
    payload = trainer.state_dict()
    if rank == 0:
        policies = [("policy", policy_bytes(trainer.network.eval(), group.rules))]
        entries = gauntlet_entries(group.config.eval_opponents, 3, 0, False, [], 3)
        alone = run_gauntlet("policy", entries, group.rules, group.config.eval_seed, 1, policies=policies)
        torch.save(
            {
                "identical": all(np.array_equal(everyone[0][name], everyone[1][name]) for name in weights),
                "same_rates": rates[0] == rates[1],
                "games": [group.num_games for group in trainer.groups],
                "scalars": scalars,
                "rank_rule_sets": len(payload["rank_states"][0]["rule_sets"]),
                "same_evaluation": [m.to_dict() for h in result.heads for m in h.results]
                == [m.to_dict() for h in alone.heads for m in h.results],
            },
            out,
        )
    del trainer
    _leave(exchange)


def test_two_ranks_play_every_rule_set_on_their_share_of_the_games(tmp_path: Path) -> None:
    out = tmp_path / "mixed.pt"
    _spawn(_mixed_rank, tmp_path, str(out))
    found = torch.load(out, weights_only=False)
    assert found["identical"] and found["same_rates"] and found["same_evaluation"]
    assert found["games"] == allot_games(16, [2, 1, 1, 1, 1]) and found["rank_rule_sets"] == len(MIX)
    assert "game/heads-up/avg_bid" in found["scalars"]


RECIPES = {
    "rules_from_ppo.yaml": (
        {4: "models/ppo_policy.pt", 3: "runs/individual3-one/latest.pt"},
        (256, 256),
        (23, {7, 8, 15, 23}),  # 256 games: weight 3 23 each, 2 15, 1 7 or 8
    ),
    "mixed_rules.yaml": (
        {4: "runs/distill/policy.pt", 3: "runs/individual3-tuned/latest.pt", 2: "runs/individual2/latest.pt"},
        (384, 384),
        (61, {20, 21, 41}),  # 512 games: weights 3, 1 and (small tables, variants) 2
    ),
}
"""A first mixed stage -> (table size -> the earlier policy it starts from (4) and is taught by, its network, the
default rules' games and the others')."""


@pytest.mark.parametrize("name", RECIPES)
def test_a_first_mixed_stage_lists_the_rule_sets_of_issue_57(name: str, tmp_path: Path, monkeypatch) -> None:
    """The first stage of the shipped policy's recipe (rules_from_ppo.yaml) and of the longer chain (mixed_rules.yaml):
    17 rule sets, each taught by its teacher; the earlier policies it reads from runs/ are here copies of the shipped
    policy, which reads every table."""
    from agents import PRETRAINED_PATH

    policies, hidden_sizes, (default_games, other_games) = RECIPES[name]
    path = REPO_ROOT / "configs" / name
    config = load_train_config(path)
    assert len(config.rule_sets) == 17 and config.rule_sets[0].name == "default"
    assert config.init_from == policies[4] and config.hidden_sizes == hidden_sizes
    weights = [rule_set.weight for rule_set in config.rule_sets]
    games = allot_games(config.num_envs, weights)
    assert games[0] == default_games and set(games[1:]) == other_games
    teachers = {rule_set.name: rule_set.teacher for rule_set in config.rule_sets}
    assert teachers["default"] == f"ckpt:{policies[4]}"
    assert teachers["num_players=3,scoring=simple"] == f"ckpt:{policies[3]}"
    assert teachers["num_players=2"] == (f"ckpt:{policies[2]}" if 2 in policies else teachers["variant=pitch"])
    assert teachers["six_card=true"] is None  # the run's: the long recipe's rule-agent teacher
    variants = {(rule_set.rules.num_players, rule_set.rules.variant) for rule_set in config.rule_sets}
    assert variants >= {(4, "cinch"), (4, "sancho"), (4, "dom"), (4, "pitch"), (3, "cinch"), (2, "cinch")}
    monkeypatch.chdir(tmp_path)
    for policy in policies.values():  # a shipped file as itself, a run's policy as a copy of the shipped policy
        shipped = REPO_ROOT / policy
        (tmp_path / policy).parent.mkdir(parents=True)
        (tmp_path / policy).write_bytes((shipped if shipped.is_file() else PRETRAINED_PATH).read_bytes())
    if (REPO_ROOT / policies[4]).is_file():  # starts from a shipped file: the network it builds is that file's
        assert Trainer(load_train_config(path, ["num_envs=17", "torch_threads=1"])).shape.hidden_sizes == hidden_sizes
    tiny = ["num_envs=38", "rollout_steps=4", "hidden_sizes=[16]", "init_from=", "league_size=1", "torch_threads=1"]
    trainer = Trainer(load_train_config(path, tiny))
    trainer.train_step()  # every rule set's games, its opponents and its teacher, one update
    assert [group.num_games for group in trainer.groups] == allot_games(38, weights)
    assert all(trainer.rollout.learner[:, group.games].any() for group in trainer.groups)


def test_a_rule_set_may_name_its_own_teacher_or_none() -> None:
    """An entry's ``teacher`` replaces the run's for its games ('' leaves them untaught); the others keep the run's."""
    mix = [
        {"set": {}, "teacher": ""},
        {"set": {"num_players": 3, "scoring": "simple"}, "teacher": "rule:cautious"},
        "num_players=2,teacher=random",
        {"set": {"six_card": True}},
    ]
    config = mixed_config(rules_mix=mix, teacher="rule:heuristic", teacher_floor=0.5)
    trainer = Trainer(config)
    teachers = [None if group.teacher is None else group.teacher.agent.name for group in trainer.groups]
    assert teachers == [None, "rule:cautious", "random", "rule:heuristic"]
    assert trainer.teacher is trainer.groups[1].teacher and trainer.teacher_weight() == 0.5
    rollout = trainer.collect()
    taught = rollout.teacher_actions >= 0
    assert not taught[:, trainer.groups[0].games].any() and taught[:, trainer.groups[1].games].any()
    with pytest.raises(TrainConfigError, match=r"'rules_mix\[0\].teacher': .*unknown"):
        mixed_config(rules_mix=[{"set": {}, "teacher": "rule:nobody"}])


def test_an_entry_teacher_scale_weighs_its_games_labels(monkeypatch: pytest.MonkeyPatch) -> None:
    """``teacher_scale`` multiplies the teacher's weight for its entry's games: each game's scale reaches the update,
    which weighs every labelled row's cross-entropy by its game's scale; 1 everywhere is no scale at all."""
    from train.ppo import UpdateData, _teacher_loss

    mix = [{"set": {}, "teacher_scale": 0}, "num_players=2,teacher_scale=3", "six_card=true"]
    config = mixed_config(rules_mix=mix, teacher="rule:heuristic", teacher_floor=0.5)
    assert [rule_set.teacher_scale for rule_set in config.rule_sets] == [0.0, 3.0, 1.0]
    assert config.to_dict()["rules_mix"][1]["teacher_scale"] == 3.0 and "teacher_scale" not in config.rules_mix[2]
    assert make_train_config(**config.to_dict()) == config
    trainer = Trainer(config)
    sizes = [group.num_games for group in trainer.groups]
    assert trainer.teacher_scales.tolist() == [0.0] * sizes[0] + [3.0] * sizes[1] + [1.0] * sizes[2]
    assert Trainer(mixed_config(rules_mix=["default", "num_players=2,teacher_scale=1"])).teacher_scales is None
    given: list[object] = []
    monkeypatch.setattr("train.trainer.ppo_update", lambda *args: given.append(args[-1]) or {})
    trainer.train_step()
    assert given == [trainer.teacher_scales]
    # the update's rows carry their game's scale (a row is a (step, game) of the (T, B) rollout) ...
    rollout = trainer.rollout
    chosen = np.flatnonzero(rollout.learner.reshape(-1))
    scales = np.arange(config.num_envs, dtype=np.float32)
    data = UpdateData.gather(
        rollout, np.zeros(rollout.actions.shape, np.float32), chosen, torch.device("cpu"), config, 0.5,
        trainer.network, torch.float32, scales,
    )  # fmt: skip
    assert data.teacher_scales.tolist() == (chosen % config.num_envs).tolist()
    # ... and weigh its cross-entropy: 0 takes a row out, 3 counts it thrice, over the same number of labels
    log_probs = torch.log_softmax(torch.tensor([[0.0, 1.0], [2.0, 0.0], [0.0, 0.0]]), dim=1)
    taught = torch.tensor([0, 0, -1])
    plain, _ = _teacher_loss(log_probs, log_probs, taught, LocalBatch(), 2)
    scaled, _ = _teacher_loss(log_probs, log_probs, taught, LocalBatch(), 2, torch.tensor([0.0, 3.0, 5.0]))
    assert plain.item() == pytest.approx(-(log_probs[0, 0] + log_probs[1, 0]).item() / 2)
    assert scaled.item() == pytest.approx(-3 * log_probs[1, 0].item() / 2)


def test_rule_sets_taught_by_one_policy_ask_it_once_a_rollout_in_the_games_precision(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from test_play import write_policy_checkpoint

    two = write_policy_checkpoint(tmp_path / "two.pt", make_config(num_players=2))
    mix = [
        {"set": {}, "teacher": "pretrained"},
        {"set": {"scoring": "simple"}, "teacher": "pretrained"},  # the same shipped policy
        {"set": {"num_players": 2}, "teacher": f"ckpt:{two}"},  # another one
        "six_card=true",  # the run's rule agent
    ]
    config = mixed_config(rules_mix=mix, teacher="rule:heuristic", teacher_decisions=10_000, precision="bfloat16")
    trainer = Trainer(config)
    teachers = [group.teacher.agent for group in trainer.groups]
    assert teachers[0] is teachers[1] and teachers[2] is not teachers[0] and teachers[3] is not teachers[0]
    assert {next(teacher.network.parameters()).dtype for teacher in teachers[:3]} == {torch.bfloat16}
    asked: list[int] = []
    act = type(teachers[0]).act
    monkeypatch.setattr(
        type(teachers[0]), "act", lambda agent, obs, *rest: asked.append(len(obs)) or act(agent, obs, *rest)
    )
    rollout = trainer.collect()
    assert len(asked) == 2  # one call a rollout for each policy (its labels wait for the end), not one a step
    taught = rollout.teacher_actions >= 0
    assert all(taught[:, group.games].any() for group in trainer.groups)
    chosen = rollout.teacher_actions[taught]
    assert rollout.masks[taught.nonzero()[0], taught.nonzero()[1], chosen].all()  # legal choices
    for group, teacher in zip(trainer.groups[:3], teachers[:3]):  # each label is its row's best action
        steps, games = taught[:, group.games].nonzero()
        rows = group.games.start + games
        observations = torch.from_numpy(rollout.observations[steps, rows])
        logits = teacher.network.logits(observations, torch.from_numpy(rollout.masks[steps, rows])).float()
        labelled = logits.gather(1, torch.from_numpy(rollout.teacher_actions[steps, rows])[:, None])[:, 0]
        assert torch.all(labelled >= logits.max(dim=1).values - 0.1)  # bfloat16: equal up to its rounding
