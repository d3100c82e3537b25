"""Benchmark: our PPO and DQN against rejax's PPO and DQN on the same gymnax environments,
budget, seeds and shared hyperparameters, scored by one shared greedy evaluation (``evaluate_seeds``).

``run_bench`` returns flat figures: per environment ``<env>/{ours,rejax}_final_return[_std]``,
``_train_seconds`` (compile included), ``_run_seconds`` (compiled, best of interleaved calls),
``_compile_seconds``, the two time ratios, ``random_return`` and ``env_steps``, the same for
DQN with a ``dqn_`` infix (``<env>/dqn_ours_final_return``, ``<env>/dqn_env_steps``); once,
the settings (DQN's as ``dqn_<field>``), ``peer_available``, ``peer``, ``gymnax_version`` and
``note``. Without rejax the ``rejax_*`` and ratio keys are absent; without gymnax only the
settings are returned. What is equal between the agents and what is not: ``docs/notes/core.md``.
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
from decisions.core.agents.bench_dqn import (
    DQN_PREFIX,
    DQNHyperparameters,
    ours_dqn_trainer,
    rejax_dqn_trainer,
)
from decisions.core.agents.bench_ours import seeds_trainer, shared_settings
from decisions.core.agents.common import Policy, ProgressFn, TrainResult, config_dict, evaluate_episodes
from decisions.core.agents.gymnax_adapter import GymnaxEnv
from decisions.core.agents.rejax_peer import create_algo, seeds_train
from decisions.core.bench_row import Row, Target
from decisions.core.spaces import Discrete
from decisions.core.timing import interleaved

__all__ = [
    "DQNHyperparameters",
    "EVAL_KEY",
    "SMOKE_BUDGET",
    "PEER_INSTALL",
    "Hyperparameters",
    "evaluate_seeds",
    "ours_config",
    "ours_trainer",
    "peer_status",
    "rejax_trainer",
    "run_bench",
]

PyTree = Any

EVAL_KEY = 20_240_601  # seed of the evaluation episodes, shared by every policy
PEER_INSTALL = "pip install 'decisions[peers]'"  # installs rejax and gymnax


@dataclasses.dataclass(frozen=True)
class Hyperparameters:
    """The hyperparameters both PPOs are given, named as in ``PPOConfig`` (see ``rejax_trainer``)."""

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
    # PPO2's clipped value loss (``PPOConfig.clip_value_loss``); rejax 0.1.3 always clips it at
    # ``clip_eps``, so False leaves the two losses apart.
    clip_value_loss: bool = True

    @property
    def batch_size(self) -> int:
        """Environment steps per iteration, ``num_envs * rollout_steps``."""
        return self.num_envs * self.rollout_steps

    def env_steps(self, total_steps: int) -> int:
        """``total_steps`` rounded down to whole iterations.

        Raises:
            ValueError: ``total_steps`` is below one iteration.
        """
        if total_steps < self.batch_size:
            raise ValueError(f"total_steps: must be at least num_envs * rollout_steps = {self.batch_size}, got {total_steps}")
        return (total_steps // self.batch_size) * self.batch_size

    def figures(self) -> dict[str, Any]:
        """The hyperparameters as flat figures (``hidden`` as a list)."""
        return config_dict(self)


def peer_status() -> tuple[bool, str]:
    """Whether rejax's PPO can run here, and a sentence saying which rejax, or why not.

    rejax needs gymnax's five-value ``step`` (gymnax<1.0); a newer gymnax counts as absent.
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


def ours_config(hp: Hyperparameters, env_steps: int) -> ppo.PPOConfig:
    """Our ``PPOConfig`` for ``hp`` and ``env_steps`` steps per seed: the fields named alike as they
    are, ``normalize`` for observations and rewards both, a constant learning rate and Adam's
    epsilon as rejax's, the whole training in one jitted chunk as rejax's one program, and no
    per-update metrics, which rejax does not compute (and the bench does not read)."""
    return ppo.PPOConfig(
        **shared_settings(hp, ppo.PPOConfig),
        total_env_steps=env_steps,
        lr_schedule="constant",
        adam_eps=1e-8,
        normalize_obs=hp.normalize,
        normalize_rewards=hp.normalize,
        log_every=env_steps // hp.batch_size,
        update_metrics=False,
    )


def ours_trainer(env: GymnaxEnv, hp: Hyperparameters, env_steps: int) -> tuple[Callable[[Array], TrainResult], Policy]:
    """Our PPO with ``hp`` for ``env_steps`` steps per seed (``ours_config``):
    ``(train(keys) -> TrainResult, policy)``, every seed trained at once in one jitted chunk, as
    rejax does; ``policy`` is the greedy policy of one seed's params."""
    return seeds_trainer(env, ours_config(hp, env_steps), ppo.make_agent, ppo.train_seeds)


def rejax_trainer(env: GymnaxEnv, hp: Hyperparameters, env_steps: int) -> tuple[Callable[[Array], PyTree], Policy]:
    """rejax's PPO with ``hp`` for ``env_steps`` steps per seed: ``(train(keys) -> params, policy)``.

    ``train`` is ``jax.jit(jax.vmap(algo.train))`` without rejax's in-training evaluation and
    returns params with a seed axis; ``policy`` is the greedy policy (argmax of the logits).
    """
    from rejax import PPO

    algo = create_algo(
        PPO, env, env_steps,
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
    actor, normalize = algo.actor, hp.normalize
    train = seeds_train(algo, lambda ts: {"actor": ts.actor_ts.params, "obs_rms": ts.obs_rms_state})

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
    """``(seeds,)`` mean undiscounted returns of ``policy`` (params with a seed axis) over the
    same ``EVAL_KEY`` episodes for every seed and policy, each ending by ``max_steps_in_episode``."""
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
    clip_value_loss: bool = _DEFAULTS.clip_value_loss,
    dqn_total_steps: int = 100_000,
    dqn_hp: DQNHyperparameters | None = None,
) -> dict[str, Any]:
    """Train our PPO and DQN and rejax's on each gymnax environment of ``envs``; time and score them.

    Args:
        total_steps: environment steps per seed (rounded down to whole iterations).
        seeds: seeds trained at once by each agent, keys ``split(PRNGKey(seed), seeds)``.
        envs: gymnax environment names with ``Discrete`` actions (one name alone is allowed).
        timed_repeats: compiled training calls per agent after the first; the best is
            ``_run_seconds``.
        peer: run rejax too (when it can run here).
        num_envs ... clip_value_loss: the shared ``Hyperparameters``.
        dqn_total_steps, dqn_hp: the DQNs' steps per seed (rounded down to whole vector steps;
            0 leaves DQN out) and settings (default ``DQNHyperparameters()``).

    Returns:
        The flat dict of figures listed in ``docs/notes/core.md``.

    Raises:
        ValueError: a setting out of range, or an environment whose actions are not ``Discrete``.
    """
    report = progress or (lambda task, done, total: None)
    _check_counts(seeds=seeds, eval_episodes=eval_episodes, timed_repeats=timed_repeats)
    dqn_hp = DQNHyperparameters() if dqn_hp is None else dqn_hp
    dqn_steps = dqn_hp.env_steps(dqn_total_steps) if dqn_total_steps else 0
    hp = Hyperparameters(
        num_envs, rollout_steps, epochs, minibatches, learning_rate, gamma, gae_lambda, clip_eps,
        entropy_coef, value_coef, max_grad_norm, tuple(hidden), activation, normalize, clip_value_loss,
    )
    env_steps = hp.env_steps(total_steps)
    available, note = _peer_availability(peer)
    figures: dict[str, Any] = {
        **hp.figures(),
        "total_steps": total_steps, "seeds": seeds, "seed": seed,
        "eval_episodes": eval_episodes, "timed_repeats": timed_repeats,
        "peer_available": available,
        "peer": f"rejax {_version('rejax')}" if available else None,
        "gymnax_version": _version("gymnax"),
        "note": note,
        "dqn_total_steps": dqn_total_steps,
        **(dqn_hp.figures() if dqn_steps else {}),
    }
    if importlib.util.find_spec("gymnax") is None:
        return figures
    keys = jax.random.split(jax.random.PRNGKey(seed), seeds)
    for env_name in (envs,) if isinstance(envs, str) else envs:
        env = GymnaxEnv.make(env_name)
        action_space = env.action_space(env.default_params)
        if not isinstance(action_space, Discrete):
            raise ValueError(f"envs: {env_name} has {action_space}; the bench runs Discrete-action environments")
        figures.update(
            _bench_env(env, hp, env_steps, dqn_hp, dqn_steps, keys, available, eval_episodes, timed_repeats, report)
        )
    return figures


def _check_counts(**counts: Any) -> None:
    """Raise ``ValueError("name: ...")`` unless every count is a positive integer."""
    for name, value in counts.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}: must be a positive integer, got {value!r}")


def _peer_availability(peer: bool) -> tuple[bool, str]:
    """``peer_status()``, or not available when the peer is switched off (and gymnax is installed)."""
    if peer or importlib.util.find_spec("gymnax") is None:
        return peer_status()
    return False, "peer not run (peer=False)"


def _bench_env(
    env: GymnaxEnv,
    hp: Hyperparameters,
    env_steps: int,
    dqn_hp: DQNHyperparameters,
    dqn_steps: int,
    keys: Array,
    peer: bool,
    eval_episodes: int,
    timed_repeats: int,
    report: ProgressFn,
) -> dict[str, Any]:
    """The ``<env>/...`` figures of one environment: PPO's, DQN's (``dqn_steps`` > 0) and the random policy's."""
    runs = {"": (ours_trainer(env, hp, env_steps), env_steps)}
    if dqn_steps:
        runs[DQN_PREFIX] = (ours_dqn_trainer(env, dqn_hp, dqn_steps), dqn_steps)
    out: dict[str, Any] = {}
    for prefix, (ours, steps) in runs.items():
        sides = {"ours": ours}
        if peer:
            sides["rejax"] = rejax_dqn_trainer(env, dqn_hp, steps) if prefix else rejax_trainer(env, hp, steps)
        out.update(_bench_sides(env, prefix, sides, steps, keys, eval_episodes, timed_repeats, report))
    out[f"{env.name}/random_return"] = _random_return(env, eval_episodes)
    return out


def _bench_sides(
    env: GymnaxEnv,
    prefix: str,
    sides: dict[str, tuple[Callable[[Array], Any], Policy]],
    env_steps: int,
    keys: Array,
    eval_episodes: int,
    timed_repeats: int,
    report: ProgressFn,
) -> dict[str, Any]:
    """The ``<env>/<prefix>...`` figures of one agent's ``sides`` (``ours``, optionally ``rejax``)."""
    name, seeds = env.name, int(keys.shape[0])
    tag, total = f"{name}: {prefix.rstrip('_').upper()} " if prefix else f"{name}: ", 2 * len(sides)
    out: dict[str, Any] = {f"{name}/{prefix}env_steps": env_steps}
    params: dict[str, PyTree] = {}
    first: dict[str, float] = {}
    for done, (side, (train, _)) in enumerate(sides.items()):
        report(f"{tag}{side} (compile)", done, total)
        result, first[side] = _timed(lambda train=train: train(keys))
        params[side] = result.params if isinstance(result, TrainResult) else result
    report(f"{tag}timed runs", len(sides), total)
    best = interleaved({side: lambda train=train: train(keys) for side, (train, _) in sides.items()}, timed_repeats, warmup=0)
    for i, (side, (_, policy)) in enumerate(sides.items()):
        report(f"{tag}evaluate {side}", len(sides) + i, total)
        returns = evaluate_seeds(env, policy, params[side], seeds, eval_episodes)
        out[f"{name}/{prefix}{side}_final_return"] = float(returns.mean())
        out[f"{name}/{prefix}{side}_final_return_std"] = float(returns.std())
        out[f"{name}/{prefix}{side}_train_seconds"] = first[side]
        out[f"{name}/{prefix}{side}_run_seconds"] = best[side]
        out[f"{name}/{prefix}{side}_compile_seconds"] = max(first[side] - best[side], 0.0)
    if "rejax" in sides:
        out[f"{name}/{prefix}train_time_ratio_ours_over_rejax"] = first["ours"] / first["rejax"]
        out[f"{name}/{prefix}run_time_ratio_ours_over_rejax"] = best["ours"] / best["rejax"]
    report(f"{tag}done", total, total)
    return out


def _random_return(env: GymnaxEnv, eval_episodes: int) -> float:
    """Mean return of the uniformly random policy over the ``EVAL_KEY`` episodes."""
    n = int(env.action_space(env.default_params).n)
    return float(evaluate_seeds(env, _random_policy(n), jnp.zeros((1,)), 1, eval_episodes)[0])


# run_bench settings that run in seconds once compiled
SMOKE_BUDGET: dict[str, Any] = {
    "total_steps": 1024, "seeds": 1, "eval_episodes": 4, "rollout_steps": 32, "timed_repeats": 1, "dqn_total_steps": 1200,
}


TARGETS: tuple[Target, ...] = (
    Target("CartPole-v1/run_time_ratio_ours_over_rejax", "<=", 1.0,
           "PPO on CartPole, compiled run time, ours over rejax's (same configuration)"),
)
"""The bounds the stored bench is held to (the README's targets table)."""

# The README's agents table (``decisions bench report``); its rows need the ``peers`` extra.
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
    Row(
        "CartPole-v1 DQN: final greedy return, ours / rejax",
        "{CartPole-v1/dqn_ours_final_return:.1f} / {CartPole-v1/dqn_rejax_final_return:.1f} "
        "({seeds} seeds x {CartPole-v1/dqn_env_steps:,} steps)",
        optional=True,
    ),
    Row(
        "CartPole-v1 DQN: training time ours / rejax, compiled (compile included)",
        "{CartPole-v1/dqn_run_time_ratio_ours_over_rejax:.2f} ({CartPole-v1/dqn_train_time_ratio_ours_over_rejax:.2f}); "
        "{CartPole-v1/dqn_ours_run_seconds:.1f} s vs {CartPole-v1/dqn_rejax_run_seconds:.1f} s",
        optional=True,
    ),
    Row("peer", "{peer}", optional=True),
)
