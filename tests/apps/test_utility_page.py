"""The Utility weights page: the form, a recorded run opened with ``?run=<id>``, choosing the operating
point to deploy and its history (and who may, once the store has users), the views."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from decisions.recsys.utility import DOMAIN, UtilityReport
from decisions.recsys.utility.report import front_title
from decisions.store import deployments, get_run, list_runs
from tests.apps.conftest import APPS
from tests.apps.helpers import open_as, open_form, open_report, record_report

UTILITY_PAGE = DOMAIN.page

if str(APPS) not in sys.path:
    sys.path.insert(0, str(APPS))  # the page imports its helpers by name, as Streamlit runs it
import utility_views  # noqa: E402

LAMBDAS = (0.0, 0.5, 1.0)


def _front() -> pd.DataFrame:
    """A front with the real table's columns: production, then every method at every lambda."""
    rows = [{"method": "production", "scalarisation": "fixed", "lambda": np.nan, "engagement": 0.43,
             "revenue": 8.4, "success": 0.55, "hides": 0.25, "utility": np.nan, "w_save": 0.5, "w_hide": 0.25,
             "w_revenue": 0.25, "distinct_weights": 1}]
    series = [("learnt", "linear", 0.0), ("learnt", "chebyshev", 0.01), ("global", "linear", -0.05),
              ("linucb", "linear", -0.02), ("context_oracle", "linear", 0.04), ("request_oracle", "linear", 0.08)]
    for lam in LAMBDAS:
        for method, scalarisation, shift in series:
            rows.append({"method": method, "scalarisation": scalarisation, "lambda": lam,
                         "engagement": 0.48 - 0.08 * lam + shift, "revenue": 6.5 + 3.0 * lam + shift,
                         "success": 0.6 - 0.05 * lam, "hides": 0.2 + 0.05 * lam, "utility": 0.7,
                         "w_save": 0.9 - 0.6 * lam, "w_hide": 0.05, "w_revenue": 0.05 + 0.6 * lam,
                         "distinct_weights": 7})
    return pd.DataFrame(rows)


def _off_policy() -> pd.DataFrame:
    rows = []
    for lam in LAMBDAS:
        for estimator in ("ips", "dr"):
            for objective, truth in (("engagement", 0.48 - 0.08 * lam), ("revenue", 6.5 + 3.0 * lam)):
                estimate = truth * (1.1 if estimator == "ips" else 1.02)
                rows.append({"lambda": lam, "estimator": estimator, "objective": objective, "estimate": estimate,
                             "ci_low": estimate * 0.9, "ci_high": estimate * 1.1, "truth": truth,
                             "rel_error": abs(estimate - truth) / truth})
    return pd.DataFrame(rows)


def _hand_made_report() -> UtilityReport:
    """A small report with the real tables' columns, written by hand (no JAX run needed)."""
    off_policy = _off_policy()
    errors = off_policy[off_policy["lambda"] == 0.5].assign(logger="uniform").reset_index(drop=True)
    segments = pd.DataFrame([
        {"segment": name, "share": share, "lambda": 0.5, "w_save": ws, "w_hide": 0.0, "w_revenue": 1 - ws,
         "engagement_learnt": 0.6, "revenue_learnt": 7.0, "success_learnt": 0.65, "hides_learnt": 0.1,
         "engagement_production": 0.55, "revenue_production": 8.0, "success_production": 0.6,
         "hides_production": 0.1}
        for name, share, ws in (("new", 0.6, 0.9), ("power", 0.4, 0.7))
    ])
    drift = pd.DataFrame({"day": [1, 2], "day0_policy": [0.57, 0.60], "retrained_policy": [0.57, 0.65],
                          "day0_global": [0.58, 0.59], "retrained_global": [0.58, 0.62]})
    obd_front = pd.DataFrame({
        "lambda": list(LAMBDAS), "value": [0.04, 0.8, 1.9], "click_ips": [0.0042, 0.0040, 0.0041],
        "click_ips_low": [0.0028, 0.0022, 0.0013], "click_ips_high": [0.0051, 0.0051, 0.0062],
        "click_dr": [0.0042, 0.0040, 0.0042], "click_dr_low": [0.0028, 0.0022, 0.0014],
        "click_dr_high": [0.0052, 0.0052, 0.0063], "ess": [5400.0, 5100.0, 1400.0],
        "non_dominated": [True, False, True], "dominated_with_confidence": [False, False, False],
        "dominated_paired": [False, True, False],
    })
    return UtilityReport(
        front=_front(), off_policy=off_policy, estimator_errors=errors, segments=segments, drift=drift,
        obd_front=obd_front,
        metrics={"hypervolume_ratio_vs_global": 1.25, "dr_rel_error": 0.02, "engagement_gain_vs_production": 0.031},
    )


@pytest.fixture
def run_id(store_url: str, tmp_path: Path) -> int:
    """A recorded utility run of the hand-made report."""
    return record_report(store_url, _hand_made_report(), tmp_path / "run", kind=DOMAIN.name)


def test_views_frontier_tooltip_has_the_weights_and_the_dr_interval() -> None:
    report = _hand_made_report()
    points = utility_views.front_points(report.front, report.off_policy)
    learnt = points[(points["method"] == "learnt") & (points["scalarisation"] == "linear")].set_index("lambda")
    assert learnt.loc[0.5, "dr_engagement"] == pytest.approx(0.44 * 1.02)
    assert learnt.loc[0.5, "dr_revenue_ci"] == "8.16 [7.344, 8.976]"
    others = points[~((points["method"] == "learnt") & (points["scalarisation"] == "linear"))]
    assert others["dr_engagement"].isna().all() and (others["dr_engagement_ci"] == "").all()
    assert set(points["series"]) == {"production weights", "learnt (Q-network)", "learnt (Q-network), Chebyshev",
                                     "best global weights", "LinUCB", "per-context oracle", "per-request oracle"}

    spec = utility_views.frontier_chart(report.front, report.off_policy).to_dict()
    tooltip = {t["field"] for t in spec["layer"][0]["encoding"]["tooltip"]}
    assert {"series", "lambda", "engagement", "revenue", "success", "hides", "w_save", "w_hide", "w_revenue",
            "distinct_weights", "dr_engagement_ci", "dr_revenue_ci"} <= tooltip
    assert spec["layer"][1]["mark"]["shape"] == utility_views.STAR


def test_views_learnt_points_deployment_segments_and_obd() -> None:
    report = _hand_made_report()
    table = utility_views.learnt_points(report.front, report.off_policy)
    assert list(table["lambda"]) == list(LAMBDAS)
    assert table["dr_engagement_low"].iloc[0] == pytest.approx(0.48 * 1.02 * 0.9)
    assert table["dr_revenue_high"].iloc[2] == pytest.approx(9.5 * 1.02 * 1.1)
    chebyshev = utility_views.learnt_points(report.front, report.off_policy, "chebyshev")
    assert chebyshev["dr_engagement"].isna().all()  # the estimates are of the linear policy

    points = utility_views.operating_points(report.front)
    assert points[:3] == [("linear", 0.0), ("linear", 0.5), ("linear", 1.0)] and len(points) == 6
    label, settings = utility_views.deployment(report.front, report.off_policy, ("linear", 0.5))
    assert label == "learnt, linear, lambda 0.5"
    assert settings["lambda"] == 0.5 and settings["method"] == "learnt" and settings["scalarisation"] == "linear"
    assert settings["engagement"] == pytest.approx(0.44) and settings["dr_revenue_low"] == pytest.approx(8.16 * 0.9)
    _, cheb = utility_views.deployment(report.front, report.off_policy, ("chebyshev", 1.0))
    assert cheb["dr_engagement"] is None  # plain JSON, no NaN
    with pytest.raises(KeyError):
        utility_views.deployment(report.front, report.off_policy, ("linear", 0.3))

    view = utility_views.segment_view(report.segments)
    assert list(view["segment"]) == ["new", "power"]
    assert view["revenue_change"].tolist() == pytest.approx([-1.0, -1.0])
    assert view["engagement_change"].tolist() == pytest.approx([0.05, 0.05])

    errors = utility_views.estimator_view(report.estimator_errors)
    assert set(errors["estimator"]) == {"IPS", "DR"} and errors["covers"].all()
    assert utility_views.obd_view(report.obd_front)["status"].tolist() == [
        "non-dominated", "dominated (with confidence)", "non-dominated"]
    obd = utility_views.obd_chart(report.obd_front).to_dict()
    assert obd["layer"][1]["mark"]["type"] == "errorbar"
    assert obd["layer"][1]["encoding"]["y2"]["field"] == "click_dr_high"
    for chart in (utility_views.segment_chart(report.segments),
                  utility_views.segment_weights_chart(report.segments, utility_views.production_weights(report.front)),
                  utility_views.estimator_chart(report.estimator_errors), utility_views.drift_chart(report.drift)):
        assert chart.to_dict()
    assert [v for _, v, _ in utility_views.headline(report)] == ["n/a", "1.250×", "2.0%", "+3.1%"]


def test_page_renders_its_form_and_sends_a_spec_prepare_accepts(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    at, prepared = open_form(DOMAIN, monkeypatch)
    assert at.number_input(key="train_requests").value == 20_000 and at.number_input(key="points").value == 11
    assert at.checkbox(key="drift").value is False
    at.button(key="run").click().run()
    at.checkbox(key="drift").check()
    at.button(key="run").click().run()
    assert [e.value for e in at.error] == ["test: prepared"]
    assert [job.drift.days for job in prepared] == [0, 4]
    assert prepared[0].agent.steps == 1000 and prepared[0].frontier.test_requests == 1024
    assert list_runs(url=store_url) == []


def test_recorded_run_opens_with_every_section(store_url: str, run_id: int) -> None:
    at = open_report(UTILITY_PAGE, run_id)
    assert [m.value for m in at.metric] == ["n/a", "1.250×", "2.0%", "+3.1%"]
    subheaders = [s.value for s in at.subheader]
    for section in ("The engagement-revenue front", "Choose an operating point", "Per segment", "Off-policy check",
                    "Drifting preferences", "The real front on the Open Bandit sample"):
        assert section in subheaders, subheaders
    learnt = at.dataframe[0].value
    assert list(learnt["lambda"]) == list(LAMBDAS) and "dr_engagement_high" in learnt
    assert len(at.get("vega_lite_chart")) >= 7
    assert {b.key for b in at.download_button} == {
        "download_front", "download_off_policy", "download_segments", "download_estimator_errors",
        "download_drift", "download_obd_front"}
    assert any("No utility-weight policy is deployed yet." in m.value for m in at.markdown)


def test_deploying_an_operating_point_records_it_and_shows_the_history(store_url: str, run_id: int) -> None:
    at = open_report(UTILITY_PAGE, run_id)
    at.selectbox(key="deploy_point").select(("linear", 0.5))
    at.text_input(key="deploy_note").input("keep revenue near production")
    at.button(key="deploy").click().run()  # no name typed: refused, nothing recorded
    assert [e.value for e in at.error] == ["Type your name to deploy: it is recorded with the choice."]
    at.text_input(key="deploy_operator").input("Ada Operator")
    at.button(key="deploy").click().run()  # one click only asks
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert deployments.history(DOMAIN.name, url=store_url) == []
    assert at.warning[0].value.startswith("Deploy **learnt, linear, lambda 0.5** from run")
    at.button(key="deploy_cancel").click().run()
    assert not at.warning and deployments.history(DOMAIN.name, url=store_url) == []
    at.button(key="deploy").click().run()
    at.button(key="deploy_confirm").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.success[0].value == f"Deployed learnt, linear, lambda 0.5 from run #{run_id} (chosen by Ada Operator)."
    assert at.text_input(key="deploy_note").value == ""  # the next choice starts with an empty note
    assert at.text_input(key="deploy_operator").value == "Ada Operator"

    [record] = deployments.history(DOMAIN.name, url=store_url)
    assert (record.run_id, record.label, record.note) == (run_id, "learnt, linear, lambda 0.5",
                                                            "keep revenue near production")
    assert record.chosen_by == "Ada Operator"
    assert record.settings["lambda"] == 0.5 and record.settings["dr_engagement"] == pytest.approx(0.44 * 1.02)
    assert any(m.value.startswith("Currently deployed: **learnt, linear, lambda 0.5**") for m in at.markdown)
    history = at.dataframe[1].value
    assert list(history["run"]) == [run_id] and list(history["lambda"]) == [0.5]
    assert list(history["note"]) == ["keep revenue near production"]


def test_only_an_approver_deploys_an_operating_point_and_in_their_name(users_store: str, run_id: int) -> None:
    at = open_as("olga", UTILITY_PAGE, run=run_id)
    assert at.button(key="deploy").disabled
    assert "Deploying needs an approver; you are an operator." in [c.value for c in at.caption]

    at = open_as("boss", UTILITY_PAGE, run=run_id)
    assert not any(w.key == "deploy_operator" for w in at.text_input)  # the name recorded is the user's
    at.selectbox(key="deploy_point").select(("linear", 0.5))
    at.button(key="deploy").click().run()
    at.button(key="deploy_confirm").click().run()
    assert at.success[0].value == f"Deployed learnt, linear, lambda 0.5 from run #{run_id} (chosen by boss)."
    [record] = deployments.history(DOMAIN.name, url=users_store)
    assert (record.run_id, record.chosen_by) == (run_id, "boss")


def test_a_run_on_a_users_log_opens_with_its_estimated_front(store_url: str, tmp_path: Path) -> None:
    """A run on a log file has no simulator: its front is doubly robust estimates with intervals, and the
    sections that need the truth (segments, the off-policy check, drift) are empty."""
    front = _front().query("method in ['production', 'learnt', 'global', 'linucb']").assign(source="dr")
    for name in ("engagement", "revenue", "success", "hides"):
        front[f"{name}_ci_low"] = front[name] * 0.95
        front[f"{name}_ci_high"] = front[name] * 1.05
    empty = pd.DataFrame()
    report = UtilityReport(front=front.drop(columns="utility").reset_index(drop=True), off_policy=empty,
                           estimator_errors=empty, segments=empty, drift=empty,
                           obd_front=_hand_made_report().obd_front,
                           metrics={"estimated_hypervolume_ratio_vs_global": 1.2})
    run_id = record_report(store_url, report, tmp_path / "logged", kind=DOMAIN.name)
    at = open_report(UTILITY_PAGE, run_id)
    assert not at.exception, at.exception
    subheaders = [s.value for s in at.subheader]
    assert "The engagement-revenue front" in subheaders and "Per segment" not in subheaders
    at.selectbox(key="deploy_point").select(("linear", 0.5))
    at.text_input(key="deploy_operator").input("Ada Operator")
    at.button(key="deploy").click().run()
    at.button(key="deploy_confirm").click().run()
    assert not at.exception and deployments.history(DOMAIN.name, url=store_url)[0].settings["lambda"] == 0.5
    assert any(c.value.startswith("A run on a request log") for c in at.caption)
    assert any("Left: the front estimated on your log above (DR estimates)" in c.value for c in at.caption)
    assert not any("simulated front" in c.value for c in at.caption)
    assert {b.key for b in at.download_button} == {"download_front", "download_obd_front"}  # no empty table offered
    run = get_run(run_id, url=store_url)
    assert {a.name for a in run.artifacts} == {"front", "obd_front", "report", "chart"}  # no empty tables
    assert sorted(p.name for p in (tmp_path / "logged").glob("*.csv")) == ["front.csv", "obd_front.csv"]
    reread = UtilityReport.load(tmp_path / "logged")
    assert reread.segments.empty and reread.drift.empty and reread.off_policy.empty
    assert front_title(report.front) == "Pareto sweep over lambda, DR estimates on the held-out part of the log"
    assert front_title(_front()) == "Pareto sweep over lambda, exact values on held-out requests"
    points = utility_views.front_points(report.front, report.off_policy)
    assert set(points["values"]) == {"DR estimates on the held-out log"}
    assert points["dr_engagement_ci"].str.len().gt(0).all()  # every point's own interval, baselines too


def test_a_run_on_a_users_log_has_a_headline() -> None:
    """``runs list`` and Home show the first of the domain's headline figures a run has: a log run has two."""
    from decisions.recsys.utility.logged import _estimated_front_figures

    front = _front().query("method in ['production', 'learnt', 'global', 'linucb']").assign(source="dr")
    figures = _estimated_front_figures(front)
    present = [name for name in DOMAIN.headline if name in figures]
    assert present == ["hypervolume_ratio_vs_global", "engagement_gain_vs_production"]
    assert figures["engagement_gain_vs_production"] == figures["estimated_engagement_gain_vs_production"]


def test_segment_charts_label_every_segment_and_fit_the_page() -> None:
    segments = _hand_made_report().segments
    facets = utility_views.segment_chart(segments).to_dict()
    assert facets["columns"] == 2 and facets["facet"]["field"] == "outcome"  # two panels a row, not four
    encoding = facets["spec"]["encoding"]
    assert encoding["y"]["field"] == "segment" and encoding["yOffset"]["field"] == "policy"  # a line per segment
    weights = utility_views.segment_weights_chart(segments, utility_views.production_weights(_front())).to_dict()
    assert weights["height"] == {"step": 30}  # a band per segment whatever their number
