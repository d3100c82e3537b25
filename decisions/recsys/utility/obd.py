"""The Open Bandit Dataset sample (ZOZOTOWN): logs, the Bernoulli TS policy, a click model."""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from scipy.special import betaln

from decisions.errors import InputError
from decisions.recsys.utility.ope import OpeInputs

CAMPAIGNS = ("all", "men", "women")
"""The sample's campaigns."""
POLICIES = ("random", "bts")
"""The sample's logging policies: uniform random and Bernoulli Thompson sampling."""
N_ITEMS = {"all": 80, "men": 34, "women": 46}
"""Items per campaign."""
N_POSITIONS = 3
"""Slate positions (the files number them 1..3; ``ObdLog.position`` is 0-based)."""
N_SIM = 100_000
"""Default Monte Carlo draws for the BTS action distribution (obp's default ``n_sim``)."""
SIM_CHUNK = 250
"""Draws ranked at a time (JAX's Beta sampler is far faster in small batches on CPU)."""
STRENGTHS = 10.0 ** np.arange(0.0, 5.05, 0.1)
"""Prior strengths (pseudo-impressions) the click model's empirical Bayes fit chooses from;
the largest means no evidence of differences between items: full pooling."""
N_FOLDS = 3
"""Cross-fitting folds for the reward model (obp's Open Bandit example uses 3)."""
LOG_COLUMNS = ("item_id", "position", "click", "propensity_score")
"""Columns of the packaged logs."""

PolicySource = Literal["prior", "empirical"]


@dataclass(frozen=True, eq=False)
class ObdLog:
    """One logged sample: ``n`` impressions in time order (numpy arrays)."""

    policy: str
    campaign: str
    item: np.ndarray
    """``(n,)`` int, item shown, ``0 .. n_items - 1``."""
    position: np.ndarray
    """``(n,)`` int, slate position, 0-based."""
    click: np.ndarray
    """``(n,)`` float, 1 for a click."""
    propensity: np.ndarray
    """``(n,)`` float, the logging policy's probability of the item at that position."""
    n_items: int

    @property
    def n(self) -> int:
        """Impressions."""
        return int(self.item.shape[0])


def data_dir() -> Path:
    """The packaged data folder, ``decisions/recsys/utility/data/open_bandit``."""
    return Path(str(resources.files("decisions.recsys.utility") / "data" / "open_bandit"))


def _check_choice(field: str, value: str, choices: tuple[str, ...]) -> None:
    """``value`` must be one of ``choices``."""
    if value not in choices:
        raise InputError(field, f"{value!r} is not one of {', '.join(choices)}")


def load_log(policy: str, campaign: str, *, path: Path | str | None = None) -> ObdLog:
    """Read one logged sample and check every value.

    Args:
        policy: ``"random"`` or ``"bts"``.
        campaign: ``"all"``, ``"men"`` or ``"women"``.
        path: a CSV to read instead of the packaged ``<policy>_<campaign>.csv.gz`` (same columns).
    """
    _check_choice("policy", policy, POLICIES)
    _check_choice("campaign", campaign, CAMPAIGNS)
    file = Path(path) if path is not None else data_dir() / f"{policy}_{campaign}.csv.gz"
    frame = pd.read_csv(file, dtype=str, keep_default_na=False)
    n_items = N_ITEMS[campaign]
    item = _column(frame, file, "item_id", integer=True, low=0, high=n_items - 1)
    position = _column(frame, file, "position", integer=True, low=1, high=N_POSITIONS)
    click = _column(frame, file, "click", integer=True, low=0, high=1)
    propensity = _column(frame, file, "propensity_score", low=0.0, high=1.0, open_low=True)
    return ObdLog(policy, campaign, item.astype(np.int64), position.astype(np.int64) - 1, click, propensity, n_items)


def _column(
    frame: pd.DataFrame,
    file: Path,
    name: str,
    *,
    low: float,
    high: float,
    integer: bool = False,
    open_low: bool = False,
) -> np.ndarray:
    """One column as float64, each value checked; errors name the column and the data row (1-based)."""
    if name not in frame.columns:
        raise InputError(name, f"missing column in {file.name}")
    if len(frame) == 0:
        raise InputError(name, f"{file.name} has no rows")
    values = pd.to_numeric(frame[name].str.strip(), errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values)
    if integer:
        bad |= values != np.round(values)
    bad |= (values <= low) if open_low else (values < low)
    bad |= values > high
    if bad.any():
        row = int(np.argmax(bad))
        kind = "an integer" if integer else "a number"
        bounds = f"{'(' if open_low else '['}{low:g}, {high:g}]"
        raise InputError(
            name, f"row {row + 1} of {file.name}: {frame[name].iloc[row]!r} is not {kind} in {bounds}"
        )
    return values


def item_values(campaign: str) -> np.ndarray:
    """``item_feature_0`` of each item (``item_context.csv``), indexed by item id.

    ZOZO publishes it standardised (mean 0, standard deviation 1 over the campaign's items) and
    does not say what it measures; it is the one numeric item attribute of the data set.

    Args:
        campaign: ``"all"``, ``"men"`` or ``"women"``.

    Returns:
        ``(n_items,)`` float64.
    """
    _check_choice("campaign", campaign, CAMPAIGNS)
    frame = pd.read_csv(data_dir() / f"item_context_{campaign}.csv.gz")
    ids = frame["item_id"].to_numpy()
    if sorted(ids.tolist()) != list(range(N_ITEMS[campaign])):
        raise InputError("item_id", f"item_context_{campaign} does not list items 0..{N_ITEMS[campaign] - 1}")
    values = np.empty(N_ITEMS[campaign])
    values[ids] = frame["item_feature_0"].to_numpy(dtype=np.float64)
    return values


# --- the Bernoulli TS evaluation policy ------------------------------------------------------------


def bts_prior(campaign: str) -> tuple[np.ndarray, np.ndarray]:
    """ZOZOTOWN's production Beta prior per item (obp's ``conf/prior_bts.yaml``).

    Args:
        campaign: ``"all"``, ``"men"`` or ``"women"``.

    Returns:
        ``(alpha, beta)``, each ``(n_items,)``.
    """
    _check_choice("campaign", campaign, CAMPAIGNS)
    prior = json.loads((data_dir() / "prior_bts.json").read_text())[campaign]
    return np.asarray(prior["alpha"], dtype=np.float64), np.asarray(prior["beta"], dtype=np.float64)


@functools.partial(jax.jit, static_argnames=("n_chunks", "slate"))
def _slate_counts(alpha: jax.Array, beta: jax.Array, key: jax.Array, n_chunks: int, slate: int) -> jax.Array:
    """Times each item lands at each slate position over ``n_chunks * SIM_CHUNK`` Thompson draws."""

    def chunk(k: jax.Array) -> jax.Array:
        draws = jax.random.beta(k, alpha, beta, shape=(SIM_CHUNK, alpha.shape[0]))
        _, top = jax.lax.top_k(draws, slate)  # (SIM_CHUNK, slate) items, best first
        return jax.nn.one_hot(top, alpha.shape[0], dtype=jnp.float32).sum(axis=0).T  # (items, slate)

    return jax.lax.map(chunk, jax.random.split(key, n_chunks)).sum(axis=0)


def thompson_distribution(
    alpha: np.ndarray, beta: np.ndarray, *, n_sim: int = N_SIM, seed: int = 0, slate: int = N_POSITIONS
) -> np.ndarray:
    """``(n_items, slate)`` ``pi(item | position)`` of context-free Bernoulli TS by Monte Carlo.

    As obp's ``compute_batch_action_dist``: each draw samples ``Beta(alpha_a, beta_a)`` for every item
    and shows the item ranked ``k`` at position ``k``; ``n_sim`` is rounded up to a multiple of
    ``SIM_CHUNK``. Each column sums to 1.
    """
    if n_sim < 1:
        raise InputError("n_sim", f"must be >= 1, got {n_sim}")
    n_chunks = math.ceil(n_sim / SIM_CHUNK)
    a = jnp.asarray(alpha, dtype=jnp.float32)
    b = jnp.asarray(beta, dtype=jnp.float32)
    counts = _slate_counts(a, b, jax.random.key(seed), n_chunks=n_chunks, slate=slate)
    return np.asarray(counts, dtype=np.float64) / (n_chunks * SIM_CHUNK)


@functools.lru_cache(maxsize=16)
def _prior_policy(campaign: str, n_sim: int, seed: int) -> np.ndarray:
    """Cached Monte Carlo of the BTS policy with the production prior."""
    alpha, beta = bts_prior(campaign)
    table = thompson_distribution(alpha, beta, n_sim=n_sim, seed=seed)
    table.setflags(write=False)
    return table


def empirical_policy(log: ObdLog) -> np.ndarray:
    """Per-position frequency of each item in a log: the logging policy averaged over the period.

    Args:
        log: a log (the ``bts`` log gives BTS as it actually ran, its posterior updated over the week).

    Returns:
        ``(n_items, N_POSITIONS)``, each column summing to 1.
    """
    counts = np.zeros((log.n_items, N_POSITIONS))
    np.add.at(counts, (log.item, log.position), 1.0)
    return counts / counts.sum(axis=0, keepdims=True)


def bts_policy(campaign: str, source: PolicySource = "prior", *, n_sim: int = N_SIM, seed: int = 0) -> np.ndarray:
    """The BTS evaluation policy ``pi(item | position)``: ``(n_items, N_POSITIONS)``, columns summing to 1.

    ``source="prior"``: Thompson sampling from ZOZOTOWN's production prior by ``n_sim`` Monte Carlo
    draws (as obp evaluates BTS); ``"empirical"``: the per-position item frequencies of the ``bts``
    log (BTS averaged over the week; exact). The array is read-only.
    """
    _check_choice("campaign", campaign, CAMPAIGNS)
    if source == "prior":
        return _prior_policy(campaign, int(n_sim), int(seed))
    if source == "empirical":
        return empirical_policy(load_log("bts", campaign))
    raise InputError("source", f"{source!r} is not one of prior, empirical")


# --- the click model -------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ClickModel:
    """Click rate per (item, position), shrunk toward the position's rate."""

    rates: np.ndarray
    """``(n_items, N_POSITIONS)`` smoothed click rates (the posterior means)."""
    position_rate: np.ndarray
    """``(N_POSITIONS,)`` each position's pooled click rate (the prior means)."""
    strength: float
    """Prior strength in pseudo-impressions; ``inf`` when the data show no item differences."""


def _cell_counts(log: ObdLog, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Impressions and clicks per (item, position) over ``rows``."""
    shown = np.zeros((log.n_items, N_POSITIONS))
    clicks = np.zeros((log.n_items, N_POSITIONS))
    np.add.at(shown, (log.item[rows], log.position[rows]), 1.0)
    np.add.at(clicks, (log.item[rows], log.position[rows]), log.click[rows])
    return shown, clicks


def _log_marginal(shown: np.ndarray, clicks: np.ndarray, mean: np.ndarray, strength: float) -> float:
    """Beta-binomial log marginal likelihood of the cells (binomial coefficients dropped)."""
    a, b = mean * strength, (1.0 - mean) * strength
    return float(np.sum(betaln(clicks + a, shown - clicks + b) - betaln(a, b)))


def fit_click_model(log: ObdLog, rows: np.ndarray | None = None, strength: float | None = None) -> ClickModel:
    """Empirical-Bayes click rates per (item, position).

    Each position ``p`` has a prior ``Beta(m_p s, (1 - m_p) s)`` centred on its pooled click rate
    ``m_p``; the strength ``s`` (shared by the positions) maximises the beta-binomial marginal
    likelihood over ``STRENGTHS``. A cell with ``n`` impressions and ``c`` clicks gets the posterior
    mean ``(c + m_p s) / (n + s)``. When the largest strength wins, the data show no differences
    between items and every cell gets its position's rate (full pooling). With ~40 clicks per
    10,000 impressions the fit shrinks hard: the sample says little about individual items.

    Args:
        log: the log to fit on (its logging probabilities do not matter: the model is per cell).
        rows: the rounds to use (all when ``None``).
        strength: a prior strength to use instead of choosing one (``inf``: full pooling).
    """
    use = np.arange(log.n) if rows is None else np.asarray(rows)
    shown, clicks = _cell_counts(log, use)
    per_position = shown.sum(axis=0)
    mean = clicks.sum(axis=0) / np.maximum(per_position, 1.0)
    mean = np.clip(mean, 1e-6, 1.0 - 1e-6)  # a position with no clicks still has a proper prior
    if strength is None:
        best = int(np.argmax([_log_marginal(shown, clicks, mean, s) for s in STRENGTHS]))
        strength = math.inf if best == len(STRENGTHS) - 1 else float(STRENGTHS[best])
    if math.isinf(strength):
        return ClickModel(np.broadcast_to(mean, shown.shape).copy(), mean, math.inf)
    return ClickModel((clicks + mean * strength) / (shown + strength), mean, strength)


def cross_fitted_q(
    log: ObdLog, n_folds: int = N_FOLDS, rows: np.ndarray | None = None, strength: float | None = None
) -> np.ndarray:
    """``(n, n_items)``: for each round, the click model of every item at its position, fitted without its fold.

    Round ``i`` is in fold ``rows[i] % n_folds`` (``rows``: the row each round comes from, default
    ``0 .. n - 1``, so folds interleave and a resample keeps an impression's copies in one fold);
    ``n_folds=1`` fits and predicts on the whole log. ``strength`` fixes every fold's prior
    strength (each fold chooses its own when ``None``).
    """
    if n_folds < 1:
        raise InputError("n_folds", f"must be >= 1, got {n_folds}")
    fold = (np.arange(log.n) if rows is None else np.asarray(rows)) % n_folds
    q = np.empty((log.n, log.n_items))
    for k in range(n_folds):
        held = fold == k
        model = fit_click_model(log, np.flatnonzero(~held) if n_folds > 1 else None, strength)
        q[held] = model.rates[:, log.position[held]].T
    return q


def ope_inputs(log: ObdLog, policy: np.ndarray, q_rounds: np.ndarray) -> OpeInputs:
    """OPE inputs for a context-free per-position policy on a log (rewards: clicks).

    Args:
        log: the log the policy is evaluated on.
        policy: ``(n_items, N_POSITIONS)`` target ``pi(item | position)``.
        q_rounds: ``(n, n_items)`` click model per round (``cross_fitted_q``).

    Returns:
        The inputs, one objective (click).
    """
    if policy.shape != (log.n_items, N_POSITIONS):
        raise InputError("policy", f"shape {policy.shape} is not (n_items, positions) = {(log.n_items, N_POSITIONS)}")
    target = policy[:, log.position].T  # (n, n_items)
    return OpeInputs.from_policy(log.click, log.item, log.propensity, target, q_rounds)
