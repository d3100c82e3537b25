"""CoMP on a network of one's own (``[network]``: a cells file, users as a count, per cell or a file of
start points): read into a task every policy plays; a bad file is refused at prepare time naming the
file, row and column."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from decisions.platform import registry
from decisions.telecom.comp.sim.catalog import OwnTask, Task, task_by_name
from decisions.telecom.comp.spec import prepare
from tests.helpers import assert_input_error

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CELLS = ("x_m,y_m,tx_dbm,bandwidth_mhz", "50,60,30,9", "150,60,30,9", "100,150,27,5")
SHIPPED_ONE_TASK = {"folder": "shipped:comp/trained", "stages": ["evaluate"], "eval_episodes": 2}


def _write(tmp_path: Path, name: str, *lines: str) -> str:
    (tmp_path / name).write_text("\n".join(lines) + "\n")
    return name


def _spec(network: dict) -> dict:
    return {"job": {"kind": "comp", "name": "own"}, "study": SHIPPED_ONE_TASK,
            "tasks": {"train": ["c3-u5-resource_fair-me"], "unseen": []}, "network": network}


def test_the_example_spec_reads_its_cells_and_users() -> None:
    job = prepare(tomllib.loads((EXAMPLES / "comp_own.toml").read_text()), EXAMPLES)
    (task,) = job.own_tasks()
    assert isinstance(task, OwnTask) and task.name == "own-campus-c5-u12-resource_fair"
    assert task.cells[2] == (100.0, 120.0, 33.0, 10e6, 2500.0, 50.0)
    assert task.user_home[0] == (42.0, 75.0) and set(task.user_spread) == {0.0}
    assert Task.from_dict(task.to_dict()) == task
    assert registry.get("comp").job_from_config(job.config()).own_tasks() == [task]  # the run records the network


def test_users_as_a_count_or_per_cell(tmp_path: Path) -> None:
    counted = prepare(_spec({"cells_file": _write(tmp_path, "cells.csv", *CELLS), "users": 7}), tmp_path)
    (task,) = counted.own_tasks()
    assert task.n_users == 7 and task.user_home == () and task.size == (165.0, 165.0)
    per_cell = [CELLS[0] + ",users", *(row + f",{n}" for row, n in zip(CELLS[1:], (2, 0, 3), strict=True))]
    (task,) = prepare(_spec({"cells_file": _write(tmp_path, "cells.csv", *per_cell)}), tmp_path).own_tasks()
    assert task.n_users == 5 and task.user_home[:3] == ((50.0, 60.0),) * 2 + ((100.0, 150.0),)
    assert task.user_spread[0] == pytest.approx(50.0)  # half the way to the nearest other cell


def test_mobile_envs_small_network_as_an_own_network_is_the_catalogues(tmp_path: Path) -> None:
    import jax

    stations = ("x_m,y_m,tx_dbm,bandwidth_mhz", "110,130,30,9", "65,80,30,9", "120,30,30,9")
    spec = _spec({"cells_file": _write(tmp_path, "cells.csv", *stations), "users": 5, "area_m": [200.0, 200.0]})
    (own,) = prepare(spec, tmp_path).own_tasks()
    same = jax.tree.map(lambda a, b: bool((a == b).all()), own.params(), task_by_name("c3-u5-resource_fair-me").params())
    assert all(jax.tree.leaves(same))


@pytest.mark.parametrize(("lines", "words"), [
    (("x_m,y_m,tx_dbm", "50,60,30"), "cells.csv: missing column 'bandwidth_mhz'"),
    ((*CELLS[:2], "150,sixty,30,9"), "cells.csv, row 3, column 'y_m': 'sixty' is not a finite number"),
    ((*CELLS[:2], "150,60,80,9"), "cells.csv, row 3, column 'tx_dbm': 80 is above 60 (the file may be in mW or W"),
    ((*CELLS[:2], "150,60,30,9000000"),
     "cells.csv, row 3, column 'bandwidth_mhz': 9000000 is above 1000 (the file may be in Hz or kHz, not MHz)"),
    ((CELLS[0] + ",frequency_mhz", "50,60,30,9,2500", "150,60,30,9,2.6"),
     "cells.csv, row 3, column 'frequency_mhz': 2.6 is below 100 (the file may be in GHz, not MHz)"),
    ((*CELLS, "50,60,24,5"), "cells.csv, row 5, column 'x_m': (50, 60) is also the place of the cell of row 2"),
    ((CELLS[0], *[f"{10 * i},10,30,9" for i in range(14)]), "cells.csv: it has 14 cells; the simulator holds at most 13"),
])
def test_a_bad_cells_file_is_refused_naming_its_row_and_column(tmp_path: Path, lines: tuple[str, ...],
                                                               words: str) -> None:
    spec = _spec({"cells_file": _write(tmp_path, "cells.csv", *lines), "users": 5})
    assert_input_error(prepare, spec, tmp_path, field="network.cells_file", words=words)


@pytest.mark.parametrize(("lines", "words"), [
    (("x_m", "50"), "users.csv: missing column 'y_m'"),
    (("x_m,y_m", "50,60", "70,"), "users.csv, row 3, column 'y_m': is empty"),
    (("x_m,y_m", "50,60", "7000000,60"), "users.csv, row 3, column 'x_m': 7000000 is above 20000 (the file may be in cm"),
])
def test_a_bad_users_file_is_refused_naming_its_row_and_column(tmp_path: Path, lines: tuple[str, ...],
                                                               words: str) -> None:
    spec = _spec({"cells_file": _write(tmp_path, "cells.csv", *CELLS), "users_file": _write(tmp_path, "users.csv", *lines)})
    assert_input_error(prepare, spec, tmp_path, field="network.users_file", words=words)


@pytest.mark.parametrize(("network", "field", "words"), [
    ({}, "network.cells_file", "give the cells file"),
    ({"users": 5, "users_file": "users.csv"}, "network.users", "one way"),
    ({"users": 5, "area_m": [100.0, 100.0]}, "network.area_m", "(150.0, 60.0) lies outside"),
])
def test_an_incomplete_network_is_refused(tmp_path: Path, network: dict, field: str, words: str) -> None:
    _write(tmp_path, "users.csv", "x_m,y_m", "10,10")
    spec = _spec({"cells_file": _write(tmp_path, "cells.csv", *CELLS), **network} if network else {"users": 5})
    assert_input_error(prepare, spec, tmp_path, field=field, words=words)


@pytest.mark.slow
def test_the_shipped_study_evaluates_an_own_network(tmp_path: Path) -> None:
    from decisions.telecom.comp.job import run_job

    spec = _spec({"cells_file": _write(tmp_path, "cells.csv", *CELLS),
                  "users_file": _write(tmp_path, "users.csv", "x_m,y_m", "40,50", "160,70", "100,140")})
    report = run_job(prepare(spec, tmp_path))
    own = report.evaluation[report.evaluation.split == "own"]
    assert set(own.policy) == {"multitask_ppo", "max_snr", "top2", "random", "planner"}
    assert {"own_qoe_multitask_ppo", "own_normalised_qoe_max_snr"} <= set(report.metrics)
    assert "own-own-c3-u3-resource_fair" in {t.name for t in report.deployable.tasks}
