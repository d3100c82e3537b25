"""The whole study on the simulator: logs, the Q-network, baselines, the lambda sweep scored exactly,
off-policy estimates on held-out logs, front metrics and the drift scenario.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax import Array

from decisions.core.progress import Progress, silent
from decisions.recsys.utility import baselines, obd_study, ope, qnet
from decisions.recsys.utility import frontier as geometry
from decisions.recsys.utility import objectives as obj
from decisions.recsys.utility import simulator as sim_mod
from decisions.recsys.utility.scenario import Simulator, WeightSet
from decisions.recsys.utility.spec import (
    Conditioning,
    DriftSettings,
    FrontierSettings,
    Logger,
    LogSettings,
    QNetSettings,
)

REFERENCE_LAMBDA = 0.5
"""The lambda of the headline off-policy check (the sweep's nearest point)."""


@dataclass
class Study:
    """What one study found: tables and flat figures."""

    front: pd.DataFrame
    """One row per (method, scalarisation, lambda): exact engagement, revenue, success, hides, utility."""
    off_policy: pd.DataFrame
    """The learnt policy per lambda: each estimator's engagement and revenue estimates, intervals, exact values."""
    estimator_errors: pd.DataFrame
    """At the reference lambda: each estimator's relative error per objective and logger."""
    segments: pd.DataFrame
    """Per segment at the reference lambda: the learnt policy's mean weights and outcomes against production."""
    drift: pd.DataFrame
    """Per day: utility of the day-0 policy, the retrained policy and the day-0 global weights."""
    obd_front: pd.DataFrame
    """The real front on the Open Bandit sample (``obd_study.real_front`` over the sweep's lambdas)."""
    figures: dict[str, float] = field(default_factory=dict)
    model: qnet.QModel | None = None

    def metrics(self) -> dict[str, float]:
        """The figures a run records: every finite one (a front that never reaches the production revenue,
        say, leaves its engagement there undefined)."""
        return {k: float(v) for k, v in self.figures.items() if math.isfinite(v)}


@dataclass
class _World:
    """The simulated world and the action set of one study."""

    simulator: Simulator
    world: sim_mod.World
    weights: Array
    production: int

    def simulate(self, key: Array, n: int, logger: np.ndarray, *, exact: bool, day: float = 0.0) -> sim_mod.SimBatch:
        return sim_mod.simulate(key, self.simulator, self.world, self.weights, jnp.asarray(logger), n, day,
                                exact=exact)


def _make_world(simulator: Simulator, weights: WeightSet) -> _World:
    """The world ``simulator`` describes, with ``weights``' action set and production weights."""
    return _World(simulator, sim_mod.make_world(simulator), jnp.asarray(weights.matrix()),
                  weights.production_index())


def _logs(batch: sim_mod.SimBatch) -> qnet.Logs:
    return qnet.Logs(np.asarray(batch.context), np.asarray(batch.action), np.asarray(batch.propensity),
                     np.asarray(batch.reward))


def _logger(w: _World, logs: LogSettings) -> np.ndarray:
    actions = int(w.weights.shape[0])
    if logs.logger is Logger.PRODUCTION:
        return sim_mod.epsilon_logger(actions, w.production, logs.epsilon)
    return sim_mod.uniform_logger(actions)


def _exact(outcomes: np.ndarray, actions: np.ndarray, hide_cost: float) -> dict[str, float]:
    """Mean exact outcomes and objectives of choosing ``actions`` on requests with (n, A, 3) ``outcomes``."""
    chosen = outcomes[np.arange(len(actions)), actions]
    success, hides, revenue = chosen.mean(axis=0)
    return {"engagement": float(success - hide_cost * hides), "revenue": float(revenue),
            "success": float(success), "hides": float(hides)}


def _utility(outcomes: np.ndarray, actions: np.ndarray, lam: float, scales: obj.Scales, hide_cost: float) -> float:
    """Exact lambda-utility of choosing ``actions`` on requests with (n, A, 3) ``outcomes``."""
    values = _exact(outcomes, actions, hide_cost)
    return float(obj.linear(jnp.asarray([values["engagement"], values["revenue"]]), lam, scales.array()))


def run_study(
    simulator: Simulator, weights: WeightSet, logs: LogSettings, agent: QNetSettings, frontier: FrontierSettings,
    drift: DriftSettings, *, progress: Progress = silent, lambda_input_too: bool = False,
) -> Study:
    """Run the study on the simulator (see the module docstring): ``logs`` simulated by ``logs.logger``,
    the Q-network ``agent`` trained on them, the ``frontier`` swept and estimated, ``drift`` simulated.

    With ``lambda_input_too`` (and the default ``vector`` conditioning) a second Q-network with lambda as
    an input (the abstract's form, ``conditioning = "lambda"``, same settings otherwise) learns on the
    same logs; its linear sweep joins the front as method ``learnt_lambda_input``.
    """
    s = simulator
    w = _make_world(simulator, weights)
    keys = jax.random.split(jax.random.PRNGKey(logs.seed), 6)
    logger = _logger(w, logs)
    progress("simulate logs", 0, 4)
    train = w.simulate(keys[0], logs.train_requests, logger, exact=False)
    validation = w.simulate(keys[1], logs.validation_requests, logger, exact=False)
    progress("simulate logs", 1, 4)
    held_out = w.simulate(keys[2], logs.evaluation_requests, logger, exact=True)
    progress("simulate logs", 2, 4)
    test = w.simulate(keys[3], frontier.test_requests, logger, exact=True)
    progress("simulate logs", 3, 4)
    expected = sim_mod.context_outcomes(keys[4], s, w.world, w.weights, test.profile, draws=frontier.oracle_draws)
    progress("simulate logs", 4, 4)

    scales = obj.scales_from_logs(np.asarray(train.reward), s.hide_cost)
    model, training = qnet.train(
        _logs(train), _logs(validation), np.asarray(w.weights), scales, s.hide_cost, agent,
        importance_weighted=agent.importance_weighted,
        progress=lambda done, total: progress("train Q-network", done, total),
    )
    front = _sweep(w, model, scales, train, validation, test, np.asarray(expected), frontier, progress)
    if lambda_input_too and model.conditioning == Conditioning.VECTOR:
        extra = _lambda_input_rows(w, scales, train, validation, test, agent, frontier.grid(), progress)
        front = pd.concat([front, extra], ignore_index=True)
    off_policy, errors = _off_policy(w, model, held_out, keys[5], frontier, logs.logger, progress)
    if len(errors):
        errors = _replicated_errors(w, model, errors, jax.random.fold_in(keys[5], 7), frontier, logs, progress)
    figures = _front_figures(front)
    figures.update({f"qnet_{k}": v for k, v in training.items()})
    figures.update(_error_figures(errors))
    segments = _segments(w, model, test, _reference_lambda(frontier.grid()))
    days = pd.DataFrame()
    if drift.days:
        days = _drift(w, scales, drift, agent, frontier.test_requests, logs.seed, progress)
    if len(days):
        figures.update(_drift_figures(days))
    progress("open bandit front", 0, 1)
    obd_front = obd_study.real_front(frontier.grid(), n_boot=frontier.bootstrap, seed=logs.seed)
    progress("open bandit front", 1, 1)
    return Study(front, off_policy, errors, segments, days, obd_front, figures, model)


def _lambda_input_rows(w: _World, scales: obj.Scales, train: sim_mod.SimBatch, validation: sim_mod.SimBatch,
                       test: sim_mod.SimBatch, agent: QNetSettings, lambdas: list[float],
                       progress: Progress) -> pd.DataFrame:
    """The linear sweep over ``lambdas`` of a Q-network like ``agent`` with lambda as an input, trained on the
    same logs, scored exactly."""
    hide_cost = w.simulator.hide_cost
    settings = agent.model_copy(update={"conditioning": Conditioning.LAMBDA})
    model, _ = qnet.train(_logs(train), _logs(validation), np.asarray(w.weights), scales, hide_cost, settings,
                          importance_weighted=settings.importance_weighted,
                          progress=lambda done, total: progress("train lambda-input Q-network", done, total))
    outcomes, weights = np.asarray(test.outcomes), np.asarray(w.weights)
    rows = []
    for lam in lambdas:
        acts = np.asarray(qnet.decide(model, jnp.asarray(test.context), lam))
        rows.append({"method": "learnt_lambda_input", "scalarisation": "linear", "lambda": lam, "source": "exact",
                     **_exact(outcomes, acts, hide_cost), "utility": _utility(outcomes, acts, lam, scales, hide_cost),
                     **mean_weights(weights, acts), "distinct_weights": int(len(np.unique(acts)))})
    return pd.DataFrame(rows)


def _sweep(w: _World, model: qnet.QModel, scales: obj.Scales, train: sim_mod.SimBatch,
           validation: sim_mod.SimBatch, test: sim_mod.SimBatch, expected: np.ndarray, frontier: FrontierSettings,
           progress: Progress) -> pd.DataFrame:
    """Every method's exact objectives on the test requests at every lambda of ``frontier``."""
    hide_cost = w.simulator.hide_cost
    outcomes = np.asarray(test.outcomes)
    true_values = obj.objectives(jnp.asarray(outcomes), hide_cost)
    context_values = obj.objectives(jnp.asarray(expected), hide_cost)
    context = jnp.asarray(test.context)
    per_action = baselines.per_action_values(np.asarray(train.action), np.asarray(train.reward), w.weights.shape[0],
                                             hide_cost)
    linucb = baselines.fit_linucb(np.asarray(train.context), np.asarray(train.action), np.asarray(train.reward),
                                  w.weights.shape[0], hide_cost, scales.array())
    val = (np.asarray(validation.context), np.asarray(validation.action), np.asarray(validation.propensity),
           np.asarray(validation.reward))
    n = outcomes.shape[0]
    scalarisations = ["linear", "chebyshev"] if frontier.chebyshev else ["linear"]
    weights = np.asarray(w.weights)
    production = np.full(n, w.production)
    rows: list[dict[str, Any]] = [
        {"method": "production", "scalarisation": "fixed", "lambda": np.nan, "source": "exact",
         **_exact(outcomes, production, hide_cost),
         "utility": np.nan, **mean_weights(weights, production), "distinct_weights": 1},
    ]
    lambdas = frontier.grid()
    for i, lam in enumerate(lambdas):
        chosen = deployable_choices(model, context, lam, scalarisations, per_action, linucb, val,
                                    frontier.linucb_alphas)
        for method in scalarisations:
            chosen[("context_oracle", method)] = np.asarray(
                baselines.oracle_actions(context_values, lam, scales.array(), method))
        chosen[("request_oracle", "linear")] = np.asarray(
            baselines.oracle_actions(true_values, lam, scales.array(), "linear"))
        for (method, scalarisation), acts in chosen.items():
            rows.append({"method": method, "scalarisation": scalarisation, "lambda": lam, "source": "exact",
                         **_exact(outcomes, acts, hide_cost), "utility": _utility(outcomes, acts, lam, scales, hide_cost),
                         **mean_weights(weights, acts), "distinct_weights": int(len(np.unique(acts)))})
        progress("sweep lambda", i + 1, len(lambdas))
    return pd.DataFrame(rows)


def deployable_choices(
    model: qnet.QModel, context: Array, lam: float, scalarisations: list[str], per_action: np.ndarray,
    linucb: baselines.LinUCB, validation: tuple[np.ndarray, ...], alphas: list[float],
) -> dict[tuple[str, str], np.ndarray]:
    """Each deployable method's weight vector per request at ``lam``: the learnt policy and the best global
    weights per scalarisation, and LinUCB (its bonus chosen on the validation logs), by (method, scalarisation)."""
    n = context.shape[0]
    chosen: dict[tuple[str, str], np.ndarray] = {}
    for method in scalarisations:
        if model.conditioning == Conditioning.VECTOR or method == "linear":
            chosen[("learnt", method)] = np.asarray(qnet.decide(model, context, lam, method))
        chosen[("global", method)] = np.full(n, baselines.best_global(per_action, lam, model.scales, method))
    alpha = baselines.tune_linucb(linucb, validation, lam, alphas)
    chosen[("linucb", "linear")] = np.asarray(baselines.linucb_decide(linucb, context, lam, alpha))
    return chosen


def mean_weights(weights: np.ndarray, actions: np.ndarray) -> dict[str, float]:
    """The chosen weight vectors' mean over requests, by head."""
    mean = weights[actions].mean(axis=0)
    return {"w_save": float(mean[0]), "w_hide": float(mean[1]), "w_revenue": float(mean[2])}


def front_points(front: pd.DataFrame, method: str, scalarisation: str | None = None) -> np.ndarray:
    """(engagement, revenue) of one method's rows of a front table (optionally one scalarisation's)."""
    mask = front["method"] == method
    if scalarisation is not None:
        mask &= front["scalarisation"] == scalarisation
    return front.loc[mask, ["engagement", "revenue"]].to_numpy()


def method_front(front: pd.DataFrame, method: str, scalarisation: str | None = None) -> np.ndarray:
    """A method's deployable points: every scalarisation's sweep (or one), the best global weights with the
    production weights (themselves one global weight vector)."""
    points = front_points(front, method, scalarisation)
    if method == "global":
        points = np.vstack([points, front_points(front, "production")])
    return points


def gain_figures(front: pd.DataFrame, methods: tuple[str, ...], prefix: str = "") -> dict[str, float]:
    """Hypervolumes and engagement at the production revenue of each method's front, and the learnt policy's
    gain over the best global weights as a share of the gap to each oracle (names prefixed ``prefix``).

    Each front is every deployable point of the method (``method_front``), read as its best random mix of
    two points; the hypervolume's reference point is the worst value of any row on each objective.
    """
    production = front_points(front, "production")[0]
    reference = front[["engagement", "revenue"]].to_numpy().min(axis=0) - 1e-6
    figures = {f"{prefix}hv_reference_engagement": float(reference[0]),
               f"{prefix}hv_reference_revenue": float(reference[1])}
    at_revenue: dict[str, float] = {}
    for method in methods:
        points = method_front(front, method)
        figures[f"{prefix}hv_{method}"] = geometry.hypervolume(points, reference)
        at_revenue[method] = geometry.engagement_at(points, float(production[1]))
        figures[f"{prefix}engagement_at_production_revenue_{method}"] = at_revenue[method]
    figures[f"{prefix}hypervolume_ratio_vs_global"] = figures[f"{prefix}hv_learnt"] / figures[f"{prefix}hv_global"]
    figures[f"{prefix}engagement_gain_vs_production"] = at_revenue["learnt"] / production[0] - 1.0
    figures[f"{prefix}engagement_gain_vs_global"] = at_revenue["learnt"] / at_revenue["global"] - 1.0
    for oracle, name in (("context_oracle", "gain_share_of_oracle"), ("request_oracle", "gain_share_of_request_oracle")):
        if oracle in at_revenue:
            gap = at_revenue[oracle] - at_revenue["global"]
            figures[f"{prefix}{name}"] = (at_revenue["learnt"] - at_revenue["global"]) / gap
            if oracle == "context_oracle":
                for other in set(methods) - {"learnt", "global", "context_oracle", "request_oracle"}:
                    figures[f"{prefix}{name}_{other}"] = (at_revenue[other] - at_revenue["global"]) / gap
                    figures[f"{prefix}hypervolume_ratio_vs_global_{other}"] = (
                        figures[f"{prefix}hv_{other}"] / figures[f"{prefix}hv_global"])
    return figures


def _front_figures(front: pd.DataFrame) -> dict[str, float]:
    """Front figures (``gain_figures``), each also from the linear sweeps alone, and what Chebyshev adds."""
    production = front_points(front, "production")[0]
    figures: dict[str, float] = {"production_engagement": float(production[0]),
                                 "production_revenue": float(production[1])}
    methods = tuple(m for m in ("learnt", "learnt_lambda_input", "global", "linucb", "context_oracle",
                                "request_oracle") if (front["method"] == m).any())
    figures.update(gain_figures(front, methods))
    linear = front[front["scalarisation"].isin(["linear", "fixed"])]
    figures.update(gain_figures(linear, methods, prefix="linear_"))
    if (front["scalarisation"] == "chebyshev").any():
        reference = np.asarray([figures["hv_reference_engagement"], figures["hv_reference_revenue"]])
        for method in ("learnt", "global"):
            linear_points = front_points(front, method, "linear")
            cheb = front_points(front, method, "chebyshev")
            figures[f"chebyshev_points_beyond_linear_{method}"] = float(geometry.points_beyond(cheb, linear_points))
            figures[f"chebyshev_points_undominated_{method}"] = float(geometry.points_undominated_by(cheb, linear_points))
            figures[f"hv_{method}_chebyshev"] = geometry.hypervolume(cheb, reference)
    return figures


def _reference_lambda(lambdas: list[float]) -> float:
    """The sweep's lambda nearest ``REFERENCE_LAMBDA``."""
    grid = np.asarray(lambdas)
    return float(grid[np.argmin(np.abs(grid - REFERENCE_LAMBDA))])


def _ope_inputs(batch: sim_mod.SimBatch, rewards: np.ndarray, q_hat: np.ndarray, chosen: Array) -> ope.OpeInputs:
    """A greedy policy's choices ``chosen`` as an off-policy problem on ``batch``'s logs, with ``rewards``
    (n, 2) the logged objectives and ``q_hat`` (n, A, 2) the Q-network's, both computed once per log."""
    return ope.OpeInputs.from_policy(rewards, np.asarray(batch.action), np.asarray(batch.propensity),
                                     np.asarray(jax.nn.one_hot(chosen, q_hat.shape[1])), q_hat)


def off_policy_errors(simulator: Simulator, weights: WeightSet, logs: LogSettings, frontier: FrontierSettings,
                      model: qnet.QModel, progress: Progress = silent) -> pd.DataFrame:
    """Every estimator's error for ``model``'s policy at the reference lambda on fresh held-out logs of
    ``logs.logger`` (e.g. the epsilon-production logger for a model trained on uniform logs)."""
    w = _make_world(simulator, weights)
    key = jax.random.PRNGKey(logs.seed + 7)
    held_out = w.simulate(key, logs.evaluation_requests, _logger(w, logs), exact=True)
    reference = [_reference_lambda(frontier.grid())]
    first = _off_policy(w, model, held_out, jax.random.fold_in(key, 1), frontier, logs.logger, progress, reference)[1]
    return _replicated_errors(w, model, first, jax.random.fold_in(key, 2), frontier, logs, progress)


def _replicated_errors(w: _World, model: qnet.QModel, first: pd.DataFrame, key: Array, frontier: FrontierSettings,
                       logs: LogSettings, progress: Progress) -> pd.DataFrame:
    """The estimator errors at the reference lambda over ``frontier.ope_replications`` independent held-out
    logs of ``logs`` (the first given): ``first``'s rows with ``mean_rel_error``, ``max_rel_error`` and
    ``ci_coverage`` (share of logs whose interval holds the exact value) over all of them."""
    replications = frontier.ope_replications
    reference = [_reference_lambda(frontier.grid())]
    tables = [first.assign(replication=0)]
    for r in range(1, replications):
        held_out = w.simulate(jax.random.fold_in(key, r), logs.evaluation_requests, _logger(w, logs), exact=True)
        table = _off_policy(w, model, held_out, jax.random.fold_in(key, 1000 + r), frontier, logs.logger, silent,
                            reference)[1]
        tables.append(table.assign(replication=r))
        progress("off-policy replications", r, replications - 1)
    every = pd.concat(tables, ignore_index=True)
    every["covers"] = (every["ci_low"] <= every["truth"]) & (every["truth"] <= every["ci_high"])
    summary = every.groupby(["estimator", "objective"], sort=False).agg(
        mean_rel_error=("rel_error", "mean"), max_rel_error=("rel_error", "max"), ci_coverage=("covers", "mean"))
    return first.join(summary, on=["estimator", "objective"]).assign(replications=replications)


def _off_policy(w: _World, model: qnet.QModel, held_out: sim_mod.SimBatch, key: Array, frame: FrontierSettings,
                logger: Logger, progress: Progress,
                lambdas: list[float] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each lambda's learnt policy estimated on held-out logs of ``logger`` with intervals, against its exact
    value there (every lambda of ``frame`` unless ``lambdas`` are given)."""
    hide_cost = w.simulator.hide_cost
    outcomes = np.asarray(held_out.outcomes)
    context = jnp.asarray(held_out.context)
    rows, errors = [], []
    if lambdas is None:
        lambdas = frame.grid() if model.conditioning == Conditioning.VECTOR else []
    reference = _reference_lambda(frame.grid())
    rewards = np.asarray(obj.objectives(jnp.asarray(held_out.reward), hide_cost))
    q_hat = np.asarray(qnet.action_values(model, context)) if lambdas else None
    for i, lam in enumerate(lambdas):
        chosen = qnet.decide(model, context, lam)
        inputs = _ope_inputs(held_out, rewards, q_hat, chosen)
        exact = _exact(outcomes, np.asarray(chosen), hide_cost)
        table = ope.summary_table(inputs, jax.random.fold_in(key, i), n_boot=frame.bootstrap, tau=frame.switch_tau,
                                  truth=[exact["engagement"], exact["revenue"]], objectives=["engagement", "revenue"])
        table.insert(0, "lambda", lam)
        rows.append(table)
        if lam == reference:
            errors.append(table.assign(logger=logger.value))
        progress("off-policy estimates", i + 1, len(lambdas))
    empty = pd.DataFrame()
    return (pd.concat(rows, ignore_index=True) if rows else empty), (pd.concat(errors, ignore_index=True)
                                                                       if errors else empty)


def _error_figures(errors: pd.DataFrame) -> dict[str, float]:
    """Each estimator's mean and largest relative error over the held-out logs, its interval's coverage,
    and the first log's estimate, interval and error (``_first_log``)."""
    figures: dict[str, float] = {}
    for row in errors.itertuples():
        suffix = "" if row.objective == "engagement" else f"_{row.objective}"
        figures[f"{row.estimator}_rel_error{suffix}"] = float(row.mean_rel_error)
        figures[f"{row.estimator}_rel_error_max{suffix}"] = float(row.max_rel_error)
        figures[f"{row.estimator}_ci_coverage{suffix}"] = float(row.ci_coverage)
        figures[f"{row.estimator}_rel_error_first_log{suffix}"] = float(row.rel_error)
        figures[f"{row.estimator}_estimate{suffix}"] = float(row.estimate)
        figures[f"{row.estimator}_ci_low{suffix}"] = float(row.ci_low)
        figures[f"{row.estimator}_ci_high{suffix}"] = float(row.ci_high)
    if len(errors):
        figures["ope_truth"] = float(errors.loc[errors["objective"] == "engagement", "truth"].iloc[0])
        figures["ope_replications"] = float(errors["replications"].iloc[0])
    return figures


def _segments(w: _World, model: qnet.QModel, test: sim_mod.SimBatch, lam: float) -> pd.DataFrame:
    """Per segment at ``lam``: the learnt weights and outcomes against production's."""
    hide_cost = w.simulator.hide_cost
    chosen = np.asarray(qnet.decide(model, jnp.asarray(test.context), lam))
    segment = np.asarray(test.profile.segment)
    outcomes = np.asarray(test.outcomes)
    weights = np.asarray(w.weights)
    rows = []
    for index, name in enumerate(sim_mod.SEGMENTS):
        mask = segment == index
        if not mask.any():
            continue
        learnt = _exact(outcomes[mask], chosen[mask], hide_cost)
        base = _exact(outcomes[mask], np.full(int(mask.sum()), w.production), hide_cost)
        mean_w = weights[chosen[mask]].mean(axis=0)
        rows.append({
            "segment": name, "share": float(mask.mean()), "lambda": lam,
            "w_save": float(mean_w[0]), "w_hide": float(mean_w[1]), "w_revenue": float(mean_w[2]),
            **{f"{k}_learnt": v for k, v in learnt.items()},
            **{f"{k}_production": v for k, v in base.items()},
        })
    return pd.DataFrame(rows)


def _drift(w: _World, scales: obj.Scales, settings: DriftSettings, agent: QNetSettings, test_requests: int,
           seed: int, progress: Progress) -> pd.DataFrame:
    """Per day of ``settings``: the policy trained on day 0 against the one retrained on the day before
    (continuing from the previous day's model, both like ``agent``), and day-0 global weights, scored
    exactly on ``test_requests`` fresh requests a day (logs drawn from ``seed``)."""
    hide_cost = w.simulator.hide_cost
    key = jax.random.PRNGKey(seed + 1_000)
    uniform = sim_mod.uniform_logger(int(w.weights.shape[0]))
    days = settings.days
    models: list[qnet.QModel] = []
    globals_: list[int] = []
    rows = []
    for day in range(days):
        k_log, k_val, k_test = jax.random.split(jax.random.fold_in(key, day), 3)
        test = w.simulate(k_test, test_requests, uniform, exact=True, day=float(day))
        outcomes = np.asarray(test.outcomes)
        context = jnp.asarray(test.context)
        if day:
            def utility(acts: np.ndarray, outcomes: np.ndarray = outcomes) -> float:
                return _utility(outcomes, acts, settings.lam, scales, hide_cost)

            n = outcomes.shape[0]
            rows.append({
                "day": day,
                "day0_policy": utility(np.asarray(qnet.decide(models[0], context, settings.lam))),
                "retrained_policy": utility(np.asarray(qnet.decide(models[-1], context, settings.lam))),
                "day0_global": utility(np.full(n, globals_[0])),
                "retrained_global": utility(np.full(n, globals_[-1])),
            })
        if day < days - 1:
            logs = w.simulate(k_log, settings.requests_per_day, uniform, exact=False, day=float(day))
            val = w.simulate(k_val, max(settings.requests_per_day // 5, 100), uniform, exact=False, day=float(day))
            model, _ = qnet.train(_logs(logs), _logs(val), np.asarray(w.weights), scales, hide_cost, agent,
                                  warm_start=models[-1] if models else None)
            models.append(model)
            per_action = baselines.per_action_values(np.asarray(logs.action), np.asarray(logs.reward),
                                                     int(w.weights.shape[0]), hide_cost)
            globals_.append(baselines.best_global(per_action, settings.lam, scales.array()))
        progress("drift days", day + 1, days)
    return pd.DataFrame(rows)


def _drift_figures(drift: pd.DataFrame) -> dict[str, float]:
    figures: dict[str, float] = {}
    for row in drift.itertuples():
        figures[f"drift_day{row.day}_day0_policy"] = float(row.day0_policy)
        figures[f"drift_day{row.day}_retrained_policy"] = float(row.retrained_policy)
        figures[f"drift_day{row.day}_day0_global"] = float(row.day0_global)
    last = drift.iloc[-1]
    figures["drift_last_day_retrained_minus_day0"] = float(last.retrained_policy - last.day0_policy)
    figures["drift_days_retrained_wins"] = float((drift["retrained_policy"] > drift["day0_policy"]).sum())
    return figures

