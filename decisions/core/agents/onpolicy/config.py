"""The configuration every on-policy actor-critic agent (PPO, A2C) shares."""

from __future__ import annotations

import math
from dataclasses import dataclass

import flax.linen as nn

from decisions.core.agents.common import (
    GRAD_CLIPS,
    check_bool,
    check_choice,
    check_int,
    check_number,
    check_widths,
)

__all__ = ["ACTIVATIONS", "LR_SCHEDULES", "OnPolicyConfig"]

# Hidden-layer activations a config may name.
ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu}
# Learning-rate schedules a config may name (decay to ``final_lr_fraction`` of the peak).
LR_SCHEDULES = ("constant", "linear", "cosine")


@dataclass(frozen=True)
class OnPolicyConfig:
    """Configuration shared by the on-policy agents (frozen and hashable: a jit static argument).

    An agent's config subclasses it to add its own fields (data only: the agent's behaviour is
    its ``OnPolicyAgent``). Every field is checked in ``__post_init__``; a bad value raises
    ``ValueError("field: problem")``.
    """

    # Environments stepped in parallel.
    num_envs: int = 32
    # Steps collected from each environment per iteration.
    rollout_steps: int = 128
    # Training budget; ``iterations = total_env_steps // (num_envs * rollout_steps)``.
    total_env_steps: int = 1_000_000
    # Discount factor.
    gamma: float = 0.99
    # GAE bias/variance trade-off (1: Monte Carlo returns, 0: one-step TD).
    gae_lambda: float = 0.95
    # Peak learning rate.
    learning_rate: float = 3e-4
    # ``"constant"``, ``"linear"`` or ``"cosine"`` decay over all updates.
    lr_schedule: str = "linear"
    # Learning rate at the end of the schedule, as a fraction of the peak.
    final_lr_fraction: float = 0.0
    # Weight of the entropy bonus.
    entropy_coef: float = 0.0
    # Weight of the value loss.
    value_coef: float = 0.5
    # Gradient clip applied before the optimiser: the global norm, or each element with ``grad_clip="value"``.
    max_grad_norm: float = 0.5
    # How ``max_grad_norm`` clips: "global_norm" (rescale the whole gradient) or "value" (each element).
    grad_clip: str = "global_norm"
    # Hidden widths of the actor and of the critic (separate networks).
    hidden: tuple[int, ...] = (64, 64)
    # Hidden activation, ``"tanh"`` or ``"relu"``.
    activation: str = "tanh"
    # Initial log standard deviation of the Gaussian policy (normalised action units).
    log_std_init: float = 0.0
    # Scale observations by running mean and variance (stored in the policy params).
    normalize_obs: bool = True
    # Standardise advantages within each (mini)batch.
    normalize_advantages: bool = True
    # Constant factor on rewards before learning (metrics report unscaled returns).
    reward_scale: float = 1.0
    normalize_rewards: bool = True
    """Also divide rewards by a running std of the discounted return (gymnasium's
    ``NormalizeReward``, clipped to +-10): rewards of any scale (euros per day of a gas
    storage, dollars per hour of a battery) reach the networks at a similar scale."""
    # Iterations per jitted chunk (progress and checkpoint cadence).
    log_every: int = 10
    unit_width: int = 0
    """0: MLP actor and critic on the flat observation. ``w > 0``: *set* networks
    (``SetActorCritic``) for a ``MultiDiscrete`` action with one component per exchangeable
    unit (a user, a cell): the observation's first ``units * w`` features are the units' rows
    (``units`` = the number of action components), the rest global features. Every unit is
    encoded and decided by the same weights, so what the policy learns from one unit serves
    all, and the policy applies whatever the order of the units."""

    def __post_init__(self) -> None:
        """Check every field; raise ``ValueError("field: problem")`` on the first bad one."""
        for name in ("num_envs", "rollout_steps", "total_env_steps", "log_every"):
            check_int(name, getattr(self, name), 1)
        check_int("unit_width", self.unit_width, 0)
        for name in ("gamma", "gae_lambda", "final_lr_fraction"):
            check_number(name, getattr(self, name), 0.0, 1.0)
        for name in ("learning_rate", "max_grad_norm", "reward_scale"):
            check_number(name, getattr(self, name), 0.0, math.inf, open_low=True)
        for name in ("entropy_coef", "value_coef"):
            check_number(name, getattr(self, name), 0.0, math.inf)
        check_number("log_std_init", self.log_std_init, -5.0, 2.0)
        for name in ("normalize_obs", "normalize_advantages", "normalize_rewards"):
            check_bool(name, getattr(self, name))
        check_choice("lr_schedule", self.lr_schedule, LR_SCHEDULES)
        check_choice("grad_clip", self.grad_clip, GRAD_CLIPS)
        check_choice("activation", self.activation, tuple(ACTIVATIONS))
        check_widths("hidden", self.hidden)
        if self.total_env_steps < self.batch_size:
            raise ValueError(
                f"total_env_steps: must be at least num_envs * rollout_steps = {self.batch_size}, "
                f"got {self.total_env_steps}"
            )

    @property
    def batch_size(self) -> int:
        """Transitions per iteration, ``num_envs * rollout_steps``."""
        return self.num_envs * self.rollout_steps

    @property
    def iterations(self) -> int:
        """Training iterations (rollout + update), ``total_env_steps // batch_size``."""
        return self.total_env_steps // self.batch_size
