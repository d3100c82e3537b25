"""Bump and revalue against one adjoint pass, measured quickly: the operator app's timing panel."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import pandas as pd

from decisions.core.progress import Progress

QUICK_KEY_RATES: tuple[int, ...] = (5, 20, 50)
"""Key-rate counts K of the quick measurement by default."""

SPEEDUP_COLUMNS = ("key_rates", "bump_seconds", "adjoint_seconds", "speedup", "bump_method")
"""Columns of ``speedup_table``."""


def speedup_table(figures: dict[str, Any], key_rate_counts: Sequence[int]) -> pd.DataFrame:
    """The ``bench.key_rate_timing`` figures as one row per K.

    Args:
        figures: ``bump_seconds_K{k}``, ``value_and_grad_seconds_K{k}``, ``speedup_K{k}`` and
            (optionally) ``bump_method_K{k}`` for every K.
        key_rate_counts: the K to tabulate, in order.

    Returns:
        ``SPEEDUP_COLUMNS``: ``key_rates, bump_seconds, adjoint_seconds, speedup, bump_method``.
    """
    rows = [
        {
            "key_rates": int(k),
            "bump_seconds": float(figures[f"bump_seconds_K{k}"]),
            "adjoint_seconds": float(figures[f"value_and_grad_seconds_K{k}"]),
            "speedup": float(figures[f"speedup_K{k}"]),
            "bump_method": str(figures.get(f"bump_method_K{k}", "")),
        }
        for k in key_rate_counts
    ]
    return pd.DataFrame(rows, columns=list(SPEEDUP_COLUMNS))


def measure_speedups(
    key_rate_counts: Sequence[int] = QUICK_KEY_RATES,
    *,
    paths: int = 256,
    horizon_years: int = 5,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """A quick bump-versus-adjoint measurement (``bench.key_rate_timing``) on a small scenario.

    Args:
        key_rate_counts: the key-rate counts K to time, in order.
        paths: common paths of every valuation.
        horizon_years: horizon of the shortened default scenario.
        progress: optional ``(task, done, total)`` callback.

    Returns:
        ``speedup_table`` of the figures; ``attrs["seconds"]`` is the wall time of the timings.
    """
    import jax

    from decisions.finance.pension import bench
    from decisions.finance.pension import snapo_policy as sp
    from decisions.finance.pension.assemble import to_params
    from decisions.finance.pension.scenario import Scenario
    from decisions.finance.pension.simulator import draw_normals

    report = progress or (lambda task, done, total: None)
    scenario = Scenario(horizon_years=horizon_years)
    settings = sp.PensionSnapoSettings(steps=1, paths_per_step=8, log_every=1)
    report("policy", 0, 1)
    trained = sp.train_policy(scenario, settings, key=jax.random.PRNGKey(0))
    report("policy", 1, 1)
    params = to_params(scenario)
    normals = draw_normals(jax.random.PRNGKey(1), paths, params.months, params.n_shocks)
    figures: dict[str, Any] = {}
    start = time.perf_counter()
    for i, k in enumerate(key_rate_counts):
        report("bump versus adjoint", i, len(key_rate_counts))
        figures.update(bench.key_rate_timing(trained, bench.with_key_rates(scenario, k), normals, k, chunks=(4,)))
    report("bump versus adjoint", len(key_rate_counts), len(key_rate_counts))
    frame = speedup_table(figures, key_rate_counts)
    frame.attrs["seconds"] = time.perf_counter() - start
    return frame
