"""QuantLib's storage engine, assembled from its Python pieces, against its own published test."""

from __future__ import annotations

import math

import pytest

from decisions.energy.gas_storage import quantlib_peer
from decisions.energy.gas_storage.scenario import Scenario, TerminalRule
from decisions.errors import InputError


def test_the_instance_is_quantlibs_test_on_our_daily_grid() -> None:
    scenario = Scenario.parse(quantlib_peer.QUANTLIB_INSTANCE)
    fac = scenario.facility
    assert scenario.horizon == 366 and fac.max_inventory == 50.0 and fac.terminal is TerminalRule.SPOT_VALUE
    assert fac.max_injection == fac.max_withdrawal == 1.0 and fac.injection_cost == fac.withdrawal_cost == 0.0
    assert fac.discount_rate == 0.1 and scenario.prices.level == 3.0
    assert scenario.forward_curve[0] == pytest.approx(math.exp(3.0))


def test_the_elevator_mesh_steps_by_the_rate_from_both_ends() -> None:
    assert quantlib_peer._storage_levels(3.0, 1.0) == [0.0, 1.0, 2.0, 3.0]
    assert quantlib_peer._storage_levels(2.5, 1.0) == [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]


@pytest.mark.parametrize(
    ("facility", "problem"),
    [({"injection_cost": 0.1}, "costs must be 0"), ({"terminal": "required_end_inventory"}, "spot_value"),
     ({"max_withdrawal": 2.0}, "one constant rate")],
)
def test_what_the_engine_cannot_express_is_one_input_error(facility: dict, problem: str) -> None:
    spec = {**quantlib_peer.QUANTLIB_INSTANCE}
    spec["facility"] = {**spec["facility"], **facility}
    with pytest.raises(InputError, match=problem) as caught:
        quantlib_peer.fd_storage_value(Scenario.parse(spec))
    assert caught.value.field == "scenario"


def test_our_assembly_reproduces_quantlibs_published_storage_value() -> None:
    pytest.importorskip("QuantLib")
    assert quantlib_peer.published_test_value() == pytest.approx(quantlib_peer.PUBLISHED_TEST_VALUE, abs=1e-3)


def test_the_value_on_our_grid_converges_as_the_grid_refines() -> None:
    pytest.importorskip("QuantLib")
    scenario = Scenario.parse(quantlib_peer.QUANTLIB_INSTANCE)
    coarse, _ = quantlib_peer.fd_storage_value(scenario, quantlib_peer.COARSE_GRID)
    medium, _ = quantlib_peer.fd_storage_value(scenario, quantlib_peer.FdGrid(100, 2))
    fine, seconds = quantlib_peer.fd_storage_value(scenario, quantlib_peer.FdGrid(200, 2))
    assert abs(fine - medium) < 0.05 and abs(fine - medium) < abs(fine - coarse) and seconds > 0
    assert 69.0 < fine < 70.5  # a year of one-unit-a-day trading in a 50-unit store around a spot of e^3
