"""The MetaRL planner: problem families, the scale-free environment, planning, save/reload, the job."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.core.agents.onpolicy import ActorCriticPolicy, write_policy
from decisions.finance.wealth.bench import EXAMPLE_MULTI_GOAL, multi_goal_problem
from decisions.finance.wealth.beyond import Inflation, glide_path_greedy
from decisions.finance.wealth.dp import option_sets, solve
from decisions.finance.wealth.families import (
    FAMILIES,
    MAX_GOALS_PER_YEAR,
    client_keys,
    held_out_problems,
    problem_key,
    sample_problem,
    sample_problems,
)
from decisions.finance.wealth.market import Market
from decisions.finance.wealth.meta_env import (
    DEFAULT_BANK,
    MAX_OPTIONS,
    N_FEATURES,
    MetaParams,
    WealthMetaEnv,
    encode,
    features,
    make_params,
    on_device,
)
from decisions.finance.wealth.planner import (
    DEFAULT_CONFIG,
    Planner,
    default_planner,
    joint_planner,
    load_planner,
    plan,
    planner_training,
    save_planner,
    train_planner,
)
from decisions.finance.wealth.problem import WealthProblem
from decisions.finance.wealth.simulate import dp_policy, draw_normals, evaluate, never_fund, simulate


@pytest.mark.parametrize("family", [*FAMILIES, "mixed"])
def test_every_family_samples_valid_problems_within_the_planner_reach(family: str) -> None:
    for seed in range(5):
        problem = sample_problem(np.random.default_rng(seed), family)
        assert problem.horizon <= 30 and problem.goals
        years = [g.year for g in problem.goals]
        assert max(years.count(y) for y in years) <= MAX_GOALS_PER_YEAR
        assert max(len(s.costs) for s in option_sets(problem)) <= MAX_OPTIONS
        encode(problem)  # fits the padding


def test_held_out_problems_are_reproducible_and_not_in_training() -> None:
    held = held_out_problems(3)
    assert list(held) == list(FAMILIES) and all(len(p) == 3 for p in held.values())
    again = held_out_problems(3)
    assert [problem_key(p) for p in held["bunched"]] == [problem_key(p) for p in again["bunched"]]
    drawn = sample_problems(500)
    train = {problem_key(p) for p in drawn}
    assert not train & {problem_key(p) for ps in held.values() for p in ps}
    assert client_keys(500) == [problem_key(p) for p in drawn]  # the same keys without building the problems
    for family in FAMILIES:
        assert client_keys(5, family, seed=7) == [problem_key(p) for p in sample_problems(5, family, seed=7)]
    with pytest.raises(ValueError, match="family"):
        sample_problem(np.random.default_rng(0), "nonsense")


def test_observation_is_scale_free() -> None:
    problem = multi_goal_problem()
    data = problem.model_dump()
    scaled = WealthProblem.model_validate(
        {
            **data,
            "initial_wealth": 10 * data["initial_wealth"],
            "cash_flows": [10 * c for c in data["cash_flows"]],
            "goals": [
                {"year": g["year"], "options": [{"cost": 10 * o["cost"], "utility": 3 * o["utility"]} for o in g["options"]]}
                for g in data["goals"]
            ],
        }
    )
    a, scale_a, total_a = encode(problem)
    b, scale_b, total_b = encode(scaled)
    assert scale_b == 10 * scale_a and total_b == pytest.approx(3 * total_a)
    for t in range(problem.horizon + 1):
        fa = features(on_device(a), jnp.int32(t), jnp.float32(0.9), jnp.float32(0.05))
        fb = features(on_device(b), jnp.int32(t), jnp.float32(0.9), jnp.float32(0.05))
        assert fa.shape == (N_FEATURES,) and bool(jnp.all(jnp.isfinite(fa)))
        np.testing.assert_allclose(fa, fb, rtol=1e-5, atol=1e-6)


def test_encode_rejects_problems_beyond_the_padding() -> None:
    with pytest.raises(ValueError, match="problem.horizon"):
        encode(WealthProblem(horizon=31, initial_wealth=100.0))
    crowded = WealthProblem(
        horizon=5,
        initial_wealth=100.0,
        goals=[{"year": 2, "options": [{"cost": c, "utility": c}, {"cost": 2 * c, "utility": 3 * c}]} for c in (1, 2, 4)],
    )
    with pytest.raises(ValueError, match="problem.goals"):
        encode(crowded)


@pytest.mark.parametrize("joint", [True, False])
def test_environment_replays_simulate_exactly_without_noise(joint: bool) -> None:
    """With zero volatility both follow W(t+1) = paid-down * exp(mu - sigma^2 / 2): same utility."""
    problem = multi_goal_problem(90.0)
    mu, sigma = problem.market.frontier()
    params = make_params([problem], mu - sigma**2 / 2, np.zeros_like(sigma))
    env = WealthMetaEnv(len(mu), joint=joint)
    _, total = encode(problem)[1:]
    for option, portfolio in [(0, 0), (MAX_OPTIONS - 1, 14), (1, 7)]:
        action = jnp.asarray(option * len(mu) + portfolio if joint else [option, portfolio])
        assert env.action_space(params).contains(action)
        obs, state = env.reset(jax.random.PRNGKey(0), params)
        episode = 0.0
        for _ in range(problem.horizon + 1):
            obs, state, reward, terminated, _, _ = env.step(jax.random.PRNGKey(1), state, action, params)
            episode += float(reward)
            if bool(terminated):
                break

        def fixed(t, cash, wealth, option=option, portfolio=portfolio):
            return np.full(len(cash), option), np.full(len(cash), portfolio)

        expected = simulate(problem, fixed, normals=np.zeros((1, problem.horizon))).utility[0]
        assert episode * total == pytest.approx(expected, rel=1e-5)


def test_shipped_planner_plans_fast_and_close_to_the_dp() -> None:
    """The shipped planner on the bench's three-goal client, on a coarser DP grid than the default (rho 1.5:
    about 380 nodes, not 770; the planner's tables use the same grid): its plan is nearly the DP's."""
    planner = default_planner()
    problem = WealthProblem.parse({**EXAMPLE_MULTI_GOAL, "initial_wealth": 100.0, "rho": 1.5})
    plan(planner, problem)  # compile
    answer = plan(planner, problem)
    assert answer.seconds < 0.5  # the bench measures the figure; this guards against a re-trace per call
    result = solve(problem)
    assert answer.goal_option.shape == (problem.horizon + 1, len(answer.wealth))
    assert answer.portfolio.shape == (problem.horizon, len(answer.wealth))
    assert set(answer.wealth[1:]) <= set(result.wealth[1:])  # table nodes are DP grid nodes
    normals = draw_normals(3, 4_000, problem.horizon)
    planner_u = evaluate(problem, answer.policy, normals=normals).mean()
    dp_u = evaluate(problem, dp_policy(result), normals=normals).mean()
    never_u = evaluate(problem, never_fund(), normals=normals).mean()
    assert never_u == 0.0 and planner_u > 0.9 * dp_u
    # The tables are the policy at the node wealth.
    t, node = 2, len(answer.wealth) // 2
    w = answer.wealth[node : node + 1]
    option, portfolio = answer.policy(t, w + problem.flows()[t], w)
    assert option[0] == answer.goal_option[t, node] and portfolio[0] == answer.portfolio[t, node]
    assert planner_training()["problems"] > 1000


TINY_CONFIG = dataclasses.replace(
    DEFAULT_CONFIG, num_envs=32, rollout_steps=32, total_env_steps=32 * 32 * 2, hidden=(32, 32), minibatches=2, log_every=2
)
"""Two PPO iterations in one chunk: the planner tests' trainings share its programs."""


def test_train_save_reload_gives_identical_plans(tmp_path: Path) -> None:
    config = TINY_CONFIG
    planner, result = train_planner(64, config=config, seed=1)
    path = tmp_path / "planner.msgpack"
    save_planner(path, result, problems=64)
    reloaded = load_planner(path)
    problem = multi_goal_problem(120.0)
    a, b = plan(planner, problem), plan(reloaded, problem)
    np.testing.assert_array_equal(a.goal_option, b.goal_option)
    np.testing.assert_array_equal(a.portfolio, b.portfolio)
    info = planner_training(path)
    assert info["problems"] == 64 and info["env_steps"] == 32 * 32 * 2
    other = tmp_path / "other.msgpack"  # an actor-critic policy file of another environment's shape
    foreign = WealthMetaEnvLike()
    foreign_policy = ActorCriticPolicy.from_env(foreign, foreign.default_params, config)
    write_policy(other, foreign_policy, foreign_policy.init(jax.random.PRNGKey(0)))
    with pytest.raises(ValueError, match="not a wealth planner"):
        load_planner(other)


def test_joint_head_starts_as_the_product_of_the_factored_heads(tmp_path: Path) -> None:
    """``joint_planner`` keeps every plan and probability; fine-tuning it runs and reloads as joint."""
    config = TINY_CONFIG
    factored, _ = train_planner(64, config=config, seed=2, joint=False)
    joint = joint_planner(factored)
    assert not factored.joint and joint.joint and joint.n_portfolios == factored.n_portfolios == 15
    problem = multi_goal_problem(110.0)
    a, b = plan(factored, problem), plan(joint, problem)
    np.testing.assert_array_equal(a.goal_option, b.goal_option)
    np.testing.assert_array_equal(a.portfolio, b.portfolio)
    obs = jax.vmap(features, in_axes=(None, 0, 0, None))(
        on_device(encode(problem)[0]), jnp.arange(4), jnp.linspace(0.5, 2.0, 4), 0.05
    )
    slot, port = jnp.meshgrid(jnp.arange(MAX_OPTIONS), jnp.arange(15), indexing="ij")
    both = jnp.stack([slot.ravel(), port.ravel()], -1)
    for o in obs:
        lp_factored = jax.vmap(lambda act, o=o: log_prob(factored, o, act))(both)
        lp_joint = jax.vmap(lambda act, o=o: log_prob(joint, o, act))(jnp.arange(MAX_OPTIONS * 15))
        np.testing.assert_allclose(lp_joint, lp_factored, atol=1e-5)
    tuned, result = train_planner(64, config=config, seed=3, initial=factored)
    assert tuned.joint and result.env_steps == 32 * 32 * 2
    path = tmp_path / "joint.msgpack"
    save_planner(path, result, problems=64)
    assert load_planner(path).joint


def log_prob(planner: Planner, obs: jax.Array, action: jax.Array) -> jax.Array:
    """The planner's log-probability of ``action`` at one observation."""
    x = planner.params["obs_stats"].normalize(planner.policy.encode(obs))
    dist = planner.policy.network.apply(planner.params["net"], x, method="actor")
    return planner.policy.log_prob(dist, action)


class WealthMetaEnvLike(WealthMetaEnv):
    """A planner-shaped environment with another portfolio count but a foreign observation (for the reload check:
    a policy file of its shape is not a planner)."""

    def __init__(self) -> None:
        super().__init__(3)
        mu, sigma = Market().frontier()
        self._params = make_params(sample_problems(4), mu[:3], sigma[:3])

    @property
    def default_params(self) -> MetaParams:
        return self._params

    def observe(self, state, params):
        return super().observe(state, params)[:10]

    def observation_space(self, params):
        from decisions.core.spaces import Box

        return Box(-jnp.inf, jnp.inf, (10,), jnp.float32)


def test_inflation_and_glide_path() -> None:
    paths = Inflation(mean=0.02, persistence=0.5, vol=0.0, initial=0.04).paths(0, 3, 4)
    np.testing.assert_allclose(paths[0], [0.04, 0.03, 0.025, 0.0225])
    problem = multi_goal_problem()
    normals = draw_normals(0, 500, problem.horizon)
    base = evaluate(problem, glide_path_greedy(problem), normals=normals)
    none = evaluate(problem, glide_path_greedy(problem), normals=normals, drag=np.zeros_like(normals))
    worse = evaluate(problem, glide_path_greedy(problem), normals=normals, drag=np.full_like(normals, 0.05))
    np.testing.assert_array_equal(base, none)
    assert worse.mean() < base.mean()
    with pytest.raises(ValueError, match="drag"):
        evaluate(problem, glide_path_greedy(problem), normals=normals, drag=np.zeros((2, 2)))


def test_default_params_is_a_small_mixed_bank_the_agents_can_use() -> None:
    env = WealthMetaEnv(4)
    params = env.default_params
    assert params.bank.flows.shape[0] == DEFAULT_BANK and params.mu.shape == params.sigma.shape
    obs, state = env.reset(jax.random.PRNGKey(0), params)
    assert obs.shape == env.observation_space(params).shape and bool(jnp.all(jnp.isfinite(obs)))
