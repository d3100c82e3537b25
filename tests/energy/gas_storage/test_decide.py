"""Gas storage's decide contract on the smoke run's saved folder: candidates, loading, deciding, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from decisions.energy.gas_storage import DOMAIN, decide, deploy, snapo_policy
from decisions.energy.gas_storage.params import to_params
from decisions.energy.gas_storage.scenario import Scenario
from tests import decide_contract as contract

pytestmark = pytest.mark.smoke_runs("gas_storage")  # the conformance kit's smoke run, shared

run_folder, policy, _state = contract.smoke_fixtures("gas_storage", decide, "snapo")  # _state: the example, changed


def test_candidates_have_finite_scores(run_folder: Path) -> None:
    contract.offered(DOMAIN, decide, run_folder, ["snapo", "intrinsic_lp"])  # the smoke job runs SNAPO only


def test_example_state_gets_a_feasible_move(run_folder: Path, policy: decide.StoragePolicy) -> None:
    (found,) = decide.decide(policy, [_state(run_folder)])
    low, high = found.reasons["feasible_move"]
    assert low - 1e-5 <= found.action["net_injection"] <= high + 1e-5
    assert found.interval[0] < found.expected < found.interval[1]  # the smoke's seasonal OU has a spread
    assert np.isfinite(found.value) and found.alternative["policy"] == decide.CANDIDATES["intrinsic_lp"]
    horizon = len(DOMAIN.smoke_spec["scenario"]["forward_curve"])
    assert len(found.sensitivities) == 2 + horizon - horizon // 3
    assert all(np.isfinite(v) for v in found.sensitivities.values())


def test_same_state_same_action_alone_and_in_a_batch(run_folder: Path, policy: decide.StoragePolicy) -> None:
    state, other = _state(run_folder), _state(run_folder, inventory=0.0)
    alone, batch = contract.decided_alone_and_together(decide, policy, [other, state, other, state], figure="value",
                                                       same_actions=False, rel=1e-5)
    assert batch[1].action["net_injection"] == pytest.approx(alone[1].action["net_injection"], abs=1e-4)


def test_batch_answers_in_order(run_folder: Path, policy: decide.StoragePolicy) -> None:
    curve = decide.example_state(run_folder)["forward_curve"]
    states = [_state(run_folder, spot=curve[0] * scale) for scale in (0.5, 1.0, 2.0)]
    _, found = contract.decided_alone_and_together(decide, policy, states, same_actions=False, rel=1e-5)
    assert found[0].expected < found[1].expected < found[2].expected  # tomorrow's spot follows today's


def test_value_matches_the_simulator_from_day_zero(run_folder: Path, policy: decide.StoragePolicy) -> None:
    scenario = Scenario.parse(json.loads((run_folder / "scenario.json").read_text()))
    start = {"day": 0, "inventory": scenario.facility.start_inventory, "forward_curve": scenario.forward_curve}
    (found,) = decide.decide(policy, [decide.STATE_MODEL.parse(start)])
    params = to_params(scenario)
    trained = snapo_policy.load_policy(run_folder / decide.POLICY_FILE)
    half = deploy.draw_normals(deploy.jax.random.PRNGKey(0), deploy.PATHS // 2, params.horizon)
    # decide's common paths, half by half: each half is as many paths as the smoke job's evaluation (its program)
    values = np.concatenate([snapo_policy.evaluate_policy(trained, normals, params) for normals in (half, -half)])
    assert found.value == pytest.approx(float(np.mean(values)), rel=1e-4)


@pytest.mark.parametrize(("changes", "field"), [
    ({"inventory": -1.0}, "state.inventory"),
    ({"day": 10_000}, "state.day"),
    ({"spot": 0.0}, "state.spot"),
    ({"forward_curve": []}, "state.forward_curve"),
])
def test_bad_state_names_the_field(run_folder: Path, changes: dict, field: str) -> None:
    contract.assert_bad_state_refused(decide, run_folder, changes, field)


def test_missing_field_and_run_mismatch_refused(run_folder: Path, policy: decide.StoragePolicy) -> None:
    contract.assert_bad_state_refused(decide, run_folder, lambda state: state.pop("inventory"), "state.inventory")
    contract.refused(decide.decide, policy, [_state(run_folder, day=0)], field="state.forward_curve")
    contract.refused(decide.decide, policy, [_state(run_folder, inventory=1e6)], field="state.inventory")


def test_unknown_candidate_and_empty_run_refused(run_folder: Path, tmp_path: Path) -> None:
    contract.assert_unknown_policies_refused(decide, run_folder, "lsmc")
    contract.refused(decide.load, contract.copied_run(run_folder, tmp_path, only=["comparison.csv"]),
                     "intrinsic_lp", field="run")


def test_intrinsic_schedule_deployed_answers_its_saved_move(run_folder: Path) -> None:
    deployed = decide.load(run_folder, "intrinsic_lp")
    state = _state(run_folder)  # at the LP schedule's own inventory: its move is feasible
    (found,) = decide.decide(deployed, [state])
    scheduled = pd.read_csv(run_folder / "schedule.csv")["lp_net_injection"].iloc[state.day]
    assert found.action["net_injection"] == pytest.approx(float(scheduled), abs=1e-4)
    assert found.reasons["scheduled_move"] == pytest.approx(float(scheduled), abs=1e-4)
    assert found.alternative["policy"] == decide.CANDIDATES["snapo"]


def test_days_out_of_order_answer_as_each_alone(run_folder: Path, policy: decide.StoragePolicy) -> None:
    schedule = pd.read_csv(run_folder / "schedule.csv")["lp_inventory"]
    curve = decide.example_state(run_folder)["forward_curve"]
    horizon = len(DOMAIN.smoke_spec["scenario"]["forward_curve"])
    full = [*[curve[0]] * (horizon - len(curve)), *curve]
    days = [horizon - 2, 1, horizon // 2, 1]  # a batch's chunk starts at its earliest day, sorted inside
    states = [_state(run_folder, day=d, inventory=float(schedule.iloc[d - 1]), forward_curve=full[d:],
                     spot=full[d] * (1.0 + 0.1 * i)) for i, d in enumerate(days)]
    alone, together = contract.decided_alone_and_together(decide, policy, states, figure="value",
                                                          same_actions=False, rel=1e-5)
    for one, batch in zip(alone, together, strict=True):
        assert batch.action["net_injection"] == pytest.approx(one.action["net_injection"], abs=1e-4)
        assert batch.sensitivities == pytest.approx(one.sensitivities, rel=1e-4, abs=1e-6)
        assert batch.alternative["value"] == pytest.approx(one.alternative["value"], rel=1e-5)
