"""decisions.core.optimal guards: silent HiGHS, a default time limit, bad numbers refused before the hand-over."""

from __future__ import annotations

import math
import subprocess
import sys
import time
from collections.abc import Callable

import pyomo.environ as pyo
import pytest

from decisions.core import optimal
from decisions.core.optimal import SolveError, SolveStatus, check_model_numbers, solve


def _chain_lp(n: int = 400, constant: float = 1.0) -> pyo.ConcreteModel:
    """max sum x_i  s.t.  x_i + x_{i+1} <= constant,  0 <= x_i <= 1 (a few hundred rows)."""
    m = pyo.ConcreteModel(name="chain")
    m.I = pyo.RangeSet(0, n - 1)
    m.x = pyo.Var(m.I, bounds=(0.0, 1.0))
    m.pair = pyo.Constraint(pyo.RangeSet(0, n - 2), rule=lambda b, i: b.x[i] + b.x[i + 1] <= constant)
    m.value = pyo.Objective(expr=sum(m.x[i] * (1.0 + 0.001 * i) for i in m.I), sense=pyo.maximize)
    return m


class _RecordingHighs(optimal.Highs):
    calls: list[dict[str, object]] = []

    def solve(self, model: pyo.Block, **kwargs: object) -> object:
        _RecordingHighs.calls.append(kwargs)
        return super().solve(model, **kwargs)


def test_highs_runs_silent_under_the_default_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(optimal, "Highs", _RecordingHighs)
    _RecordingHighs.calls.clear()
    result = solve(_chain_lp(20))
    assert result.status is SolveStatus.OPTIMAL
    (kwargs,) = _RecordingHighs.calls
    assert kwargs["tee"] is False
    assert kwargs["solver_options"]["output_flag"] is False
    assert kwargs["time_limit"] == optimal.DEFAULT_TIME_LIMIT == 120.0
    solve(_chain_lp(20), time_limit=math.inf)
    assert _RecordingHighs.calls[-1]["time_limit"] is None  # explicitly unlimited


def test_nothing_reaches_the_console(capfd: pytest.CaptureFixture[str]) -> None:
    solve(_chain_lp(50))
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_lp_stopped_by_the_time_limit_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(optimal, "DEFAULT_TIME_LIMIT", 1e-6)
    with pytest.raises(SolveError, match="'chain': HiGHS hit the time limit of 1e-06 s without an optimal solution"):
        solve(_chain_lp())


_NAN_ROWS = """
import pyomo.environ as pyo
from decisions.core.optimal import SolveError, solve

m = pyo.ConcreteModel(name="chain")
m.I = pyo.RangeSet(0, 4999)
m.x = pyo.Var(m.I, bounds=(0.0, 1.0))
nan = float("nan")
# The NaN sits in the body's constant, as in the intrinsic LP's ratchet rows: pyomo accepts it and
# HiGHS would get a NaN row bound for each of the 4999 rows.
m.pair = pyo.Constraint(pyo.RangeSet(0, 4998), rule=lambda b, i: b.x[i] <= nan + b.x[i + 1])
m.value = pyo.Objective(expr=sum(m.x[i] for i in m.I), sense=pyo.maximize)
try:
    solve(m)
except SolveError as exc:
    print(exc)
"""


def test_thousands_of_nan_rows_fail_fast_instead_of_hanging() -> None:
    """The hang of the finding: HiGHS wrote one error line per NaN row into pyomo's output-capture
    pipe while holding the GIL, and blocked for good once the pipe was full. Run in a child
    process, killed after a minute, so a regression fails instead of hanging the suite."""
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-c", _NAN_ROWS], capture_output=True, text=True, timeout=60, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.fail("solve() hung on a model with NaN row bounds")
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1 and "model 'chain': pair[0]: constant: nan is not finite" in lines[0]
    assert "ERROR" not in done.stdout + done.stderr  # nothing from HiGHS
    assert time.perf_counter() - started < 60.0


@pytest.mark.parametrize(
    ("mutate", "words"),
    [
        (lambda m: m.x[3].setub(1e16), "upper bound of x\\[3\\]: 1e\\+16 exceeds 1e\\+15"),
        (lambda m: m.x[2].fix(float("inf")), "fixed value of x\\[2\\]: inf is not finite"),
        (lambda m: setattr(m, "big", pyo.Constraint(expr=1e16 * m.x[0] <= 1)), "big: coefficient of x\\[0\\]"),
        (lambda m: setattr(m, "low", pyo.Constraint(expr=m.x[0] >= -1e18)), "lower bound of low: -1e\\+18"),
    ],
)
def test_bad_model_numbers_name_the_component(mutate: Callable[[pyo.ConcreteModel], None], words: str) -> None:
    m = _chain_lp(10)
    mutate(m)
    with pytest.raises(SolveError, match=words):
        check_model_numbers(m)


def test_infinite_bounds_mean_no_bound() -> None:
    m = _chain_lp(10)
    m.free = pyo.Var(bounds=(-math.inf, math.inf))
    m.tie = pyo.Constraint(expr=m.free == m.x[0])
    check_model_numbers(m)
    assert solve(m).status is SolveStatus.OPTIMAL
