"""Pharma input that a job would accept and then ignore is refused, naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from decisions.health.pharma.spec import prepare
from tests.helpers import assert_input_error

RANGES = {"reactor_temperature": {"low": 55.0, "high": 95.0}}


def _spec(method: str, seed: int | None = None, **sections: dict[str, Any]) -> dict[str, Any]:
    job: dict[str, Any] = {"kind": "pharma", "method": method}
    if seed is not None:
        job["seed"] = seed
    return {"job": job, **sections}


OPTIMISES = "is used only when job.method optimises ('all' or 'optimise')"
MAPS = "is used only when job.method maps the design space ('all' or 'design_space')"


@pytest.mark.parametrize(
    ("spec", "field", "words"),
    [
        (_spec("sensitivities", baseline={"samples": 16}), "baseline.samples", OPTIMISES),
        (_spec("design_space", baseline={"points": [3, 3, 3]}), "baseline.points", OPTIMISES),
        (_spec("sensitivities", optimise={"steps": 20}), "optimise.steps", OPTIMISES),
        (_spec("design_space", optimise={"eval_samples": 64, "training_compliance": 0.97}),
         "optimise.training_compliance", OPTIMISES),
        (_spec("sensitivities", scenario={"ranges": RANGES}), "scenario.ranges", OPTIMISES),
        (_spec("optimise", design_space={"points": 3}), "design_space.points", MAPS),
        (_spec("sensitivities", design_space={"seed": 2}), "design_space.seed", MAPS),
        (_spec("optimise", seed=3, optimise={"seed": 5}), "job.seed",
         "is not used: it is the default of optimise.seed, which is given"),
        (_spec("all", seed=3, optimise={"seed": 5}, design_space={"seed": 6}), "job.seed",
         "is not used: it is the default of optimise.seed and design_space.seed, both given"),
    ],
)
def test_a_field_the_job_would_ignore_is_refused(spec: dict[str, Any], field: str, words: str) -> None:
    assert_input_error(prepare, spec, field=field, words=words)


def test_the_same_fields_are_accepted_where_they_are_used() -> None:
    job = prepare(_spec("optimise", optimise={"steps": 20, "seed": 5}, baseline={"samples": 16},
                        scenario={"ranges": RANGES}))
    assert (job.optimise.steps, job.optimise.seed, job.baseline.samples) == (20, 5, 16)
    job = prepare(_spec("design_space", seed=3, design_space={"points": 3}))
    assert (job.design_space.points, job.design_space.seed, job.optimise.seed) == (3, 3, 3)
    job = prepare(_spec("all", seed=3, optimise={"seed": 5}, design_space={"points": 3}))
    assert (job.optimise.seed, job.design_space.seed) == (5, 3)  # job.seed still seeds the map


def test_settings_of_the_nominal_evaluation_serve_every_method() -> None:
    """``eval_samples``, ``seed`` and ``compliance_target`` also score the scenario's own operating point."""
    optimise = {"eval_samples": 64, "seed": 2, "compliance_target": 0.9}
    for method in ("sensitivities", "design_space"):
        job = prepare(_spec(method, optimise=optimise))
        assert (job.optimise.eval_samples, job.optimise.seed, job.optimise.compliance_target) == (64, 2, 0.9)


def test_defaults_and_the_job_seed_never_trip() -> None:
    """``prepare`` itself fills each section's seed from ``[job] seed``: that is not the user's."""
    job = prepare(_spec("sensitivities", seed=4))
    assert (job.optimise.seed, job.design_space.seed) == (4, 4)
