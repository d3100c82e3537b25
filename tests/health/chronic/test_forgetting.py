"""Forgetting patients from a run's learner: the cohort is the study's, each forgetting equals retraining
without the patient, the digests chain, forgetting is cumulative, and bad identifiers are one line."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from decisions.errors import InputError
from decisions.health.chronic import cohort as cohort_module
from decisions.health.chronic import forgetting, study
from decisions.health.chronic.cohort import DiseaseCohort, cohort
from decisions.health.chronic.forgetting import data_digest, forget, forget_in, policy_digest
from decisions.health.chronic.settings import Care, Clinicians, Data, HtnMachine, Problem, Reward, T2dMachine
from decisions.health.chronic.training import count_transitions
from decisions.health.chronic.unlearning import learn
from tests.helpers import takers_of

PROBLEM = Problem(diseases=("htn",), horizon=6)
DATA = Data(patients=40, seeds=1, sweep_patients=(40,), sweep_low_shares=(0.5,))


@pytest.fixture(scope="module")
def cohorts() -> dict[str, DiseaseCohort]:
    return cohort(Care(PROBLEM, HtnMachine(), T2dMachine(), Reward(), Clinicians(), DATA), 0)


class _Stop(Exception):
    """Ends a study once the logs of its last unlearning check are seen."""


def test_the_cohort_is_what_the_studys_unlearning_check_learns_from(monkeypatch: pytest.MonkeyPatch) -> None:
    """``run_study`` derives each disease's keys and logs in its own body: run it with every costly part
    (scoring, the sweep, the Q table) left out, and keep the logs its unlearning check gets."""
    problem = Problem(diseases=("t2d", "htn"), horizon=6)
    used: list[Any] = []

    def check(logs: Any, *args: Any, **kwargs: Any) -> dict[str, float]:
        used.append(logs)
        if len(used) == 2 * len(problem.diseases):
            raise _Stop
        return {}

    for name in ("_exact_rows", "_offline_rows", "_sweep", "q_table"):
        monkeypatch.setattr(study, name, lambda *args, **kwargs: [])
    monkeypatch.setattr(study, "unlearn_check", check)
    with pytest.raises(_Stop):
        study.run_study(Care(problem, HtnMachine(), T2dMachine(), Reward(), Clinicians(), DATA), seed=3)
    found = cohort(Care(problem, HtnMachine(), T2dMachine(), Reward(), Clinicians(), DATA), 3)
    assert list(found) == ["t2d", "htn"] and len(used) == 4
    for index, disease in enumerate(found):
        assert all(np.array_equal(a, b) for a, b in zip(used[2 * index], found[disease].logs, strict=True))
        assert found[disease].patient_ids[:2] == (f"{disease}-0", f"{disease}-1")
    assert not np.array_equal(found["t2d"].logs.states, found["htn"].logs.states)


def _learnt_without(part: DiseaseCohort, rows: list[int]) -> Any:
    counts = count_transitions(part.logs, exclude=np.array(rows, np.int64))
    return learn(counts, Reward(), PROBLEM.horizon, part.case.masks[PROBLEM.train_regime], DATA.min_count)


def test_each_forgetting_equals_retraining_and_its_digests_chain(cohorts: dict[str, DiseaseCohort]) -> None:
    part = cohorts["htn"]
    done = forget_in(cohorts, ["htn-3", "htn-17"], [], Reward(), PROBLEM, DATA.min_count, repeats=1)
    first, second = done.forgotten
    assert (first.patient, first.disease, first.equal, second.equal) == ("htn-3", "htn", True, True)
    assert first.data_digest_before == data_digest(count_transitions(part.logs))
    assert first.data_digest_after == data_digest(_learnt_without(part, [3]).counts) == second.data_digest_before
    retrained = _learnt_without(part, [3, 17])
    assert second.data_digest_after == data_digest(retrained.counts) != second.data_digest_before
    assert second.policy_digest_after == policy_digest(retrained.solution.policy)
    assert np.array_equal(done.policies["htn"], np.asarray(retrained.solution.policy))
    assert first.unlearn_seconds > 0 and first.retrain_seconds > 0


def test_forgetting_is_cumulative(cohorts: dict[str, DiseaseCohort]) -> None:
    both = forget_in(cohorts, ["htn-3", "htn-17"], [], Reward(), PROBLEM, DATA.min_count, repeats=1).forgotten
    [later] = forget_in(cohorts, ["htn-17"], ["htn-3"], Reward(), PROBLEM, DATA.min_count, repeats=1).forgotten
    assert later._replace(unlearn_seconds=0, retrain_seconds=0) == both[1]._replace(unlearn_seconds=0,
                                                                                     retrain_seconds=0)


@pytest.mark.parametrize(("patients", "earlier", "message"), [
    ([], [], "patient: name at least one patient to forget"),
    (["t2d-3"], [], "patient: no patient 't2d-3' in the run's logs (its patients: htn-0 to htn-39)"),
    (["htn-40"], [], "patient: no patient 'htn-40' in the run's logs (its patients: htn-0 to htn-39)"),
    (["htn-3"], ["htn-3"], "patient: htn-3 is already forgotten"),
    (["htn-1", "htn-1"], [], "patient: htn-1 is named twice"),
])
def test_bad_patients_are_refused_in_one_line(cohorts: dict[str, DiseaseCohort], patients: list[str],
                                              earlier: list[str], message: str) -> None:
    with pytest.raises(InputError) as info:
        forget_in(cohorts, patients, earlier, Reward(), PROBLEM, DATA.min_count, repeats=1)
    assert str(info.value) == message


def test_forget_takes_the_runs_settings_not_its_job() -> None:
    with pytest.raises(InputError, match="^patient: name at least one"):
        forget(Care(PROBLEM, HtnMachine(), T2dMachine(), Reward(), Clinicians(), DATA), seed=0, patients=[])
    assert takers_of("ChronicJob", cohort_module, forgetting) == []


def _chronic_run(url: str) -> int:
    """A succeeded chronic-care run of the small job (its learner is rebuilt from its configuration)."""
    from decisions.health.chronic.spec import ChronicJob
    from decisions.store import recorded_run

    job = ChronicJob(problem=PROBLEM, data=DATA)
    with recorded_run("chronic", "small", job.config(), url=url) as run:
        pass
    return run.run_id


def _cli(*args: str) -> tuple[int, str, str]:
    from typer.testing import CliRunner

    from decisions.cli import app

    result = CliRunner().invoke(app, list(args), terminal_width=400)
    return result.exit_code, result.stdout, result.stderr


def test_decisions_forget_records_each_patient_and_lists_them(store: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from decisions.store.forgettings import forgettings_of

    monkeypatch.setattr("getpass.getuser", lambda: "records-officer")
    run_id = _chronic_run(store)
    code, out, err = _cli("forget", str(run_id), "--patient", "htn-3", "--patient", "htn-17")
    assert code == 0, err
    first, second = forgettings_of(run_id, url=store)
    assert (first.patient, second.patient, first.created_by, first.equal, second.equal) == (
        "htn-3", "htn-17", "records-officer", True, True)
    assert first.data_digest_after == second.data_digest_before
    assert f"forgotten from run {run_id}" in out and second.policy_digest_after in out
    code, out, _ = _cli("forget", str(run_id), "--patient", "htn-5")
    [*_, third] = forgettings_of(run_id, url=store)
    assert code == 0 and third.data_digest_before == second.data_digest_after  # cumulative
    code, out, _ = _cli("forget", str(run_id), "--list")
    assert code == 0 and all(f" {p} " in out for p in ("htn-3", "htn-17", "htn-5")), out


@pytest.mark.parametrize(("args", "message"), [
    (["--patient", "htn-40"], "error: patient: no patient 'htn-40' in the run's logs (its patients: htn-0 to htn-39)"),
    ([], "error: patient: name a patient to forget (--patient ID), or give --list"),
    (["--list", "--patient", "htn-1"], "error: list: --list only shows the run's forgettings: give it without --patient"),
])
def test_decisions_forget_refuses_bad_input_in_one_line(store: str, args: list[str], message: str) -> None:
    run_id = _chronic_run(store)
    code, out, err = _cli("forget", str(run_id), *args)
    assert (code, out, err.strip()) == (2, "", message)


def test_decisions_forget_refuses_another_kind_and_an_unknown_run(store: str) -> None:
    from decisions.store import RunStatus, finish_run, start_run

    other = start_run("utility", "u", {}, url=store)
    finish_run(other, status=RunStatus.SUCCEEDED, url=store)
    assert _cli("forget", str(other), "--patient", "htn-1")[::2] == (
        2, f"error: run: run {other} is a 'utility' run, not 'chronic': only chronic runs forget patients\n")
    assert _cli("forget", str(other + 1), "--list")[::2] == (2, f"error: run {other + 1} does not exist\n")


def test_deleting_a_run_that_forgot_is_refused_without_the_flag(store: str) -> None:
    run_id = _chronic_run(store)
    assert _cli("forget", str(run_id), "--patient", "htn-3")[0] == 0
    code, out, err = _cli("runs", "delete", "--yes", str(run_id))
    assert (code, out) == (2, "") and "--with-forgettings deletes them" in err and len(err.strip().splitlines()) == 1
    code, out, _ = _cli("runs", "delete", "--yes", "--with-forgettings", str(run_id))
    assert code == 0 and "1 forgetting record" in out, out
