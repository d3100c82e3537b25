"""A two-sided CUSUM (Page's cumulative sum) on standardised residuals, to tell when realised
values part from the expected ones a deployed policy promised.

With ``z_i = (realised_i - expected_i) / scale_i`` (``standardise``), reference ``k`` and
threshold ``h``::

    S+_i = max(0, S+_{i-1} + z_i - k)      S-_i = max(0, S-_{i-1} - z_i - k)

an alarm is raised when either exceeds ``h``, and both then restart from 0. ``scan`` runs a whole
series (vectorised between alarms), ``MonitorState.update`` one outcome at a time, with a state of
two floats and a count that is plain JSON. ``decisions.core.monitor_design`` finds ``h`` for a
stated false-alarm rate and the delay to detect a shift.

A drift of the residuals' spread leaves their mean at 0: ``scale_score`` is the input of a second,
upper CUSUM that moves when the spread grows, and ``decisions.core.monitor_pair`` runs both
channels on the same residuals under one false-alarm rate.

Written by hand rather than with river's PageHinkley: calibrating ``h`` takes millions of CUSUM
steps, vectorised, which a per-observation Python loop cannot give.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike, NDArray

from decisions.core.strict_input import float_problem, shown
from decisions.errors import InputError

DEFAULT_K = 0.5
"""The reference value: half the shift (in scale units) the monitor is tuned to detect."""

FloatArray = NDArray[np.float64]


def check_k(k: float, field: str = "k") -> float:
    """``k`` as a float; raises ``InputError(field, ...)`` unless it is a finite number at least 0."""
    value = finite_number(field, k)
    if value < 0:
        raise InputError(field, f"{value:g} is negative; the reference value is at least 0")
    return value


def check_h(h: float, field: str = "h") -> float:
    """``h`` as a float; raises ``InputError(field, ...)`` unless it is a finite number above 0."""
    value = finite_number(field, h)
    if value <= 0:
        raise InputError(field, f"{value:g} is not above 0; the threshold must be positive")
    return value


def finite_number(field: str, value: object) -> float:
    """``value`` as a finite float, or ``InputError(field, ...)``."""
    problem = float_problem(value, float64=True)
    if problem is None and not isinstance(value, numbers.Real):
        problem = f"expected a number, got {shown(value)}"
    if problem:
        raise InputError(field, problem)
    return float(value)  # type: ignore[arg-type]  # a real number, checked above


def finite_series(field: str, values: ArrayLike, *, length: int | None = None) -> FloatArray:
    """``values`` as a 1-D float64 array of finite numbers (of ``length`` when given), or
    ``InputError(field, ...)`` naming the first bad decision."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(field, "expected a sequence of numbers") from None
    array = np.atleast_1d(array)
    if array.ndim != 1:
        raise InputError(field, f"expected one series, got an array of shape {array.shape}")
    if length is not None and array.size != length:
        raise InputError(field, f"has {array.size} values, expected {length}")
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise InputError(field, f"value {array[bad[0]]} at decision {bad[0]} is not finite")
    return array


@dataclass(frozen=True)
class MonitorState:
    """The CUSUM after the outcomes recorded so far: the two statistics and how many outcomes
    have been recorded since the last alarm (or the start). ``to_json`` / ``from_json`` keep it."""

    s_plus: float = 0.0
    s_minus: float = 0.0
    count: int = 0

    def update(self, z: float, *, h: float, k: float = DEFAULT_K) -> tuple[MonitorState, bool]:
        """The state after one more standardised residual ``z``, and whether it raised an alarm
        (after which the state restarts at 0). The side of an alarm is the sign of its ``z``."""
        k, h = check_k(k), check_h(h)
        value = finite_number("z", z)
        s_plus = max(0.0, self.s_plus + value - k)
        s_minus = max(0.0, self.s_minus - value - k)
        if s_plus > h or s_minus > h:
            return MonitorState(), True
        return MonitorState(s_plus, s_minus, self.count + 1), False

    def to_json(self) -> dict[str, float | int]:
        """The state as a plain JSON object."""
        return {"s_plus": self.s_plus, "s_minus": self.s_minus, "count": self.count}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> MonitorState:
        """The state ``to_json`` wrote; ``InputError`` naming the bad key otherwise."""
        (s_plus, s_minus), count = read_state(data, ("s_plus", "s_minus"))
        return cls(s_plus, s_minus, count)


def read_state(data: Mapping[str, object], keys: tuple[str, ...]) -> tuple[list[float], int]:
    """The CUSUM statistics ``keys`` (each at least 0, missing: 0) and the ``count`` of a state's JSON
    object; ``InputError("state.<key>", ...)`` for a bad or unknown key."""
    if not isinstance(data, Mapping):
        raise InputError("state", f"expected a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - {*keys, "count"})
    if unknown:
        raise InputError(f"state.{unknown[0]}", "unknown key")
    stats = []
    for key in keys:
        value = finite_number(f"state.{key}", data.get(key, 0.0))
        if value < 0:
            raise InputError(f"state.{key}", f"{value:g} is negative; a CUSUM statistic is at least 0")
        stats.append(value)
    count = data.get("count", 0)
    if isinstance(count, bool) or not isinstance(count, int | np.integer) or count < 0:
        raise InputError("state.count", f"expected a whole number at least 0, got {count!r}")
    return stats, int(count)


@dataclass(frozen=True)
class MonitorResult:
    """``scan``'s answer for one series of ``n`` decisions.

    ``s_plus`` and ``s_minus`` are the statistics after each decision (at an alarm, the value that
    crossed ``h``; the next decision starts from 0). ``alarms`` are the indices of the alarms,
    ``sides`` their sides (+1: realised above expected, -1: below), ``first_alarm`` the first index
    or None, and ``state`` the state after the last decision, to go on streaming from.
    """

    s_plus: FloatArray
    s_minus: FloatArray
    alarms: NDArray[np.int64]
    sides: NDArray[np.int64]
    first_alarm: int | None
    state: MonitorState


def lindley(steps: FloatArray, start: FloatArray | float) -> FloatArray:
    """``S_t = max(0, S_{t-1} + steps_t)`` from ``S_0 = start``, along the last axis."""
    return reflected(np.cumsum(steps, axis=-1), start)


def reflected(walk: FloatArray, start: FloatArray | float) -> FloatArray:
    """The Lindley recursion of the steps whose cumulative sum is ``walk`` (along the last axis),
    from ``start`` (one per row), in closed form: ``S_t = C_t - min(-start, min_{s<=t} C_s)``."""
    floor = np.minimum(walk, -np.asarray(start, dtype=np.float64)[..., None])
    return walk - np.minimum.accumulate(floor, axis=-1)


_FIRST_WINDOW = 64  # decisions looked at past the last alarm before the window grows


def scan(z: ArrayLike, *, h: float, k: float = DEFAULT_K, state: MonitorState | None = None) -> MonitorResult:
    """The two-sided CUSUM of the standardised residuals ``z`` (from ``state``, or from 0), with
    its alarms; equal to ``MonitorState.update`` applied step by step."""
    k, h = check_k(k), check_h(h)
    series = finite_series("z", z)
    state = state or MonitorState()
    run = run_cusums(
        np.stack([series - k, -series - k]),
        np.array([h, h]),
        np.array([state.s_plus, state.s_minus]),
        state.count,
    )
    return MonitorResult(
        s_plus=run.paths[0],
        s_minus=run.paths[1],
        alarms=run.alarms,
        sides=np.where(run.crossed == 0, 1, -1).astype(np.int64),
        first_alarm=int(run.alarms[0]) if run.alarms.size else None,
        state=MonitorState(float(run.last[0]), float(run.last[1]), run.count),
    )


@dataclass(frozen=True)
class CusumRun:
    """``run_cusums``' answer: the statistics after each decision (one row each), the alarms'
    indices, the row that crossed at each, and the statistics and count after the last decision."""

    paths: FloatArray
    alarms: NDArray[np.int64]
    crossed: NDArray[np.int64]
    last: FloatArray
    count: int


def run_cusums(steps: FloatArray, limits: FloatArray, start: FloatArray, count: int) -> CusumRun:
    """CUSUMs ``S_r,t = max(0, S_r,t-1 + steps[r, t])`` run together from ``start``, vectorised
    between alarms. An alarm is raised when any ``S_r`` exceeds ``limits[r]``; its crossed row is the
    one farthest past its limit (relative to it), and every row then restarts from 0."""
    rows, n = steps.shape
    paths = np.zeros((rows, n))
    alarms: list[int] = []
    crossed: list[int] = []
    begin, last, window = 0, np.asarray(start, dtype=np.float64), _FIRST_WINDOW
    while begin < n:
        piece = lindley(steps[:, begin : begin + window], last)
        hits = np.flatnonzero((piece > limits[:, None]).any(axis=0))
        stop = int(hits[0]) + 1 if hits.size else piece.shape[1]
        paths[:, begin : begin + stop] = piece[:, :stop]
        if hits.size:
            alarms.append(begin + stop - 1)
            crossed.append(int(np.argmax(piece[:, stop - 1] / limits)))
            last, count = np.zeros(rows), 0
            window = max(_FIRST_WINDOW, 2 * stop)
        else:
            last, count = piece[:, -1].copy(), count + stop
            window *= 2
        begin += stop
    return CusumRun(
        paths, np.asarray(alarms, dtype=np.int64), np.asarray(crossed, dtype=np.int64), last, count
    )


SCALE_SCORE_MEAN = 2**0.25 * math.gamma(0.75) / math.sqrt(math.pi)
"""``E sqrt|Z|`` for ``Z ~ N(0, 1)``: ``0.8222...``."""

SCALE_SCORE_SD = math.sqrt(math.sqrt(2.0 / math.pi) - SCALE_SCORE_MEAN**2)
"""The standard deviation of ``sqrt|Z|`` for ``Z ~ N(0, 1)``: ``0.3492...``."""

DEFAULT_K_SCALE = 0.5
"""The scale channel's reference value: about half the rise of its mean when the spread doubles."""


def scale_score(z: ArrayLike) -> FloatArray:
    """Hawkins' score ``(sqrt|z| - 0.8222) / 0.3492`` of standardised residuals, the scale channel's
    input: mean 0 and variance 1 on N(0, 1) residuals, mean ``2.355 (sqrt(r) - 1)`` when the
    spread is multiplied by ``r`` (a doubling: 0.975), and nearly normal.
    Why: bounded below (z = 0 gives -2.355, log|z| -inf) and growing as sqrt|z|, not z^2, against outliers."""
    return (np.sqrt(np.abs(np.asarray(z, dtype=np.float64))) - SCALE_SCORE_MEAN) / SCALE_SCORE_SD


MAD_TO_SIGMA = 1.0 / NormalDist().inv_cdf(0.75)
"""``1.4826...``: the MAD of normal draws times this is their standard deviation."""

RELATIVE_FLOOR = 1e-3
"""The default floor of a robust scale, as a fraction of the decision's ``|expected|``."""

_TINY_SCALE = 1e-12


def standardise(
    realised: ArrayLike,
    expected: ArrayLike,
    interval_low: ArrayLike | None = None,
    interval_high: ArrayLike | None = None,
    scale: ArrayLike | float | None = None,
    *,
    coverage: float = 0.9,
    window: int = 200,
    warmup: int = 10,
    scale_floor: float | None = None,
) -> FloatArray:
    """Standardised residuals ``(realised - expected) / scale`` of a series of decisions, in order.

    Each decision's scale is, first that applies:

    - ``scale`` (one positive number, or one per decision);
    - its interval: ``[interval_low, interval_high]`` read as a central interval of probability
      ``coverage`` of a normal prediction, so ``sigma = width / (2 * z_{(1 + coverage) / 2})``;
      a decision without one has NaN in both;
    - the robust scale of the residuals before it: ``1.4826 * MAD`` of the last ``window`` of them,
      at least ``scale_floor`` (by default ``1e-3 * |expected|``, and never below 1e-12). The
      first ``warmup`` decisions have no history to scale by and read as on target (``z = 0``).

    Each ``z_i`` depends on decisions up to ``i`` only, so a series standardised whole or as
    it grows gives the same values. ``InputError`` names the bad argument.
    """
    r = finite_series("realised", realised)
    e = finite_series("expected", expected, length=r.size)
    residual = r - e
    if scale is not None:
        sigma = _given_scale(scale, r.size)
    else:
        sigma = np.full(r.size, np.nan)
        if interval_low is not None or interval_high is not None:
            sigma = _interval_sigma(interval_low, interval_high, r.size, coverage)
        missing = np.isnan(sigma)
        if missing.any():
            floor = _floor(scale_floor, e)
            sigma[missing] = robust_scale(residual, window=window, warmup=warmup, floor=floor)[missing]
    with np.errstate(invalid="ignore"):
        z = residual / sigma
    return np.where(np.isnan(sigma), 0.0, z)


def _given_scale(scale: ArrayLike | float, n: int) -> FloatArray:
    """The positive scale given, one per decision."""
    values = np.broadcast_to(np.asarray(scale, dtype=np.float64), (n,)) if np.ndim(scale) == 0 else scale
    sigma = finite_series("scale", values, length=n)
    if (sigma <= 0).any():
        bad = int(np.flatnonzero(sigma <= 0)[0])
        raise InputError("scale", f"{sigma[bad]:g} at decision {bad} is not above 0")
    return np.array(sigma)


def _interval_sigma(low: ArrayLike | None, high: ArrayLike | None, n: int, coverage: float) -> FloatArray:
    """Normal sigmas from central intervals of probability ``coverage`` (NaN where none)."""
    if low is None or high is None:
        raise InputError("interval_low" if low is None else "interval_high", "missing: give both ends")
    cover = finite_number("coverage", coverage)
    if not 0.0 < cover < 1.0:
        raise InputError("coverage", f"{cover:g} is not a probability strictly between 0 and 1")
    lo, hi = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
    for field, ends in (("interval_low", lo), ("interval_high", hi)):
        finite_series(field, np.where(np.isnan(ends), 0.0, ends), length=n)  # NaN: no interval
    if (np.isnan(lo) != np.isnan(hi)).any():
        bad = int(np.flatnonzero(np.isnan(lo) != np.isnan(hi))[0])
        raise InputError("interval_high", f"decision {bad} has one end of its interval only")
    width = hi - lo
    if (width <= 0).any():
        bad = int(np.flatnonzero(width <= 0)[0])
        raise InputError(
            "interval_high", f"{hi[bad]:g} at decision {bad} is not above interval_low {lo[bad]:g}"
        )
    return width / (2.0 * NormalDist().inv_cdf((1.0 + cover) / 2.0))


def _floor(scale_floor: float | None, expected: FloatArray) -> FloatArray:
    """The floor of the robust scale, one per decision."""
    if scale_floor is None:
        return np.maximum(RELATIVE_FLOOR * np.abs(expected), _TINY_SCALE)
    value = finite_number("scale_floor", scale_floor)
    if value <= 0:
        raise InputError("scale_floor", f"{value:g} is not above 0")
    return np.full(expected.shape, value)


def robust_scale(residual: FloatArray, *, window: int, warmup: int, floor: FloatArray) -> FloatArray:
    """``max(floor_i, 1.4826 * MAD(residual[max(0, i - window):i]))`` for each decision ``i``;
    NaN for the first ``warmup`` decisions."""
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 2:
        raise InputError("warmup", f"expected a whole number at least 2, got {warmup!r}")
    if isinstance(window, bool) or not isinstance(window, int) or window < warmup:
        raise InputError("window", f"expected a whole number at least warmup ({warmup}), got {window!r}")
    n = residual.size
    mad = np.full(n, np.nan)
    for i in range(warmup, min(window, n)):
        mad[i] = _mad(residual[None, :i])[0]
    if n > window:
        rows = np.lib.stride_tricks.sliding_window_view(residual, window)[: n - window]
        for start in range(0, rows.shape[0], 2048):
            mad[window + start : window + start + 2048] = _mad(rows[start : start + 2048])
    return np.maximum(MAD_TO_SIGMA * mad, floor)  # NaN stays NaN


def _mad(rows: FloatArray) -> FloatArray:
    """The median absolute deviation from the median of each row."""
    centre = np.median(rows, axis=1, keepdims=True)
    return np.median(np.abs(rows - centre), axis=1)
