"""The study on a user's request log: no simulator, so every value is a doubly robust estimate."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax import Array

from decisions.core.progress import Progress, silent
from decisions.recsys.utility import baselines, obd_study, ope, qnet
from decisions.recsys.utility import objectives as obj
from decisions.recsys.utility.scenario import WeightSet
from decisions.recsys.utility.spec import FrontierSettings, QNetSettings
from decisions.recsys.utility.study import Study, deployable_choices, front_points, gain_figures, mean_weights

LOGGED_SPLIT = (0.7, 0.1)
"""Shares of a user's log (in file order) for training and validation; the rest is held out for the
off-policy estimates."""
_LOGGED_OBJECTIVES = ("engagement", "revenue", "success", "hides")


def _split(logs: qnet.Logs) -> tuple[qnet.Logs, qnet.Logs, qnet.Logs]:
    """Training, validation and held-out parts of a log, in time order."""
    n = len(logs.action)
    first, second = int(n * LOGGED_SPLIT[0]), int(n * sum(LOGGED_SPLIT))
    parts = [qnet.Logs(*(np.asarray(x)[a:b] for x in logs)) for a, b in ((0, first), (first, second), (second, n))]
    return parts[0], parts[1], parts[2]


def _logged_values(model: qnet.QModel, held_out: qnet.Logs) -> tuple[np.ndarray, np.ndarray]:
    """The held-out log's four figures per request (n, 4) and the Q-network's for every action (n, A, 4):
    engagement, revenue, success, hides."""
    outcomes = jnp.asarray(held_out.reward)
    rewards = jnp.concatenate([obj.objectives(outcomes, model.hide_cost), outcomes[:, :2]], axis=1)
    predicted = qnet.predict_outcomes(model, jnp.asarray(held_out.context))
    q_hat = jnp.concatenate([obj.objectives(predicted, model.hide_cost), predicted[..., :2]], axis=-1)
    return np.asarray(rewards), np.asarray(q_hat)


def _estimated(held_out: qnet.Logs, values: tuple[np.ndarray, np.ndarray], actions: np.ndarray, key: Array,
               frame: FrontierSettings) -> dict[str, float]:
    """DR estimates (with bootstrap intervals) of a deterministic policy's four figures on held-out logs,
    from ``_logged_values``."""
    rewards, q_hat = values
    inputs = ope.OpeInputs.from_policy(rewards, held_out.action, held_out.propensity,
                                       np.asarray(jax.nn.one_hot(actions, q_hat.shape[1])), q_hat)
    estimate = ope.estimate_all(inputs, frame.switch_tau)["dr"]
    low, high = ope.bootstrap(inputs, key, frame.bootstrap, tau=frame.switch_tau)["dr"]
    figures: dict[str, float] = {}
    for index, name in enumerate(_LOGGED_OBJECTIVES):
        figures[name] = float(estimate[index])
        figures[f"{name}_ci_low"] = float(low[index])
        figures[f"{name}_ci_high"] = float(high[index])
    return figures


def run_logged_study(
    logs: qnet.Logs, weight_set: WeightSet, hide_cost: float, agent: QNetSettings, frontier: FrontierSettings, *,
    seed: int, progress: Progress = silent,
) -> Study:
    """The study on a user's log: no simulator, so every value is a doubly robust estimate on the held-out part.

    The log is split in time order (``LOGGED_SPLIT``): the Q-network and the baselines learn on the
    first part, LinUCB's bonus is chosen on the second, and every method's operating points are
    estimated on the last (DR with the Q-network as reward model, bootstrap intervals).
    """
    train, validation, held_out = _split(logs)
    weights = np.asarray(weight_set.matrix())
    production = weight_set.production_index()
    scales = obj.scales_from_logs(train.reward, hide_cost)
    model, training = qnet.train(train, validation, weights, scales, hide_cost, agent,
                                 importance_weighted=agent.importance_weighted,
                                 progress=lambda done, total: progress("train Q-network", done, total))
    per_action = baselines.per_action_values(train.action, train.reward, len(weights), hide_cost)
    linucb = baselines.fit_linucb(train.context, train.action, train.reward, len(weights), hide_cost, scales.array())
    context = jnp.asarray(held_out.context)
    key = jax.random.PRNGKey(seed + 11)
    n = len(held_out.action)
    values = _logged_values(model, held_out)
    rows = [{"method": "production", "scalarisation": "fixed", "lambda": np.nan, "source": "dr",
             **_estimated(held_out, values, np.full(n, production), key, frontier),
             **mean_weights(weights, np.full(n, production))}]
    scalarisations = ["linear", "chebyshev"] if frontier.chebyshev else ["linear"]
    lambdas = frontier.grid()
    val = (validation.context, validation.action, validation.propensity, validation.reward)
    for i, lam in enumerate(lambdas):
        chosen = deployable_choices(model, context, lam, scalarisations, per_action, linucb, val,
                                    frontier.linucb_alphas)
        for (method, scalarisation), acts in chosen.items():
            rows.append({"method": method, "scalarisation": scalarisation, "lambda": lam, "source": "dr",
                         **_estimated(held_out, values, acts, key, frontier), **mean_weights(weights, acts),
                         "distinct_weights": int(len(np.unique(acts)))})
        progress("sweep lambda", i + 1, len(lambdas))
    front = pd.DataFrame(rows)
    figures = {f"qnet_{k}": v for k, v in training.items()}
    figures.update(_estimated_front_figures(front))
    obd_front = obd_study.real_front(lambdas, n_boot=frontier.bootstrap, seed=seed)
    return Study(front, pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), obd_front, figures, model)


HEADLINE_ESTIMATES = ("hypervolume_ratio_vs_global", "engagement_gain_vs_production")
"""The domain's headline figures a log can estimate (the others need the simulator's exact values or oracles)."""


def _estimated_front_figures(front: pd.DataFrame) -> dict[str, float]:
    """Front figures from the estimated values (``study.gain_figures``, names prefixed ``estimated_``), and
    the ``HEADLINE_ESTIMATES`` also under their headline names, so a log run lists its headline too."""
    production = front_points(front, "production")[0]
    figures = {"estimated_production_engagement": float(production[0]),
               "estimated_production_revenue": float(production[1]),
               **gain_figures(front, ("learnt", "global", "linucb"), prefix="estimated_")}
    return {**figures, **{name: figures[f"estimated_{name}"] for name in HEADLINE_ESTIMATES}}
