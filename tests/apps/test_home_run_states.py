"""The home page shows every run's state: a dead run reads lost, failed/interrupted/lost runs show their
error, and every run (not only a succeeded one) links to its domain's page, which says why it has no report."""

from __future__ import annotations

import subprocess
import sys

from sqlalchemy import update
from streamlit.testing.v1 import AppTest

from decisions.platform.registry import get
from decisions.store import Run, finish_run, recorded_run, session_scope, start_run
from tests.apps.conftest import HOME
from tests.apps.helpers import open_page

WEALTH = get("wealth")


def _record_states(url: str) -> dict[str, int]:
    """A succeeded, a failed, an interrupted and a lost wealth run, and one still running."""
    ids = {}
    with recorded_run("wealth", "done", {}, url=url) as run:
        run.log_metrics({"expected_utility": 1.0})
    ids["done"] = run.run_id
    for name, status, error in (("broken", "failed", "ValueError: boom"),
                                ("stopped", "interrupted", "Terminated: stopped by signal SIGTERM")):
        ids[name] = start_run("wealth", name, {}, url=url)
        finish_run(ids[name], status=status, error=error, url=url)
    ids["killed"] = start_run("wealth", "killed", {}, url=url)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    with session_scope(url) as session:
        session.execute(update(Run).where(Run.id == ids["killed"]).values(pid=child.pid))
    ids["alive"] = start_run("wealth", "alive", {}, url=url)
    return ids


def test_home_lists_states_with_errors_and_warns_of_lost_runs(store_url: str) -> None:
    ids = _record_states(store_url)
    at = AppTest.from_file(HOME, default_timeout=30).run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value.set_index("name")
    assert table["status"].to_dict() == {
        "alive": "running", "killed": "lost", "stopped": "interrupted", "broken": "failed", "done": "succeeded",
    }
    assert table.loc["broken", "error"] == "ValueError: boom"
    assert table.loc["stopped", "error"] == "Terminated: stopped by signal SIGTERM"
    assert table.loc["killed", "error"].startswith("lost: process ")
    assert table[["error"]].loc[["alive", "done"]].isna().all().all()
    [warning] = at.warning
    assert f"1 run lost (#{ids['killed']})" in warning.value and "decisions runs reap" in warning.value

    assert {"interrupted", "lost"} <= set(at.selectbox(key="runs_status").options)
    at.selectbox(key="runs_status").select("lost").run()
    assert list(at.dataframe[0].value["name"]) == ["killed"]


def test_every_run_links_to_its_domain_page(store_url: str) -> None:
    ids = _record_states(store_url)
    at = AppTest.from_file(HOME, default_timeout=30).run()
    detail = at.selectbox(key="runs_detail")
    page = WEALTH.page.removeprefix("pages/").removesuffix(".py").split("_", 1)[1]
    for index, option in enumerate(detail.options):
        at.selectbox(key="runs_detail").select_index(index).run()
        assert not at.exception, at.exception
        [link] = at.get("page_link")
        run_id = int(option.split()[0].removeprefix("#"))
        assert (link.proto.page, link.proto.query_string) == (page, f"run={run_id}")
        succeeded = run_id == ids["done"]
        assert link.proto.label == ("Open its report" if succeeded else f"Open it on the {WEALTH.title} page")
        if run_id == ids["killed"]:
            assert at.error[0].value.startswith("lost: process ")


def test_a_domain_page_says_why_a_failed_or_lost_run_has_no_report(store_url: str) -> None:
    ids = _record_states(store_url)
    at = open_page(WEALTH.page, run=ids["broken"])
    assert at.error[0].value == (
        f"run: cannot open run '{ids['broken']}': run: run {ids['broken']} is failed (ValueError: boom), "
        "so it has no report"
    )
    at = open_page(WEALTH.page, run=ids["killed"])
    assert f"run {ids['killed']} is lost (lost: process " in at.error[0].value
    at = open_page(WEALTH.page, run=ids["alive"])
    assert at.error[0].value.endswith(f"run {ids['alive']} is running: its report is not written yet")
