"""``decisions forget``: forget patients from a succeeded chronic-care run's learnt policy, each forgetting
recorded in the run store, or ``--list`` a run's forgettings.

A record holds the run, the patient, the sha256 of the learner's data (its transition counts) before
and after, that of its policy after, whether unlearning equalled retraining bit for bit, both times,
who (the OS user) and when. Bad input is one ``error:`` line and exit code 2.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from decisions import cli_checks
from decisions.cli_console import CliConsole
from decisions.cli_errors import clean_errors, err_console
from decisions.errors import InputError

if TYPE_CHECKING:
    from decisions.store.forgettings import ForgettingRecord

console = CliConsole()

COLUMNS = ("#", "patient", "disease", "data sha256 before", "data sha256 after", "policy sha256 after",
           "equals retraining", "unlearn ms", "retrain ms", "by", "at (UTC)")
"""The columns of a forgetting table, one row per record."""


def forgetting_rows(records: Sequence[ForgettingRecord]) -> list[tuple[str, ...]]:
    """The cells of ``records``, one row each, in ``COLUMNS``' order."""
    return [
        (str(r.id), r.patient, r.disease, r.data_digest_before, r.data_digest_after, r.policy_digest_after,
         "yes" if r.equal else "NO", f"{r.unlearn_seconds * 1e3:.2f}", f"{r.retrain_seconds * 1e3:.2f}",
         r.created_by or "", f"{r.created_at:%Y-%m-%d %H:%M:%S}")
        for r in records
    ]


def _print(records: Sequence[ForgettingRecord], title: str) -> None:
    table = Table(*COLUMNS, title=title)
    for row in forgetting_rows(records):
        table.add_row(*row)
    console.print(table)


@clean_errors
def forget_command(
    run_id: Annotated[int, typer.Argument(help="A succeeded chronic-care run.")],
    patient: Annotated[
        list[str] | None,
        typer.Option("--patient", help="A patient's identifier in the run's logs (e.g. t2d-17). Repeatable."),
    ] = None,
    list_only: Annotated[bool, typer.Option("--list", help="Only list the run's forgettings, oldest first.")] = False,
) -> None:
    """Forget patients from a chronic-care run's learnt policy (checked against retraining), recorded in the store."""
    cli_checks.run_id(run_id)
    from decisions.store import get_run
    from decisions.store.forgettings import forgettings_of

    if list_only:
        if patient:
            raise InputError("list", "--list only shows the run's forgettings: give it without --patient")
        get_run(run_id)  # an unknown run is refused
        records = forgettings_of(run_id)
        _print(records, f"forgettings of run {run_id}") if records else console.print(
            f"run {run_id} has no forgettings", highlight=False)
        return
    if not patient:
        raise InputError("patient", "name a patient to forget (--patient ID), or give --list")
    cli_checks.allowed("forget")
    from decisions.platform.forgetting import forget_patients

    records = forget_patients(run_id, patient)
    _print(records, f"forgotten from run {run_id}")
    if not all(r.equal for r in records):
        err_console.print("[red]warning:[/red] unlearning did not equal retraining for "
                          + ", ".join(r.patient for r in records if not r.equal), highlight=False)
