"""CoMP's decide contract on a run over the shipped joint-transmission study (its experts, models and
evaluation table; the smoke spec's own run is in ``test_decide_smoke``): the offered policies, each
user's serving cells from the measured SNRs, the same answer for the same measurements, bad
measurements refused, the rate and reward equal to the simulator's step."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from decisions.telecom.comp import DOMAIN
from decisions.telecom.comp import decide as D
from decisions.telecom.comp.deployable import FILE
from tests import decide_contract as contract

TASKS = ("c7-u15-resource_fair-me-jt", "c10-u25-resource_fair-s25-jt")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from decisions.telecom.comp.deployable import deployable, save_deployable
    from decisions.telecom.comp.sim.catalog import task_by_name
    from decisions.telecom.comp.study.folder import joint_study

    study = joint_study()
    table = pd.read_csv(study / "evaluation.csv")
    folder = tmp_path_factory.mktemp("comp_run")
    save_deployable(folder, deployable(study, [task_by_name(t) for t in TASKS], 2, table[table.task.isin(TASKS)]))
    return folder


expert = contract.loaded_policy(D, "expert", name="expert", folder="run")
_state = functools.partial(contract.state, D)  # the run's example state with changes


def test_the_decider_is_registered_and_offers_the_policies_that_read_one_step(run: Path) -> None:
    # no random, planner or (Prompt-)DT
    offered = contract.offered(DOMAIN, D, run, {"expert", "multitask_ppo", "max_snr", "top2"})
    assert offered["expert"].network and not offered["max_snr"].learnt


def test_rate_and_reward_are_the_simulators_step(run: Path, expert: D.CompPolicy) -> None:
    import jax
    import jax.numpy as jnp

    from decisions.telecom.comp.policies.rollouts import ENV
    from decisions.telecom.comp.sim import channel
    from decisions.telecom.comp.sim.catalog import task_by_name
    from decisions.telecom.comp.sim.constants import MAX_CELLS, MAX_USERS
    from decisions.telecom.comp.sim.env import CompState

    state = D.example_state(run)
    (decision,) = D.decide(expert, [D.UsersState.parse(state)])
    users, cells = len(state["snr_db"]), len(state["snr_db"][0])
    assert len(decision.action["serving_cells"]) == users
    assert all(served and set(served) <= set(range(cells)) for served in decision.action["serving_cells"])
    net = task_by_name(state["task"]).params()
    l_snr = np.array(channel.log10_snr(net, jnp.zeros((MAX_USERS, 2))))
    l_snr[:users, :cells] = np.asarray(state["snr_db"]) / 10
    sim = CompState(jnp.zeros((MAX_USERS, 2)), jnp.zeros((MAX_USERS, 2)), jnp.zeros((MAX_USERS, MAX_CELLS), bool),
                    jnp.full(MAX_USERS, -1.0), jnp.zeros(MAX_USERS), jnp.asarray(1), jnp.asarray(l_snr))
    sizes = np.zeros(MAX_USERS, np.int32)
    sizes[:users] = [len(s) for s in decision.action["serving_cells"]]
    _, _, reward, *_, info = ENV.step(jax.random.PRNGKey(3), sim, jnp.asarray(sizes), net)
    assert decision.expected == pytest.approx(float(np.mean(np.asarray(info["rate"])[:users])) / 1e6, rel=1e-4)
    assert decision.value == pytest.approx(float(reward), rel=1e-4, abs=1e-6)
    assert decision.reasons["user_rates_mbps"] == pytest.approx(list(np.asarray(info["rate"])[:users] / 1e6), rel=1e-4)


def test_max_snr_serves_each_user_from_its_strongest_cell(run: Path) -> None:
    policy = D.load(run, "max_snr")
    state = D.example_state(run)
    (decision,) = D.decide(policy, [D.UsersState.parse(state)])
    assert decision.action["serving_cells"] == [[int(np.argmax(row))] for row in state["snr_db"]]
    assert decision.alternative["policy"] != "max-SNR (strongest cell)"


def test_same_measurements_same_cells_and_a_batch_of_two_tasks_answers_in_order(run: Path, expert: D.CompPolicy) -> None:
    first = D.example_state(run)
    weaker = [[v - 25.0 for v in row] for row in first["snr_db"]]
    other = {"task": TASKS[1], "snr_db": [[float(10 + (u * 7 + c * 3) % 20) for c in range(10)] for u in range(25)]}
    states = [D.UsersState.parse(s) for s in (first, {**first, "snr_db": weaker}, other, first)]
    _, together = contract.decided_alone_and_together(D, expert, states, rel=1e-5)
    assert len(together[2].action["serving_cells"]) == 25


@pytest.mark.parametrize(("change", "field"), [
    (lambda s: s.pop("task"), "state.task"),
    (lambda s: s["snr_db"][0].__setitem__(1, 400.0), "state.snr_db.0.1"),
    (lambda s: s.update(utility=[2.0]), "state.utility.0"),
    (lambda s: s.update(average_rate_mbps=[-1.0]), "state.average_rate_mbps.0"),
])
def test_bad_measurements_name_the_field(run: Path, change, field: str) -> None:
    contract.assert_bad_state_refused(D, run, change, field)


@pytest.mark.parametrize(("changes", "field"), [
    ({"task": "c3-u5-resource_fair-me"}, "state.task"),
    ({"snr_db": [[10.0] * 7] * 14}, "state.snr_db"),
    ({"snr_db": [[10.0] * 6] * 15}, "state.snr_db"),
    ({"utility": [0.0] * 3}, "state.utility"),
])
def test_measurements_that_do_not_fit_the_task_are_refused(run: Path, expert: D.CompPolicy, changes: dict,
                                                           field: str) -> None:
    contract.refused(D.decide, expert, [_state(run, **changes)], field=field)


def test_unknown_policy_and_a_run_without_policies_are_refused(run: Path, tmp_path: Path) -> None:
    contract.assert_unknown_policies_refused(D, run, "random", "promptdt-small", "planner")
    contract.refused(D.load, contract.copied_run(run, tmp_path / "old", without=[FILE]), "expert", field="run")


def test_a_task_without_the_best_others_policy_is_answered_beside_the_next_best(run: Path, tmp_path: Path) -> None:
    from decisions.kit.decide import deployed_and_alternative

    deployed = next(c.name for c in D.candidates(run, {}) if c.name != "expert")
    assert deployed_and_alternative(D.candidates(run, {}), deployed)[1] == "expert"
    folder = contract.copied_run(run, tmp_path / "own", without=[f"expert_{TASKS[0]}.msgpack"])
    policy = D.load(folder, deployed)
    (decision,) = D.decide(policy, [D.UsersState.parse(D.example_state(folder))])
    assert D.example_state(folder)["task"] == TASKS[0]
    assert decision.alternative["policy"] not in (policy.labels["expert"], policy.labels[deployed])
    assert policy.tasks[TASKS[1]].alternative == "expert"
