"""Chronic care's bad input: one line naming the field."""

from __future__ import annotations

import pytest

from decisions.errors import InputError
from decisions.health.chronic.spec import prepare


@pytest.mark.parametrize(("tables", "field"), [
    ({"reward": {"thresholds": [6, 3, 12]}}, r"reward\.thresholds"),
    ({"reward": {"payments": [0.5, 0.6, 0.3]}}, r"reward\.payments"),
    ({"htn": {"lapse": 1.2}}, r"htn\.lapse"),
    ({"t2d": {"improve_per_step": -0.1}}, r"t2d\.improve_per_step"),
    ({"htn": {"start_bands": [0.5, 0.5, 0.5]}}, r"htn\.start_bands"),
    ({"clinicians": {"kappa_low": 1.5}}, r"clinicians\.kappa_low"),
    ({"clinicians": {"kappa_high": -0.2}}, r"clinicians\.kappa_high"),
    ({"problem": {"regimes": {"full": []}}}, r"problem\.regimes\.full"),
    ({"problem": {"regimes": {"odd": ["intensify", "refer"]}}}, r"problem\.regimes\.odd"),
    ({"problem": {"regimes": {"cap": {"actions": ["intensify"], "max_step": 2}}}}, r"problem\.regimes\.cap"),
    ({"problem": {"regimes": {"slow": {"visit_every": 0}}}}, r"problem\.regimes\.slow\.visit_every"),
    ({"problem": {"regimes": {"cap": {"max_step": 4}}}}, r"problem\.regimes\.cap\.max_step"),
    ({"problem": {"train_regime": "nowhere"}}, r"problem\.train_regime"),
    ({"job": {"kind": "chronic", "seed": 2**32}}, r"job\.seed"),
])
def test_bad_input_is_refused_in_one_line_naming_the_field(tables: dict, field: str) -> None:
    spec = {"job": {"kind": "chronic"}, **tables}
    with pytest.raises(InputError, match=rf"^{field}") as caught:
        prepare(spec)
    assert "\n" not in str(caught.value)


def test_the_defaults_are_valid() -> None:
    job = prepare({"job": {"kind": "chronic"}})
    assert job.problem.train_regime in job.problem.regimes
