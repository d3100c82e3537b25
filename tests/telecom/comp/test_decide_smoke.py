"""CoMP's decide contract on the smoke spec's own run (a data stage: its experts, and the deployable
policies scored on a short evaluation): slow, as the experts train."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from decisions.telecom.comp import DOMAIN
from decisions.telecom.comp import decide as D
from decisions.telecom.comp.deployable import FILE

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("comp_run")
    smoke = DOMAIN.smoke_job()
    smoke["study"]["folder"] = str(folder / "study")
    job = DOMAIN.prepare(smoke)
    DOMAIN.run_job(job).save(folder / "run")
    return folder / "run"


def test_a_data_stage_run_offers_its_expert_and_the_rules_and_decides(run: Path) -> None:
    assert (run / FILE).is_file() and (run / "expert_c3-u5-resource_fair-me.msgpack").is_file()
    offered = {c.name: c for c in D.candidates(run, {})}
    assert set(offered) == {"expert", "max_snr", "top2"} and all(math.isfinite(c.score) for c in offered.values())
    policy = D.load(run, max(offered.values(), key=lambda c: c.score).name)
    state = D.UsersState.parse(D.example_state(run))
    first, again = D.decide(policy, [state, state])
    assert first.action == again.action and len(first.action["serving_cells"]) == 5
    assert math.isfinite(first.expected) and first.expected > 0
