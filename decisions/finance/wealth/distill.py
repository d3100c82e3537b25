"""Refine the MetaRL planner on the exact DP's action values of training problems."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import Array

from decisions.core.progress import Progress
from decisions.finance.wealth.dp import ActionValues, action_values
from decisions.finance.wealth.meta_env import MAX_OPTIONS, ProblemArrays, encode, features, stack
from decisions.finance.wealth.planner import Planner, joint_planner, plan
from decisions.finance.wealth.planner_limits import DISTILL_STEPS, TEMPERATURE
from decisions.finance.wealth.problem import WealthProblem
from decisions.finance.wealth.simulate import affordable_choice, draw_normals, nearest_state, simulate

PyTree = Any

MIN_VISIT = 1e-5
"""States visited with a lower probability are not labelled."""
VISIT_SEED = 1_000
"""Monte Carlo seed of the visits to training problem ``i`` in ``refine``: ``VISIT_SEED + i``."""


@dataclass(frozen=True)
class RegretLabels:
    """Regrets of every (option slot, portfolio) choice on the visited states of training problems.

    Attributes:
        bank: the problems' padded arrays, stacked (``meta_env.stack``).
        problem: index into ``bank`` per state, ``(N,)``.
        year: year per state.
        cash: wealth plus the year's cash flow, in units of the problem's ``W0``.
        regret: ``(N, MAX_OPTIONS, K)`` float16: the DP's best value minus that of choosing the
            slot (resolved as the planner's environment does) and the portfolio, over the
            problem's total attainable utility; at the horizon the portfolio does not count.
        weight: visit probability per state (each problem's years each sum to at most 1).
        mu_safe: the safest portfolio's mean (the observation's discount rate).
    """

    bank: ProblemArrays
    problem: np.ndarray
    year: np.ndarray
    cash: np.ndarray
    regret: np.ndarray
    weight: np.ndarray
    mu_safe: float

    def __len__(self) -> int:
        return len(self.problem)


def merge_labels(parts: Sequence[RegretLabels]) -> RegretLabels:
    """One label set from several (their problems numbered on, in order)."""
    if not parts:
        raise ValueError("parts: need at least one label set")
    offsets = np.cumsum([0] + [int(p.bank.horizon.shape[0]) for p in parts[:-1]])
    bank = jax.tree_util.tree_map(lambda *xs: jnp.concatenate([jnp.asarray(x) for x in xs]), *[p.bank for p in parts])
    joined = {k: np.concatenate([getattr(p, k) for p in parts]) for k in ("year", "cash", "regret", "weight")}
    problem = np.concatenate([p.problem + off for p, off in zip(parts, offsets, strict=True)])
    return RegretLabels(bank=bank, problem=problem.astype(np.int32), mu_safe=parts[0].mu_safe, **joined)


def slot_regrets(values: ActionValues, t: int, nodes: np.ndarray, cash: np.ndarray, scale: float) -> np.ndarray:
    """Regret of each (slot, portfolio) at ``nodes`` of year ``t``, ``(n, MAX_OPTIONS, K)``.

    Slots resolve as in ``meta_env.resolve_option``: a padding slot means the dearest option and
    an unaffordable one falls back to the dearest affordable one.
    """
    q = values.q[t]
    n_port = values.q[0].shape[1]
    resolved = np.stack(
        [affordable_choice(values.options[t], cash, np.full(len(cash), slot)) for slot in range(MAX_OPTIONS)]
    )
    chosen = q[resolved, :, nodes[None, :]]  # (MAX_OPTIONS, n, K_t)
    chosen = np.broadcast_to(chosen, (*chosen.shape[:2], n_port)).transpose(1, 0, 2)
    best = chosen.max(axis=(1, 2), keepdims=True)
    return ((best - chosen) / scale).astype(np.float16)


def visit_probabilities(planner: Planner, problem: WealthProblem, wealth: np.ndarray, *, paths: int, seed: int) -> np.ndarray:
    """Share of ``paths`` Monte Carlo paths of the planner at each state (nearest node) per year, ``(T + 1, S)``."""
    sim = simulate(problem, plan(planner, problem).policy, normals=draw_normals(seed, paths, problem.horizon))
    states = nearest_state(wealth, sim.wealth)
    return np.stack([np.bincount(states[:, t], minlength=len(wealth)) / paths for t in range(problem.horizon + 1)])


def regret_labels(
    problems: Sequence[WealthProblem],
    planner: Planner,
    *,
    dp_share: float = 0.3,
    paths: int = 2_000,
    seed: int = 0,
    progress: Progress | None = None,
) -> RegretLabels:
    """Solve each problem's action values and label the states the planner and the DP visit.

    Raises:
        ValueError: no problems, ``dp_share`` outside ``[0, 1]``, or problems on different markets.
    """
    if not problems:
        raise ValueError("problems: need at least one training problem")
    if not 0.0 <= dp_share <= 1.0:
        raise ValueError(f"dp_share: must be in [0, 1], got {dp_share!r}")
    if any(p.market != problems[0].market for p in problems):
        raise ValueError("problems: all must share one market (the planner is trained for one)")
    report = progress or (lambda task, done, total: None)
    problems = [p.target_as_goal() for p in problems]  # the planner's form: slots index these option sets
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("problem", "year", "cash", "regret", "weight")}
    arrays = []
    for i, problem in enumerate(problems):
        report("DP action values", i, len(problems))
        values = action_values(problem)
        encoded, scale, total = encode(problem)
        arrays.append(encoded)
        visits = visit_probabilities(planner, problem, values.wealth, paths=paths, seed=seed + i)
        weight = (1.0 - dp_share) * visits + dp_share * values.distribution
        flows = [*problem.flows(), 0.0]
        for t in range(problem.horizon + 1):
            cash = values.wealth + flows[t]
            alive = np.isfinite(values.q[t]).any(axis=(0, 1))
            nodes = np.flatnonzero(alive & (weight[t] > MIN_VISIT))
            if len(nodes) == 0:
                continue
            parts["problem"].append(np.full(len(nodes), i, np.int32))
            parts["year"].append(np.full(len(nodes), t, np.int32))
            parts["cash"].append((cash[nodes] / scale).astype(np.float32))
            parts["regret"].append(slot_regrets(values, t, nodes, cash[nodes], total))
            parts["weight"].append(weight[t, nodes])
    report("DP action values", len(problems), len(problems))
    out = {k: np.concatenate(v) for k, v in parts.items()}
    mu, _ = problems[0].market.frontier()
    return RegretLabels(bank=stack(arrays), mu_safe=float(mu[0]), **out)


def _loss(
    net: PyTree, planner: Planner, bank: ProblemArrays, batch: dict[str, Array], mu_safe: float, temperature: float
) -> tuple[Array, Array]:
    """Cross-entropy of the joint head to the soft targets, and the regret of its greedy choices."""
    prob = jax.tree_util.tree_map(lambda x: x[batch["problem"]], bank)
    obs = jax.vmap(features, in_axes=(0, 0, 0, None))(prob, batch["year"], batch["cash"], mu_safe)
    x = planner.params["obs_stats"].normalize(planner.policy.encode(obs))
    logits = planner.policy.network.apply(net, x, method="actor")
    regret = batch["regret"].reshape(logits.shape).astype(jnp.float32)
    target = jax.nn.softmax(-regret / temperature)
    loss = -jnp.mean(jnp.sum(target * jax.nn.log_softmax(logits), axis=-1))
    greedy = jnp.take_along_axis(regret, jnp.argmax(logits, axis=-1)[:, None], axis=1)[:, 0]
    return loss, jnp.mean(greedy)


def distill(
    planner: Planner,
    labels: RegretLabels,
    *,
    steps: int = DISTILL_STEPS,
    batch_size: int = 1024,
    learning_rate: float = 1e-4,
    temperature: float = TEMPERATURE,
    seed: int = 0,
    chunk: int = 500,
    progress: Progress | None = None,
) -> tuple[Planner, dict[str, Any]]:
    """Fit the planner's joint head and torso to the soft targets of ``labels`` (Adam, cosine decay).

    Batches are drawn with probability ``labels.weight`` (inverse-CDF sampling). The critic and
    the observation statistics are left as they are.

    Returns:
        The refined (joint) planner and a summary: steps, seconds, final loss and the mean
        regret of the greedy choice per labelled state, first and last (units of total utility).
    """
    if steps < 1 or batch_size < 1:
        raise ValueError(f"steps and batch_size: must be positive, got {steps} and {batch_size}")
    if temperature <= 0:
        raise ValueError(f"temperature: must be positive, got {temperature!r}")
    report = progress or (lambda task, done, total: None)
    chunk = min(chunk, steps)
    planner = joint_planner(planner)
    bank = jax.tree_util.tree_map(jnp.asarray, labels.bank)
    data = {k: jnp.asarray(getattr(labels, k)) for k in ("problem", "year", "cash", "regret")}
    cdf = jnp.asarray(np.cumsum(labels.weight) / np.sum(labels.weight), jnp.float32)
    optimiser = optax.adam(optax.cosine_decay_schedule(learning_rate, steps))
    net = planner.params["net"]
    opt_state = optimiser.init(net)

    @jax.jit
    def run(net: PyTree, opt_state: PyTree, key: Array) -> tuple[PyTree, PyTree, Array, Array]:
        def step(carry: tuple[PyTree, PyTree], k: Array) -> tuple[tuple[PyTree, PyTree], tuple[Array, Array]]:
            net, opt_state = carry
            idx = jnp.minimum(jnp.searchsorted(cdf, jax.random.uniform(k, (batch_size,))), len(cdf) - 1)
            batch = {name: v[idx] for name, v in data.items()}
            grad_fn = jax.value_and_grad(_loss, has_aux=True)
            (loss, regret), grads = grad_fn(net, planner, bank, batch, labels.mu_safe, temperature)
            updates, opt_state = optimiser.update(grads, opt_state, net)
            return (optax.apply_updates(net, updates), opt_state), (loss, regret)

        (net, opt_state), (loss, regret) = jax.lax.scan(step, (net, opt_state), jax.random.split(key, chunk))
        return net, opt_state, loss, regret

    start = time.perf_counter()
    key = jax.random.PRNGKey(seed)
    losses, regrets = [], []
    done = 0
    while done < steps:
        key, sub = jax.random.split(key)
        net, opt_state, loss, regret = run(net, opt_state, sub)
        done += chunk
        losses.append(np.asarray(loss))
        regrets.append(np.asarray(regret))
        report("distillation", min(done, steps), steps)
    loss_curve, regret_curve = np.concatenate(losses), np.concatenate(regrets)
    summary = {
        "stage": "dp_regret_distillation",
        "steps": int(done),
        "batch_size": int(batch_size),
        "learning_rate": float(learning_rate),
        "temperature": float(temperature),
        "labelled_states": len(labels),
        "problems": int(labels.bank.horizon.shape[0]),
        "train_seconds": time.perf_counter() - start,
        "final_loss": float(loss_curve[-chunk:].mean()),
        "first_greedy_regret": float(regret_curve[:chunk].mean()),
        "final_greedy_regret": float(regret_curve[-chunk:].mean()),
    }
    return Planner(planner.policy, {**planner.params, "net": net}), summary


def refine(
    planner: Planner,
    problems: Sequence[WealthProblem],
    *,
    rounds: int = 1,
    steps: int | Sequence[int] = DISTILL_STEPS,
    learning_rate: float = 1e-4,
    temperature: float = TEMPERATURE,
    seed: int = 0,
    progress: Progress | None = None,
) -> tuple[Planner, dict[str, Any]]:
    """Distil the DP's regrets into ``planner`` in ``rounds`` rounds of DAgger.

    Returns:
        The refined planner and the last round's ``distill`` summary, with ``rounds``.
    """
    if rounds < 1 or rounds > len(problems):
        raise ValueError(f"rounds: must be between 1 and the number of problems ({len(problems)}), got {rounds}")
    per_round = [int(steps)] * rounds if isinstance(steps, int) else [int(n) for n in steps]
    if len(per_round) != rounds:
        raise ValueError(f"steps: one number per round ({rounds}), got {len(per_round)}")
    parts: list[RegretLabels] = []
    current, summary = planner, {}
    for part, round_steps in zip(np.array_split(np.arange(len(problems)), rounds), per_round, strict=True):
        chosen = [problems[int(i)] for i in part]
        parts.append(regret_labels(chosen, current, seed=VISIT_SEED + int(part[0]), progress=progress))
        current, summary = distill(
            planner, merge_labels(parts), steps=round_steps, learning_rate=learning_rate, temperature=temperature,
            seed=seed, progress=progress,
        )
    return current, {**summary, "rounds": int(rounds), "steps_per_round": per_round}
