"""Parity of ``CompEnv`` with the ``mobile-env`` package (an optional dependency).

Two checks:

- ``step_parity``: drive mobile-env with a policy and, before each of its steps, load its
  user positions and connections into a ``CompState`` and step ``CompEnv`` with the same
  action: the rewards and the connections after the step must agree (mobility aside, the
  two simulators are then deterministic functions of the same inputs);
- ``compare``: mean episode returns of a policy over independent episodes of each
  simulator (mobile-env seeded through its config, ours through JAX keys), with 99 %
  confidence intervals and Welch's t-test. The simulators' random streams differ, so only
  the return distributions can agree.

Everything that imports mobile-env does so lazily, so this module imports without it.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from decisions.telecom.comp.env import CompEnv, CompState, with_positions
from decisions.telecom.comp.heuristics import POLICIES, Policy, pad_central_obs, unpad_action
from decisions.telecom.comp.network import MAX_CELLS, MAX_USERS, SCENARIOS, NetworkParams

__all__ = [
    "compare",
    "episode_returns_fn",
    "make_mobile_env",
    "mobile_env_returns",
    "sim_returns",
    "step_parity",
    "summarise",
]


def make_mobile_env(scenario: str, seed: int) -> Any:
    """A mobile-env central environment of ``scenario`` seeded by ``seed``.

    mobile-env's ``reset(seed=...)`` does not reseed user positions, so the seed goes into
    its config (its movement RNG is seeded with ``seed + 4``).

    Args:
        scenario: ``small``, ``medium`` or ``large``.
        seed: the seed.

    Returns:
        The (unwrapped) ``MComCore`` environment.
    """
    from mobile_env.handlers.central import MComCentralHandler
    from mobile_env.scenarios.large import MComLarge
    from mobile_env.scenarios.medium import MComMedium
    from mobile_env.scenarios.small import MComSmall

    classes = {"small": MComSmall, "medium": MComMedium, "large": MComLarge}
    if scenario not in classes:
        raise ValueError(f"scenario: unknown scenario {scenario!r}; choose one of {sorted(classes)}")
    return classes[scenario](config={"seed": int(seed), "handler": MComCentralHandler})


def _policy_fn(policy: Policy, params: NetworkParams) -> Callable[[np.ndarray, jax.Array], np.ndarray]:
    """A jitted ``(padded_obs, key) -> action`` for one network."""
    fn = jax.jit(lambda obs, key: policy(obs, key, params))
    return lambda obs, key: np.asarray(fn(jnp.asarray(obs), key))


def mobile_env_returns(
    scenario: str, policy: Policy, seeds: list[int], *, time_steps: bool = False
) -> tuple[np.ndarray, float]:
    """Episode returns of ``policy`` in mobile-env, one episode per seed.

    Args:
        scenario: ``small``, ``medium`` or ``large``.
        policy: a ``heuristics`` policy (fed mobile-env's observation, padded).
        seeds: one seed per episode (also seeds the policy's key).
        time_steps: also measure mobile-env's ``step`` time alone.

    Returns:
        ``(returns, steps_per_second)``: the returns, and mobile-env steps per second of
        ``env.step`` alone (NaN unless ``time_steps``).
    """
    params = SCENARIOS[scenario]()
    act = _policy_fn(policy, params)
    returns, step_time, steps = [], 0.0, 0
    for seed in seeds:
        env = make_mobile_env(scenario, seed)
        n_cells, n_users = env.NUM_STATIONS, env.NUM_USERS
        obs, _ = env.reset()
        key = jax.random.PRNGKey(seed)
        total, done = 0.0, False
        while not done:
            key, sub = jax.random.split(key)
            action = unpad_action(
                act(pad_central_obs(obs, n_cells, n_users, MAX_CELLS, MAX_USERS), sub), n_users
            )
            start = time.perf_counter()
            obs, reward, terminated, truncated, _ = env.step(action)
            step_time += time.perf_counter() - start
            steps += 1
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    rate = steps / step_time if time_steps and step_time > 0 else math.nan
    return np.asarray(returns), rate


@functools.lru_cache(maxsize=32)
def episode_returns_fn(policy: Policy, steps: int) -> Callable[[jax.Array, NetworkParams], jax.Array]:
    """A jitted ``(keys, params) -> returns`` running one ``steps``-step episode per key (cached).

    ``params`` is an argument, not a constant, so every padded network shares one compilation.

    Args:
        policy: a ``heuristics`` policy.
        steps: episode length (static).

    Returns:
        The function; ``keys`` is a batch of PRNG keys, ``returns`` has one entry per key.
    """
    env = CompEnv()

    def episode(key: jax.Array, params: NetworkParams) -> jax.Array:
        k_reset, k_run = jax.random.split(key)
        obs, state = env.reset(k_reset, params)

        def body(
            carry: tuple[jax.Array, CompState], k: jax.Array
        ) -> tuple[tuple[jax.Array, CompState], jax.Array]:
            obs, state = carry
            k_pol, k_env = jax.random.split(k)
            obs, state, reward, _, _, _ = env.step(k_env, state, policy(obs, k_pol, params), params)
            return (obs, state), reward

        _, rewards = jax.lax.scan(body, (obs, state), jax.random.split(k_run, steps))
        return jnp.sum(rewards)

    return jax.jit(jax.vmap(episode, in_axes=(0, None)))


def sim_returns(params: NetworkParams, policy: Policy, n_episodes: int, seed: int) -> np.ndarray:
    """Episode returns of ``policy`` in ``CompEnv`` over ``n_episodes`` independent episodes.

    Args:
        params: the network.
        policy: a ``heuristics`` policy.
        n_episodes: number of episodes (vmapped).
        seed: seed of the episodes' keys.

    Returns:
        ``(n_episodes,)`` returns.
    """
    keys = jax.random.split(jax.random.PRNGKey(seed), n_episodes)
    return np.asarray(episode_returns_fn(policy, int(params.episode_length))(keys, params))


def summarise(sample: np.ndarray, level: float = 0.99) -> dict[str, float]:
    """Mean, standard deviation, count and a two-sided t confidence interval of ``sample``.

    Args:
        sample: the values.
        level: confidence level.

    Returns:
        ``{"mean", "std", "n", "ci_low", "ci_high"}``.
    """
    n = len(sample)
    mean = float(np.mean(sample))
    std = float(np.std(sample, ddof=1)) if n > 1 else 0.0
    half = float(stats.t.ppf(0.5 + level / 2, n - 1) * std / math.sqrt(n)) if n > 1 else math.inf
    return {"mean": mean, "std": std, "n": float(n), "ci_low": mean - half, "ci_high": mean + half}


def compare(
    scenario: str, policy_name: str, n_mobile: int, n_sim: int = 512, seed: int = 0, level: float = 0.99
) -> dict[str, Any]:
    """Compare mean episode returns of a named policy in mobile-env and ``CompEnv``.

    Args:
        scenario: ``small``, ``medium`` or ``large``.
        policy_name: a key of ``heuristics.POLICIES``.
        n_mobile: mobile-env episodes (seeds ``seed .. seed + n_mobile - 1``).
        n_sim: ``CompEnv`` episodes.
        seed: base seed.
        level: confidence level of the intervals.

    Returns:
        ``{"scenario", "policy", "mobile_env": summary, "sim": summary, "diff", "diff_ci",
        "welch_t", "p_value", "z", "p_value_z"}`` (summaries as ``summarise``; ``diff`` is sim minus mobile-env
        and ``diff_ci`` its Welch confidence interval; ``z`` and ``p_value_z`` test the
        difference with the simulator's variance for both samples).
    """
    policy = POLICIES[policy_name]
    theirs, _ = mobile_env_returns(scenario, policy, list(range(seed, seed + n_mobile)))
    ours = sim_returns(SCENARIOS[scenario](), policy, n_sim, seed + 10_000)
    test = stats.ttest_ind(ours, theirs, equal_var=False)
    va, vb = np.var(ours, ddof=1) / len(ours), np.var(theirs, ddof=1) / len(theirs)
    dof = (va + vb) ** 2 / (va**2 / (len(ours) - 1) + vb**2 / (len(theirs) - 1))
    diff = float(np.mean(ours) - np.mean(theirs))
    half = float(stats.t.ppf(0.5 + level / 2, dof) * math.sqrt(va + vb))
    # Under the null both samples share the simulator's (large-sample) variance: a z-test that
    # stays reliable with a handful of mobile-env episodes, where Welch's variance is noisy.
    var = float(np.var(ours, ddof=1))
    z = diff / math.sqrt(var / len(ours) + var / len(theirs)) if var > 0 else 0.0
    return {
        "scenario": scenario,
        "policy": policy_name,
        "mobile_env": summarise(theirs, level),
        "sim": summarise(ours, level),
        "diff": diff,
        "diff_ci": (diff - half, diff + half),
        "welch_t": float(test.statistic),
        "p_value": float(test.pvalue),
        "z": z,
        "p_value_z": float(2 * stats.norm.sf(abs(z))),
    }


def _state_from_mobile_env(env: Any, template: CompState, params: NetworkParams) -> CompState:
    """A ``CompState`` holding mobile-env's current user positions and connections."""
    pos = np.zeros((MAX_USERS, 2), np.float32)
    conn = np.zeros((MAX_USERS, MAX_CELLS), bool)
    for ue_id, ue in env.users.items():
        pos[ue_id] = (ue.x, ue.y)
    for bs, ues in env.connections.items():
        for ue in ues:
            conn[ue.ue_id, bs.bs_id] = True
    return with_positions(template.replace(conn=jnp.asarray(conn)), jnp.asarray(pos), params)


def step_parity(scenario: str, policy_name: str, seed: int = 0, steps: int = 100) -> dict[str, float]:
    """Step both simulators from mobile-env's states with the same actions and compare.

    Args:
        scenario: ``small``, ``medium`` or ``large``.
        policy_name: a key of ``heuristics.POLICIES`` (drives mobile-env).
        seed: mobile-env seed.
        steps: steps to compare (at most the episode length).

    Returns:
        ``{"steps", "max_reward_error", "connection_mismatches", "obs_max_error"}``: the
        largest absolute reward difference, the number of (user, cell) connections that
        differ after the step, and the largest absolute difference of the observations at
        reset (padded mobile-env observation against ``observe`` of the loaded state).
    """
    from decisions.telecom.comp.env import observe

    params = SCENARIOS[scenario]()
    sim = CompEnv()
    act = _policy_fn(POLICIES[policy_name], params)
    sim_step = jax.jit(lambda key, state, action: sim.step(key, state, action, params))
    env = make_mobile_env(scenario, seed)
    n_cells, n_users = env.NUM_STATIONS, env.NUM_USERS
    obs, _ = env.reset()
    _, template = sim.reset(jax.random.PRNGKey(0), params)
    state = _state_from_mobile_env(env, template, params)
    obs_err = float(
        np.max(
            np.abs(
                np.asarray(observe(state, params))
                - pad_central_obs(obs, n_cells, n_users, MAX_CELLS, MAX_USERS)
            )
        )
    )
    key = jax.random.PRNGKey(seed)
    max_err, mismatches, done, n = 0.0, 0, False, 0
    while not done and n < steps:
        key, sub = jax.random.split(key)
        state = _state_from_mobile_env(env, state, params)
        action = unpad_action(act(pad_central_obs(obs, n_cells, n_users, MAX_CELLS, MAX_USERS), sub), n_users)
        padded = np.zeros(MAX_USERS, np.int32)
        padded[:n_users] = action
        _, new_state, reward, _, _, _ = sim_step(sub, state, jnp.asarray(padded))
        obs, their_reward, terminated, truncated, _ = env.step(action)
        max_err = max(max_err, abs(float(reward) - float(their_reward)))
        theirs = np.zeros((MAX_USERS, MAX_CELLS), bool)
        for bs, ues in env.connections.items():
            for ue in ues:
                theirs[ue.ue_id, bs.bs_id] = True
        mismatches += int(np.sum(theirs != np.asarray(new_state.conn)))
        state = new_state
        done = terminated or truncated
        n += 1
    return {
        "steps": float(n),
        "max_reward_error": max_err,
        "connection_mismatches": float(mismatches),
        "obs_max_error": obs_err,
    }
