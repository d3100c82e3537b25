"""The monitor's proof on simulated assets (``decisions.platform.drift``): the operator's loop on a domain's
simulator whose model shifts at a known decision alarms soon after the shift, and on the unshifted one
at the stated false-alarm rate; bad arguments are refused naming the field.

The default suite uses run folders holding what deciding reads (the smoke scenario and a rule, no
training); the smoke runs themselves, over five seeds, are ``slow``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import poisson

from decisions.energy.building import DOMAIN as BUILDING
from decisions.energy.building import asset_sim as building_sim
from decisions.energy.building.deployable import deployment, save_deployment
from decisions.energy.building.forecast_error import (
    FORECAST_DAYS,
    IN_CONTROL_BLOCK,
    ForecastErrors,
    bill_forecast,
    in_control,
    seasonal_forecast,
)
from decisions.energy.building.scenario import Scenario as BuildingScenario
from decisions.energy.gas_storage import DOMAIN as GAS
from decisions.energy.gas_storage.scenario import Scenario as GasScenario
from decisions.errors import InputError
from decisions.kit.decide import Decision
from decisions.kit.run_files import SCENARIO_STEM, settings_file
from decisions.platform.drift import (
    BOUNDS,
    DriftBudget,
    drift_figures,
    rate_interval,
    run_trial,
    simulator_of,
)

SHIFT_AT = 30


@pytest.fixture(scope="module")
def gas_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The smoke scenario with the do-nothing policy: tomorrow's spot does not depend on the moves."""
    folder = tmp_path_factory.mktemp("gas_run")
    scenario = GasScenario.parse(GAS.smoke_spec["scenario"], prefix="")
    settings_file(folder, SCENARIO_STEM, scenario)
    pd.DataFrame({"method": ["do_nothing"], "mean": [0.0]}).to_csv(folder / "comparison.csv", index=False)
    days = scenario.horizon
    pd.DataFrame({"lp_net_injection": [0.0] * days, "lp_inventory": [scenario.facility.start_inventory] * days}
                 ).to_csv(folder / "schedule.csv", index=False)
    (folder / "report.json").write_text(json.dumps({"metrics": {}}))
    return folder


@pytest.fixture(scope="module")
def building_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The smoke scenario with the rule-based controller deployed."""
    folder = tmp_path_factory.mktemp("building_run")
    save_deployment(folder / "deployment.msgpack",
                    deployment(BuildingScenario.parse(BUILDING.smoke_spec["scenario"], prefix="")))
    pd.DataFrame({"controller": ["rule_based", "no_battery"], "seed": [math.nan, math.nan],
                  "saving_fraction_of_lp": [0.5, 0.0]}).to_csv(folder / "kpis.csv", index=False)
    (folder / "report.json").write_text(json.dumps({"metrics": {}}))
    return folder


@pytest.mark.parametrize("seed", [0, 1])
def test_gas_storage_alarms_within_the_bound_after_the_volatility_doubles(gas_folder: Path, seed: int) -> None:
    trial = run_trial("gas_storage", gas_folder, simulator_of("gas_storage"), seed=seed, shift_at=SHIFT_AT,
                      decisions=SHIFT_AT + BOUNDS["gas_storage"])
    assert trial.delay is not None and 1 <= trial.delay <= BOUNDS["gas_storage"], trial
    assert trial.first_alarm == SHIFT_AT + trial.delay - 1


def test_gas_storage_unshifted_alarms_at_the_stated_rate(gas_folder: Path) -> None:
    # 200 decisions at one false alarm per 25: about 8 alarms (Poisson); outside 1..19 has chance 1e-3
    arl0, decisions = 25, 200
    trials = [run_trial("gas_storage", gas_folder, simulator_of("gas_storage"), seed=2, decisions=decisions,
                        arl0=arl0)]
    alarms = sum(t.alarms for t in trials)
    expected = len(trials) * decisions / arl0
    assert poisson.cdf(0, expected) < 1e-3 and poisson.sf(19, expected) < 1e-3
    assert 1 <= alarms <= 19, [t.alarm_indices for t in trials]
    assert all(t.first_alarm is None or t.delay == t.first_alarm + 1 for t in trials)


def test_the_building_shift_adds_the_evening_load_to_the_bill(building_folder: Path) -> None:
    idle = Decision(action={"battery": [0.0]}, expected=0.0, value=0.0)
    plain = building_sim.asset_steps(building_folder, seed=0)
    shifted = building_sim.asset_steps(building_folder, seed=0, shift_at=0)
    evening = 0
    for _ in range(48):
        (state, realise), (same, realise_shifted) = next(plain), next(shifted)
        state.pop("prev_net_load_kwh"), same.pop("prev_net_load_kwh")  # the realised hour before: shifted
        assert state == same  # the forecast keeps the old profile
        before, after = realise(idle), realise_shifted(idle)
        if state["hour"] in building_sim.EVENING_HOURS:
            evening += 1
            assert after >= before + building_sim.EXTRA_LOAD_KWH * state["price_usd_per_kwh"] - 1e-4
        else:
            assert after == pytest.approx(before, abs=1e-6)
    assert evening == 2 * len(building_sim.EVENING_HOURS)


def test_the_building_forecast_is_the_mean_of_the_same_hour_of_the_days_before() -> None:
    series = np.arange(2 * 24 * 10, dtype=float).reshape(-1, 2)  # 10 days of 2 homes
    days = FORECAST_DAYS
    row = 24 * days + 5
    expected = np.mean([series[row - 24 * k] for k in range(1, days + 1)], axis=0)
    np.testing.assert_allclose(seasonal_forecast(series, row), expected)
    early = seasonal_forecast(series, 5)  # wraps round to the data's end
    np.testing.assert_allclose(early, np.mean([series[(5 - 24 * k) % 240] for k in range(1, days + 1)], axis=0))


@pytest.mark.parametrize("seed", [0, 1])
def test_the_building_alarms_within_the_bound_after_an_evening_load(building_folder: Path, seed: int) -> None:
    trial = run_trial("building", building_folder, simulator_of("building"), seed=seed, shift_at=SHIFT_AT,
                      decisions=SHIFT_AT + BOUNDS["building"])
    assert trial.delay is not None and trial.delay <= BOUNDS["building"], trial


def test_the_building_unshifted_alarms_at_the_stated_rate(building_folder: Path) -> None:
    # 200 decisions at one false alarm per 25: about 8 alarms (Poisson); above 19 has chance 1e-3
    trial = run_trial("building", building_folder, simulator_of("building"), seed=2, decisions=200, arl0=25)
    assert trial.alarms <= 19, trial.alarm_indices


def test_the_building_bill_interval_holds_the_forecasts_errors_at_that_hour() -> None:
    rows = np.arange(24 * 30)
    load = (1.0 + 2.0 * ((rows % 24 == 5) & (rows // 24 % 2 == 1)))[:, None]  # hour 6 of odd days: 3 kWh
    errors = ForecastErrors.of(load, np.zeros_like(load), rows % 24 + 1, rows)
    assert errors.by_hour[0].size == 30 - FORECAST_DAYS and not errors.by_hour[0].any()  # hour 1: no error
    assert errors.by_hour[5].min() < 0 < errors.by_hour[5].max()  # hour 6 alternates 1 and 3 kWh
    mean, low, high = bill_forecast(np.array([1.0, 1.0, -1.0]), np.array([0.5, 0.5, 0.5]), 0.1,
                                    np.array([1, 6, 1]), errors)
    assert (mean[0], low[0], high[0]) == (0.5, 0.5, 0.5) and mean[2] == pytest.approx(-0.1)
    assert low[1] < mean[1] < high[1]


def test_the_building_in_control_residuals_are_the_training_bills_standardised_by_their_intervals() -> None:
    rng = np.random.default_rng(5)
    rows = np.arange(24 * 60)
    load = (3.0 + rng.normal(0.0, 0.5, rows.size))[:, None]
    pv = np.where(rows % 24 == 12, 20.0, 0.0)[:, None]  # noon exports: a bill of 0 whatever the error
    hour, price = rows % 24 + 1, np.full(rows.size, 0.3)
    errors = ForecastErrors.of(load, pv, hour, rows)
    found = in_control(load, pv, price, 0.0, hour, rows, errors)
    z = np.array(found.residuals)
    assert z.size == (60 - FORECAST_DAYS) * 23 and found.block == IN_CONTROL_BLOCK  # noon left out: no width
    assert np.mean(np.abs(z) <= 1.96) == pytest.approx(0.95, abs=0.015)  # the intervals hold 95% in sample


def test_the_building_monitor_is_calibrated_on_its_policys_residuals(building_folder: Path, tmp_path: Path) -> None:
    from decisions.platform.monitoring import monitor_asset
    from decisions.store import dispose_engines, list_assets

    url = f"sqlite:///{tmp_path / 'drift.db'}"
    try:
        run_trial("building", building_folder, simulator_of("building"), seed=0, decisions=30, url=url)
        (asset,) = list_assets(url=url)
        verdict = monitor_asset(asset.name, arl0=200, url=url)
    finally:
        dispose_engines()
    assert "in-control residuals resampled in blocks of 168 decisions" in verdict.design[-1]
    assert verdict.thresholds["mean"] > 6.0  # N(0, 1) residuals: 4.7


@pytest.mark.parametrize(("change", "field"), [
    ({"domain": "nosuch"}, "domain"),
    ({"run_folder": Path("/nonexistent/run")}, "run_folder"),
    ({"seed": -1}, "seed"),
    ({"decisions": 0}, "decisions"),
    ({"shift_at": 10}, "shift_at"),
    ({"shift_at": -1}, "shift_at"),
    ({"arl0": 5}, "arl0"),
])
def test_bad_arguments_are_refused_naming_the_field(gas_folder: Path, change: dict, field: str) -> None:
    arguments = {"domain": "gas_storage", "run_folder": gas_folder, "seed": 0, "decisions": 10, "shift_at": None,
                 "arl0": 200} | change
    domain = arguments.pop("domain")
    simulate = simulator_of("gas_storage")
    with pytest.raises(InputError) as refused:
        run_trial(domain, arguments.pop("run_folder"), simulate, **arguments)
    assert refused.value.field == field


def test_the_alarm_rate_interval_is_garwoods_exact_poisson_interval() -> None:
    # Garwood's 95% limits for 16 events are 9.1454 and 25.9830 (standard tables); for 0 events 0 and 3.6889
    low, high = rate_interval(16, 2000)
    assert low == pytest.approx(9.1454 / 2000, rel=1e-4) and high == pytest.approx(25.9830 / 2000, rel=1e-4)
    assert rate_interval(0, 1000) == pytest.approx((0.0, 3.6889 / 1000), rel=1e-4)
    for events, exposure, coverage, field in ((-1, 10, 0.95, "events"), (1, 0, 0.95, "exposure"),
                                              (1, 10, 1.0, "coverage")):
        with pytest.raises(InputError) as refused:
            rate_interval(events, exposure, coverage)
        assert refused.value.field == field


def test_drift_figures_refuse_no_seed_and_a_domain_without_a_simulator() -> None:
    with pytest.raises(InputError) as refused:
        drift_figures(())
    assert refused.value.field == "seeds"
    with pytest.raises(InputError) as refused:
        drift_figures((0,), domains=("chronic",))
    assert refused.value.field == "domain"


@pytest.mark.slow
@pytest.mark.parametrize("domain", ["gas_storage", "building"])
def test_on_the_smoke_run_the_alarm_comes_within_the_bound_at_the_stated_rate(domain: str) -> None:
    figures = drift_figures(domains=(domain,), budget=DriftBudget())
    assert figures[f"{domain}_drift_missed"] == 0
    assert figures[f"{domain}_drift_alarm_delay_max"] <= BOUNDS[domain]
    # 5 x 400 decisions at one false alarm per 200: about 10 (Poisson); above 22 has chance 1e-3
    assert figures[f"{domain}_unshifted_alarms"] <= 22, figures
    assert figures[f"{domain}_false_alarm_rate_consistent"] == 1.0, figures
