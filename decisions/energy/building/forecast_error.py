"""The hour's bill as a forecast: the load and PV of an hour to come are forecasts, and the bill the
meter will show is uncertain by their error.

The forecaster is the seasonal mean (``seasonal_forecast``: each home's mean over the same hour of the
``FORECAST_DAYS`` days before). ``ForecastErrors.of`` collects its errors on the homes' summed net load
(load less PV), kWh, by hour of the day, over the rows given (the training months). ``bill_forecast``
prices each of those errors on top of an hour's forecast net load: the bill's mean and its central 95%
interval under the errors the forecaster made at that hour of the day. ``in_control`` gives the monitor
the training months' bills standardised by those intervals, as the decisions' outcomes will be: errors
that are autocorrelated within a day and heavy-tailed (a bill censored at zero when the homes export).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from decisions.core.monitor import standardise
from decisions.core.monitor_design import InControl

FORECAST_DAYS = 7
"""Days of history the seasonal forecast averages (the same hour of each)."""

HOURS = 24
"""Hours of a day; the data's ``hour`` runs from 1 (midnight to 1 am) to 24."""

COVERAGE = 0.95
"""The central probability of a bill's interval."""

IN_CONTROL_BLOCK = 24 * 7
"""Hours of the blocks the monitor resamples the training months' residuals in: a week, so that a run of
days the forecast misses together (a spell of weather) stays in one block."""


def seasonal_forecast(series: np.ndarray, row: int) -> np.ndarray:
    """Each column's mean of ``series`` ``(T, N)`` over the same hour of the ``FORECAST_DAYS`` days before
    ``row`` (rows before the data's first wrap round to its end)."""
    rows = [(row - 24 * k) % series.shape[0] for k in range(1, FORECAST_DAYS + 1)]
    return series[rows].mean(axis=0)


@dataclass(frozen=True)
class ForecastErrors:
    """The seasonal forecast's errors of the homes' summed net load, kWh: ``by_hour[h - 1]`` holds those
    at data hour ``h``."""

    by_hour: tuple[np.ndarray, ...]

    @classmethod
    def of(cls, load: np.ndarray, pv: np.ndarray, hour: np.ndarray, rows: np.ndarray) -> ForecastErrors:
        """The errors on ``rows`` of the data year (``load``, ``pv``: ``(T, N)`` kWh; ``hour``: ``(T,)``),
        leaving out rows whose history would wrap round the year's end.

        Raises:
            ValueError: an hour of the day has no error to estimate from.
        """
        net = (np.asarray(load, np.float64) - np.asarray(pv, np.float64)).sum(axis=1)
        kept = np.asarray(rows)[np.asarray(rows) >= 24 * FORECAST_DAYS]
        history = np.stack([net[kept - 24 * k] for k in range(1, FORECAST_DAYS + 1)])
        errors = net[kept] - history.mean(axis=0)
        hours = np.asarray(hour)[kept]
        by_hour = tuple(np.sort(errors[hours == h]) for h in range(1, HOURS + 1))
        empty = [h for h, e in enumerate(by_hour, start=1) if e.size == 0]
        if empty:
            raise ValueError(f"no forecast error to estimate from at hour {empty[0]}")
        return cls(by_hour)


def bill_forecast(net: np.ndarray, price: np.ndarray, feed_in_price: float, hour: np.ndarray,
                  errors: ForecastErrors) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each hour ``i`` with forecast net load ``net[i]`` (kWh, + import) at ``price[i]`` and data hour
    ``hour[i]``: the mean bill ($, imports at ``price`` less exports at ``feed_in_price``) over the
    forecaster's errors at that hour of the day, and the bill's central ``COVERAGE`` interval (low, high)."""
    tail = (1.0 - COVERAGE) / 2.0
    net, price, hour = np.asarray(net, np.float64), np.asarray(price, np.float64), np.asarray(hour)
    mean, low, high = (np.empty(len(net)) for _ in range(3))
    for h in np.unique(hour):
        at = np.flatnonzero(hour == h)
        realised = net[at, None] + errors.by_hour[int(h) - 1][None, :]
        bills = price[at, None] * np.maximum(realised, 0.0) - feed_in_price * np.maximum(-realised, 0.0)
        mean[at] = bills.mean(axis=1)
        low[at], high[at] = np.quantile(bills, [tail, 1.0 - tail], axis=1)
    return mean, low, high


def in_control(load: np.ndarray, pv: np.ndarray, price: np.ndarray, feed_in_price: float, hour: np.ndarray,
               rows: np.ndarray, errors: ForecastErrors) -> InControl:
    """The monitor's in-control residuals: on ``rows`` of the data year (the training months, leaving out
    rows whose history would wrap), the bill with the batteries idle less its ``bill_forecast`` mean, over
    the interval's normal scale (``core.monitor.standardise``), hours whose interval has no width left out;
    resampled in blocks of ``IN_CONTROL_BLOCK`` hours."""
    load, pv = np.asarray(load, np.float64), np.asarray(pv, np.float64)
    kept = np.asarray(rows)[np.asarray(rows) >= 24 * FORECAST_DAYS]
    forecast = np.array([seasonal_forecast(load - pv, row).sum() for row in kept])
    hours, prices = np.asarray(hour)[kept], np.asarray(price, np.float64)[kept]
    mean, low, high = bill_forecast(forecast, prices, feed_in_price, hours, errors)
    net = (load - pv).sum(axis=1)[kept]
    bill = prices * np.maximum(net, 0.0) - feed_in_price * np.maximum(-net, 0.0)
    wide = high > low
    z = standardise(bill[wide], mean[wide], low[wide], high[wide], coverage=COVERAGE)
    return InControl(tuple(z.tolist()), IN_CONTROL_BLOCK)
