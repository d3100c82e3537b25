"""``CompEnv``: CoMP cell selection for a central agent, mobile-env's central scenario in JAX.

One step, in mobile-env's order: release connections whose SNR fell to the threshold; apply the action;
schedule each cell's resources and sum each user's link rates (one joint link under joint
transmission); the reward is the mean over users of their scaled utility (``[-1, 1]``); move the users
and advance time, truncating at ``episode_length``.

Observation (mobile-env's, padded): per user, ``MAX_CELLS`` connection flags, ``MAX_CELLS`` SNRs over
the user's best and its last scaled utility (-1 at reset), flattened user-major; padding reads 0.
Actions, ``MultiDiscrete((MAX_CELLS + 1,) * MAX_USERS)``: ``"toggle"`` (mobile-env's: 0 keeps, ``k``
toggles the link to cell ``k - 1``) or ``"serving_set"`` (the learning tasks: ``j`` serves a user from
its ``j`` strongest connectable cells, at least one for a user in coverage).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct
from jax import Array

from decisions.core.env import Environment, Info, PRNGKey
from decisions.core.env_steps import time_limit_step
from decisions.core.spaces import Box, MultiDiscrete
from decisions.telecom.comp.sim import channel, mobility, qoe, schedulers
from decisions.telecom.comp.sim.constants import MAX_CELLS, MAX_USERS
from decisions.telecom.comp.sim.network import NetworkParams, small

__all__ = [
    "ACTION_MODES",
    "CompEnv",
    "CompState",
    "apply_toggles",
    "hide_links",
    "link_outcome",
    "observe",
    "serving_set",
    "snr_rank",
    "with_positions",
]

ACTION_MODES = ("toggle", "serving_set")
"""``CompEnv`` action modes (see the module docstring)."""


@struct.dataclass
class CompState:
    """State of a CoMP episode: user positions ``pos`` and ``waypoint`` (metres), connections ``conn``
    ``(users, cells)``, the last scaled ``utility`` (-1 before the first step), the proportional-fair
    ``avg_rate``, the step ``time`` and ``l_snr``, the ``log10`` SNR cache at ``pos`` (``with_positions``
    refreshes it)."""

    pos: Array
    waypoint: Array
    conn: Array
    utility: Array
    avg_rate: Array
    time: Array
    l_snr: Array


def with_positions(state: CompState, pos: Array, params: NetworkParams) -> CompState:
    """``state`` with users at ``pos`` and its SNR cache refreshed."""
    return state.replace(pos=pos, l_snr=channel.log10_snr(params, pos))


def observe(state: CompState, params: NetworkParams) -> Array:
    """mobile-env's central observation of ``state``, padded and flattened: ``(users * (2 cells + 1),)``."""
    l_snr = state.l_snr
    valid = params.user_mask[:, None] & params.cell_mask[None, :]
    best = jnp.max(l_snr, axis=1, keepdims=True)
    snr_norm = jnp.where(valid, channel.pow10(l_snr - best), 0.0)
    conn = (state.conn & valid).astype(jnp.float32)
    util = jnp.where(params.user_mask, state.utility, 0.0)[:, None]
    return jnp.concatenate([conn, snr_norm, util], axis=1).reshape(-1).astype(jnp.float32)


def hide_links(obs: Array, n_cells: int = MAX_CELLS) -> Array:
    """``obs`` (one or a batch, of ``n_cells`` cell slots) with every connection flag set to 0: with
    serving-set actions the flags are the previous action, which a learner could copy."""
    rows = obs.reshape(*obs.shape[:-1], -1, 2 * n_cells + 1)
    return rows.at[..., :n_cells].set(0.0).reshape(obs.shape)


def apply_toggles(conn: Array, ok: Array, action: Array, params: NetworkParams) -> Array:
    """``(users, cells)`` connections after per-user toggles (0 keep, ``k`` toggles cell ``k - 1``)."""
    n_cells = conn.shape[1]
    action = jnp.asarray(action, jnp.int32)
    target = action - 1
    in_range = (action >= 1) & (action <= n_cells)
    safe = jnp.clip(target, 0, n_cells - 1)
    valid = in_range & params.user_mask & params.cell_mask[safe]
    hit = jax.nn.one_hot(safe, n_cells, dtype=bool) & valid[:, None]
    return jnp.where(hit, ~conn & ok, conn)


def snr_rank(score: Array, valid: Array) -> Array:
    """``(users, cells)`` rank of each cell for each user by ``score``, 0 = best, lowest index first on
    ties, invalid cells last (pairwise counts: cheaper than ``argsort`` for 13 cells on CPU)."""
    valid = jnp.broadcast_to(valid, score.shape)
    score = jnp.where(valid, score, -jnp.inf)
    a, b = score[:, :, None], score[:, None, :]
    lower_index = jnp.tril(jnp.ones((score.shape[1],) * 2, bool), -1)  # [c, c'] = c' < c
    return jnp.sum((b > a) | ((b == a) & lower_index[None]), axis=2).astype(jnp.int32)


def serving_set(l_snr: Array, ok: Array, action: Array, params: NetworkParams) -> Array:
    """``(users, cells)`` serving-set connections: each user's ``action`` strongest connectable cells (at
    least one for a user in coverage)."""
    rank = snr_rank(l_snr, ok)
    covered = jnp.any(ok, axis=1)
    size = jnp.where(params.user_mask & covered, jnp.maximum(jnp.asarray(action, jnp.int32), 1), 0)
    return ok & (rank < size[:, None])


def link_outcome(state: CompState, conn: Array, params: NetworkParams) -> tuple[Array, Array, Array]:
    """``(rate, utility, scaled)`` of every user with links ``conn``, each ``(users,)``: bit/s (0 for
    padded users), the bounded log utility and that utility scaled to ``[-1, 1]``."""
    l_snr = state.l_snr
    ok = channel.connectable(params, l_snr)

    def per_link() -> Array:
        l_sinr = jax.lax.cond(params.interference, lambda: channel.log10_sinr(params, l_snr, conn), lambda: l_snr)
        cap = channel.capacity(params, l_sinr, ok)
        return schedulers.user_rates(schedulers.shares(params.scheduler, conn, cap, state.avg_rate), cap)

    def joint() -> Array:
        bandwidth = jnp.max(jnp.where(conn, params.cell_bandwidth_hz[None, :], 0.0), axis=1)
        joint_cap = bandwidth * channel.spectral_efficiency(channel.joint_log10_sinr(params, l_snr, conn))
        cap = jnp.where(conn, joint_cap[:, None], 0.0)
        share = schedulers.shares(params.scheduler, conn, cap, state.avg_rate)
        return schedulers.joint_rates(share, conn, joint_cap)

    rate = jnp.where(params.user_mask, jax.lax.cond(params.joint_transmission, joint, per_link), 0.0)
    raw = qoe.bounded_log_utility(rate, params.utility_bounds, params.utility_coeffs)
    return rate, raw, qoe.scale_utility(raw, params.utility_bounds)


class CompEnv(Environment[CompState, NetworkParams]):
    """Central CoMP cell selection on a padded multi-cell network (see the module docstring).

    ``max_cells`` / ``max_users`` are the (static) slots; ``action_mode`` is ``"toggle"`` or
    ``"serving_set"``; ``observe_links=False`` zeroes every observation's connection flags (``hide_links``).
    """

    def __init__(
        self,
        max_cells: int = MAX_CELLS,
        max_users: int = MAX_USERS,
        action_mode: str = "toggle",
        observe_links: bool = True,
    ) -> None:
        if action_mode not in ACTION_MODES:
            raise ValueError(f"action_mode: must be one of {list(ACTION_MODES)}, got {action_mode!r}")
        self.max_cells = int(max_cells)
        self.max_users = int(max_users)
        self.action_mode = action_mode
        self.observe_links = bool(observe_links)

    def observe(self, state: CompState, params: NetworkParams) -> Array:
        """The observation of ``state`` (``observe``, links hidden unless ``observe_links``)."""
        obs = observe(state, params)
        return obs if self.observe_links else hide_links(obs, self.max_cells)

    def connections(self, state: CompState, action: Array, params: NetworkParams) -> Array:
        """The links ``action`` makes in ``state``: ``(users, cells)`` bool (pruned to connectable ones)."""
        ok = channel.connectable(params, state.l_snr)
        if self.action_mode == "serving_set":
            return serving_set(state.l_snr, ok, action, params)
        return apply_toggles(state.conn & ok, ok, action, params)

    def canonical_action(self, state: CompState, action: Array, params: NetworkParams) -> Array:
        """``action`` in the one form that makes its effect in ``state`` explicit (no-op toggles become 0;
        serving-set sizes clipped to 1..the user's connectable cells, 0 out of coverage or padded), so
        recorded data never hold choices that change nothing."""
        action = jnp.asarray(action, jnp.int32)
        if self.action_mode == "serving_set":
            n_ok = jnp.sum(channel.connectable(params, state.l_snr), axis=1)
            return jnp.where(params.user_mask, jnp.clip(action, jnp.minimum(n_ok, 1), n_ok), 0).astype(jnp.int32)
        target = jnp.clip(action - 1, 0, self.max_cells - 1)
        valid = (action >= 1) & (action <= self.max_cells) & params.user_mask & params.cell_mask[target]
        return jnp.where(valid, action, 0).astype(jnp.int32)

    @property
    def default_params(self) -> NetworkParams:
        """mobile-env's small scenario (3 cells, 5 users)."""
        return small()

    @property
    def obs_size(self) -> int:
        """Length of an observation, ``max_users * (2 max_cells + 1)``."""
        return self.max_users * (2 * self.max_cells + 1)

    def reset(self, key: PRNGKey, params: NetworkParams) -> tuple[Array, CompState]:
        """Users at their start points (``mobility.start_points``: uniform unless the network places
        them) with uniform waypoints, no connections (see ``Environment.reset``)."""
        k_pos, k_way = jax.random.split(key)
        pos = mobility.start_points(k_pos, self.max_users, params.size, params.user_home, params.user_spread)
        state = CompState(
            pos=pos,
            waypoint=mobility.random_points(k_way, self.max_users, params.size),
            conn=jnp.zeros((self.max_users, self.max_cells), bool),
            utility=jnp.full((self.max_users,), -1.0, jnp.float32),
            avg_rate=jnp.zeros((self.max_users,), jnp.float32),
            time=jnp.asarray(0, jnp.int32),
            l_snr=channel.log10_snr(params, pos),
        )
        return self.observe(state, params), state

    def step(
        self, key: PRNGKey, state: CompState, action: Array, params: NetworkParams
    ) -> tuple[Array, CompState, Array, Array, Array, Info]:
        """One step of mobile-env's central scenario (see the module docstring and ``Environment.step``)."""
        conn = self.connections(state, action, params)
        rate, raw, scaled = link_outcome(state, conn, params)
        n = jnp.maximum(jnp.sum(params.user_mask), 1)
        reward = jnp.sum(jnp.where(params.user_mask, scaled, 0.0)) / n
        user_qoe = (scaled + 1.0) / 2.0
        avg_rate = jnp.where(
            state.time == 0, rate, (1.0 - params.pf_alpha) * state.avg_rate + params.pf_alpha * rate
        )
        pos, waypoint = mobility.waypoint_step(
            key, state.pos, state.waypoint, params.user_velocity, params.size
        )
        pos = jnp.where(params.user_mask[:, None], pos, state.pos)
        time = state.time + 1
        new_state = CompState(
            pos=pos,
            waypoint=waypoint,
            conn=conn,
            utility=jnp.where(params.user_mask, scaled, -1.0),
            avg_rate=avg_rate,
            time=time,
            l_snr=channel.log10_snr(params, pos),
        )
        info: Info = {
            "rate": rate,
            "utility": jnp.where(params.user_mask, raw, 0.0),
            "qoe": jnp.where(params.user_mask, user_qoe, 0.0),
            "jain_qoe": qoe.jain_index(user_qoe, params.user_mask),
            "jain_rate": qoe.jain_index(rate, params.user_mask),
            "connections": jnp.sum(conn, axis=1),
        }
        truncated = time >= params.episode_length
        return time_limit_step(self.observe(new_state, params), new_state, reward, truncated, info)

    def action_mask(self, state: CompState, params: NetworkParams) -> Array:
        """``(max_users, max_cells + 1)`` bool: the actions that change something (keep always allowed
        in toggle mode, a toggle of an existing connectable cell; serving-set sizes 1 to the user's
        connectable cells, only 0 out of coverage or padded)."""
        ok = channel.connectable(params, state.l_snr)
        keep = jnp.ones((self.max_users, 1), bool)
        if self.action_mode == "serving_set":
            n_ok = jnp.sum(ok, axis=1, keepdims=True)
            sizes = jnp.arange(1, self.max_cells + 1)[None, :]
            return jnp.concatenate([n_ok == 0, sizes <= n_ok], axis=1)
        return jnp.concatenate([keep, ok], axis=1)

    def observation_space(self, params: NetworkParams) -> Box:
        """``Box(-1, 1, (max_users * (2 max_cells + 1),))``."""
        return Box(low=-1.0, high=1.0, shape=(self.obs_size,))

    def action_space(self, params: NetworkParams) -> MultiDiscrete:
        """``MultiDiscrete((max_cells + 1,) * max_users)``: per user keep or toggle a cell, or a serving-set size."""
        return MultiDiscrete((self.max_cells + 1,) * self.max_users)
