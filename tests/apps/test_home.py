"""The home page: run table from the store, filters, run details and page links (from the registry), empty store,
password gate."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from decisions.platform.registry import DOMAINS
from decisions.store import RunStatus, finish_run, recorded_run, start_run
from tests.apps.conftest import HOME


def _record_runs(url: str) -> None:
    """Two succeeded gas storage runs with headline metrics and one failed run of another kind."""
    for name, value in (("alpha-lease", 1200.0), ("beta-lease", 1350.0)):
        with recorded_run("gas_storage", name, {"seed": 0, "name": name}, url=url) as run:
            run.log_metrics({"value_snapo": value, "value_rolling_intrinsic": 1000.0,
                             "snapo_vs_rolling_intrinsic": value / 1000.0})
            run.add_artifact("comparison", "/nonexistent/comparison.csv")
    run_id = start_run("building", "gamma-failed", {"x": 1}, url=url)
    finish_run(run_id, status=RunStatus.FAILED, error="ValueError: boom", url=url)


def test_home_with_empty_store_says_so(store_url: str) -> None:
    at = AppTest.from_file(HOME, default_timeout=30).run()
    assert not at.exception
    assert at.title[0].value == "decisions"
    assert not at.dataframe
    [empty] = [info.value for info in at.info if "No runs recorded yet" in info.value]
    for domain in DOMAINS:  # every domain page is named, from the registry
        assert (f"**{domain.title}**" in empty) == (domain.page is not None)


def test_home_lists_recorded_runs_with_headline_metrics(store_url: str) -> None:
    _record_runs(store_url)
    at = AppTest.from_file(HOME, default_timeout=30).run()
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table["name"]) == ["gamma-failed", "beta-lease", "alpha-lease"]
    assert list(table["status"]) == ["failed", "succeeded", "succeeded"]
    headlines = table.set_index("name")["headline"]
    assert headlines["beta-lease"] == "value_snapo=1,350, snapo_vs_rolling_intrinsic=1.35"
    assert headlines["gamma-failed"] == "" and "value_snapo" not in table  # one column, each run's own figures
    assert not any("SNAPO" in m.value for m in at.markdown)  # not every domain trains with SNAPO
    # details of the newest run: its error, then its metrics and config
    assert at.error[0].value == "ValueError: boom"
    assert at.json[0].value == '{"x": 1}'


def test_home_filters_by_status_and_kind_and_shows_details(store_url: str) -> None:
    _record_runs(store_url)
    at = AppTest.from_file(HOME, default_timeout=30).run()
    at.selectbox(key="runs_status").select("succeeded").run()
    assert set(at.dataframe[0].value["name"]) == {"alpha-lease", "beta-lease"}
    at.selectbox(key="runs_kind").select("building").run()
    assert not at.dataframe
    assert any("No run matches" in info.value for info in at.info)
    at.selectbox(key="runs_kind").select("gas_storage")
    at.selectbox(key="runs_status").select("all").run()
    detail = at.selectbox(key="runs_detail")
    detail.select(detail.options[-1]).run()  # the oldest run, alpha-lease
    assert not at.exception
    metrics = at.dataframe[2].value
    assert dict(zip(metrics["metric"], metrics["value"], strict=True))["value_snapo"] == pytest.approx(1200.0)
    artifacts = at.dataframe[3].value
    assert list(artifacts["name"]) == ["comparison"]


def test_each_succeeded_run_links_to_its_domain_page(store_url: str) -> None:
    paged = [domain for domain in DOMAINS if domain.page]
    assert paged
    for domain in paged:
        with recorded_run(domain.name, f"{domain.name}-run", {}, url=store_url):
            pass
    at = AppTest.from_file(HOME, default_timeout=30).run()
    for index, domain in enumerate(reversed(paged)):  # newest run first
        at.selectbox(key="runs_detail").select_index(index).run()
        assert not at.exception, at.exception
        [link] = at.get("page_link")
        run_id = len(paged) - index
        page = domain.page.removeprefix("pages/").removesuffix(".py").split("_", 1)[1]
        assert (link.proto.page, link.proto.query_string) == (page, f"run={run_id}")


def test_password_gate_blocks_until_the_password_is_given(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DECISIONS_APP_PASSWORD", "open sesame")
    _record_runs(store_url)
    at = AppTest.from_file(HOME, default_timeout=30).run()
    assert not at.exception
    assert not at.title and not at.dataframe
    assert at.text_input(key="app_password").proto.type == at.text_input(key="app_password").proto.PASSWORD

    at.text_input(key="app_password").input("open sesam").run()
    assert not at.title and not at.dataframe
    assert at.error[0].value == "Wrong password."

    at.text_input(key="app_password").input("open sesame").run()
    assert not at.exception
    assert at.title[0].value == "decisions"
    assert "beta-lease" in set(at.dataframe[0].value["name"])
    assert not at.text_input  # the gate is gone for the rest of the session
    at.run()
    assert at.title[0].value == "decisions"
