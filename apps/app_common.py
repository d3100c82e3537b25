"""Helpers shared by every page of the operator app: the page header (behind the login gate of
``app_login``), the run store, progress bars.

Pages import this module by name (``import app_common``): Streamlit puts the
folder of the main script (``apps/``) on ``sys.path`` while a page runs.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st
from sqlalchemy import select
from streamlit.delta_generator import DeltaGenerator

from decisions.errors import InputError
from decisions.kit.domain import Domain
from decisions.kit.report import TablesReport
from decisions.platform.record import execute_domain, load_run_report
from decisions.platform.registry import DOMAINS, find
from decisions.store import Run, RunRecord, RunStatus, artifacts_root, get_run, session_scope


def platform_overview() -> str:
    """The Home page's introduction (Markdown): what every domain does, in the registry's words."""
    systems = "\n".join(f"- **{domain.title}**: {domain.summary}" for domain in DOMAINS if domain.page)
    return ("Decision optimisation on simulators: each system trains its own policy and reports it next to "
            "its baselines. Pick a system in the sidebar to run it; every run is recorded below.\n\n" + systems)


def headline_text(kind: str, metrics: Mapping[str, float | None]) -> str:
    """A run's own headline figures: those of its domain's headline metrics it has, ``name=value`` joined
    by ``", "``, most important first; empty for none (or a kind no domain has)."""
    domain = find(kind)
    names = domain.headline if domain is not None else ()
    return ", ".join(f"{name}={metrics[name]:,.4g}" for name in names if metrics.get(name) is not None)


def page_header(domain: Domain, icon: str, intro: str) -> str:
    """Open a domain's page: its tab title and icon, the login gate (``app_login.require_login``), its title
    and introduction.

    Args:
        domain: the page's domain (``DOMAIN`` of its package); its ``title`` heads the page.
        icon: a Streamlit icon (``":material/..."``).
        intro: a paragraph of Markdown on what the page decides.

    Returns:
        The run store URL the page reads and writes.
    """
    import app_login

    from decisions.store import database_url

    st.set_page_config(page_title=f"{domain.title} · decisions", page_icon=icon, layout="wide")
    url = database_url()
    app_login.require_login(url)
    st.title(domain.title)
    st.markdown(intro)
    return url


Figure = tuple[str, str, str | None]
"""A headline figure for ``st.metric``: ``(label, value, delta)``."""


def format_figures(
    metrics: Mapping[str, float], headline: Iterable[tuple[str, str, str]], *, missing: str | None = None
) -> list[Figure]:
    """The headline figures a run has, formatted.

    Args:
        metrics: the run's metrics.
        headline: ``(metric name, label, format string)`` in display order.
        missing: shown for a listed metric that is absent or not finite (default: leave it out).

    Returns:
        ``(label, fmt.format(value), None)`` for each listed metric present in ``metrics`` (and
        ``(label, missing, None)`` for the others when ``missing`` is given).
    """
    figures: list[Figure] = []
    for name, label, fmt in headline:
        value = metrics.get(name)
        if value is not None and math.isfinite(float(value)):
            figures.append((label, fmt.format(float(value)), None))
        elif missing is not None:
            figures.append((label, missing, None))
    return figures


def metric_row(figures: Sequence[Figure]) -> None:
    """One row of ``st.metric`` tiles, one per ``(label, value, delta)`` figure (nothing when there are none)."""
    if figures:
        for column, (label, value, delta) in zip(st.columns(len(figures)), figures, strict=True):
            column.metric(label, value, delta)


def results_header(run_id: int, figures: Sequence[Figure]) -> None:
    """Head a run's report: ``Results of run #<id>`` and the row of its headline figures."""
    st.header(f"Results of run #{run_id}")
    metric_row(figures)


def number_columns(formats: Mapping[str, str], labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``column_config`` entries showing each named column as a number in its format.

    Args:
        formats: column name -> printf-style format (``"%.2f"``).
        labels: column name -> heading, for columns not headed by their own name.

    Returns:
        Column name -> ``st.column_config.NumberColumn``.
    """
    headings = labels or {}
    return {name: st.column_config.NumberColumn(headings.get(name, name), format=fmt) for name, fmt in formats.items()}


def show_table(frame: pd.DataFrame, column_config: Mapping[str, Any] | None = None) -> None:
    """Draw a table the app's way: full width, without its index, columns as ``column_config`` says."""
    st.dataframe(frame, hide_index=True, width="stretch", column_config=column_config)


def table_section(
    title: str, table: pd.DataFrame, chart: Any, *, caption: str | None = None,
    column_config: Mapping[str, Any] | None = None, download: tuple[pd.DataFrame, str, int] | None = None,
) -> None:
    """A report section: subheader, optional caption, a table (``show_table``), a full-width chart under it
    and optionally a table's CSV download.

    Args:
        title: the subheader.
        table: the table shown.
        chart: an Altair chart.
        caption: the line under the subheader (None: no caption).
        column_config: how the table's columns are shown (``show_table``).
        download: ``(table, name, run_id)`` offered as CSV under the chart (``download_csv``).
    """
    st.subheader(title)
    if caption is not None:
        st.caption(caption)
    show_table(table, column_config)
    st.altair_chart(chart, width="stretch")
    if download is not None:
        download_csv(*download)


def training_curve_section(training_curve: pd.DataFrame | None, run_id: int) -> None:
    """The SNAPO training curve of a run, with its CSV download (nothing when the run has none)."""
    import app_charts

    if training_curve is None or training_curve.empty:
        return
    st.subheader("SNAPO training curve")
    st.altair_chart(app_charts.training_chart(training_curve), width="stretch")
    download_csv(training_curve, "training_curve", run_id)


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
    """One row per run: id, kind, name, status, start, duration, its own headline figures and the error.

    Args:
        runs: Run records, e.g. from ``decisions.store.list_runs`` (a dead run's status reads ``lost``).

    Returns:
        The table, in the order given; ``headline`` holds each run's ``headline_text`` (empty text when it
        has none). The ``headline`` column when no run has one, and the ``error`` column (why a run
        failed, was interrupted or is lost) when no run has one, are left out.
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
                "headline": headline_text(run.kind, metrics),
                "error": run.error,
            }
        )
    columns = ["id", "kind", "name", "status", "started", "duration_s", "headline", "error"]
    frame = pd.DataFrame(rows, columns=columns)
    empty = [name for name in ("headline", "error") if frame[name].isna().all() or frame[name].eq("").all()]
    return frame.drop(columns=empty)


def load_report(domain: Domain, run_id: int, url: str | None) -> tuple[TablesReport, RunRecord]:
    """Reopen a recorded run's report with its domain's ``Report.load`` (tables, fields, metrics).

    Args:
        domain: the page's domain (``DOMAIN`` of its package).
        run_id: the run.
        url: database URL; None means ``database_url()``.

    Returns:
        The report and the run record (for its configuration).

    Raises:
        RunNotFoundError: no such run.
        InputError: the run is of another domain, did not succeed (its state and error are
            named), or its saved report is gone from disk.
    """
    record = get_run(run_id, url=url)
    if record.kind != domain.name:
        raise InputError("run", f"run {run_id} is a {record.kind} run, not {domain.name}")
    try:
        return load_run_report(domain, record), record
    except (OSError, ValueError) as exc:
        if record.status is not RunStatus.SUCCEEDED:
            raise InputError("run", no_report_reason(record)) from None
        raise InputError("run", f"run {run_id}: {exc}") from None


def no_report_reason(record: RunRecord) -> str:
    """Why a run that did not succeed has no report: its state and its error, on one line."""
    why = f"run {record.id} is {record.status.value}" + (f" ({record.error})" if record.error else "")
    return why + (": its report is not written yet" if record.status is RunStatus.RUNNING else ", so it has no report")


def report_loader(domain: Domain) -> Callable[[int, str | None], TablesReport]:
    """The ``loader(run_id, url) -> report`` of a domain's recorded runs (``load_report`` without the record).

    Pages pass it to ``open_requested_run`` and ``execute_with_status``.

    Args:
        domain: the page's domain (``DOMAIN`` of its package).

    Returns:
        A loader raising ``RunNotFoundError`` or ``InputError`` (naming ``run``) like ``load_report``.
    """

    def load(run_id: int, url: str | None) -> TablesReport:
        return load_report(domain, run_id, url)[0]

    return load


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
        job: the prepared job (``DOMAIN.prepare(spec)``; its ``name`` labels the box).
        execute: the domain's ``execute_domain`` bound to the domain (``execute(job, *, url, progress) -> run_id``).
        load: ``load(run_id, url) -> report`` reading the recorded run back, e.g.
            ``report_loader(DOMAIN)``.
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


def job_table(domain: Domain, form: Mapping[str, Any], output_dir: str | None, **extra: Any) -> dict[str, Any]:
    """The ``[job]`` table of a page's form: kind, run name, seed, any ``extra`` keys and the output folder.

    Args:
        domain: the page's domain (its ``name`` is the job kind).
        form: the form's values; ``name`` and ``seed`` are read.
        output_dir: where the run's files go (None: next to the store, no ``output_dir`` key).
        **extra: further keys of the table (e.g. ``method``).

    Returns:
        The table of the job spec.
    """
    table: dict[str, Any] = {"kind": domain.name, "name": str(form["name"]), "seed": int(form["seed"]), **extra}
    if output_dir is not None:
        table["output_dir"] = output_dir
    return table


def run_from_form(
    domain: Domain,
    spec: Callable[[str], Mapping[str, Any]],
    load: Callable[[int, str | None], Any],
    url: str,
    *,
    parse_scenario: Callable[[Any], object] | None = None,
    report_key: str | None = None,
    run_id_key: str | None = None,
) -> int | None:
    """Validate a page's form, run its job in a recorded run with progress bars, and keep the report.

    A bad form, or a session whose role may not run jobs (``app_login.writer``), shows one error line
    naming the field (``InputError``) and records nothing; the run records the session's user as who
    started it.

    Args:
        domain: the page's domain (``DOMAIN.prepare`` validates the spec, ``execute_domain`` runs it).
        spec: ``spec(output_dir) -> job spec`` of the form's values (``output_dir``: ``artifacts_dir(url)``);
            may raise ``InputError``.
        load: ``load(run_id, url) -> report`` reading the recorded run back (``execute_with_status``).
        url: run store URL.
        parse_scenario: e.g. the domain's ``Scenario.parse``, applied to the spec's ``scenario`` table
            first: it names a bad field before the job module (and JAX) is imported.
        report_key: session key receiving the report (None: not kept).
        run_id_key: session key receiving the run id (None: not kept).

    Returns:
        The new run's id, or None when the form is invalid or the run failed.
    """
    import app_login

    from decisions.store.who import acting_as

    try:
        who = app_login.writer("run", url)
        job_spec = spec(artifacts_dir(url))
        if parse_scenario is not None:
            parse_scenario(job_spec["scenario"])
        job = domain.prepare(job_spec)
    except InputError as err:
        st.error(str(err))
        return None
    with acting_as(who):
        outcome = execute_with_status(job, functools.partial(execute_domain, domain), load, url)
    if outcome is None:
        return None
    run_id, report = outcome
    if report_key is not None:
        st.session_state[report_key] = report
    if run_id_key is not None:
        st.session_state[run_id_key] = run_id
    return run_id
