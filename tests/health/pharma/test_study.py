"""The pharma study's shape: settings in, no function below the job taking the whole job."""

from __future__ import annotations

from decisions.health.pharma import bench, study
from tests.helpers import takers_of


def test_no_function_of_the_study_or_the_bench_takes_the_whole_job() -> None:
    assert takers_of("PharmaJob", study, bench) == []
