"""Episodes traced for display: positions, serving links, QoE and fairness per step.

``policy_actions`` runs one episode of a named policy (a heuristic, the greedy planner, a
saved expert, the multi-task PPO or a (Prompt-)DT of a study folder) and returns its actions;
``replay`` steps the environment again with those actions on the same key and records
everything a network map needs. Every policy's episode uses the key streams of
``rollouts.rollout``, so one key gives every policy the same users and the same movement
(common random numbers), and the replay reproduces the episode exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax import Array

from decisions.telecom.comp.dt.datasets import OfflineDataset
from decisions.telecom.comp.dt.saved import SavedDT
from decisions.telecom.comp.policies.experts import expert_policy
from decisions.telecom.comp.policies.heuristics import SERVING_SET_POLICIES
from decisions.telecom.comp.policies.rollouts import ENV, rollout
from decisions.telecom.comp.sim.catalog import Task
from decisions.telecom.comp.sim.network import NetworkParams
from decisions.telecom.comp.study.scoring import REFERENCE_POLICIES

__all__ = ["Trace", "available_policies", "policy_actions", "replay", "trace_frames"]


@dataclass(frozen=True)
class Trace:
    """One episode step by step (numpy; ``U`` real users, ``C`` real cells).

    Attributes:
        pos: ``(T, U, 2)`` user positions when each action was taken.
        conn: ``(T, U, C)`` serving links after each action.
        user_qoe: ``(T, U)`` each user's QoE in [0, 1].
        qoe: ``(T,)`` mean QoE; jain: ``(T,)`` Jain's index of the QoE; reward: ``(T,)``.
        cells: ``(C, 2)`` cell positions.
    """

    pos: np.ndarray
    conn: np.ndarray
    user_qoe: np.ndarray
    qoe: np.ndarray
    jain: np.ndarray
    reward: np.ndarray
    cells: np.ndarray


def available_policies(folder: Path | None, task: Task) -> list[str]:
    """Policies that can drive ``task``: the heuristics and the greedy planner, plus the study
    folder's trained ones."""
    names = [*SERVING_SET_POLICIES, *REFERENCE_POLICIES]
    if folder is None:
        return names
    folder = Path(folder)
    if (folder / "experts" / f"{task.name}.msgpack").exists():
        names.append("expert")
    models = folder / "models"
    if (models / "multitask_ppo.msgpack").exists():
        names.append("multitask_ppo")
    if (folder / "demos" / f"{task.name}.npz").exists():
        names += sorted(p.stem for p in models.glob("promptdt-*.msgpack"))
        if (models / "dt.msgpack").exists():
            names.append("dt")
    return names


def policy_actions(name: str, task: Task, key: Array, folder: Path | None = None) -> np.ndarray:
    """``(T, MAX_USERS)`` actions of one episode of policy ``name`` on ``task`` with ``key``.

    Raises:
        ValueError: ``name`` is not among ``available_policies(folder, task)``.
    """
    if name not in available_policies(folder, task):
        raise ValueError(f"policy: {name!r} is not available for {task.name}")
    net = task.params()
    if name in SERVING_SET_POLICIES:
        policy = SERVING_SET_POLICIES[name]
    elif name in REFERENCE_POLICIES:
        policy = REFERENCE_POLICIES[name]
    elif folder is None:  # available_policies offers the learnt ones only with a folder
        raise ValueError(f"policy: {name!r} needs a study folder")
    elif name in ("expert", "multitask_ppo"):
        path = folder / ("experts" if name == "expert" else "models") / (
            f"{task.name}.msgpack" if name == "expert" else "multitask_ppo.msgpack"
        )
        policy = expert_policy(path)
    else:
        model = SavedDT.load(folder / "models" / f"{name}.msgpack")
        demos = OfflineDataset.load(folder / "demos" / f"{task.name}.npz")
        return np.asarray(model.episodes(task, demos, key[None]).actions[0])
    return rollout(net, policy, key[None], record=True)["action"][0]


@jax.jit
def _replay(key: Array, actions: Array, net: NetworkParams) -> tuple[Array, ...]:
    k_reset, k_env, _ = jax.random.split(key, 3)
    _, state = ENV.reset(k_reset, net)

    def step(state: object, xs: tuple[Array, Array]) -> tuple[object, tuple[Array, ...]]:
        k, action = xs
        _, new, reward, _, _, info = ENV.step(k, state, action, net)
        return new, (state.pos, new.conn, info["qoe"], info["jain_qoe"], reward)

    keys = jax.random.split(k_env, actions.shape[0])
    _, out = jax.lax.scan(step, state, (keys, actions))
    return out


def replay(task: Task, actions: np.ndarray, key: Array) -> Trace:
    """Step ``task``'s network with ``actions`` on ``key`` and record the episode."""
    net = task.params()
    pos, conn, user_qoe, jain, reward = (np.asarray(x) for x in _replay(key, jnp.asarray(actions, jnp.int32), net))
    users, cells = task.n_users, task.n_cells
    return Trace(
        pos=pos[:, :users],
        conn=conn[:, :users, :cells],
        user_qoe=user_qoe[:, :users],
        qoe=user_qoe[:, :users].mean(axis=1),
        jain=jain,
        reward=reward,
        cells=np.asarray(net.cell_pos)[:cells],
    )


def trace_frames(trace: Trace, step: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Tables of one step for a map: cells, users (position, QoE, links) and link segments."""
    cells = pd.DataFrame({"cell": np.arange(len(trace.cells)), "x": trace.cells[:, 0], "y": trace.cells[:, 1]})
    pos, conn = trace.pos[step], trace.conn[step]
    users = pd.DataFrame(
        {"user": np.arange(len(pos)), "x": pos[:, 0], "y": pos[:, 1], "qoe": trace.user_qoe[step],
         "links": conn.sum(axis=1)}
    )
    rows = []
    for u, c in zip(*np.nonzero(conn), strict=True):
        link = f"{u}-{c}"
        rows.append({"link": link, "x": pos[u, 0], "y": pos[u, 1]})
        rows.append({"link": link, "x": trace.cells[c, 0], "y": trace.cells[c, 1]})
    links = pd.DataFrame(rows, columns=["link", "x", "y"])
    return cells, users, links
