"""The wealth-planning page: the client form, input errors on one line, a recorded run opened with ``?run=<id>``, the views."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from decisions.errors import InputError
from decisions.finance.wealth import DOMAIN, WealthReport
from decisions.store import list_runs
from tests.apps.conftest import APPS, WEALTH_PAGE
from tests.apps.helpers import one_line_error, open_page, open_report, record_report, run_from_form, submit

if str(APPS) not in sys.path:
    sys.path.insert(0, str(APPS))  # the page imports its helpers by name, as Streamlit runs it
import wealth_form  # noqa: E402
import wealth_views  # noqa: E402

HORIZON = 4
NODES = np.concatenate([[0.0], np.geomspace(1_000.0, 1_000_000.0, 12)])


def _plan(with_dp: bool) -> pd.DataFrame:
    years = np.repeat(np.arange(HORIZON + 1), len(NODES))
    wealth = np.tile(NODES, HORIZON + 1)
    riskier = np.clip((np.log10(np.maximum(wealth, 1.0)) - 3.0) * 4.0, 0, 14).round().astype(int)
    portfolio = np.where((wealth == 0) | (years == HORIZON), -1, 14 - riskier)
    option = np.where(wealth == 0, -1, np.where(np.isin(years, [2, 4]) & (wealth > 30_000), 1 + (wealth > 200_000), 0))
    table = pd.DataFrame({"year": years, "wealth": wealth, "planner_option": option, "planner_portfolio": portfolio})
    if with_dp:
        table["dp_option"] = option
        table["dp_portfolio"] = np.where(portfolio >= 0, np.clip(portfolio + 1, 0, 14), -1)
    return table


def _fan() -> pd.DataFrame:
    frames = []
    for shift, policy in ((1.0, "dp"), (0.98, "planner"), (0.9, "funding_rule")):
        years = np.arange(HORIZON + 1)
        median = 100_000.0 * shift * 1.05**years
        spread = np.sqrt(years) * 0.15
        frames.append(pd.DataFrame({
            "policy": policy, "year": years, "mean": median * 1.01,
            **{f"p{q}": median * np.exp(spread * z) for q, z in ((5, -1.64), (25, -0.67), (50, 0.0), (75, 0.67),
                                                                 (95, 1.64))},
        }))
    return pd.concat(frames, ignore_index=True)


def _goals() -> pd.DataFrame:
    rows = [
        (1, 2, "not funded", 0.0, 0.0, 0.05, 0.10, 0.30),
        (1, 2, "option 1", 20_000.0, 10.0, 0.15, 0.20, 0.30),
        (1, 2, "option 2", 40_000.0, 15.0, 0.80, 0.70, 0.40),
        (2, 4, "not funded", 0.0, 0.0, 0.10, 0.12, 0.25),
        (2, 4, "option 1", 120_000.0, 50.0, 0.90, 0.88, 0.75),
    ]
    return pd.DataFrame(rows, columns=["goal", "year", "option", "cost", "utility", "dp", "planner", "funding_rule"])


def _hand_made_tables(with_dp: bool = True) -> dict[str, pd.DataFrame]:
    """Small tables with the columns of ``WealthReport.tables()``, written by hand (no JAX run)."""
    comparison = pd.DataFrame({"policy": ["dp", "planner", "funding_rule"], "expected_utility": [60.0, 57.0, 50.0],
                               "stderr": [0.3, 0.5, 0.7]})
    comparison["vs_dp"] = comparison["expected_utility"] / 60.0
    tables = {"comparison": comparison, "goals": _goals(), "plan": _plan(with_dp), "wealth_fan": _fan()}
    if not with_dp:
        tables["comparison"] = comparison[comparison["policy"] != "dp"].drop(columns="vs_dp").reset_index(drop=True)
        tables["goals"] = tables["goals"].drop(columns="dp")
        tables["wealth_fan"] = tables["wealth_fan"][tables["wealth_fan"]["policy"] != "dp"].reset_index(drop=True)
    return tables


def _record_by_hand(url: str, folder: Path) -> int:
    """Record a run whose report holds the hand-made tables, saved as ``execute_domain`` saves it."""
    metrics = {"expected_utility_dp": 60.0, "expected_utility_planner": 57.0, "expected_utility_funding_rule": 50.0,
               "planner_vs_dp": 0.95, "rule_vs_dp": 50.0 / 60.0, "plan_ms": 4.2, "dp_ms": 2100.0}
    report = WealthReport(**_hand_made_tables(), metrics=metrics)
    return record_report(url, report, folder, kind=DOMAIN.name, config={"problem": {"horizon": HORIZON}})


# --- views on hand-made tables ------------------------------------------------------------------


def test_comparison_and_headline_views() -> None:
    tables = _hand_made_tables()
    view = wealth_views.comparison_view(tables["comparison"])
    assert list(view["policy"]) == ["MetaRL planner", "exact DP", "funding-ratio rule"]
    assert list(view.columns) == ["policy", "expected_utility", "stderr", "ci95_low", "ci95_high", "vs_dp"]
    assert view.loc[0, "ci95_high"] == pytest.approx(57.0 + 1.96 * 0.5)
    no_dp = wealth_views.comparison_view(_hand_made_tables(with_dp=False)["comparison"])
    assert "vs_dp" not in no_dp and len(no_dp) == 2
    metrics = {"expected_utility_dp": 60.0, "expected_utility_planner": 57.0, "expected_utility_funding_rule": 50.0,
               "planner_vs_dp": 0.95, "rule_vs_dp": 0.8, "plan_ms": 4.2, "dp_ms": 2100.0}
    figures = wealth_views.headline(metrics)
    assert [f[1] for f in figures] == ["57.00", "60.00", "50.00", "95.0%", "4.2 ms", "2.1 s"]
    assert figures[0][2] == "95.0% of the DP" and figures[1][2] is None
    assert [f[0] for f in figures[:3]] == ["planner utility", "DP utility", "rule utility"]
    assert wealth_views.headline({"plan_ms": 999.0})[0][1] == "999.0 ms"
    chart = wealth_views.comparison_chart(tables["comparison"]).to_dict()
    assert chart["layer"][1]["encoding"]["x"]["scale"] == {"zero": False}
    # without metrics the expected utilities come from the comparison table
    assert [f[1] for f in wealth_views.headline({}, tables["comparison"])] == ["57.00", "60.00", "50.00"]


def test_goal_views_give_funded_probabilities_by_option() -> None:
    goals = _goals()
    assert wealth_views.policy_columns(goals) == ["planner", "dp", "funding_rule"]
    summary = wealth_views.goal_summary(goals)
    assert list(summary.columns) == ["goal", "year", "MetaRL planner", "exact DP", "funding-ratio rule"]
    assert summary["MetaRL planner"].tolist() == pytest.approx([0.90, 0.88])
    long = wealth_views.goal_long(goals)
    assert set(long["option"]) == {"partial", "full"}
    assert long.loc[long["goal"] == 2, "option"].unique().tolist() == ["full"]
    funded = long.groupby(["goal", "policy"])["probability"].sum()
    assert funded[(1, "funding-ratio rule")] == pytest.approx(0.70)
    chart = wealth_views.goal_chart(goals).to_dict()
    assert chart["facet"]["column"]["field"] == "goal_label"
    assert chart["spec"]["encoding"]["color"]["scale"]["domain"] == ["partial", "full"]


def test_fan_charts_and_wealth_range() -> None:
    fan = _fan()
    assert wealth_views.fan_policies(fan) == ["planner", "dp", "funding_rule"]
    for policy in ("planner", "dp", "funding_rule"):
        spec = wealth_views.fan_chart(fan, policy, goal_years=[2, 4]).to_dict()
        assert len(spec["layer"]) == 5  # two bands, median, mean, goal years
    assert len(wealth_views.fan_chart(fan, "planner").to_dict()["layer"]) == 4
    assert wealth_views.median_chart(fan, [2]).to_dict()
    low, high = wealth_views.wealth_range(fan)
    assert low == pytest.approx(fan["p5"].min() / 2) and high == pytest.approx(fan["p95"].max() * 2)


@pytest.mark.parametrize("with_dp", [True, False])
def test_plan_heatmaps_with_and_without_dp(with_dp: bool) -> None:
    plan = _plan(with_dp)
    expected = ["planner", "dp"] if with_dp else ["planner"]
    assert wealth_views.plan_policies(plan) == expected
    long = wealth_views.plan_long(plan, "portfolio")
    assert set(long["policy"]) == {wealth_views.policy_label(p) for p in expected}
    assert (long["wealth"] > 0).all() and (long["value"] >= 0).all()
    assert (long["year"] < HORIZON).all()  # no portfolio at the horizon
    assert (long["wealth_low"] < long["wealth"]).all() and (long["wealth"] < long["wealth_high"]).all()
    one = long[(long["policy"] == "MetaRL planner") & (long["year"] == 0)].sort_values("wealth")
    assert np.allclose(one["wealth_high"].to_numpy()[:-1], one["wealth_low"].to_numpy()[1:])  # cells tile the axis
    for decision in ("portfolio", "option"):
        spec = wealth_views.plan_heatmaps(plan, decision, span=(5_000.0, 500_000.0), years=None).to_dict()
        assert len(spec["hconcat"]) == len(expected)
        assert spec["hconcat"][0]["encoding"]["y"]["scale"]["type"] == "log"
        assert spec["hconcat"][0]["encoding"]["x"]["scale"]["domain"] == [-0.5, (HORIZON - 0.5 if decision == "portfolio"
                                                                                   else HORIZON + 0.5)]
    spanned = wealth_views.plan_long(plan, "option", span=(5_000.0, 500_000.0))
    assert spanned["wealth_high"].min() >= 5_000.0 and spanned["wealth_low"].max() <= 500_000.0
    assert wealth_views.plan_heatmaps(plan, "option", years=[2, 4]).to_dict()
    with pytest.raises(ValueError, match="decision"):
        wealth_views.plan_heatmaps(plan, "cash")


# --- the form's spec ----------------------------------------------------------------------------


def test_example_client_prefills_the_form() -> None:
    client = wealth_form.example_client()
    assert (client["horizon"], client["initial_wealth"], client["savings"]) == (20, 250_000.0, 20_000.0)
    assert (client["savings_first"], client["savings_last"]) == (0, 9)
    goals = client["goals"]
    assert list(goals.columns) == list(wealth_form.GOAL_COLUMNS) and len(goals) == 5
    assert goals.loc[0, ["year", "cost", "partial_cost"]].tolist() == [3, 45_000.0, 25_000.0]
    assert goals["partial_cost"].isna().sum() == 3
    fallback = wealth_form.example_client(Path("/nonexistent/wealth.toml"))
    assert fallback["horizon"] == 20 and fallback["goals"].equals(wealth_form._FALLBACK_CLIENT["goals"])


def test_job_spec_of_the_form() -> None:
    goals = pd.DataFrame({"year": [2, 5, None], "cost": [40_000.0, 120_000.0, None], "utility": [15.0, 50.0, None],
                          "partial_cost": [20_000.0, None, None], "partial_utility": [10.0, None, None]})
    form = {"name": "w", "seed": 1, "horizon": 5, "initial_wealth": 100_000.0, "savings": 10_000.0,
            "savings_first": 1, "savings_last": 3, "goals": goals, "paths": 500, "dp": False}
    spec = wealth_form.job_spec(form, "/tmp/out")
    assert spec["job"] == {"kind": "wealth", "name": "w", "seed": 1, "output_dir": "/tmp/out"}
    assert spec["problem"]["cash_flows"] == [0.0, 10_000.0, 10_000.0, 10_000.0, 0.0]
    assert spec["problem"]["goals"] == [
        {"year": 2, "options": [{"cost": 20_000.0, "utility": 10.0}, {"cost": 40_000.0, "utility": 15.0}]},
        {"year": 5, "options": [{"cost": 120_000.0, "utility": 50.0}]},
    ]
    assert spec["evaluation"] == {"paths": 500, "dp": False}
    assert wealth_form.cash_flows(3, 0.0, 7, 1) == [0.0, 0.0, 0.0]  # no savings: years ignored
    with pytest.raises(InputError, match=r"^savings\.last_year:"):
        wealth_form.job_spec({**form, "savings_last": 5})
    bad = goals.copy()
    bad.loc[1, "partial_cost"] = 60_000.0
    with pytest.raises(InputError, match=r"^problem\.goals\[1\]\.partial_utility: missing"):
        wealth_form.job_spec({**form, "goals": bad})
    bad = goals.copy()
    bad.loc[0, "cost"] = None
    with pytest.raises(InputError, match=r"^problem\.goals\[0\]\.cost: missing"):
        wealth_form.job_spec({**form, "goals": bad})


# --- the page -----------------------------------------------------------------------------------


def test_wealth_page_renders_its_form(store_url: str) -> None:
    at = open_page(WEALTH_PAGE)
    assert at.title[0].value == "Wealth planning"
    keys = {widget.key for widget in at.number_input}
    assert {"horizon", "initial_wealth", "savings", "savings_first", "savings_last", "seed", "paths"} <= keys
    assert at.number_input(key="horizon").value == 20
    assert at.number_input(key="savings_last").value == 9
    assert at.checkbox(key="dp").value is True
    assert at.button(key="plan").label == "Plan"
    assert not at.error and not at.header  # nothing run yet


def test_bad_input_shows_one_line_error_naming_the_field_and_records_nothing(store_url: str) -> None:
    at = open_page(WEALTH_PAGE)
    message = one_line_error(submit(at, {"horizon": 5, "savings_last": 4}, button="plan"), "problem.goals:")
    assert len(at.error) == 1 and "after the horizon 5" in message, message

    submit(at, {"savings_last": 7}, button="plan")
    assert [e.value.split(":")[0] for e in at.error] == ["savings.last_year"]
    assert list_runs(url=store_url) == [] and not at.status and not at.header


def test_recorded_run_opens_from_query_param(store_url: str, tmp_path: Path) -> None:
    run_id = _record_by_hand(store_url, tmp_path / "run")
    at = open_report(WEALTH_PAGE, run_id)
    assert [m.value for m in at.metric] == ["57.00", "60.00", "50.00", "95.0%", "4.2 ms", "2.1 s"]
    assert list(at.dataframe[1].value["policy"]) == ["MetaRL planner", "exact DP", "funding-ratio rule"]
    assert at.dataframe[2].value["exact DP"].tolist() == pytest.approx([0.95, 0.90])
    # value bars, goal bars, fan, medians, portfolio maps, option maps
    assert len(at.get("vega_lite_chart")) == 6
    subheaders = {s.value for s in at.subheader}
    assert {"Goals funded", "Wealth over the years", "The plan: portfolio by year and wealth",
            "The plan: goal option by year and wealth"} <= subheaders
    assert {"download_comparison", "download_goals", "download_wealth_fan", "download_plan"} <= {
        b.key for b in at.download_button}

    at.selectbox(key="fan_policy").select("funding_rule").run()  # another policy's fan; the report stays
    assert not at.exception
    assert at.header[0].value == f"Results of run #{run_id}"


def test_small_plan_from_the_form_is_recorded_and_shown(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    goals = pd.DataFrame({"year": [2, 5], "cost": [40_000.0, 120_000.0], "utility": [15.0, 50.0],
                          "partial_cost": [20_000.0, None], "partial_utility": [10.0, None]})
    client = {"horizon": 5, "initial_wealth": 100_000.0, "savings": 10_000.0, "savings_first": 0,
              "savings_last": 4, "goals": goals}
    monkeypatch.setattr(wealth_form, "example_client", lambda *_: client)
    at = open_page(WEALTH_PAGE, timeout=300)
    run = run_from_form(at, store_url, name="small-wealth", kind="wealth", numbers={"paths": 500}, button="plan")
    assert list(at.dataframe[1].value["policy"]) == ["MetaRL planner", "exact DP", "funding-ratio rule"]
    assert len(at.dataframe[2].value) == 2  # one row per goal (dataframe 0: the goals editor)
    assert len(at.get("vega_lite_chart")) == 6
    assert {"expected_utility_planner", "plan_ms", "dp_ms", "planner_vs_dp"} <= set(run.latest_metrics())


def test_a_many_clients_run_shows_each_client_against_the_dp(store_url: str, tmp_path: Path) -> None:
    tables = _hand_made_tables()
    clients = pd.DataFrame({"client": ["Ann", "Bob"], "dp_solved": [False, True], "planner_vs_dp": [np.nan, 0.98],
                            "rule_vs_dp": [np.nan, 0.95]})
    plans = pd.DataFrame({"client": ["Ann", "Ann", "Bob"], "year": [0, 1, 0], "wealth_p50": [100.0, 104.0, 50.0]})
    report = WealthReport(comparison=tables["comparison"], goals=tables["goals"].assign(client="Ann"),
                          clients=clients, plans=plans, metrics={"clients": 2.0, "planner_vs_dp": 0.98})
    run_id = record_report(store_url, report, tmp_path / "run", kind=DOMAIN.name, config={"clients": {}})
    at = open_report(WEALTH_PAGE, run_id)
    assert not at.exception
    assert "Clients" in {s.value for s in at.subheader} and "Wealth over the years" not in {s.value for s in at.subheader}
    assert {"download_comparison", "download_clients", "download_plans"} <= {b.key for b in at.download_button}
