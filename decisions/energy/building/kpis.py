"""CityLearn-style KPIs: each controller's figure divided by the same homes with no battery."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from decisions.energy.building.simulate import Trajectory

RAW_KPIS = ("cost", "emissions", "ramping", "one_minus_load_factor", "daily_peak", "annual_peak")
"""KPIs computed from one trajectory, before dividing by the reference."""
GRID_KPIS = ("ramping", "one_minus_load_factor", "daily_peak", "annual_peak")
"""The KPIs averaged into ``grid``."""


def _group_max(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    return np.array([values[groups == g].max() for g in np.unique(groups)])


def raw_kpis(trajectory: Trajectory) -> dict[str, float]:
    """The KPIs of the module docstring in their own units (not divided by a reference).

    Returns:
        ``{name: value}`` for every name of ``RAW_KPIS``.
    """
    net = trajectory.district_net_load
    months, _, days = trajectory.calendar()
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
    """One row per controller of ``trajectories`` (all over one window): KPIs divided by the ``reference``
    (no battery), plus ``saving_fraction_of_lp`` against ``optimum`` (perfect foresight; None: NaN).

    Columns ``cost, emissions, ramping, one_minus_load_factor, daily_peak, annual_peak, grid,
    average_score, saving_fraction_of_lp, cost_usd, emissions_kg, saving_usd``, indexed by controller.

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
