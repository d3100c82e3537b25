"""The schedule LP of ``optimum.schedule_lp`` in matrix form, solved by HiGHS through ``scipy.optimize.linprog``:
the same problem without building a pyomo model, for MPC's thousands of small re-solves."""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from decisions.energy.building.optimum import TIE_BREAK


def first_move(data: dict[str, np.ndarray], initial_energy: np.ndarray, *, tie_break: float = TIE_BREAK) -> np.ndarray:
    """The optimal first hour's ``charge - discharge`` (kWh, ``(N,)``) of the schedule LP over ``data``
    (``optimum.window_data``'s keys, ``base`` ``(T, N)``) from ``initial_energy`` (``(N,)`` kWh).

    Raises:
        RuntimeError: HiGHS finds no optimum.
    """
    base = np.asarray(data["base"], dtype=np.float64)
    hours, homes = base.shape
    # variable blocks: c (N*T), d (N*T), e (N*(T+1)), imp (T), exp (T); home-major within a block
    n_ct, n_e = homes * hours, homes * (hours + 1)
    c0, d0, e0, i0, x0 = 0, n_ct, 2 * n_ct, 2 * n_ct + n_e, 2 * n_ct + n_e + hours
    size = x0 + hours
    power, cap = np.asarray(data["power"], float), np.asarray(data["capacity"], float)
    eta_c, eta_d = np.asarray(data["charge_efficiency"], float), np.asarray(data["discharge_efficiency"], float)
    low, high = np.zeros(size), np.full(size, np.inf)
    high[c0:d0] = np.repeat(power, hours)
    high[d0:e0] = np.repeat(power, hours)
    low[e0:i0] = np.repeat(np.asarray(data["soc_min"], float) * cap, hours + 1)
    high[e0:i0] = np.repeat(np.asarray(data["soc_max"], float) * cap, hours + 1)
    first = e0 + np.arange(homes) * (hours + 1)
    low[first] = high[first] = np.asarray(initial_energy, float)
    b, t = np.repeat(np.arange(homes), hours), np.tile(np.arange(hours), homes)
    row = np.arange(homes * hours)  # balance rows: e[t+1] - e[t] - eta_c c + d / eta_d = 0
    e_next, e_now = e0 + b * (hours + 1) + t + 1, e0 + b * (hours + 1) + t
    rows = [row, row, row, row]
    cols = [e_next, e_now, c0 + row, d0 + row]
    vals = [np.ones_like(row, float), -np.ones_like(row, float), -eta_c[b], 1.0 / eta_d[b]]
    meter = homes * hours + t  # meter rows: imp - exp - sum_b (c - d) = sum_b base
    rows += [meter, meter, homes * hours + np.arange(hours), homes * hours + np.arange(hours)]
    cols += [c0 + row, d0 + row, i0 + np.arange(hours), x0 + np.arange(hours)]
    vals += [-np.ones_like(row, float), np.ones_like(row, float), np.ones(hours), -np.ones(hours)]
    matrix = sparse.csr_array(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(homes * hours + hours, size)
    )
    rhs = np.concatenate([np.zeros(homes * hours), base.sum(axis=1)])
    unit = np.asarray(data["price"], float) + float(data["carbon_price"]) * np.asarray(data["carbon"], float)
    cost = np.zeros(size)
    cost[c0:e0] = tie_break
    cost[i0:x0] = unit
    cost[x0:] = -float(data["feed_in_price"])
    result = linprog(cost, A_eq=matrix, b_eq=rhs, bounds=np.stack([low, high], axis=1), method="highs")
    if result.status != 0:
        raise RuntimeError(f"the schedule LP found no optimum: {result.message}")
    x = result.x
    return np.maximum(x[c0 + np.arange(homes) * hours], 0.0) - np.maximum(x[d0 + np.arange(homes) * hours], 0.0)
