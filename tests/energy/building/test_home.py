"""A home's own hourly data (``scenario.home``): the example spec, the file's checks (each refusal naming
the file, row and column), the split by days and a tiny job on a small file."""

from __future__ import annotations

import tomllib
from datetime import date
from pathlib import Path

import numpy as np
import pytest

from decisions.energy.building.dataset import load_district
from decisions.energy.building.home import read_home
from decisions.energy.building.params import to_params
from decisions.energy.building.scenario import Scenario, Split
from decisions.energy.building.spec import prepare
from tests.helpers import assert_input_error

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
BATTERY = {"capacity_kwh": 8.0, "power_kw": 4.0}


def _rows(days: int = 3, price: bool = False) -> list[str]:
    """Header and rows of a small own-home file from 2025-03-03 (a Monday), one a line."""
    header = "timestamp,load_kwh,pv_kwh" + (",price_usd_per_kwh" if price else "")
    rows = []
    for i in range(24 * days):
        day, hour = divmod(i, 24)
        sun = max(0.0, 3.0 - abs(hour - 12) * 0.5)
        cells = [f"2025-03-{3 + day:02d} {hour:02d}:00", f"{0.4 + 0.05 * (hour % 7):.3f}", f"{sun:.3f}"]
        rows.append(",".join(cells + ([f"{0.5 if 16 <= hour < 21 else 0.2:.2f}"] if price else [])))
    return [header, *rows]


def _file(tmp_path: Path, lines: list[str], name: str = "home.csv") -> str:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _scenario(path: str, **fields: object) -> dict:
    return {"home": path, "battery": BATTERY, **fields}


def test_the_example_spec_prepares_on_its_file() -> None:
    spec = tomllib.loads((EXAMPLES / "building_own.toml").read_text())
    scenario = prepare(spec, EXAMPLES).scenario
    assert Path(scenario.home) == EXAMPLES / "home_own.csv" and scenario.num_buildings == 1
    data = scenario.data()
    assert data.load.shape == (56 * 24, 1) and data.dates[0] == date(2025, 3, 3)
    window = scenario.eval_window()
    assert (window.start_hour, window.num_hours) == (42 * 24, 14 * 24)  # the last 14 days held out
    assert scenario.battery_constants()["capacity"].tolist() == [10.0]


def test_the_file_fills_the_calendar_and_the_shipped_year_the_rest(tmp_path: Path) -> None:
    home = read_home(_file(tmp_path, _rows()))
    d, shipped = home.district, load_district()
    assert d.hour[:2].tolist() == [1, 2] and d.month[0] == 3 and d.day_type[0] == 1  # Monday 00:00-01:00
    assert d.dates[-1] == date(2025, 3, 5) and home.num_days == 3
    row = int(home.year_rows[13])  # 3 March, 13:00-14:00 in the shipped year
    assert shipped.dates[row] == date(2017, 3, 3) and shipped.hour[row] == 14
    assert d.carbon_intensity[13] == shipped.carbon_intensity[row] and d.temperature[13] == shipped.temperature[row]
    assert d.price[15:20].tolist() == [0.5] * 5 and d.price[14] == 0.21  # time of use on the file's weekdays
    np.testing.assert_allclose(d.pv[12, 0], 3.0)


def test_params_run_on_the_file_split_by_days(tmp_path: Path) -> None:
    scenario = Scenario.parse(_scenario(_file(tmp_path, _rows(4, price=True)), episode_hours=24, eval_days=2))
    train, held = to_params(scenario), to_params(scenario, Split.EVAL)
    assert train.load.shape == (96, 1) and train.features.shape[0] == 96
    assert np.asarray(train.start_hours[: int(train.num_starts)]).tolist() == [0, 24]
    assert np.asarray(held.start_hours[: int(held.num_starts)]).tolist() == [48]  # one row must follow an episode
    np.testing.assert_allclose(np.asarray(train.price[16]), 0.5)  # the file's own price
    assert int(train.month[0]) == 3 and int(train.hour[0]) == 1
    assert (scenario.eval_window().start_hour, scenario.eval_window().num_hours) == (48, 48)


def _drop(lines: list[str], index: int) -> list[str]:
    return lines[:index] + lines[index + 1 :]


def _set(lines: list[str], index: int, column: int, value: str) -> list[str]:
    cells = lines[index].split(",")
    cells[column] = value
    return [*lines[:index], ",".join(cells), *lines[index + 1 :]]


def _in_wh(lines: list[str], column: int) -> list[str]:
    """The file with one kWh column written in Wh."""
    rows = [line.split(",") for line in lines[1:]]
    return [lines[0], *(",".join([*r[:column], f"{float(r[column]) * 1000:g}", *r[column + 1 :]]) for r in rows)]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda r: [line.rsplit(",", 1)[0] for line in r], "home.csv: missing column 'pv_kwh'"),
        (lambda r: _set(r, 5, 1, "lots"), "home.csv, row 6, column 'load_kwh': 'lots' is not a finite number"),
        (lambda r: _set(r, 9, 2, "-0.5"), "home.csv, row 10, column 'pv_kwh': -0.5 is below 0"),
        (lambda r: _in_wh(r, 1), "home.csv, row 2, column 'load_kwh': 400 is above 50 (the file may be in Wh, not kWh"),
        (lambda r: [r[0], r[1], r[3], r[2], *r[4:]],
         "home.csv, row 4, column 'timestamp': 2025-03-03 01:00 does not come after 2025-03-03 02:00"),
        (lambda r: _drop(r, 30), "home.csv, row 31, column 'timestamp': 2025-03-04 06:00 is not one hour after"),
        (lambda r: r[:-1], "home.csv, row 72, column 'timestamp': the last day, 2025-03-05, is partial"),
        (lambda r: [r[0], *r[3:], "2025-03-06 00:00,0.4,0", "2025-03-06 01:00,0.4,0"],
         "home.csv, row 2, column 'timestamp': 2025-03-03 02:00 is not a day's first hour"),
        (lambda r: r[:25], "home.csv: it holds 1 days, expected 2 to 366"),
        (lambda r: _set(r, 7, 0, "03/03/2025 06:00"), "home.csv, row 8, column 'timestamp': '03/03/2025 06:00' is"),
        (lambda r: [r[0]] + [x.replace(",", "-08:00," if i < 30 else "-07:00,", 1) for i, x in enumerate(r[1:])],
         "home.csv, row 32, column 'timestamp': 2025-03-04 06:00-07:00 has another UTC offset"),
    ],
    ids=["missing-column", "bad-value", "negative", "wh-not-kwh", "out-of-order", "missing-hour", "partial-day",
         "not-midnight", "too-short", "not-iso", "daylight-saving"],
)
def test_a_bad_file_is_refused_naming_file_row_and_column(tmp_path: Path, change, words: str) -> None:
    path = _file(tmp_path, change(_rows()))
    assert_input_error(Scenario.parse, _scenario(path), field="scenario.home", words=words)


@pytest.mark.parametrize(("column", "value", "words"), [
    ("price_usd_per_kwh", "23", "row 3, column 'price_usd_per_kwh': 23 is above 10 (the file may be in cents"),
    ("temperature_c", "75", "row 3, column 'temperature_c': 75 is above 60 (the file may be in degrees F"),
    ("carbon_kg_per_kwh", "420", "row 3, column 'carbon_kg_per_kwh': 420 is above 2 (the file may be in g/kWh"),
    ("direct_irradiance_w_m2", "", "row 2, column 'direct_irradiance_w_m2': is empty"),
])
def test_an_optional_column_in_another_unit_is_refused(tmp_path: Path, column: str, value: str, words: str) -> None:
    lines = _rows()
    lines = [f"{lines[0]},{column}", *(f"{line},1" for line in lines[1:])]
    lines = _set(lines, 2, 3, value) if value else _set(lines, 1, 3, "")
    assert_input_error(Scenario.parse, _scenario(_file(tmp_path, lines)), field="scenario.home", words=words)


def test_scenario_settings_that_do_not_fit_an_own_home_are_refused(tmp_path: Path) -> None:
    path = _file(tmp_path, _rows(12))
    priced = _file(tmp_path, _rows(8, price=True), "priced.csv")
    assert_input_error(Scenario.parse, {"home": path, "battery": {"power_kw": 4.0}}, field="scenario.battery",
                       words="capacity_kwh: give the own home's battery capacity in kWh")
    assert_input_error(Scenario.parse, _scenario("no/such/home.csv"), field="scenario.home", words="file not found")
    assert_input_error(Scenario.parse, _scenario(path, eval_days=12), field="scenario.eval_days",
                       words="home.csv holds 12 days: holding out 12 leaves none to train on")
    assert_input_error(Scenario.parse, {"eval_days": 3}, field="scenario.eval_days", words="own home's file")
    assert_input_error(Scenario.parse, _scenario(path, buildings=[2]), field="scenario.buildings",
                       words="leave buildings out")
    assert_input_error(Scenario.parse, _scenario(path), field="scenario.episode_hours",  # 168 h in 3 held-out days
                       words="no day of the held-out days of home.csv (its last 3 of 12) starts 168 consecutive")
    assert_input_error(Scenario.parse, _scenario(path, eval_days=8), field="scenario.episode_hours",
                       words="no day of the training days of home.csv (its first 4 of 12) starts 168 consecutive")
    assert_input_error(Scenario.parse, _scenario(priced, episode_hours=24, feed_in_price=0.3),
                       field="scenario.feed_in_price", words="lowest import price 0.2")
    job = {"job": {"kind": "building"}, "agents": {"names": ["ppo"]}, "evaluation": {"explain": False}}
    for extra, field in (({"eval_months": [12]}, "scenario.eval_months"), ({"buildings": [1]}, "scenario.buildings"),
                         ({"tariff": "dynamic"}, "scenario.tariff")):
        scenario = _scenario(priced, episode_hours=24, **extra)
        assert_input_error(prepare, {**job, "scenario": scenario}, field=field)


@pytest.mark.slow
def test_a_tiny_job_runs_every_controller_on_the_file(tmp_path: Path) -> None:
    from decisions.energy.building import job as building_job
    from decisions.energy.building import spec as building_spec

    path = _file(tmp_path, _rows(10))
    spec = {
        "job": {"kind": "building", "name": "own", "seed": 0},
        "scenario": _scenario(path, episode_hours=48, eval_days=3, relative_reward=True),
        "agents": {"names": ["ppo"], "seeds": 1, "on_policy_steps": 10_752},
        "evaluation": {"explain": False, "include_mpc": True},
    }
    report = building_job.run_job(building_spec.prepare(spec))
    assert report.kpis["controller"].tolist() == ["no_battery", "rule_based", "perfect_foresight", "mpc", "ppo"]
    lp = report.kpis.set_index("controller").loc["perfect_foresight", "cost_usd"]
    assert (report.kpis["cost_usd"] >= lp - 1e-6).all()
    hourly = report.hourly[report.hourly["controller"] == "no_battery"]
    assert len(hourly) == 72 and hourly["date"].dt.date.min() == date(2025, 3, 10)
    assert hourly["hour"].tolist()[:2] == [1, 2] and set(hourly["month"]) == {3}
