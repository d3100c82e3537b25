"""CityLearn-style KPIs: each controller's figure divided by the same homes with no battery.

On the meter's net load ``n_t`` (kWh, sum over homes) of a window:

- ``cost``: the bill; ``emissions``: kg CO2 of imports;
- ``ramping``: ``sum_t |n_t - n_{t-1}|``;
- ``one_minus_load_factor``: ``1 - mean(n) / max(n)`` in each calendar month of the window,
  averaged over months;
- ``daily_peak``: ``max(n)`` in each calendar day, averaged over days;
- ``annual_peak``: ``max(n)`` over the whole window.

Each is reported as the ratio to the no-battery reference (1 = no better than no battery,
lower is better), as the CityLearn challenge scores them. ``grid`` is the mean of the four grid
KPIs and ``average_score`` the mean of ``cost``, ``emissions`` and ``grid`` (the challenge's
three-way average, to our reading of its rules). ``saving_fraction_of_lp`` is
``(cost_ref - cost) / (cost_ref - cost_LP)``: the share of the perfect-foresight saving a
controller achieves (1 for the LP itself).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from decisions.energy.building.dataset import load_district
from decisions.energy.building.simulate import Trajectory

RAW_KPIS = ("cost", "emissions", "ramping", "one_minus_load_factor", "daily_peak", "annual_peak")
"""KPIs computed from one trajectory, before dividing by the reference."""
GRID_KPIS = ("ramping", "one_minus_load_factor", "daily_peak", "annual_peak")
"""The KPIs averaged into ``grid``."""


def _group_max(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    return np.array([values[groups == g].max() for g in np.unique(groups)])


def raw_kpis(trajectory: Trajectory) -> dict[str, float]:
    """The KPIs of the module docstring in their own units (not divided by a reference).

    Args:
        trajectory: a controller's trajectory.

    Returns:
        ``{name: value}`` for every name of ``RAW_KPIS``.
    """
    district = load_district()
    rows = trajectory.window.rows
    net = trajectory.district_net_load
    months, days = district.month[rows], district.day[rows]
    load_factors = [1.0 - net[months == m].mean() / net[months == m].max() for m in np.unique(months)]
    return {
        "cost": float(trajectory.cost.sum()),
        "emissions": float(trajectory.emissions.sum()),
        "ramping": float(np.abs(np.diff(net)).sum()),
        "one_minus_load_factor": float(np.mean(load_factors)),
        "daily_peak": float(_group_max(net, days).mean()),
        "annual_peak": float(net.max()),
    }


def kpi_table(
    trajectories: Mapping[str, Trajectory],
    *,
    reference: str = "no_battery",
    optimum: str | None = "perfect_foresight",
) -> pd.DataFrame:
    """One row per controller: KPIs divided by the reference, plus the share of the LP saving.

    Args:
        trajectories: ``{controller name: trajectory}``, all over the same window, including the
            reference (and the optimum, if named).
        reference: name of the no-battery trajectory.
        optimum: name of the perfect-foresight trajectory, or ``None`` (then
            ``saving_fraction_of_lp`` is NaN).

    Returns:
        DataFrame indexed by controller with columns ``cost, emissions, ramping,
        one_minus_load_factor, daily_peak, annual_peak, grid, average_score,
        saving_fraction_of_lp, cost_usd, emissions_kg, saving_usd``.

    Raises:
        KeyError: the reference (or the named optimum) is missing.
        ValueError: trajectories over different windows.
    """
    if reference not in trajectories:
        raise KeyError(f"no reference trajectory {reference!r}; got {', '.join(trajectories)}")
    if optimum is not None and optimum not in trajectories:
        raise KeyError(f"no optimum trajectory {optimum!r}; got {', '.join(trajectories)}")
    windows = {t.window for t in trajectories.values()}
    if len(windows) != 1:
        raise ValueError(f"trajectories cover different windows: {sorted(windows, key=str)}")
    raw = {name: raw_kpis(t) for name, t in trajectories.items()}
    ref = raw[reference]
    lp_saving = ref["cost"] - raw[optimum]["cost"] if optimum is not None else np.nan
    rows = {}
    for name, values in raw.items():
        row = {k: values[k] / ref[k] for k in RAW_KPIS}
        row["grid"] = float(np.mean([row[k] for k in GRID_KPIS]))
        row["average_score"] = float(np.mean([row["cost"], row["emissions"], row["grid"]]))
        saving = ref["cost"] - values["cost"]
        row["saving_fraction_of_lp"] = saving / lp_saving if lp_saving else np.nan
        row["cost_usd"] = values["cost"]
        row["emissions_kg"] = values["emissions"]
        row["saving_usd"] = saving
        rows[name] = row
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "controller"
    return frame
