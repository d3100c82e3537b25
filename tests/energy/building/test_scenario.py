"""Scenario validation (one-line InputErrors naming the field), tariffs, price CSVs and splits."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from decisions.energy.building.dataset import load_district
from decisions.energy.building.params import to_params
from decisions.energy.building.scenario import Scenario
from decisions.energy.building.tariff import read_price_csv
from decisions.errors import InputError
from tests.helpers import assert_input_error


@pytest.mark.parametrize(
    ("data", "field", "words"),
    [
        ({"buildings": 18}, "scenario.buildings", "18"),
        ({"buildings": [1, 0]}, "scenario.buildings", "0"),
        ({"buildings": "town"}, "scenario.buildings", "district"),
        ({"buildings": [3, 3]}, "scenario.buildings", "distinct"),
        ({"battery": {"capacity_kwh": -1.0}}, "scenario.battery.capacity_kwh", "greater than 0"),
        ({"battery": {"soc_min": 0.8, "soc_max": 0.2}}, "scenario.battery.soc_max", "must exceed soc_min"),
        ({"battery": {"soc_min": 0.2, "initial_soc": 0.1}}, "scenario.battery.initial_soc", "[0.2, 1.0]"),
        ({"battery": {"charge_efficiency": 1.2}}, "scenario.battery.charge_efficiency", "less than or equal"),
        ({"battery": {"volts": 1}}, "scenario.battery.volts", "Extra inputs"),
        ({"tariff": "flat"}, "scenario.tariff", "'flat'"),
        ({"feed_in_price": 0.3}, "scenario.feed_in_price", "lowest import price 0.21"),
        ({"eval_months": [8, 9]}, "scenario.eval_months", "overlaps train_months at month 8"),
        ({"train_months": [13]}, "scenario.train_months", "13"),
        ({"episode_hours": 24 * 130}, "scenario.episode_hours", "eval_months"),
        ({"episode_hours": 0}, "scenario.episode_hours", "greater than or equal to 1"),
        ({"tariff": {"kind": "series", "prices": [0.2] * 10}}, "scenario.tariff.prices", "expected 8760"),
        ({"tariff": "no/such/prices.csv"}, "scenario.tariff", "file not found: no/such/prices.csv"),
        ({"tariff": {"path": "no/such/prices.csv"}}, "scenario.tariff.csv.path", "file not found"),
        ({"tariff": {"price": 0.3}}, "scenario.tariff", "needs kind"),
    ],
)
def test_bad_input_names_the_field(data: dict, field: str, words: str) -> None:
    assert_input_error(Scenario.parse, data, field=field, words=words)


def test_defaults() -> None:
    s = Scenario.parse({})
    assert s.buildings == (1,) and s.episode_hours == 168
    assert s.train_months == tuple(range(1, 9)) and s.eval_months == (9, 10, 11, 12)
    bat = s.battery_constants()
    assert bat["capacity"][0] == 6.4 and bat["power"][0] == 5.0
    assert bat["charge_efficiency"][0] * bat["discharge_efficiency"][0] == pytest.approx(0.9)
    assert bat["initial_soc"][0] == 0.0 and bat["capacity_fade"][0] == 1e-5
    window = s.eval_window()
    d = load_district()
    assert window.num_hours == 122 * 24
    assert d.dates[window.start_hour].isoformat() == "2016-09-01" and d.hour[window.start_hour] == 1
    assert d.dates[window.stop - 1].isoformat() == "2016-12-31" and d.hour[window.stop - 1] == 24
    assert Scenario.parse({"buildings": "district"}).buildings == tuple(range(1, 18))


def test_overrides_reach_the_params() -> None:
    s = Scenario.parse(
        {
            "buildings": [3, 7],
            "battery": {
                "capacity_kwh": 10,
                "power_kw": 3,
                "soc_min": 0.1,
                "soc_max": 0.9,
                "capacity_fade": 0,
            },
            "feed_in_price": 0.05,
            "carbon_price": 0.2,
        }
    )
    p = to_params(s)
    assert p.load.shape == (8760, 2) and p.num_buildings == 2
    np.testing.assert_allclose(np.asarray(p.capacity), [10, 10])
    np.testing.assert_allclose(np.asarray(p.initial_soc), [0.1, 0.1])
    assert float(p.feed_in_price) == pytest.approx(0.05) and float(p.reward_scale) == 0.5
    np.testing.assert_allclose(np.asarray(p.load[:, 1]), load_district().load[:, 6], rtol=1e-6)


def test_dynamic_tariff_params() -> None:
    s = Scenario(tariff="dynamic")
    prices = s.prices()
    d = load_district()
    assert prices.shape == (8760,) and np.all(np.isfinite(prices))
    assert prices.mean() == pytest.approx(d.price.mean()) and np.ptp(prices) == pytest.approx(np.ptp(d.price))
    assert int(np.argmax(prices)) == int(np.argmax(d.carbon_intensity))
    p = to_params(s)
    np.testing.assert_allclose(np.asarray(p.features[:, 6]), prices, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(p.features[:-24, 9]), prices[24:], rtol=1e-6)  # 24 h forecast


def _csv(values: list[str]) -> str:
    return "price\n" + "\n".join(values) + "\n"


def test_price_csv_round_trip(tmp_path: Path) -> None:
    prices = 0.1 + 0.01 * (np.arange(8760) % 24)
    path = tmp_path / "prices.csv"
    path.write_text(_csv([f"{v:.4f}" for v in prices]))
    np.testing.assert_allclose(read_price_csv(path), prices)
    s = Scenario.parse({"tariff": {"kind": "csv", "path": str(path)}})
    np.testing.assert_allclose(s.prices(), prices)
    assert read_price_csv(io.BytesIO(path.read_bytes() + b"\n\n")).shape == (8760,)  # trailing blank lines


@pytest.mark.parametrize(
    ("cells", "words"),
    [
        (["0.2"] * 4 + ["nan"] + ["0.2"] * 8755, "row 6: 'nan' is not a finite number"),
        (["0.2"] * 2 + [""] + ["0.2"] * 8757, "row 4: '' is not a finite number"),
        (["0.2"] * 9 + ["cheap"] + ["0.2"] * 8750, "row 11: 'cheap' is not a number"),
        (["0.2"] * 7 + ["-0.1"] + ["0.2"] * 8752, "row 9: price -0.1 must be >= 0"),
        (["0.2"] * 100, "has 100 hourly prices, expected 8760 (one year)"),
    ],
)
def test_bad_price_csv(tmp_path: Path, cells: list[str], words: str) -> None:
    path = tmp_path / "prices.csv"
    path.write_text(_csv(cells))
    with pytest.raises(InputError) as err:
        read_price_csv(path)
    assert err.value.field == "tariff.path" and err.value.problem == words
    with pytest.raises(InputError) as err:
        Scenario.parse({"tariff": {"kind": "csv", "path": str(path)}})
    assert err.value.field == "scenario.tariff.path" and err.value.problem == words


def test_price_csv_needs_a_price_column(tmp_path: Path) -> None:
    path = tmp_path / "prices.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match="no price column"):
        read_price_csv(path)
    with pytest.raises(InputError, match="file not found"):
        read_price_csv(tmp_path / "missing.csv")


def test_eval_windows_tile_the_held_out_months() -> None:
    windows = Scenario().eval_windows()
    assert len(windows) == 17  # 122 days hold 17 whole weeks
    assert all(b.start_hour >= a.stop for a, b in zip(windows, windows[1:], strict=False))
    months = load_district().month
    assert all(set(months[w.rows]) <= {9, 10, 11, 12} for w in windows)
