"""Greedy decision-transformer inference for the CoMP study: the rolling context and rollouts.

``make_dt_policy`` turns trained (Prompt)DT weights into a jitted episode rollout with a
``K``-step rolling context; ``rollout_return`` scores it over episodes (re-exported by
``dt_train``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from decisions.telecom.comp.dt.promptdt import N_FEATURES, PromptDT, PromptDTConfig, Segment
from decisions.telecom.comp.policies.rollouts import ENV, baseline_reward, counterfactual_step, mean_user_qoe
from decisions.telecom.comp.sim.constants import MAX_USERS
from decisions.telecom.comp.sim.env import CompEnv
from decisions.telecom.comp.sim.network import NetworkParams
from decisions.telecom.comp.sim.settings import EPISODE_LENGTH


class DTContext(NamedTuple):
    """Rolling window of the last ``K`` steps (left-padded), the inference carry."""

    rtg: Array  # (K,) scaled
    obs: Array  # (K, U, F)
    actions: Array  # (K, U)
    timesteps: Array  # (K,)
    mask: Array  # (K,)


def _empty_context(k: int) -> DTContext:
    return DTContext(
        rtg=jnp.zeros((k,), jnp.float32),
        obs=jnp.zeros((k, MAX_USERS, N_FEATURES), jnp.float32),
        actions=jnp.zeros((k, MAX_USERS), jnp.int32),
        timesteps=jnp.zeros((k,), jnp.int32),
        mask=jnp.zeros((k,), bool),
    )


def _push(ctx: DTContext, rtg: Array, obs: Array, t: Array) -> DTContext:
    """Shift the window left by one and append a step (its action a placeholder 0)."""

    def roll(x: Array, new: Array) -> Array:
        return jnp.concatenate([x[1:], new[None].astype(x.dtype)], axis=0)

    return DTContext(
        rtg=roll(ctx.rtg, rtg),
        obs=roll(ctx.obs, obs),
        actions=roll(ctx.actions, jnp.zeros((MAX_USERS,), jnp.int32)),
        timesteps=roll(ctx.timesteps, t),
        mask=roll(ctx.mask, jnp.asarray(True)),
    )


class DTRollout(NamedTuple):
    """One episode: ``ret`` the return, ``rewards`` ``(T,)``, ``actions`` ``(T, U)``,
    ``jain_qoe`` ``(T,)`` (Jain's index of the users' QoE each step) and ``user_rate`` ``(T, U)``
    (every user slot's rate, bit/s, for ``qoe.rate_figures``).

    With a ``labeler`` (``make_dt_policy``), also what it would have done in each state the DT
    visited: ``obs`` ``(T, obs_size)`` (the observation the DT acted on), ``label_actions``
    ``(T, U)`` (canonical), ``label_rewards`` and ``label_qoe`` ``(T,)`` (the step's reward and
    mean QoE over real users had the labeler's action been taken, the same movement); else None.
    With a ``baseline``, ``baseline_rewards`` ``(T,)``: the baseline's reward in each visited state.
    """

    ret: Array
    rewards: Array
    actions: Array
    jain_qoe: Array
    user_rate: Array
    obs: Array | None = None
    label_actions: Array | None = None
    label_rewards: Array | None = None
    label_qoe: Array | None = None
    baseline_rewards: Array | None = None


def make_dt_policy(
    params: Any,
    config: PromptDTConfig,
    prompt: Segment | None,
    target_return: float,
    *,
    env: CompEnv | None = None,
    episode_length: int = EPISODE_LENGTH,
    labeler: Callable[..., Array] | None = None,
    baseline: Callable[..., Array] | None = None,
) -> Callable[[Array, NetworkParams], DTRollout]:
    """A jit-able, vmap-able ``rollout(key, net) -> DTRollout`` of one greedy episode of the (Prompt-)DT.

    ``prompt`` is a ``make_prompt`` segment of ``net``'s task (None: a plain DT); ``target_return`` is the
    return (reward units) to condition on; ``env`` defaults to ``rollouts.ENV``. ``labeler`` (a
    ``TaskPolicy`` function) has its action and reward in every visited state recorded (DAgger's labels).
    With ``baseline`` (a weightless ``TaskPolicy`` function) the return-to-go falls by each reward minus
    the baseline's in the same state, and ``target_return`` is an advantage.
    """
    env = ENV if env is None else env
    model = PromptDT(config)
    k_len = config.context_len
    prompt_b = None if prompt is None else jax.tree_util.tree_map(lambda x: x[None], prompt)

    def act(ctx: DTContext, net: NetworkParams) -> Array:
        hist = Segment(*(x[None] for x in ctx))
        logits = model.apply(params, hist, net.user_mask[None], net.cell_mask[None], prompt_b)
        return jnp.argmax(logits[0, -1], axis=-1).astype(jnp.int32)

    def rollout(key: Array, net: NetworkParams) -> DTRollout:
        # the key streams of ``rollouts.rollout``: the same key gives the same initial positions
        # and user movement as any other policy's episode (common random numbers)
        k_reset, k_run, _ = jax.random.split(key, 3)
        obs, state = env.reset(k_reset, net)

        def body(carry: Any, k: Array) -> tuple[Any, dict[str, Array]]:
            state, obs, ctx, rtg, done = carry
            t = jnp.minimum(state.time, config.max_ep_len - 1)
            ctx = _push(ctx, rtg / config.rtg_scale, obs.reshape(MAX_USERS, N_FEATURES), t)
            action = env.canonical_action(state, act(ctx, net), net)
            ctx = ctx._replace(actions=ctx.actions.at[-1].set(action))
            obs2, state2, reward, term, trunc, info = env.step(k, state, action, net)
            out = {"rewards": jnp.where(done, 0.0, reward), "actions": action, "jain_qoe": info["jain_qoe"],
                   "user_rate": info["rate"]}
            spent = out["rewards"]
            if baseline is not None:
                base = baseline_reward(baseline, obs, jax.random.fold_in(k, 2), k, state, net)
                out["baseline_rewards"] = jnp.where(done, 0.0, base)
                spent = spent - out["baseline_rewards"]
            if labeler is not None:
                label, label_reward, label_info = counterfactual_step(labeler, obs, jax.random.fold_in(k, 1), k, state, net)
                out.update(obs=obs, label_actions=label, label_rewards=jnp.where(done, 0.0, label_reward),
                           label_qoe=mean_user_qoe(label_info, net))
            carry = (state2, obs2, ctx, rtg - spent, done | term | trunc)
            return carry, out

        init = (state, obs, _empty_context(k_len), jnp.asarray(target_return, jnp.float32), jnp.asarray(False))
        _, out = jax.lax.scan(body, init, jax.random.split(k_run, episode_length))
        return DTRollout(ret=jnp.sum(out["rewards"]), **out)

    return rollout


def rollout_return(
    params: Any,
    config: PromptDTConfig,
    net: NetworkParams,
    prompt: Segment | None,
    target_return: float,
    key: Array,
    num_episodes: int = 8,
    *,
    env: CompEnv | None = None,
    episode_length: int = EPISODE_LENGTH,
) -> Array:
    """Returns ``(num_episodes,)`` of greedy DT episodes on ``net`` (one jit, vmapped)."""
    rollout = make_dt_policy(params, config, prompt, target_return, env=env, episode_length=episode_length)
    keys = jax.random.split(key, num_episodes)
    return jax.jit(jax.vmap(rollout, in_axes=(0, None)))(keys, net).ret
