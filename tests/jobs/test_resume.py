"""Resuming a stopped job into the same run record (``decisions runs resume``).

A building job killed with ``kill -9`` after its first checkpoint reads back ``lost`` at once,
and ``runs resume`` finishes the same run from the checkpoint with tables and policies equal,
byte for byte, to an uninterrupted run's. The wealth and CoMP jobs hand their trainers checkpoint
files in the run's folder; with ``-m slow``, a wealth run and a CoMP run stopped right after their
first checkpoint continue from it and end as uninterrupted runs do (each compiles its trainer, tens
of seconds). A missing, succeeded, alive or non-resumable run is refused in one line with exit code 2.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from decisions.cli import app
from decisions.kit.checkpoints import SUBFOLDER, checkpoint_file, read_index, resume_point, run_checkpoints
from decisions.platform.execute import ExecutionOutcome, execute_resume, prepare_resume
from decisions.platform.record import execute_domain, run_folder
from decisions.store import RunAliveError, RunStatus, finish_run, get_run, list_runs, log_metrics, start_run
from decisions.store.lifecycle import RunNotResumableError, reopen_run
from decisions.store.repository import RunNotFoundError, add_artifact
from tests.helpers import dead_pid, set_row

runner = CliRunner()




class Stop(Exception):
    """Stands for a process stopped right after a checkpoint was written."""


def _stop_after_first_checkpoint(task: str, seen: list[tuple[str, int]]) -> object:
    """A progress callback that records every report and raises ``Stop`` at ``task``'s first one."""

    def progress(name: str, done: int, total: int) -> None:
        seen.append((name, done))
        if name == task and done < total:
            raise Stop(f"{name} stopped at {done}/{total}")

    return progress


def _one_line_error(result: object, words: str) -> None:
    output = result.output  # type: ignore[attr-defined]
    assert result.exit_code == 2, output  # type: ignore[attr-defined]
    lines = [line for line in output.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in output, output


# ----------------------------------------------------------------------------- refusals


def test_resume_refuses_a_missing_succeeded_or_alive_run_in_one_line(store: str) -> None:
    _one_line_error(runner.invoke(app, ["runs", "resume", "999"]), "run 999 does not exist")
    done = start_run("building", "done", {}, url=store)
    finish_run(done, status="succeeded", url=store)
    _one_line_error(runner.invoke(app, ["runs", "resume", str(done)]), f"run {done} succeeded: there is nothing to resume")
    alive = start_run("building", "alive", {}, url=store)  # this process: alive, fresh heartbeat
    _one_line_error(runner.invoke(app, ["runs", "resume", str(alive)]), f"run {alive} is still running")
    assert get_run(alive, url=store).status is RunStatus.RUNNING


def test_resume_refuses_a_domain_without_checkpoints_and_an_unknown_kind(store: str) -> None:
    gas = start_run("gas_storage", "gas", {}, url=store)
    toy = start_run("toy", "toy", {}, url=store)
    for run_id in (gas, toy):
        set_row(store, run_id, pid=dead_pid())
        assert get_run(run_id, url=store).status is RunStatus.LOST
    _one_line_error(runner.invoke(app, ["runs", "resume", str(gas)]), "gas_storage jobs keep no checkpoints")
    _one_line_error(runner.invoke(app, ["runs", "resume", str(toy)]), "no domain runs kind 'toy'")
    with pytest.raises(RunNotResumableError):
        prepare_resume(gas, url=store)


def test_reopen_makes_a_stopped_run_running_here_and_refuses_the_others(store: str) -> None:
    run_id = start_run("building", "killed", {}, url=store)
    log_metrics(run_id, {"resumed_times": 1.0}, url=store)
    add_artifact(run_id, "half", "/nowhere/half.csv", url=store)
    set_row(store, run_id, pid=dead_pid())
    before = reopen_run(run_id, url=store)
    assert before.status is RunStatus.LOST and before.error.startswith("lost: process")
    after = get_run(run_id, url=store)
    assert (after.status, after.pid, after.error, after.finished_at) == (RunStatus.RUNNING, os.getpid(), None, None)
    assert after.artifacts == () and after.latest_metrics() == {"resumed_times": 1.0}
    with pytest.raises(RunAliveError):
        reopen_run(run_id, url=store)  # now alive: this process records it
    finish_run(run_id, status="succeeded", url=store)
    with pytest.raises(RunNotResumableError):
        reopen_run(run_id, url=store)
    with pytest.raises(RunNotFoundError):
        reopen_run(12345, url=store)


def test_deleting_a_stopped_run_removes_its_checkpoints(store: str) -> None:
    from decisions.store import delete_run

    run_id = start_run("building", "killed", {}, url=store)
    set_row(store, run_id, pid=dead_pid())
    state = run_folder(run_id, None, store) / SUBFOLDER / "ppo-seed0.msgpack"
    state.parent.mkdir(parents=True)
    state.write_bytes(b"state")  # no artifact recorded yet: only its own folder holds files
    assert delete_run(run_id, url=store).folders == (state.parent.parent.resolve(),)
    assert not state.parent.parent.exists()


def test_checkpoint_files_exist_only_inside_a_recorded_run(tmp_path: Path) -> None:
    assert checkpoint_file("ppo-seed0", iterations=4, every=2) is None
    with run_checkpoints(tmp_path / "run-7") as folder:
        path = checkpoint_file("ppo-seed0", iterations=4, every=2, steps_per_iteration=10)
        checkpoint_file("ppo-seed0", iterations=4, every=2, steps_per_iteration=10)  # noted once
        checkpoint_file("sac-seed0", iterations=6, every=3)
        with pytest.raises(ValueError, match="plain file name"):
            checkpoint_file("../escape", iterations=1, every=1)
    assert path == tmp_path / "run-7" / SUBFOLDER / "ppo-seed0.msgpack" and folder == path.parent
    assert [e["name"] for e in read_index(folder)] == ["ppo-seed0", "sac-seed0"]
    point = resume_point(folder, None)  # no checkpoint written yet: the last trainer restarts from 0
    assert (point.current.name, point.from_step, point.lost_steps_max, point.kept_steps) == ("sac-seed0", 0, 3, 0)
    assert checkpoint_file("x", iterations=1, every=1) is None


# ----------------------------------------------------------------------------- building: kill -9, then resume

BUILDING_SPEC = """
[job]
kind = "building"
name = "{name}"

[scenario]
buildings = [1]
relative_reward = true
eval_months = [12]

[agents]
names = ["ppo"]
seeds = 1
on_policy_steps = 64512  # 12 PPO iterations of 5,376 steps: a checkpoint after 6, then 12

[evaluation]
explain = false
"""
PPO_STEPS = 5_376
CHUNK = 6  # PPO iterations between checkpoints: common.chunk_size(12, log_every=10)


def _decisions(*args: str) -> list[str]:
    """The command line of the ``decisions`` CLI in this environment."""
    script = Path(sys.executable).with_name("decisions")
    return [str(script), *args] if script.exists() else [sys.executable, "-m", "decisions.cli", *args]


def _run_id(url: str, name: str, process: subprocess.Popen[bytes], timeout: float) -> int:
    """The id of the run called ``name`` once its process has recorded it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [r.id for r in list_runs(url=url, limit=None) if r.name == name]
        if found:
            return found[0]
        assert process.poll() is None, f"{name}: exited with {process.returncode} before recording its run"
        time.sleep(0.1)
    raise AssertionError(f"{name}: no run recorded within {timeout} s")


def _wait_for(path: Path, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert process.poll() is None, f"exited with {process.returncode} before writing {path}"
        assert time.monotonic() < deadline, f"no {path} within {timeout} s"
        time.sleep(0.05)


def test_a_killed_building_job_is_lost_then_resumes_into_the_same_run_bit_for_bit(
    tmp_path: Path, store: str
) -> None:
    env = {
        **os.environ, "DECISIONS_DB_URL": store, "DECISIONS_HEARTBEAT_S": "0.5",
        "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "jax-cache"),  # the resume reuses the compiled programs
        # XLA_FLAGS is inherited from the suite (tests/conftest.py): the three processes run the same programs
    }
    specs = {}
    for name in ("killed", "reference"):
        specs[name] = tmp_path / f"{name}.toml"
        specs[name].write_text(BUILDING_SPEC.format(name=name))
    logs = {name: (tmp_path / f"{name}.log").open("wb") for name in specs}
    killed, reference = (
        subprocess.Popen(_decisions("run", str(specs[name])), cwd=tmp_path, env=env, stdout=logs[name], stderr=logs[name])
        for name in ("killed", "reference")
    )
    try:
        _kill_resume_and_compare(store, env, tmp_path, killed, reference)
    finally:
        for process in (killed, reference):
            if process.poll() is None:
                process.kill()
                process.wait()
        for log in logs.values():
            log.close()


def _kill_resume_and_compare(
    store: str, env: dict[str, str], tmp_path: Path, killed: subprocess.Popen[bytes], reference: subprocess.Popen[bytes]
) -> None:
    """``kill -9`` the first job after its first checkpoint, resume it, compare it with the second's."""
    from decisions.core.checkpoint import load_metadata

    run_id = _run_id(store, "killed", killed, timeout=120)
    folder = run_folder(run_id, None, store)
    checkpoint = folder / SUBFOLDER / "ppo-seed0.msgpack"
    _wait_for(checkpoint, killed, timeout=300)
    killed.send_signal(signal.SIGKILL)
    assert killed.wait(timeout=30) == -signal.SIGKILL

    done = int(load_metadata(checkpoint)["done"])  # 6, or 12 if the second chunk slipped in before the kill
    assert done in (CHUNK, 2 * CHUNK)
    lost = get_run(run_id, url=store)
    assert lost.status is RunStatus.LOST and f"process {lost.pid}" in lost.error  # at once: its PID is gone
    listed = runner.invoke(app, ["runs", "list", "--status", "lost"])
    assert listed.exit_code == 0 and "killed" in listed.output and "lost" in listed.output

    resumed = subprocess.run(_decisions("runs", "resume", str(run_id)), cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resuming run {run_id} (building/killed): ppo-seed0 from step {done * PPO_STEPS:,}" in resumed.stderr
    assert reference.wait(timeout=300) == 0, (tmp_path / "reference.log").read_text()[-3000:]

    record = get_run(run_id, url=store)
    metrics = record.latest_metrics()
    assert record.status is RunStatus.SUCCEEDED and record.error is None and record.pid != lost.pid
    assert (metrics["resumed_times"], metrics["resumed_from_step"]) == (1.0, done * PPO_STEPS)
    assert metrics["resume_lost_steps_max"] == (CHUNK if done == CHUNK else 0) * PPO_STEPS
    assert metrics["resume_lost_seconds"] >= 0 and not (folder / SUBFOLDER).exists()  # removed once succeeded
    [other] = [r for r in list_runs(url=store) if r.name == "reference"]
    mine = {a.name: Path(a.path) for a in record.artifacts}
    theirs = {a.name: Path(a.path) for a in other.artifacts}
    assert set(mine) == set(theirs) and all(path.parent == folder for path in mine.values())
    for name in ("kpis", "hourly", "training", "policy_ppo_seed0"):
        assert mine[name].read_bytes() == theirs[name].read_bytes(), name
    shown = runner.invoke(app, ["runs", "show", str(run_id)])
    assert shown.exit_code == 0 and f"resumed 1 time: last from step {done * PPO_STEPS:,}" in shown.output


# ----------------------------------------------------------------------------- wealth: the planner's PPO


WEALTH_SPEC = {
    "job": {"kind": "wealth", "name": "planner"},
    "problem": {
        "horizon": 4, "initial_wealth": 100.0, "cash_flows": [5.0, 5.0, 0.0, 0.0],
        "goals": [{"year": 4, "options": [{"cost": 90.0, "utility": 30.0}]}],
    },
    "planner": {"train_problems": 16, "train_steps": 32_768},
    "evaluation": {"paths": 200, "dp": False},
}


def test_the_wealth_job_gives_its_planner_training_a_checkpoint_in_the_run_folder(
    store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from decisions.core.agents.common import TrainResult
    from decisions.finance.wealth import DOMAIN
    from decisions.finance.wealth import job as wealth_job
    from decisions.finance.wealth import study as wealth_study
    from decisions.finance.wealth.planner import default_planner

    given = []

    def trained(problems: int, *, config: object, checkpoint: Path | None, **_: object) -> tuple[object, TrainResult]:
        given.append((checkpoint, read_index(checkpoint.parent) if checkpoint else None))
        planner = default_planner()  # stands for the trained one
        return planner, TrainResult(planner.policy, planner.params, {"episode_return": np.zeros(2)}, 0.0, 32_768)

    monkeypatch.setattr(wealth_study, "train_planner", trained)
    run_id = execute_domain(DOMAIN, wealth_job.prepare(WEALTH_SPEC), url=store)
    checkpoints = run_folder(run_id, None, store) / SUBFOLDER
    [(path, index)] = given
    assert path == checkpoints / "planner-ppo.msgpack"
    assert [(e["name"], e["iterations"], e["every"], e["steps_per_iteration"]) for e in index] == [
        ("planner-ppo", 2, 2, 16_384)
    ]
    assert get_run(run_id, url=store).status is RunStatus.SUCCEEDED and not checkpoints.exists()


@pytest.mark.slow
def test_wealth_planner_training_checkpoints_into_the_run_folder_and_resumes(
    tmp_path: Path, store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from decisions.finance.wealth import DOMAIN
    from decisions.finance.wealth import job as wealth_job
    from decisions.finance.wealth import study as wealth_study

    small = dataclasses.replace(  # 2,048 steps an iteration: 8 iterations, a checkpoint after 4
        wealth_study.DEFAULT_CONFIG, num_envs=64, rollout_steps=32, hidden=(16, 16), minibatches=2, epochs=1, log_every=4
    )
    monkeypatch.setattr(wealth_study, "DEFAULT_CONFIG", small)
    job = wealth_job.prepare({**WEALTH_SPEC, "planner": {"train_problems": 16, "train_steps": 16_384}})
    seen: list[tuple[str, int]] = []
    with pytest.raises(Stop):
        execute_domain(DOMAIN, job, url=store, progress=_stop_after_first_checkpoint("ppo", seen))
    [run] = list_runs(url=store)
    assert run.status is RunStatus.FAILED and "Stop" in run.error
    checkpoints = run_folder(run.id, None, store) / SUBFOLDER
    assert [e["name"] for e in read_index(checkpoints)] == ["planner-ppo"]
    assert (checkpoints / "planner-ppo.msgpack").is_file()

    prepared = prepare_resume(run.id, url=store)
    assert (prepared.point.current.name, prepared.point.from_step) == ("planner-ppo", 4 * 2048)
    seen.clear()
    outcome = execute_resume(prepared, url=store, progress=lambda t, d, n: seen.append((t, d)))
    assert outcome == ExecutionOutcome(run.id, None)
    assert [d for t, d in seen if t == "ppo"] == [8]  # continued from iteration 4: only the second chunk ran
    record = get_run(run.id, url=store)
    assert record.status is RunStatus.SUCCEEDED and record.latest_metrics()["resumed_from_step"] == 4 * 2048
    assert "planner" in {a.name for a in record.artifacts} and not checkpoints.exists()

    fresh = get_run(execute_domain(DOMAIN, job, url=store), url=store)  # uninterrupted: the same planner, the same scores
    tables = [next(Path(a.path) for a in r.artifacts if a.name == "comparison") for r in (record, fresh)]
    assert tables[0].read_bytes() == tables[1].read_bytes()


# ----------------------------------------------------------------------------- CoMP: the (Prompt-)DT training


def _comp_train_job(tmp_path: Path) -> tuple[object, Path, str]:
    """A CoMP job of the train stage alone (60 steps of the small PromptDT and the DT), its study
    folder holding a shipped demonstration as the training data and the shipped multi-task PPO."""
    from decisions.telecom.comp import spec as comp_spec
    from decisions.telecom.comp.sim.catalog import TRAINING_TASKS
    from decisions.telecom.comp.study.folder import shipped_study

    task = TRAINING_TASKS[0].name
    study = tmp_path / "study"
    (study / "data").mkdir(parents=True)
    shutil.copy(shipped_study() / "demos" / f"{task}.npz", study / "data" / f"{task}.npz")
    (study / "models").mkdir()
    shutil.copy(shipped_study() / "models" / "multitask_ppo.msgpack", study / "models")
    settings = {"folder": str(study), "stages": ["train"], "sizes": ["small"], "dt_steps": 60, "dt_batch": 2,
                "context_len": 2}
    job = comp_spec.prepare({"job": {"kind": "comp"}, "study": settings, "tasks": {"train": [task], "unseen": []}})
    return job, study, task


def test_the_comp_study_gives_every_training_a_checkpoint_in_the_run_folder(
    tmp_path: Path, store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import jax.numpy as jnp

    from decisions.telecom.comp import DOMAIN
    from decisions.telecom.comp.sim.catalog import TRAINING_TASKS
    from decisions.telecom.comp.study import stages as study
    from decisions.telecom.comp.study.budget import StudyBudget
    from decisions.telecom.comp.study.context import StudyContext

    given: list[tuple[Path, list[tuple[str, int, int, int]]]] = []

    def noted(checkpoint: Path) -> None:
        entries = read_index(checkpoint.parent)
        given.append((checkpoint, [(e["name"], e["iterations"], e["every"], e["steps_per_iteration"]) for e in entries]))

    def trained_dt(data: object, config: object, steps: int, batch: int, **kwargs: object) -> tuple[object, dict]:
        noted(kwargs["checkpoint"])  # type: ignore[arg-type]
        return {"w": jnp.zeros(2)}, {"use_prompt": kwargs["use_prompt"], "loss": np.zeros(steps), "accuracy": np.zeros(steps)}

    def trained_ppo(*args: object, checkpoint: Path, **kwargs: object) -> object:
        noted(checkpoint)
        return None

    monkeypatch.setattr(study, "train_promptdt", trained_dt)
    job, _, _ = _comp_train_job(tmp_path)
    run_id = execute_domain(DOMAIN, job, url=store)
    checkpoints = run_folder(run_id, None, store) / SUBFOLDER
    assert given == [
        (checkpoints / "promptdt-small.msgpack", [("promptdt-small", 60, 50, 1)]),
        (checkpoints / "dt.msgpack", [("promptdt-small", 60, 50, 1), ("dt", 60, 50, 1)]),
    ]
    assert get_run(run_id, url=store).status is RunStatus.SUCCEEDED and not checkpoints.exists()

    given.clear()  # the PPO experts and the multi-task PPO: 6 iterations of 3,200 steps, a checkpoint every 3
    monkeypatch.setattr(study, "train_expert", trained_ppo)
    monkeypatch.setattr(study, "train_multitask", trained_ppo)
    monkeypatch.setattr(study, "save_expert", lambda path, *_: Path(path).write_bytes(b"expert"))
    budget = StudyBudget(expert_steps=19_200, multitask_steps=19_200)
    task = TRAINING_TASKS[0]
    with run_checkpoints(tmp_path / "run-x") as folder:
        ctx = StudyContext(tmp_path / "fresh", budget, (task,), (), checkpoints=checkpoint_file)
        study.train_experts(ctx)
        study.train_multitask_model(ctx)
    expert = (f"expert-{task.name}", 6, 3, 3_200)
    assert given == [
        (folder / f"expert-{task.name}.msgpack", [expert]),
        (folder / "multitask_ppo.msgpack", [expert, ("multitask_ppo", 6, 3, 3_200)]),
    ]


@pytest.mark.slow
def test_comp_dt_training_checkpoints_into_the_run_folder_and_resumes(tmp_path: Path, store: str) -> None:
    from decisions.telecom.comp import DOMAIN
    from decisions.telecom.comp.dt.datasets import OfflineDataset
    from decisions.telecom.comp.dt.dt_train import train_promptdt
    from decisions.telecom.comp.dt.saved import load_params
    from decisions.telecom.comp.study.budget import StudyBudget

    job, study, task = _comp_train_job(tmp_path)
    seen: list[tuple[str, int]] = []
    with pytest.raises(Stop):  # stopped right after the checkpoint at step 50 of 60
        execute_domain(DOMAIN, job, url=store, progress=_stop_after_first_checkpoint("promptdt-small", seen))
    [run] = list_runs(url=store)
    checkpoints = run_folder(run.id, None, store) / SUBFOLDER
    assert (checkpoints / "promptdt-small.msgpack").is_file() and run.status is RunStatus.FAILED

    seen.clear()
    outcome = execute_resume(prepare_resume(run.id, url=store), url=store, progress=lambda t, d, n: seen.append((t, d)))
    assert outcome == ExecutionOutcome(run.id, None)
    assert [d for t, d in seen if t == "promptdt-small"] == [60] and [d for t, d in seen if t == "dt"] == [50, 60]
    record = get_run(run.id, url=store)
    metrics = record.latest_metrics()
    assert record.status is RunStatus.SUCCEEDED and (metrics["resumed_from_step"], metrics["resume_lost_steps_max"]) == (50, 10)
    assert not checkpoints.exists()

    budget = StudyBudget(sizes=("small",), dt_steps=60, dt_batch=2, context_len=2)
    data = OfflineDataset.load(study / "data" / f"{task}.npz")
    params, _ = train_promptdt([data], budget.dt_config("small"), 60, 2, seed=0)  # uninterrupted
    saved, _ = load_params(study / "models" / "promptdt-small.msgpack")
    as_saved = [np.asarray(np.asarray(x, np.float16), np.float32) for x in _leaves(params)]
    for got, want in zip(_leaves(saved), as_saved, strict=True):
        np.testing.assert_array_equal(np.asarray(got), want)


def _leaves(tree: object) -> list[object]:
    import jax

    return jax.tree_util.tree_leaves(tree)
