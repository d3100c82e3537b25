"""Designing the CUSUM monitor of ``decisions.core.monitor`` by simulation: the threshold ``h``
for a stated in-control average run length (decisions between false alarms), the run length to
catch a mean shift, and both in words for a page.

Run lengths are zero-state (the statistic starts at 0, as it does after an alarm, so false alarms
come once per in-control run length on average) and estimated on ``chains`` seeded series of
N(shift, 1) residuals, simulated together and vectorised over time, up to a horizon: the estimate
is the decisions seen (up to an alarm or the horizon) over the alarms, the censored maximum
likelihood estimate of an exponential run length. The series' running peak of ``max(S+, S-)``
does not depend on ``h``, so one simulation tabulates the run length at every ``h`` of a grid,
and ``threshold_for`` bisects that monotone table. Answers are deterministic (seeded) and cached.

The scale channel (the upper CUSUM of ``scale_score(z)``) is calibrated the same way, on the same
transform of N(0, 1) draws; a shift of its residuals is N(shift, ratio^2). The pair of channels of
``decisions.core.monitor_pair`` is calibrated jointly: each channel alone at ``2 * arl0`` (the
Bonferroni split) fixes the ratio of the two thresholds, and one simulation of the running peak of
``max(max(S+, S-), S_scale * h_mean / h_scale)`` scales the pair so the combined in-control run
length (to the first alarm of either channel) is ``arl0``.

Residuals in the field are rarely independent N(0, 1): an ``InControl`` design draws the simulated
residuals from a period in control instead (a moving-block bootstrap, each clipped to ``±clip``), so the
stated false-alarm rate holds on residuals with that period's autocorrelation and tails.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from decisions.core.monitor import (
    DEFAULT_K,
    DEFAULT_K_SCALE,
    FloatArray,
    check_h,
    check_k,
    finite_number,
    finite_series,
    lindley,
    reflected,
    scale_score,
)
from decisions.core.strict_input import SEED_MAX, shown
from decisions.errors import InputError

ARL0_MAX = 10_000
"""The longest in-control run length ``threshold_for`` calibrates (its cost grows with it)."""

CHAINS = 4000
"""Series simulated by default: the estimated run lengths are within about 2% (one standard error)."""

H_STEP = 1e-3
"""The grid of thresholds ``threshold_for`` answers on."""

SHIFT_MAX = 20.0
"""The largest mean shift (in scale units) ``expected_delay`` simulates."""

RATIO_MAX = 10.0
"""The largest factor of the residuals' spread ``expected_delay`` and ``pair_delay`` simulate."""

CHANNELS = ("mean", "scale")
"""The channels: the two-sided CUSUM of ``z``, and the upper CUSUM of ``scale_score(z)``."""

Design = tuple[float, float, float, float]
"""``(k_mean, k_scale, w_mean, w_scale)``: the statistic simulated is ``max(w_mean * max(S+, S-),
w_scale * S_scale)``, a channel of weight 0 left out."""

CLIP = 3.0
"""By default an ``InControl`` design winsorises residuals to ``[-CLIP, CLIP]`` (a robust CUSUM): one wild
outcome moves a statistic by at most ``CLIP - k``, not to an alarm on its own."""


@dataclass(frozen=True)
class InControl:
    """Standardised residuals of a period in control (say the training period's), resampled in blocks of
    ``block`` consecutive decisions (a moving-block bootstrap, which keeps their autocorrelation and
    their distribution) in place of N(0, 1) draws, each winsorised to ``[-clip, clip]`` as the monitored
    residuals are. ``InputError`` names a bad field."""

    residuals: tuple[float, ...]
    block: int
    clip: float = CLIP

    def __post_init__(self) -> None:
        values = finite_series("residuals", self.residuals)
        if isinstance(self.block, bool) or not isinstance(self.block, int | np.integer) or self.block < 1:
            raise InputError("block", f"expected a whole number at least 1, got {self.block!r}")
        if values.size < 2 * self.block:
            raise InputError("residuals", f"has {values.size} values, fewer than two blocks of {self.block}")
        if finite_number("clip", self.clip) <= 0:
            raise InputError("clip", f"{self.clip:g} is not above 0")
        object.__setattr__(self, "residuals", tuple(float(v) for v in values))

    def clipped(self, z: FloatArray) -> FloatArray:
        """``z`` winsorised to ``[-clip, clip]``."""
        return np.clip(z, -self.clip, self.clip)

    def words(self) -> str:
        """The calibration in words, for a page."""
        return (f"calibrated on {len(self.residuals):,} in-control residuals resampled in blocks of {self.block} "
                f"decisions, each residual clipped to ±{self.clip:g}")


_BLOCK = 256  # decisions simulated at a time
_PEAK_MAX = 1e3  # peaks above this count as this on the threshold grid
_DELAY_HORIZON_MAX = 16_384  # decisions simulated at most for a delay


def threshold_for(
    arl0: float, k: float = DEFAULT_K, *, channel: str = "mean", chains: int = CHAINS, seed: int = 0
) -> float:
    """The threshold ``h`` (on a grid of ``H_STEP``) whose in-control average run length on N(0, 1)
    residuals is ``arl0`` decisions: one false alarm per ``arl0`` decisions on average. ``channel``
    is "mean" (the two-sided CUSUM of ``z``) or "scale" (the upper CUSUM of ``scale_score(z)``).

    Raises:
        InputError: ``arl0`` below 2 or above ``ARL0_MAX``, or below the run length ``k`` alone
            gives; ``k`` negative; ``channel``, ``chains`` or ``seed`` bad.
    """
    arl, design = _check_arl0(arl0), _channel_design(channel, check_k(k))
    return _threshold(arl, design, _check_chains(chains), _check_seed(seed))


def expected_delay(
    shift: float,
    *,
    h: float,
    k: float = DEFAULT_K,
    chains: int = CHAINS,
    seed: int = 0,
    channel: str = "mean",
    ratio: float = 1.0,
) -> float:
    """The average run length, in decisions and counting the alarm's own, of one ``channel``'s
    monitor started at 0 when the residuals are N(``shift``, ``ratio``^2): their mean moved by
    ``shift`` scale units (either sign), their spread multiplied by ``ratio`` (``shift`` 0, ``ratio`` 1: the
    in-control run length). Estimates beyond a few thousand decisions are rough; inf if no series alarmed.

    Raises:
        InputError: ``shift`` not finite or beyond ``SHIFT_MAX``; ``ratio`` not in (0, ``RATIO_MAX``];
            ``h``, ``k``, ``channel``, ``chains`` or ``seed`` bad.
    """
    move, spread = _check_shift(shift), _check_ratio(ratio)
    design = _channel_design(channel, check_k(k))
    return _delay(move, spread, check_h(h), design, _check_chains(chains), _check_seed(seed))


def pair_thresholds(
    arl0: float,
    *,
    k_mean: float = DEFAULT_K,
    k_scale: float = DEFAULT_K_SCALE,
    chains: int = CHAINS,
    seed: int = 0,
    in_control: InControl | None = None,
) -> tuple[float, float]:
    """``(h_mean, h_scale)`` of the two channels run together on the same residuals, whose combined
    in-control average run length (to the first alarm of either) on N(0, 1) residuals (or on
    ``in_control``'s, resampled and clipped) is ``arl0``: their ratio is that of each channel alone at
    ``2 * arl0``, and ``h_mean`` is on the ``H_STEP`` grid.

    Raises:
        InputError: ``arl0`` out of [2, ``ARL0_MAX``] or below what the ``k`` give; ``k_mean``,
            ``k_scale``, ``chains``, ``seed`` or ``in_control`` bad.
    """
    arl = _check_arl0(arl0)
    ks = (check_k(k_mean, "k_mean"), check_k(k_scale, "k_scale"))
    return _pair(arl, *ks, _check_chains(chains), _check_seed(seed), _check_in_control(in_control))


def pair_delay(
    shift: float = 0.0,
    ratio: float = 1.0,
    *,
    h_mean: float,
    h_scale: float,
    k_mean: float = DEFAULT_K,
    k_scale: float = DEFAULT_K_SCALE,
    chains: int = CHAINS,
    seed: int = 0,
    in_control: InControl | None = None,
) -> float:
    """``expected_delay`` of the two channels run together: the average run length to the first alarm
    of either, started at 0, on N(``shift``, ``ratio``^2) residuals (or ``in_control``'s, resampled and
    clipped, times ``ratio`` plus ``shift``).

    Raises:
        InputError: ``shift``, ``ratio``, ``h_mean``, ``h_scale``, ``k_mean``, ``k_scale``,
            ``chains``, ``seed`` or ``in_control`` bad, each named.
    """
    move, spread = _check_shift(shift), _check_ratio(ratio)
    limits = (check_h(h_mean, "h_mean"), check_h(h_scale, "h_scale"))
    design = (check_k(k_mean, "k_mean"), check_k(k_scale, "k_scale"), 1.0, limits[0] / limits[1])
    return _delay(move, spread, limits[0], design, _check_chains(chains), _check_seed(seed),
                  _check_in_control(in_control))


def false_alarm_words(arl0: float) -> str:
    """The false-alarm rate per decision, ``1 / arl0``, for a page: "about one false alarm per 500 decisions"."""
    return f"about one false alarm per {_decisions(arl0)}"


def delay_words(shift: float, delay: float) -> str:
    """The delay to catch a shift, for a page: "a 1-sigma shift is caught within about 10 decisions"."""
    return f"a {abs(shift):g}-sigma shift is caught within about {_decisions(delay)}"


def spread_words(ratio: float, delay: float) -> str:
    """The delay to catch a change of spread, for a page: "a doubling of the spread is caught within
    about 12 decisions", or "the spread multiplied by 1.5 is caught ..."."""
    change = "a doubling of the spread" if ratio == 2 else f"the spread multiplied by {ratio:g}"
    return f"{change} is caught within about {_decisions(delay)}"


def _decisions(count: float) -> str:
    """``count`` rounded to whole decisions, with thousands separators."""
    whole = max(1, round(count)) if math.isfinite(count) else None
    if whole is None:
        return "never (no alarm in the simulation)"
    return f"{whole:,} decision" + ("" if whole == 1 else "s")


@lru_cache(maxsize=256)
def _threshold(arl0: float, design: Design, chains: int, seed: int, in_control: InControl | None = None) -> float:
    """The threshold on the statistic ``design`` simulates whose in-control run length is ``arl0``."""
    horizon = _BLOCK * math.ceil(arl0 / _BLOCK)
    seen = np.zeros(1, dtype=np.int64)
    peaks = np.zeros(chains)
    for peaks_block in _peaks(0.0, 1.0, design, chains, horizon, seed, in_control):
        seen = _add(seen, np.bincount(_grid_bins(peaks_block).ravel()))
        peaks = peaks_block[:, -1]
    last = np.bincount(_grid_bins(peaks), minlength=seen.size)
    seen = np.pad(seen, (0, last.size - seen.size))
    alarmed = chains - np.cumsum(last)  # chains whose peak passed (j + 1) * H_STEP
    with np.errstate(divide="ignore"):
        arl = (np.cumsum(seen) + alarmed) / alarmed  # nondecreasing in j
    j = int(np.searchsorted(arl, arl0))  # bisection: the first threshold reaching arl0
    if j == 0:
        raise InputError(
            "arl0", f"{arl0:g} is below the run length {_k_words(design)} alone gives ({arl[0]:.3g}); lower k"
        )
    return (j + 1) * H_STEP


@lru_cache(maxsize=256)
def _pair(arl0: float, k_mean: float, k_scale: float, chains: int, seed: int,
          in_control: InControl | None = None) -> tuple[float, float]:
    """``pair_thresholds`` on checked arguments."""
    try:
        h_mean = _threshold(2.0 * arl0, _channel_design("mean", k_mean), chains, seed, in_control)
        h_scale = _threshold(2.0 * arl0, _channel_design("scale", k_scale), chains, seed, in_control)
    except InputError as err:  # a channel alone would alarm more often than once per 2 * arl0
        raise InputError(
            "arl0", f"{arl0:g} is too short for k_mean={k_mean:g}, k_scale={k_scale:g}: {err.problem}"
        ) from None
    weight = h_mean / h_scale
    joint = _threshold(arl0, (k_mean, k_scale, 1.0, weight), chains, seed, in_control)
    return joint, joint / weight


@lru_cache(maxsize=256)
def _delay(shift: float, ratio: float, h: float, design: Design, chains: int, seed: int,
           in_control: InControl | None = None) -> float:
    """The run length of the statistic ``design`` simulates to pass ``h``: the horizon grows until
    most series alarmed."""
    horizon = _BLOCK // 4
    while True:
        seen = 0
        peaks = np.zeros(chains)
        for peaks_block in _peaks(shift, ratio, design, chains, horizon, seed, in_control):
            seen += int(np.count_nonzero(peaks_block <= h))
            peaks = peaks_block[:, -1]
        alarmed = int(np.count_nonzero(peaks > h))
        if alarmed >= 0.6 * chains or horizon >= _DELAY_HORIZON_MAX:
            return (seen + alarmed) / alarmed if alarmed else math.inf
        horizon *= 4


def _peaks(
    shift: float, ratio: float, design: Design, chains: int, horizon: int, seed: int,
    in_control: InControl | None = None,
) -> Iterator[FloatArray]:
    """Blocks of ``horizon`` decisions of the running peak of the statistic ``design`` weighs on
    ``chains`` series of N(shift, ratio^2) residuals (``in_control``'s resampled, in place of N(0, 1))
    started at 0, one row a series (the same first blocks for any horizon)."""
    k_mean, k_scale, w_mean, w_scale = design
    rng = np.random.default_rng(seed)
    sample = _sampler(in_control, chains, rng)
    s_plus, s_minus, s_scale, peak = np.zeros(chains), np.zeros(chains), np.zeros(chains), np.zeros(chains)
    for start in range(0, horizon, _BLOCK):
        width = min(_BLOCK, horizon - start)
        draws = ratio * sample(start, width)
        statistic = np.zeros((chains, width))
        if w_mean:
            walk = np.cumsum(draws, axis=1)
            steps = np.arange(1, width + 1, dtype=np.float64)
            plus = reflected(walk + (shift - k_mean) * steps, s_plus)
            minus = reflected(-walk - (shift + k_mean) * steps, s_minus)
            statistic = w_mean * np.maximum(plus, minus)
            s_plus, s_minus = plus[:, -1], minus[:, -1]
        if w_scale:
            up = lindley(scale_score(shift + draws) - k_scale, s_scale)
            statistic = np.maximum(statistic, w_scale * up)
            s_scale = up[:, -1]
        block = np.maximum.accumulate(np.maximum(statistic, peak[:, None]), axis=1)
        peak = block[:, -1]
        yield block


def _sampler(in_control: InControl | None, chains: int, rng: np.random.Generator) -> Callable[[int, int], FloatArray]:
    """``draw(start, width)``: the ``(chains, width)`` residuals of decisions ``start`` on, N(0, 1) or
    ``in_control``'s clipped residuals in blocks, each block from a uniform start (wrapping round)."""
    if in_control is None:
        return lambda start, width: rng.standard_normal((chains, width))
    values = in_control.clipped(np.asarray(in_control.residuals))
    block = in_control.block
    starts: list[np.ndarray] = []  # one column of block starts at a time: the same first ones for any horizon

    def draw(start: int, width: int) -> FloatArray:
        t = np.arange(start, start + width)
        while len(starts) <= t[-1] // block:
            starts.append(rng.integers(0, values.size, chains))
        return values[(np.stack(starts, axis=1)[:, t // block] + t % block) % values.size]

    return draw


def _grid_bins(peaks: FloatArray) -> np.ndarray:
    """The threshold-grid bin of each peak: ``j`` for ``j * H_STEP <= peak < (j + 1) * H_STEP``."""
    return (np.minimum(peaks, _PEAK_MAX) / H_STEP).astype(np.int64)


def _add(total: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``total + counts`` for counts of possibly different lengths."""
    size = max(total.size, counts.size)
    return np.pad(total, (0, size - total.size)) + np.pad(counts, (0, size - counts.size))


def _check_chains(chains: int) -> int:
    """``chains`` if it is a whole number in [100, 1_000_000]."""
    if isinstance(chains, bool) or not isinstance(chains, int | np.integer) or not 100 <= chains <= 1_000_000:
        raise InputError("chains", f"expected a whole number in [100, 1000000], got {chains!r}")
    return int(chains)


def _check_seed(seed: int) -> int:
    """``seed`` if it is a whole number in [0, 2**32 - 1]."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= seed <= SEED_MAX:
        raise InputError("seed", f"expected a whole number in [0, {SEED_MAX}], got {seed!r}")
    return int(seed)


def _check_in_control(in_control: InControl | None) -> InControl | None:
    """``in_control`` if it is None or an ``InControl``."""
    if in_control is not None and not isinstance(in_control, InControl):
        raise InputError("in_control", f"expected residuals of a period in control, got {shown(in_control)}")
    return in_control


def _check_arl0(arl0: float) -> float:
    """``arl0`` if it is a number in [2, ``ARL0_MAX``]."""
    arl = finite_number("arl0", arl0)
    if not 2.0 <= arl <= ARL0_MAX:
        raise InputError("arl0", f"{arl:g} is outside [2, {ARL0_MAX}] decisions between false alarms")
    return arl


def _check_shift(shift: float) -> float:
    """``shift`` if it is a number within ``SHIFT_MAX`` of 0."""
    move = finite_number("shift", shift)
    if abs(move) > SHIFT_MAX:
        raise InputError("shift", f"{move:g} is beyond ±{SHIFT_MAX:g} scale units")
    return move


def _check_ratio(ratio: float) -> float:
    """``ratio`` if it is a number in (0, ``RATIO_MAX``]."""
    spread = finite_number("ratio", ratio)
    if not 0.0 < spread <= RATIO_MAX:
        raise InputError(
            "ratio", f"{spread:g} is outside (0, {RATIO_MAX:g}]: the factor of the residuals' spread"
        )
    return spread


def _channel_design(channel: str, k: float) -> Design:
    """The ``Design`` of one channel alone, with reference value ``k``."""
    if channel not in CHANNELS:
        raise InputError("channel", f"expected one of {', '.join(CHANNELS)}, got {shown(channel)}")
    return (k, 0.0, 1.0, 0.0) if channel == "mean" else (0.0, k, 0.0, 1.0)


def _k_words(design: Design) -> str:
    """The reference values of the channels ``design`` weighs: "k=0.5" or "k_mean=0.5, k_scale=0.5"."""
    k_mean, k_scale, w_mean, w_scale = design
    if w_mean and w_scale:
        return f"k_mean={k_mean:g}, k_scale={k_scale:g}"
    return f"k={k_mean if w_mean else k_scale:g}"
