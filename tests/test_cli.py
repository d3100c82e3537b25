"""CLI: bad input gives one line naming the field and exit code 2; runs are recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from decisions.cli import app
from decisions.store import RunStatus, list_runs
from tests.helpers import tiny_gas_spec

runner = CliRunner()



def _curve(days: int = 20) -> str:
    return ", ".join(str(20.0 + (5.0 if d % 7 in (3, 4) else 0.0)) for d in range(days))


def _write(tmp_path: Path, text: str, name: str = "job.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _one_line_error(result, field: str) -> None:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.strip().splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert field in lines[0]
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("replace", "field"),
    [
        (("max_inventory = 100.0", "max_inventory = -5.0"), "scenario.facility.max_inventory"),
        (("max_injection = 25.0", "max_injection = -1.0"), "scenario.facility.max_injection"),
        (("max_inventory = 100.0", "max_inventory = 100.0\nend_inventory = 100.0\nmax_inventory_x = 1"),
         "scenario.facility.max_inventory_x"),
        (('model = "seasonal_ou"', 'model = "garch"'), "scenario.prices"),
        (("paths = 16", "paths = 0"), "evaluation.paths"),
    ],
)
def test_bad_field_gives_one_line_and_exit_2(tmp_path: Path, store: str, replace, field: str) -> None:
    text = tiny_gas_spec("baselines", _curve()).replace(*replace)
    result = runner.invoke(app, ["run", str(_write(tmp_path, text))])
    _one_line_error(result, field)
    assert list_runs(url=store) == []  # validation happens before any run starts


def test_unreachable_end_inventory(tmp_path: Path, store: str) -> None:
    text = tiny_gas_spec("baselines", _curve(3)).replace(
        "max_inventory = 100.0", "max_inventory = 100.0\nend_inventory = 100.0"
    )
    result = runner.invoke(app, ["run", str(_write(tmp_path, text))])
    _one_line_error(result, "end_inventory")
    assert "unreachable" in result.output


def test_curve_with_nan_or_text(tmp_path: Path, store: str) -> None:
    text = tiny_gas_spec("baselines", _curve()).replace("forward_curve = [", 'forward_curve = ["abc", ')
    _one_line_error(runner.invoke(app, ["run", str(_write(tmp_path, text))]), "scenario.forward_curve")
    csv = tmp_path / "curve.csv"
    csv.write_text("date,price\n2026-04-01,20\n2026-04-02,nan\n2026-04-03,21\n")
    text = tiny_gas_spec("baselines", _curve()).replace(
        "[scenario]\nforward_curve = [" + _curve() + "]", '[scenario]\nforward_curve_csv = "curve.csv"'
    )
    result = runner.invoke(app, ["run", str(_write(tmp_path, text))])
    _one_line_error(result, "forward_curve_csv")
    assert "row 3" in result.output


def test_unreadable_toml(tmp_path: Path, store: str) -> None:
    _one_line_error(runner.invoke(app, ["run", str(_write(tmp_path, "[job\nkind=1"))]), "job.toml")
    _one_line_error(runner.invoke(app, ["run", str(tmp_path / "missing.toml")]), "missing.toml")


def test_baselines_job_is_recorded(tmp_path: Path, store: str) -> None:
    text = tiny_gas_spec("baselines", _curve())
    result = runner.invoke(app, ["run", str(_write(tmp_path, text))])
    assert result.exit_code == 0, result.output
    runs = list_runs(url=store)
    assert len(runs) == 1 and runs[0].status == RunStatus.SUCCEEDED
    metrics = runs[0].latest_metrics()
    assert metrics["value_rolling_intrinsic"] >= metrics["value_do_nothing"]
    shown = runner.invoke(app, ["runs", "show", str(runs[0].id)])
    assert shown.exit_code == 0 and "value_rolling_intrinsic" in shown.output
    listed = runner.invoke(app, ["runs", "list"])
    assert listed.exit_code == 0 and "tiny" in listed.output


def test_unknown_run_id(store: str) -> None:
    _one_line_error(runner.invoke(app, ["runs", "show", "999"]), "999")


def test_failed_run_is_recorded(tmp_path: Path, store: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from decisions.energy.gas_storage import job

    def boom(*args, **kwargs):
        raise RuntimeError("solver exploded")

    monkeypatch.setattr(job, "run_job", boom)
    text = tiny_gas_spec("baselines", _curve())
    result = runner.invoke(app, ["run", str(_write(tmp_path, text))])
    assert result.exit_code == 1
    assert "solver exploded" in result.output and "Traceback" not in result.output
    runs = list_runs(url=store)
    assert len(runs) == 1 and runs[0].status == RunStatus.FAILED
    assert "solver exploded" in (runs[0].error or "")


def test_bench_without_a_name_lists_the_registry_names() -> None:
    from decisions.platform.registry import names

    result = runner.invoke(app, ["bench"])
    _one_line_error(result, "name")
    assert all(name in result.output for name in names())


def test_a_bench_setting_it_does_not_have_is_one_line_error() -> None:
    result = runner.invoke(app, ["bench", "wealth", "--set", "paths=100", "--set", "colour=1"])
    _one_line_error(result, "set")
    assert "'colour' is not a setting" in result.output


def test_unknown_benchmark_lists_the_same_names() -> None:
    from decisions.platform.registry import names

    result = runner.invoke(app, ["bench", "no-such-bench"])
    _one_line_error(result, "name")
    assert all(name in result.output for name in names())


def test_bench_all_with_a_name_or_settings_is_one_line_error() -> None:
    _one_line_error(runner.invoke(app, ["bench", "wealth", "--all"]), "name")
    _one_line_error(runner.invoke(app, ["bench", "--all", "--set", "paths=1"]), "set")
    _one_line_error(runner.invoke(app, ["bench", "wealth", "--merge"]), "merge")  # merging needs --save
    _one_line_error(runner.invoke(app, ["bench", "wealth", "--smoke", "--save"]), "smoke")  # smoke runs are not stored


def test_a_smoke_bench_runs_at_the_smoke_budget_under_the_settings_given(monkeypatch: pytest.MonkeyPatch) -> None:
    from decisions.finance.wealth import bench as wealth_bench
    from decisions.platform import benches

    budgets: list[dict] = []
    monkeypatch.setattr(benches, "run", lambda name, progress, **budget: budgets.append(budget) or {"figure": 1.0})
    result = runner.invoke(app, ["bench", "wealth", "--smoke", "--json", "--set", "paths=100"])
    assert result.exit_code == 0, result.output
    assert budgets == [{**wealth_bench.SMOKE_BUDGET, "paths": 100}] and json.loads(result.output) == {"figure": 1.0}


def test_bench_report_check_passes_when_the_readme_agrees_with_the_stored_results() -> None:
    result = runner.invoke(app, ["bench", "report", "--check"])
    assert result.exit_code == 0, result.output
    assert "agree" in result.output


@pytest.mark.parametrize(
    ("job_table", "problem"),
    [('kind = "no_such_domain"', "unknown domain"), ("", "missing"), ("kind = 3", "unknown domain")],
)
def test_a_bad_or_missing_kind_names_job_kind_and_lists_the_domains(
    tmp_path: Path, store: str, job_table: str, problem: str
) -> None:
    from decisions.platform.registry import names

    result = runner.invoke(app, ["run", str(_write(tmp_path, f'[job]\nname = "x"\n{job_table}\n'))])
    _one_line_error(result, "job.kind")
    assert problem in result.output and all(name in result.output for name in names())


def test_a_spec_without_a_job_table_names_job_kind(tmp_path: Path, store: str) -> None:
    _one_line_error(runner.invoke(app, ["run", str(_write(tmp_path, "[scenario]\nx = 1\n"))]), "job.kind")


def test_sigterm_becomes_keyboard_interrupt_so_the_run_is_recorded_failed():
    import os
    import signal

    from decisions.cli import _interrupt_on_sigterm

    previous = signal.getsignal(signal.SIGTERM)
    try:
        _interrupt_on_sigterm()
        with pytest.raises(KeyboardInterrupt, match="signal"):
            os.kill(os.getpid(), signal.SIGTERM)
    finally:
        signal.signal(signal.SIGTERM, previous)
