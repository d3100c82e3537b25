"""PPO (``core.agents.ppo``) on the probe environments, plus the shared training machinery.

The machinery (resume, seeds, save/load, no re-trace) lives in ``onpolicy`` and is exercised
here through PPO; ``test_a2c.py`` checks A2C's learning and its own resume.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.core.agents import ppo
from decisions.core.agents.common import TrainResult
from decisions.core.agents.onpolicy import ActorCriticPolicy, optimizer
from tests.core.agents.helpers import (
    BANDIT_PARAMS,
    EVAL_KEY,
    ON_POLICY_METRICS,
    CountsTraces,
    assert_no_retrace,
    evaluate,
    resume_after_crash,
    save_and_load,
)
from tests.core.probe_envs import (
    BanditParams,
    ContinuousTarget,
    MatchTwo,
    MatchUnits,
    OneStepBandit,
    TwoStepCredit,
    WalkToGoal,
)

# Small batches and network (one hidden layer), a high learning rate: each probe trains in well under a
# second once compiled.
BANDIT_CONFIG = ppo.PPOConfig(
    num_envs=16,
    rollout_steps=16,
    total_env_steps=16 * 16 * 40,
    minibatches=2,
    learning_rate=3e-3,
    hidden=(32,),
    log_every=20,
)
WALK_CONFIG = dataclasses.replace(BANDIT_CONFIG, rollout_steps=32, total_env_steps=16 * 32 * 40)
TARGET_CONFIG = dataclasses.replace(BANDIT_CONFIG, total_env_steps=16 * 16 * 100, log_every=50)


class _CountingBandit(CountsTraces, OneStepBandit):
    """A bandit that counts how often JAX traces its ``step`` (Python runs only while tracing)."""


BANDIT = _CountingBandit(3)
"""The helpers' three-armed bandit, counting its traces: the trainings on it with ``BANDIT_CONFIG`` share
one compiled loop (``test_second_train_call_does_not_retrace`` checks that they do)."""


@partial(jax.jit, static_argnums=0)
def _act(policy: ActorCriticPolicy, params: Any, obs: jax.Array, key: jax.Array) -> jax.Array:
    """``policy(params, obs, key)`` as one compiled program (per policy and shapes)."""
    return policy(params, obs, key)


@partial(jax.jit, static_argnums=(0, 2))
def _init_params(policy: ActorCriticPolicy, key: jax.Array, normalize_obs: bool) -> Any:
    """``policy.init(key, normalize_obs)`` as one compiled program."""
    return policy.init(key, normalize_obs)


@pytest.fixture(scope="module")
def bandit_result() -> TrainResult:
    return ppo.train(BANDIT, BANDIT_CONFIG, key=jax.random.PRNGKey(0), params=BANDIT_PARAMS)


@pytest.fixture(scope="module")
def target_result() -> TrainResult:
    return ppo.train(ContinuousTarget(), TARGET_CONFIG, key=jax.random.PRNGKey(0))


def test_bandit_learns_the_best_arm(bandit_result: TrainResult) -> None:
    returns = evaluate(BANDIT, bandit_result, 1, BANDIT_PARAMS)
    np.testing.assert_allclose(returns, 1.0)
    episode_return = bandit_result.metrics["episode_return"]
    assert episode_return[0] < 0.7  # starts near the uniform policy's 0.57
    assert np.mean(episode_return[-5:]) > 0.97  # and the stochastic policy has concentrated


def test_metrics_and_result_shapes(bandit_result: TrainResult) -> None:
    iterations = BANDIT_CONFIG.iterations
    assert set(bandit_result.metrics) == ON_POLICY_METRICS | {"approx_kl", "clip_fraction"}
    for name, values in bandit_result.metrics.items():
        assert values.shape == (iterations,), name
        assert np.all(np.isfinite(values)), name
    assert bandit_result.env_steps == iterations * BANDIT_CONFIG.batch_size
    one_step_episodes = BANDIT_CONFIG.batch_size
    np.testing.assert_array_equal(bandit_result.metrics["episodes"], one_step_episodes)
    lr = bandit_result.metrics["learning_rate"]
    assert lr[0] == pytest.approx(3e-3) and np.all(np.diff(lr) < 0)  # linear decay
    assert bandit_result.metrics["entropy"][-1] < bandit_result.metrics["entropy"][0]
    assert len(bandit_result.curve()) == iterations
    assert isinstance(bandit_result.policy, ActorCriticPolicy) and bandit_result.policy.deterministic


def test_two_step_credit_learns_the_delayed_optimum() -> None:
    env = TwoStepCredit()
    result = ppo.train(env, BANDIT_CONFIG, key=jax.random.PRNGKey(1))
    optimum = float(env.optimal_return(env.default_params))
    returns = evaluate(env, result, 2)
    np.testing.assert_allclose(returns, optimum)  # the myopic lure would give 0.5
    obs, _ = env.reset(EVAL_KEY, env.default_params)
    assert int(result.policy(result.params, obs, EVAL_KEY)) == 1


def test_multi_discrete_heads_each_read_the_observation(tmp_path: Path) -> None:
    env = MatchTwo()
    config = dataclasses.replace(BANDIT_CONFIG, total_env_steps=16 * 16 * 40)
    result = ppo.train(env, config, key=jax.random.PRNGKey(4))
    assert result.policy.action_nvec == (3, 4) and result.policy.num_actions == 7
    np.testing.assert_allclose(evaluate(env, result, 1), 1.0)  # one matched head would give 0.5
    reset = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))
    obs, _ = reset(jax.random.split(EVAL_KEY, 8), env.default_params)
    sampled = _act(result.policy.stochastic(), result.params, obs, EVAL_KEY)
    assert sampled.shape == (8, 2) and bool(jnp.all(sampled < jnp.asarray([3, 4])))
    policy, params = save_and_load(ppo, result, tmp_path / "match.msgpack")
    np.testing.assert_array_equal(
        _act(policy, params, obs, EVAL_KEY), _act(result.policy, result.params, obs, EVAL_KEY)
    )


def test_set_networks_share_weights_over_units_and_learn(tmp_path: Path) -> None:
    env = MatchUnits()
    config = dataclasses.replace(BANDIT_CONFIG, total_env_steps=16 * 16 * 20, unit_width=3)
    result = ppo.train(env, config, key=jax.random.PRNGKey(4))
    assert result.policy.unit_width == 3 and result.policy.action_nvec == (3,) * 4
    np.testing.assert_allclose(evaluate(env, result, 1), 1.0)  # every unit matched
    # equivariance of the network: permuting the units' rows permutes their logits; the value is invariant
    policy, params = result.policy, result.params
    x = jax.random.normal(EVAL_KEY, (13,))
    perm = np.array([2, 0, 3, 1])
    permuted = jnp.concatenate([x[:12].reshape(4, 3)[perm].reshape(-1), x[12:]])
    apply = jax.jit(policy.network.apply)
    (logits, logits_p), (value, value_p) = apply(params["net"], jnp.stack([x, permuted]))
    np.testing.assert_allclose(logits_p.reshape(4, 3), logits.reshape(4, 3)[perm], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(value_p, value, rtol=1e-5, atol=1e-6)
    obs, _ = jax.jit(env.reset)(EVAL_KEY, env.default_params)
    loaded, loaded_params = save_and_load(ppo, result, tmp_path / "units.msgpack")
    np.testing.assert_array_equal(
        _act(loaded, loaded_params, obs, EVAL_KEY), _act(policy, params, obs, EVAL_KEY)
    )
    with pytest.raises(ValueError, match="unit_width"):
        ppo.train(MatchTwo(), config, key=jax.random.PRNGKey(4))  # unequal components
    with pytest.raises(ValueError, match="unit_width"):
        ppo.train(env, dataclasses.replace(config, unit_width=4), key=jax.random.PRNGKey(4))  # 16 > 13 features


def test_fine_tuning_starts_from_given_params(bandit_result: TrainResult) -> None:
    config = dataclasses.replace(BANDIT_CONFIG, total_env_steps=16 * 16, learning_rate=1e-9)
    tuned = ppo.train(BANDIT, config, key=jax.random.PRNGKey(9), params=BANDIT_PARAMS, initial=bandit_result.params)
    np.testing.assert_allclose(
        tuned.params["net"]["params"]["head"]["Dense_0"]["kernel"],
        bandit_result.params["net"]["params"]["head"]["Dense_0"]["kernel"],
        atol=1e-6,
    )
    np.testing.assert_allclose(evaluate(BANDIT, tuned, 1, BANDIT_PARAMS), 1.0)  # still the best arm
    with pytest.raises(ValueError, match="initial"):
        ppo.train(BANDIT, config, key=jax.random.PRNGKey(9), params=BANDIT_PARAMS, initial={"net": {}})


def test_walk_to_goal_reaches_the_goal_by_the_shortest_path() -> None:
    env = WalkToGoal(length=5, max_steps=10)  # shortest path: 1 - 4 * 0.1 = 0.6; timing out: -1.0
    result = ppo.train(env, WALK_CONFIG, key=jax.random.PRNGKey(2))
    np.testing.assert_allclose(evaluate(env, result, 10), 0.6, atol=1e-6)
    assert np.nanmean(result.metrics["episode_return"][-10:]) > 0.5


def test_continuous_target_matches_the_observation(target_result: TrainResult) -> None:
    env = ContinuousTarget()
    returns = evaluate(env, target_result, 1)
    assert returns.mean() > -0.02  # optimum 0; a constant action at the centre gets about -0.17
    curve = target_result.metrics["episode_return"]
    assert np.mean(curve[-10:]) > np.mean(curve[:10]) + 0.5


def test_continuous_actions_stay_in_bounds_and_stochastic_policy_samples(target_result: TrainResult) -> None:
    policy, params = target_result.policy, target_result.params
    obs = jnp.asarray([[0.3, -0.2], [5.0, -5.0]])  # the second is far outside the training range
    action = _act(policy, params, obs, EVAL_KEY)
    assert action.shape == (2, 2) and action.dtype == jnp.float32
    assert np.all(np.abs(np.asarray(action)) <= 1.0)
    np.testing.assert_allclose(np.asarray(action[0]), [0.3, -0.2], atol=0.1)
    draws = jax.vmap(partial(_act, policy.stochastic(), params, obs[0]))(jax.random.split(EVAL_KEY, 64))
    assert np.all(np.abs(np.asarray(draws)) <= 1.0)
    assert np.std(np.asarray(draws), axis=0).min() > 1e-3
    same_action = _act(policy, params, obs, jax.random.PRNGKey(7))  # deterministic: the key is not used
    np.testing.assert_array_equal(np.asarray(same_action), np.asarray(action))


@pytest.mark.parametrize("which", ["bandit", "target"])
def test_saved_policy_reloads_with_identical_actions(which: str, tmp_path: Path, request) -> None:
    result: TrainResult = request.getfixturevalue(f"{which}_result")
    path = tmp_path / f"{which}.msgpack"
    policy, params = save_and_load(ppo, result, path)
    obs = jax.random.uniform(EVAL_KEY, (32, *policy.obs_shape), minval=-1.0, maxval=1.0)
    for key in (EVAL_KEY, jax.random.PRNGKey(9)):
        np.testing.assert_array_equal(
            np.asarray(_act(policy, params, obs, key)),
            np.asarray(_act(result.policy, result.params, obs, key)),
        )
        sampled = _act(policy.stochastic(), params, obs, key)
        np.testing.assert_array_equal(
            np.asarray(sampled), np.asarray(_act(result.policy.stochastic(), result.params, obs, key))
        )
    np.testing.assert_array_equal(
        np.asarray(params["obs_stats"].mean), np.asarray(result.params["obs_stats"].mean)
    )
    with pytest.raises(ValueError, match="not a saved actor-critic policy"):
        from decisions.core.checkpoint import save_pytree

        save_pytree(tmp_path / "other.msgpack", {"x": jnp.zeros(2)})
        ppo.load_policy(tmp_path / "other.msgpack")


def test_resume_after_crash_equals_uninterrupted_run(bandit_result: TrainResult, tmp_path: Path) -> None:
    path = tmp_path / "ppo.msgpack"
    train = partial(ppo.train, BANDIT, BANDIT_CONFIG, key=jax.random.PRNGKey(0), params=BANDIT_PARAMS)
    meta, calls = resume_after_crash(train, path, bandit_result)
    assert meta["kind"] == "ppo" and meta["done"] == 20
    assert calls == [("ppo", 40, 40)]  # only the second chunk ran
    other = dataclasses.replace(BANDIT_CONFIG, clip_eps=0.1)
    with pytest.raises(ValueError, match=r"different config \(clip_eps\)"):
        ppo.train(BANDIT, other, key=jax.random.PRNGKey(0), params=BANDIT_PARAMS, checkpoint=path)


def test_train_seeds_vmaps_over_seeds(bandit_result: TrainResult, tmp_path: Path) -> None:
    keys = jnp.stack([jax.random.PRNGKey(0), jax.random.PRNGKey(5), jax.random.PRNGKey(6)])
    calls: list[int] = []
    result = ppo.train_seeds(
        BANDIT, BANDIT_CONFIG, keys=keys, params=BANDIT_PARAMS, progress=lambda t, d, n: calls.append(d)
    )
    assert calls == [20, 40]
    iterations = BANDIT_CONFIG.iterations
    for name, values in result.metrics.items():
        assert values.shape == (3, iterations), name
    single = jax.tree_util.tree_leaves(bandit_result.params)
    for leaf, ref in zip(jax.tree_util.tree_leaves(result.params), single, strict=True):
        assert leaf.shape == (3, *ref.shape)
    # Seed 0 is the single run with the same key (vmapping changes at most rounding).
    np.testing.assert_allclose(
        result.metrics["episode_return"][0], bandit_result.metrics["episode_return"], atol=1e-4
    )
    assert not np.allclose(result.metrics["policy_loss"][0], result.metrics["policy_loss"][1])
    first_obs = jnp.zeros((1,))
    act_per_seed = jax.vmap(partial(_act, result.policy), in_axes=(0, None, None))
    seed_actions = act_per_seed(result.params, first_obs, EVAL_KEY)
    assert seed_actions.tolist() == [1, 1, 1]  # every seed's policy takes the best arm
    with pytest.raises(ValueError, match="seed axis"):
        ppo.save_policy(tmp_path / "p.msgpack", result)
    ppo.save_policy(tmp_path / "p.msgpack", result, seed=2)
    policy, params = ppo.load_policy(tmp_path / "p.msgpack")
    np.testing.assert_array_equal(
        np.asarray(params["net"]["params"]["head"]["Dense_0"]["kernel"]),
        np.asarray(result.params["net"]["params"]["head"]["Dense_0"]["kernel"][2]),
    )


def test_second_train_call_does_not_retrace(bandit_result: TrainResult) -> None:
    other_params = BanditParams(rewards=jnp.asarray([1.0, 0.0, 0.0]))  # same shapes, new values
    train_other = partial(ppo.train, BANDIT, BANDIT_CONFIG, params=other_params)
    assert_no_retrace(train_other, BANDIT, bandit_result, "policy_loss", jax.random.PRNGKey(1))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("num_envs", 0),
        ("num_envs", 2.0),
        ("rollout_steps", -1),
        ("total_env_steps", 10),
        ("gamma", 1.5),
        ("gae_lambda", -0.1),
        ("learning_rate", 0.0),
        ("learning_rate", float("nan")),
        ("lr_schedule", "exponential"),
        ("clip_eps", 0.0),
        ("epochs", 0),
        ("minibatches", 3),
        ("entropy_coef", -0.01),
        ("value_coef", "0.5"),
        ("max_grad_norm", 0.0),
        ("grad_clip", "norm"),
        ("hidden", ()),
        ("hidden", (64, 0)),
        ("hidden", [64, 64]),
        ("activation", "sigmoid"),
        ("normalize_obs", 1),
        ("reward_scale", -1.0),
        ("log_every", 0),
        ("clip_value_loss", 1),
        ("update_metrics", 0),
    ],
)
def test_bad_config_raises_naming_the_field(field: str, value) -> None:
    with pytest.raises(ValueError, match=f"^{field}: "):
        ppo.PPOConfig(**{field: value})


@pytest.mark.parametrize(("grad_clip", "expected"), [("global_norm", [0.3, 0.4]), ("value", [0.25, 0.5])])
def test_the_optimizer_clips_the_global_norm_or_each_element(grad_clip: str, expected: list[float]) -> None:
    agent = ppo.make_agent(OneStepBandit(), ppo.PPOConfig(max_grad_norm=0.5, grad_clip=grad_clip))
    chain = optimizer(agent)
    grads = jnp.array([3.0, 4.0]) if grad_clip == "global_norm" else jnp.array([0.25, 4.0])
    _, (_, (adam, _)) = jax.jit(lambda g: chain.update(g, chain.init(g)))(grads)
    np.testing.assert_allclose(np.asarray(adam.mu), 0.1 * np.asarray(expected), rtol=1e-6)  # Adam saw the clipped one


def test_config_is_hashable_and_defaults_suit_long_episodes() -> None:
    config = ppo.PPOConfig()
    assert hash(config) == hash(ppo.PPOConfig()) and config == ppo.PPOConfig()
    assert 16 <= config.num_envs <= 64 and 64 <= config.rollout_steps <= 256
    assert config.batch_size % config.minibatches == 0 and config.iterations >= 100


def test_policy_rescales_box_actions_and_one_hot_encodes_discrete_observations() -> None:
    policy = ActorCriticPolicy(
        obs_shape=(),
        obs_categories=4,
        num_actions=0,
        action_shape=(3,),
        action_low=(0.0, -np.inf, 0.0),
        action_high=(10.0, np.inf, np.inf),
        action_dtype="float32",
        hidden=(8,),
        activation="relu",
        log_std_init=0.0,
    )
    raw = jnp.asarray([[2.0, 5.0, -3.0], [-0.5, -3.0, 4.0]])
    # [-1, 1] maps onto [0, 10] (clipped); unbounded dims pass through, half-bounded ones are clipped.
    np.testing.assert_allclose(np.asarray(policy.to_env(raw)), [[10.0, 5.0, 0.0], [2.5, -3.0, 4.0]])
    np.testing.assert_array_equal(np.asarray(policy.encode(jnp.asarray([2, 0]))), np.eye(4)[[2, 0]])
    params = _init_params(policy, jax.random.PRNGKey(0), True)
    assert params["obs_stats"].mean.shape == (4,)
    assert _act(policy, params, jnp.asarray(3), EVAL_KEY).shape == (3,)
    assert ActorCriticPolicy.from_dict(policy.to_dict()) == policy
    with pytest.raises(TypeError, match="PPOConfig"):
        ppo.train(BANDIT, object(), key=EVAL_KEY)


def test_reward_normalisation_makes_learning_scale_free() -> None:
    # Same env, config and shapes as ``bandit_result``: reuses its compiled loop.
    big = BanditParams(rewards=BANDIT_PARAMS.rewards * 1000.0)
    result = ppo.train(BANDIT, BANDIT_CONFIG, key=jax.random.PRNGKey(3), params=big)
    np.testing.assert_allclose(evaluate(BANDIT, result, 1, big), 1000.0)
    assert np.mean(result.metrics["episode_return"][-5:]) > 970.0


def test_clipped_value_loss_keeps_the_larger_error_of_a_value_moved_at_most_clip_eps() -> None:
    from decisions.core.agents.onpolicy import Batch, surrogate_loss

    config = ppo.PPOConfig(hidden=(8,), normalize_advantages=False)
    policy = ActorCriticPolicy.for_shapes(config, obs_shape=(3,), num_actions=2)
    net = _init_params(policy, jax.random.PRNGKey(0), False)["net"]
    obs = jax.random.normal(jax.random.PRNGKey(1), (6, 3))
    value = policy.network.apply(net, obs, method="value")
    old = value + jnp.array([0.5, -0.5, 0.05, -0.05, 1.0, 0.0])  # the rollout's values
    target = old + jnp.array([1.0, 1.0, -1.0, 2.0, -3.0, 0.3])
    batch = Batch(obs, jnp.zeros(6, jnp.int32), jnp.zeros(6), target - old, target)
    loss = jax.jit(surrogate_loss, static_argnums=(1, 3, 4, 5))
    _, plain = loss(net, policy, batch, config, 0.2, None)
    _, clipped = loss(net, policy, batch, config, 0.2, 0.2)
    moved = old + jnp.clip(value - old, -0.2, 0.2)
    expected = 0.5 * jnp.mean(jnp.maximum((value - target) ** 2, (moved - target) ** 2))
    np.testing.assert_allclose(plain["value_loss"], 0.5 * jnp.mean((value - target) ** 2), rtol=1e-5)
    np.testing.assert_allclose(clipped["value_loss"], expected, rtol=1e-5)
    assert clipped["value_loss"] > plain["value_loss"]


def test_update_without_metrics_trains_the_same_params() -> None:
    from decisions.core.agents.onpolicy import Batch, optimizer

    config = ppo.PPOConfig(num_envs=2, rollout_steps=4, total_env_steps=8, epochs=2, minibatches=2, hidden=(8,))
    quiet = dataclasses.replace(config, update_metrics=False)
    agents = [ppo.PPOAgent.for_shapes(c, obs_shape=(3,), num_actions=2) for c in (config, quiet)]
    net = _init_params(agents[0].policy, jax.random.PRNGKey(0), False)["net"]
    keys = jax.random.split(jax.random.PRNGKey(1), 4)
    batch = Batch(
        jax.random.normal(keys[0], (8, 3)),
        jax.random.bernoulli(keys[1], shape=(8,)).astype(jnp.int32),
        jnp.full((8,), -0.7),
        jax.random.normal(keys[2], (8,)),
        jax.random.normal(keys[3], (8,)),
    )
    (net_a, opt_a, logged), (net_b, opt_b, none) = (
        jax.jit(partial(agent.update, optimizer(agent)))(net, optimizer(agent).init(net), batch, jax.random.PRNGKey(2))
        for agent in agents
    )
    for a, b in zip(jax.tree_util.tree_leaves((net_a, opt_a)), jax.tree_util.tree_leaves((net_b, opt_b)), strict=True):
        np.testing.assert_array_equal(a, b)
    assert set(logged) == {"policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction", "grad_norm"}
    assert none == {}


@pytest.mark.parametrize("kind", ["discrete", "masked", "multi_discrete", "box"])
def test_noise_drawn_ahead_samples_the_same_actions(kind: str) -> None:
    base = dict(obs_shape=(2,), obs_categories=0, action_low=(), action_high=(), action_dtype="int32",
                hidden=(8,), activation="tanh", log_std_init=0.0)
    if kind == "box":
        policy = ActorCriticPolicy(**{**base, "action_low": (-1.0, -1.0), "action_high": (1.0, 1.0),
                                      "action_dtype": "float32"}, num_actions=0, action_shape=(2,))
    elif kind == "multi_discrete":
        policy = ActorCriticPolicy(**base, num_actions=5, action_shape=(2,), action_nvec=(2, 3))
    else:
        policy = ActorCriticPolicy(**base, num_actions=3, action_shape=())
    params = policy.init(jax.random.PRNGKey(1))
    dist = policy.network.apply(params["net"], jax.random.normal(jax.random.PRNGKey(2), (64, 2)), method="actor")
    if kind == "masked":
        dist = policy.mask_logits(dist, jnp.arange(3) != 1)
    for key in jax.random.split(jax.random.PRNGKey(3), 4):
        expected = np.asarray(_library_draw(policy, dist, key))
        np.testing.assert_array_equal(np.asarray(policy.sample_with(dist, policy.sample_noise(key, (64,)))), expected)
        np.testing.assert_array_equal(np.asarray(policy.sample(dist, key)), expected)
    if kind == "masked":
        assert not (expected == 1).any()


def _library_draw(policy: ActorCriticPolicy, dist, key):
    """The same draw by ``jax.random`` itself: ``categorical`` per head (keys split per component), or
    the Gaussian's mean plus its scaled ``normal`` noise."""
    if policy.action_nvec:
        keys = jax.random.split(key, len(policy.action_nvec))
        bounds = np.cumsum(policy.action_nvec)[:-1].tolist()
        heads = jnp.split(dist, bounds, axis=-1)
        return jnp.stack([jax.random.categorical(k, lg) for k, lg in zip(keys, heads, strict=True)], axis=-1)
    if policy.discrete:
        return jax.random.categorical(key, dist)
    mean, log_std = dist
    return mean + jnp.exp(log_std) * jax.random.normal(key, mean.shape, mean.dtype)
