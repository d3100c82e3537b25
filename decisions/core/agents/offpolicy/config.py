"""The configuration every off-policy agent (DQN, SAC) shares."""

from __future__ import annotations

import math
from dataclasses import dataclass

import optax

from decisions.core.agents.common import (
    GRAD_CLIPS,
    check_choice,
    check_int,
    check_number,
    check_widths,
    gradient_clip,
)

__all__ = ["GRAD_CLIPS", "OffPolicyConfig"]


@dataclass(frozen=True)
class OffPolicyConfig:
    """Settings shared by the off-policy agents (frozen and hashable: a jit static argument).

    An agent's config subclasses it to add its own fields (data only: the agent's behaviour is
    its ``OffPolicyAgent``).

    Step counts are environment transitions summed over the ``num_envs`` copies, per seed.
    """

    # Environment transitions to collect in all (prefill included).
    total_env_steps: int = 100_000
    # Environment copies stepped in lockstep.
    num_envs: int = 8
    # Transitions collected with uniformly random actions before learning (rounded up to ``num_envs``).
    learning_starts: int = 2_000
    # Replay capacity in transitions (the oldest are overwritten).
    buffer_size: int = 100_000
    # Transitions per gradient update.
    batch_size: int = 128
    # Discount factor.
    gamma: float = 0.99
    # Steps summed into each stored transition (n-step returns; 1 is plain TD).
    n_step: int = 1
    # Vector environment steps per iteration (``train_freq * num_envs`` transitions).
    train_freq: int = 1
    # Gradient updates per iteration.
    gradient_steps: int = 1
    # Adam learning rate (every network, and the SAC temperature).
    learning_rate: float = 3e-4
    # Gradient clip applied before Adam: the global norm, or each element with ``grad_clip="value"``.
    max_grad_norm: float = 10.0
    # How ``max_grad_norm`` clips: "global_norm" (rescale the whole gradient) or "value" (each element).
    grad_clip: str = "global_norm"
    # Target network update ``target += tau * (online - target)``; 1.0 is a hard copy.
    tau: float = 0.005
    # Gradient updates between target updates (1 with a small ``tau``: Polyak averaging).
    target_update_interval: int = 1
    # Hidden layer widths of every network (ReLU).
    hidden: tuple[int, ...] = (128, 128)
    # Normalise observations with running statistics (saved with the policy).
    normalize_obs: bool = True
    # Factor applied to rewards before learning (not to the reported returns).
    reward_scale: float = 1.0
    bootstrap_truncated: bool = True
    """Bootstrap from the final observation on truncation (the ``Environment`` contract). Set it
    False for a finite-horizon task whose observation reveals the time left but that reports the
    horizon as ``truncated``: bootstrapping from a state that is never acted in can diverge."""
    # Iterations per jitted chunk, i.e. how often ``progress`` is called and a checkpoint written.
    log_every: int = 500

    def __post_init__(self) -> None:
        """Validate every field; raise ``ValueError("field: problem")`` on the first bad one."""
        for name in ("total_env_steps", "num_envs", "learning_starts", "batch_size", "n_step"):
            check_int(name, getattr(self, name), 1)
        for name in ("train_freq", "gradient_steps", "target_update_interval", "log_every"):
            check_int(name, getattr(self, name), 1)
        check_int("buffer_size", self.buffer_size, max(self.num_envs, 1))
        check_number("gamma", self.gamma, 0.0, 1.0)
        check_number("learning_rate", self.learning_rate, 0.0, math.inf, open_low=True)
        check_number("max_grad_norm", self.max_grad_norm, 0.0, math.inf, open_low=True)
        check_choice("grad_clip", self.grad_clip, GRAD_CLIPS)
        check_number("tau", self.tau, 0.0, 1.0, open_low=True)
        check_number("reward_scale", self.reward_scale, 0.0, math.inf, open_low=True)
        check_widths("hidden", self.hidden)
        for name in ("normalize_obs", "bootstrap_truncated"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name}: must be a bool, got {getattr(self, name)!r}")
        if self.iterations < 1:
            needed = self.prefill_steps * self.num_envs + self.train_freq * self.num_envs
            raise ValueError(
                f"total_env_steps: {self.total_env_steps} leaves no training iteration after the prefill "
                f"(needs >= {needed} with learning_starts={self.learning_starts}, num_envs={self.num_envs}, "
                f"train_freq={self.train_freq})"
            )

    @property
    def prefill_steps(self) -> int:
        """Vector steps of random actions whose transitions are stored before learning."""
        return -(-self.learning_starts // self.num_envs)

    @property
    def iterations(self) -> int:
        """Training iterations (each ``train_freq`` vector steps, then ``gradient_steps`` updates)."""
        per_iteration = self.train_freq * self.num_envs
        return (self.total_env_steps - self.prefill_steps * self.num_envs) // per_iteration

    @property
    def env_steps(self) -> int:
        """Environment transitions actually taken per seed (window fill and prefill included)."""
        vector_steps = self.n_step - 1 + self.prefill_steps + self.iterations * self.train_freq
        return vector_steps * self.num_envs

    def gradient_clip(self) -> optax.GradientTransformation:
        """The clip before Adam: ``max_grad_norm`` on the global norm, or on each element (``grad_clip="value"``)."""
        return gradient_clip(self.grad_clip, self.max_grad_norm)

    def optimizer(self) -> optax.GradientTransformation:
        """Adam after ``gradient_clip`` (every network of the agent)."""
        return optax.chain(self.gradient_clip(), optax.adam(self.learning_rate))
