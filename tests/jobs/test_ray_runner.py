"""The Ray runner: outcomes in order, a killed worker retried, stops, the CLI's ``--backend ray``, load.

One local Ray cluster (2 CPUs, 127.0.0.1 only, no dashboard) serves the whole module; it is
skipped when Ray is not installed or cannot start. The toy jobs record into a SQLite store in
``tmp_path``; Ray's workers cannot import this module by name (pytest puts its folder on the
path of this process only), so its functions travel by value.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from typer.testing import CliRunner

from decisions.errors import InputError
from decisions.kit.parts import parts_runner, run_parts
from decisions.platform import execute
from decisions.platform.execute import PreparedJob, execute_specs
from decisions.platform.interrupt import raise_on_sigterm
from decisions.platform.ray_cluster import LOOPBACK, probe_address, ray_available, start_local_cluster
from decisions.platform.ray_runner import RayRunner
from decisions.platform.runner import CANCELLED, INTERRUPTED, RunnerStopped
from decisions.store import RunStatus, artifacts_root, dispose_engines, get_engine, list_runs, recorded_run
from tests.helpers import stored_statuses, wait_for
from tests.jobs.test_runner import toy_job

pytestmark = pytest.mark.ray

CLUSTER_CPUS = 2
"""CPUs of the module's local Ray (this machine's cores in CI)."""

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

TIMING_METRICS = ("job_seconds", "train_seconds")
"""Metrics that measure time, hence differ between two runs of the same point."""


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[ModuleType]:
    """A local Ray for the module (started once, shut down at its end); skips when it cannot start."""
    if not ray_available():
        pytest.skip('Ray is not installed (pip install -e ".[ray]")')
    import ray

    if ray.is_initialized():
        pytest.skip("this process is already connected to a Ray cluster")
    temp_dir = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # short: Ray's socket paths must fit in 107 bytes
    try:
        start_local_cluster(CLUSTER_CPUS, temp_dir=temp_dir)
    except InputError as exc:
        shutil.rmtree(temp_dir, ignore_errors=True)
        pytest.skip(f"Ray cannot start here: {exc}")
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        yield ray
    finally:
        ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.fixture
def db_url(tmp_path: Path) -> Iterator[str]:
    """A temporary SQLite store."""
    yield f"sqlite:///{tmp_path / 'runs.db'}"
    dispose_engines()


# --- the runner ------------------------------------------------------------------------------


def test_outcomes_come_back_in_config_order_with_errors_captured(ray_cluster: ModuleType, db_url: str) -> None:
    configs = [{"x": float(x), "db_url": db_url, "sweep_id": "s1", "fail": x == 2} for x in range(6)]
    calls: list[tuple[int, int]] = []

    outcomes = RayRunner().run(toy_job, configs, progress=lambda done, total: calls.append((done, total)))

    assert [o.config for o in outcomes] == configs
    assert [o.result for o in outcomes] == [0.0, 1.0, None, 9.0, 16.0, 25.0]
    assert [o.ok for o in outcomes] == [True, True, False, True, True, True]
    assert outcomes[2].error == "ValueError: bad x 2.0"
    assert outcomes[2].traceback is not None and "toy_job" in outcomes[2].traceback
    assert calls == [(done, 6) for done in range(1, 7)]  # progress reaches the total
    runs = {run.name: run for run in list_runs(sweep_id="s1", url=db_url)}
    assert len(runs) == 6  # the failing job ran once: a job's own error is not retried
    assert runs["x=2.0"].status is RunStatus.FAILED and runs["x=2.0"].error == "ValueError: bad x 2.0"
    assert all(runs[f"x={x}.0"].status is RunStatus.SUCCEEDED for x in (0, 1, 3, 4, 5))


def test_the_address_probe_accepts_a_running_ray(ray_cluster: ModuleType) -> None:
    probe_address(ray_cluster.get_runtime_context().gcs_address)  # joining it is not refused


def test_the_local_cluster_listens_on_loopback_only(ray_cluster: ModuleType) -> None:
    assert ray_cluster.util.get_node_ip_address() == LOOPBACK
    assert [node["NodeManagerAddress"] for node in ray_cluster.nodes()] == [LOOPBACK]
    psutil = pytest.importorskip("psutil", reason="psutil lists the listening sockets")
    own = {process.pid for process in psutil.Process().children(recursive=True)}
    try:
        listening = [
            (conn.pid, conn.laddr.ip)
            for conn in psutil.net_connections(kind="inet")
            if conn.status == psutil.CONN_LISTEN and conn.pid in own
        ]
    except psutil.AccessDenied:
        pytest.skip("the sockets of other processes cannot be listed here")
    assert len(listening) >= 2  # at least the GCS and the raylet
    assert {ip for _, ip in listening} <= {LOOPBACK, f"::ffff:{LOOPBACK}", "::1"}, listening


def sweep_job_killed_once(config: dict[str, Any]) -> int:
    """Stand-in for ``execute_config``: record a run; the first attempt at point 1 waits to be killed."""
    spec = config["spec"]
    with recorded_run("toy", f"x={spec['x']}", spec, url=config["url"], sweep_id=config["sweep_id"]) as run:
        pid_file = Path(spec["pid_file"])
        if spec["x"] == 1 and not pid_file.exists():  # the first attempt: the test kills this process
            pid_file.write_text(str(os.getpid()))
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                time.sleep(0.05)
        run.log_metrics({"x": spec["x"]})
        return run.run_id


def test_a_worker_killed_mid_task_is_retried_and_its_attempt_marked_failed(
    ray_cluster: ModuleType, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid_file = tmp_path / "attempt.pid"
    prepared = [PreparedJob("toy", None, {"x": x, "pid_file": str(pid_file)}, None) for x in range(4)]
    monkeypatch.setattr(execute, "execute_config", sweep_job_killed_once)
    killed: list[int] = []

    def kill_the_first_attempt() -> None:
        deadline = time.monotonic() + 120
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)  # let it write the pid completely
        killed.append(int(pid_file.read_text()))
        os.kill(killed[0], signal.SIGKILL)

    killer = threading.Thread(target=kill_the_first_attempt, daemon=True)
    killer.start()
    outcomes = execute_specs(prepared, url=db_url, runner=RayRunner(max_retries=2))
    killer.join(5)

    assert killed, "the first attempt never started"
    assert all(outcome.error is None for outcome in outcomes), outcomes
    runs = list_runs(url=db_url, limit=100)
    assert len({run.sweep_id for run in runs}) == 1
    succeeded = sorted(run.config["x"] for run in runs if run.status is RunStatus.SUCCEEDED)
    assert succeeded == [0, 1, 2, 3]  # every point once, the killed one retried
    assert sorted(run.id for run in runs if run.status is RunStatus.SUCCEEDED) == sorted(o.run_id for o in outcomes)
    (dead,) = [run for run in runs if run.status is not RunStatus.SUCCEEDED]
    assert dead.status is RunStatus.FAILED and dead.config["x"] == 1 and dead.pid == killed[0]
    assert dead.error is not None and dead.error.startswith(f"WorkerDied: process {killed[0]} on ")
    assert dead.finished_at is not None and not dead.metrics
    assert "running" not in stored_statuses(tmp_path / "runs.db")


def slow_job(config: dict[str, Any]) -> int:
    """Record a run; point 0 ends at once, the others run (in short sleeps) until stopped."""
    with recorded_run("toy", f"x={config['x']}", config, url=config["db_url"], sweep_id="s1"):
        deadline = time.monotonic() + (0 if config["x"] == 0 else 120)
        while time.monotonic() < deadline:
            time.sleep(0.02)
    return config["x"]


@pytest.fixture
def sigterm_raises() -> Iterator[None]:
    """SIGTERM raises ``Terminated`` in this process (as in ``decisions run``) for the test."""
    previous = signal.getsignal(signal.SIGTERM)
    raise_on_sigterm()
    yield
    signal.signal(signal.SIGTERM, previous)


def test_sigterm_interrupts_running_tasks_and_cancels_queued_ones(
    ray_cluster: ModuleType, db_url: str, tmp_path: Path, sigterm_raises: None
) -> None:
    configs = [{"x": x, "db_url": db_url} for x in range(6)]

    def sigterm_when_two_run() -> None:  # point 0 ended, two others run: SIGTERM this process (in ray.wait)
        statuses = lambda: stored_statuses(tmp_path / "runs.db")  # noqa: E731
        wait_for(lambda: "succeeded" in statuses() and statuses().count("running") == 2, 60, "two running runs")
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=sigterm_when_two_run, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(RunnerStopped) as stopped:
        RayRunner(stop_grace_s=20).run(slow_job, configs)
    assert time.monotonic() - started < 60
    assert stopped.value.signum == signal.SIGTERM  # not SIGINT, though Ray re-raises it as KeyboardInterrupt
    outcomes = stopped.value.outcomes
    assert outcomes[0].ok and outcomes[0].result == 0
    assert sorted(str(o.stopped) for o in outcomes[1:]) == sorted([INTERRUPTED] * 2 + [CANCELLED] * 3)
    runs = list_runs(url=db_url)
    assert sorted(run.status.value for run in runs) == ["interrupted", "interrupted", "succeeded"]
    assert {run.error for run in runs if run.status is RunStatus.INTERRUPTED} == {"KeyboardInterrupt: the sweep was stopped"}
    assert "running" not in stored_statuses(tmp_path / "runs.db")


# --- the command line ------------------------------------------------------------------------


def _grid_spec(tmp_path: Path) -> Path:
    """``examples/gas_storage_grid.toml`` with its grid cut to 2 x 2 x 2 points."""
    text = (EXAMPLES / "gas_storage_grid.toml").read_text()
    head = text[: text.index("[sweep]")]
    sweep = (
        '[sweep]\n"scenario.facility.max_inventory" = [500.0, 2000.0]\n'
        '"scenario.prices.volatility" = [0.4, 1.6]\n"scenario.prices.mean_reversion" = [4.0, 30.0]\n'
    )
    path = tmp_path / "grid.toml"
    path.write_text(head + sweep)
    return path


def _recorded_points(url: str) -> dict[tuple[float, float, float], dict[str, Any]]:
    """Each run's metrics (timings left out) and sensitivity tables, by its grid point."""
    points = {}
    for run in list_runs(url=url, limit=100):
        assert run.status is RunStatus.SUCCEEDED, (run.id, run.error)
        scenario = run.config["scenario"]
        key = (scenario["facility"]["max_inventory"], scenario["prices"]["volatility"], scenario["prices"]["mean_reversion"])
        files = {artifact.name: artifact.path for artifact in run.artifacts}
        assert key not in points, f"point {key} recorded twice"
        points[key] = {
            "metrics": {name: value for name, value in run.latest_metrics().items() if name not in TIMING_METRICS},
            "curve_sensitivity": Path(files["curve_sensitivity"]).read_text(),
            "input_sensitivity": Path(files["input_sensitivity"]).read_text(),
        }
    return points


@pytest.mark.slow  # about 2 min on 2 busy cores: four fresh workers compile the SNAPO programs
def test_the_grid_sweep_records_identical_results_with_ray_and_processes(
    ray_cluster: ModuleType, tmp_path: Path
) -> None:
    from decisions.cli import app

    spec = _grid_spec(tmp_path)
    recorded = {}
    for backend in ("process", "ray"):
        url = f"sqlite:///{tmp_path / backend / 'runs.db'}"
        (tmp_path / backend).mkdir()
        result = CliRunner().invoke(
            app, ["run", str(spec), "--backend", backend, "--workers", "2"], env={"DECISIONS_DB_URL": url, "COLUMNS": "200"}
        )
        assert result.exit_code == 0, result.output
        recorded[backend] = _recorded_points(url)
        dispose_engines()

    assert len(recorded["ray"]) == 8
    assert recorded["ray"].keys() == recorded["process"].keys()
    for point, found in recorded["ray"].items():
        assert "value_snapo" in found["metrics"] and "value_intrinsic_lp" in found["metrics"]
        assert found == recorded["process"][point], point  # same seeds: the same numbers, to the bit


def _part(config: dict[str, Any]) -> tuple[int, int]:
    """A job's part: the square of ``x`` and the process that computed it."""
    return config["x"] ** 2, os.getpid()


def test_a_single_jobs_parts_run_as_ray_tasks(ray_cluster: ModuleType) -> None:
    seen: list[tuple[str, int, int]] = []
    with parts_runner(RayRunner()):
        done = run_parts(_part, [{"x": x} for x in range(5)], label="parts", progress=lambda *a: seen.append(a))
    assert [square for square, _ in done] == [0, 1, 4, 9, 16]
    assert os.getpid() not in {pid for _, pid in done}  # in Ray's workers, not here
    assert seen[-1] == ("parts", 5, 5)


def test_bad_backend_options_give_one_line_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from decisions.cli import app
    from decisions.platform import ray_runner

    spec = _grid_spec(tmp_path)
    monkeypatch.setattr(ray_runner, "ray_available", lambda: True)  # the address is checked, installed or not
    cases = {
        ("--backend", "dask"): "backend: unknown backend 'dask'; choose one of process, serial, ray",
        ("--address", "auto"): "address: is used only with backend 'ray', not 'process'",
        ("--backend", "ray", "--address", "head node"): "address: expected 'auto', 'host:port' or 'ray://host:port', got 'head node'",
    }
    for options, line in cases.items():
        result = CliRunner().invoke(app, ["run", str(spec), *options], env={"COLUMNS": "300"})
        assert result.exit_code == 2, result.output
        assert result.output.strip() == f"error: {line}"
    imports = "import sys, decisions.cli, decisions.platform.execute, decisions.platform.ray_runner; print('ray' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", imports], capture_output=True, text=True, timeout=120, check=True)
    assert loaded.stdout.strip() == "False"  # Ray stays optional: nothing imports it before a Ray sweep runs
    monkeypatch.setattr(ray_runner, "ray_available", lambda: False)
    result = CliRunner().invoke(app, ["run", str(spec), "--backend", "ray"], env={"COLUMNS": "300"})
    assert result.exit_code == 2
    assert result.output.strip() == 'error: backend: Ray is not installed (pip install -e ".[ray]")'


# --- load ------------------------------------------------------------------------------------


LOAD_RUNS = 100
LOAD_AT_ONCE = 8


def load_job(config: dict[str, Any]) -> int:
    """One run with metrics at three steps and a file in the store's artifacts folder."""
    url = config["db_url"]
    with recorded_run("load", f"point-{config['x']}", config, url=url, sweep_id=config["sweep_id"]) as run:
        for step in range(3):
            run.log_metrics({"loss": 1.0 / (step + 1), "x": config["x"]}, step=step)
        folder = artifacts_root(url) / f"run-{run.run_id}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "point.txt"
        path.write_text(f"{config['x']}\n")
        run.add_artifact("point", path)
        time.sleep(0.2)  # long enough for the tasks to overlap
        return run.run_id


@pytest.fixture(params=["sqlite", "postgresql"])
def load_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh store: a SQLite file, or the throwaway PostgreSQL server of the ``postgres_url`` fixture."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'runs.db'}"
    else:
        try:
            url = request.getfixturevalue("postgres_url")
        except pytest.FixtureLookupError:
            pytest.skip("no postgres_url fixture in tests/conftest.py")
        from tests.pg_server import reset_database

        reset_database(url)
        yield url
    dispose_engines()


def _peak_overlap(intervals: list[tuple[datetime, datetime]]) -> int:
    """Most intervals that overlap at one moment."""
    events = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    peak = current = 0
    for _, change in events:
        current += change
        peak = max(peak, current)
    return peak


def test_load_8_workers_x_100_runs(ray_cluster: ModuleType, load_store_url: str) -> None:
    configs = [{"x": x, "db_url": load_store_url, "sweep_id": "load"} for x in range(LOAD_RUNS)]
    runner = RayRunner(num_cpus=CLUSTER_CPUS / LOAD_AT_ONCE, memory_mb=64)  # 8 tasks at once on 2 CPUs
    get_engine(load_store_url)  # the driver creates the schema before any task runs, as execute_specs does

    outcomes = runner.run(load_job, configs)

    assert [o.error for o in outcomes] == [None] * LOAD_RUNS
    runs = list_runs(url=load_store_url, limit=10 * LOAD_RUNS)
    assert len(runs) == LOAD_RUNS and len({run.name for run in runs}) == LOAD_RUNS  # none lost, none twice
    assert sorted(run.id for run in runs) == sorted(o.result for o in outcomes)
    assert {run.status for run in runs} == {RunStatus.SUCCEEDED}  # none left running
    for run in runs:
        assert len(run.metrics) == 6 and [a.name for a in run.artifacts] == ["point"]
        assert Path(run.artifacts[0].path).read_text() == f"{run.config['x']}\n"
    assert len({run.pid for run in runs}) >= LOAD_AT_ONCE / 2  # the tasks ran in several workers ...
    peak = _peak_overlap([(run.started_at, run.finished_at) for run in runs if run.started_at and run.finished_at])
    assert peak >= LOAD_AT_ONCE / 2, peak  # ... at the same time
