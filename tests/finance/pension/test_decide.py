"""Pension's decide contract on the smoke run's saved folder: candidates, loading, deciding, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from decisions.errors import InputError
from decisions.finance.pension import DOMAIN, decide, deploy, snapo_policy
from decisions.finance.pension.assemble import to_params
from decisions.finance.pension.scenario import Scenario
from decisions.kit.decide import best_candidate
from tests.helpers import saved_smoke_run

# Each module trains its own smoke run; the default suite covers every domain's decide through the
# conformance kit's operator loop (tests/jobs/test_conformance.py) on its tiny recorded run.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return saved_smoke_run(DOMAIN, tmp_path_factory.mktemp("pension_run"))


@pytest.fixture(scope="module")
def policy(run_folder: Path) -> decide.FundPolicy:
    return decide.load(run_folder, "snapo")


def _state(run_folder: Path, **changes) -> decide.FundState:
    return decide.STATE_MODEL.parse({**decide.example_state(run_folder), **changes})


def test_candidates_have_finite_scores(run_folder: Path) -> None:
    offered = decide.candidates(run_folder, {})
    assert [c.name for c in offered] == ["snapo", "fixed_mix"]
    assert all(np.isfinite(c.score) for c in offered)
    assert best_candidate(offered).score == max(c.score for c in offered)
    assert DOMAIN.decider is not None and DOMAIN.decider() is decide


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
    alone = decide.decide(policy, [state])[0]
    batch = decide.decide(policy, [other, state, other, state])
    assert decide.decide(policy, [state])[0].action == alone.action
    assert batch[1].action == batch[3].action
    assert batch[1].action["contribution_rate"] == pytest.approx(alone.action["contribution_rate"], abs=1e-6)


def test_batch_answers_in_order(run_folder: Path, policy: decide.FundPolicy) -> None:
    base = _state(run_folder).assets
    states = [_state(run_folder, assets=base * scale) for scale in (0.6, 1.0, 1.4)]
    found = decide.decide(policy, states)
    one_by_one = [decide.decide(policy, [s])[0] for s in states]
    assert [d.value for d in found] == pytest.approx([d.value for d in one_by_one], rel=1e-4)
    ratios = [d.reasons["funding_ratio"] for d in found]
    assert ratios[0] < ratios[1] < ratios[2]


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
    with pytest.raises(InputError) as caught:
        _state(run_folder, **changes)
    assert caught.value.field == field


def test_missing_field_and_run_mismatch_refused(run_folder: Path, policy: decide.FundPolicy) -> None:
    state = decide.example_state(run_folder)
    del state["members"]
    with pytest.raises(InputError, match="^state.members"):
        decide.STATE_MODEL.parse(state)
    with pytest.raises(InputError, match="^state.month"):
        decide.decide(policy, [_state(run_folder, month=policy.params.months)])
    with pytest.raises(InputError, match="^state.key_rates"):
        decide.decide(policy, [_state(run_folder, key_rates=[0.03])])


def test_unknown_candidate_and_empty_run_refused(run_folder: Path, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="^policy"):
        decide.load(run_folder, "lsmc")
    (tmp_path / "comparison.csv").write_text((run_folder / "comparison.csv").read_text())
    assert decide.candidates(tmp_path, {}) == []  # no saved network: nothing the run can deploy
    with pytest.raises(InputError, match="^run"):
        decide.load(tmp_path, "fixed_mix")
    for name in (decide.POLICY_FILE, "fixed_mix_allocation.csv"):
        (tmp_path / name).write_bytes((run_folder / name).read_bytes())
    with pytest.raises(InputError, match="^run"):  # no scenario
        decide.load(tmp_path, "fixed_mix")


def test_fixed_mix_deployed_answers_its_saved_weights(run_folder: Path) -> None:
    deployed = decide.load(run_folder, "fixed_mix")
    (found,) = decide.decide(deployed, [_state(run_folder)])
    saved = pd.read_csv(run_folder / "fixed_mix_allocation.csv").iloc[0]
    assert found.action["weights"] == pytest.approx({a: float(saved[a]) for a in deployed.params.asset_names}, abs=1e-5)
    assert found.action["contribution_rate"] == pytest.approx(float(saved["contribution_rate"]), abs=1e-5)
    assert found.alternative["policy"] == decide.CANDIDATES["snapo"]
