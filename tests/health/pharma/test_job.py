"""The pharma job: spec validation naming the field, a tiny recorded run, its artifacts and reload."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from decisions.health.pharma import DOMAIN
from decisions.health.pharma import job as pharma_job
from decisions.health.pharma import spec as pharma_spec
from decisions.health.pharma.chain import CQA_NAMES
from decisions.health.pharma.evaluation import evaluate
from decisions.health.pharma.params import CPP_NAMES, grid
from decisions.health.pharma.snapo_policy import evaluation_key, load_profiles, problem
from decisions.platform.record import execute_domain
from decisions.store import RunStatus, dispose_engines, get_run
from tests.helpers import assert_input_error, with_sections

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "pharma.toml"

pytestmark = pytest.mark.smoke_runs("pharma")  # the conformance kit's tiny job: same shapes, compiled once

TINY = {
    "optimise": DOMAIN.smoke_spec["optimise"],
    "baseline": DOMAIN.smoke_spec["baseline"],
    "design_space": {"points": 2, "samples": 4},
}
"""The registry's smoke settings, and the smoke bench's design-space map (so that, in one process, the run
reuses the programs the bench compiled)."""


def _spec(**overrides: dict) -> dict:
    return with_sections({"job": {"kind": "pharma", "name": "tiny", "seed": 0}, **TINY}, **overrides)


@pytest.mark.parametrize(
    ("spec", "field", "words"),
    [
        (_spec(scenario={"cpps": {"reactor_temperature": 500.0}}), "scenario.cpps.reactor_temperature",
         "less than or equal to 200"),
        (_spec(scenario={"ranges": {"dryer_temperature": {"low": 80.0, "high": 30.0}}}),
         "scenario.ranges.dryer_temperature", "must be below high"),
        (_spec(design_space={"cpp_x": "pressure"}), "design_space.cpp_x", "reactor_temperature"),
        (_spec(design_space={"cpp_y": "cooling_end_temperature", "y_high": 75.0}), "design_space.y_high",
         "crystalliser start temperature"),
        (_spec(optimise={"steps": 0}), "optimise.steps", "greater than 0"),
        (_spec(baseline={"points": [1, 5, 5]}), "baseline.points", "[2, 101]"),
        (_spec(job={"method": "everything"}), "job.method", "'all'"),
        (_spec(job={"seed": -1}), "job.seed", "greater than or equal to 0"),
        (_spec(job={"colour": "blue"}), "job.colour", "Extra inputs"),
        ({**_spec(), "snapo": {"steps": 3}}, "snapo", "unknown section"),
        ({**_spec(), "scenario": 3}, "scenario", "must be a table"),
    ],
)
def test_prepare_names_the_first_bad_field(spec: dict, field: str, words: str) -> None:
    assert_input_error(pharma_spec.prepare, spec, field=field, words=words)


def test_job_seed_is_the_default_seed_of_the_sections() -> None:
    job = pharma_spec.prepare(_spec(job={"seed": 7}, design_space={"seed": 2}))
    assert (job.seed, job.optimise.seed, job.design_space.seed) == (7, 7, 2)
    assert job.method is pharma_spec.Method.ALL and job.baseline.points == (2, 2, 2)
    assert job.config()["baseline"]["points"] == [2, 2, 2]


def test_the_example_spec_is_a_valid_job() -> None:
    spec = tomllib.loads(EXAMPLE.read_text())
    job = pharma_spec.prepare(spec, EXAMPLE.parent)
    assert spec["job"]["kind"] == DOMAIN.name
    assert job.method is pharma_spec.Method.ALL and job.design_space.points == 25


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[pharma_spec.PharmaJob, int, str, list]]:
    """One tiny ``all`` run recorded in a temporary SQLite store."""
    tmp = tmp_path_factory.mktemp("pharma_job")
    url = f"sqlite:///{tmp / 'runs.db'}"
    reports: list[tuple[str, int, int]] = []
    job = pharma_spec.prepare(_spec(job={"output_dir": str(tmp / "out")}))
    try:
        run_id = execute_domain(DOMAIN, job, url=url, progress=lambda task, done, total: reports.append((task, done, total)))
        yield job, run_id, url, reports
    finally:
        dispose_engines()


def test_execute_records_a_succeeded_run_with_every_artifact(recorded) -> None:
    job, run_id, url, reports = recorded
    record = get_run(run_id, url=url)
    assert record.status == RunStatus.SUCCEEDED and record.kind == "pharma" and record.name == "tiny"
    assert record.config["optimise"]["steps"] == TINY["optimise"]["steps"] and record.config["method"] == "all"
    paths = {a.name: Path(a.path) for a in record.artifacts}
    expected = {"comparison", "cqa", "profiles", "trajectories", "filtration", "sensitivity", "design_space",
                "training_curve", "chart", "sensitivity_chart", "design_space_chart", "snapo_profiles"}
    assert expected <= set(paths)
    assert all(p.is_file() and p.is_relative_to(Path(job.output_dir) / f"run-{run_id}") for p in paths.values())
    assert paths["chart"].stat().st_size > 10_000
    for task in ("SNAPO training", "evaluation", "best constant baseline", "sensitivities", "design space",
                 "chain trajectories"):
        assert (task, 1, 1) in reports or any(r[0] == task and r[1] == r[2] for r in reports), task

    metrics = record.latest_metrics()
    for name in ("snapo_yield", "snapo_compliance", "best_constant_yield", "best_constant_compliance",
                 "yield_gain", "nominal_meets", "n_sensitivities", "n_cross_unit_sensitivities", "sens_ms",
                 "train_seconds", "design_space_max_probability", "job_seconds"):
        assert metrics[name] is not None and np.isfinite(metrics[name]), name
    assert metrics["n_sensitivities"] == len(CQA_NAMES) * len(CPP_NAMES)
    assert 0 < metrics["n_cross_unit_sensitivities"] < metrics["n_sensitivities"]
    assert metrics["yield_gain"] == pytest.approx(metrics["snapo_yield"] - metrics["best_constant_yield"])

    comparison = pd.read_csv(paths["comparison"]).set_index("method")
    assert list(comparison.index) == ["snapo", "best_constant"]
    assert comparison.loc["snapo", "mean_yield"] == pytest.approx(metrics["snapo_yield"])
    cqa = pd.read_csv(paths["cqa"])
    assert list(cqa.columns) == ["method", "cqa", "unit", "low", "high", "nominal", "meets", "mean"]
    assert len(cqa) == 2 * len(CQA_NAMES) and cqa["meets"].dtype == bool
    sens = pd.read_csv(paths["sensitivity"])
    assert len(sens) == metrics["n_sensitivities"] and (sens["scaled"].abs() <= 1.0).all()
    assert (sens.loc[sens["structural_zero"], "value"] == 0.0).all()
    space = pd.read_csv(paths["design_space"])
    assert list(space.columns) == ["reactor_temperature", "cooling_end_temperature", "probability"]
    assert len(space) == 4 and space["probability"].between(0.0, 1.0).all()
    traj = pd.read_csv(paths["trajectories"])
    temps = traj[(traj["variable"] == "temperature") & (traj["method"] == "best_constant")]
    assert set(traj["unit"]) == {"reactor", "crystalliser", "dryer"}
    dryer = temps[temps["unit"] == "dryer"]
    assert dryer["batch_time_h"].min() == pytest.approx(comparison.loc["best_constant", ["reaction_time",
                                                                                          "cooling_time"]].sum())
    assert len(pd.read_csv(paths["training_curve"])) == TINY["optimise"]["steps"]


def test_saved_profiles_reload_identically(recorded) -> None:
    job, run_id, url, _ = recorded
    paths = {a.name: Path(a.path) for a in get_run(run_id, url=url).artifacts}
    loaded = load_profiles(paths["snapo_profiles"])
    assert loaded.scenario == job.scenario and loaded.settings == job.optimise
    snapo = pd.read_csv(paths["comparison"]).set_index("method").loc["snapo", list(CPP_NAMES)]
    np.testing.assert_array_equal(loaded.cpps.astype(float), snapo.to_numpy(float))
    frame = pd.read_csv(paths["profiles"])
    saved = frame[frame["method"] == "snapo"].drop(columns="method").reset_index(drop=True)
    pd.testing.assert_frame_equal(loaded.profile_frame(), saved, check_dtype=False)
    # the reloaded operating point scores exactly what the run recorded, on the same draws
    g, p = grid(job.scenario), problem(job.scenario)
    ev = evaluate(jnp.asarray(loaded.cpps), loaded.profiles, p.nominal, p.cv, p.limits, g,
                  key=evaluation_key(job.optimise), samples=job.optimise.eval_samples)
    metrics = get_run(run_id, url=url).latest_metrics()
    assert ev.mean_yield == metrics["snapo_yield"] and ev.compliance == metrics["snapo_compliance"]
    cqa = pd.read_csv(paths["cqa"])
    np.testing.assert_array_equal(cqa.loc[cqa["method"] == "snapo", "nominal"].to_numpy(),
                                  ev.nominal_cqas.astype(float))


def test_sensitivities_alone_run_at_the_scenario_operating_point(recorded) -> None:
    spec = _spec(job={"method": "sensitivities"})
    del spec["baseline"], spec["design_space"]  # steps the method does not run: prepare refuses their settings
    spec["optimise"] = {"eval_samples": 64}
    report = pharma_job.run_job(pharma_spec.prepare(spec))
    assert list(report.comparison.index) == ["nominal"] and report.result is None
    assert report.training_curve is None and report.design_space.empty
    np.testing.assert_allclose(report.comparison.loc["nominal", list(CPP_NAMES)].to_numpy(float),
                               [75.0, 4.0, 10.0, 6.0, 2.0, 50.0, 10.0])
    # every declared table is saved (an empty one as a header-only CSV), so Report.load restores it
    assert set(report.tables()) == {"comparison", "cqa", "profiles", "trajectories", "filtration", "sensitivity",
                                    "design_space"}
    assert report.tables()["design_space"].empty
    assert report.metrics["n_sensitivities"] == 42 and "snapo_yield" not in report.metrics


def test_a_failing_job_is_recorded_as_failed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"

    def boom(job: pharma_spec.PharmaJob, *, progress: object) -> None:
        raise RuntimeError("chain diverged")

    monkeypatch.setattr(pharma_job, "run_job", boom)
    try:
        with pytest.raises(RuntimeError, match="chain diverged"):
            execute_domain(DOMAIN, pharma_spec.prepare(_spec()), url=url)
        from decisions.store import list_runs

        [run] = list_runs(url=url)
        assert run.status == RunStatus.FAILED and run.error == "RuntimeError: chain diverged"
    finally:
        dispose_engines()
