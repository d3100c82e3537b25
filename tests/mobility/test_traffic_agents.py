"""The signal agents on short SUMO episodes: host slots, DQN training, save/load, the controller, the study.

Episodes are 60-90 simulated seconds on single-intersection with pedestrians. ``SumoSlots`` runs in
this process (libsumo: one simulation at a time, closed before the next); training, scoring and
the controller run in spawned processes. One tiny study, run once for the module, gives the DQN
that the training, save/load and controller tests check.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from decisions.errors import InputError
from decisions.mobility.traffic.agents import AgentController, PPOTuning, TrainedAgent, train_ppo
from decisions.mobility.traffic.demand import Demand
from decisions.mobility.traffic.metrics import METRIC_NAMES
from decisions.mobility.traffic.rewards import fair_reward, vehicle_only_reward
from decisions.mobility.traffic.scenarios import custom_scenario, get_scenario
from decisions.mobility.traffic.slots import SlotSource, SumoSlots
from decisions.mobility.traffic.spec import prepare
from decisions.mobility.traffic.study import RUN_COLUMNS, Study, run_study, scenario_of

SINGLE = "single-intersection"
PHASES = 4  # sumo-rl's green phases of the pedestrian single-intersection (with and without ped green)
OBS_DIM = 18  # 4 phases + 2 timing + 2 x 4 vehicle lanes + 2 x 2 crossings
STUDY_SECONDS = 90  # the study's training and scoring episodes: 18 decisions of 5 s
STUDY_STEPS = 100  # decisions per DQN training in the study (the smallest budget a job takes)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("traffic-cache")


def _job(**agent: object) -> object:
    return prepare({
        "scenarios": {"names": [SINGLE], "seconds": 60},
        "demand": {"train_seeds": [3, 4], "test_seeds": [100], "ped_rate_per_hour": 600.0},
        "agent": {"env_steps": 160, "num_envs": 1, "hidden": [16], **agent},
    })  # fmt: skip


def test_sumo_slots_pad_mask_and_reset_on_the_next_demand_seed(tmp_path: Path, cache: Path) -> None:
    source = SlotSource(
        get_scenario(SINGLE), fair_reward(), Demand(ped_rate_per_hour=600.0), (3, 4), tmp_path, seconds=60,
        cache_dir=cache, metrics_file=tmp_path / "episodes.jsonl",
    )  # fmt: skip
    slots = SumoSlots(source)
    try:
        sizes = (slots.num_slots, slots.obs_dim, slots.num_actions, slots.ts_ids)
        assert sizes == (1, OBS_DIM, PHASES, ["t"])
        obs, mask = slots.reset(seed=0)
        assert obs.shape == (1, OBS_DIM) and obs.dtype == np.float32 and mask.dtype == np.bool_
        # min green at the start: only the current phase is valid
        np.testing.assert_array_equal(mask[0], obs[0, :PHASES] > 0.5)
        seeds = [slots._spec.demand.seed]
        switched, ended = False, 0
        for t in range(14):  # 60 s at 5 s per decision: the episode ends at the 12th step
            valid = np.flatnonzero(mask[0])
            assert valid.size >= 1
            current = int(np.argmax(obs[0, :PHASES]))
            action = next((a for a in valid if a != current), current)  # switch whenever allowed
            obs, mask, reward, terminated, truncated, final_obs, final_mask = slots.step(np.asarray([action]))
            assert reward.shape == (1,) and reward[0] <= 0.0 and not terminated[0]
            assert np.all((0.0 <= obs) & (obs <= 1.0))
            if action != current and not truncated[0]:
                switched = True  # a change starts a new green: only that phase is valid until min green ends
                np.testing.assert_array_equal(mask[0], np.eye(PHASES, dtype=bool)[action])
            if truncated[0]:
                ended += 1
                assert t == 11
                assert not np.array_equal(final_obs, obs)  # the new episode's first observation
                np.testing.assert_array_equal(mask[0], obs[0, :PHASES] > 0.5)
                seeds.append(slots._spec.demand.seed)
        assert switched and ended == 1 and seeds == [3, 4]
    finally:
        slots.close()
    rows = [json.loads(line) for line in (tmp_path / "episodes.jsonl").read_text().splitlines()]
    assert [(r["episode"], r["seed"]) for r in rows] == [(0, 3)]  # not the unfinished second episode
    assert rows[0]["veh_count"] > 10 and math.isfinite(rows[0]["veh_delay_mean"]) and rows[0]["ped_count"] > 3


def test_sumo_slots_reject_out_of_range_actions(tmp_path: Path, cache: Path) -> None:
    source = SlotSource(get_scenario(SINGLE), vehicle_only_reward(), Demand(), (0,), tmp_path, seconds=30,
                        cache_dir=cache)  # fmt: skip
    slots = SumoSlots(source)
    try:
        slots.reset(seed=0)
        with pytest.raises(ValueError, match="signal t has 4 phases, got 4"):
            slots.step(np.asarray([PHASES]))
    finally:
        slots.close()


StudyRun = tuple[Study, list[tuple[str, int, int]]]


@pytest.fixture(scope="module")
def study_run(cache: Path) -> StudyRun:
    """A tiny study on single-intersection, with and without pedestrians, and its progress calls: two
    pedestrian weights chosen on a validation seed, the vehicle-only DQN, PPO, two plain-network seeds."""
    job = prepare({
        "scenarios": {"names": [SINGLE], "seconds": STUDY_SECONDS},
        "demand": {"train_seeds": [0], "test_seeds": [100], "validation_seeds": [60], "ped_rate_per_hour": 600.0},
        "reward": {"ped_weight_grid": [0.5, 2.0]},
        "agent": {"env_steps": STUDY_STEPS, "num_envs": 1, "hidden": [16]},
        "study": {"controllers": ["fixed", "max_pressure"], "vehicle_only": True, "default_reward": False,
                  "ppo": True, "without_pedestrians": [SINGLE], "plain_candidates": 2},
    })  # fmt: skip
    calls: list[tuple[str, int, int]] = []
    return run_study(job, lambda *c: calls.append(c), cache_dir=cache), calls


@pytest.fixture(scope="module")
def trained(study_run: StudyRun) -> TrainedAgent:
    """The study's fair DQN: ``train_agent``'s core DQN on the fair reward (the chosen pedestrian weight)."""
    return study_run[0].agents[f"{SINGLE}/dqn_fair"]


def test_tiny_training_gives_finite_params_and_a_log(trained: TrainedAgent) -> None:
    import jax

    leaves = jax.tree.leaves(trained.params)
    assert leaves and all(np.all(np.isfinite(np.asarray(x))) for x in leaves)
    assert trained.policy.obs_shape == (OBS_DIM,) and trained.policy.num_actions == PHASES
    log = trained.log
    # one row per finished episode, 18 decisions apart; the first episode ends inside the random
    # prefill (a fifth of the 100 decisions), so the rows are at decisions 36, 54, 72 and 90
    episode = STUDY_SECONDS // 5
    assert list(log["env_steps"]) == list(range(2 * episode, STUDY_STEPS + 1, episode))
    assert np.all(log["episode_return"] < 0) and np.isfinite(log["q_loss"]).all()
    assert np.isfinite(log["veh_delay_mean"]).all() and (log["veh_count"] > 10).all()
    assert trained.sim_seconds == STUDY_STEPS * 5  # one signal, one simulation: 5 s per decision
    assert trained.train_seconds > 0 and trained.sim_seconds_per_wall_second > 0


def test_save_and_load_give_identical_greedy_actions(trained: TrainedAgent, tmp_path: Path) -> None:
    from decisions.core.agents import dqn
    from decisions.core.agents.offpolicy.host_loop import greedy_actions

    path = tmp_path / "agent.msgpack"
    trained.save(path)
    loaded = TrainedAgent.load(path)
    assert (loaded.name, loaded.scenario, loaded.pedestrians) == ("dqn_fair", SINGLE, True)
    assert loaded.policy == trained.policy and loaded.sim_seconds == trained.sim_seconds
    assert list(loaded.log.columns) == list(trained.log.columns) and len(loaded.log) == len(trained.log)
    rng = np.random.default_rng(0)
    obs = rng.uniform(size=(256, OBS_DIM)).astype(np.float32)
    mask = rng.uniform(size=(256, PHASES)) < 0.6
    mask[np.arange(256), rng.integers(0, PHASES, 256)] = True
    before = greedy_actions(trained.policy, trained.params, obs, mask)
    after = greedy_actions(loaded.policy, loaded.params, obs, mask)
    np.testing.assert_array_equal(before, after)
    assert np.all(mask[np.arange(256), after])  # only valid actions
    policy, _ = dqn.load_policy(path)  # the core reads the file as a plain DQN policy too
    assert policy == trained.policy
    dqn.save_policy(tmp_path / "plain.msgpack", _as_result(trained))
    with pytest.raises(ValueError, match="not a traffic agent"):
        TrainedAgent.load(tmp_path / "plain.msgpack")


def _as_result(agent: TrainedAgent) -> object:
    from decisions.core.agents.common import TrainResult

    return TrainResult(agent.policy, agent.params, {}, agent.train_seconds, 0)


def test_agent_controller_runs_in_a_spawned_simulation(trained: TrainedAgent, study_run: StudyRun) -> None:
    controller = trained.controller()
    assert isinstance(controller, AgentController)
    assert controller.name == "dqn_fair" and not controller.fixed_ts
    # the study scored this controller in its spawned worker processes: 90 s of the held-out seed 100
    runs = study_run[0].runs
    (m,) = runs[runs["pedestrians"] & (runs["controller"] == "dqn_fair")].to_dict("records")
    for key in ("veh_delay_mean", "veh_delay_p95", "ped_wait_mean", "ped_wait_p95", "jain_individual"):
        assert math.isfinite(m[key]), key
    assert m["veh_count"] > 20 and m["ped_count"] > 5 and m["sim_seconds"] == 90 and m["seed"] == 100


def test_tiny_study_scores_every_controller_and_fills_the_headline(study_run: StudyRun) -> None:
    full, calls = study_run
    # the plain network: two DQN seeds on the validation seed, the lower vehicle delay kept as "dqn"
    plain = full.selection[~full.selection["pedestrians"]].set_index("controller")
    assert list(plain.index) == ["fixed", "max_pressure", "queue_greedy", "dqn_s0", "dqn_s1"]
    assert list(plain.loc[["dqn_s0", "dqn_s1"], "train_seed"]) == [0, 1]
    assert plain["chosen"].idxmax() == plain.loc[["dqn_s0", "dqn_s1"], "veh_delay_mean"].idxmin()
    seed = int(plain.loc[plain["chosen"], "train_seed"].iloc[0])
    assert full.headline[f"nopeds_dqn_train_seed_{SINGLE}"] == seed
    assert f"{SINGLE}/plain/dqn" in full.agents and full.agents[f"{SINGLE}/plain/dqn"].name == "dqn"
    assert list(full.runs.loc[~full.runs["pedestrians"], "controller"]) == ["fixed", "max_pressure", "queue_greedy",
                                                                           "dqn"]
    assert math.isfinite(full.headline[f"nopeds_dqn_vs_max_pressure_{SINGLE}"])
    study = replace(full, runs=full.runs[full.runs["pedestrians"]], summary=full.summary[full.summary["pedestrians"]],
                    selection=full.selection[full.selection["pedestrians"]],
                    agents={k: a for k, a in full.agents.items() if "/plain/" not in k},
                    training=full.training[full.training["pedestrians"]],
                    replays=full.replays[full.replays["pedestrians"]])  # fmt: skip
    controllers = ["fixed", "max_pressure", "dqn_fair", "dqn_vehicle", "ppo_fair"]
    assert list(study.runs.columns) == list(RUN_COLUMNS) and set(METRIC_NAMES) <= set(study.runs.columns)
    assert list(study.runs["controller"]) == controllers and set(study.runs["seed"]) == {100}
    assert study.runs["pedestrians"].all() and (study.runs["sim_seconds"] == 90).all()
    assert list(study.summary["controller"]) == controllers and (study.summary["seeds"] == 1).all()
    delays = study.summary.set_index("controller")["veh_delay_mean"]
    assert study.best_heuristic == {SINGLE: delays[["fixed", "max_pressure"]].idxmin()}
    h = study.headline
    ratios = ("veh_delay_vs_best_heuristic", "ped_p95_wait_vs_best_heuristic", "vehicle_only_ped_p95_vs_fair",
              "ppo_veh_delay_vs_best_heuristic", "ppo_ped_p95_wait_vs_best_heuristic")  # fmt: skip
    for key in ratios:
        assert math.isfinite(h[f"{key}_{SINGLE}"]) and h[f"{key}_{SINGLE}"] > 0, key
    assert h[f"veh_delay_vs_best_heuristic_{SINGLE}"] == pytest.approx(
        delays["dqn_fair"] / delays[study.best_heuristic[SINGLE]]
    )
    assert h[f"fair_beats_fixed_both_{SINGLE}"] in (0.0, 1.0)
    assert h["training_sim_seconds_per_wall_second"] > 0
    assert h[f"ppo_veh_delay_vs_best_heuristic_{SINGLE}"] == pytest.approx(
        delays["ppo_fair"] / delays[study.best_heuristic[SINGLE]]
    )
    assert set(study.agents) == {f"{SINGLE}/dqn_fair", f"{SINGLE}/dqn_vehicle", f"{SINGLE}/ppo_fair"}
    assert study.agents[f"{SINGLE}/ppo_fair"].kind == "ppo" and study.agents[f"{SINGLE}/dqn_fair"].kind == "dqn"
    assert set(study.training["agent"]) == {"dqn_fair", "dqn_vehicle", "ppo_fair"}
    # the pedestrian weight was chosen on the validation seed by the operator's rule, then trained at
    sel = study.selection.set_index("controller")
    assert list(sel.index) == ["fixed", "max_pressure", "dqn_fair_p0.5", "dqn_fair_p2"]
    assert sel["chosen"].sum() == 1 and (study.runs["seed"] != 60).all()
    cands = sel.loc[["dqn_fair_p0.5", "dqn_fair_p2"]]
    limit = 1.05 * sel.loc[["fixed", "max_pressure"], "veh_delay_mean"].min()
    feasible = cands[cands["veh_delay_mean"] <= limit]
    expected = feasible["ped_wait_p95"].idxmin() if len(feasible) else cands["veh_delay_mean"].idxmin()
    assert sel["chosen"].idxmax() == expected
    assert h[f"fair_ped_weight_{SINGLE}"] == sel.loc[expected, "ped_weight"]
    assert any(task == f"{SINGLE} validation" for task, _, _ in calls)
    assert (study.training["episode_return"] < 0).all()
    assert list(study.frontier["fairness_weight"]) == [0.0, 1.0]
    assert list(study.frontier["agent"]) == ["dqn_vehicle", "dqn_fair"]
    replays = study.replays
    assert set(replays["controller"]) == set(controllers) and set(replays["signal"]) == {"t"}
    assert replays["time_s"].max() <= 90 and replays["phase"].between(-1, PHASES - 1).all()
    assert (replays.groupby("controller").size() == 18).all()  # a row per 5-s decision of the 90 s
    assert (f"{SINGLE} scoring", 5, 5) in calls
    assert any(task == f"{SINGLE}/dqn_vehicle training" and done == total for task, done, total in calls)


def test_ppo_trains_masked_and_saves_and_loads(cache: Path, tmp_path: Path) -> None:
    from decisions.core.agents.onpolicy import io as onpolicy_io
    from decisions.core.agents.onpolicy.host_loop import policy_actions

    tuning = PPOTuning(rollout_steps=24, minibatches=2)
    job = _job(env_steps=600, scenario_env_steps={SINGLE: 120})  # the scenario's own budget wins
    agent = train_ppo(job, SINGLE, fair_reward(), name="ppo_fair", cache_dir=cache, tuning=tuning)
    assert agent.kind == "ppo" and agent.policy.obs_shape == (OBS_DIM,) and agent.policy.num_actions == PHASES
    assert agent.sim_seconds == 120 * 5 and len(agent.log) == 5  # 5 rollouts of 24 decisions, 12 per episode
    assert np.all(np.diff(agent.log["env_steps"]) == 24) and np.isfinite(agent.log["policy_loss"]).all()
    assert (agent.log["veh_count"] > 10).all()
    path = tmp_path / "ppo.msgpack"
    agent.save(path)
    loaded = TrainedAgent.load(path)
    assert loaded.kind == "ppo" and loaded.policy == agent.policy and loaded.max_green_s == agent.max_green_s == 60
    rng = np.random.default_rng(1)
    obs = rng.uniform(size=(128, OBS_DIM)).astype(np.float32)
    mask = rng.uniform(size=(128, PHASES)) < 0.5
    mask[np.arange(128), rng.integers(0, PHASES, 128)] = True
    before = policy_actions(agent.policy, agent.params, obs, mask)
    np.testing.assert_array_equal(before, policy_actions(loaded.policy, loaded.params, obs, mask))
    assert np.all(mask[np.arange(128), before])  # only valid actions
    policy, _ = onpolicy_io.load_policy(path)  # the core reads the file as a plain actor-critic policy too
    assert policy == agent.policy


def test_the_custom_scenario_of_a_job_is_the_users_network(tmp_path: Path) -> None:
    source = get_scenario(SINGLE)
    job = prepare({
        "scenarios": {"names": ["custom"], "net_file": str(source.net_file),
                      "route_file": str(source.route_file), "begin": 100, "seconds": 600},
    })  # fmt: skip
    custom = scenario_of(job.scenarios, "custom")
    assert (custom.name, custom.begin, custom.end) == ("custom", 100, 700)
    assert custom.net_file == source.net_file.resolve() and custom.route_file == source.route_file.resolve()
    assert custom_scenario(source.net_file, source.route_file).seconds == 3600
    with pytest.raises(InputError) as err:
        custom_scenario(source.net_file, tmp_path / "missing.rou.xml")
    assert err.value.field == "scenario.route_file"
    with pytest.raises(InputError) as err:
        custom_scenario(source.route_file, source.route_file)  # routes are not a network
    assert err.value.field == "scenario.net_file"
