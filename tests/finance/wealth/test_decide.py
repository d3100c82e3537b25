"""Wealth's decide contract on the smoke run's saved folder: candidates, loading, deciding."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from decisions.finance.wealth import DOMAIN
from decisions.finance.wealth import decide as wealth_decide
from tests import decide_contract as contract

pytestmark = pytest.mark.smoke_runs("wealth")

run_folder = contract.smoke_folder("wealth")


@pytest.fixture(scope="module")
def policies(run_folder: Path) -> dict[str, wealth_decide.WealthPolicy]:
    return {name: wealth_decide.load(run_folder, name) for name in ("planner", "dp")}


def _states(*pairs: tuple[int, float]) -> list[wealth_decide.ClientState]:
    return [wealth_decide.STATE_MODEL.parse({"year": t, "wealth": w}) for t, w in pairs]


def test_candidates_carry_the_comparison_figures(run_folder: Path) -> None:
    offered = contract.offered(DOMAIN, wealth_decide, run_folder, {"planner", "dp", "funding_rule"})
    comparison = pd.read_csv(run_folder / "comparison.csv").set_index("policy")
    for name, candidate in offered.items():
        assert candidate.score == comparison.loc[name, "expected_utility"]
    assert offered["planner"].learnt and offered["planner"].network and not offered["dp"].network


def test_decides_the_example_state(run_folder: Path, policies: dict[str, wealth_decide.WealthPolicy]) -> None:
    example = wealth_decide.STATE_MODEL.parse(wealth_decide.example_state(run_folder))
    (decision,) = wealth_decide.decide(policies["planner"], [example])
    assert decision.action["alive"] and 0 <= decision.action["portfolio"] < 15
    low, high = decision.interval
    assert 0 < low < decision.expected < high
    assert decision.alternative["policy"] == "dp"
    assert "fund nothing" in decision.reasons["option_values"]
    # the DP's value from the start is the solved problem's value; the planner's is its Monte Carlo figure
    metrics = json.loads((run_folder / "report.json").read_text())["metrics"]
    (best,) = wealth_decide.decide(policies["dp"], [example])
    assert best.value == pytest.approx(metrics["dp_value"], rel=1e-5)
    assert decision.alternative["value"] == pytest.approx(best.value)
    assert decision.value == pytest.approx(metrics["expected_utility_planner"], abs=4 * metrics["stderr_planner"])
    assert max(best.reasons["portfolio_values"].values()) == pytest.approx(best.value, rel=1e-5)


def test_choices_match_the_runs_plan_table(run_folder: Path, policies: dict[str, wealth_decide.WealthPolicy]) -> None:
    plan = pd.read_csv(run_folder / "plan.csv")
    rows = plan[(plan["wealth"] > 0) & (plan["year"] < plan["year"].max())].iloc[::7]
    states = _states(*zip(rows["year"].tolist(), rows["wealth"].tolist(), strict=True))
    for name in ("planner", "dp"):
        chosen = [d.action["portfolio"] for d in wealth_decide.decide(policies[name], states)]
        assert chosen == rows[f"{name}_portfolio"].tolist()


def test_same_state_same_action_and_batches_answer_in_order(policies: dict[str, wealth_decide.WealthPolicy]) -> None:
    states = _states((0, 100.0), (2, 35.0), (2, 80.0), (5, 150.0), (6, 95.0), (3, 0.0))
    singles, _ = contract.decided_alone_and_together(wealth_decide, policies["planner"], [*states, states[1], *states],
                                                     rel=0, abs=0)
    assert singles[5].action["alive"] is False and singles[5].expected == 0.0
    assert any(d.action["goals"] for d in singles[1:3])


def test_bad_states_are_refused_naming_the_field(policies: dict[str, wealth_decide.WealthPolicy]) -> None:
    contract.refused(wealth_decide.STATE_MODEL.parse, {"year": 1}, field="state.wealth")
    contract.refused(wealth_decide.STATE_MODEL.parse, {"year": 1, "wealth": -5.0}, field="state.wealth")
    contract.refused(wealth_decide.decide, policies["dp"], _states((7, 100.0)), field="state.year",
                     starts="must be at most the run's horizon of 6")


def test_unknown_policy_and_unusable_run_are_refused(run_folder: Path, tmp_path: Path) -> None:
    contract.assert_unknown_policies_refused(wealth_decide, run_folder, "oracle")
    contract.refused(wealth_decide.load, contract.copied_run(run_folder, tmp_path, only=["comparison.csv"]), "dp",
                     field="run", starts="it saved no deployment")
