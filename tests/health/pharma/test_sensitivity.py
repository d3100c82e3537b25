"""ICH Q8 sensitivities: the one-call Jacobian against finite differences, cross-unit terms where
physics puts them, exact zeros where no path exists, signs, scoped x64 and no re-tracing; the
finite-difference check is a real float64 comparison after float32 compiles in the same process,
catches a wrong Jacobian, and refuses float32 values or identical tables instead of reporting 0."""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from decisions.health.pharma import chain, sensitivity
from decisions.health.pharma.chain import CQA_NAMES
from decisions.health.pharma.params import CPP_NAMES, constants, cpp_vector, grid
from decisions.health.pharma.scenario import Scenario
from decisions.health.pharma.sensitivity import (
    count_sensitivities,
    cqa_jacobian,
    cross_unit_mask,
    fd_check,
    max_relative_error,
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


def test_jacobian_matches_float64_finite_differences(
    scenario: Scenario, table: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the process has already compiled the same Jacobian in float32 (the ``table`` fixture), as a
    # bench has after training: the check must still compare float64 numbers, not reuse those
    assert cqa_jacobian._cache_size() >= 1
    compared: list[tuple[np.dtype, np.dtype]] = []

    def spy(adjoint: np.ndarray, fd: np.ndarray) -> float:
        compared.append((adjoint.dtype, fd.dtype))
        return max_relative_error(adjoint, fd)

    monkeypatch.setattr(sensitivity, "max_relative_error", spy)
    err, adjoint, fd = fd_check(scenario)
    assert compared == [(np.dtype(np.float64), np.dtype(np.float64))]
    assert 0.0 < err < 1e-4  # exactly 0 would mean both sides were the same numbers
    assert not np.array_equal(adjoint.to_numpy(), fd.to_numpy())
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


def test_a_wrong_jacobian_gives_a_large_error(scenario: Scenario) -> None:
    def wrong(x: jax.Array, p: chain.Profiles, c: object, g: object) -> jax.Array:
        return 1.001 * cqa_jacobian(x, p, c, g)  # every sensitivity 0.1 % too large

    err, adjoint, fd = fd_check(scenario, jacobian=wrong)
    assert err == pytest.approx(1e-3, rel=0.05)


def test_fd_check_fails_loudly_without_x64(scenario: Scenario, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jax, "enable_x64", lambda *_: contextlib.nullcontext())  # the scope has no effect
    with pytest.raises(FloatingPointError, match="x64 is not in effect"):
        fd_check(scenario)


def test_fd_check_refuses_float32_inputs_and_traces(
    scenario: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(FloatingPointError, match="traced Jacobian hold float32"):
        fd_check(scenario, jacobian=lambda x, p, c, g: cqa_jacobian(x, p, c, g).astype(jnp.float32))
    monkeypatch.setattr(sensitivity, "constants", lambda s, dtype=jnp.float32: constants(s, jnp.float32))
    with pytest.raises(FloatingPointError, match="inputs of the traced Jacobian hold float32"):
        fd_check(scenario)


def test_max_relative_error_judges_entries_and_refuses_non_comparisons() -> None:
    adjoint = np.array([[2.0, 0.0, 1e-9], [0.0, 4.0, 0.0]])
    fd = np.array([[2.002, 0.0, 0.0], [0.0, 4.0, 0.0]])
    # 1e-3 relative on the first entry; a 1e-9 vs 0 entry is judged against the row's floor (2e-6)
    assert max_relative_error(adjoint, fd) == pytest.approx(0.002 / 2.002)
    assert max_relative_error(adjoint, adjoint[:, ::-1].copy()) == pytest.approx(1.0)
    for fd_bad, words in [
        (adjoint.copy(), "bitwise identical"),  # a quantity compared with itself: 0.0 would prove nothing
        (fd.astype(np.float32), "float32"),
        (np.where(fd == 0.0, np.nan, fd), "not finite"),
    ]:
        with pytest.raises(FloatingPointError, match=words):
            max_relative_error(adjoint, fd_bad)
    with pytest.raises(FloatingPointError, match="bitwise identical"):
        max_relative_error(np.zeros((2, 3)), np.zeros((2, 3)))  # no sensitivity at all: nothing compared
