"""Utility's decide contract: candidates, loading and deciding on a run's saved folder.

Most tests read a folder that ``UtilityReport.save`` writes from a small Q-network trained here and
a front table in the study's form, whose figures they know; the smoke run's own folder (the
conformance kit's run, shared through ``tests.smoke_runs``) is checked end to end.
"""

from __future__ import annotations

from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from decisions.recsys.utility import DOMAIN, qnet
from decisions.recsys.utility import decide as utility_decide
from decisions.recsys.utility import objectives as obj
from decisions.recsys.utility.report import UtilityReport
from decisions.recsys.utility.scenario import WeightSet
from decisions.recsys.utility.simulator import CONTEXT_DIM, SEGMENTS, Profile
from decisions.recsys.utility.spec import QNetSettings
from tests import decide_contract as contract

pytestmark = pytest.mark.smoke_runs("utility")

WEIGHTS = WeightSet(grid_step=3).matrix()
GLOBAL, PRODUCTION = 3, 7


def _model() -> qnet.QModel:
    rng = np.random.default_rng(0)
    n = 3000
    context = rng.normal(size=(n, CONTEXT_DIM)).astype(np.float32)
    action = rng.integers(0, len(WEIGHTS), n)
    # success follows the save weight where the first feature is positive, the revenue weight elsewhere
    success = np.where(context[:, 0] > 0, WEIGHTS[action, 0], WEIGHTS[action, 2])
    reward = np.stack([success, 0.5 * WEIGHTS[action, 1], 10 * WEIGHTS[action, 2]], axis=1)
    logs = qnet.Logs(context, action, np.full(n, 1 / len(WEIGHTS)), (reward + 0.05 * rng.normal(size=reward.shape)).astype(np.float32))
    settings = QNetSettings(hidden=(16,), embedding=8, steps=200, batch_size=256, learning_rate=3e-3, log_every=100,
                            ensemble=1)
    return qnet.train(logs, logs, WEIGHTS, obj.Scales(0.5, 5.0), 0.5, settings)[0]


def _front() -> pd.DataFrame:
    rows = [{"method": "production", "scalarisation": "fixed", "lambda": np.nan, "engagement": 0.40, "revenue": 4.0}]
    for lam in (0.0, 0.5, 1.0):
        rows += [{"method": "learnt", "scalarisation": "linear", "lambda": lam, "engagement": 0.45, "revenue": 5.0},
                 {"method": "global", "scalarisation": "linear", "lambda": lam, "engagement": 0.42, "revenue": 4.5},
                 {"method": "linucb", "scalarisation": "linear", "lambda": lam, "engagement": 0.50, "revenue": 6.0}]
    front = pd.DataFrame(rows)
    vectors = {"production": PRODUCTION, "global": GLOBAL, "learnt": 0, "linucb": 0}
    for i, head in enumerate(utility_decide.HEADS):
        front[head] = [float(WEIGHTS[vectors[m], i]) for m in front["method"]]
    return front


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("utility_run")
    UtilityReport(front=_front(), model=_model()).save(folder)
    return folder


learnt = contract.loaded_policy(utility_decide, "learnt", name="learnt")
smoke_folder = contract.smoke_folder("utility", name="smoke_folder")


def _states(*rows: tuple[str, float, bool, float, float]) -> list[utility_decide.RequestState]:
    names = ("segment", "tenure", "mobile", "hour", "activity")
    return [utility_decide.STATE_MODEL.parse(dict(zip(names, row, strict=True))) for row in rows]


def test_candidates_are_scored_at_the_reference_lambda(run_folder: Path) -> None:
    offered = contract.offered(DOMAIN, utility_decide, run_folder, ["learnt", "global", "production"])
    assert all(c.score_name == "lambda_utility" for c in offered.values())
    # linear utility at lambda 0.5 with scales (0.5, 5): 0.5 e / 0.5 + 0.5 r / 5
    assert offered["learnt"].score == pytest.approx(0.45 + 0.5) and offered["production"].score == pytest.approx(0.8)
    assert offered["learnt"].network and not offered["global"].learnt


def test_decides_as_the_q_network_predicts(run_folder: Path, learnt: utility_decide.UtilityPolicy) -> None:
    (state,) = _states(("power", 0.3, True, 20.5, -0.2))
    (decision,) = utility_decide.decide(learnt, [state])
    model = qnet.load_model(run_folder / "qnet.msgpack")
    context = Profile(jnp.asarray([3]), jnp.asarray([0.3]), jnp.asarray([1.0]), jnp.asarray([20.5]),
                      jnp.asarray([-0.2])).context()
    chosen = int(qnet.decide(model, context, 0.5)[0])
    assert decision.action["vector"] == chosen
    assert [decision.action[h] for h in utility_decide.HEADS] == pytest.approx(WEIGHTS[chosen].tolist())
    assert decision.expected == pytest.approx(float(qnet.predict_outcomes(model, context)[0, chosen, 0]), abs=1e-5)
    utility = np.asarray(qnet.utilities(model, context, 0.5))[0]
    assert decision.value == pytest.approx(float(utility.max()), abs=1e-5)
    assert decision.alternative == {"policy": "global", "action": utility_decide._vector(learnt, GLOBAL),
                                    "value": pytest.approx(float(utility[GLOBAL]), abs=1e-5)}
    assert next(iter(decision.reasons["best_vectors"])) == f"vector {chosen}"


def test_same_state_same_action_and_batches_answer_in_order(learnt: utility_decide.UtilityPolicy) -> None:
    states = _states(*((segment, t, m, h, 0.0) for segment in SEGMENTS for t, m, h in ((-2.0, True, 3.0), (2.0, False, 15.0))))
    singles, _ = contract.decided_alone_and_together(utility_decide, learnt, [*states, *states[:3]] * 40, rel=0, abs=0)
    assert len({d.action["vector"] for d in singles}) > 1


def test_fixed_weights_answer_their_vector(run_folder: Path) -> None:
    production = utility_decide.load(run_folder, "production")
    decisions = utility_decide.decide(production, _states(("new", 0.0, False, 9.0, 1.0), ("power", 1.0, True, 22.0, 0.0)))
    assert {d.action["vector"] for d in decisions} == {PRODUCTION}
    assert {d.alternative["policy"] for d in decisions} == {"learnt"}


def test_bad_states_and_policies_are_refused(run_folder: Path, tmp_path: Path) -> None:
    contract.assert_bad_state_refused(utility_decide, run_folder, {"segment": "vip"}, "state.segment")
    contract.assert_bad_state_refused(utility_decide, run_folder, {"hour": 24.0}, "state.hour")
    contract.assert_bad_state_refused(utility_decide, run_folder, lambda state: state.pop("mobile"), "state.mobile")
    contract.assert_unknown_policies_refused(utility_decide, run_folder, "linucb")
    contract.refused(utility_decide.load, contract.copied_run(run_folder, tmp_path, only=["front.csv"]), "global",
                     field="run", starts="it saved no Q-network")


def test_the_smoke_runs_folder_decides(smoke_folder: Path) -> None:
    contract.offered(DOMAIN, utility_decide, smoke_folder, ["learnt", "global", "production"])
    policy = utility_decide.load(smoke_folder, "learnt")
    state = contract.state(utility_decide, smoke_folder)
    first, again = utility_decide.decide(policy, [state, state])
    assert first.action == again.action and 0.0 <= first.expected <= 1.0
