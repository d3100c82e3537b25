"""A user's log CSV: the schema read back, bad cells named by column and row, and a job learning from it."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.errors import InputError
from decisions.recsys.utility import simulator as sim_mod
from decisions.recsys.utility.job import run_job
from decisions.recsys.utility.logs import read_logs, write_logs
from decisions.recsys.utility.qnet import Logs
from decisions.recsys.utility.scenario import Simulator, WeightSet
from decisions.recsys.utility.spec import prepare

WEIGHTS = WeightSet(grid_step=3)


@pytest.fixture(scope="module")
def log_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sim = Simulator(candidates=20, slate_size=4)
    weights = jnp.asarray(WEIGHTS.matrix())
    batch = sim_mod.simulate(jax.random.PRNGKey(0), sim, sim_mod.make_world(sim), weights,
                             jnp.asarray(sim_mod.uniform_logger(weights.shape[0])), 3000, exact=False, chunk=1000)
    logs = Logs(*(np.asarray(x) for x in (batch.context, batch.action, batch.propensity, batch.reward)))
    return write_logs(tmp_path_factory.mktemp("logs") / "log.csv", logs, sim_mod.CONTEXT_FEATURES_CSV)


def test_a_written_log_reads_back_equal(log_file: Path) -> None:
    logs, names = read_logs(log_file, len(WEIGHTS.matrix()))
    assert names == sim_mod.CONTEXT_FEATURES_CSV and logs.context.shape == (3000, len(names))
    assert logs.action.max() < len(WEIGHTS.matrix()) and np.allclose(logs.propensity, 1 / len(WEIGHTS.matrix()))


def _edited(log_file: Path, tmp_path: Path, column: str, row: int, value: str) -> Path:
    lines = log_file.read_text().splitlines()
    header = lines[0].split(",")
    cells = lines[row - 1].split(",")
    cells[header.index(column)] = value
    lines[row - 1] = ",".join(cells)
    path = tmp_path / "edited.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(("column", "value", "problem"), [
    ("propensity", "1.3", "1.3 is outside (0, 1]"),
    ("propensity", "0", "0 is outside (0, 1]"),
    ("revenue", "nan", "'nan' is not a finite number"),
    ("success", "", "'' is not a finite number"),
    ("action", "99", "99 is outside [0, 10) (the weight set's indices)"),
    ("action", "1.5", "1.5 is not an integer"),
    ("hides", "-1", "-1 is negative"),
    ("ctx_tenure", "1e308", "1e+308 is out of range (magnitude at most 3.4e+38)"),
    ("revenue", "1e39", "1e+39 is out of range (magnitude at most 3.4e+38)"),
    ("revenue", "inf", "'inf' is not a finite number"),
    ("revenue", "true", "'true' is not a finite number"),
])
def test_bad_cells_are_named_by_column_and_row(log_file: Path, tmp_path: Path, column: str, value: str,
                                                problem: str) -> None:
    with pytest.raises(InputError) as err:
        read_logs(_edited(log_file, tmp_path, column, 5, value), len(WEIGHTS.matrix()))
    assert str(err.value) == f"logs.path: {column}, row 5: {problem}"


def test_a_missing_column_is_named(log_file: Path, tmp_path: Path) -> None:
    text = log_file.read_text().replace("propensity", "prob", 1)
    (tmp_path / "renamed.csv").write_text(text)
    with pytest.raises(InputError, match="logs.path: missing column 'propensity'"):
        read_logs(tmp_path / "renamed.csv", len(WEIGHTS.matrix()))


def test_a_job_learns_from_the_log_and_estimates_every_point(log_file: Path) -> None:
    job = prepare({"job": {"kind": "utility"}, "weights": {"grid_step": 3}, "logs": {"path": str(log_file)},
                   "agent": {"steps": 40, "log_every": 20, "hidden": [16], "embedding": 8},
                   "frontier": {"points": 3, "bootstrap": 20}})
    report = run_job(job)
    front = report.front
    assert set(front["source"]) == {"dr"} and {"learnt", "global", "linucb", "production"} <= set(front["method"])
    assert (front["engagement_ci_low"] <= front["engagement"]).all()
    assert (front["engagement"] <= front["engagement_ci_high"]).all()
    assert np.isfinite(report.metrics["estimated_hypervolume_ratio_vs_global"])
    assert len(report.obd_front) == 3


def test_simulation_settings_are_refused_with_a_log_file(log_file: Path) -> None:
    for table, key in (("simulator", "topics"), ("logs", "train_requests"), ("frontier", "oracle_draws"),
                       ("drift", "days")):
        with pytest.raises(InputError, match=f"{table}.{key}: is used only when the logs are simulated"):
            prepare({"logs": {"path": str(log_file)}, table: {key: 5}} if table != "logs"
                    else {"logs": {"path": str(log_file), key: 500}})
    with pytest.raises(InputError, match="logs.path: file not found"):
        prepare({"logs": {"path": "/no/such/log.csv"}})


def test_a_duplicated_or_unnamed_column_is_refused(log_file: Path, tmp_path: Path) -> None:
    lines = log_file.read_text().splitlines()
    for header, problem in ((lines[0] + ",revenue", "column 'revenue' appears twice in the header"),
                            (lines[0] + ",", f"column {len(lines[0].split(',')) + 1} of the header has no name")):
        path = tmp_path / "header.csv"
        path.write_text("\n".join([header, *(line + ",1" for line in lines[1:])]) + "\n")
        with pytest.raises(InputError) as err:
            read_logs(path, len(WEIGHTS.matrix()))
        assert str(err.value) == f"logs.path: {problem}"


def test_every_row_of_a_log_file_is_checked_when_the_spec_is_read(log_file: Path, tmp_path: Path) -> None:
    bad = _edited(log_file, tmp_path, "propensity", 2900, "1.3")
    with pytest.raises(InputError) as err:
        prepare({"weights": {"grid_step": 3}, "logs": {"path": str(bad)}})
    assert str(err.value) == "logs.path: propensity, row 2900: 1.3 is outside (0, 1]"
