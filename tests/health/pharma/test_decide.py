"""Pharma's decide contract on the smoke run's saved folder: candidates, loading, deciding, refusals."""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pandas as pd
import pytest

from decisions.health.pharma import DOMAIN, decide, deploy
from decisions.health.pharma.evaluation import batch_cqas
from decisions.health.pharma.params import constants, draw_constants, grid, uncertainty_cv
from decisions.health.pharma.snapo_policy import load_profiles
from tests import decide_contract as contract

# the conformance kit's smoke run, shared; slow still, as compiling the batch answer (with its
# sensitivities) takes several seconds more than the default suite can spare
pytestmark = [pytest.mark.slow, pytest.mark.smoke_runs("pharma")]

run_folder, policy, _state = contract.smoke_fixtures("pharma", decide, "snapo")  # _state: the example, changed


def test_candidates_have_finite_scores(run_folder: Path) -> None:
    contract.offered(DOMAIN, decide, run_folder, ["snapo", "best_constant"])


def test_example_batch_gets_the_saved_profiles(run_folder: Path, policy: decide.BatchPolicy) -> None:
    (found,) = decide.decide(policy, [_state(run_folder)])
    saved = load_profiles(run_folder / decide.PROFILES_FILE)
    assert found.action["reactor_temperature"] == pytest.approx(
        list(np.asarray(saved.cpps[0] + saved.profiles.reactor_offsets)), abs=1e-4)
    ranges = policy.scenario.ranges
    assert all(ranges.dryer_temperature.low - 1e-4 <= t <= ranges.dryer_temperature.high + 1e-4
               for t in found.action["dryer_temperature"])
    assert found.interval[0] <= found.expected <= found.interval[1] <= 100.0
    assert 0.0 <= found.reasons["compliance"] <= 1.0
    assert found.alternative["policy"] == decide.CANDIDATES["best_constant"] and np.isfinite(found.alternative["value"])
    assert set(found.sensitivities) == set(decide.MATERIAL_FIELDS + decide.PROCESS_FIELDS)
    assert all(np.isfinite(v) for v in found.sensitivities.values())
    assert found.sensitivities["substrate"] != 0.0


def test_same_batch_same_answer_alone_and_in_a_batch(run_folder: Path, policy: decide.BatchPolicy) -> None:
    state = _state(run_folder)
    other = _state(run_folder, substrate=state.substrate * 1.2)
    alone, _ = contract.decided_alone_and_together(decide, policy, [other, state, other, state], figure="value",
                                                   rel=1e-5)
    assert decide.decide(policy, [state])[0] == alone[1]


def test_batch_answers_in_order(run_folder: Path, policy: decide.BatchPolicy) -> None:
    base = _state(run_folder).substrate
    states = [_state(run_folder, substrate=base * scale) for scale in (0.8, 1.0, 1.2)]
    _, found = contract.decided_alone_and_together(decide, policy, states, figure="value", same_actions=False, rel=1e-4)
    assert len({round(d.value, 4) for d in found}) == 3


def test_value_matches_the_chain_on_the_same_draws(run_folder: Path, policy: decide.BatchPolicy) -> None:
    (found,) = decide.decide(policy, [_state(run_folder)])  # the scenario's own batch: its nominal constants
    scenario = policy.scenario
    saved = load_profiles(run_folder / decide.PROFILES_FILE)
    draws = draw_constants(jax.random.PRNGKey(0), constants(scenario), uncertainty_cv(scenario), deploy.DRAWS)
    q = np.asarray(batch_cqas(jax.numpy.asarray(saved.cpps), saved.profiles, draws, grid(scenario)))
    assert found.value == pytest.approx(float(q[:, 0].mean()), rel=1e-4)
    assert found.expected == pytest.approx(float(q[:, 1].mean()), rel=1e-5)


@pytest.mark.parametrize(("changes", "field"), [
    ({"substrate": 0.0}, "state.substrate"),
    ({"wash_ratio": 25.0}, "state.wash_ratio"),
    ({"dryer_time": -1.0}, "state.dryer_time"),
    ({"seed_size": "big"}, "state.seed_size"),
])
def test_bad_state_names_the_field(run_folder: Path, changes: dict, field: str) -> None:
    contract.assert_bad_state_refused(decide, run_folder, changes, field)


def test_missing_field_refused(run_folder: Path) -> None:
    contract.assert_bad_state_refused(decide, run_folder, lambda state: state.pop("cooling_time"), "state.cooling_time")


def test_unknown_candidate_and_empty_run_refused(run_folder: Path, tmp_path: Path) -> None:
    # the smoke run compares SNAPO with the best constant only
    contract.assert_unknown_policies_refused(decide, run_folder, "nominal")
    contract.copied_run(run_folder, tmp_path, only=["comparison.csv"])
    assert [c.name for c in decide.candidates(tmp_path, {})] == ["best_constant"]  # no saved profiles
    contract.refused(decide.load, tmp_path, "best_constant", field="run")


def test_best_constant_deployed_answers_its_saved_temperatures(run_folder: Path) -> None:
    deployed = decide.load(run_folder, "best_constant")
    (found,) = decide.decide(deployed, [_state(run_folder)])
    row = pd.read_csv(run_folder / "comparison.csv").set_index("method").loc["best_constant"]
    assert found.action["reactor_temperature"] == pytest.approx([row["reactor_temperature"]] * 6, abs=1e-4)
    assert found.action["dryer_temperature"] == pytest.approx([row["dryer_temperature"]] * 4, abs=1e-4)
    assert found.action["cooling_knots"][-1] == pytest.approx(row["cooling_end_temperature"], abs=1e-4)
    assert found.alternative["policy"] == decide.CANDIDATES["snapo"]
