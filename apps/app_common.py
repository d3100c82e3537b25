"""Helpers shared by every page of the operator app: the password gate, the run store, progress bars.

Pages import this module by name (``import app_common``): Streamlit puts the
folder of the main script (``apps/``) on ``sys.path`` while a page runs.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st
from sqlalchemy import select
from streamlit.delta_generator import DeltaGenerator

from decisions.store import ArtifactRecord, Run, RunRecord, artifacts_root, session_scope

PASSWORD_ENV = "DECISIONS_APP_PASSWORD"
"""Environment variable holding the app password; unset or empty means no gate."""

_AUTH_KEY = "app_authenticated"

HEADLINE_METRICS = (
    "value_snapo",
    "value_rolling_intrinsic",
    "value_lsmc",
    "value_intrinsic_lp",
    "snapo_vs_rolling_intrinsic",
    "best_agent_saving_vs_lp",
    "lp_saving_usd",
    "snapo_yield",
    "yield_gain",
    "snapo_minus_fixed_mix",
    "expected_utility_planner",
    "planner_vs_dp",
)
"""Metrics shown as columns of the runs table, when at least one listed run has them."""


def require_password() -> None:
    """Stop the page until the user has typed the app password (a no-op when none is set).

    Every page calls this first. The password is ``$DECISIONS_APP_PASSWORD``;
    a correct entry is remembered in ``st.session_state`` for the session.
    """
    expected = os.environ.get(PASSWORD_ENV, "")
    if not expected or st.session_state.get(_AUTH_KEY):
        return
    entered = st.text_input("Password", type="password", key="app_password")
    if entered and hmac.compare_digest(entered.encode(), expected.encode()):
        st.session_state[_AUTH_KEY] = True
        st.rerun()
    if entered:
        st.error("Wrong password.")
    else:
        st.info("This app is protected: enter the password to continue.")
    st.stop()


def artifacts_dir(url: str | None = None) -> str:
    """Folder for the files of runs started from the app (``store.artifacts_root``)."""
    return str(artifacts_root(url))


def run_kinds(url: str | None = None) -> list[str]:
    """Every run kind recorded in the store, sorted.

    Args:
        url: Database URL; None means ``database_url()``.

    Returns:
        The distinct kinds.
    """
    with session_scope(url, read_only=True) as session:
        return sorted(session.scalars(select(Run.kind).distinct()))


def runs_frame(runs: Iterable[RunRecord]) -> pd.DataFrame:
    """One row per run: id, kind, name, status, start, duration and the headline metrics present.

    Args:
        runs: Run records, e.g. from ``decisions.store.list_runs``.

    Returns:
        The table, in the order given; metric columns that no run has are left out.
    """
    rows = []
    for run in runs:
        metrics = run.latest_metrics()
        started = run.started_at or run.created_at
        rows.append(
            {
                "id": run.id,
                "kind": run.kind,
                "name": run.name,
                "status": run.status.value,
                "started": started.astimezone().replace(tzinfo=None) if started else None,
                "duration_s": run.duration_seconds,
                **{name: metrics.get(name) for name in HEADLINE_METRICS},
            }
        )
    columns = ["id", "kind", "name", "status", "started", "duration_s", *HEADLINE_METRICS]
    frame = pd.DataFrame(rows, columns=columns)
    empty = [name for name in HEADLINE_METRICS if frame[name].isna().all()]
    return frame.drop(columns=empty)


def csv_tables(artifacts: Iterable[ArtifactRecord]) -> dict[str, pd.DataFrame]:
    """Read the CSV artifacts of a run that are still on disk.

    Args:
        artifacts: The run's artifact records.

    Returns:
        Artifact name -> table; missing or unreadable files are skipped.
    """
    tables: dict[str, pd.DataFrame] = {}
    for artifact in artifacts:
        path = Path(artifact.path)
        if path.suffix.lower() != ".csv" or not path.is_file():
            continue
        try:
            frame = pd.read_csv(path)
        except (OSError, ValueError, pd.errors.ParserError):
            continue
        if "date" in frame:
            frame["date"] = pd.to_datetime(frame["date"], errors="coerce")
        tables[artifact.name] = frame
    return tables


class StreamlitProgress:
    """A ``progress(task, done, total)`` callback that draws one ``st.progress`` bar per task.

    Args:
        container: Where the bars go, e.g. an ``st.status`` block.
    """

    def __init__(self, container: DeltaGenerator) -> None:
        self._container = container
        self._bars: dict[str, DeltaGenerator] = {}

    def __call__(self, task: str, done: int, total: int) -> None:
        """Move the bar of ``task`` to ``done / total`` (creating the bar on first report)."""
        fraction = min(max(done / total, 0.0), 1.0) if total > 0 else 1.0
        text = f"{task}: {done}/{total}"
        bar = self._bars.get(task)
        if bar is None:
            self._bars[task] = self._container.progress(fraction, text=text)
        else:
            bar.progress(fraction, text=text)

    @property
    def tasks(self) -> list[str]:
        """Task names reported so far, in order of first report."""
        return list(self._bars)


def open_requested_run(
    loader: Callable[[int, str | None], Any], *, url: str | None, query_key: str, report_key: str,
    run_id_key: str | None = None,
) -> None:
    """Load the run named by ``?run=<id>`` into ``st.session_state[report_key]`` once per id.

    A bad id, a missing run or a run of another kind shows one error line (never a traceback).

    Args:
        loader: ``loader(run_id, url) -> report``; raises ``ValueError``, ``RunNotFoundError``
            or ``InputError`` when the run cannot be shown.
        url: run store URL.
        query_key: session key remembering the last id handled (so a rerun does not reload).
        report_key: session key receiving the report.
        run_id_key: optional session key receiving the run id.
    """
    from decisions.errors import InputError
    from decisions.store import RunNotFoundError

    requested = st.query_params.get("run")
    if not requested or st.session_state.get(query_key) == requested:
        return
    st.session_state[query_key] = requested
    try:
        st.session_state[report_key] = loader(int(requested), url)
        if run_id_key is not None:
            st.session_state[run_id_key] = int(requested)
    except (ValueError, RunNotFoundError, InputError) as err:
        st.error(f"run: cannot open run {requested!r}: {err}")


def download_csv(frame: pd.DataFrame, name: str, run_id: int) -> None:
    """A CSV download button for one table of a run."""
    st.download_button(
        f"Download {name.replace('_', ' ')} (CSV)",
        frame.to_csv(index=False).encode(),
        file_name=f"run-{run_id}-{name}.csv",
        mime="text/csv",
        key=f"download_{name}",
    )


def execute_with_status(
    job: Any, execute: Callable[..., int], load: Callable[[int, str | None], Any], url: str | None
) -> tuple[int, Any] | None:
    """Run a prepared job in a recorded run inside a status box with progress bars.

    Args:
        job: the prepared job (its ``name`` labels the box).
        execute: the domain's ``execute(job, *, url, progress) -> run_id``.
        load: ``load(run_id, url) -> report`` reading the recorded run back.
        url: run store URL.

    Returns:
        ``(run_id, report)``, or None when the run failed (one error line is shown; the store
        records the failure too).
    """
    from decisions.store import error_line

    with st.status(f"Running {job.name}…", expanded=True) as status:
        progress = StreamlitProgress(status)
        try:
            run_id = execute(job, url=url, progress=progress)
            report = load(run_id, url)
        except Exception as exc:  # any failure is shown on one line; the store records it too
            status.update(label="Run failed", state="error")
            st.error(error_line(exc))
            return None
        status.update(label=f"Run #{run_id} finished", state="complete", expanded=False)
    return run_id, report
