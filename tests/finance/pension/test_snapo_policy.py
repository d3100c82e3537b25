"""SNAPO on a small pension problem: it must beat the best fixed mix on fresh paths (paired), its
sensitivities come out as tidy tables with the right signs, the report tables are consistent, and
save/reload gives identical decisions."""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pytest

from decisions.core.evaluate import compare
from decisions.errors import InputError
from decisions.finance.pension import baselines
from decisions.finance.pension import snapo_policy as sp
from decisions.finance.pension.assemble import to_params
from decisions.finance.pension.liabilities import initial_liability
from decisions.finance.pension.params import PensionParams
from decisions.finance.pension.policy import fixed_mix_params
from decisions.finance.pension.report import allocation, allocation_long, funding_fan
from decisions.finance.pension.scenario import Scenario
from decisions.finance.pension.simulator import draw_normals

SETTINGS = sp.PensionSnapoSettings(steps=300, paths_per_step=256, width=16, log_every=150)
"""The budget of the (slow) test that SNAPO beats the best fixed mix."""
QUICK = SETTINGS.model_copy(update={"steps": 20, "log_every": 20})
"""A short training for the tests of tables, sensitivities and files (any trained network will do)."""


@pytest.fixture(scope="module")
def params() -> PensionParams:
    return to_params(Scenario(horizon_years=5))


@pytest.fixture(scope="module")
def trained(params: PensionParams) -> sp.TrainedPensionPolicy:
    return sp.train_policy(params, QUICK)


@pytest.fixture(scope="module")
def fixed(params: PensionParams) -> baselines.FixedMixResult:
    return baselines.best_fixed_mix(params, SETTINGS, key=jax.random.PRNGKey(7), selection_paths=512)


@pytest.fixture(scope="module")
def grid_mix(params: PensionParams) -> sp.TrainedPensionPolicy:
    """A fixed mix of the baseline's grid (no search, no training): enough to save and reload."""
    network = QUICK.network(params.n_assets)
    weights = next(iter(baselines.named_mixes(params).values()))
    return sp.TrainedPensionPolicy(
        policy=network, params=fixed_mix_params(network, weights, 0.5), settings=QUICK, asset_names=params.asset_names
    )


@pytest.fixture(scope="module")
def fresh(params: PensionParams) -> jax.Array:
    return draw_normals(jax.random.PRNGKey(2024), 1024, params.months, params.n_shocks)


@pytest.mark.slow  # 300 training steps: half a minute
def test_snapo_beats_the_best_fixed_mix_on_fresh_paths(
    params: PensionParams, fixed: baselines.FixedMixResult, fresh: jax.Array
) -> None:
    trained = sp.train_policy(params, SETTINGS)
    assert fixed.policy.is_fixed_mix and not trained.is_fixed_mix
    _, traj = sp.simulate(fixed.policy, params, fresh[:16])
    weights = np.asarray(traj.weights)
    np.testing.assert_allclose(weights, np.broadcast_to(weights[0, 0], weights.shape), rtol=1e-6)  # constant
    assert len(fixed.candidates) == 3 * len(baselines.named_mixes(params)) + 1
    values = {
        "snapo": np.asarray(sp.evaluate(trained, params, fresh)),
        "fixed_mix": np.asarray(sp.evaluate(fixed.policy, params, fresh)),
    }
    table = compare(values, reference="fixed_mix")
    gain, stderr = table.loc["snapo", "diff_mean"], table.loc["snapo", "diff_stderr"]
    liability = float(initial_liability(params))
    assert gain >= 3.0 * stderr  # significant on paired fresh paths
    assert gain >= 0.03 * liability  # and worth at least 3% of today's liability
    curve = trained.curve()
    assert len(curve) == SETTINGS.steps and curve["value"].iloc[-50:].mean() > curve["value"].iloc[:50].mean()


def test_sensitivities_are_tidy_tables_with_the_expected_signs(
    params: PensionParams, trained: sp.TrainedPensionPolicy, fresh: jax.Array
) -> None:
    found = sp.sensitivities(trained, params, fresh[:256])
    assert np.isfinite(found.value)
    leaves = jax.tree_util.tree_leaves(found.grads)
    assert all(np.all(np.isfinite(np.asarray(leaf))) for leaf in leaves)
    assert found.count == sum(np.size(leaf) for leaf in jax.tree_util.tree_leaves(params))
    tables = found.tables()
    keys = tables["key_rates"]
    assert list(keys.columns) == ["tenor", "rate", "dV_dr", "dV_per_bp"] and len(keys) == len(params.tenors)
    assert len(tables["assets"]) == 2 * len(params.risky_names)
    assert len(tables["correlations"]) == len(params.correlation_pairs)
    scalars = tables["scalars"].set_index("input")["dV_dinput"]
    assert scalars["initial_assets"] > 0  # more assets today: more surplus, less shortfall
    assert scalars["mortality_scale"] > 0  # heavier mortality: smaller liability
    assert scalars["contribution_cost"] < 0 and scalars["penalty_weight"] <= 0
    assert scalars["indexation"] < 0 and scalars["accrual_rate"] < 0  # richer benefits cost


def test_report_tables_are_consistent(params: PensionParams, trained: sp.TrainedPensionPolicy, fresh: jax.Array) -> None:
    _, traj = sp.simulate(trained, params, fresh[:128])
    fan = funding_fan(traj)
    assert len(fan) == params.months + 1 and list(fan.columns[:3]) == ["month", "year", "mean"]
    assert np.all(np.diff(fan[["p5", "p25", "p50", "p75", "p95"]].to_numpy(), axis=1) >= 0)
    assert fan["p50"].iloc[0] == pytest.approx(1.0, rel=1e-5)  # default: fully funded today
    mix = allocation(traj, params.asset_names)
    assert len(mix) == params.months
    np.testing.assert_allclose(mix[list(params.asset_names)].sum(axis=1), 1.0, rtol=1e-5)
    assert mix["contribution_rate"].between(float(params.contribution_min), float(params.contribution_max)).all()
    long = allocation_long(mix, params.asset_names)
    assert len(long) == params.months * params.n_assets and set(long["asset"]) == set(params.asset_names)


def test_save_and_reload_give_identical_decisions(
    params: PensionParams,
    trained: sp.TrainedPensionPolicy,
    grid_mix: sp.TrainedPensionPolicy,
    fresh: jax.Array,
    tmp_path: Path,
) -> None:
    for name, policy in (("net", trained), ("mix", grid_mix)):
        path = tmp_path / f"{name}.msgpack"
        sp.save_policy(path, policy)
        loaded = sp.load_policy(path)
        assert loaded.policy == policy.policy and loaded.asset_names == policy.asset_names
        _, before = sp.simulate(policy, params, fresh[:32])
        _, after = sp.simulate(loaded, params, fresh[:32])
        np.testing.assert_array_equal(np.asarray(after.weights), np.asarray(before.weights))
        np.testing.assert_array_equal(np.asarray(after.contribution_rate), np.asarray(before.contribution_rate))
    (tmp_path / "other.msgpack").write_bytes(b"not a policy")
    with pytest.raises(InputError, match="^policy: .*other.msgpack"):
        sp.load_policy(tmp_path / "other.msgpack")
