"""Each unit against a closed form or an exact invariant (float64, x64 scoped to each test)."""

from __future__ import annotations

import math
from collections.abc import Iterator

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.health.pharma import crystalliser, dryer, filtration, reactor
from decisions.health.pharma.params import GAS_CONSTANT, KELVIN, Constants, arrhenius, constants
from decisions.health.pharma.scenario import Scenario


@pytest.fixture
def c64() -> Iterator[Constants]:
    with jax.enable_x64(True):
        yield constants(Scenario(), jnp.float64)


def test_arrhenius_is_the_reference_at_the_reference_and_has_the_right_ratio() -> None:
    k = arrhenius(jnp.float32(2.0), jnp.float32(80.0), jnp.float32(80.0), jnp.float32(80.0))
    assert float(k) == pytest.approx(2.0)
    ratio = float(arrhenius(1.0, 80.0, 90.0, 80.0) / arrhenius(1.0, 80.0, 70.0, 80.0))
    expected = math.exp(80.0 / GAS_CONSTANT * (1 / (70 + KELVIN) - 1 / (90 + KELVIN)))
    assert ratio == pytest.approx(expected, rel=1e-5)


def test_isothermal_reactor_matches_the_closed_form(c64: Constants) -> None:
    temperature, hours = jnp.float64(78.0), jnp.float64(4.0)
    errors = []
    for steps in (8, 16):
        out = reactor.run(jnp.full((6,), temperature), hours, c64.reactor, steps=steps)
        exact = np.asarray(reactor.isothermal(temperature, out.times, c64.reactor))
        errors.append(np.max(np.abs(np.asarray(out.trajectory) - exact)))
        np.testing.assert_allclose(np.asarray(out.trajectory), exact, rtol=1e-4, atol=1e-8)
        # A decays as exp(-k t) with the Arrhenius k
        k1, _ = reactor.rates(temperature, c64.reactor)
        assert float(out.final[0]) == pytest.approx(0.4 * math.exp(-float(k1) * 4.0), rel=1e-4)
        # mass balance at every step, exactly
        np.testing.assert_allclose(np.asarray(out.trajectory).sum(axis=1), 0.4, rtol=1e-12)
    assert 12.0 < errors[0] / errors[1] < 20.0  # fourth order: halving the step divides the error by 16


def test_piecewise_reactor_profile_chains_the_segment_solutions(c64: Constants) -> None:
    """Two segments: the closed form restarted at the switch with the first segment's end state."""
    hot, cool, hours = 90.0, 65.0, 3.0
    out = reactor.run(jnp.asarray([hot, cool]), jnp.float64(hours), c64.reactor, steps=40)
    first = np.asarray(reactor.isothermal(jnp.float64(hot), jnp.float64(hours / 2), c64.reactor))
    k1, k2 = (float(k) for k in reactor.rates(jnp.float64(cool), c64.reactor))
    a0, p0, t = first[0], first[1], hours / 2
    a = a0 * math.exp(-k1 * t)
    p = p0 * math.exp(-k2 * t) + a0 * k1 / (k2 - k1) * (math.exp(-k1 * t) - math.exp(-k2 * t))
    np.testing.assert_allclose(np.asarray(out.final[:2]), [a, p], rtol=1e-5)


def test_isothermal_dryer_matches_the_closed_form(c64: Constants) -> None:
    temperature, loading, product = jnp.float64(55.0), jnp.float64(0.3), jnp.float64(90.0)
    errors = []
    for steps in (8, 16):
        out = dryer.run(
            jnp.full((4,), temperature), jnp.float64(10.0), loading, product, c64.dryer, steps=steps
        )
        exact = np.asarray(dryer.isothermal(temperature, out.times, loading, product, c64.dryer))
        errors.append(np.max(np.abs(np.asarray(out.trajectory) - exact) / np.maximum(np.abs(exact), 1e-3)))
        np.testing.assert_allclose(np.asarray(out.trajectory), exact, rtol=1e-3, atol=1e-9)
        k_dry, _ = dryer.rates(temperature, c64.dryer)
        x_end = 0.3 * math.exp(-float(k_dry) * 10.0)
        assert float(out.residual_solvent) == pytest.approx(1e6 * x_end / (1 + x_end), rel=1e-3)
    assert 12.0 < errors[0] / errors[1] < 20.0


def test_wash_follows_exponential_displacement_and_linear_dissolution(c64: Constants) -> None:
    f = c64.filtration
    crystals = jnp.asarray([90.0, 0.1, 0.05])  # P, A, I in the crystals, g/L
    liquor = jnp.asarray([10.0, 5.0, 3.0])  # dissolved P, A, I, g/L
    d50, sat = jnp.float64(100.0), jnp.float64(8.0)
    liquid = 0.40 * float(crystals.sum()) / 1000.0  # L/kg x kg: retention at 100 um is the reference
    for ratio in (0.0, 1.0, 3.0):
        out = filtration.run(crystals, liquor, d50, jnp.float64(ratio), sat, f)
        left = math.exp(-1.5 * ratio)
        assert float(out.liquor_left) == pytest.approx(left, rel=1e-12)
        assert float(out.liquid) == pytest.approx(liquid, rel=1e-12)
        assert float(out.wash_loss) == pytest.approx(ratio * liquid * 8.0 * 0.3, rel=1e-12)
        assert float(out.impurity) == pytest.approx(0.05 + left * 3.0 * liquid, rel=1e-12)
        assert float(out.substrate) == pytest.approx(0.1 + left * 5.0 * liquid, rel=1e-12)
        assert float(out.product) == pytest.approx(
            90.0 - ratio * liquid * 2.4 + left * 10.0 * liquid, rel=1e-12
        )
    # finer crystals retain more liquor: (100 / d50)^0.5
    assert float(filtration.retention(jnp.float64(25.0), f)) == pytest.approx(0.8, rel=1e-12)


def _crystallise(c: Constants, **changes: float) -> crystalliser.CrystalliserOutput:
    cc = c.crystalliser.replace(**{k: jnp.float64(v) for k, v in changes.items()})
    knots = jnp.asarray([60.0, 55.0, 45.0, 30.0, 15.0, 5.0])
    feed = jnp.asarray([110.0, 6.0, 2.5])
    return crystalliser.run(knots, jnp.float64(6.0), feed, cc, steps=16)


def test_crystalliser_conserves_every_species(c64: Constants) -> None:
    out = _crystallise(c64)
    traj = np.asarray(out.trajectory)
    per_moment = float(crystalliser.mass_per_moment(c64.crystalliser))
    total_p = traj[:, crystalliser.C_P] + per_moment * traj[:, crystalliser.M3]
    np.testing.assert_allclose(total_p, 110.0 + 2.0, rtol=1e-12)  # feed + seeds
    np.testing.assert_allclose(traj[:, crystalliser.C_A] + traj[:, crystalliser.S_A], 6.0, rtol=1e-12)
    np.testing.assert_allclose(traj[:, crystalliser.C_I] + traj[:, crystalliser.S_I], 2.5, rtol=1e-12)
    assert float(out.crystal_mass) > 80.0  # most of the product crystallised
    # the liquor ends near saturation at the end temperature
    end_sat = float(crystalliser.solubility(jnp.float64(5.0), c64.crystalliser))
    assert end_sat < float(out.final[crystalliser.C_P]) < 1.3 * end_sat


def test_growth_only_keeps_the_seeds_monodisperse(c64: Constants) -> None:
    """No nucleation: every seed grows by the same length, so d50 is the size of one grown seed."""
    out = _crystallise(c64, nucleation_rate=0.0)
    cc = c64.crystalliser
    count = float(cc.seed_loading / (crystalliser.mass_per_moment(cc) * cc.seed_size**3))
    size = (float(out.crystal_mass) / (float(crystalliser.mass_per_moment(cc)) * count)) ** (1 / 3)
    assert float(out.final[crystalliser.M0]) == pytest.approx(count, rel=1e-12)
    assert float(out.d50) == pytest.approx(size, rel=1e-4)
    assert float(out.d50) > 100.0


def test_van_t_hoff_and_d50_of_a_lognormal(c64: Constants) -> None:
    cc = c64.crystalliser
    assert float(crystalliser.solubility(jnp.float64(25.0), cc)) == pytest.approx(27.0)
    temps = jnp.asarray([0.0, 20.0, 40.0, 60.0])
    ln = np.log(np.asarray(crystalliser.solubility(temps, cc)))
    inv = 1.0 / (np.asarray(temps) + KELVIN)
    slope = np.diff(ln) / np.diff(inv)
    np.testing.assert_allclose(slope, -35.0 / GAS_CONSTANT, rtol=1e-10)
    # lognormal number density, median exp(m), log-sd s: mass median exp(m + 3 s^2) (Hatch-Choate)
    m, s = math.log(80.0), 0.4
    mu = [math.exp(k * m + 0.5 * k * k * s * s) for k in range(4)]
    assert float(crystalliser.d50_from_moments(*map(jnp.float64, mu[1:]))) == pytest.approx(
        math.exp(m + 3 * s * s), rel=1e-12
    )
