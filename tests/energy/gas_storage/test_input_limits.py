"""Gas storage inputs beyond float32 or physical range are refused at the edge; LP failures are clear errors.

The finding: ``max_inventory = 1e308`` passed validation, became ``inf`` in float32 and NaN
bounds in the intrinsic LP, and HiGHS's error log filled pyomo's capture pipe until the job
hung; ``1e20`` ran to meaningless values. Now both are a one-line ``InputError`` naming the
field, and a solver failure is a ``SolveError`` naming the scenario.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from decisions.cli import app
from decisions.core import optimal
from decisions.core.optimal import InfeasibleError, SolveError
from decisions.energy.gas_storage import intrinsic
from decisions.energy.gas_storage import job as gas_job
from decisions.energy.gas_storage.curve_io import load_forward_curve_csv
from decisions.energy.gas_storage.params import to_params
from decisions.energy.gas_storage.scenario import Scenario
from decisions.errors import InputError
from decisions.store import list_runs
from tests.helpers import tiny_gas_spec

CURVE = [20.0, 25.0, 21.0, 30.0, 22.0, 24.0, 27.0, 19.0]



def _spec(**facility: object) -> dict:
    return {
        "job": {"kind": "gas_storage", "name": "limits", "method": "baselines"},
        "scenario": {
            "forward_curve": list(CURVE),
            "facility": {"max_inventory": 100.0, "max_injection": 25.0, "max_withdrawal": 50.0, **facility},
            "prices": {"model": "deterministic"},
        },
        "evaluation": {"paths": 16, "lsmc_paths": 64},
    }


@pytest.mark.parametrize("value", [1e308, 1e20, 1.5e9])
def test_huge_max_inventory_is_refused_quickly_naming_the_field(value: float) -> None:
    started = time.perf_counter()
    with pytest.raises(InputError) as info:
        gas_job.prepare(_spec(max_inventory=value))
    assert time.perf_counter() - started < 5.0
    assert info.value.field == "scenario.facility.max_inventory"
    assert "out of range" in info.value.problem and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("facility", "field"),
    [
        ({"max_injection": 1e20}, "scenario.facility.max_injection"),
        ({"injection_cost": 1e20}, "scenario.facility.injection_cost"),
        ({"start_inventory": 1e-50}, "scenario.facility.start_inventory"),
        (
            {"max_withdrawal": {"inventory": [0.0, 1e308], "rate": [10.0, 20.0]}},
            "scenario.facility.max_withdrawal.inventory.1",
        ),
    ],
)
def test_other_facility_numbers_are_range_checked(facility: dict, field: str) -> None:
    with pytest.raises(InputError) as info:
        gas_job.prepare(_spec(**facility))
    assert info.value.field == field


def test_price_model_numbers_are_range_checked() -> None:
    for prices, field in (
        ({"model": "seasonal_ou", "volatility": 1e20}, "scenario.prices.volatility"),
        ({"model": "seasonal_ou", "mean_reversion": 1e308}, "scenario.prices.mean_reversion"),
        ({"model": "exponential_ou", "initial": 1e20}, "scenario.prices.initial"),
        ({"model": "exponential_ou", "level": 800.0}, "scenario.prices.level"),  # exp(800) is inf
    ):
        with pytest.raises(InputError) as info:
            Scenario.parse({"forward_curve": CURVE, "prices": prices})
        assert info.value.field == field


def test_largest_allowed_values_stay_finite_in_float32() -> None:
    scenario = Scenario.parse(
        {"forward_curve": [1e6, 5e5, 1e6], "facility": {"max_inventory": 1e9, "max_injection": 1e9,
                                                        "max_withdrawal": 1e9}}
    )
    params = to_params(scenario)
    assert all(np.all(np.isfinite(np.asarray(leaf))) for leaf in (params.forward, params.max_inventory))
    result = intrinsic.solve_intrinsic(params)
    assert math.isfinite(result.value) and result.value > 0


@pytest.mark.parametrize("value", ["1e308", "1e20"])
def test_cli_refuses_huge_max_inventory_with_one_line_and_exit_2(tmp_path: Path, store: str, value: str) -> None:
    spec = tmp_path / "job.toml"
    spec.write_text(tiny_gas_spec(curve=", ".join(map(str, CURVE)), name="limits", max_inventory=value, prices="deterministic"))
    result = CliRunner().invoke(app, ["run", str(spec)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.strip().splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert "scenario.facility.max_inventory" in lines[0] and "out of range" in lines[0]
    assert list_runs(url=store) == []


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), 1e20, 1e308])
def test_forward_curve_list_with_nan_inf_or_huge_price_is_refused(bad: float) -> None:
    with pytest.raises(InputError) as info:
        Scenario.parse({"forward_curve": [20.0, bad, 21.0]})
    assert info.value.field.startswith("scenario.forward_curve")


@pytest.mark.parametrize("cell", ["nan", "inf", "-inf", "1e20", "1e308"])
def test_forward_curve_csv_with_nan_inf_or_huge_price_is_refused(tmp_path: Path, cell: str) -> None:
    path = tmp_path / "curve.csv"
    path.write_text(f"date,price\n2026-04-01,20\n2026-04-02,{cell}\n2026-04-03,21\n")
    with pytest.raises(InputError) as info:
        load_forward_curve_csv(path, field="scenario.forward_curve_csv")
    assert info.value.field == "scenario.forward_curve_csv"
    assert info.value.problem.startswith("curve.csv, column 'price', row 3:")
    spec = _spec()
    del spec["scenario"]["forward_curve"]
    spec["scenario"]["forward_curve_csv"] = "curve.csv"
    with pytest.raises(InputError, match="forward_curve_csv: curve.csv, column 'price', row 3"):
        gas_job.prepare(spec, tmp_path)


@pytest.mark.parametrize(("rows", "message"), [
    ("01/04/2026,20\n02/04/2026,21\n", "curve.csv, row 2, column 'date': '01/04/2026' is not an ISO date"),
    ("2026-04-01,20\n2026-04-03,21\n", "curve.csv, row 3, column 'date': 2026-04-03 is not the day after 2026-04-01"),
    ("2026-04-02,20\n2026-04-01,21\n", "curve.csv, row 3, column 'date': 2026-04-01 is not the day after 2026-04-02"),
    ("2026-04-01,20\n2026-04-02,21000\n", "curve.csv, column 'price', row 3: price 21000.0 is above 2000 (is the file"),
], ids=["another-date-format", "a-gap", "out-of-order", "another-unit"])
def test_a_real_world_curve_file_gets_a_clear_answer(tmp_path: Path, rows: str, message: str) -> None:
    """Another date format, a gap, dates out of order, prices in another unit: the file, row and column named."""
    (tmp_path / "curve.csv").write_text(f"date,price\n{rows}")
    spec = _spec()
    del spec["scenario"]["forward_curve"]
    spec["scenario"]["forward_curve_csv"] = "curve.csv"
    with pytest.raises(InputError) as refused:
        gas_job.prepare(spec, tmp_path)
    assert refused.value.field == "scenario.forward_curve_csv" and refused.value.problem.startswith(message)


def test_a_curve_without_a_price_column_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "curve.csv").write_text("date,value,note\n2026-04-01,20,a\n2026-04-02,21,b\n")
    with pytest.raises(InputError) as refused:
        load_forward_curve_csv(tmp_path / "curve.csv", field="scenario.forward_curve_csv")
    assert refused.value.problem == "curve.csv: no price column: expected one of forward, price, forward_price"


def test_a_curve_shorter_than_the_stated_horizon_is_refused(tmp_path: Path) -> None:
    (tmp_path / "curve.csv").write_text("date,price\n2026-04-01,20\n2026-04-02,21\n2026-04-03,22\n")
    spec = _spec()
    del spec["scenario"]["forward_curve"]
    spec["scenario"].update(forward_curve_csv="curve.csv", horizon_days=365)
    with pytest.raises(InputError) as refused:
        gas_job.prepare(spec, tmp_path)
    assert refused.value.field.startswith("scenario") and "horizon" in str(refused.value)


def test_intrinsic_time_limit_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    params = to_params(Scenario())  # the default 365-day problem
    monkeypatch.setattr(optimal, "DEFAULT_TIME_LIMIT", 1e-6)
    with pytest.raises(SolveError) as info:
        intrinsic.solve_intrinsic(params)
    message = str(info.value)
    assert "gas storage scenario (365 days" in message and "time limit" in message
    assert "\n" not in message


def test_infeasible_intrinsic_names_the_scenario() -> None:
    params = to_params(Scenario.parse({"forward_curve": CURVE}))
    unreachable = params.replace(end_inventory=params.max_inventory)  # 8 days at 25 a day cannot fill 1000
    with pytest.raises(InfeasibleError, match="intrinsic LP of the gas storage scenario \\(8 days"):
        intrinsic.solve_intrinsic(unreachable)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_nan_or_inf_parameters_fail_before_highs_sees_them(bad: float) -> None:
    """Validation stops such inputs; this is the solver's own guard (no HiGHS log, no hang)."""
    params = to_params(Scenario.parse({"forward_curve": CURVE}))
    started = time.perf_counter()
    with pytest.raises(SolveError, match="gas storage scenario") as info:
        intrinsic.solve_intrinsic(params, forward=np.array([20.0, bad] + CURVE[2:]))
    assert "not finite" in str(info.value)
    assert time.perf_counter() - started < 10.0


def test_nan_bound_fails_before_highs_sees_it() -> None:
    params = to_params(Scenario.parse({"forward_curve": CURVE}))
    with pytest.raises(SolveError, match="gas storage scenario .*inv\\[1\\].*nan"):
        intrinsic.solve_intrinsic(params.replace(max_inventory=params.max_inventory * float("nan")))
