"""Probe environments with known answers, for tests of wrappers, adapters and agents.

- ``OneStepBandit``: one decision among ``num_arms`` with known rewards; the
  optimal return is ``max(params.rewards)``.
- ``WalkToGoal``: a corridor of ``length`` cells; walking right every step
  reaches the goal in ``length`` steps, for a return of
  ``goal_reward - (length - 1) * step_cost``; episodes are truncated after
  ``max_steps`` steps.
- ``ContinuousTarget``: one continuous decision; the observation is a random
  target and the reward ``-(action - target)^2``, so the optimal policy is
  ``action = obs`` with return 0 (needs the observation, unlike a bandit).
- ``TwoStepCredit``: two decisions; the first pays a small immediate reward
  for the lure and nothing for the patient choice, the second pays a delayed
  reward fixed by the first choice. The optimal return
  ``max(immediate + delayed)`` (1 by default) needs the delayed consequence
  credited to the first action; a myopic agent gets 0.5.
- ``MatchTwo``: one step with a ``MultiDiscrete((3, 4))`` action; the observation
  names a target per component (one-hot) and each matched component pays 0.5,
  so the optimal return is 1 and needs both heads to read the observation.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct
from jax import Array

from decisions.core.env import Environment, Info, PRNGKey
from decisions.core.spaces import Box, Discrete, MultiDiscrete


@struct.dataclass
class BanditState:
    """State of ``OneStepBandit``."""

    done: Array  # () bool


@struct.dataclass
class BanditParams:
    """Params of ``OneStepBandit``."""

    rewards: Array  # (num_arms,) float32, reward of each arm


class OneStepBandit(Environment[BanditState, BanditParams]):
    """A one-step, deterministic multi-armed bandit.

    Args:
        num_arms: number of arms (static).
    """

    def __init__(self, num_arms: int = 3) -> None:
        self.num_arms = num_arms

    @property
    def default_params(self) -> BanditParams:
        """Arm ``i`` pays ``i / (num_arms - 1)``: the last arm is optimal, paying 1."""
        return BanditParams(rewards=jnp.linspace(0.0, 1.0, self.num_arms, dtype=jnp.float32))

    def reset(self, key: PRNGKey, params: BanditParams) -> tuple[Array, BanditState]:
        """Return the constant observation ``[0.]``."""
        return jnp.zeros((1,), jnp.float32), BanditState(done=jnp.asarray(False))

    def step(
        self, key: PRNGKey, state: BanditState, action: Array, params: BanditParams
    ) -> tuple[Array, BanditState, Array, Array, Array, Info]:
        """Pay ``params.rewards[action]`` and terminate."""
        reward = params.rewards[action].astype(jnp.float32)
        obs = jnp.ones((1,), jnp.float32)
        return obs, BanditState(done=jnp.asarray(True)), reward, jnp.asarray(True), jnp.asarray(False), {}

    def observation_space(self, params: BanditParams) -> Box:
        """A single flag in ``[0, 1]``: 0 before the pull, 1 after."""
        return Box(0.0, 1.0, (1,), jnp.float32)

    def action_space(self, params: BanditParams) -> Discrete:
        """One action per arm."""
        return Discrete(self.num_arms)


@struct.dataclass
class WalkState:
    """State of ``WalkToGoal``."""

    position: Array  # () int32, cell in [0, length]
    time: Array  # () int32, steps taken


@struct.dataclass
class WalkParams:
    """Params of ``WalkToGoal``."""

    goal_reward: Array  # () float32, paid on reaching the goal
    step_cost: Array  # () float32, paid (as -step_cost) on every other step
    slip_prob: Array  # () float32, probability that a move goes the other way


class WalkToGoal(Environment[WalkState, WalkParams]):
    """Walk along a corridor from cell 0 to the goal cell ``length``.

    Action 1 moves right, 0 moves left (clipped at 0). Reaching the goal pays
    ``goal_reward`` and terminates; every other step costs ``step_cost``. After
    ``max_steps`` steps the episode is truncated (both flags can be true if the
    goal is reached on the last step). With ``slip_prob > 0`` a move goes the
    other way with that probability.

    The observation is ``[position / length, time / max_steps]``.

    Args:
        length: number of moves from start to goal (static).
        max_steps: time limit in steps (static).
    """

    def __init__(self, length: int = 3, max_steps: int = 5) -> None:
        self.length = length
        self.max_steps = max_steps

    @property
    def default_params(self) -> WalkParams:
        """Goal reward 1, step cost 0.1, no slip."""
        return WalkParams(
            goal_reward=jnp.float32(1.0), step_cost=jnp.float32(0.1), slip_prob=jnp.float32(0.0)
        )

    def _obs(self, state: WalkState) -> Array:
        return jnp.stack([state.position / self.length, state.time / self.max_steps]).astype(jnp.float32)

    def reset(self, key: PRNGKey, params: WalkParams) -> tuple[Array, WalkState]:
        """Start at cell 0, time 0."""
        state = WalkState(position=jnp.int32(0), time=jnp.int32(0))
        return self._obs(state), state

    def step(
        self, key: PRNGKey, state: WalkState, action: Array, params: WalkParams
    ) -> tuple[Array, WalkState, Array, Array, Array, Info]:
        """Move, pay, and flag the goal (terminated) or the time limit (truncated)."""
        slip = jax.random.bernoulli(key, params.slip_prob)
        move = jnp.where(action == 1, 1, -1) * jnp.where(slip, -1, 1)
        position = jnp.clip(state.position + move, 0, self.length).astype(jnp.int32)
        new_state = WalkState(position=position, time=state.time + 1)
        terminated = position == self.length
        truncated = new_state.time >= self.max_steps
        reward = jnp.where(terminated, params.goal_reward, -params.step_cost).astype(jnp.float32)
        return self._obs(new_state), new_state, reward, terminated, truncated, {"position": position}

    def observation_space(self, params: WalkParams) -> Box:
        """Position and time fractions, both in ``[0, 1]``."""
        return Box(0.0, 1.0, (2,), jnp.float32)

    def action_space(self, params: WalkParams) -> Discrete:
        """0: left, 1: right."""
        return Discrete(2)


@struct.dataclass
class TargetState:
    """State of ``ContinuousTarget``."""

    target: Array  # (dim,) float32


@struct.dataclass
class TargetParams:
    """Params of ``ContinuousTarget``."""

    target_scale: Array  # () float32, targets are uniform in [-target_scale, target_scale]


class ContinuousTarget(Environment[TargetState, TargetParams]):
    """One continuous decision: match the observed target, reward ``-sum((action - target)^2)``.

    Args:
        dim: dimension of target and action (static).
    """

    def __init__(self, dim: int = 2) -> None:
        self.dim = dim

    @property
    def default_params(self) -> TargetParams:
        """Targets uniform in ``[-0.5, 0.5]``."""
        return TargetParams(target_scale=jnp.float32(0.5))

    def reset(self, key: PRNGKey, params: TargetParams) -> tuple[Array, TargetState]:
        """Draw a target and observe it."""
        target = jax.random.uniform(key, (self.dim,), jnp.float32, -1.0, 1.0) * params.target_scale
        return target, TargetState(target=target)

    def step(
        self, key: PRNGKey, state: TargetState, action: Array, params: TargetParams
    ) -> tuple[Array, TargetState, Array, Array, Array, Info]:
        """Pay the negative squared error and terminate."""
        reward = -jnp.sum((action - state.target) ** 2).astype(jnp.float32)
        return state.target, state, reward, jnp.asarray(True), jnp.asarray(False), {}

    def observation_space(self, params: TargetParams) -> Box:
        """The target, in ``[-1, 1]^dim``."""
        return Box(-1.0, 1.0, (self.dim,), jnp.float32)

    def action_space(self, params: TargetParams) -> Box:
        """The action, in ``[-1, 1]^dim``."""
        return Box(-1.0, 1.0, (self.dim,), jnp.float32)


@struct.dataclass
class TwoStepState:
    """State of ``TwoStepCredit``."""

    phase: Array  # () int32, 0 before the first decision, 1 before the second
    first: Array  # () int32, the first action (0 until taken)


@struct.dataclass
class TwoStepParams:
    """Params of ``TwoStepCredit``."""

    immediate: Array  # (2,) float32, reward of the first step for each first action
    delayed: Array  # (2,) float32, reward of the second step for each first action


class TwoStepCredit(Environment[TwoStepState, TwoStepParams]):
    """Two-step credit assignment: the first action decides what the second step pays.

    Step 1 pays ``immediate[a1]``; step 2 pays ``delayed[a1]`` whatever the second
    action, and terminates. By default action 0 is a lure (0.5 now, 0 later) and
    action 1 the patient choice (0 now, 1 later): the optimal return is 1, a
    myopic policy gets 0.5. The observation ``[phase == 0, phase == 1, a1 == 1 and
    phase == 1]`` makes the state Markov.
    """

    @property
    def default_params(self) -> TwoStepParams:
        """Lure ``immediate = [0.5, 0]``, ``delayed = [0, 1]``."""
        return TwoStepParams(
            immediate=jnp.asarray([0.5, 0.0], jnp.float32), delayed=jnp.asarray([0.0, 1.0], jnp.float32)
        )

    def optimal_return(self, params: TwoStepParams) -> Array:
        """``max(immediate + delayed)``, the best undiscounted return."""
        return jnp.max(params.immediate + params.delayed)

    @staticmethod
    def _obs(state: TwoStepState) -> Array:
        second = state.phase == 1
        return jnp.stack([~second, second, second & (state.first == 1)]).astype(jnp.float32)

    def reset(self, key: PRNGKey, params: TwoStepParams) -> tuple[Array, TwoStepState]:
        """Start before the first decision."""
        state = TwoStepState(phase=jnp.int32(0), first=jnp.int32(0))
        return self._obs(state), state

    def step(
        self, key: PRNGKey, state: TwoStepState, action: Array, params: TwoStepParams
    ) -> tuple[Array, TwoStepState, Array, Array, Array, Info]:
        """Pay the immediate reward of the first action, or the delayed one it chose and terminate."""
        second = state.phase == 1
        first = jnp.where(second, state.first, action).astype(jnp.int32)
        reward = jnp.where(second, params.delayed[first], params.immediate[first]).astype(jnp.float32)
        new_state = TwoStepState(phase=jnp.int32(1), first=first)
        return self._obs(new_state), new_state, reward, second, jnp.asarray(False), {}

    def observation_space(self, params: TwoStepParams) -> Box:
        """Three flags in ``[0, 1]``."""
        return Box(0.0, 1.0, (3,), jnp.float32)

    def action_space(self, params: TwoStepParams) -> Discrete:
        """Two actions."""
        return Discrete(2)


@struct.dataclass
class MatchState:
    """State of ``MatchTwo``."""

    target: Array  # (2,) int32, the target of each component


@struct.dataclass
class MatchParams:
    """Params of ``MatchTwo`` (none)."""

    scale: Array  # () float32, reward per matched component


class MatchTwo(Environment[MatchState, MatchParams]):
    """One decision of two components (3 and 4 choices); each matched target pays ``scale``."""

    nvec = (3, 4)

    @property
    def default_params(self) -> MatchParams:
        """Each matched component pays 0.5 (optimal return 1)."""
        return MatchParams(scale=jnp.asarray(0.5, jnp.float32))

    def _obs(self, target: Array) -> Array:
        return jnp.concatenate([jax.nn.one_hot(target[0], 3), jax.nn.one_hot(target[1], 4)]).astype(jnp.float32)

    def reset(self, key: PRNGKey, params: MatchParams) -> tuple[Array, MatchState]:
        """Draw a target per component, shown one-hot."""
        target = self.action_space(params).sample(key)
        return self._obs(target), MatchState(target=target)

    def step(
        self, key: PRNGKey, state: MatchState, action: Array, params: MatchParams
    ) -> tuple[Array, MatchState, Array, Array, Array, Info]:
        """Pay ``scale`` per matched component and terminate."""
        reward = params.scale * jnp.sum(action == state.target).astype(jnp.float32)
        return self._obs(state.target), state, reward, jnp.asarray(True), jnp.asarray(False), {}

    def observation_space(self, params: MatchParams) -> Box:
        """The two targets, one-hot (7 flags)."""
        return Box(0.0, 1.0, (7,), jnp.float32)

    def action_space(self, params: MatchParams) -> MultiDiscrete:
        """Three choices, then four."""
        return MultiDiscrete(self.nvec)


class MatchUnits(MatchTwo):
    """``MatchTwo`` for a set: 4 exchangeable units of 3 choices; unit ``i``'s row is its target one-hot.

    The observation is the 4 rows (4 x 3 flags) and one global feature (always 1); each matched
    unit pays ``scale`` (optimal return ``4 scale``). For ``OnPolicyConfig.unit_width = 3``.
    """

    units, choices = 4, 3
    nvec = (3,) * 4

    @property
    def default_params(self) -> MatchParams:
        """Each matched unit pays 0.25 (optimal return 1)."""
        return MatchParams(scale=jnp.asarray(0.25, jnp.float32))

    def _obs(self, target: Array) -> Array:
        rows = jax.nn.one_hot(target, self.choices).reshape(-1)
        return jnp.concatenate([rows, jnp.ones((1,))]).astype(jnp.float32)

    def observation_space(self, params: MatchParams) -> Box:
        """4 one-hot rows and a global 1."""
        return Box(0.0, 1.0, (self.units * self.choices + 1,), jnp.float32)
