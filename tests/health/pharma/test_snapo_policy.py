"""SNAPO profiles: the policy map, trajectories for plotting, save/reload, and a short training
that must beat the best constant-temperature grid point with every specification met."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.errors import InputError
from decisions.health.pharma import chain
from decisions.health.pharma.compare import compare_with_baseline
from decisions.health.pharma.evaluation import evaluate
from decisions.health.pharma.params import grid
from decisions.health.pharma.policy import init_params, operating_point, profiles_of
from decisions.health.pharma.scenario import Scenario
from decisions.health.pharma.snapo_policy import (
    OptimisedProfiles,
    OptimiseSettings,
    load_profiles,
    optimise,
    problem,
    save_profiles,
)
from decisions.health.pharma.trajectories import simulate_chain


def test_initial_policy_is_the_constant_operation() -> None:
    scenario = Scenario()
    g, p = grid(scenario), problem(scenario)
    params = init_params(g, p.bounds, reactor=72.0, cooling_end=8.0, dryer=55.0)
    cpps, prof = operating_point(params, p.cpps, p.bounds)
    np.testing.assert_allclose(np.asarray(cpps)[[0, 2, 5]], [72.0, 8.0, 55.0], rtol=1e-5)
    ref = chain.constant_profiles(g)
    np.testing.assert_allclose(np.asarray(prof.reactor_offsets), 0.0, atol=1e-4)
    np.testing.assert_allclose(
        np.asarray(prof.cooling_fractions), np.asarray(ref.cooling_fractions), atol=1e-6
    )
    np.testing.assert_allclose(np.asarray(cpps)[[1, 3, 4, 6]], np.asarray(p.cpps)[[1, 3, 4, 6]])


def test_any_policy_stays_in_range_and_cools_monotonically() -> None:
    scenario = Scenario()
    g, p = grid(scenario), problem(scenario)
    base = init_params(g, p.bounds, reactor=75.0, cooling_end=10.0, dryer=50.0)
    keys = jax.random.split(jax.random.PRNGKey(3), len(base))
    params = {
        k: v + 5.0 * jax.random.normal(kk, v.shape) for (k, v), kk in zip(base.items(), keys, strict=True)
    }
    reactor, end, fractions, dryer = (np.asarray(a) for a in profiles_of(params, p.bounds))
    assert (reactor >= 50.0).all() and (reactor <= 100.0).all()
    assert 0.0 <= end <= 40.0 and (dryer >= 30.0).all() and (dryer <= 80.0).all()
    assert fractions[0] == 0.0 and fractions[-1] == 1.0 and (np.diff(fractions) >= 0).all()
    # the CPP means plus the offsets give back the segment temperatures
    cpps, prof = operating_point(params, p.cpps, p.bounds)
    rx, _, dr = chain.temperatures(cpps, prof, jnp.float32(60.0))
    np.testing.assert_allclose(np.asarray(rx), reactor, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(dr), dryer, rtol=1e-6)


def test_simulate_chain_returns_consistent_frames() -> None:
    frames = simulate_chain(Scenario())
    r, c, d = frames.reactor, frames.crystalliser, frames.dryer
    assert list(r.columns) == ["time_h", "temperature", "substrate", "product", "impurity"]
    np.testing.assert_allclose(r[["substrate", "product", "impurity"]].sum(axis=1), 0.4, rtol=1e-5)
    assert r["time_h"].iloc[-1] == pytest.approx(4.0) and (r["temperature"] == 75.0).all()
    assert c["temperature"].iloc[0] == pytest.approx(60.0) and c["temperature"].iloc[-1] == pytest.approx(
        10.0
    )
    assert c["crystal_mass"].is_monotonic_increasing and (c["d50"].diff().dropna() > -1e-3).all()
    assert d["residual_solvent"].is_monotonic_decreasing
    assert d["residual_solvent"].iloc[-1] == pytest.approx(
        frames.cqas.set_index("cqa").loc["residual_solvent", "value"]
    )
    assert len(frames.filtration) == 1 and list(frames.cqas["cqa"]) == list(chain.CQA_NAMES)


def test_save_and_reload_give_the_identical_operating_point(tmp_path: Path) -> None:
    scenario = Scenario.parse({"specs": {"impurity_max": 0.12}})
    g, p = grid(scenario), problem(scenario)
    base = init_params(g, p.bounds, reactor=74.0, cooling_end=6.0, dryer=50.0)
    keys = jax.random.split(jax.random.PRNGKey(7), len(base))
    params = {
        k: v + 0.3 * jax.random.normal(kk, v.shape) for (k, v), kk in zip(base.items(), keys, strict=True)
    }
    cpps, prof = operating_point(params, p.cpps, p.bounds)
    result = OptimisedProfiles(
        scenario=scenario,
        params=params,
        cpps=np.asarray(cpps),
        profiles=prof,
        settings=OptimiseSettings(steps=5),
    )
    path = tmp_path / "profiles.msgpack"
    save_profiles(path, result)
    loaded = load_profiles(path)
    assert loaded.scenario == scenario and loaded.settings == result.settings
    for k in params:
        np.testing.assert_array_equal(np.asarray(loaded.params[k]), np.asarray(params[k]))
    np.testing.assert_array_equal(loaded.cpps, result.cpps)
    key = jax.random.PRNGKey(0)
    a = evaluate(jnp.asarray(result.cpps), result.profiles, p.nominal, p.cv, p.limits, g, key=key, samples=16)
    b = evaluate(jnp.asarray(loaded.cpps), loaded.profiles, p.nominal, p.cv, p.limits, g, key=key, samples=16)
    np.testing.assert_array_equal(a.nominal_cqas, b.nominal_cqas)
    assert a.mean_yield == b.mean_yield and a.compliance == b.compliance
    assert loaded.profile_frame().equals(result.profile_frame())


def test_loading_another_file_is_an_input_error(tmp_path: Path) -> None:
    from decisions.core.checkpoint import save_pytree

    path = tmp_path / "other.msgpack"
    save_pytree(path, {"w": np.zeros(3)}, metadata={"format": "something/1"})
    with pytest.raises(InputError, match="profiles"):
        load_profiles(path)
    save_pytree(path, {"w": np.zeros(3)}, metadata={"format": "decisions.health.pharma.profiles/2"})
    with pytest.raises(InputError, match="^profiles: .*other.msgpack has format version '2'"):
        load_profiles(path)
    path.write_bytes(b"not msgpack")
    with pytest.raises(InputError, match="^profiles: .*other.msgpack: corrupt"):
        load_profiles(path)


SMALL_BUDGET = OptimiseSettings(steps=150, samples_per_step=32, eval_samples=1000, log_every=75)


@pytest.fixture(scope="module")
def trained() -> OptimisedProfiles:
    return optimise(Scenario(), SMALL_BUDGET)


def test_snapo_profiles_meet_every_spec_on_fresh_draws(trained: OptimisedProfiles) -> None:
    ev = trained.evaluation
    assert ev is not None and ev.samples == 1000
    # hard checks: at the nominal constants and on 1000 fresh draws
    assert ev.nominal_meets and trained.cqa_table()["meets"].all()
    assert ev.compliance >= 0.95
    # the learned shapes are the textbook ones: a falling reactor profile, slow-then-fast
    # cooling, a dryer that starts cool while the cake is wet
    reactor, _, fractions, dryer = profiles_of(trained.params, problem(trained.scenario).bounds)
    assert float(reactor[0]) > float(reactor[-1]) + 2.0
    assert float(fractions[len(fractions) // 2]) < 0.4
    assert float(dryer[0]) < float(dryer[-1])
    curve = trained.curve()
    assert len(curve) == SMALL_BUDGET.steps and np.isfinite(curve["value"]).all()
    frame = trained.profile_frame()
    assert set(frame["unit"]) == {"reactor", "crystalliser", "dryer"}


@pytest.mark.slow  # the full default grid search (11 x 11 x 6 points, two zooms): a minute
def test_snapo_beats_the_best_constant_profile(trained: OptimisedProfiles) -> None:
    """Same fresh draws for both; the grid search over constant temperatures selects with the
    same compliance back-off SNAPO trains to."""
    ev = trained.evaluation
    assert ev is not None
    comparison = compare_with_baseline(trained)
    base = comparison.baseline
    assert comparison.search.feasible and base.nominal_meets
    assert ev.mean_yield >= base.mean_yield + 1.5
    assert ev.compliance >= base.compliance - 0.01
    assert list(comparison.table.index) == ["snapo", "best_constant"]
