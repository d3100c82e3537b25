"""The skeleton every domain page shares: header, ``?run=<id>``, form, Run button, report.

A page describes itself in a :class:`DomainPage` and calls :func:`run_page`; the skeleton opens
the page, loads a recorded run named in the URL, draws the form, runs the job as a recorded run
when the button is pressed and draws the report kept in the session.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import app_common
import streamlit as st

from decisions.kit.domain import Domain


@dataclass(frozen=True)
class DomainPage:
    """What a domain page fills in.

    Attributes:
        domain: the page's domain (``DOMAIN`` of its package).
        icon: a Streamlit icon (``":material/..."``).
        intro: a paragraph of Markdown on what the page decides.
        settings: draws the form and returns its values.
        job_spec: ``(settings, output_dir) -> spec`` sent to the domain.
        show: ``(report, run_id, url)`` draws a report.
        loader: ``(run_id, url) -> report`` of a recorded run (default ``app_common.report_loader``).
        parse_scenario: checks a form's scenario before the run (``app_common.run_from_form``).
        can_run: whether the form's settings allow pressing Run (default: always).
    """

    domain: Domain
    icon: str
    intro: str
    settings: Callable[[], Any]
    job_spec: Callable[[Any, str], Mapping[str, Any]]
    show: Callable[[Any, int, str], None]
    loader: Callable[[int, str | None], Any] | None = None
    parse_scenario: Callable[[Any], object] | None = None
    can_run: Callable[[Any], bool] | None = None

    @property
    def report_key(self) -> str:
        """Session key of the report shown (``<domain>_report``)."""
        return f"{self.domain.name}_report"

    @property
    def run_id_key(self) -> str:
        """Session key of the shown report's run id."""
        return f"{self.domain.name}_run_id"

    @property
    def query_key(self) -> str:
        """Session key of the last ``?run=<id>`` handled."""
        return f"{self.domain.name}_query_run"


def run_page(page: DomainPage) -> str:
    """Draw the page: header, the run named by ``?run=<id>``, the form, Run, the report kept in the session.

    Returns:
        The run store URL the page reads and writes.
    """
    url = app_common.page_header(page.domain, page.icon, page.intro)
    load = page.loader or app_common.report_loader(page.domain)
    app_common.open_requested_run(
        load, url=url, query_key=page.query_key, report_key=page.report_key, run_id_key=page.run_id_key
    )
    settings = page.settings()
    disabled = page.can_run is not None and not page.can_run(settings)
    if st.button("Run", type="primary", key="run", disabled=disabled):
        app_common.run_from_form(
            page.domain, lambda output_dir: page.job_spec(settings, output_dir), load, url,
            parse_scenario=page.parse_scenario, report_key=page.report_key, run_id_key=page.run_id_key,
        )
    if page.report_key in st.session_state:
        page.show(st.session_state[page.report_key], st.session_state[page.run_id_key], url)
    return url


def chart_section(
    title: str, caption: str, chart: Any, *, download: tuple[Any, str, int] | None = None
) -> None:
    """A report section: subheader, caption, a full-width chart and optionally a table's CSV download.

    Args:
        title: the subheader.
        caption: the line under it.
        chart: an Altair chart.
        download: ``(table, name, run_id)`` offered as CSV under the chart.
    """
    st.subheader(title)
    st.caption(caption)
    st.altair_chart(chart, width="stretch")
    if download is not None:
        app_common.download_csv(*download)
