"""The packaged data: shapes, exact values from the original CSVs, forecasts, calendar and holidays."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from decisions.energy.building import derive
from decisions.energy.building.dataset import NUM_HOURS, load_district, us_federal_holidays
from decisions.energy.building.tariff import dynamic_price

SOURCE = Path("/work/shared/data/citylearn_2022")


def test_shapes_and_dtypes() -> None:
    d = load_district()
    assert d.load.shape == d.solar_per_kw.shape == d.pv.shape == (NUM_HOURS, 17)
    for series in (d.price, d.carbon_intensity, d.temperature, d.direct_irradiance, d.month, d.holiday):
        assert series.shape == (NUM_HOURS,)
    assert d.pv_kw.shape == d.battery_capacity.shape == (17,)
    assert d.forecasts(d.price).shape == (NUM_HOURS, 3)
    assert d.holiday.dtype == bool and not d.load.flags.writeable
    assert load_district() is d  # cached


def test_exact_values_from_the_csvs() -> None:
    d = load_district()
    # Building_1.csv row 0: Month 7, Hour 24, Day Type 7, load 2.2758, solar 0.0.
    assert (d.month[0], d.hour[0], d.day_type[0]) == (7, 24, 7)
    assert d.load[0, 0] == 2.2758
    assert d.load[1, 0] == pytest.approx(0.8511666666666671, abs=1e-6)  # rounded to 1e-6 kWh
    # pricing.csv: 0.22 off-peak, 0.54 at rows 16-20 of the first day.
    assert d.price[0] == 0.22 and d.price[16] == 0.54 and d.price[21] == 0.22
    assert sorted(set(d.price)) == [0.21, 0.22, 0.40, 0.50, 0.54]
    assert d.carbon_intensity[0] == pytest.approx(0.17072441264038085, abs=1e-9)
    assert d.temperature[:3].tolist() == [20.0, 20.1, 19.7]
    # schema.json: 6.4 kWh / 5 kW / 0.9 batteries; PV 4 kW in building 1, 5 kW in building 4.
    assert np.all(d.battery_capacity == 6.4) and np.all(d.battery_power == 5.0)
    assert np.all(d.battery_efficiency == 0.9) and np.all(d.battery_capacity_loss == 1e-5)
    assert d.pv_kw[0] == 4.0 and d.pv_kw[3] == 5.0


def test_pv_is_solar_per_kw_times_installed_kw() -> None:
    d = load_district()
    peak = int(np.argmax(d.solar_per_kw[:, 3]))
    assert d.pv[peak, 3] == pytest.approx(d.solar_per_kw[peak, 3] * 5.0 / 1000.0, rel=1e-12)
    assert d.pv.max() < 6.0 and d.pv.min() >= 0.0


def test_forecasts_are_the_shifted_series() -> None:
    d = load_district()
    f = d.forecasts(d.temperature)
    assert f[0, 0] == d.temperature[6] and f[10, 2] == d.temperature[34]
    assert f[-1, 2] == d.temperature[23]  # wraps around the year, as the original files do


def test_calendar_matches_the_assumed_dates() -> None:
    d = load_district()
    dates = d.dates
    assert dates[0] == date(2016, 7, 31) and dates[1] == date(2016, 8, 1) and dates[-1] == date(2017, 7, 31)
    assert all(day.month == m for day, m in zip(dates, d.month, strict=True))
    assert all(day.isoweekday() == k for day, k in zip(dates, d.day_type, strict=True))


def test_holidays() -> None:
    assert date(2016, 12, 26) in us_federal_holidays(2016)  # Christmas on a Sunday: observed Monday
    assert date(2016, 11, 24) in us_federal_holidays(2016)  # Thanksgiving
    assert date(2017, 1, 2) in us_federal_holidays(2017)  # New Year's Day on a Sunday
    assert date(2017, 5, 29) in us_federal_holidays(2017)  # Memorial Day
    d = load_district()
    assert d.holiday.sum() == 10 * 24
    flagged = {day for day, h in zip(d.dates, d.holiday, strict=True) if h}
    assert date(2016, 9, 5) in flagged and date(2017, 7, 4) in flagged


def test_dynamic_price_keeps_the_tou_mean_and_range() -> None:
    d = load_district()
    p = dynamic_price(d)
    assert p.shape == (NUM_HOURS,)
    assert p.mean() == pytest.approx(d.price.mean(), abs=1e-12)
    assert p.max() - p.min() == pytest.approx(d.price.max() - d.price.min(), abs=1e-12)
    assert p.min() > 0
    assert np.corrcoef(p, d.carbon_intensity)[0, 1] == pytest.approx(1.0)


@pytest.mark.skipif(not SOURCE.exists(), reason="original CityLearn files not available")
def test_packaged_files_are_derived_from_the_source(tmp_path: Path) -> None:
    assert all(derive.check_forecasts(SOURCE).values())
    derive.write_compact(SOURCE, tmp_path)
    packaged = Path(derive.__file__).parent / "data"
    for name in ("loads.csv.gz", "solar.csv.gz", "timeseries.csv.gz"):
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / name), pd.read_csv(packaged / name))
    assert (tmp_path / "buildings.json").read_text() == (packaged / "buildings.json").read_text()
    original = pd.read_csv(SOURCE / "Building_7.csv")["Equipment Electric Power [kWh]"].to_numpy()
    np.testing.assert_allclose(load_district().load[:, 6], original, atol=5e-7)
