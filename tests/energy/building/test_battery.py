"""Battery physics against hand-computed references, and its invariants on random inputs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.energy.building.battery import battery_step

_BAT = {
    "nominal_capacity": 10.0,
    "power": 2.0,
    "charge_efficiency": 0.9,
    "discharge_efficiency": 0.8,
    "soc_min": 0.05,
    "soc_max": 1.0,
    "capacity_fade": 0.0,
}


def _step(fraction: float, energy: float, capacity: float = 10.0, **overrides: float) -> tuple[float, ...]:
    kw = {k: jnp.float32(v) for k, v in {**_BAT, **overrides}.items()}
    out = battery_step(jnp.float32(fraction), jnp.float32(energy), jnp.float32(capacity), **kw)
    return tuple(float(x) for x in out)


@pytest.mark.parametrize(
    ("fraction", "energy", "charge", "discharge", "after"),
    [
        (1.0, 1.0, 2.0, 0.0, 1.0 + 0.9 * 2.0),  # full power for one hour: +eta_c P
        (0.5, 1.0, 1.0, 0.0, 1.0 + 0.9 * 1.0),  # half power
        (3.0, 1.0, 2.0, 0.0, 2.8),  # the action is clipped to [-1, 1]
        (1.0, 9.5, 0.5 / 0.9, 0.0, 10.0),  # stops at soc_max: draws headroom / eta_c
        (-1.0, 5.0, 0.0, 2.0, 5.0 - 2.0 / 0.8),  # full discharge: delivers P, withdraws P / eta_d
        (-1.0, 1.0, 0.0, 0.5 * 0.8, 0.5),  # limited by soc_min: delivers (E - 0.5) eta_d
        (-1.0, 0.5, 0.0, 0.0, 0.5),  # empty (at soc_min): nothing to deliver
        (0.0, 4.0, 0.0, 0.0, 4.0),  # idle
    ],
)
def test_battery_step_references(
    fraction: float, energy: float, charge: float, discharge: float, after: float
) -> None:
    got_charge, got_discharge, got_energy, got_capacity = _step(fraction, energy)
    assert got_charge == pytest.approx(charge, abs=1e-6)
    assert got_discharge == pytest.approx(discharge, abs=1e-6)
    assert got_energy == pytest.approx(after, abs=1e-6)
    assert got_capacity == 10.0


def test_capacity_fade_follows_citylearn() -> None:
    # |dE| = 1.8 kWh: capacity loses fade x C_nominal x |dE| / (2 C) = 1e-3 x 10 x 1.8 / 20.
    _, _, energy, capacity = _step(1.0, 1.0, capacity_fade=1e-3)
    assert capacity == pytest.approx(10.0 - 1e-3 * 10.0 * 1.8 / 20.0, abs=1e-6)
    assert energy == pytest.approx(2.8, abs=1e-6)
    # A full battery that fades keeps its stored energy inside the shrunken band.
    _, _, energy, capacity = _step(-0.01, 10.0, capacity_fade=0.5)
    assert energy <= capacity + 1e-6


def test_invariants_on_random_inputs() -> None:
    n = 4096
    k1, k2, k3, k4 = jax.random.split(jax.random.PRNGKey(0), 4)
    capacity = jax.random.uniform(k1, (n,), minval=1.0, maxval=20.0)
    soc_min = jax.random.uniform(k2, (n,), maxval=0.3)
    soc_max = jnp.minimum(soc_min + 0.2 + jax.random.uniform(k3, (n,)), 1.0)
    energy = capacity * (soc_min + (soc_max - soc_min) * jax.random.uniform(k4, (n,)))
    fraction = jax.random.uniform(jax.random.PRNGKey(5), (n,), minval=-1.5, maxval=1.5)
    power = jnp.full((n,), 3.0)
    eta_c, eta_d = jnp.full((n,), 0.95), jnp.full((n,), 0.9)
    out = battery_step(
        fraction, energy, capacity, nominal_capacity=capacity, power=power, charge_efficiency=eta_c,
        discharge_efficiency=eta_d, soc_min=soc_min, soc_max=soc_max, capacity_fade=jnp.zeros((n,)),
    )
    charge, discharge, after = map(np.asarray, (out.charge, out.discharge, out.energy))
    assert np.all(charge >= 0) and np.all(discharge >= 0) and np.all(charge * discharge == 0)
    assert np.all(charge <= 3.0 + 1e-6) and np.all(discharge <= 3.0 + 1e-6)
    assert np.all(after >= np.asarray(soc_min * capacity) - 1e-5)
    assert np.all(after <= np.asarray(soc_max * capacity) + 1e-5)
    np.testing.assert_allclose(after - np.asarray(energy), 0.95 * charge - discharge / 0.9, atol=1e-5)
