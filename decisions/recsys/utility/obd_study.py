"""Off-policy evaluation on the Open Bandit sample: the standard check and a real two-objective front.

``standard_check`` is obp's Open Bandit experiment (``examples/obd/evaluate_off_policy_estimators.py``)
on the packaged sample: estimate the click rate of Bernoulli TS from the uniform-random logs with
every estimator of ``ope.ESTIMATORS``, and compare with BTS's on-policy click rate in its own logs.

``real_front`` sweeps a family of context-free policies trading the click rate (estimated off policy
from the random logs) against an item attribute known exactly (``item_feature_0``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from decisions.errors import InputError
from decisions.recsys.utility import obd
from decisions.recsys.utility.ope import (
    DEFAULT_TAU,
    ESTIMATORS,
    OpeInputs,
    bootstrap,
    bootstrap_draws,
    bootstrap_mean,
    estimate_all,
    percentile_interval,
    relative_error,
)

ClickScore = Literal["prior", "bts", "random"]
FRONT_ESTIMATORS = ("ips", "dr")
"""Estimators of the front's click rate."""
DEFAULT_TEMPERATURE = 1.0
"""Softmax temperature of the front's policies (on standardised scores)."""


def standard_check(
    n_boot: int = 200,
    seed: int = 0,
    *,
    policy_source: obd.PolicySource = "prior",
    n_sim: int = obd.N_SIM,
    tau: float = DEFAULT_TAU,
    level: float = 0.95,
    refit: bool = True,
) -> tuple[dict[str, float], pd.DataFrame]:
    """BTS's click rate estimated from the random logs by every estimator, against its on-policy rate.

    Per impression and per position, context free, as obp's Open Bandit example does: the target
    ``pi(item | position)`` is ``obd.bts_policy`` (default: the production prior by Monte Carlo), the
    reward model is ``obd.cross_fitted_q`` (3-fold cross-fitted empirical-Bayes click rates).

    The truth is the mean click of the whole ``bts`` log (10,000 impressions), as obp's example does
    (``calc_on_policy_policy_value_estimate`` with its default ``is_timeseries_split=False``), not the
    30% time-series test split: on this sample a 3,000-impression split holds only ~13 clicks, which
    would more than double the truth's own sampling noise (already about +-30% at 95% with ~40-70
    clicks). Its bootstrap interval is reported so that an estimator's error can be read against it.
    Caveat (of the data set, not of the estimators): the BTS that logged the ``bts`` data updated its
    posterior during the week, while ``policy_source="prior"`` is BTS at the week's start.

    The estimators' intervals resample the random log's impressions; with ``refit`` (the default, as
    obp's example does) the click model is refitted on each resample, so DM's and DR's intervals
    include the model's own sampling noise. Without it (``ope.bootstrap``: faster, all in JAX) the
    model is held fixed and DM's interval is far too narrow: DM is then nearly constant.

    Args:
        n_boot: bootstrap resamples (estimates and truth).
        seed: seed of the bootstrap (and of the Monte Carlo of the policy).
        policy_source: ``"prior"`` or ``"empirical"`` (see ``obd.bts_policy``).
        n_sim: Monte Carlo draws for the prior policy.
        tau: Switch-DR's weight threshold.
        level: interval coverage.
        refit: refit the click model on each bootstrap resample.

    Returns:
        ``(figures, table)``: figures ``obd_<quantity>_<estimator>_<campaign>`` for quantity in
        ``estimate``, ``ci_low``, ``ci_high``, ``rel_error``, and ``obd_truth_<campaign>``,
        ``obd_truth_ci_low_<campaign>``, ``obd_truth_ci_high_<campaign>``; the table has one row per
        campaign and estimator with the same numbers.
    """
    key = jax.random.key(seed)
    rows: list[dict[str, Any]] = []
    for index, campaign in enumerate(obd.CAMPAIGNS):
        policy = obd.bts_policy(campaign, policy_source, n_sim=n_sim, seed=seed)
        campaign_key = jax.random.fold_in(key, index)
        rows += _campaign_rows(campaign, policy, campaign_key, n_boot, tau, level, refit)
    table = pd.DataFrame(rows)
    return _figures(table), table


def _campaign_rows(
    campaign: str, policy: np.ndarray, key: jax.Array, n_boot: int, tau: float, level: float, refit: bool
) -> list[dict[str, Any]]:
    """The standard check's rows for one campaign."""
    random_log = obd.load_log("random", campaign)
    bts_log = obd.load_log("bts", campaign)
    inputs = obd.ope_inputs(random_log, policy, obd.cross_fitted_q(random_log))
    estimates = estimate_all(inputs, tau)
    estimate_key, truth_key = jax.random.split(key)
    if refit:
        draws = refit_draws(random_log, policy, estimate_key, n_boot, tau)
        intervals = {name: percentile_interval(d, level) for name, d in draws.items()}
    else:
        intervals = bootstrap(inputs, estimate_key, n_boot, level, tau)
    truth = float(bts_log.click.mean())
    truth_low, truth_high = bootstrap_mean(bts_log.click, truth_key, n_boot, level)
    rows = []
    for name in ESTIMATORS:
        estimate = float(estimates[name][0])
        rows.append({
            "campaign": campaign, "estimator": name, "estimate": estimate,
            "ci_low": float(intervals[name][0][0]), "ci_high": float(intervals[name][1][0]),
            "truth": truth, "truth_ci_low": truth_low, "truth_ci_high": truth_high,
            "rel_error": relative_error(estimate, truth),
        })
    return rows


def refit_draws(
    log: obd.ObdLog, policy: np.ndarray, key: jax.Array, n_boot: int = 200, tau: float = DEFAULT_TAU
) -> dict[str, jax.Array]:
    """Every estimator on bootstrap resamples of a log, the click model refitted on each.

    Args:
        log: the log (resampled by impression, with replacement).
        policy: ``(n_items, N_POSITIONS)`` target policy.
        key: a JAX random key (draws the resampled rows).
        n_boot: resamples (>= 1).
        tau: Switch-DR's weight threshold.

    Returns:
        ``{name: (n_boot, 1) estimates}``.
    """
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 1:
        raise InputError("n_boot", f"must be an integer >= 1, got {n_boot!r}")
    rows = np.asarray(jax.random.randint(key, (n_boot, log.n), 0, log.n))
    draws: dict[str, list[jax.Array]] = {name: [] for name in ESTIMATORS}
    for picked in rows:
        sample = dataclasses.replace(
            log, item=log.item[picked], position=log.position[picked], click=log.click[picked],
            propensity=log.propensity[picked],
        )
        estimates = estimate_all(obd.ope_inputs(sample, policy, obd.cross_fitted_q(sample, rows=picked)), tau)
        for name in ESTIMATORS:
            draws[name].append(estimates[name])
    return {name: jnp.stack(values) for name, values in draws.items()}


def _figures(table: pd.DataFrame) -> dict[str, float]:
    """The standard check's figures from its table."""
    figures: dict[str, float] = {}
    for row in table.itertuples():
        suffix = f"{row.estimator}_{row.campaign}"
        for quantity in ("rel_error", "estimate", "ci_low", "ci_high"):
            figures[f"obd_{quantity}_{suffix}"] = float(getattr(row, quantity))
        figures[f"obd_truth_{row.campaign}"] = float(row.truth)
        figures[f"obd_truth_ci_low_{row.campaign}"] = float(row.truth_ci_low)
        figures[f"obd_truth_ci_high_{row.campaign}"] = float(row.truth_ci_high)
    return figures


# --- the real front --------------------------------------------------------------------------------


def standardise(x: np.ndarray, axis: int = 0) -> np.ndarray:
    """``(x - mean) / std`` along ``axis``; zero where the values do not vary.

    Args:
        x: values.
        axis: the axis to standardise along.

    Returns:
        The standardised values, shape of ``x``.
    """
    centred = x - x.mean(axis=axis, keepdims=True)
    std = x.std(axis=axis, keepdims=True)
    flat = std <= 1e-12 * np.maximum(np.abs(x).max(axis=axis, keepdims=True), 1e-300)
    return np.where(flat, 0.0, centred / np.where(flat, 1.0, std))


def click_scores(campaign: str, source: ClickScore) -> np.ndarray:
    """Click scores per (item, position) that steer the front's policies, before standardising.

    Args:
        campaign: ``"all"``, ``"men"`` or ``"women"``.
        source: ``"prior"``: the mean ``alpha / (alpha + beta)`` of ZOZOTOWN's production BTS prior
            (the click rate the platform believed before the logging week: knowledge from outside the
            sample, the same at every position); ``"bts"``: ``obd.fit_click_model`` on the ``bts`` log
            (out of sample for the random log that scores the policies); ``"random"``: the same model
            on the random log itself (in sample: the front's click estimates are then optimistic,
            because the policies favour items that happened to be clicked in the evaluation data).

    Returns:
        ``(n_items, N_POSITIONS)`` click rates.
    """
    if source == "prior":
        alpha, beta = obd.bts_prior(campaign)
        return np.repeat((alpha / (alpha + beta))[:, None], obd.N_POSITIONS, axis=1)
    if source in ("bts", "random"):
        return obd.fit_click_model(obd.load_log(source, campaign)).rates
    raise InputError("click_score", f"{source!r} is not one of prior, bts, random")


def front_policies(
    z_click: np.ndarray, z_second: np.ndarray, lambdas: np.ndarray, temperature: float
) -> np.ndarray:
    """``pi_lambda(a | pos) = softmax_a(((1 - lambda) z_click(a, pos) + lambda z_second(a)) / temperature)``.

    Args:
        z_click: ``(n_items, positions)`` standardised click scores.
        z_second: ``(n_items,)`` standardised secondary values.
        lambdas: ``(L,)`` weights in ``[0, 1]``.
        temperature: softmax temperature (> 0).

    Returns:
        ``(L, n_items, positions)``, each column summing to 1.
    """
    lam = jnp.asarray(lambdas, dtype=jnp.float32)[:, None, None]
    logits = ((1.0 - lam) * jnp.asarray(z_click)[None] + lam * jnp.asarray(z_second)[None, :, None]) / temperature
    return np.asarray(jax.nn.softmax(logits, axis=1), dtype=np.float64)


def _check_lambdas(lambdas: Sequence[float] | np.ndarray) -> np.ndarray:
    """Weights of the secondary objective: finite, in ``[0, 1]``, at least one."""
    try:
        lam = np.asarray(lambdas, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise InputError("lambda", f"not numeric ({exc})") from None
    if lam.size == 0:
        raise InputError("lambda", "no values given")
    bad = ~((lam >= 0.0) & (lam <= 1.0))
    if bad.any():
        raise InputError("lambda", f"{lam[np.argmax(bad)]} is outside [0, 1]")
    return lam


def real_front(
    lambdas: Sequence[float] | np.ndarray,
    campaign: str = "all",
    temperature: float = DEFAULT_TEMPERATURE,
    n_boot: int = 200,
    seed: int = 0,
    *,
    click_score: ClickScore = "prior",
    estimator: str = "dr",
    level: float = 0.95,
) -> pd.DataFrame:
    """A real click-versus-item-value front on the Open Bandit sample.

    Objective 1, the click rate per impression, is stochastic: each policy's is estimated off policy
    from the uniform-random log (IPS and DR, with bootstrap intervals; every policy uses the same
    resamples). Objective 2 is ``item_feature_0`` (``obd.item_values``), the data set's one numeric
    item attribute, standardised by ZOZO and otherwise undisclosed; it stands in for a price-like
    value the platform would like to raise. It is known exactly per item, so a policy's expected value
    per impression, ``sum_pos share(pos) sum_a pi(a | pos) value(a)`` over the random log's positions,
    is exact: all the front's uncertainty is on the click axis. (A category or long-tail share would be
    exact too, but the categorical features are hashed and have no order to trade against.)

    The policies are context free per position: ``pi_lambda(a | pos) = softmax(((1 - lambda)
    z_click(a, pos) + lambda z_second(a)) / temperature)``, with ``z`` the scores standardised over
    the items. The click scores come from ``click_scores(campaign, click_score)``; the default, the
    production prior's mean click rate, is not fitted on the random log that evaluates the policies.

    Args:
        lambdas: weights of objective 2, each in ``[0, 1]``.
        campaign: ``"all"``, ``"men"`` or ``"women"``.
        temperature: softmax temperature (> 0); lower concentrates the policies (larger weights).
        n_boot: bootstrap resamples.
        seed: bootstrap seed.
        click_score: ``"prior"``, ``"bts"`` or ``"random"`` (see ``click_scores``).
        estimator: ``"ips"`` or ``"dr"``: whose click estimate decides domination.
        level: interval coverage.

    Returns:
        One row per lambda: ``lambda``, ``value`` (exact objective 2), ``click_<est>``,
        ``click_<est>_low``, ``click_<est>_high`` for IPS and DR, ``ess`` (Kish effective sample size
        of the importance weights), ``non_dominated`` (by point estimates), ``dominated_with_confidence``
        (another point's value is no lower and its click interval lies entirely above this point's),
        and ``dominated_paired`` (the same, but with the paired bootstrap interval of the click
        difference above 0: sharper, since all policies share the resamples).
    """
    lam = _check_lambdas(lambdas)
    if not float(temperature) > 0.0:
        raise InputError("temperature", f"must be > 0, got {temperature}")
    if estimator not in FRONT_ESTIMATORS:
        raise InputError("estimator", f"{estimator!r} is not one of {', '.join(FRONT_ESTIMATORS)}")
    log = obd.load_log("random", campaign)
    values = obd.item_values(campaign)
    z_click = standardise(click_scores(campaign, click_score), axis=0)
    policies = front_policies(z_click, standardise(values), lam, float(temperature))
    q_rounds = obd.cross_fitted_q(log)
    key = jax.random.key(seed)
    rows, draws = [], []
    for lam_value, policy in zip(lam, policies, strict=True):
        inputs = obd.ope_inputs(log, policy, q_rounds)
        row, draw = _front_row(inputs, key, n_boot, level)
        row = {"lambda": float(lam_value), "value": _exact_value(log, policy, values), **row}
        rows.append(row)
        draws.append(draw[estimator])
    table = pd.DataFrame(rows)
    return _mark_domination(table, np.stack(draws), estimator, level)


def _front_row(inputs: OpeInputs, key: jax.Array, n_boot: int, level: float) -> tuple[dict, dict]:
    """One policy's click estimates, intervals and effective sample size; its bootstrap draws."""
    estimates = estimate_all(inputs)
    draws = bootstrap_draws(inputs, key, n_boot)
    row: dict[str, float] = {}
    for name in FRONT_ESTIMATORS:
        low, high = percentile_interval(draws[name][:, 0], level)
        row |= {f"click_{name}": float(estimates[name][0]), f"click_{name}_low": float(low),
                f"click_{name}_high": float(high)}
    w = np.asarray(inputs.weights, dtype=np.float64)
    row["ess"] = float(w.sum() ** 2 / np.sum(w**2))
    return row, {name: np.asarray(draws[name][:, 0]) for name in FRONT_ESTIMATORS}


def _exact_value(log: obd.ObdLog, policy: np.ndarray, values: np.ndarray) -> float:
    """Expected item value per impression over the log's positions (exact)."""
    per_position = values @ policy  # (positions,)
    return float(per_position[log.position].mean())


def _mark_domination(table: pd.DataFrame, draws: np.ndarray, estimator: str, level: float) -> pd.DataFrame:
    """Add the front's domination flags (``draws``: ``(L, B)`` paired bootstrap click estimates)."""
    click = table[f"click_{estimator}"].to_numpy()
    low = table[f"click_{estimator}_low"].to_numpy()
    high = table[f"click_{estimator}_high"].to_numpy()
    value = table["value"].to_numpy()
    tail = (1.0 - level) / 2.0
    n = len(table)
    dominated = np.zeros(n, dtype=bool)
    confident = np.zeros(n, dtype=bool)
    paired = np.zeros(n, dtype=bool)
    for i in range(n):
        for j in range(n):
            if j == i or value[j] < value[i]:
                continue
            dominated[i] |= click[j] >= click[i] and (click[j] > click[i] or value[j] > value[i])
            confident[i] |= high[i] < low[j]
            paired[i] |= np.quantile(draws[j] - draws[i], tail) > 0.0
    return table.assign(non_dominated=~dominated, dominated_with_confidence=confident, dominated_paired=paired)
