"""KPIs: hand-computed values on a synthetic trajectory, 1.0 for the reference, the LP share."""

from __future__ import annotations

import numpy as np
import pytest

from decisions.energy.building.kpis import kpi_table, raw_kpis
from decisions.energy.building.simulate import Trajectory
from decisions.energy.building.windows import Window

WINDOW = Window(721, 48)  # 2016-08-31 hours 1-24 and 2016-09-01 hours 1-24: two days, two months


def _trajectory(net: np.ndarray, cost: np.ndarray, emissions: np.ndarray) -> Trajectory:
    hours = len(net)
    zeros = np.zeros((hours, 1))
    return Trajectory(
        window=WINDOW,
        load=zeros,
        pv=zeros,
        net_load=np.asarray(net, float)[:, None],
        battery=zeros,
        soc=zeros,
        price=np.full(hours, 0.2),
        carbon=np.full(hours, 0.1),
        cost=np.asarray(cost, float),
        emissions=np.asarray(emissions, float),
        reward=-np.asarray(cost, float),
    )


def _net(day1_peak: float, day2_peak: float) -> np.ndarray:
    net = np.concatenate([np.ones(24), 2 * np.ones(24)])
    net[12], net[24 + 18] = day1_peak, day2_peak
    return net


def test_raw_kpis_by_hand() -> None:
    kpis = raw_kpis(_trajectory(_net(3.0, 5.0), np.full(48, 0.5), np.full(48, 0.1)))
    assert kpis["cost"] == pytest.approx(24.0)
    assert kpis["emissions"] == pytest.approx(4.8)
    assert kpis["ramping"] == pytest.approx(2 + 2 + 1 + 3 + 3)  # the two spikes and the step between days
    assert kpis["daily_peak"] == pytest.approx((3 + 5) / 2)
    assert kpis["annual_peak"] == pytest.approx(5.0)
    august = 1 - (23 + 3) / 24 / 3
    september = 1 - (23 * 2 + 5) / 24 / 5
    assert kpis["one_minus_load_factor"] == pytest.approx((august + september) / 2)


def test_table_ratios_reference_and_lp_share() -> None:
    trajectories = {
        "no_battery": _trajectory(_net(3.0, 5.0), np.full(48, 0.5), np.full(48, 0.1)),
        "perfect_foresight": _trajectory(_net(1.0, 2.0), np.full(48, 0.3), np.full(48, 0.08)),
        "rule_based": _trajectory(_net(2.0, 3.0), np.full(48, 0.4), np.full(48, 0.09)),
    }
    table = kpi_table(trajectories)
    ratios = [
        "cost",
        "emissions",
        "ramping",
        "one_minus_load_factor",
        "daily_peak",
        "annual_peak",
        "grid",
        "average_score",
    ]
    assert (table.loc["no_battery", ratios] == 1.0).all()  # exactly: x / x
    assert table.loc["perfect_foresight", "saving_fraction_of_lp"] == 1.0
    assert table.loc["rule_based", "saving_fraction_of_lp"] == pytest.approx(0.5)
    assert table.loc["rule_based", "cost"] == pytest.approx(0.8)
    assert table.loc["rule_based", "annual_peak"] == pytest.approx(3 / 5)
    assert table.loc["perfect_foresight", "ramping"] == pytest.approx(0.0 + 1 / 11)
    row = table.loc["rule_based"]
    grid = np.mean([row["ramping"], row["one_minus_load_factor"], row["daily_peak"], row["annual_peak"]])
    assert row["grid"] == pytest.approx(grid)
    assert row["average_score"] == pytest.approx((row["cost"] + row["emissions"] + grid) / 3)
    assert row["saving_usd"] == pytest.approx(0.1 * 48)


def test_table_errors() -> None:
    t = _trajectory(_net(3.0, 5.0), np.full(48, 0.5), np.full(48, 0.1))
    with pytest.raises(KeyError, match="no_battery"):
        kpi_table({"x": t})
    assert np.isnan(kpi_table({"no_battery": t}, optimum=None).loc["no_battery", "saving_fraction_of_lp"])
    other = Trajectory(**{**t.__dict__, "window": Window(0, 48)})
    with pytest.raises(ValueError, match="different windows"):
        kpi_table({"no_battery": t, "y": other}, optimum=None)
