"""The fleet's persistence: background load and links that correlate across rounds, batteries that age,
clients that leave and join; without it the independent draws of before, and bad settings refused."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.errors import InputError
from decisions.telecom.splitfl import fleet as fl
from decisions.telecom.splitfl.devices import DeviceScenario
from decisions.telecom.splitfl.model import make_net
from decisions.telecom.splitfl.spec import prepare

TABLE = make_net("cnn").layer_table()


def _params(**devices: Any) -> fl.FleetParams:
    return fl.fleet_params(DeviceScenario(link_jitter=0.5, **devices), TABLE, 32, 2)


def _rollout(p: fl.FleetParams, rounds: int, split: int = 3, seed: int = 0) -> tuple[fl.FleetState, fl.RoundOutcome]:
    """Each round's state (before it) and outcome, stacked on a leading round axis."""
    splits = jnp.full(p.clients, split, jnp.int32)

    def body(state: fl.FleetState, key: jax.Array) -> tuple[fl.FleetState, tuple[fl.FleetState, fl.RoundOutcome]]:
        new, outcome = fl.play_round(key, state, p, splits)
        return new, (state, outcome)

    keys = jax.random.split(jax.random.PRNGKey(seed), rounds)
    _, (states, outcomes) = jax.jit(lambda k: jax.lax.scan(body, fl.reset(jax.random.PRNGKey(seed + 1), p), k))(keys)
    return states, outcomes


def _lag1(x: np.ndarray) -> float:
    """Mean over clients of the lag-1 autocorrelation of ``(rounds, n)`` draws."""
    x = x - x.mean(axis=0)
    return float(np.mean(np.sum(x[1:] * x[:-1], axis=0) / np.sum(x * x, axis=0)))


def test_load_and_links_correlate_across_rounds_only_with_persistence() -> None:
    still, _ = _rollout(_params(), 400)
    moving, _ = _rollout(_params(load_persistence=0.9, link_persistence=0.9), 400)
    for states in (still, moving):  # the same law each round: free share uniform on [0.5, 1], link mean 1
        cpu, link = np.asarray(states.cpu_share), np.asarray(states.link_factor)
        assert cpu.min() >= 0.5 and cpu.max() <= 1.0 and abs(cpu.mean() - 0.75) < 0.03
        assert abs(link.mean() - 1.0) < 0.08
    assert abs(_lag1(np.asarray(still.cpu_share))) < 0.1 and abs(_lag1(np.asarray(still.link_factor))) < 0.1
    assert _lag1(np.asarray(moving.cpu_share)) > 0.7 and _lag1(np.asarray(np.log(moving.link_factor))) > 0.7


def test_without_persistence_the_draws_are_the_independent_ones() -> None:
    p = _params(dropout_prob=0.2)
    state = fl.reset(jax.random.PRNGKey(0), p)
    key = jax.random.PRNGKey(5)
    new, _ = fl.play_round(key, state, p, jnp.full(p.clients, 3, jnp.int32))
    k_miss, k_load = jax.random.split(key)
    k_cpu, k_link = jax.random.split(k_load)
    np.testing.assert_array_equal(new.cpu_share, jax.random.uniform(k_cpu, (p.clients,), minval=0.5, maxval=1.0))
    np.testing.assert_array_equal(new.link_factor, jnp.exp(0.5 * jax.random.normal(k_link, (p.clients,)) - 0.125))
    np.testing.assert_array_equal(new.capacity_j, p.capacity_j)
    assert bool(jnp.all(new.present))


def test_batteries_fade_with_the_energy_they_give() -> None:
    p = _params(battery_fade=0.2)
    states, outcomes = _rollout(p, 30)
    lost = np.asarray(p.capacity_j - states.capacity_j[-1])
    given = np.asarray(outcomes.energy_j[:-1].sum(axis=0))
    np.testing.assert_allclose(lost, 0.2 * given, rtol=0.02)  # float32 sums on 1e6 J batteries
    assert (lost > 0).all()
    assert (np.asarray(states.battery_j) <= np.asarray(states.capacity_j) + 1e-3).all()
    kept, _ = _rollout(_params(), 30)
    np.testing.assert_array_equal(kept.capacity_j[-1], p.capacity_j)


def test_clients_leave_and_fresh_devices_join() -> None:
    p = _params(leave_prob=0.3, join_prob=0.3, battery_fade=0.2)
    states, outcomes = _rollout(p, 200)
    present = np.asarray(states.present)
    assert 0.3 < present.mean() < 0.7  # half the slots enrolled in the long run
    assert not np.asarray(states.available)[~present].any()  # an empty slot never trains
    joined = present[1:] & ~present[:-1]
    capacity = np.asarray(states.capacity_j)[1:]
    np.testing.assert_allclose(capacity[joined], np.broadcast_to(np.asarray(p.capacity_j), capacity.shape)[joined])
    assert not np.asarray(outcomes.participated)[~present].any()


@pytest.mark.parametrize(("devices", "field"), [
    ({"load_persistence": 1.0}, "devices.load_persistence"),
    ({"link_persistence": -0.1}, "devices.link_persistence"),
    ({"battery_fade": 0.9}, "devices.battery_fade"),
    ({"leave_prob": 1.5}, "devices.leave_prob"),
    ({"leave_prob": 0.1}, "devices.join_prob"),  # clients leave and none ever joins
])
def test_bad_persistence_settings_name_the_field(devices: dict[str, float], field: str) -> None:
    with pytest.raises(InputError) as err:
        prepare({"devices": devices})
    assert err.value.field == field and "\n" not in str(err.value)
