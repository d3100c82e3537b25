"""``TablesReport.of_study``: a report built from the study whose tables it holds."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from decisions.kit.report import TablesReport


@dataclass(frozen=True)
class _Study:
    table: pd.DataFrame
    scenario: str
    figures: dict[str, float] = field(default_factory=dict)

    def metrics(self) -> dict[str, float]:
        return {name: 2 * value for name, value in self.figures.items()}


@dataclass(kw_only=True)
class _Report(TablesReport):
    table: pd.DataFrame
    scenario: str = "summer"
    target: float = 0.5


def test_a_report_of_a_study_takes_the_fields_both_declare_its_metrics_then_its_own() -> None:
    study = _Study(table=pd.DataFrame({"hour": [0, 1]}), scenario="winter", figures={"value": 1.5})
    report = _Report.of_study(study, target=0.9)
    assert report.table is study.table and (report.scenario, report.target) == ("winter", 0.9)
    assert report.metrics == {"value": 3.0} and not hasattr(report, "figures")
    assert _Report.of_study(study, scenario="spring").scenario == "spring"
    assert _Report.of_study(study).target == 0.5
