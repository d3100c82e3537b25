"""Pension's decide contract on the smoke run's saved folder: candidates, loading, deciding, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from decisions.finance.pension import DOMAIN, decide, deploy, snapo_policy
from decisions.finance.pension.assemble import to_params
from decisions.finance.pension.scenario import Scenario
from tests import decide_contract as contract

pytestmark = pytest.mark.smoke_runs("pension")  # the conformance kit's smoke run, shared

run_folder, policy, _state = contract.smoke_fixtures("pension", decide, "snapo")  # _state: the example, changed


def test_candidates_have_finite_scores(run_folder: Path) -> None:
    contract.offered(DOMAIN, decide, run_folder, ["snapo", "fixed_mix"])


def test_example_state_gets_a_valid_allocation(run_folder: Path, policy: decide.FundPolicy) -> None:
    (found,) = decide.decide(policy, [_state(run_folder)])
    weights = found.action["weights"]
    assert list(weights) == list(policy.params.asset_names)
    assert min(weights.values()) >= 0 and sum(weights.values()) == pytest.approx(1.0, abs=1e-5)
    low, high = float(policy.params.contribution_min), float(policy.params.contribution_max)
    assert low <= found.action["contribution_rate"] <= high
    assert found.interval[0] < found.expected < found.interval[1]
    assert found.alternative["policy"] == decide.CANDIDATES["fixed_mix"] and np.isfinite(found.alternative["value"])
    assert len(found.sensitivities) == 2 + len(policy.params.tenors)
    assert all(np.isfinite(v) for v in found.sensitivities.values())
    assert found.sensitivities["assets"] > 0  # more assets, more surplus


def test_same_state_same_action_alone_and_in_a_batch(run_folder: Path, policy: decide.FundPolicy) -> None:
    state = _state(run_folder)
    other = _state(run_folder, assets=state.assets * 0.7)
    alone, batch = contract.decided_alone_and_together(decide, policy, [other, state, other, state], figure="value",
                                                       same_actions=False, rel=1e-4)
    assert batch[1].action["contribution_rate"] == pytest.approx(alone[1].action["contribution_rate"], abs=1e-6)


def test_batch_answers_in_order(run_folder: Path, policy: decide.FundPolicy) -> None:
    base = _state(run_folder).assets
    states = [_state(run_folder, assets=base * scale) for scale in (0.6, 1.0, 1.4)]
    _, found = contract.decided_alone_and_together(decide, policy, states, figure="value", same_actions=False, rel=1e-4)
    ratios = [d.reasons["funding_ratio"] for d in found]
    assert ratios[0] < ratios[1] < ratios[2]


def test_months_out_of_order_answer_as_each_alone(run_folder: Path, policy: decide.FundPolicy) -> None:
    """A batch's states are answered in month order (a chunk skips the months before its earliest):
    each answer still lands on its own state and is the one it gets alone."""
    months = (policy.params.months - 1, 0, policy.params.months // 2, 1)
    states = [_state(run_folder, month=m) for m in months]
    _, found = contract.decided_alone_and_together(decide, policy, states, figure="value", same_actions=False, rel=1e-4)
    alone = [decide.decide(policy, [s])[0] for s in states]
    assert [(d.expected, *d.interval) for d in found] == [
        pytest.approx((d.expected, *d.interval), rel=1e-4) for d in alone]
    assert len({d.value for d in found}) == len(months)


def test_value_matches_the_simulator_from_the_start(run_folder: Path, policy: decide.FundPolicy) -> None:
    scenario = Scenario.parse(json.loads((run_folder / "scenario.json").read_text()))
    params = to_params(scenario)
    start = {"month": 0, "assets": float(params.initial_assets), "key_rates": scenario.curve.rates,
             "members": float(np.sum(params.counts))}
    (found,) = decide.decide(policy, [decide.STATE_MODEL.parse(start)])
    trained = snapo_policy.load_policy(run_folder / decide.POLICY_FILE)
    values = snapo_policy.evaluate(trained, params, deploy.common_normals(params))
    assert found.value == pytest.approx(float(np.mean(values)), rel=1e-4)


@pytest.mark.parametrize(("changes", "field"), [
    ({"assets": -1.0}, "state.assets"),
    ({"month": -1}, "state.month"),
    ({"members": 0.0}, "state.members"),
    ({"key_rates": [0.02, 0.9]}, "state.key_rates.1"),
])
def test_bad_state_names_the_field(run_folder: Path, changes: dict, field: str) -> None:
    contract.assert_bad_state_refused(decide, run_folder, changes, field)


def test_missing_field_and_run_mismatch_refused(run_folder: Path, policy: decide.FundPolicy) -> None:
    contract.assert_bad_state_refused(decide, run_folder, lambda state: state.pop("members"), "state.members")
    contract.refused(decide.decide, policy, [_state(run_folder, month=policy.params.months)], field="state.month")
    contract.refused(decide.decide, policy, [_state(run_folder, key_rates=[0.03])], field="state.key_rates")


def test_unknown_candidate_and_empty_run_refused(run_folder: Path, tmp_path: Path) -> None:
    contract.assert_unknown_policies_refused(decide, run_folder, "lsmc")
    contract.copied_run(run_folder, tmp_path, only=["comparison.csv"])
    assert decide.candidates(tmp_path, {}) == []  # no saved network: nothing the run can deploy
    contract.refused(decide.load, tmp_path, "fixed_mix", field="run")
    contract.copied_run(run_folder, tmp_path, only=[decide.POLICY_FILE, "fixed_mix_allocation.csv"])
    contract.refused(decide.load, tmp_path, "fixed_mix", field="run")  # no scenario


def test_fixed_mix_deployed_answers_its_saved_weights(run_folder: Path) -> None:
    deployed = decide.load(run_folder, "fixed_mix")
    (found,) = decide.decide(deployed, [_state(run_folder)])
    saved = pd.read_csv(run_folder / "fixed_mix_allocation.csv").iloc[0]
    assert found.action["weights"] == pytest.approx({a: float(saved[a]) for a in deployed.params.asset_names}, abs=1e-5)
    assert found.action["contribution_rate"] == pytest.approx(float(saved["contribution_rate"]), abs=1e-5)
    assert found.alternative["policy"] == decide.CANDIDATES["snapo"]
