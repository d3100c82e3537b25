"""Forgetting patients from a recorded chronic-care run and recording it: the run's settings rebuilt from
the store, its earlier forgettings read (forgetting is cumulative), the domain's ``forget``, the records.

The CLI (``decisions forget``) and the app's Chronic care page both forget through ``forget_patients``.
"""

from __future__ import annotations

from collections.abc import Sequence

from decisions.errors import InputError
from decisions.health.chronic import DOMAIN as CHRONIC
from decisions.health.chronic.spec import ChronicJob
from decisions.store import get_run
from decisions.store.forgettings import (
    ForgettingRecord,
    Forgotten,
    check_forgettable,
    forgettings_of,
    newest_id,
    record_forgettings,
)


def forget_patients(run_id: int, patients: Sequence[str], *, created_by: str | None = None,
                    url: str | None = None, repeats: int = 5) -> list[ForgettingRecord]:
    """Forget ``patients`` from succeeded chronic-care run ``run_id``'s learner, after its earlier
    forgettings, and record each (who: ``created_by``, else the OS user); the new records, in order.

    Raises:
        RunNotFoundError: no such run.
        InputError: on ``run`` (another kind, not succeeded, its configuration no longer validates, or it
            gained a forgetting meanwhile) or ``patient`` (none, unknown, twice, already forgotten).
    """
    from decisions.health.chronic.forgetting import forget  # JAX: only once the run is known to forget

    record = get_run(run_id, url=url)
    check_forgettable(run_id, record.kind, record.status, kind=CHRONIC.name)
    job = CHRONIC.job_from_config(record.config)
    if not isinstance(job, ChronicJob):
        raise InputError("run", f"run {run_id}'s configuration is not a chronic-care job")
    earlier = forgettings_of(run_id, url=url)
    done = forget(job.care(), seed=job.seed, patients=patients, earlier=[r.patient for r in earlier], repeats=repeats)
    found = [Forgotten(**patient._asdict()) for patient in done.forgotten]
    return record_forgettings(run_id, found, kind=CHRONIC.name, after=newest_id(earlier), created_by=created_by,
                              url=url)
