"""The greedy serving-set planner: its objective is the environment's reward, it finds the exhaustive
optimum on the small scenarios, and it runs as a state-reading policy in rollouts."""

from __future__ import annotations

import inspect
import itertools

import jax
import jax.numpy as jnp
import pytest

from decisions.telecom.comp.policies.heuristics import SERVING_SET_POLICIES
from decisions.telecom.comp.policies.planner import GreedyPlanner, greedy_serving_sets, step_utility
from decisions.telecom.comp.policies.rollouts import ENV, TaskPolicy, rollout, task_policy
from decisions.telecom.comp.sim.catalog import TRAINING_TASKS

# Jitted once per input structure (every network is padded to the same shapes): called op by op, each
# call of the planner's scans would compile again.
_greedy = jax.jit(greedy_serving_sets, static_argnames=("sweeps", "restarts"))
_utility = jax.jit(step_utility)
_utilities = jax.jit(jax.vmap(step_utility, in_axes=(None, 0, None)))
_canonical = jax.jit(ENV.canonical_action)
_step = jax.jit(ENV.step)
_reset = jax.jit(ENV.reset)


def _state(task_index: int, seed: int):  # noqa: ANN202 - a (net, state) pair
    net = TRAINING_TASKS[task_index].params()
    _, state = _reset(jax.random.PRNGKey(seed), net)
    # a proportional-fair scheduler divides by past rates: give every user some
    return net, state.replace(avg_rate=jnp.full_like(state.avg_rate, 1e6))


@pytest.mark.parametrize("task_index", [0, 4, 7])
def test_step_utility_is_the_environment_reward_times_the_users(task_index: int) -> None:
    net, state = _state(task_index, 1)
    n_users = int(net.user_mask.sum())
    for seed in range(3):
        action = jax.random.randint(jax.random.PRNGKey(seed), net.user_mask.shape, 0, 4)
        action = _canonical(state, action, net)
        _, _, reward, _, _, _ = _step(jax.random.PRNGKey(9), state, action, net)
        assert float(_utility(state, action, net)) == pytest.approx(float(reward) * n_users, rel=1e-5, abs=1e-5)


@pytest.mark.parametrize("task_index", [0, 3])  # c3-u5 resource-fair (mobile-env's small) and rate-fair
def test_greedy_finds_the_exhaustive_optimum_of_a_small_network(task_index: int) -> None:
    net = TRAINING_TASKS[task_index].params()
    combos = jnp.asarray(list(itertools.product(range(1, 4), repeat=5)), jnp.int32)  # 3 cells, 5 users
    every = jnp.zeros((len(combos), net.user_mask.shape[0]), jnp.int32).at[:, :5].set(combos)
    for seed in range(4):
        _, state = _state(task_index, seed)
        best = float(_utilities(state, every, net).max())
        found = _greedy(state, net)
        assert float(_utility(state, found, net)) == pytest.approx(best, abs=1e-5)
        assert int(found[5:].sum()) == 0  # padded users get nothing


def test_greedy_never_does_worse_than_its_max_snr_start_and_improves_with_sweeps() -> None:
    net, state = _state(8, 2)  # c8-u16 proportional-fair
    start = float(_utility(state, jnp.where(net.user_mask, 1, 0).astype(jnp.int32), net))
    assert inspect.signature(greedy_serving_sets).parameters["sweeps"].default == 2
    # one sweep, then two (the default: the other tests' compiled search)
    values = [float(_utility(state, found, net)) for found in (_greedy(state, net, 1), _greedy(state, net))]
    assert start <= values[0] + 1e-6 <= values[1] + 2e-6
    assert values[1] > start  # on this state, cooperating cells pay


def test_warm_start_and_restarts_only_add_candidates() -> None:
    net, state = _state(6, 1)  # c5-u12 max-capacity: single-user moves get stuck there
    cold = float(_utility(state, _greedy(state.replace(conn=state.conn & False), net), net))
    warm_links = state.replace(conn=jnp.zeros_like(state.conn).at[:, :2].set(net.user_mask[:, None]))
    warm = float(_utility(warm_links, _greedy(warm_links, net), net))
    assert warm >= cold - 1e-6  # same positions: the warm start is one more start beside max-SNR
    key = jax.random.PRNGKey(4)
    restarted = float(_utility(state, _greedy(state, net, key=key, restarts=8), net))
    assert restarted >= cold - 1e-6
    with pytest.raises(ValueError, match="key"):
        greedy_serving_sets(state, net, restarts=2)
    with pytest.raises(ValueError, match="restarts"):
        GreedyPlanner(restarts=-1)


def test_planner_runs_as_a_policy_that_reads_the_state() -> None:
    task = TRAINING_TASKS[1]
    planner = task_policy(GreedyPlanner())
    assert isinstance(planner, TaskPolicy) and planner.fn.reads_state
    # the first 10 steps of 4 common episodes (a whole episode is 100 steps of the planner's searches:
    # 10x the time, and its per-step gain over max-SNR shows from the first step)
    keys = jax.random.split(jax.random.PRNGKey(5), 4)
    greedy, max_snr = (
        rollout(task, policy, keys, steps=10)["reward"].sum(axis=1).mean()
        for policy in (planner, SERVING_SET_POLICIES["max_snr"])
    )
    assert greedy > max_snr
    net, state = _state(1, 0)
    obs = ENV.observe(state, net)
    planned = jax.jit(lambda o, k, n, s: planner(o, k, n, s))(obs, jax.random.PRNGKey(0), net, state)
    assert jnp.array_equal(planned, _greedy(state, net))
    with pytest.raises(ValueError, match="state"):
        planner(obs, jax.random.PRNGKey(0), net)
    with pytest.raises(ValueError, match="sweeps"):
        GreedyPlanner(sweeps=0)
