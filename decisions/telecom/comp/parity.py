"""Parity of ``CompEnv`` with the ``mobile-env`` package (an optional dependency).

Three checks:

- ``step_parity``, step level: drive mobile-env with a policy and, before each of its steps,
  load its user positions and connections into a ``CompState`` and step ``CompEnv`` with the
  same action: the rewards and the connections after the step must agree (mobility aside,
  the two simulators are then deterministic functions of the same inputs);
- ``step_parity``, under mobility: alongside, a second ``CompState`` runs free over the whole
  episode (its users move by our ``mobility.waypoint_step``, its connections follow our
  step), loaded from mobile-env only at reset and fed only the random waypoints mobile-env
  draws (the one random input; the simulators' generators differ). Its user positions,
  rewards, connections and observations must track mobile-env's at every step, and the area
  our users roam must be mobile-env's movement area (where the waypoints are drawn);
- ``compare``, episode level: mean episode returns of a policy over independent episodes of
  each simulator (mobile-env seeded through its config, ours through JAX keys), with 99 %
  confidence intervals and Welch's t-test. The simulators' random streams differ, so only
  the return distributions can agree. The verdict (``compare_samples``) is an equivalence
  test: parity passes when the whole Welch confidence interval of the difference of mean
  returns lies within ``+-tolerance`` (``RETURN_TOLERANCE`` by default; two one-sided tests
  at ``(1 - level) / 2`` each). It fails on a real difference beyond the tolerance and on
  too few episodes to bound the difference (an interval wider than the tolerance), never
  merely because a test found no difference.

Everything that imports mobile-env does so lazily, so this module imports without it.
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

from decisions.telecom.comp.env import CompEnv, CompState, observe, with_positions
from decisions.telecom.comp.heuristics import POLICIES, Policy, pad_central_obs, unpad_action
from decisions.telecom.comp.network import MAX_CELLS, MAX_USERS, SCENARIOS, NetworkParams

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
"""Largest difference of mean episode returns (ours minus mobile-env) that counts as parity: 8
return units, 4 % of the return range ``[-100, 100]`` of a 100-step episode and a fifth of the
~40 units between the max-SNR and random policies. Measured: letting users roam the whole
300 x 300 m large map instead of mobile-env's 200 x 200 m movement area moves the large
max-SNR mean return by ~14 (-1.1 to 13.0 over 512 episodes), beyond it (the slow test
``test_the_return_verdict_fails_when_users_roam_the_whole_large_map``)."""
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
    """A jitted ``(keys, params) -> returns`` running one ``steps``-step episode per key (cached).

    ``params`` is an argument, not a constant, so every padded network shares one compilation.

    Args:
        policy: a ``heuristics`` policy.
        steps: episode length (static).

    Returns:
        The function; ``keys`` is a batch of PRNG keys, ``returns`` has one entry per key.
    """
    return jax.jit(jax.vmap(_episode(policy, steps), in_axes=(0, None)))


@functools.lru_cache(maxsize=32)
def single_episode_fn(policy: Policy, steps: int) -> Callable[[jax.Array, NetworkParams], jax.Array]:
    """A jitted ``(key, params) -> return`` of one ``steps``-step episode, not batched (cached).

    The one-environment counterpart of ``episode_returns_fn``: reset, then a ``lax.scan`` of
    ``steps`` steps each computing the policy's action and stepping the environment.

    Args:
        policy: a ``heuristics`` policy.
        steps: episode length (static).

    Returns:
        The function; ``key`` is one PRNG key, the return a scalar.
    """
    return jax.jit(_episode(policy, steps))


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


def compare_samples(
    ours: np.ndarray, theirs: np.ndarray, level: float = 0.99, tolerance: float = RETURN_TOLERANCE
) -> dict[str, Any]:
    """Statistics and verdict of two samples of episode returns (``ours`` minus ``theirs``).

    Args:
        ours: ``CompEnv``'s returns (at least two).
        theirs: mobile-env's returns (at least two).
        level: confidence level of the intervals.
        tolerance: the equivalence margin of ``pass``, in return units.

    Returns:
        ``{"mobile_env": summary, "sim": summary, "diff", "diff_ci", "welch_t", "p_value", "z",
        "p_value_z", "tolerance", "pass"}``: summaries as ``summarise``; ``diff`` is the
        difference of means and ``diff_ci`` its Welch confidence interval; ``welch_t`` and
        ``p_value`` Welch's test of equal means; ``z`` and ``p_value_z`` the same difference
        tested with ``ours``' variance for both samples (reliable with a handful of mobile-env
        episodes, where Welch's variance is noisy); ``pass`` is True when ``diff_ci`` lies
        within ``[-tolerance, tolerance]`` (see the module docstring).

    Raises:
        ValueError: a sample has fewer than two values.
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
    """Compare mean episode returns of a named policy in mobile-env and ``CompEnv``.

    Args:
        scenario: ``small``, ``medium`` or ``large``.
        policy_name: a key of ``heuristics.POLICIES``.
        n_mobile: mobile-env episodes (seeds ``seed .. seed + n_mobile - 1``).
        n_sim: ``CompEnv`` episodes.
        seed: base seed.
        level: confidence level of the intervals.
        tolerance: equivalence margin of the verdict, in return units.
        params: ``CompEnv``'s network (default the scenario's; another one, e.g. perturbed,
            shows what the check detects).

    Returns:
        ``{"scenario", "policy"}`` and ``compare_samples``' statistics and verdict.
    """
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
    """The waypoints mobile-env's last ``move`` walked its users towards, padded to ``(MAX_USERS, 2)``.

    mobile-env draws a user's waypoint lazily in ``move`` and drops it once the user lands on
    it: a user still holding one walked towards it, the others landed on theirs (``pos``,
    the positions after the move).
    """
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
    """Step both simulators with the same actions and compare, from mobile-env's states and free-running.

    One mobile-env episode drives two ``CompEnv`` states (see the module docstring): one
    loaded from mobile-env before every step (step level, no mobility), one loaded only at
    reset that moves its users itself and is given only mobile-env's random waypoints
    (mobility over the episode).

    Args:
        scenario: ``small``, ``medium`` or ``large``.
        policy_name: a key of ``heuristics.POLICIES`` (drives mobile-env).
        seed: mobile-env seed.
        steps: steps to compare (at most the episode length).
        params: ``CompEnv``'s network (default the scenario's; another one, e.g. perturbed,
            shows what the check detects).

    Returns:
        ``{"steps", "max_reward_error", "connection_mismatches", "obs_max_error",
        "mobility_max_position_error_m", "mobility_max_reward_error",
        "mobility_connection_mismatches", "mobility_obs_max_error", "roam_area_error_m"}``.
        Step level: the largest absolute reward difference, the number of (user, cell)
        connections that differ after the step, and the largest absolute difference of the
        observations at reset (padded mobile-env observation against ``observe`` of the
        loaded state). Mobility (the free-running state): the largest distance in metres
        between a user's position and mobile-env's after a step, the largest reward
        difference, the (user, cell) connection mismatches summed over the steps, the largest
        observation difference after a step; and the largest difference, in metres, between
        the area our users roam (``params.size``) and mobile-env's movement area.
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
    obs_err = float(
        np.max(
            np.abs(
                np.asarray(sim_observe(state, params)) - pad_central_obs(obs, n_cells, n_users, MAX_CELLS, MAX_USERS)
            )
        )
    )
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
