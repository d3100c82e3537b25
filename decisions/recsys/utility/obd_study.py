"""Off-policy evaluation on the Open Bandit sample: the standard check and a real two-objective front."""

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

    Per impression and position, context free (obp's Open Bandit example): the target is
    ``obd.bts_policy(campaign, policy_source)``, the reward model ``obd.cross_fitted_q``; the truth is
    the mean click of the whole ``bts`` log, with its bootstrap interval. With ``refit`` the click
    model is refitted on each resample (:func:`refit_draws`), else held fixed (``ope.bootstrap``).

    Returns ``(figures, table)``: ``obd_<quantity>_<estimator>_<campaign>`` for ``estimate``,
    ``ci_low``, ``ci_high``, ``rel_error``, and ``obd_truth[_ci_low|_ci_high]_<campaign>``; the
    table has one row per campaign and estimator with the same numbers.
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
    """``{name: (n_boot, 1) estimates}``: every estimator on bootstrap resamples of ``log``, the click model refitted on each.

    Each refit keeps the prior strength the full log's fit chose (``obd.fit_click_model(log)``):
    re-choosing it on a resample would shift DM's draws away from the point estimate.
    """
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 1:
        raise InputError("n_boot", f"must be an integer >= 1, got {n_boot!r}")
    rows = np.asarray(jax.random.randint(key, (n_boot, log.n), 0, log.n))
    strength = obd.fit_click_model(log).strength
    draws: dict[str, list[jax.Array]] = {name: [] for name in ESTIMATORS}
    for picked in rows:
        sample = dataclasses.replace(
            log, item=log.item[picked], position=log.position[picked], click=log.click[picked],
            propensity=log.propensity[picked],
        )
        q_rounds = obd.cross_fitted_q(sample, rows=picked, strength=strength)
        estimates = estimate_all(obd.ope_inputs(sample, policy, q_rounds), tau)
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
    """``(L, n_items, positions)``: ``pi_lambda(a | pos) = softmax_a(((1 - lambda) z_click(a, pos) + lambda z_second(a)) / temperature)``."""
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

    The click rate per impression is estimated off policy from the uniform-random log (IPS and DR,
    the same bootstrap resamples for every policy); the value, ``item_feature_0``
    (``obd.item_values``), is exact. ``pi_lambda(a | pos) = softmax(((1 - lambda) z_click(a, pos) +
    lambda z_value(a)) / temperature)``, ``z`` standardised over the items.

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
