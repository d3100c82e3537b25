"""Parity of ``CompEnv`` with the ``mobile-env`` package (an optional dependency, imported lazily).

- ``step_parity``: both simulators stepped with the same actions, ours loaded from mobile-env's state
  before every step (rewards and connections must agree) and, alongside, a free-running state fed only
  mobile-env's waypoint draws (positions, rewards, connections and observations must track it);
- ``compare``: mean episode returns of a policy in each simulator with 99 % intervals; the verdict
  (``compare_samples``) is an equivalence test: the whole Welch interval of the difference must lie
  within ``+-tolerance``.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from decisions.telecom.comp.policies.heuristics import POLICIES, Policy, pad_central_obs, unpad_action
from decisions.telecom.comp.sim.constants import MAX_CELLS, MAX_USERS
from decisions.telecom.comp.sim.env import CompEnv, CompState, observe, with_positions
from decisions.telecom.comp.sim.network import SCENARIOS, NetworkParams

__all__ = [
    "POSITION_TOLERANCE_M",
    "RETURN_TOLERANCE",
    "STEP_TOLERANCE",
    "compare",
    "compare_samples",
    "episode_returns_fn",
    "make_mobile_env",
    "mobile_env_installed",
    "mobile_env_returns",
    "sim_returns",
    "single_episode_fn",
    "step_parity",
    "step_parity_passes",
    "summarise",
]

RETURN_TOLERANCE = 8.0
"""Largest difference of mean episode returns (ours minus mobile-env) that counts as parity: 4 % of
the return range of a 100-step episode, a fifth of the gap between max-SNR and random."""
STEP_TOLERANCE = 1e-4
"""Largest per-step reward or observation difference of the step-level and mobility checks
(float32 against mobile-env's float64; rewards and observations lie in ``[-1, 1]``; measured
below 1e-5)."""
POSITION_TOLERANCE_M = 0.01
"""Largest user position difference, in metres, of the mobility check over an episode (float32
positions accumulate rounding; a user walks 1.5 m a step)."""


def mobile_env_installed() -> bool:
    """Whether the optional mobile-env package can be imported (without importing it)."""
    return importlib.util.find_spec("mobile_env") is not None


def make_mobile_env(scenario: str, seed: int) -> Any:
    """A mobile-env central environment (unwrapped ``MComCore``) of ``scenario``, seeded through its
    config (its ``reset(seed=...)`` does not reseed user positions)."""
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
    """``(returns, steps_per_second)`` of ``policy`` in mobile-env, one episode per seed; the speed is
    ``env.step``'s alone (NaN unless ``time_steps``)."""
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


def _episode(policy: Policy, steps: int) -> Callable[[jax.Array, NetworkParams], jax.Array]:
    """``(key, params) -> return`` of one ``steps``-step ``CompEnv`` episode of ``policy`` (reset included)."""
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

    return episode


@functools.lru_cache(maxsize=32)
def episode_returns_fn(policy: Policy, steps: int) -> Callable[[jax.Array, NetworkParams], jax.Array]:
    """A jitted, cached ``(keys, params) -> returns``: one ``steps``-step episode per key (``params`` an
    argument, so every padded network shares one compilation)."""
    return jax.jit(jax.vmap(_episode(policy, steps), in_axes=(0, None)))


@functools.lru_cache(maxsize=32)
def single_episode_fn(policy: Policy, steps: int) -> Callable[[jax.Array, NetworkParams], jax.Array]:
    """A jitted, cached ``(key, params) -> return`` of one unbatched ``steps``-step episode (reset, then a
    ``lax.scan`` of policy and step)."""
    return jax.jit(_episode(policy, steps))


def sim_returns(params: NetworkParams, policy: Policy, n_episodes: int, seed: int) -> np.ndarray:
    """``(n_episodes,)`` episode returns of ``policy`` in ``CompEnv`` over independent episodes."""
    keys = jax.random.split(jax.random.PRNGKey(seed), n_episodes)
    return np.asarray(episode_returns_fn(policy, int(params.episode_length))(keys, params))


def summarise(sample: np.ndarray, level: float = 0.99) -> dict[str, float]:
    """``{"mean", "std", "n", "ci_low", "ci_high"}`` of ``sample``, a two-sided t interval."""
    n = len(sample)
    mean = float(np.mean(sample))
    std = float(np.std(sample, ddof=1)) if n > 1 else 0.0
    half = float(stats.t.ppf(0.5 + level / 2, n - 1) * std / math.sqrt(n)) if n > 1 else math.inf
    return {"mean": mean, "std": std, "n": float(n), "ci_low": mean - half, "ci_high": mean + half}


def compare_samples(
    ours: np.ndarray, theirs: np.ndarray, level: float = 0.99, tolerance: float = RETURN_TOLERANCE
) -> dict[str, Any]:
    """Statistics and verdict of two samples of episode returns (``ours`` minus ``theirs``).

    Returns ``{"mobile_env", "sim"}`` summaries (``summarise``), ``diff`` and its Welch interval
    ``diff_ci``, Welch's ``welch_t`` / ``p_value``, ``z`` / ``p_value_z`` (ours' variance for both), the
    ``tolerance`` and ``pass`` (``diff_ci`` within ``+-tolerance``). ``ValueError`` on fewer than two values.
    """
    ours, theirs = np.asarray(ours, np.float64), np.asarray(theirs, np.float64)
    if len(ours) < 2 or len(theirs) < 2:
        raise ValueError(f"samples: need at least two returns each, got {len(ours)} and {len(theirs)}")
    test = stats.ttest_ind(ours, theirs, equal_var=False)
    va, vb = np.var(ours, ddof=1) / len(ours), np.var(theirs, ddof=1) / len(theirs)
    diff = float(np.mean(ours) - np.mean(theirs))
    if va + vb > 0:
        dof = (va + vb) ** 2 / (va**2 / (len(ours) - 1) + vb**2 / (len(theirs) - 1))
        half = float(stats.t.ppf(0.5 + level / 2, dof) * math.sqrt(va + vb))
    else:
        half = 0.0
    var = float(np.var(ours, ddof=1))
    z = diff / math.sqrt(var / len(ours) + var / len(theirs)) if var > 0 else 0.0
    low, high = diff - half, diff + half
    return {
        "mobile_env": summarise(theirs, level),
        "sim": summarise(ours, level),
        "diff": diff,
        "diff_ci": (low, high),
        "welch_t": float(test.statistic) if va + vb > 0 else 0.0,
        "p_value": float(test.pvalue) if va + vb > 0 else 1.0,
        "z": z,
        "p_value_z": float(2 * stats.norm.sf(abs(z))),
        "tolerance": float(tolerance),
        "pass": bool(-tolerance <= low and high <= tolerance),
    }


def compare(
    scenario: str,
    policy_name: str,
    n_mobile: int,
    n_sim: int = 512,
    seed: int = 0,
    level: float = 0.99,
    tolerance: float = RETURN_TOLERANCE,
    params: NetworkParams | None = None,
) -> dict[str, Any]:
    """``{"scenario", "policy"}`` and ``compare_samples``' statistics of a named policy in both simulators."""
    policy = POLICIES[policy_name]
    theirs, _ = mobile_env_returns(scenario, policy, list(range(seed, seed + n_mobile)))
    ours = sim_returns(SCENARIOS[scenario]() if params is None else params, policy, n_sim, seed + 10_000)
    return {"scenario": scenario, "policy": policy_name, **compare_samples(ours, theirs, level, tolerance)}


def _mobile_env_connections(env: Any) -> np.ndarray:
    """mobile-env's current connections as a padded ``(MAX_USERS, MAX_CELLS)`` bool array."""
    conn = np.zeros((MAX_USERS, MAX_CELLS), bool)
    for bs, ues in env.connections.items():
        for ue in ues:
            conn[ue.ue_id, bs.bs_id] = True
    return conn


def _mobile_env_positions(env: Any) -> np.ndarray:
    """mobile-env's current user positions, padded to ``(MAX_USERS, 2)`` (float64)."""
    pos = np.zeros((MAX_USERS, 2))
    for ue_id, ue in env.users.items():
        pos[ue_id] = (ue.x, ue.y)
    return pos


def _state_from_mobile_env(env: Any, template: CompState, params: NetworkParams) -> CompState:
    """A ``CompState`` holding mobile-env's current user positions and connections."""
    pos = _mobile_env_positions(env).astype(np.float32)
    conn = jnp.asarray(_mobile_env_connections(env))
    return with_positions(template.replace(conn=conn), jnp.asarray(pos), params)


def _waypoints_used(env: Any, pos: np.ndarray) -> np.ndarray:
    """The waypoints mobile-env's last ``move`` walked its users towards, ``(MAX_USERS, 2)``: a user still
    holding one walked towards it, the others landed on theirs (``pos``)."""
    waypoints = pos.copy()
    for ue, (wx, wy) in env.movement.waypoints.items():
        waypoints[ue.ue_id] = (wx, wy)
    return waypoints


@functools.cache
def _jit_step() -> Callable[..., tuple[Any, ...]]:
    """``CompEnv().step`` jitted with the network as an argument (one compilation for every network)."""
    return jax.jit(CompEnv().step)


@functools.cache
def _jit_observe() -> Callable[[CompState, NetworkParams], jax.Array]:
    """``env.observe`` jitted with the network as an argument."""
    return jax.jit(observe)


def step_parity(
    scenario: str,
    policy_name: str,
    seed: int = 0,
    steps: int = 100,
    params: NetworkParams | None = None,
) -> dict[str, float]:
    """Step both simulators with the same actions (``POLICIES[policy_name]`` driving mobile-env) and compare.

    One mobile-env episode (``seed``, at most ``steps`` steps) drives two ``CompEnv`` states on ``params``
    (default the scenario's): one loaded from mobile-env before every step (step level: largest reward
    error, connection mismatches, the observation error at reset), one loaded only at reset that moves
    its users itself given mobile-env's waypoint draws (``mobility_...``: largest position, reward and
    observation errors, summed connection mismatches); ``roam_area_error_m`` compares the roaming areas.

    Returns:
        ``{"steps", "max_reward_error", "connection_mismatches", "obs_max_error",
        "mobility_max_position_error_m", "mobility_max_reward_error", "mobility_connection_mismatches",
        "mobility_obs_max_error", "roam_area_error_m"}``.
    """
    params = SCENARIOS[scenario]() if params is None else params
    sim = CompEnv()
    act = _policy_fn(POLICIES[policy_name], params)
    sim_step, sim_observe = _jit_step(), _jit_observe()
    env = make_mobile_env(scenario, seed)
    n_cells, n_users = env.NUM_STATIONS, env.NUM_USERS
    obs, _ = env.reset()
    _, template = sim.reset(jax.random.PRNGKey(0), params)
    state = _state_from_mobile_env(env, template, params)
    free = state
    padded_obs = pad_central_obs(obs, n_cells, n_users, MAX_CELLS, MAX_USERS)
    obs_err = float(np.max(np.abs(np.asarray(sim_observe(state, params)) - padded_obs)))
    roam = np.asarray(params.size, np.float64) - np.array([env.movement.width, env.movement.height], np.float64)
    key = jax.random.PRNGKey(seed)
    max_err, mismatches, done, n = 0.0, 0, False, 0
    free_pos_err, free_err, free_mismatches, free_obs_err = 0.0, 0.0, 0, 0.0
    while not done and n < steps:
        key, sub = jax.random.split(key)
        state = _state_from_mobile_env(env, state, params)
        action = unpad_action(act(pad_central_obs(obs, n_cells, n_users, MAX_CELLS, MAX_USERS), sub), n_users)
        padded = np.zeros(MAX_USERS, np.int32)
        padded[:n_users] = action
        _, new_state, reward, _, _, _ = sim_step(sub, state, jnp.asarray(padded), params)
        obs, their_reward, terminated, truncated, _ = env.step(action)
        theirs = _mobile_env_connections(env)
        max_err = max(max_err, abs(float(reward) - float(their_reward)))
        mismatches += int(np.sum(theirs != np.asarray(new_state.conn)))
        state = new_state
        # free-running: its own positions and connections, mobile-env's waypoint draws only
        their_pos = _mobile_env_positions(env)
        free = free.replace(waypoint=jnp.asarray(_waypoints_used(env, their_pos), jnp.float32))
        free_obs, free, free_reward, _, _, _ = sim_step(sub, free, jnp.asarray(padded), params)
        user = np.arange(MAX_USERS) < n_users
        gap = np.linalg.norm(np.asarray(free.pos, np.float64)[user] - their_pos[user], axis=1)
        free_pos_err = max(free_pos_err, float(np.max(gap)))
        free_err = max(free_err, abs(float(free_reward) - float(their_reward)))
        free_mismatches += int(np.sum(theirs != np.asarray(free.conn)))
        their_obs = pad_central_obs(obs, n_cells, n_users, MAX_CELLS, MAX_USERS)
        free_obs_err = max(free_obs_err, float(np.max(np.abs(np.asarray(free_obs) - their_obs))))
        done = terminated or truncated
        n += 1
    return {
        "steps": float(n),
        "max_reward_error": max_err,
        "connection_mismatches": float(mismatches),
        "obs_max_error": obs_err,
        "mobility_max_position_error_m": free_pos_err,
        "mobility_max_reward_error": free_err,
        "mobility_connection_mismatches": float(free_mismatches),
        "mobility_obs_max_error": free_obs_err,
        "roam_area_error_m": float(np.max(np.abs(roam))),
    }


def step_parity_passes(result: dict[str, float]) -> bool:
    """Whether a ``step_parity`` result is parity: rewards and observations within ``STEP_TOLERANCE``,
    user positions within ``POSITION_TOLERANCE_M``, no connection mismatch, the same roaming area."""
    return bool(
        max(
            result["max_reward_error"],
            result["obs_max_error"],
            result["mobility_max_reward_error"],
            result["mobility_obs_max_error"],
        )
        <= STEP_TOLERANCE
        and result["mobility_max_position_error_m"] <= POSITION_TOLERANCE_M
        and result["connection_mismatches"] == 0
        and result["mobility_connection_mismatches"] == 0
        and result["roam_area_error_m"] <= POSITION_TOLERANCE_M
    )
