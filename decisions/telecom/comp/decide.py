"""CoMP's decide contract (``kit.decide.DecideModule``): each user's measured signal strength from
every cell in, each user's serving cells out, from the policies a run saved (``deployable``),
without retraining.

A decision is one step of the task's network (``sim.env.CompEnv`` in serving-set mode) from the
measured SNRs: ``expected`` is the users' mean achieved rate at the chosen links (the simulator's
schedulers and channel), ``value`` the step's reward (the users' mean scaled utility, in [-1, 1]).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from decisions.core.settings import Settings
from decisions.errors import InputError
from decisions.kit.decide import Candidate, Decision, deployed_and_alternative
from decisions.telecom.comp.deployable import EXPERT, MULTITASK, RULES, read_deployable

OUTCOME = "the users' mean achieved rate over this step (Mbit/s)"
"""What an outcome's number is."""

SnrDb = Annotated[float, Field(ge=-300.0, le=300.0)]
Utility = Annotated[float, Field(ge=-1.0, le=1.0)]
Rate = Annotated[float, Field(ge=0.0, le=1e6)]


class UsersState(Settings):
    """A network's users now: the task (the network), each user's measured SNR of every cell, and,
    when known, each user's last scaled utility and proportional-fair average rate."""

    section = "state"

    task: str = Field(min_length=1, description="The network: one of the run's tasks (e.g. c3-u5-resource_fair-me).")
    snr_db: list[list[SnrDb]] = Field(min_length=1, max_length=30, description="Per user, the SNR of each cell (dB).")
    utility: list[Utility] = Field([], max_length=30, description="Per user, its last scaled utility (empty: none yet).")
    average_rate_mbps: list[Rate] = Field(
        [], max_length=30, description="Per user, its proportional-fair average rate (Mbit/s; empty: none yet).")


STATE_MODEL = UsersState

_LABELS = {EXPERT: "the task's PPO expert", MULTITASK: "multi-task PPO", "max_snr": "max-SNR (strongest cell)",
           "top2": "the two strongest cells"}


def candidates(run_folder: Path, metrics: Mapping[str, float]) -> list[Candidate]:
    """The run's deployable policies with their mean episode return over its tasks (the study's figure)."""
    del metrics
    _, scores = read_deployable(run_folder)
    means = scores.groupby("policy", sort=False)["return_mean"].mean()
    return [Candidate(name, _LABELS[name], float(score), "mean episode return over the run's tasks",
                      learnt=name not in RULES, network=name not in RULES)
            for name, score in means.items() if name in _LABELS and np.isfinite(score)]


@dataclass(frozen=True)
class TaskAnswers:
    """One task's compiled answer to a padded batch, its sizes and the alternative answering beside
    the deployed policy there (the best other candidate with a policy on the task)."""

    run: Callable[[Any], dict[str, Any]]
    users: int
    cells: int
    alternative: str


@dataclass(frozen=True)
class CompPolicy:
    """A loaded candidate (``name``), the best other one (``alternative``) and per task the answers
    (where the best other saved no policy on a task, the next best that did answers there)."""

    name: str
    alternative: str
    labels: Mapping[str, str]
    tasks: Mapping[str, TaskAnswers]


def _task_policy(run_folder: Path, name: str, task: str) -> Any:
    """``name``'s ``rollouts.TaskPolicy`` on ``task``, or None where the run saved none."""
    from decisions.telecom.comp.policies.experts import expert_policy
    from decisions.telecom.comp.policies.heuristics import SERVING_SET_POLICIES
    from decisions.telecom.comp.policies.rollouts import task_policy

    if name in RULES:
        return task_policy(SERVING_SET_POLICIES[name])
    path = run_folder / (f"expert_{task}.msgpack" if name == EXPERT else f"{MULTITASK}.msgpack")
    return expert_policy(path) if path.is_file() else None


def _compiled(net: Any, deployed: Any, other: Any) -> Callable[[Any], dict[str, Any]]:
    """A batch of measurements ``(log10 SNR (B, U, C), utility (B, U), average rate (B, U))`` padded to
    the simulator's slots, answered by both policies in one compiled call."""
    import jax
    import jax.numpy as jnp

    from decisions.telecom.comp.policies.rollouts import ENV
    from decisions.telecom.comp.sim import channel
    from decisions.telecom.comp.sim.env import CompState, link_outcome

    users = net.user_mask
    key = jax.random.PRNGKey(0)
    floor = channel.log10_snr(net, jnp.zeros((users.shape[0], 2)))

    def one(l_snr: Any, utility: Any, avg_rate: Any) -> dict[str, Any]:
        valid = users[:, None] & net.cell_mask[None, :]
        zeros = jnp.zeros((users.shape[0], 2))
        state = CompState(pos=zeros, waypoint=zeros, conn=jnp.zeros(valid.shape, bool),
                          utility=jnp.where(users, utility, -1.0), avg_rate=avg_rate, time=jnp.asarray(1),
                          l_snr=jnp.where(valid, l_snr, floor))
        obs = ENV.observe(state, net)
        out = {}
        for tag, policy in (("mine", deployed), ("other", other)):
            action = ENV.canonical_action(state, policy(obs, key, net), net)
            conn = ENV.connections(state, action, net)
            rate, _, scaled = link_outcome(state, conn, net)
            out[tag] = {"conn": conn, "rate_mbps": rate / 1e6,
                        "reward": jnp.sum(jnp.where(users, scaled, 0.0)) / jnp.maximum(jnp.sum(users), 1)}
        return out

    return jax.jit(jax.vmap(lambda inputs: one(*inputs)))


def load(run_folder: Path, candidate: str) -> CompPolicy:
    """The run's ``candidate`` and the best other candidate on each of its tasks, compiled and warmed up.

    Raises:
        InputError: (``policy``) the run does not offer ``candidate``; (``run``) it saved no policies.
    """
    tasks, _ = read_deployable(run_folder)
    offered = candidates(run_folder, {})
    candidate, alternative = deployed_and_alternative(offered, candidate)
    others = [c.name for c in sorted(offered, key=lambda c: -c.score) if c.name != candidate]
    answers = {}
    for name, task in tasks.items():
        deployed = _task_policy(run_folder, candidate, name)
        if deployed is None:
            continue
        found = ((n, p) for n in others if (p := _task_policy(run_folder, n, name)) is not None)
        other_name, other = next(found, (candidate, deployed))
        answers[name] = TaskAnswers(_compiled(task.params(), deployed, other), task.n_users, task.n_cells,
                                    other_name)
    policy = CompPolicy(candidate, alternative, {c.name: c.label for c in offered}, answers)
    decide(policy, [UsersState.parse(example_state(run_folder))])
    return policy


def _inputs(policy: CompPolicy, states: Sequence[UsersState]) -> tuple[TaskAnswers, tuple[np.ndarray, ...]]:
    """The states' (one task's) measurements padded to the simulator's slots.

    Raises:
        InputError: a task the run has no policy on, or measurements that do not fit the task.
    """
    from decisions.telecom.comp.sim.constants import MAX_CELLS, MAX_USERS

    answers = policy.tasks[states[0].task]
    n, c = answers.users, answers.cells
    l_snr = np.full((len(states), MAX_USERS, MAX_CELLS), -30.0, np.float32)
    utility = np.full((len(states), MAX_USERS), -1.0, np.float32)
    avg_rate = np.zeros((len(states), MAX_USERS), np.float32)
    l_snr[:, :n, :c] = np.array([s.snr_db for s in states], np.float32) / 10.0
    for field, into, scale in (("utility", utility, 1.0), ("average_rate_mbps", avg_rate, 1e6)):
        given = [i for i, s in enumerate(states) if getattr(s, field)]
        if given:
            into[given, :n] = np.array([getattr(states[i], field) for i in given], np.float32) * np.float32(scale)
    return answers, (l_snr, utility, avg_rate)


def _check(policy: CompPolicy, state: UsersState) -> None:
    answers = policy.tasks.get(state.task)
    if answers is None:
        raise InputError("state.task", f"the run has no {policy.name} policy on {state.task!r} ({', '.join(policy.tasks)})")
    n, c = answers.users, answers.cells
    if len(state.snr_db) != n or any(len(row) != c for row in state.snr_db):
        raise InputError("state.snr_db", f"the task has {n} users and {c} cells: give {n} rows of {c} SNRs")
    for field in ("utility", "average_rate_mbps"):
        if getattr(state, field) and len(getattr(state, field)) != n:
            raise InputError(f"state.{field}", f"give one per user ({n}) or none")


def _serving(conn: np.ndarray, users: int) -> list[list[list[int]]]:
    """Per state, each user's serving cells (``conn``: ``(B, users', cells)`` links)."""
    cells = conn.shape[-1]
    masks = (conn[:, :users].astype(np.int64) << np.arange(cells)).sum(axis=-1)
    sets = {m: [c for c in range(cells) if m >> c & 1] for m in np.unique(masks).tolist()}
    return [[list(sets[m]) for m in row] for row in masks.tolist()]


def decide(policy: CompPolicy, states: Sequence[UsersState]) -> list[Decision]:
    """Each state's serving cells per user by the deployed policy, in order, with the users' mean
    rate at those links (``expected``), the step's reward (``value``), the alternative's cells and
    reward, and each user's rate (``reasons``)."""
    import jax

    from decisions.kit.decide_batch import bucket, padded

    groups: dict[str, list[int]] = {}
    for i, state in enumerate(states):
        _check(policy, state)
        groups.setdefault(state.task, []).append(i)
    out: dict[int, Decision] = {}
    for index in groups.values():
        answers, inputs = _inputs(policy, [states[i] for i in index])
        label = policy.labels[answers.alternative]
        size = len(index)
        found = answers.run(tuple(padded(a, bucket(size)) for a in inputs))
        found = jax.tree.map(lambda a, size=size: np.asarray(a)[:size], found)
        mine, other = found["mine"], found["other"]
        rates = mine["rate_mbps"][:, : answers.users].astype(np.float64)
        rows = zip(index, _serving(mine["conn"], answers.users), rates.mean(axis=1).tolist(), mine["reward"].tolist(),
                   _serving(other["conn"], answers.users), other["reward"].tolist(), rates.tolist(), strict=True)
        for i, cells, expected, value, alt_cells, alt_value, user_rates in rows:
            out[i] = Decision(action={"serving_cells": cells}, expected=expected, value=value,
                              alternative={"policy": label, "action": {"serving_cells": alt_cells}, "value": alt_value},
                              reasons={"user_rates_mbps": user_rates})
    return [out[i] for i in range(len(states))]


def example_state(run_folder: Path) -> dict[str, Any]:
    """The run's first task with each user's SNRs at a user-dependent spread (the strongest cell
    differs from user to user), no history."""
    tasks, _ = read_deployable(run_folder)
    task = next(iter(tasks.values()))
    snr = [[float(30 - 12 * ((u + c) % task.n_cells)) for c in range(task.n_cells)] for u in range(task.n_users)]
    return {"task": task.name, "snr_db": snr}
