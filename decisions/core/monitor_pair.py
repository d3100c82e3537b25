"""Two CUSUM channels on the same standardised residuals ``z``, under one false-alarm rate: the
mean channel of ``decisions.core.monitor`` (two-sided, on ``z``) and a scale channel (upper, on
``scale_score(z)``), which catches a growing spread that leaves the mean of ``z`` at 0::

    S+_i = max(0, S+_{i-1} + z_i - k_mean)      S-_i = max(0, S-_{i-1} - z_i - k_mean)
    S^_i = max(0, S^_{i-1} + scale_score(z_i) - k_scale)

An alarm is raised when ``S+`` or ``S-`` exceeds ``h_mean`` or ``S^`` exceeds ``h_scale``; it names
its channel and side, and all three statistics then restart from 0. ``Monitor(arl0=...)`` takes its
thresholds from ``monitor_design.pair_thresholds``, so the two channels together give one false alarm
per ``arl0`` decisions on average: on N(0, 1) residuals, or, given ``in_control``, on residuals like
those of a period in control (autocorrelated, heavy-tailed), the monitored ones clipped as those were.
The state is three floats and a count, plain JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from decisions.core.monitor import (
    DEFAULT_K,
    DEFAULT_K_SCALE,
    FloatArray,
    check_h,
    check_k,
    finite_number,
    finite_series,
    read_state,
    run_cusums,
    scale_score,
)
from decisions.core.monitor_design import CHAINS, InControl, pair_delay, pair_thresholds

_ROWS = (("mean", 1), ("mean", -1), ("scale", 1))  # the channel and side of S+, S-, S^


@dataclass(frozen=True)
class Alarm:
    """Which CUSUM fired: ``channel`` "mean" with ``side`` +1 (realised above expected) or -1
    (below), or "scale" with ``side`` +1 (the spread grew). When several cross at once, the one
    farthest past its threshold, relative to it."""

    channel: str
    side: int


@dataclass(frozen=True)
class Thresholds:
    """The reference values and thresholds of both channels, checked (``InputError`` naming the field)."""

    h_mean: float
    h_scale: float
    k_mean: float = DEFAULT_K
    k_scale: float = DEFAULT_K_SCALE

    def __post_init__(self) -> None:
        for name in ("h_mean", "h_scale"):
            object.__setattr__(self, name, check_h(getattr(self, name), name))
        for name in ("k_mean", "k_scale"):
            object.__setattr__(self, name, check_k(getattr(self, name), name))

    def limits(self) -> FloatArray:
        """The thresholds of ``S+``, ``S-`` and ``S^``."""
        return np.array([self.h_mean, self.h_mean, self.h_scale])


@dataclass(frozen=True)
class PairState:
    """Both channels after the outcomes recorded so far: ``S+``, ``S-``, ``S^`` and ``count``, the
    outcomes recorded since the last alarm (or the start). ``to_json`` / ``from_json`` keep it."""

    s_plus: float = 0.0
    s_minus: float = 0.0
    s_scale: float = 0.0
    count: int = 0

    def update(self, z: float, limits: Thresholds) -> tuple[PairState, Alarm | None]:
        """The state after one more standardised residual ``z``, and the alarm it raised, if any
        (after which the state restarts at 0)."""
        value = finite_number("z", z)
        stats = np.array(
            [
                max(0.0, self.s_plus + value - limits.k_mean),
                max(0.0, self.s_minus - value - limits.k_mean),
                max(0.0, self.s_scale + float(scale_score(value)) - limits.k_scale),
            ]
        )
        bounds = limits.limits()
        if (stats > bounds).any():
            return PairState(), Alarm(*_ROWS[int(np.argmax(stats / bounds))])
        return PairState(float(stats[0]), float(stats[1]), float(stats[2]), self.count + 1), None

    def to_json(self) -> dict[str, float | int]:
        """The state as a plain JSON object."""
        return {"s_plus": self.s_plus, "s_minus": self.s_minus, "s_scale": self.s_scale, "count": self.count}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> PairState:
        """The state ``to_json`` wrote; ``InputError`` naming the bad key otherwise."""
        (s_plus, s_minus, s_scale), count = read_state(data, ("s_plus", "s_minus", "s_scale"))
        return cls(s_plus, s_minus, s_scale, count)


@dataclass(frozen=True)
class PairResult:
    """``scan_pair``'s answer for one series of ``n`` decisions.

    ``s_plus``, ``s_minus`` and ``s_scale`` are the statistics after each decision (at an alarm, the
    values then; the next decision starts from 0). ``alarms`` are the indices of the alarms,
    ``channels`` and ``sides`` what fired at each (see ``Alarm``), ``first_alarm`` the first index
    or None, and ``state`` the state after the last decision, to go on streaming from.
    """

    s_plus: FloatArray
    s_minus: FloatArray
    s_scale: FloatArray
    alarms: NDArray[np.int64]
    channels: tuple[str, ...]
    sides: NDArray[np.int64]
    first_alarm: int | None
    state: PairState


def scan_pair(z: ArrayLike, limits: Thresholds, *, state: PairState | None = None) -> PairResult:
    """Both channels over the standardised residuals ``z`` (from ``state``, or from 0), with their
    alarms; equal to ``PairState.update`` applied step by step."""
    series = finite_series("z", z)
    state = state or PairState()
    steps = np.stack([series - limits.k_mean, -series - limits.k_mean, scale_score(series) - limits.k_scale])
    start = np.array([state.s_plus, state.s_minus, state.s_scale])
    run = run_cusums(steps, limits.limits(), start, state.count)
    fired = [_ROWS[row] for row in run.crossed]
    return PairResult(
        s_plus=run.paths[0],
        s_minus=run.paths[1],
        s_scale=run.paths[2],
        alarms=run.alarms,
        channels=tuple(channel for channel, _ in fired),
        sides=np.array([side for _, side in fired], dtype=np.int64),
        first_alarm=int(run.alarms[0]) if run.alarms.size else None,
        state=PairState(*(float(value) for value in run.last), count=run.count),
    )


@dataclass(frozen=True)
class Monitor:
    """Both channels calibrated by simulation (seeded, cached) so that on N(0, 1) residuals (or on
    ``in_control``'s, resampled in blocks) they raise one false alarm per ``arl0`` decisions on average,
    together; with ``in_control`` the residuals monitored are clipped as its are. ``InputError`` names
    a bad field."""

    arl0: float
    k_mean: float = DEFAULT_K
    k_scale: float = DEFAULT_K_SCALE
    chains: int = CHAINS
    seed: int = 0
    in_control: InControl | None = None
    thresholds: Thresholds = field(init=False)

    def __post_init__(self) -> None:
        h_mean, h_scale = pair_thresholds(
            self.arl0, k_mean=self.k_mean, k_scale=self.k_scale, chains=self.chains, seed=self.seed,
            in_control=self.in_control,
        )
        object.__setattr__(self, "thresholds", Thresholds(h_mean, h_scale, self.k_mean, self.k_scale))

    def monitored(self, z: ArrayLike) -> FloatArray:
        """The residuals the channels see: ``z``, clipped where the design is ``in_control``'s."""
        series = finite_series("z", z)
        return series if self.in_control is None else self.in_control.clipped(series)

    def update(self, state: PairState, z: float) -> tuple[PairState, Alarm | None]:
        """``state.update(z, self.thresholds)`` (``z`` clipped as ``monitored``): one more outcome, streamed."""
        return state.update(float(self.monitored([finite_number("z", z)])[0]), self.thresholds)

    def scan(self, z: ArrayLike, *, state: PairState | None = None) -> PairResult:
        """``scan_pair(self.monitored(z), self.thresholds, state=state)``: a whole series."""
        return scan_pair(self.monitored(z), self.thresholds, state=state)

    def expected_delay(self, shift: float = 0.0, ratio: float = 1.0) -> float:
        """The average run length to the first alarm of either channel, started at 0, when the
        residuals' mean moves by ``shift`` scale units and their spread is multiplied by ``ratio``."""
        limits = self.thresholds
        return pair_delay(
            shift, ratio, h_mean=limits.h_mean, h_scale=limits.h_scale, k_mean=limits.k_mean,
            k_scale=limits.k_scale, chains=self.chains, seed=self.seed, in_control=self.in_control,
        )
