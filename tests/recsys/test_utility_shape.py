"""The utility study's shape: settings in, no function below the job taking the whole job."""

from __future__ import annotations

from decisions.recsys.utility import bench, frontier, logged, obd_study, study
from tests.helpers import takers_of


def test_no_function_of_the_studies_or_the_bench_takes_the_whole_job() -> None:
    assert takers_of("UtilityJob", study, logged, frontier, obd_study, bench) == []
