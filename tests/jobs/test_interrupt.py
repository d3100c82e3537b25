"""Stopping jobs: Ctrl-C or SIGTERM stops a sweep (running points interrupted, queued ones cancelled)
and a single job, with every started run recorded; a job killed with ``kill -9`` reads back as lost.

The runner tests use toy jobs in worker processes; the command-line tests start ``decisions run``
as a real process on the wealth domain's smoke spec, with the store in ``tmp_path``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from decisions.platform.interrupt import JobsInterrupted, Terminated, raise_on_sigterm
from decisions.platform.runner import CANCELLED, INTERRUPTED, LocalProcessRunner, RunnerStopped, SerialRunner
from decisions.store import RunStatus, dispose_engines, get_run, list_runs, recorded_run
from tests.helpers import stored_statuses, wait_for

STOP_WITHIN_S = 20.0
"""How soon a stopped ``decisions run`` must have exited."""


def toy_job(config: dict[str, Any]) -> int:
    """Record a run; point 0 ends at once, the others run (sleeping) until stopped."""
    with recorded_run("toy", f"x={config['x']}", config, url=config["db_url"], sweep_id="s1"):
        if config.get("interrupt_at") == config["x"]:
            raise KeyboardInterrupt
        deadline = time.monotonic() + (0 if config["x"] == 0 or config.get("quick") else 120)
        while time.monotonic() < deadline:
            time.sleep(0.02)
    return config["x"]


@pytest.fixture
def db_url(tmp_path: Path) -> Iterator[str]:
    """A temporary SQLite store."""
    yield f"sqlite:///{tmp_path / 'runs.db'}"
    dispose_engines()


def test_stopping_a_process_sweep_interrupts_running_points_and_cancels_queued_ones(
    db_url: str, tmp_path: Path
) -> None:
    configs = [{"x": x, "db_url": db_url} for x in range(6)]

    def stop_when_two_run(done: int, total: int) -> None:  # point 0 ended: wait for points 1, 2 to run
        wait_for(lambda: stored_statuses(tmp_path / "runs.db").count("running") == 2, 60, "two running runs")
        raise Terminated(signal.SIGTERM)

    started = time.monotonic()
    with pytest.raises(RunnerStopped) as stopped:
        LocalProcessRunner(2, stop_grace_s=10).run(toy_job, configs, progress=stop_when_two_run)
    assert time.monotonic() - started < 60
    outcomes = stopped.value.outcomes
    assert stopped.value.signum == signal.SIGTERM
    assert [o.stopped for o in outcomes] == [None, INTERRUPTED, INTERRUPTED, CANCELLED, CANCELLED, CANCELLED], [
        (o.stopped, o.error) for o in outcomes]
    assert outcomes[0].result == 0 and outcomes[0].ok
    assert outcomes[1].error == "interrupted: Terminated: stopped by signal SIGTERM"
    runs = {run.name: run for run in list_runs(url=db_url)}
    assert sorted(runs) == ["x=0", "x=1", "x=2"]  # the queued points never started
    assert [runs[f"x={x}"].status for x in range(3)] == [RunStatus.SUCCEEDED, *[RunStatus.INTERRUPTED] * 2]
    assert runs["x=1"].error == "Terminated: stopped by signal SIGTERM"


def test_stopping_a_serial_sweep_interrupts_the_running_job_and_cancels_the_rest(db_url: str) -> None:
    configs = [{"x": x, "db_url": db_url, "quick": True, "interrupt_at": 1} for x in range(4)]
    with pytest.raises(RunnerStopped) as stopped:
        SerialRunner().run(toy_job, configs)
    assert [o.stopped for o in stopped.value.outcomes] == [None, INTERRUPTED, CANCELLED, CANCELLED]
    assert stopped.value.signum == signal.SIGINT
    assert [run.status for run in list_runs(url=db_url)] == [RunStatus.INTERRUPTED, RunStatus.SUCCEEDED]


def test_the_summary_line_and_exit_code() -> None:
    sweep = JobsInterrupted([3, 4], 5, sweep_id="abc", signum=signal.SIGTERM)
    assert sweep.summary() == "interrupted: 2 running points stopped (runs 3, 4), 5 queued points cancelled (sweep abc)"
    assert sweep.exit_code == 143
    job = JobsInterrupted([7], 0, sweep_id=None, signum=signal.SIGINT)
    assert (job.summary(), job.exit_code) == ("interrupted: 1 running job stopped (run 7)", 130)
    assert JobsInterrupted([], 0, sweep_id=None, signum=2).summary().startswith("interrupted: the job was stopped")
    assert JobsInterrupted([], 1, sweep_id="s", signum=2).summary() == (
        "interrupted: 0 running points stopped, 1 queued point cancelled (sweep s)"
    )


@pytest.fixture
def sigterm_raises() -> Iterator[None]:
    """``raise_on_sigterm()`` for one test; the handler and ``sys.unraisablehook`` are put back after."""
    previous, hook = signal.getsignal(signal.SIGTERM), sys.unraisablehook
    raise_on_sigterm()
    yield
    signal.signal(signal.SIGTERM, previous)
    sys.unraisablehook = hook


def test_sigterm_raises_terminated(sigterm_raises: None) -> None:
    with pytest.raises(Terminated, match="SIGTERM") as raised:
        os.kill(os.getpid(), signal.SIGTERM)
    assert isinstance(raised.value, KeyboardInterrupt) and raised.value.signum == signal.SIGTERM


class _SignalledWhileCollected:
    """An object whose ``__del__`` is running when SIGTERM arrives: Python ignores what it raises."""

    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.01)  # the handler runs here and raises Terminated inside __del__


def test_an_interrupt_raised_inside_a_destructor_is_delivered_again(sigterm_raises: None) -> None:
    with pytest.raises(Terminated):
        _SignalledWhileCollected()  # collected at once: the first Terminated is swallowed
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            time.sleep(0.01)


def test_an_interrupt_waits_until_a_store_call_has_ended(sigterm_raises: None) -> None:
    namespace: dict[str, Any] = {"__name__": "decisions.store.writing", "os": os, "signal": signal, "time": time}
    exec(  # a function of a store module, signalled half way
        "def write(done):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    time.sleep(0.2)\n"
        "    done.append(True)\n",
        namespace,
    )
    done: list[bool] = []
    with pytest.raises(Terminated):
        namespace["write"](done)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            time.sleep(0.01)
    assert done == [True]  # not cut short: the interruption came after it


# --- the command line, as a real process -------------------------------------------------------


def _toml(value: Any) -> str:
    """A TOML value (inline tables for nested tables)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key} = {_toml(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value) if isinstance(value, str) else repr(value)


SINGLE_JOB_PATHS = 200_000
"""Evaluation paths of the single-job tests: a few seconds more of running than the smoke spec's 500, so the
job cannot finish between the test seeing it running and the signal (it once did, on a loaded machine)."""


def _write_spec(tmp_path: Path, sweep: dict[str, list[Any]] | None = None, paths: int | None = None) -> Path:
    """The wealth domain's smoke spec (a job of seconds) as a TOML file, with an optional sweep and number of
    evaluation paths."""
    from decisions.platform.registry import get

    spec: dict[str, Any] = {section: dict(table) for section, table in get("wealth").smoke_spec.items()}
    spec["job"]["kind"] = "wealth"
    if paths is not None:
        spec["evaluation"]["paths"] = paths
    if sweep:
        spec["sweep"] = {f'"{key}"': values for key, values in sweep.items()}
    text = "".join(
        f"[{section}]\n" + "".join(f"{key} = {_toml(value)}\n" for key, value in table.items())
        for section, table in spec.items()
    )
    path = tmp_path / "job.toml"
    path.write_text(text)
    return path


def _start(tmp_path: Path, spec: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "DECISIONS_DB_URL": f"sqlite:///{tmp_path / 'runs.db'}", "COLUMNS": "200"}
    return subprocess.Popen(
        [sys.executable, "-m", "decisions.cli", "run", str(spec), *args],
        env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _when_running(tmp_path: Path, process: subprocess.Popen[str]) -> None:
    """Wait until the process has recorded a run that is still running."""

    def running() -> bool:
        if process.poll() is not None:
            pytest.fail(f"decisions run ended early: {process.communicate()}")
        return "running" in stored_statuses(tmp_path / "runs.db")

    wait_for(running, 120, "a running run")


def _stop(process: subprocess.Popen[str], signum: int) -> tuple[int, str]:
    """Send ``signum``; the process must exit within ``STOP_WITHIN_S``. Returns exit code and stderr."""
    process.send_signal(signum)
    try:
        _, err = process.communicate(timeout=STOP_WITHIN_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail(f"decisions run still running {STOP_WITHIN_S} s after the signal")
    return process.returncode, err


def test_sigterm_stops_a_sweep_run_from_the_command_line(tmp_path: Path) -> None:
    spec = _write_spec(tmp_path, sweep={"evaluation.paths": [400, 500, 600, 700]})
    process = _start(tmp_path, spec, "--workers", "2")
    _when_running(tmp_path, process)
    code, err = _stop(process, signal.SIGTERM)

    assert code == 128 + signal.SIGTERM, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    found = re.fullmatch(
        r"interrupted: (\d+) running points? stopped(?: \(runs? [\d, ]+\))?, (\d+) queued points? cancelled "
        r"\(sweep \w+\)", lines[0])
    assert found, lines[0]
    statuses = stored_statuses(tmp_path / "runs.db")
    assert "running" not in statuses
    assert int(found.group(1)) == statuses.count("interrupted") >= 1
    assert int(found.group(1)) + int(found.group(2)) + statuses.count("succeeded") == 4


def test_sigterm_stops_a_single_job_and_records_it_interrupted(tmp_path: Path) -> None:
    process = _start(tmp_path, _write_spec(tmp_path, paths=SINGLE_JOB_PATHS))
    _when_running(tmp_path, process)
    code, err = _stop(process, signal.SIGTERM)

    assert code == 128 + signal.SIGTERM, err
    assert err.strip() == "interrupted: 1 running job stopped (run 1)", err
    assert stored_statuses(tmp_path / "runs.db") == ["interrupted"]
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    try:
        assert get_run(1, url=url).error == "Terminated: stopped by signal SIGTERM"
    finally:
        dispose_engines()


def test_a_job_killed_with_sigkill_is_shown_lost_and_reaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from decisions.cli import app

    process = _start(tmp_path, _write_spec(tmp_path, paths=SINGLE_JOB_PATHS))
    _when_running(tmp_path, process)
    process.kill()
    process.communicate()
    assert stored_statuses(tmp_path / "runs.db") == ["running"]  # nobody could record its end

    monkeypatch.setenv("DECISIONS_DB_URL", f"sqlite:///{tmp_path / 'runs.db'}")
    monkeypatch.setenv("DECISIONS_LOST_AFTER_S", "1")
    monkeypatch.setenv("COLUMNS", "200")
    cli = CliRunner()
    try:
        listed = cli.invoke(app, ["runs", "list"])
        assert listed.exit_code == 0 and " lost " in listed.output, listed.output
        shown = cli.invoke(app, ["runs", "show", "1"])
        assert f"lost: process {process.pid} on" in shown.output, shown.output
        reaped = cli.invoke(app, ["runs", "reap"])
        assert reaped.exit_code == 0
        assert reaped.output.startswith(f"marked run 1 (wealth/smoke) lost: process {process.pid} on"), reaped.output
        assert stored_statuses(tmp_path / "runs.db") == ["lost"]
        assert cli.invoke(app, ["runs", "reap"]).output.startswith("no lost runs")
    finally:
        dispose_engines()
