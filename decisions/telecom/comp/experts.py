"""Per-task PPO experts, a multi-task PPO baseline and a common evaluator for CoMP policies.

- ``EXPERT_CONFIG``: the default ``PPOConfig`` for ``CompEnv`` (see its docstring for the why);
- ``train_expert`` / ``save_expert`` / ``load_expert``: one PPO policy per ``Task`` with the
  core PPO, saved as msgpack with the task in the metadata;
- ``MultiTaskCompEnv`` / ``train_multitask`` (in ``multitask``, re-exported): ONE PPO policy over many tasks: every episode
  draws a task from a bank of stacked ``NetworkParams`` and the task features are appended
  to the observation (the "multi-task PPO" baseline);
- ``TaskPolicy`` / ``task_policy`` / ``epsilon_noisy``: one calling convention for heuristics
  (``policy(obs, key, net_params)``), trained actor-critic policies (``policy(params, obs,
  key)``, whether single- or multi-task) and noisy variants;
- ``evaluate_policy``: jitted, vmapped episodes of any of them on a task, on common random
  numbers (the same seed gives every policy the same initial positions and user movement).
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from decisions.core.agents import ppo
from decisions.core.agents.common import ProgressFn, TrainResult
from decisions.core.agents.onpolicy import ActorCriticPolicy
from decisions.core.checkpoint import load_metadata
from decisions.core.env import Info
from decisions.telecom.comp.budget import EXPERT_STEPS
from decisions.telecom.comp.env import CompEnv, CompState, hide_links
from decisions.telecom.comp.heuristics import random_set_size
from decisions.telecom.comp.network import MAX_CELLS, NetworkParams
from decisions.telecom.comp.qoe import rate_figures
from decisions.telecom.comp.tasks import FEATURE_DIM, Task, features_from_params

__all__ = [
    "ENV",
    "EXPERT_CONFIG",
    "EXPERT_ENV",
    "MULTITASK_ENV",
    "OBS_FEATURES",
    "MultiTaskCompEnv",
    "MultiTaskParams",
    "MultiTaskState",
    "TaskPolicy",
    "act",
    "baseline_reward",
    "canonical_action",
    "counterfactual_step",
    "epsilon_noisy",
    "evaluate_policy",
    "expert_config",
    "expert_policy",
    "load_expert",
    "mean_user_qoe",
    "policy_seed",
    "rollout",
    "save_expert",
    "task_policy",
    "train_expert",
    "train_multitask",
]

PyTree = Any

ENV = CompEnv(action_mode="serving_set")
"""The tasks' environment (serving-set actions: see ``env``) for rollouts, data and evaluation;
reused so that compiled loops are cached. Its observations hold the link flags; each policy
adapter hides them from a policy trained without them."""
EXPERT_ENV = CompEnv(action_mode="serving_set", observe_links=False)
"""The environment the per-task experts learn in: ``ENV`` with the link flags hidden.

With serving-set actions the flags are the expert's own previous action. An expert that reads
them makes decisions that a (Prompt-)DT, which must not read them (it would copy its last
action), cannot reproduce. Measured on the whole study (``examples/comp_evaluate.toml``, the
shipped study before and after the switch): the experts' mean training QoE stayed at 0.484
(0.483 before), and every DT model imitating them gained in normalised QoE (PromptDT large
0.641 -> 0.657, small 0.569 -> 0.584, DT 0.564 -> 0.583) with fewer training steps
(2,000 instead of 2,500)."""
OBS_FEATURES = 2 * MAX_CELLS + 1
"""Per-user observation width ``F`` (connection flags, normalised SNRs, utility)."""
EXPERT_FORMAT = "decisions.telecom.comp.expert/1"

EXPERT_CONFIG = ppo.PPOConfig(
    num_envs=32,
    rollout_steps=100,
    total_env_steps=EXPERT_STEPS,
    gamma=0.5,
    gae_lambda=0.9,
    learning_rate=1e-3,
    entropy_coef=0.001,
    hidden=(64, 64),
    epochs=4,
    minibatches=4,
    log_every=5,
    unit_width=OBS_FEATURES,
)
"""Default PPO for ``CompEnv`` (override with ``expert_config(**changes)``).

- ``unit_width=OBS_FEATURES``: set networks (the core's ``SetActorCritic``): every user's
  27-feature row (plus the task features of the multi-task baseline) is encoded by the same
  MLP, pooled into a context, and one shared head gives each user's 14 logits. Users are
  exchangeable, so one user's experience trains the decisions of all 30 slots; a flat MLP on
  the 810 inputs has to learn each slot apart. Measured on mobile-env's medium scenario
  (``c7-u15-resource_fair-me``, 32 evaluation episodes; max-SNR returns +5.8): flat (256, 256),
  gamma 0.95, 1M steps: +1.6 (94 s); set (128, 128), gamma 0.95, 1M steps: +3.9 (418 s); set
  (64, 64), gamma 0.5, lr 1e-3, 600k steps: +6.2 (118 s), this config;
- ``gamma=0.5``: with serving-set actions a step's connections are set by its action alone,
  so the reward of a step depends on that step's action (and on the positions); only the
  proportional-fair average rate carries over. A short horizon removes most of the return
  variance that a long one would add;
- ``rollout_steps=100``: one whole 100-step episode per environment per iteration;
  ``num_envs=32``: 3,200 transitions per iteration, 4 epochs x 4 minibatches of 800;
- ``entropy_coef=0.001``: the entropy is summed over 30 heads, so a small coefficient
  already keeps exploration; padded users' heads are no-ops either way;
- rewards and observations normalised (core defaults), Adam 1e-3 decaying linearly.
"""


def expert_config(**changes: Any) -> ppo.PPOConfig:
    """``EXPERT_CONFIG`` with ``changes`` (e.g. ``total_env_steps``), validated."""
    return replace(EXPERT_CONFIG, **changes)


def budget_config(total_env_steps: int | None, config: ppo.PPOConfig = EXPERT_CONFIG) -> ppo.PPOConfig:
    """The PPO configuration ``train_expert`` and ``train_multitask`` run with for a budget."""
    return _fit_budget(config, total_env_steps)


def _fit_budget(config: ppo.PPOConfig, total_env_steps: int | None) -> ppo.PPOConfig:
    """``config`` with ``total_env_steps`` (at least one iteration's worth)."""
    if total_env_steps is None:
        return config
    if int(total_env_steps) != total_env_steps or total_env_steps < 1:
        raise ValueError(f"total_env_steps: must be a positive integer, got {total_env_steps!r}")
    return replace(config, total_env_steps=max(int(total_env_steps), config.batch_size))


# ----------------------------------------------------------------------------- policies


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
    """``fn``'s action: ``fn(pparams, obs, key, net)``, with ``state`` appended for a function
    that reads the environment state (``reads_state``, e.g. ``planner.GreedyPlanner``).

    Raises:
        ValueError: ``fn`` reads the state and ``state`` is None.
    """
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
    """Convert a policy to a ``TaskPolicy``.

    Args:
        policy: a ``TaskPolicy``; a ``TrainResult`` of an actor-critic agent (single- or
            multi-task PPO); a ``(ActorCriticPolicy, params)`` pair (``load_expert``'s first
            two items); a function of the ``TaskPolicy`` convention that reads the state
            (``reads_state``, e.g. ``planner.GreedyPlanner()``); or a heuristic
            ``policy(obs, key, net_params)`` (``heuristics.POLICIES``).
        observe_links: for an actor-critic, whether it was trained seeing the link flags
            (``train_expert``'s experts were not: pass False, or use ``expert_policy`` on a file).

    Returns:
        The ``TaskPolicy``.
    """
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
    """``policy`` with each real user's action replaced by a uniform random one w.p. ``epsilon``.

    Raises:
        ValueError: ``epsilon`` outside ``[0, 1]``.
    """
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
    """Run one full episode per key of ``policy`` on ``task`` (jitted, vmapped over keys).

    Args:
        task: a ``Task`` (or its ``NetworkParams``).
        policy: anything ``task_policy`` accepts.
        keys: ``(episodes, ...)`` PRNG keys.
        record: also return the observations (``obs``, ``(episodes, T, obs_size)``, the one each
            action was chosen on) and the actions (``action``, ``(episodes, T, MAX_USERS)``).
        steps: episode length (default the network's ``episode_length``).
        user_rates: also return every user slot's rate (``user_rate``, ``(episodes, T, MAX_USERS)``,
            bit/s, 0 for padded users).
        baseline: optional weightless policy (a heuristic, the planner) whose reward in every visited
            state is also returned (``baseline_reward``, ``(episodes, T)``; ``baseline_reward``).

    Returns:
        numpy arrays ``(episodes, T)``: ``reward``, ``qoe`` (mean normalised QoE over real users),
        ``jain_qoe``, ``jain_rate``, ``rate`` (mean user rate, bit/s), plus ``obs``/``action`` and
        ``user_rate`` when asked.
    """
    net = task.params() if isinstance(task, Task) else task
    steps = int(net.episode_length) if steps is None else int(steps)
    tp = task_policy(policy)
    base = None if baseline is None else task_policy(baseline).fn
    out = _rollout_jit(keys, net, tp.params, fn=tp.fn, steps=steps, record=record, user_rates=user_rates, baseline=base)
    return {k: np.asarray(v) for k, v in out.items()}


def evaluate_policy(
    task: Task, policy_fn: Any, episodes: int = 64, seed: int = 0, *, rates: bool = False
) -> dict[str, float]:
    """Evaluate a policy on ``task`` over ``episodes`` episodes (common random numbers per seed).

    Args:
        task: the task.
        policy_fn: anything ``task_policy`` accepts (heuristic, ``TrainResult``, loaded expert).
        episodes: episodes, run in parallel.
        seed: the same seed gives every policy the same episodes (positions, movement).
        rates: also the operators' rate figures (``qoe.rate_figures``: ``mean_rate_mbps``,
            ``edge_rate_mbps``, ``below_floor``).

    Returns:
        ``return_mean`` / ``return_std`` / ``return_sem`` (undiscounted episode return),
        ``qoe`` (normalised QoE in [0, 1] averaged over real users and steps), ``jain_qoe`` and
        ``jain_rate`` (Jain's fairness index averaged over steps), ``rate_mbps`` (mean user
        rate) and ``episodes``, all over the episodes.
    """
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


def _seed_key(seed: int | Array) -> Array:
    return jax.random.PRNGKey(seed) if isinstance(seed, (int, np.integer)) else seed


def train_expert(
    task: Task,
    total_env_steps: int | None = None,
    seed: int = 0,
    progress: ProgressFn | None = None,
    *,
    config: ppo.PPOConfig = EXPERT_CONFIG,
    checkpoint: str | os.PathLike[str] | None = None,
    warm_start: str = "none",
) -> TrainResult:
    """Train a PPO expert on one task, in ``EXPERT_ENV`` (link flags hidden).

    Args:
        task: the task.
        total_env_steps: budget (default ``config.total_env_steps``; raised to one iteration).
        seed: run seed.
        progress: optional ``(task, done, total)`` callback.
        config: the PPO configuration (default ``EXPERT_CONFIG``).
        checkpoint: optional file to save PPO's state to after every chunk and resume from.
        warm_start: ``"none"``, or a demonstrator of ``warm_start.WARM_STARTS`` whose actions
            on ``warm_start.WARM_EPISODES`` episodes the policy clones before PPO fine-tunes it.

    Returns:
        The core ``TrainResult`` (deterministic policy); ``task_policy(result, observe_links=False)``
        runs it on ``ENV``'s observations.
    """
    config = _fit_budget(config, total_env_steps)
    initial = _warm_start([task], warm_start, EXPERT_ENV, config, seed, task_features=False)
    return ppo.train(
        EXPERT_ENV, config, key=_seed_key(seed), params=task.params(), progress=progress, checkpoint=checkpoint,
        initial=initial,
    )


def _warm_start(
    tasks: Sequence[Task], warm_start: str, env: Any, config: ppo.PPOConfig, seed: int, *, task_features: bool
) -> PyTree | None:
    """The cloned ``initial`` params of a warm start (None for ``"none"``)."""
    from decisions.telecom.comp import warm_start as warm

    if warm_start not in warm.WARM_STARTS:
        raise ValueError(f"warm_start: must be one of {', '.join(warm.WARM_STARTS)}, got {warm_start!r}")
    if warm_start == "none":
        return None
    obs, actions = warm.demonstrations(tasks, warm_start, warm.WARM_EPISODES, seed, task_features=task_features)
    return warm.cloned_params(env, config, obs, actions, seed=seed, steps=warm.CLONE_STEPS)


def save_expert(
    path: str | os.PathLike[str],
    result: TrainResult,
    task: Task | Sequence[Task],
    observe_links: bool | None = None,
) -> None:
    """Write a PPO expert (msgpack via ``ppo.save_policy``) with its task(s) in the metadata.

    Args:
        path: destination file.
        result: ``train_expert``'s or ``train_multitask``'s result.
        task: the task it was trained on, or the tasks of a multi-task policy.
        observe_links: whether the policy was trained seeing the link flags; by default as
            the trainers do it: not for a single-task expert (``EXPERT_ENV``), yes for multi-task PPO.
    """
    tasks = [task] if isinstance(task, Task) else list(task)
    if not tasks or not all(isinstance(t, Task) for t in tasks):
        raise ValueError("task: must be a Task or a non-empty sequence of Tasks")
    if observe_links is None:
        observe_links = not isinstance(task, Task)
    extra = {
        "comp_format": EXPERT_FORMAT,
        "observe_links": bool(observe_links),
        "multitask": not isinstance(task, Task),
        "tasks": [t.to_dict() for t in tasks],
        "env_steps": int(result.env_steps),
    }
    ppo.save_policy(path, result, extra=extra)


def load_expert(path: str | os.PathLike[str]) -> tuple[ActorCriticPolicy, PyTree, Task | tuple[Task, ...]]:
    """Read a file written by ``save_expert``.

    Returns:
        ``(policy, params, task)``: ``task`` is the ``Task`` of a single-task expert or the
        tuple of tasks of a multi-task one. ``task_policy((policy, params))`` gives a ``TaskPolicy``.

    Raises:
        ValueError: the file is not a saved CoMP expert.
    """
    meta = load_metadata(path)
    if meta.get("comp_format") != EXPERT_FORMAT:
        raise ValueError(f"{path}: not a saved CoMP expert")
    policy, params = ppo.load_policy(path)
    tasks = tuple(Task.from_dict(d) for d in meta["tasks"])
    return policy, params, (tasks if meta.get("multitask") else tasks[0])


def expert_policy(path: str | os.PathLike[str]) -> TaskPolicy:
    """The ``TaskPolicy`` of a file written by ``save_expert``, hiding the link flags when it was
    trained without them (files written before that choice was recorded saw them)."""
    policy, params, _ = load_expert(path)
    return task_policy((policy, params), observe_links=bool(load_metadata(path).get("observe_links", True)))


def policy_seed(name: str) -> int:
    """A stable 31-bit integer of a name (for per-policy key streams)."""
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


from decisions.telecom.comp.multitask import (  # noqa: E402  (its own module; the old imports keep working)
    MULTITASK_ENV,
    MultiTaskCompEnv,
    MultiTaskParams,
    MultiTaskState,
    train_multitask,
)
