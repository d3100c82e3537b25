"""The utility-weight domain: simulator truths, objectives, front geometry, the Q-network, the spec."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.errors import InputError
from decisions.recsys.utility import baselines, frontier, qnet
from decisions.recsys.utility import objectives as obj
from decisions.recsys.utility import simulator as sim_mod
from decisions.recsys.utility.scenario import Simulator, WeightSet, simplex_grid
from decisions.recsys.utility.spec import QNetSettings, prepare

SIM = Simulator(candidates=20, slate_size=4)
WEIGHTS = jnp.asarray(WeightSet(grid_step=4).matrix())


@pytest.fixture(scope="module")
def world() -> sim_mod.World:
    return sim_mod.make_world(SIM)


@pytest.fixture(scope="module")
def batch(world: sim_mod.World) -> sim_mod.SimBatch:
    logger = jnp.asarray(sim_mod.uniform_logger(WEIGHTS.shape[0]))
    return sim_mod.simulate(jax.random.PRNGKey(0), SIM, world, WEIGHTS, logger, 4096, chunk=512)


def test_simplex_grid_counts_and_sums() -> None:
    grid = simplex_grid(12)
    assert grid.shape == (91, 3)
    np.testing.assert_allclose(grid.sum(axis=1), 1.0)
    assert len({tuple(row) for row in np.round(grid, 9)}) == 91


def test_exact_outcomes_of_a_hand_built_request() -> None:
    truth = jnp.asarray([[[0.5, 0.1, 0.2], [0.2, 0.3, 0.5], [0.9, 0.0, 0.0]]])
    requests = sim_mod.Requests(context=jnp.zeros((1, 1)), segment=jnp.zeros(1, int), truth=truth,
                                price=jnp.asarray([[10.0, 20.0, 30.0]]), heads=jnp.zeros((1, 3, 3)))
    exam = jnp.asarray([1.0, 0.5])
    out = np.asarray(sim_mod.expected_outcomes(requests, jnp.asarray([[1, 0]]), exam))[0]
    # shows item 1 at the top (examined surely), item 0 second (examined half the time)
    assert out[0] == pytest.approx(1 - (1 - 0.2) * (1 - 0.5 * 0.5))
    assert out[1] == pytest.approx(0.3 + 0.5 * 0.1)
    assert out[2] == pytest.approx(0.5 * 20.0 + 0.5 * 0.2 * 10.0)


def test_slates_rank_by_the_weighted_heads() -> None:
    heads = jnp.asarray([[[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0]]])
    # save only: item 0 first; hide only: item 1 (a hide prediction) last; revenue only: item 2 first
    order = np.asarray(sim_mod.slates(heads, jnp.asarray([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]]), 3))[0]
    assert order[0, 0] == 0 and order[1, 2] == 1 and order[2, 0] == 2


def test_logged_responses_average_to_the_exact_outcomes(batch: sim_mod.SimBatch) -> None:
    rows = np.arange(batch.action.shape[0])
    exact = np.asarray(batch.outcomes)[rows, np.asarray(batch.action)]
    drawn = np.asarray(batch.reward)
    error = drawn - exact
    stderr = error.std(axis=0) / np.sqrt(len(error))
    assert np.all(np.abs(error.mean(axis=0)) < 4 * stderr)
    assert np.all(np.asarray(batch.propensity) == pytest.approx(1 / WEIGHTS.shape[0]))


def test_context_outcomes_average_fresh_users_of_the_same_context(world: sim_mod.World,
                                                                  batch: sim_mod.SimBatch) -> None:
    profile = jax.tree.map(lambda x: x[:64], batch.profile)
    values = np.asarray(sim_mod.context_outcomes(jax.random.PRNGKey(1), SIM, world, WEIGHTS, profile, draws=4,
                                                 chunk=32))
    again = np.asarray(sim_mod.context_outcomes(jax.random.PRNGKey(1), SIM, world, WEIGHTS, profile, draws=4,
                                                chunk=32))
    assert values.shape == (64, WEIGHTS.shape[0], 3)
    np.testing.assert_array_equal(values, again)
    assert np.all(values[..., 0] >= 0) and np.all(values[..., 0] <= 1)


def test_a_miscalibrated_ranker_makes_the_best_weights_depend_on_the_context(batch: sim_mod.SimBatch) -> None:
    values = np.asarray(obj.objectives(batch.outcomes, SIM.hide_cost))
    segment = np.asarray(batch.profile.segment)
    scales = jnp.asarray([1.0, 20.0])
    best = {int(np.argmax(np.asarray(obj.linear(jnp.asarray(values[segment == s].mean(axis=0)), 0.5, scales))))
            for s in range(4)}
    assert len(best) > 1


def test_linear_scalarisation_sweep_of_the_truth_is_monotone(batch: sim_mod.SimBatch) -> None:
    values = obj.objectives(batch.outcomes, SIM.hide_cost)
    scales = jnp.asarray([0.5, 15.0])
    points = []
    for lam in np.linspace(0, 1, 9):
        acts = np.asarray(baselines.oracle_actions(values, lam, scales))
        points.append(np.asarray(values)[np.arange(len(acts)), acts].mean(axis=0))
    points = np.asarray(points)
    assert np.all(np.diff(points[:, 0]) <= 1e-6), "engagement must not rise as lambda moves to revenue"
    assert np.all(np.diff(points[:, 1]) >= -1e-6), "revenue must not fall as lambda rises"


def test_chebyshev_reaches_a_point_in_a_concave_part_that_linear_misses() -> None:
    values = jnp.asarray([[[1.0, 0.0], [0.0, 1.0], [0.45, 0.45]]])  # the middle point lies below the chord
    scales = jnp.ones(2)
    linear = {int(baselines.oracle_actions(values, lam, scales, "linear")[0]) for lam in np.linspace(0, 1, 21)}
    cheb = {int(baselines.oracle_actions(values, lam, scales, "chebyshev")[0]) for lam in np.linspace(0, 1, 21)}
    assert 2 not in linear and 2 in cheb
    ends = np.asarray([[1.0, 0.0], [0.0, 1.0]])
    assert frontier.points_undominated_by(np.asarray([[0.45, 0.45]]), ends) == 1  # a new deterministic policy
    assert frontier.points_beyond(np.asarray([[0.45, 0.45]]), ends) == 0  # but a 50/50 mix gives (0.5, 0.5)
    assert frontier.points_beyond(np.asarray([[0.55, 0.55]]), ends) == 1


def test_hypervolume_and_engagement_at_a_revenue_by_hand() -> None:
    points = np.asarray([[3.0, 1.0], [1.0, 3.0], [2.0, 2.0], [1.0, 1.0]])
    # union of [0,3]x[0,1], [0,1]x[0,3], [0,2]x[0,2] = 3 + 2 + 1 (staircase)
    assert frontier.hypervolume(points, np.zeros(2)) == pytest.approx(6.0)
    assert frontier.non_dominated(points).tolist() == [True, True, True, False]
    assert frontier.engagement_at(points, 1.5) == pytest.approx(2.5)  # mix of (3, 1) and (2, 2)
    assert frontier.engagement_at(points, 2.0) == pytest.approx(2.0)
    assert np.isnan(frontier.engagement_at(points, 4.0))


def test_q_network_recovers_a_planted_optimum() -> None:
    rng = np.random.default_rng(0)
    n, weights = 6000, np.asarray(simplex_grid(2), np.float32)  # 6 actions
    context = rng.normal(size=(n, 2)).astype(np.float32)
    action = rng.integers(0, len(weights), n)
    # success is high when the save weight matches the sign of the first feature
    target = np.where(context[:, 0] > 0, weights[action, 0], 1.0 - weights[action, 0])
    reward = np.stack([target + 0.1 * rng.normal(size=n), np.zeros(n), np.zeros(n)], axis=1).astype(np.float32)
    logs = qnet.Logs(context, action, np.full(n, 1 / len(weights)), reward)
    settings = QNetSettings(hidden=(32,), embedding=8, steps=600, batch_size=256, learning_rate=3e-3, log_every=200,
                            ensemble=1)
    model, figures = qnet.train(logs, logs, weights, obj.Scales(1.0, 1.0), 0.0, settings)
    probe = jnp.asarray([[1.5, 0.0], [-1.5, 0.0]])
    chosen = np.asarray(qnet.decide(model, probe, 0.0))
    assert weights[chosen[0], 0] == 1.0 and weights[chosen[1], 0] == 0.0
    assert figures["validation_loss"] < 1.0


def test_lambda_input_q_network_learns_a_lambda_dependent_choice() -> None:
    rng = np.random.default_rng(1)
    n, weights = 6000, np.asarray(simplex_grid(2), np.float32)
    action = rng.integers(0, len(weights), n)
    # success follows the save weight, revenue the revenue weight: lambda 0 wants (1, 0, 0), lambda 1 (0, 0, 1)
    reward = np.stack([weights[action, 0], np.zeros(n), weights[action, 2]], axis=1)
    reward = (reward + 0.05 * rng.normal(size=reward.shape)).astype(np.float32)
    logs = qnet.Logs(rng.normal(size=(n, 2)).astype(np.float32), action, np.full(n, 1 / len(weights)), reward)
    settings = QNetSettings(hidden=(32,), embedding=8, steps=800, batch_size=256, learning_rate=3e-3, log_every=200,
                            conditioning="lambda", ensemble=1)
    model, _ = qnet.train(logs, logs, weights, obj.Scales(1.0, 1.0), 0.0, settings)
    probe = jnp.zeros((1, 2))
    assert weights[int(qnet.decide(model, probe, 0.0)[0])].tolist() == [1.0, 0.0, 0.0]
    assert weights[int(qnet.decide(model, probe, 1.0)[0])].tolist() == [0.0, 0.0, 1.0]
    with pytest.raises(ValueError, match="linear scalarisation only"):
        qnet.decide(model, probe, 0.5, "chebyshev")


def test_saved_q_network_reloads_to_the_same_decisions(tmp_path, batch: sim_mod.SimBatch) -> None:
    logs = qnet.Logs(*(np.asarray(x) for x in (batch.context, batch.action, batch.propensity, batch.reward)))
    settings = QNetSettings(hidden=(16,), embedding=4, steps=20, log_every=10, ensemble=2)
    model, _ = qnet.train(logs, logs, np.asarray(WEIGHTS), obj.Scales(0.5, 15.0), SIM.hide_cost, settings)
    assert model.members == 2 and jax.tree.leaves(model.params)[0].shape[0] == 2
    qnet.save_model(tmp_path / "q.msgpack", model)
    again = qnet.load_model(tmp_path / "q.msgpack")
    single = model._replace(params=jax.tree.map(lambda x: x[0], model.params), members=1)
    assert not np.allclose(qnet.predict_outcomes(single, batch.context), qnet.predict_outcomes(model, batch.context))
    for lam in (0.0, 0.5, 1.0):
        np.testing.assert_array_equal(qnet.decide(model, batch.context, lam), qnet.decide(again, batch.context, lam))
    (tmp_path / "bad.msgpack").write_bytes(b"not a checkpoint")
    with pytest.raises(InputError, match="model"):
        qnet.load_model(tmp_path / "bad.msgpack")


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"weights": {"vectors": []}}, "weights.vectors"),
        ({"weights": {"vectors": [[0.5, float("nan"), 0.5]]}}, "weights.vectors"),
        ({"weights": {"vectors": [[0.0, 0.0, 0.0]]}}, "weights.vectors"),
        ({"frontier": {"lambdas": [0.2, 1.5]}}, "frontier.lambdas"),
        ({"drift": {"lam": -0.1}}, "drift.lam"),
        ({"simulator": {"slate_size": 200}}, "simulator"),
        ({"logs": {"epsilon": 0}}, "logs.epsilon"),
        ({"agent": {"conditioning": "lambda"}}, "frontier.chebyshev"),
        ({"agent": {"hidden": [0]}}, "agent.hidden"),
    ],
)
def test_bad_specs_name_the_field(spec: dict, field: str) -> None:
    with pytest.raises(InputError) as err:
        prepare({"job": {"kind": "utility"}, **spec})
    assert field in str(err.value)
    assert "\n" not in str(err.value)


def test_lambda_outside_the_unit_interval_is_refused() -> None:
    with pytest.raises(InputError, match="lambda: must lie in"):
        obj.check_lambda(1.2)
    assert obj.check_lambda([0.0, 1.0]).tolist() == [0.0, 1.0]
