"""Gas storage input that a job would accept and then ignore is refused, naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from decisions.energy.gas_storage.spec import prepare
from tests.helpers import assert_input_error

CURVE = [20.0, 21.0, 25.0, 25.0, 20.0, 20.0, 22.0, 20.0, 21.0, 25.0]


def _spec(method: str, **sections: dict[str, Any]) -> dict[str, Any]:
    facility = {"max_inventory": 100.0, "max_injection": 25.0, "max_withdrawal": 50.0, **sections.pop("facility", {})}
    return {"job": {"kind": "gas_storage", "method": method}, "scenario": {"forward_curve": CURVE, "facility": facility},
            **sections}


@pytest.mark.parametrize(
    ("spec", "field", "words"),
    [
        (_spec("baselines", snapo={"steps": 30}), "snapo.steps", "is used only when job.method runs SNAPO"),
        (_spec("baselines", snapo={"seed": 3}), "snapo.seed", "is used only when job.method runs SNAPO"),
        (_spec("compare", snapo={"seed": 3}), "snapo.seed", "is not used; the job's seed is job.seed"),
        (_spec("snapo", snapo={"steps": 30, "seed": 3}), "snapo.seed", "is not used; the job's seed is job.seed"),
        (_spec("snapo", evaluation={"paths": 16, "lsmc_paths": 64}), "evaluation.lsmc_paths",
         "is used only when job.method runs the baselines"),
        (_spec("compare", facility={"terminal": "spot_value", "end_inventory": 0.0}), "scenario.facility.end_inventory",
         "is used only with scenario.facility.terminal = 'required_end_inventory'"),
    ],
)
def test_a_field_the_job_would_ignore_is_refused(spec: dict[str, Any], field: str, words: str) -> None:
    error = assert_input_error(prepare, spec, field=field, words=words)
    assert error.problem.startswith("is ")


def test_the_same_fields_are_accepted_where_they_are_used() -> None:
    job = prepare(_spec("snapo", snapo={"steps": 30}, evaluation={"paths": 16}))
    assert job.snapo.steps == 30
    job = prepare(_spec("baselines", evaluation={"lsmc_paths": 64}))
    assert job.evaluation.lsmc_paths == 64
    job = prepare(_spec("compare", snapo={"steps": 30}, evaluation={"lsmc_paths": 64}))
    assert (job.snapo.steps, job.evaluation.lsmc_paths) == (30, 64)
    job = prepare(_spec("compare", facility={"terminal": "required_end_inventory", "end_inventory": 50.0}))
    assert job.scenario.facility.end_inventory == 50.0
    job = prepare(_spec("compare", facility={"terminal": "spot_value"}))  # the default end inventory is not "given"
    assert job.scenario.facility.terminal.value == "spot_value"


def test_defaults_and_the_job_seed_never_trip() -> None:
    spec = _spec("baselines")
    spec["job"]["seed"] = 5
    assert prepare(spec).seed == 5
    assert prepare(_spec("snapo")).method.value == "snapo"
