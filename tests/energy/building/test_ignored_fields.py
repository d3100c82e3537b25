"""Building input that a job would accept and then ignore is refused, naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from decisions.energy.building.spec import prepare
from tests.helpers import assert_input_error


def _spec(names: list[str], agents: dict[str, Any] | None = None, evaluation: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"job": {"kind": "building"}, "agents": {"names": names, **(agents or {})}}
    if evaluation is not None:
        spec["evaluation"] = evaluation
    return spec


@pytest.mark.parametrize(
    ("spec", "field", "words"),
    [
        (_spec(["sac", "dqn"], {"on_policy_steps": 20_000}), "agents.on_policy_steps",
         "is used only when agents.names includes ppo or a2c"),
        (_spec(["ppo", "a2c"], {"off_policy_steps": 20_000}), "agents.off_policy_steps",
         "is used only when agents.names includes sac or dqn"),
        (_spec(["dqn"], evaluation={"explain": True}), "evaluation.explain",
         "is used only when agents.names includes a continuous-action agent"),
        (_spec(["ppo"], evaluation={"explain": False, "tree_depth": 4}), "evaluation.tree_depth",
         "is used only with evaluation.explain = true"),
        (_spec(["dqn"], evaluation={"tree_depth": 4}), "evaluation.tree_depth",
         "is used only with evaluation.explain = true and a continuous-action agent"),
    ],
)
def test_a_field_the_job_would_ignore_is_refused(spec: dict[str, Any], field: str, words: str) -> None:
    assert_input_error(prepare, spec, field=field, words=words)


def test_the_same_fields_are_accepted_where_they_are_used() -> None:
    job = prepare(_spec(["a2c", "dqn"], {"on_policy_steps": 20_000, "off_policy_steps": 6_000},
                        {"explain": True, "tree_depth": 4}))
    assert (job.agents.on_policy_steps, job.agents.off_policy_steps, job.evaluation.tree_depth) == (20_000, 6_000, 4)
    job = prepare(_spec(["sac"], {"off_policy_steps": 6_000}, {"tree_depth": 3}))
    assert job.evaluation.explain and job.evaluation.tree_depth == 3


def test_defaults_never_trip() -> None:
    assert prepare(_spec(["dqn"])).evaluation.explain  # the default: nothing to explain, nothing said
    assert prepare(_spec(["dqn"], evaluation={"explain": False})).agents.names[0].value == "dqn"
    assert prepare(_spec(["ppo"])).agents.off_policy_steps == 200_000
