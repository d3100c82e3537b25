"""One calling convention for CoMP policies and their jitted, vmapped episodes on a task.

- ``TaskPolicy`` / ``task_policy`` / ``epsilon_noisy``: heuristics (``policy(obs, key, net_params)``),
  trained actor-critic policies (``policy(params, obs, key)``, single- or multi-task) and noisy variants;
- ``rollout`` / ``evaluate_policy``: episodes of any of them on a task, on common random numbers (the
  same seed gives every policy the same initial positions and user movement).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from decisions.core.agents.common import TrainResult
from decisions.core.agents.onpolicy import ActorCriticPolicy
from decisions.core.env import Info
from decisions.telecom.comp.policies.heuristics import random_set_size
from decisions.telecom.comp.sim.catalog import FEATURE_DIM, Task
from decisions.telecom.comp.sim.constants import MAX_CELLS
from decisions.telecom.comp.sim.env import CompEnv, CompState, hide_links
from decisions.telecom.comp.sim.network import NetworkParams
from decisions.telecom.comp.sim.qoe import rate_figures
from decisions.telecom.comp.sim.tasks import features_from_params

__all__ = [
    "ENV",
    "EXPERT_ENV",
    "OBS_FEATURES",
    "TaskPolicy",
    "act",
    "baseline_reward",
    "canonical_action",
    "counterfactual_step",
    "epsilon_noisy",
    "evaluate_policy",
    "mean_user_qoe",
    "policy_seed",
    "rollout",
    "seed_key",
    "task_policy",
]

PyTree = Any

ENV = CompEnv(action_mode="serving_set")
"""The tasks' environment (serving-set actions, link flags observed) for rollouts, data and evaluation;
one instance, so compiled loops are cached. Each policy adapter hides the flags from a policy trained
without them."""
EXPERT_ENV = CompEnv(action_mode="serving_set", observe_links=False)
"""The environment the per-task experts learn in: ``ENV`` with the link flags (the previous action)
hidden, so a (Prompt-)DT, which must not read them, can reproduce their decisions."""
OBS_FEATURES = 2 * MAX_CELLS + 1
"""Per-user observation width ``F`` (connection flags, normalised SNRs, utility)."""


@dataclass(frozen=True)
class _Heuristic:
    """Adapter of a heuristic ``policy(obs, key, net_params)`` (hashable: a jit static)."""

    fn: Callable[[Array, Array, NetworkParams], Array]

    def __call__(self, pparams: PyTree, obs: Array, key: Array, net: NetworkParams) -> Array:
        del pparams
        return self.fn(obs, key, net)


@dataclass(frozen=True)
class _ActorCritic:
    """Adapter of a trained ``ActorCriticPolicy``; appends the task features for multi-task policies
    and hides the link flags from a policy trained without them."""

    policy: ActorCriticPolicy
    observe_links: bool = True

    def __call__(self, pparams: PyTree, obs: Array, key: Array, net: NetworkParams) -> Array:
        if not self.observe_links:
            obs = hide_links(obs)
        if self.policy.features == ENV.obs_size + FEATURE_DIM:
            obs = jnp.concatenate([obs, features_from_params(net)])
        elif self.policy.features != ENV.obs_size:
            raise ValueError(
                f"policy: expects {self.policy.features} observation features, "
                f"not {ENV.obs_size} (single-task) or {ENV.obs_size + FEATURE_DIM} (multi-task)"
            )
        return self.policy(pparams, obs, key)


def act(
    fn: Callable[..., Array], pparams: PyTree, obs: Array, key: Array, net: NetworkParams, state: CompState | None
) -> Array:
    """``fn(pparams, obs, key, net)``, with ``state`` appended for a function that reads the environment
    state (``reads_state``; ``ValueError`` when ``state`` is None)."""
    if not getattr(fn, "reads_state", False):
        return fn(pparams, obs, key, net)
    if state is None:
        raise ValueError(f"state: {type(fn).__name__} acts on the environment state, not on an observation alone")
    return fn(pparams, obs, key, net, state)


@dataclass(frozen=True)
class _EpsilonNoisy:
    """Replace each real user's action by a uniform one (``random_set_size``) with probability ``epsilon``."""

    inner: Callable[..., Array]
    epsilon: float

    @property
    def reads_state(self) -> bool:
        """Whether the wrapped policy reads the environment state."""
        return bool(getattr(self.inner, "reads_state", False))

    def __call__(
        self, pparams: PyTree, obs: Array, key: Array, net: NetworkParams, state: CompState | None = None
    ) -> Array:
        k_inner, k_rand, k_coin = jax.random.split(key, 3)
        action = act(self.inner, pparams, obs, k_inner, net, state)
        noise = random_set_size(obs, k_rand, net)
        coin = jax.random.uniform(k_coin, action.shape) < self.epsilon
        return jnp.where(coin, noise, action).astype(jnp.int32)


@dataclass(frozen=True)
class TaskPolicy:
    """A CoMP policy in one calling convention: ``fn(params, obs, key, net_params) -> action``.

    ``fn`` is hashable (a jit static argument: equal ``fn`` reuse compiled rollouts) and
    ``params`` its pytree (weights; ``None`` for heuristics), excluded from equality.
    """

    fn: Callable[[PyTree, Array, Array, NetworkParams], Array]
    params: PyTree = field(default=None, compare=False, hash=False)

    def __call__(self, obs: Array, key: Array, net: NetworkParams, state: CompState | None = None) -> Array:
        """Action for one observation of network ``net`` (and its ``state``, which a planner needs)."""
        return act(self.fn, self.params, obs, key, net, state)


def task_policy(policy: Any, observe_links: bool = True) -> TaskPolicy:
    """A policy (heuristic, ``TrainResult``, ``(policy, params)`` or ``TaskPolicy``) as a ``TaskPolicy``;
    ``observe_links=False`` hides the link flags from an actor-critic trained without them."""
    if isinstance(policy, TaskPolicy):
        return policy
    if isinstance(policy, TrainResult):
        if not isinstance(policy.policy, ActorCriticPolicy):
            raise TypeError(f"policy: not an actor-critic result ({type(policy.policy).__name__})")
        return TaskPolicy(_ActorCritic(policy.policy, observe_links), policy.params)
    if isinstance(policy, tuple) and len(policy) >= 2 and isinstance(policy[0], ActorCriticPolicy):
        return TaskPolicy(_ActorCritic(policy[0], observe_links), policy[1])
    if getattr(policy, "reads_state", False):
        return TaskPolicy(policy)
    if callable(policy):
        return TaskPolicy(_Heuristic(policy))
    raise TypeError(f"policy: cannot use {type(policy).__name__} as a CoMP policy")


def epsilon_noisy(policy: Any, epsilon: float) -> TaskPolicy:
    """``policy`` with each real user's action replaced by a uniform one w.p. ``epsilon`` in ``[0, 1]``."""
    if not 0.0 <= float(epsilon) <= 1.0:
        raise ValueError(f"epsilon: must be in [0, 1], got {epsilon!r}")
    base = task_policy(policy)
    return TaskPolicy(_EpsilonNoisy(base.fn, float(epsilon)), base.params)


# ----------------------------------------------------------------------------- rollouts


def canonical_action(state: CompState, action: Array, net: NetworkParams) -> Array:
    """``ENV.canonical_action``: serving-set sizes clipped to each user's connectable cells
    (0 for padded users). Rollouts and recorded datasets use this form, so a trained
    policy's arbitrary choices that change nothing never reach the data.
    """
    return ENV.canonical_action(state, action, net)


def counterfactual_step(
    fn: Callable[..., Array], obs: Array, key: Array, env_key: Array, state: CompState, net: NetworkParams
) -> tuple[Array, Array, Info]:
    """What the weightless policy ``fn`` (a ``TaskPolicy`` function: a heuristic, the planner) would
    do in ``state`` and earn: its canonical action, stepped with the same environment key (the same
    user movement), the step discarded. Returns ``(action, reward, info)``."""
    action = canonical_action(state, act(fn, None, obs, key, net, state), net)
    _, _, reward, _, _, info = ENV.step(env_key, state, action, net)
    return action, reward, info


def baseline_reward(
    baseline: Callable[..., Array], obs: Array, key: Array, env_key: Array, state: CompState, net: NetworkParams
) -> Array:
    """The reward ``baseline`` would earn in ``state`` (``counterfactual_step``)."""
    return counterfactual_step(baseline, obs, key, env_key, state, net)[1]


def mean_user_qoe(info: Info, net: NetworkParams) -> Array:
    """A step's mean QoE over the network's real users."""
    return jnp.sum(info["qoe"]) / jnp.maximum(jnp.sum(net.user_mask), 1)


@partial(jax.jit, static_argnames=("fn", "steps", "record", "user_rates", "baseline"))
def _rollout_jit(
    keys: Array,
    net: NetworkParams,
    pparams: PyTree,
    *,
    fn: Callable[..., Array],
    steps: int,
    record: bool,
    user_rates: bool = False,
    baseline: Callable[..., Array] | None = None,
) -> dict[str, Array]:
    def episode(key: Array) -> dict[str, Array]:
        # Environment and policy randomness come from separate streams, so every policy sees
        # the same initial positions and user movement for a given key (common random numbers).
        k_reset, k_env, k_act = jax.random.split(key, 3)
        obs, state = ENV.reset(k_reset, net)
        n = jnp.maximum(jnp.sum(net.user_mask), 1)

        def step(carry: tuple[Array, CompState], keys_t: tuple[Array, Array]) -> tuple[Any, dict[str, Array]]:
            obs, state = carry
            env_key, act_key = keys_t
            action = canonical_action(state, act(fn, pparams, obs, act_key, net, state), net)
            obs2, state2, reward, _, _, info = ENV.step(env_key, state, action, net)
            out = {
                "reward": reward,
                "qoe": mean_user_qoe(info, net),
                "jain_qoe": info["jain_qoe"],
                "jain_rate": info["jain_rate"],
                "rate": jnp.sum(info["rate"]) / n,
            }
            if record:
                out["obs"] = obs
                out["action"] = action
            if user_rates:
                out["user_rate"] = info["rate"]
            if baseline is not None:
                out["baseline_reward"] = baseline_reward(baseline, obs, jax.random.fold_in(act_key, 1), env_key, state, net)
            return (obs2, state2), out

        xs = (jax.random.split(k_env, steps), jax.random.split(k_act, steps))
        _, out = jax.lax.scan(step, (obs, state), xs)
        return out

    return jax.vmap(episode)(keys)


def rollout(
    task: Task | NetworkParams,
    policy: Any,
    keys: Array,
    *,
    record: bool = False,
    steps: int | None = None,
    user_rates: bool = False,
    baseline: Any = None,
) -> dict[str, np.ndarray]:
    """One full episode per key of ``policy`` on ``task`` (jitted, vmapped): numpy ``(episodes, T)``
    ``reward``, ``qoe``, ``jain_qoe``, ``jain_rate``, ``rate`` (bit/s), and ``obs`` / ``action`` /
    ``user_rate`` when asked."""
    net = task.params() if isinstance(task, Task) else task
    steps = int(net.episode_length) if steps is None else int(steps)
    tp = task_policy(policy)
    base = None if baseline is None else task_policy(baseline).fn
    out = _rollout_jit(keys, net, tp.params, fn=tp.fn, steps=steps, record=record, user_rates=user_rates, baseline=base)
    return {k: np.asarray(v) for k, v in out.items()}


def evaluate_policy(
    task: Task, policy_fn: Any, episodes: int = 64, seed: int = 0, *, rates: bool = False
) -> dict[str, float]:
    """Mean figures of ``policy`` on ``task`` over ``episodes`` (common random numbers per ``seed``):
    ``return_mean`` / ``_std`` / ``_sem``, ``qoe``, ``jain_qoe``, ``jain_rate``, ``rate_mbps``, ``episodes``."""
    if int(episodes) != episodes or episodes < 1:
        raise ValueError(f"episodes: must be a positive integer, got {episodes!r}")
    keys = jax.random.split(jax.random.PRNGKey(seed), int(episodes))
    out = rollout(task, policy_fn, keys, user_rates=rates)
    returns = out["reward"].astype(np.float64).sum(axis=1)
    extra = {}
    if rates:
        net = task.params() if isinstance(task, Task) else task
        extra = rate_figures(out["user_rate"], np.asarray(net.user_mask))
    return extra | {
        "return_mean": float(returns.mean()),
        "return_std": float(returns.std()),
        "return_sem": float(returns.std(ddof=1) / np.sqrt(len(returns)))
        if len(returns) > 1
        else float("nan"),
        "qoe": float(out["qoe"].mean()),
        "jain_qoe": float(out["jain_qoe"].mean()),
        "jain_rate": float(out["jain_rate"].mean()),
        "rate_mbps": float(out["rate"].mean() / 1e6),
        "episodes": int(episodes),
    }


# ----------------------------------------------------------------------------- single-task experts


def seed_key(seed: int | Array) -> Array:
    """A PRNG key from an integer seed (a key is returned as it is)."""
    return jax.random.PRNGKey(seed) if isinstance(seed, (int, np.integer)) else seed


def policy_seed(name: str) -> int:
    """A stable 31-bit integer of a name (for per-policy key streams)."""
    return zlib.crc32(name.encode()) & 0x7FFFFFFF
