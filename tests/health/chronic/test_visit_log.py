"""Chronic care reads a user's own visit log: the CSV format, cell-by-cell refusals naming row and
column, ragged logs the learners honour, and the log checked at ``decisions run`` time."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from typer.testing import CliRunner

from decisions.cli import app
from decisions.errors import InputError
from decisions.health.chronic import logs as log_arrays
from decisions.health.chronic import model
from decisions.health.chronic.logs import CONTROLLED, Logs
from decisions.health.chronic.model import N_ACTIONS, N_STATES, regime_mask
from decisions.health.chronic.scoring import draw_logs, make_case
from decisions.health.chronic.settings import ACTIONS, Clinicians, HtnMachine, Problem, Regime, Reward
from decisions.health.chronic.spec import prepare
from decisions.health.chronic.training import behaviour_cloning, count_transitions, removed_cells
from decisions.health.chronic.unlearning import unlearn_check
from decisions.health.chronic.visit_log import read_visit_log, write_visit_log
from decisions.store import list_runs

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "chronic_visits.csv"
HORIZON = 6
FULL = regime_mask(Regime(), HORIZON)
HOLD_EVERYWHERE = np.ones((HORIZON, N_STATES), int)
HEADER = "patient,clinician,visit,band,step,adherent,side_effect,months_since,controlled,action,kappa"
GOOD = [  # rows 2-8: p1 reaches control at visit 3; p2 leaves after visit 2
    "p1,dr_a,0,2,1,1,0,2,0,intensify,0.9",
    "p1,dr_a,1,1,2,1,0,0,0,hold,0.9",
    "p2,dr_b,0,1,1,0,0,2,0,follow_up,0.2",
    "p1,dr_a,2,0,2,1,0,1,0,hold,0.9",
    "p1,dr_a,3,,,,,,1,,0.9",
    "p2,dr_b,1,1,1,1,0,2,0,hold,0.2",
    "p2,dr_b,2,1,1,1,0,2,0,,0.2",
]


@pytest.fixture(scope="module")
def simulated() -> Logs:
    case = make_case("htn", HtnMachine(), Problem(horizon=HORIZON), Reward(), "hold")
    return draw_logs(case, Clinicians(), 60, jax.random.PRNGKey(1))


def _ragged(logs: Logs, fill: tuple[int, int] = (7, 3)) -> Logs:
    """``logs`` cut at a random visit per patient, the unobserved slots holding state and action ``fill``."""
    rng = np.random.default_rng(0)
    horizon = logs.actions.shape[1]
    visits = rng.integers(1, horizon + 2, len(logs.kappa))
    observed = np.arange(horizon)[None, :] < (visits - 1)[:, None]
    states = np.where(np.arange(horizon + 1)[None, :] < visits[:, None], logs.states, fill[0])
    return Logs(states, np.where(observed, logs.actions, fill[1]), logs.kappa, logs.clinician, observed)


def _read(rows: list[str], header: str = HEADER) -> object:
    return read_visit_log(io.StringIO("\n".join([header, *rows]) + "\n"), HORIZON)


def test_the_state_encoding_matches_the_model() -> None:
    assert log_arrays.CONTROLLED == model.CONTROLLED
    table = model.state_table()
    np.testing.assert_array_equal(np.ravel_multi_index(tuple(table.T), log_arrays.STATE_SHAPE),
                                  [model.state_index(*map(int, row)) for row in table])


def test_a_small_log_reads_into_padded_arrays_with_the_observed_transitions() -> None:
    log = _read(GOOD)
    assert log.patients == ("p1", "p2") and log.clinicians == ("dr_a", "dr_b") and log.kappa_given
    states, actions, observed = log.logs.states, log.logs.actions, log.logs.observed
    assert states[0, 0] == model.state_index(2, 1, 1, 0, 2) and states[0, 3] == CONTROLLED
    assert list(actions[1, :2]) == [ACTIONS.index("follow_up"), ACTIONS.index("hold")]
    np.testing.assert_array_equal(observed.sum(1), [3, 2])
    assert states[1, 3:].tolist() == [0] * 4 and actions[1, 2:].tolist() == [ACTIONS.index("hold")] * 4
    np.testing.assert_allclose(log.logs.kappa, [0.9, 0.2])
    np.testing.assert_array_equal(log.logs.clinician, [0, 1])


def test_simulated_logs_round_trip_through_the_csv(simulated: Logs, tmp_path: Path) -> None:
    for kappa in (True, False):
        back = read_visit_log(write_visit_log(tmp_path / "log.csv", simulated, kappa=kappa), HORIZON)
        np.testing.assert_array_equal(back.logs.states, simulated.states)
        np.testing.assert_array_equal(back.logs.actions, simulated.actions)
        assert back.logs.observed.all() and back.kappa_given == kappa
        names = np.array(back.clinicians)[back.logs.clinician]
        np.testing.assert_array_equal(names, [f"C{c + 1:02d}" for c in simulated.clinician])
    np.testing.assert_array_equal(read_visit_log(tmp_path / "log.csv", HORIZON).logs.kappa.shape, (60,))


def test_the_counts_of_a_ragged_log_are_the_counts_of_its_observed_transitions(simulated: Logs,
                                                                               tmp_path: Path) -> None:
    ragged = _ragged(simulated)
    expected = np.zeros((N_STATES, N_ACTIONS, N_STATES), int)
    for n, t in zip(*np.nonzero(ragged.observed), strict=True):
        if ragged.states[n, t] != CONTROLLED:
            expected[ragged.states[n, t], ragged.actions[n, t], ragged.states[n, t + 1]] += 1
    assert 0 < expected.sum() < count_transitions(simulated).counts.sum()
    np.testing.assert_array_equal(count_transitions(ragged).counts.sum(0), expected)
    back = read_visit_log(write_visit_log(tmp_path / "ragged.csv", ragged), HORIZON).logs
    np.testing.assert_array_equal(back.observed, ragged.observed)
    np.testing.assert_array_equal(count_transitions(back).counts.sum(0), expected)


def test_cloning_and_unlearning_skip_the_unobserved_slots(simulated: Logs) -> None:
    ragged, other = _ragged(simulated), _ragged(simulated, (11, 0))
    for weighted in (False, True):
        np.testing.assert_array_equal(behaviour_cloning(ragged, weighted, FULL, HOLD_EVERYWHERE),
                                      behaviour_cloning(other, weighted, FULL, HOLD_EVERYWHERE))
    patients = np.arange(0, 60, 7)
    counts = count_transitions(ragged)
    for a, b in zip(removed_cells(counts, ragged, patients), removed_cells(counts, other, patients), strict=True):
        np.testing.assert_array_equal(a, b)
    assert unlearn_check(ragged, patients, Reward(), HORIZON, FULL, repeats=1)["equal"] == 1.0


def test_the_example_log_is_ragged_and_its_kappas_are_estimated() -> None:
    log = read_visit_log(EXAMPLE, 12)
    assert len(log.patients) == 30 and len(log.clinicians) == 4 and not log.kappa_given
    assert 0 < log.logs.observed.mean() < 1
    assert np.all((log.logs.kappa >= 0) & (log.logs.kappa <= 1))


def _replace(row: int, column: str, value: str) -> list[str]:
    """``GOOD`` with one cell changed (``row`` as the file counts it)."""
    rows = [line.split(",") for line in GOOD]
    rows[row - 2][HEADER.split(",").index(column)] = value
    return [",".join(r) for r in rows]


def _without(column: str) -> list[str]:
    """``GOOD`` without one column."""
    drop = HEADER.split(",").index(column)
    return [",".join(c for i, c in enumerate(line.split(",")) if i != drop) for line in GOOD]


def _refused(rows: list[str], message: str, header: str = HEADER) -> None:
    """Reading ``rows`` under ``header`` is refused in one line naming ``data.log``, matching ``message``."""
    with pytest.raises(InputError, match=rf"^data\.log: .*{message}") as caught:
        _read(rows, header)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(("rows", "header", "message"), [
    ([], HEADER, r"the log is empty"),
    (["", "  ", ""], HEADER, r"the log is empty"),
    (GOOD, HEADER.replace("action", "treatment"), r"unknown column 'treatment'"),
    (_without("band"), HEADER.replace(",band", ""), r"missing column 'band'"),
    ([row + ",1" for row in GOOD], HEADER, r"its rows have more cells than the header has columns"),
    ([*GOOD[:2], GOOD[2] + ",1"], HEADER, r"Expected 11 fields in line 4, saw 12"),
])
def test_an_empty_log_or_one_whose_columns_do_not_fit_is_refused_in_one_line(rows: list[str], header: str,
                                                                             message: str) -> None:
    _refused(rows, message, header)


@pytest.mark.parametrize(("row", "column", "value", "message"), [
    (3, "action", "refer", r"row 3, column 'action': 'refer' is not an action"),
    (4, "band", "4", r"row 4, column 'band': 4 is outside 0-3"),
    (4, "step", "1.5", r"row 4, column 'step': '1.5' is not an integer"),
    (4, "adherent", "yes", r"row 4, column 'adherent': 'yes' is not an integer"),
    (2, "months_since", "", r"row 2, column 'months_since': is empty"),
    (2, "patient", "", r"row 2, column 'patient': is empty"),
    (8, "visit", "7", r"row 8, column 'visit': 7 is outside 0-6"),
    (5, "visit", "1", r"row 5, column 'visit': visit 1 of patient 'p1' repeats row 3"),
    (8, "visit", "3", r"row 8, column 'visit': patient 'p2' has no visit 2 before visit 3"),
    (7, "clinician", "dr_a", r"row 7, column 'clinician': 'dr_a' differs from 'dr_b' on row 4"),
    (7, "kappa", "0.3", r"row 7, column 'kappa': 0.3 differs from 0.2 on row 4"),
    (7, "kappa", "1.2", r"row 7, column 'kappa': 1.2 is outside \[0, 1\]"),
    (3, "action", "", r"row 3, column 'action': is empty"),
    (8, "action", "hold", r"row 8, column 'action': is given on the patient's last visit"),
    (6, "controlled", "0", r"row 6, column 'band': is empty"),
    (4, "controlled", "1", r"row 4, column 'controlled': is 1 on the patient's first visit"),
    (3, "band", "0", r"row 5, column 'controlled': must be 1: band 0 here and at the visit before"),
    (5, "band", "1", r"row 6, column 'controlled': is 1 but the visit before \(row 5\) is not in band 0"),
])
def test_a_bad_cell_is_refused_in_one_line_naming_the_row_and_column(row: int, column: str, value: str,
                                                                    message: str) -> None:
    _refused(_replace(row, column, value), message)


@pytest.mark.parametrize(("rows", "message"), [
    (_replace(3, "visit", "2")[:3] + _replace(5, "visit", "1")[3:],
     r"row 3, column 'visit': visit 2 of patient 'p1' comes before their visit 1 \(row 5\)"),
    ([*_replace(6, "action", "hold"), "p1,dr_a,4,1,2,1,0,2,0,,0.9"],
     r"row 9, column 'controlled': is not 1 after control was confirmed \(row 6\)"),
])
def test_an_edit_across_rows_is_refused_in_one_line_naming_the_row_and_column(rows: list[str], message: str) -> None:
    _refused(rows, message)


def test_blank_lines_keep_the_row_numbers_of_the_file() -> None:
    rows = _replace(8, "band", "9")
    with pytest.raises(InputError, match=r"row 10, column 'band'"):
        _read([rows[0], "", *rows[1:6], " , ,", rows[6]])


def _spec(tmp_path: Path, rows: list[str], **data: object) -> dict:
    (tmp_path / "visits.csv").write_text("\n".join([HEADER, *rows]) + "\n")
    return {"job": {"kind": "chronic"}, "problem": {"horizon": HORIZON},
            "data": {"log": "visits.csv", "log_disease": "htn", **data}}


def test_prepare_reads_the_log_relative_to_the_spec(tmp_path: Path) -> None:
    job = prepare(_spec(tmp_path, GOOD), tmp_path)
    assert Path(job.data.log) == tmp_path / "visits.csv"


@pytest.mark.parametrize(("rows", "data", "message"), [
    (_replace(3, "action", "refer"), {}, r"^data\.log: visits\.csv, row 3, column 'action'"),
    ([], {}, r"^data\.log: visits\.csv: the log is empty"),
    (GOOD, {"log": "missing.csv"}, r"^data\.log: file not found"),
    (GOOD, {"log_disease": None}, r"^data\.log_disease: required"),
    (GOOD, {"log_disease": "t2d"}, r"^data\.log_disease: 't2d' is not studied"),
])
def test_prepare_refuses_a_bad_log_in_one_line(tmp_path: Path, rows: list[str], data: dict, message: str) -> None:
    spec = _spec(tmp_path, rows, **data)
    spec["problem"]["diseases"] = ["htn"]
    if data.get("log_disease", "") is None:
        del spec["data"]["log_disease"]
    with pytest.raises(InputError, match=message) as caught:
        prepare(spec, tmp_path)
    assert "\n" not in str(caught.value)


def test_decisions_run_refuses_a_bad_log_with_exit_2_and_records_nothing(tmp_path: Path, store: str) -> None:
    (tmp_path / "visits.csv").write_text("\n".join([HEADER, *_replace(6, "visit", "5")]) + "\n")
    spec = tmp_path / "job.toml"
    spec.write_text('[job]\nkind = "chronic"\n[problem]\nhorizon = 6\n'
                    '[data]\nlog = "visits.csv"\nlog_disease = "htn"\n')
    result = CliRunner().invoke(app, ["run", str(spec)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "data.log: visits.csv, row 6, column 'visit'" in lines[0], result.output
    assert list_runs(url=store) == []


def test_the_log_is_checked_without_jax(tmp_path: Path) -> None:
    """``prepare`` reads the log (and estimates its kappas) with no JAX: a bad log is refused before it loads."""
    code = ("import sys; from pathlib import Path; from decisions.health.chronic.spec import prepare; "
            "spec = {'job': {'kind': 'chronic'}, 'data': {'log': sys.argv[1], 'log_disease': 'htn'}}; "
            "prepare(spec, Path('.')); print(sorted(m for m in ('jax', 'flax', 'optax') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, str(EXAMPLE)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
