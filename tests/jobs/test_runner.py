"""Tests of the serial and local-process runners, recording into a temporary store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from decisions.kit.spec import expand_sweep
from decisions.platform.runner import JobOutcome, LocalProcessRunner, Runner, SerialRunner
from decisions.store import RunStatus, dispose_engines, list_runs, recorded_run


def toy_job(config: dict[str, Any]) -> float:
    """Record a run of x**2 into the store at config["db_url"]; fail when asked to."""
    x = float(config["x"])
    with recorded_run("toy", f"x={x}", config, url=config["db_url"], sweep_id=config.get("sweep_id")) as run:
        if config.get("fail"):
            raise ValueError(f"bad x {x}")
        run.log_metrics({"square": x * x})
    return x * x


@pytest.fixture
def db_url(tmp_path: Path) -> Iterator[str]:
    """A temporary SQLite store."""
    yield f"sqlite:///{tmp_path / 'runs.db'}"
    dispose_engines()


def _sweep(db_url: str, *, fail_x: float | None = None) -> list[dict[str, Any]]:
    spec = {"db_url": db_url, "sweep_id": "s1", "x": 0.0, "sweep": {"x": [1.0, 2.0, 3.0, 4.0]}}
    configs = expand_sweep(spec)
    for config in configs:
        config["fail"] = config["x"] == fail_x
    return configs


def test_local_process_runner_records_a_sweep(db_url: str) -> None:
    calls: list[tuple[int, int]] = []
    configs = _sweep(db_url)
    outcomes = LocalProcessRunner(2).run(
        toy_job, configs, progress=lambda done, total: calls.append((done, total))
    )

    assert [o.result for o in outcomes] == [1.0, 4.0, 9.0, 16.0]  # in config order
    assert all(o.ok and o.error is None for o in outcomes)
    assert [o.config for o in outcomes] == configs
    assert calls == [(1, 4), (2, 4), (3, 4), (4, 4)]

    runs = list_runs(sweep_id="s1", url=db_url)
    assert len(runs) == 4
    assert all(run.status is RunStatus.SUCCEEDED for run in runs)
    assert sorted(run.latest_metrics()["square"] for run in runs) == [1.0, 4.0, 9.0, 16.0]


@pytest.mark.parametrize("runner", [SerialRunner(), LocalProcessRunner(2)], ids=["serial", "processes"])
def test_failing_job_does_not_stop_the_others(db_url: str, runner: Runner) -> None:
    outcomes: list[JobOutcome[float]] = runner.run(toy_job, _sweep(db_url, fail_x=2.0))

    assert [o.ok for o in outcomes] == [True, False, True, True]
    failed = outcomes[1]
    assert failed.result is None
    assert failed.error == "ValueError: bad x 2.0"
    assert failed.traceback is not None and "toy_job" in failed.traceback
    assert [o.result for o in outcomes if o.ok] == [1.0, 9.0, 16.0]

    runs = {run.name: run for run in list_runs(url=db_url)}
    assert len(runs) == 4
    assert runs["x=2.0"].status is RunStatus.FAILED
    assert runs["x=2.0"].error == "ValueError: bad x 2.0"
    assert [runs[f"x={x}"].status for x in (1.0, 3.0, 4.0)] == [RunStatus.SUCCEEDED] * 3


def test_serial_runner_passes_copies(db_url: str) -> None:
    def mutating_job(config: dict[str, Any]) -> int:
        config["x"] = 99
        return 1

    configs = [{"x": 1}]
    (outcome,) = SerialRunner().run(mutating_job, configs)
    assert outcome.result == 1
    assert configs == [{"x": 1}] and outcome.config == {"x": 1}


def test_local_process_runner_rejects_lambdas_and_handles_empty_input() -> None:
    runner = LocalProcessRunner(2)
    with pytest.raises(TypeError, match="module-level function"):
        runner.run(lambda config: 1, [{"x": 1}])
    assert runner.run(toy_job, []) == []
    with pytest.raises(ValueError, match="max_workers"):
        LocalProcessRunner(0)
