"""The skeleton every domain page shares: header, ``?run=<id>``, form, Run button, report.

A page describes itself in a :class:`DomainPage` and calls :func:`run_page`; the skeleton opens
the page, loads a recorded run named in the URL, draws the form, runs the job as a recorded run
(or the page's own action) when the button is pressed, draws the report kept in the session and
then any sections the page adds below it. Behind the login gate, the page acts as the session's user
(``store.who.acting_as``) and its button is disabled for a role that may not run jobs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import app_common
import app_login
import streamlit as st
import today_views

from decisions.errors import InputError
from decisions.kit.domain import Domain
from decisions.store.who import acting_as


@dataclass(frozen=True)
class DomainPage:
    """What a domain page fills in.

    Attributes:
        domain: the page's domain (``DOMAIN`` of its package).
        icon: a Streamlit icon (``":material/..."``).
        intro: a paragraph of Markdown on what the page decides.
        settings: draws the form and returns its values.
        job_spec: ``(settings, output_dir) -> spec`` sent to the domain when the button is pressed.
        show: ``(report, run_id, url)`` draws the report kept in the session (default: nothing).
        loader: ``(run_id, url) -> report`` of a recorded run (default ``app_common.report_loader``).
        parse_scenario: checks a form's scenario before the run (``app_common.run_from_form``).
        can_run: whether the form's settings allow pressing the button (default: always).
        button: the button's label.
        button_key: the button's widget key.
        action: ``(settings, url)`` what the button does instead of a recorded run of ``job_spec``.
        after: ``(settings, url)`` draws sections below the report.

    Exactly one of ``job_spec`` and ``action`` is given.
    """

    domain: Domain
    icon: str
    intro: str
    settings: Callable[[], Any]
    job_spec: Callable[[Any, str], Mapping[str, Any]] | None = None
    show: Callable[[Any, int, str], None] | None = None
    loader: Callable[[int, str | None], Any] | None = None
    parse_scenario: Callable[[Any], object] | None = None
    can_run: Callable[[Any], bool] | None = None
    button: str = "Run"
    button_key: str = "run"
    action: Callable[[Any, str], None] | None = None
    after: Callable[[Any, str], None] | None = None

    def __post_init__(self) -> None:
        """Refuse a page with neither or both of ``job_spec`` and ``action``."""
        if (self.job_spec is None) == (self.action is None):
            raise TypeError(f"DomainPage of {self.domain.name}: give job_spec or action, exactly one of them")

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

    def kept_report(self) -> tuple[Any, int] | None:
        """``(report, run id)`` kept in the session (opened or run on the page), or None."""
        if self.report_key not in st.session_state:
            return None
        return st.session_state[self.report_key], st.session_state[self.run_id_key]


def run_page(page: DomainPage) -> str:
    """Draw the page: header, the run named by ``?run=<id>``, the Today panel (``today_views``), the form,
    its button, the report and ``after``.

    Returns:
        The run store URL the page reads and writes.
    """
    url = app_common.page_header(page.domain, page.icon, page.intro)
    with acting_as(app_login.current().name):
        _draw(page, url)
    return url


def _draw(page: DomainPage, url: str) -> None:
    """The page below its header (``run_page``)."""
    load = page.loader or app_common.report_loader(page.domain)
    app_common.open_requested_run(
        load, url=url, query_key=page.query_key, report_key=page.report_key, run_id_key=page.run_id_key
    )
    opened = page.kept_report()
    today_views.today_panel(page.domain, opened[1] if opened is not None else None, url)
    settings = page.settings()
    not_allowed = app_login.blocked("run")
    disabled = not_allowed or (page.can_run is not None and not page.can_run(settings))
    if st.button(page.button, type="primary", key=page.button_key, disabled=disabled):
        _press(page, settings, load, url)
    kept = page.kept_report()
    if page.show is not None and kept is not None:
        page.show(*kept, url)
    if page.after is not None:
        page.after(settings, url)


def _press(page: DomainPage, settings: Any, load: Callable[[int, str | None], Any], url: str) -> None:
    """The button's work: the page's ``action``, else a recorded run of ``job_spec`` whose report is kept."""
    job_spec = page.job_spec
    if page.action is not None:
        try:
            app_login.writer("run", url)
        except InputError as err:
            st.error(str(err))
            return
        page.action(settings, url)
    elif job_spec is not None:
        app_common.run_from_form(
            page.domain, lambda output_dir: job_spec(settings, output_dir), load, url,
            parse_scenario=page.parse_scenario, report_key=page.report_key, run_id_key=page.run_id_key,
        )


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
