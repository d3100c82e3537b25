"""Steps shared by the page tests: log in, open a page or its form, record a hand-made report, run a job from the
form, check errors."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from decisions.errors import InputError
from decisions.kit.domain import Domain
from decisions.kit.report import TablesReport
from decisions.store import RunRecord, list_runs, recorded_run
from tests.apps.conftest import HOME, USERS


def open_page(page: str, *, run: int | str | None = None, timeout: float = 30) -> AppTest:
    """Start the app at Home and switch to a page, as a user does; the page must not raise.

    Args:
        page: the page script, relative to ``apps/`` (``pages/3_Pension_ALM.py``).
        run: the ``?run=<id>`` query parameter, if any.
        timeout: seconds each script run may take.

    Returns:
        The app after the page's first run.
    """
    at = AppTest.from_file(HOME, default_timeout=timeout)
    if run is not None:
        at.query_params["run"] = str(run)
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def log_in(at: AppTest, name: str, password: str | None = None) -> AppTest:
    """Type a user name and password (default: the user's in ``conftest.USERS``) into the login form and
    submit it.

    Returns:
        ``at``, after the run the form started.
    """
    at.text_input(key="login_name").input(name)
    at.text_input(key="login_password").input(USERS[name][1] if password is None else password)
    at.button(key="login_submit").click().run()
    assert not at.exception, at.exception
    return at


def open_as(name: str, page: str, *, run: int | None = None) -> AppTest:
    """Log in as user ``name`` on Home (``log_in``), then switch to a page (``?run=<id>`` when ``run`` is
    given); the page must not raise.

    Returns:
        The app after the page's first run.
    """
    at = log_in(AppTest.from_file(HOME, default_timeout=30).run(), name)
    assert at.title[0].value == "decisions" and not at.error, [e.value for e in at.error]
    if run is not None:
        at.query_params["run"] = str(run)
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def open_report(page: str, run_id: int) -> AppTest:
    """Open a recorded run's report on its page with ``?run=<id>``: no error, the report headed by its id.

    Args:
        page: the page script, relative to ``apps/``.
        run_id: the run.

    Returns:
        The app showing the report.
    """
    at = open_page(page, run=run_id)
    assert not at.error, [e.value for e in at.error]
    assert at.header[0].value == f"Results of run #{run_id}"
    return at


def record_report(
    url: str, report: TablesReport, folder: Path, *, kind: str, config: Mapping[str, Any] | None = None
) -> int:
    """Record a succeeded ``hand-made`` run of a report built by hand, as a job records it.

    Args:
        url: run store URL.
        report: the report; its metrics are logged and its files saved under ``folder``.
        folder: where the report's files go.
        kind: the run kind (another domain's name tests the pages' refusal).
        config: the run's configuration (default: empty).

    Returns:
        The run id.
    """
    with recorded_run(kind, "hand-made", dict(config or {}), url=url) as run:
        run.log_metrics(report.metrics)
        for name, path in report.save(folder).items():
            run.add_artifact(name, str(path))
    return run.run_id


def submit(at: AppTest, numbers: Mapping[str, float], *, button: str = "run") -> AppTest:
    """Set number inputs of a page's form and press its run button.

    Args:
        at: the page.
        numbers: number input key -> value.
        button: the key of the button.

    Returns:
        ``at``, after the run the button started.
    """
    for key, value in numbers.items():
        at.number_input(key=key).set_value(value)
    at.button(key=button).click().run()
    return at


def one_line_error(at: AppTest, prefix: str) -> str:
    """Check that the page's first error starts with ``prefix`` (the field it names), on one line.

    Args:
        at: the app after the run that should fail.
        prefix: the expected start of the message, e.g. ``"optimise.steps:"``.

    Returns:
        The message, for further checks.
    """
    assert not at.exception, at.exception
    message = at.error[0].value
    assert message.startswith(prefix), message
    assert "\n" not in message and "Traceback" not in message, message
    return message


def run_from_form(
    at: AppTest, url: str, *, name: str, kind: str, numbers: Mapping[str, float], button: str = "run"
) -> RunRecord:
    """Name the run, set number inputs, press the page's run button; check the run is recorded and shown.

    Args:
        at: the page.
        url: run store URL (it must hold no other run).
        name: the run name typed into ``run_name``.
        kind: the run kind expected in the store.
        numbers: number input key -> value.
        button: the key of the page's run button.

    Returns:
        The recorded run (succeeded, its report headed on the page).
    """
    at.text_input(key="run_name").input(name)
    submit(at, numbers, button=button)
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    [run] = list_runs(url=url)
    assert (run.name, run.kind, run.status.value) == (name, kind, "succeeded")
    assert at.status[0].label == f"Run #{run.id} finished"
    assert at.header[0].value == f"Results of run #{run.id}"
    return run


def stop_at_prepare(domain: Domain, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Make the page's run button stop after ``domain``'s ``prepare``: no job runs.

    Returns:
        The jobs ``prepare`` made (an ``InputError`` from it names a setting the job would
        ignore); the page then shows the error "test: prepared".
    """
    spec_module = domain.spec()
    prepare, prepared = spec_module.prepare, []

    def prepare_then_stop(spec: dict[str, Any], base_dir: Path | None = None) -> Any:
        prepared.append(prepare(spec, base_dir))
        raise InputError("test", "prepared")

    monkeypatch.setattr(spec_module, "prepare", prepare_then_stop)
    return prepared


def open_form(domain: Domain, monkeypatch: pytest.MonkeyPatch) -> tuple[AppTest, list[Any]]:
    """Open a domain's page with its run button stopped after ``prepare`` (``stop_at_prepare``); the page
    shows the domain's title and no report.

    Returns:
        The page, and the list that receives the jobs ``prepare`` makes each time the button is pressed.
    """
    prepared = stop_at_prepare(domain, monkeypatch)
    at = open_page(domain.page)
    assert at.title[0].value == domain.title and not at.header
    return at, prepared
