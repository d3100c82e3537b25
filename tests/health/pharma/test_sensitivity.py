"""ICH Q8 sensitivities: the one-call Jacobian against finite differences, cross-unit terms where
physics puts them, exact zeros where no path exists, signs, scoped x64 and no re-tracing."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from decisions.health.pharma import chain
from decisions.health.pharma.chain import CQA_NAMES
from decisions.health.pharma.params import CPP_NAMES, constants, cpp_vector, grid
from decisions.health.pharma.scenario import Scenario
from decisions.health.pharma.sensitivity import (
    count_sensitivities,
    cqa_jacobian,
    cross_unit_mask,
    fd_check,
    sensitivity_table,
    structural_zero_mask,
)


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    return Scenario()


@pytest.fixture(scope="module")
def table(scenario: Scenario) -> pd.DataFrame:
    return sensitivity_table(scenario)


def test_table_is_cqas_by_cpps(table: pd.DataFrame) -> None:
    assert list(table.index) == list(CQA_NAMES) and list(table.columns) == list(CPP_NAMES)
    assert len(CQA_NAMES) >= 5 and len(CPP_NAMES) >= 4
    assert np.isfinite(table.to_numpy()).all()
    nonzero, cross = count_sensitivities(table.to_numpy())
    assert nonzero >= 20 and cross >= 20


def test_jacobian_matches_float64_finite_differences(scenario: Scenario, table: pd.DataFrame) -> None:
    err, adjoint, fd = fd_check(scenario)
    assert err < 1e-4
    assert not jax.config.jax_enable_x64  # x64 was scoped to the check
    assert jnp.zeros(1).dtype == jnp.float32
    # the float32 production Jacobian agrees with the float64 one to float32 accuracy
    scale = np.abs(adjoint.to_numpy()).max(axis=1, keepdims=True)
    assert np.max(np.abs(table.to_numpy() - adjoint.to_numpy()) / scale) < 1e-3


def test_cross_unit_terms_are_nonzero_where_physics_says(table: pd.DataFrame) -> None:
    for cqa, cpp in [
        ("residual_solvent", "reactor_temperature"),  # feed -> supersaturation -> d50 -> cake retention
        ("residual_solvent", "cooling_time"),
        ("d50", "reactor_temperature"),  # feed concentration -> crystal size
        ("d50", "reaction_time"),
        ("impurity", "reactor_temperature"),  # P -> I in the reactor reaches the washed cake
        ("impurity", "cooling_end_temperature"),  # incorporation and liquor in the cake
        ("yield", "wash_ratio"),
        ("purity", "reaction_time"),
        ("degradant", "cooling_end_temperature"),  # crystal size -> wet cake -> moisture-driven degradation
    ]:
        assert table.loc[cqa, cpp] != 0.0, (cqa, cpp)
    mask = cross_unit_mask()
    assert (table.to_numpy()[mask] != 0.0).all()


def test_no_path_gives_exact_zeros(scenario: Scenario, table: pd.DataFrame) -> None:
    zeros = structural_zero_mask()
    assert zeros.sum() == 5
    assert (table.to_numpy()[zeros] == 0.0).all()
    for cpp in ("wash_ratio", "dryer_temperature", "dryer_time"):
        assert table.loc["d50", cpp] == 0.0
    for cpp in ("dryer_temperature", "dryer_time"):
        assert table.loc["impurity", cpp] == 0.0
    # the reactor outlet cannot move with any downstream CPP
    g, c = grid(scenario), constants(scenario)
    prof = chain.constant_profiles(g)
    outlet = jax.jit(jax.jacrev(lambda x: chain.simulate(x, prof, c, g).reactor.final))(cpp_vector(scenario))
    assert (np.asarray(outlet)[:, 2:] == 0.0).all()
    assert (np.asarray(outlet)[:, :2] != 0.0).all()


def test_signs_follow_the_physics(table: pd.DataFrame) -> None:
    t = table
    assert t.loc["yield", "cooling_end_temperature"] < 0  # colder end: less product left dissolved
    assert t.loc["impurity", "reactor_temperature"] > 0  # hotter: more P -> I
    assert t.loc["impurity", "wash_ratio"] < 0  # more wash: less liquor left
    assert t.loc["yield", "wash_ratio"] < 0  # more wash: more product dissolved
    assert t.loc["residual_solvent", "dryer_temperature"] < 0
    assert t.loc["residual_solvent", "dryer_time"] < 0
    assert t.loc["degradant", "dryer_temperature"] > 0
    assert t.loc["d50", "cooling_time"] > 0  # slower cooling: fewer nuclei, larger crystals


def test_second_jacobian_call_does_not_retrace(scenario: Scenario, table: pd.DataFrame) -> None:
    g, c = grid(scenario), constants(scenario)
    prof = chain.constant_profiles(g)
    size = cqa_jacobian._cache_size()
    j1 = cqa_jacobian(cpp_vector(scenario).at[0].add(1.0), prof, c, g)
    j2 = cqa_jacobian(cpp_vector(scenario).at[6].add(0.5), prof, c, g)
    assert cqa_jacobian._cache_size() == size
    assert not np.array_equal(np.asarray(j1), np.asarray(j2))
