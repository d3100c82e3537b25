"""Benchmark: our PPO against a pure-JAX peer, ``rejax``'s PPO, on the same gymnax environment.

Both agents train on the same gymnax environment (ours through ``gymnax_adapter.GymnaxEnv``,
rejax on the gymnax object itself), with the same environment-step budget, the same
hyperparameters where both expose them, the same seeds (one ``jax.random.split`` of ``seed``,
every seed trained at once: our ``ppo.train_seeds``, rejax's ``jax.jit(jax.vmap(algo.train))``
as its README does), and are scored by one shared evaluation (``common.evaluate_episodes``:
the same episodes, common random numbers, greedy actions: argmax of each actor's logits).

``run_bench`` returns a flat dict; for each environment ``<env>`` of ``envs``:

- ``<env>/ours_final_return``: mean over seeds of the mean undiscounted return of
  ``eval_episodes`` greedy episodes of our trained policy; ``<env>/ours_final_return_std``:
  its standard deviation over seeds;
- ``<env>/ours_train_seconds``: wall time of the first training call (all seeds), compile
  included; ``<env>/ours_run_seconds``: the best of ``timed_repeats`` further calls, compiled
  (timed interleaved with rejax's, ``timing.interleaved``); ``<env>/ours_compile_seconds``:
  their difference (compile and first-call overhead);
- ``<env>/rejax_final_return``, ``_final_return_std``, ``_train_seconds``, ``_run_seconds``,
  ``_compile_seconds``: the same for rejax's PPO;
- ``<env>/train_time_ratio_ours_over_rejax``: ``ours_train_seconds / rejax_train_seconds``
  (compile included); ``<env>/run_time_ratio_ours_over_rejax``: the same compile excluded;
- ``<env>/random_return``: the same evaluation of a uniformly random policy (the floor);
- ``<env>/env_steps``: environment steps per seed each agent took (``total_steps`` rounded
  down to whole iterations of ``num_envs * rollout_steps``).

And once: the shared hyperparameters (``num_envs``, ``rollout_steps``, ``epochs``,
``minibatches``, ``learning_rate``, ``gamma``, ``gae_lambda``, ``clip_eps``, ``entropy_coef``,
``value_coef``, ``max_grad_norm``, ``hidden`` (widths, both actor and critic), ``activation``,
``normalize``), ``total_steps``, ``seeds``, ``seed``, ``eval_episodes``, ``timed_repeats``,
``peer_available``, ``peer`` (the peer and its version), ``gymnax_version`` and ``note``.

Without rejax (or with a gymnax it cannot run on, or with ``peer=False``), every ``rejax_*``
and ratio key is absent, ``peer_available`` is False, ``note`` says why, and our figures are
still reported. gymnax itself is needed for any ``<env>/`` figure (``pip install
'decisions[peers]'``); without it ``run_bench`` returns the settings, ``peer_available``
False, ``gymnax_version`` None and the ``note`` saying so.

What is equal and what is not. Equal: environment and its params, budget, seeds, rollout shape
(``num_envs`` x ``rollout_steps``), ``epochs`` passes of ``minibatches`` shuffled minibatches,
Adam at a constant learning rate (rejax has no schedule; Adam's epsilon is rejax's fixed
1e-8), ``gamma``, ``gae_lambda``, ``clip_eps``, ``entropy_coef``, ``value_coef``, per-minibatch
advantage standardisation, separate actor and critic MLPs of the same widths and activation,
observation and reward normalisation both on or both off (``normalize``). Each agent's own
design, left as it is: rejax clips gradients element-wise at ``max_grad_norm``
(``optax.clip``) where ours clips their global norm; rejax clips the value loss at
``clip_eps`` and steps actor and critic with two optimisers, ours one loss and one optimiser;
rejax treats a time-limit truncation as a termination where ours bootstraps from the final
observation; weight initialisation (orthogonal for ours, flax's default for rejax).

The defaults follow PureJaxRL's CartPole configuration (4 x 128 steps, 4 epochs of 4
minibatches, learning rate 2.5e-4, entropy 0.01, tanh 64 x 64, 500k steps) at 3 seeds.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import importlib.util
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from decisions.core.agents import ppo
from decisions.core.agents.common import ProgressFn, TrainResult, evaluate_episodes
from decisions.core.agents.gymnax_adapter import GymnaxEnv
from decisions.core.bench_row import Row
from decisions.core.spaces import Discrete
from decisions.core.timing import interleaved

__all__ = [
    "EVAL_KEY",
    "SMOKE_BUDGET",
    "PEER_INSTALL",
    "Hyperparameters",
    "evaluate_seeds",
    "ours_trainer",
    "peer_status",
    "rejax_trainer",
    "run_bench",
]

PyTree = Any
Policy = Callable[[PyTree, Array, Array], Array]

EVAL_KEY = 20_240_601
"""Seed of the evaluation episodes, shared by every policy (common random numbers)."""

PEER_INSTALL = "pip install 'decisions[peers]'"
"""How to install the peer (rejax) and gymnax: the ``peers`` extra."""


@dataclasses.dataclass(frozen=True)
class Hyperparameters:
    """The hyperparameters both PPOs are given (named as in ``PPOConfig``).

    Attributes:
        num_envs: environments stepped in parallel.
        rollout_steps: steps per environment per iteration (rejax ``num_steps``).
        epochs: passes over each rollout (rejax ``num_epochs``).
        minibatches: minibatches per pass (rejax ``num_minibatches``).
        learning_rate: Adam's (constant) learning rate.
        gamma: discount factor.
        gae_lambda: GAE lambda.
        clip_eps: PPO clip range (rejax also clips the value loss with it).
        entropy_coef: entropy bonus (rejax ``ent_coef``).
        value_coef: value-loss weight (rejax ``vf_coef``).
        max_grad_norm: gradient clip (ours: global norm; rejax: element-wise).
        hidden: hidden widths of the actor and of the critic.
        activation: ``"tanh"`` or ``"relu"``.
        normalize: running observation and reward normalisation on both sides.
    """

    num_envs: int = 4
    rollout_steps: int = 128
    epochs: int = 4
    minibatches: int = 4
    learning_rate: float = 2.5e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_eps: float = 0.2
    entropy_coef: float = 0.01
    value_coef: float = 0.5
    max_grad_norm: float = 0.5
    hidden: tuple[int, ...] = (64, 64)
    activation: str = "tanh"
    normalize: bool = False

    @property
    def batch_size(self) -> int:
        """Environment steps per iteration, ``num_envs * rollout_steps``."""
        return self.num_envs * self.rollout_steps

    def env_steps(self, total_steps: int) -> int:
        """``total_steps`` rounded down to whole iterations (at least one).

        Raises:
            ValueError: ``total_steps`` is below one iteration.
        """
        if total_steps < self.batch_size:
            raise ValueError(f"total_steps: must be at least num_envs * rollout_steps = {self.batch_size}, got {total_steps}")
        return (total_steps // self.batch_size) * self.batch_size

    def figures(self) -> dict[str, Any]:
        """The hyperparameters as flat figures (``hidden`` as a list)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}


def peer_status() -> tuple[bool, str]:
    """Whether rejax's PPO can run here, and a sentence saying which rejax, or why not.

    rejax 0.1.x unpacks gymnax 0.0.x's five-value ``step``; gymnax 1.x returns six values
    (terminated and truncated apart), on which rejax fails, so that pairing counts as absent.
    """
    if importlib.util.find_spec("gymnax") is None:
        return False, f"gymnax is not installed ({PEER_INSTALL})"
    if importlib.util.find_spec("rejax") is None:
        return False, f"rejax is not installed ({PEER_INSTALL})"
    try:
        import gymnax.environments.environment as gymnax_env
        import rejax  # noqa: F401
    except Exception as error:  # a broken install: say so rather than fail the whole bench
        return False, f"rejax does not import: {type(error).__name__}: {error}"
    if hasattr(gymnax_env.Environment, "is_truncated"):
        return False, (
            f"rejax {_version('rejax')} needs gymnax<1.0 (five-value step); gymnax {_version('gymnax')} "
            "is installed"
        )
    return True, f"rejax {_version('rejax')} on gymnax {_version('gymnax')}"


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def ours_trainer(env: GymnaxEnv, hp: Hyperparameters, env_steps: int) -> tuple[Callable[[Array], TrainResult], Policy]:
    """Our PPO with ``hp`` for ``env_steps`` steps per seed: ``(train(keys) -> TrainResult, policy)``.

    ``train`` trains one seed per key at once (``ppo.train_seeds``) in one jitted chunk
    (``log_every`` = all iterations: one compiled call, as rejax's; the default chunks of 10
    iterations add a host round trip each, about 1 % here); ``policy`` is the greedy policy
    (``policy(params, obs, key)``) of the result's params, one seed sliced.
    """
    config = ppo.PPOConfig(
        num_envs=hp.num_envs,
        rollout_steps=hp.rollout_steps,
        total_env_steps=env_steps,
        epochs=hp.epochs,
        minibatches=hp.minibatches,
        learning_rate=hp.learning_rate,
        lr_schedule="constant",
        adam_eps=1e-8,
        gamma=hp.gamma,
        gae_lambda=hp.gae_lambda,
        clip_eps=hp.clip_eps,
        entropy_coef=hp.entropy_coef,
        value_coef=hp.value_coef,
        max_grad_norm=hp.max_grad_norm,
        hidden=tuple(hp.hidden),
        activation=hp.activation,
        normalize_obs=hp.normalize,
        normalize_rewards=hp.normalize,
        log_every=env_steps // hp.batch_size,
    )
    policy = ppo.make_agent(env, config).policy

    def train(keys: Array) -> TrainResult:
        return ppo.train_seeds(env, config, keys=keys)

    return train, policy


def rejax_trainer(env: GymnaxEnv, hp: Hyperparameters, env_steps: int) -> tuple[Callable[[Array], PyTree], Policy]:
    """rejax's PPO with ``hp`` for ``env_steps`` steps per seed: ``(train(keys) -> params, policy)``.

    ``train`` is ``jax.jit(jax.vmap(algo.train))`` (one seed per key) with rejax's in-training
    evaluation replaced by nothing, so only training is timed; it returns the greedy
    policy's params with a leading seed axis. ``policy`` is that greedy policy (argmax of the
    actor's logits on the observation normalised as rejax's own ``act`` does).
    """
    from rejax import PPO

    algo = PPO.create(
        env=env.gymnax_env,
        env_params=env.default_params,
        total_timesteps=env_steps,
        eval_freq=env_steps,
        skip_initial_evaluation=True,
        num_envs=hp.num_envs,
        num_steps=hp.rollout_steps,
        num_epochs=hp.epochs,
        num_minibatches=hp.minibatches,
        learning_rate=hp.learning_rate,
        gamma=hp.gamma,
        gae_lambda=hp.gae_lambda,
        clip_eps=hp.clip_eps,
        ent_coef=hp.entropy_coef,
        vf_coef=hp.value_coef,
        max_grad_norm=hp.max_grad_norm,
        normalize_observations=hp.normalize,
        normalize_rewards=hp.normalize,
        agent_kwargs={"activation": hp.activation, "hidden_layer_sizes": tuple(hp.hidden)},
    )
    algo = algo.replace(eval_callback=lambda algo, ts, rng: jnp.zeros(()))
    actor, normalize = algo.actor, hp.normalize
    vmapped = jax.jit(jax.vmap(algo.train))

    def train(keys: Array) -> PyTree:
        ts, _ = vmapped(keys)
        return {"actor": ts.actor_ts.params, "obs_rms": ts.obs_rms_state}

    def policy(params: PyTree, obs: Array, key: Array) -> Array:
        del key
        if normalize:
            obs = algo.normalize_obs(params["obs_rms"], obs.astype(jnp.float32))
        dist = actor.apply(params["actor"], obs[None], method=type(actor)._action_dist)
        return jnp.argmax(dist.logits[0], axis=-1).astype(jnp.int32)

    return train, policy


def _random_policy(n: int) -> Policy:
    def policy(params: PyTree, obs: Array, key: Array) -> Array:
        del params, obs
        return jax.random.randint(key, (), 0, n, dtype=jnp.int32)

    return policy


def evaluate_seeds(env: GymnaxEnv, policy: Policy, params: PyTree, seeds: int, episodes: int) -> np.ndarray:
    """Mean return per seed of ``policy`` over the shared evaluation episodes.

    Args:
        env: the environment (``GymnaxEnv``); episodes end at termination, truncation or its
            ``max_steps_in_episode``.
        policy: ``policy(params, obs, key) -> action``.
        params: the policy's params with a leading seed axis of length ``seeds``.
        seeds: number of seeds.
        episodes: episodes per seed (the same ``EVAL_KEY`` episodes for every seed and policy).

    Returns:
        ``(seeds,)`` mean undiscounted returns.
    """
    env_params = env.default_params
    max_steps = int(env_params.max_steps_in_episode)
    key = jax.random.PRNGKey(EVAL_KEY)
    return np.array(
        [
            evaluate_episodes(
                env,
                env_params,
                policy,
                jax.tree_util.tree_map(lambda x, i=i: x[i], params),
                key=key,
                num_episodes=episodes,
                max_steps=max_steps,
            ).mean()
            for i in range(seeds)
        ]
    )


_DEFAULTS = Hyperparameters()


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    out = jax.block_until_ready(fn())
    return out, time.perf_counter() - start


def run_bench(
    progress: ProgressFn | None = None,
    *,
    total_steps: int = 500_000,
    seeds: int = 3,
    envs: tuple[str, ...] = ("CartPole-v1",),
    seed: int = 0,
    eval_episodes: int = 128,
    timed_repeats: int = 3,
    peer: bool = True,
    num_envs: int = _DEFAULTS.num_envs,
    rollout_steps: int = _DEFAULTS.rollout_steps,
    epochs: int = _DEFAULTS.epochs,
    minibatches: int = _DEFAULTS.minibatches,
    learning_rate: float = _DEFAULTS.learning_rate,
    gamma: float = _DEFAULTS.gamma,
    gae_lambda: float = _DEFAULTS.gae_lambda,
    clip_eps: float = _DEFAULTS.clip_eps,
    entropy_coef: float = _DEFAULTS.entropy_coef,
    value_coef: float = _DEFAULTS.value_coef,
    max_grad_norm: float = _DEFAULTS.max_grad_norm,
    hidden: tuple[int, ...] = _DEFAULTS.hidden,
    activation: str = _DEFAULTS.activation,
    normalize: bool = _DEFAULTS.normalize,
) -> dict[str, Any]:
    """Train our PPO and rejax's on each gymnax environment of ``envs``; time and score both.

    Args:
        progress: optional ``(task, done, total)`` callback.
        total_steps: environment steps per seed (rounded down to whole iterations).
        seeds: seeds trained at once (vmapped) by each agent.
        envs: gymnax environment names with a ``Discrete`` action space (``CartPole-v1``,
            ``Acrobot-v1``, ...); one name alone is taken as a one-name tuple.
        seed: base seed; the seeds' keys are ``jax.random.split(PRNGKey(seed), seeds)``.
        eval_episodes: evaluation episodes per seed and policy.
        timed_repeats: compiled training calls per agent after the first; the best is
            ``_run_seconds``.
        peer: run rejax too (when it can run here); ``False`` reports our figures only.
        num_envs, rollout_steps, epochs, minibatches, learning_rate, gamma, gae_lambda,
            clip_eps, entropy_coef, value_coef, max_grad_norm, hidden, activation, normalize:
            the shared hyperparameters (``Hyperparameters``).

    Returns:
        The flat dict of figures of the module docstring.

    Raises:
        ValueError: a setting out of range, or an environment whose actions are not ``Discrete``.
    """
    report = progress or (lambda task, done, total: None)
    for name, value in (("seeds", seeds), ("eval_episodes", eval_episodes), ("timed_repeats", timed_repeats)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}: must be a positive integer, got {value!r}")
    hp = Hyperparameters(
        num_envs, rollout_steps, epochs, minibatches, learning_rate, gamma, gae_lambda, clip_eps,
        entropy_coef, value_coef, max_grad_norm, tuple(hidden), activation, normalize,
    )
    env_steps = hp.env_steps(total_steps)
    if peer or importlib.util.find_spec("gymnax") is None:
        available, note = peer_status()
    else:
        available, note = False, "peer not run (peer=False)"
    figures: dict[str, Any] = {
        **hp.figures(),
        "total_steps": total_steps,
        "seeds": seeds,
        "seed": seed,
        "eval_episodes": eval_episodes,
        "timed_repeats": timed_repeats,
        "peer_available": available,
        "peer": f"rejax {_version('rejax')}" if available else None,
        "gymnax_version": _version("gymnax"),
        "note": note,
    }
    if importlib.util.find_spec("gymnax") is None:
        return figures
    keys = jax.random.split(jax.random.PRNGKey(seed), seeds)
    for env_name in (envs,) if isinstance(envs, str) else envs:
        env = GymnaxEnv.make(env_name)
        action_space = env.action_space(env.default_params)
        if not isinstance(action_space, Discrete):
            raise ValueError(f"envs: {env_name} has {action_space}; the bench runs Discrete-action environments")
        figures.update(_bench_env(env, hp, env_steps, keys, available, eval_episodes, timed_repeats, report))
    return figures


def _bench_env(
    env: GymnaxEnv,
    hp: Hyperparameters,
    env_steps: int,
    keys: Array,
    peer: bool,
    eval_episodes: int,
    timed_repeats: int,
    report: ProgressFn,
) -> dict[str, Any]:
    """The ``<env>/...`` figures of one environment (see the module docstring)."""
    name, seeds = env.name, int(keys.shape[0])
    sides: dict[str, tuple[Callable[[Array], Any], Policy]] = {"ours": ours_trainer(env, hp, env_steps)}
    if peer:
        sides["rejax"] = rejax_trainer(env, hp, env_steps)
    total = 2 * len(sides) + 1
    out: dict[str, Any] = {f"{name}/env_steps": env_steps}
    params: dict[str, PyTree] = {}
    first: dict[str, float] = {}
    for done, (side, (train, _)) in enumerate(sides.items()):
        report(f"{name}: {side} (compile)", done, total)
        result, first[side] = _timed(lambda train=train: train(keys))
        params[side] = result.params if isinstance(result, TrainResult) else result
    report(f"{name}: timed runs", len(sides), total)
    best = interleaved({side: lambda train=train: train(keys) for side, (train, _) in sides.items()}, timed_repeats, warmup=0)
    for i, (side, (_, policy)) in enumerate(sides.items()):
        report(f"{name}: evaluate {side}", len(sides) + 1 + i, total)
        returns = evaluate_seeds(env, policy, params[side], seeds, eval_episodes)
        out[f"{name}/{side}_final_return"] = float(returns.mean())
        out[f"{name}/{side}_final_return_std"] = float(returns.std())
        out[f"{name}/{side}_train_seconds"] = first[side]
        out[f"{name}/{side}_run_seconds"] = best[side]
        out[f"{name}/{side}_compile_seconds"] = max(first[side] - best[side], 0.0)
    n = int(env.action_space(env.default_params).n)
    no_params = jnp.zeros((1,))
    out[f"{name}/random_return"] = float(evaluate_seeds(env, _random_policy(n), no_params, 1, eval_episodes)[0])
    if peer:
        out[f"{name}/train_time_ratio_ours_over_rejax"] = first["ours"] / first["rejax"]
        out[f"{name}/run_time_ratio_ours_over_rejax"] = best["ours"] / best["rejax"]
    report(f"{name}: done", total, total)
    return out


SMOKE_BUDGET: dict[str, Any] = {"total_steps": 1024, "seeds": 1, "eval_episodes": 4, "rollout_steps": 32, "timed_repeats": 1}
"""``run_bench`` settings that run in seconds once compiled (8 iterations of 4 x 32 steps, one seed)."""


README_ROWS: tuple[Row, ...] = (
    Row(
        "CartPole-v1: final greedy return, ours / rejax (random policy)",
        "{CartPole-v1/ours_final_return:.1f} / {CartPole-v1/rejax_final_return:.1f} ({CartPole-v1/random_return:.1f}; "
        "{seeds} seeds x {CartPole-v1/env_steps:,} steps, {eval_episodes} episodes each)",
        optional=True,
    ),
    Row(
        "CartPole-v1: training time ours / rejax, compiled (compile included)",
        "{CartPole-v1/run_time_ratio_ours_over_rejax:.2f} ({CartPole-v1/train_time_ratio_ours_over_rejax:.2f}); "
        "{CartPole-v1/ours_run_seconds:.1f} s vs {CartPole-v1/rejax_run_seconds:.1f} s",
        optional=True,
    ),
    Row("peer", "{peer}", optional=True),
)
"""The README's agents table (``decisions bench report``): rows need gymnax and rejax (``peers``)."""
