"""Building inputs beyond float32 or physical range are refused with one line naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from decisions.energy.building.scenario import Scenario
from decisions.errors import InputError
from tests.helpers import assert_input_error


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"battery": {"capacity_kwh": 1e308}}, "scenario.battery.capacity_kwh"),
        ({"battery": {"capacity_kwh": 1e20}}, "scenario.battery.capacity_kwh"),
        ({"battery": {"power_kw": 1e20}}, "scenario.battery.power_kw"),
        ({"battery": {"capacity_fade": 1e20}}, "scenario.battery.capacity_fade"),
        ({"carbon_price": 1e308}, "scenario.carbon_price"),
        ({"reward_scale": 1e20}, "scenario.reward_scale"),
    ],
)
def test_huge_numbers_are_refused(data: dict, field: str) -> None:
    assert_input_error(Scenario.parse, data, field=field, words="out of range")


def test_tiny_positive_number_that_rounds_to_zero_is_refused() -> None:
    assert_input_error(
        Scenario.parse, {"battery": {"capacity_kwh": 1e-60}}, field="scenario.battery.capacity_kwh", words="rounds to 0"
    )


def test_episode_hours_cannot_exceed_the_data_year() -> None:
    assert_input_error(Scenario.parse, {"episode_hours": 10**12}, field="scenario.episode_hours", words="8760")


@pytest.mark.parametrize(
    ("bad", "field", "words"),
    [
        (float("nan"), "scenario.tariff.prices.5", "nan is not finite"),
        (float("inf"), "scenario.tariff.prices.5", "inf is not finite"),
        (1e308, "scenario.tariff.prices.5", "out of range"),  # beyond float32: refused as any float input is
        (1e20, "scenario.tariff.prices", "row 7: price 1e+20 is out of range"),  # beyond a price's own limit
    ],
)
def test_inline_price_series_with_bad_price_is_refused(bad: float, field: str, words: str) -> None:
    prices = [0.2] * 8760
    prices[5] = bad
    with pytest.raises(InputError) as info:
        Scenario.parse({"tariff": {"kind": "series", "prices": prices}})
    assert info.value.field == field
    assert words in info.value.problem


@pytest.mark.parametrize("cell", ["1e20", "1e308", "inf"])
def test_price_csv_with_huge_price_is_refused(tmp_path: Path, cell: str) -> None:
    cells = ["0.2"] * 8760
    cells[3] = cell
    path = tmp_path / "prices.csv"
    path.write_text("price\n" + "\n".join(cells) + "\n")
    error = assert_input_error(Scenario.parse, {"tariff": {"kind": "csv", "path": str(path)}}, field="scenario.tariff.path")
    assert error.problem.startswith("row 5:")


def test_large_valid_battery_is_accepted() -> None:
    scenario = Scenario.parse({"battery": {"capacity_kwh": 1e6, "power_kw": 1e6}})
    constants = scenario.battery_constants()
    assert constants["capacity"][0] == 1e6 and constants["power"][0] == 1e6
