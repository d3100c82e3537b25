"""The operator's loop, timed (``decisions bench platform --json``): for every domain that can decide, a
smoke-budget run recorded in a scratch store, an asset deployed with the run's proposed policy, then

- ``<domain>_decide_p99_ms`` / ``_p50_ms``: one state decided and recorded (validation, the policy,
  the store's write), the policy loaded, over ``repeats`` calls; ``decide_p99_ms`` is the worst domain's;
- ``<domain>_decide_states_per_s``: a batch of ``states`` states decided and recorded in one call, and
  ``_decide_only_states_per_s`` the same without recording; ``decide_states_per_s_min`` is the worst
  over the domains whose deployed policy is a network (``Candidate.network``).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from decisions.core.bench_row import Row
from decisions.kit.domain import Domain

SMOKE_BUDGET: dict[str, Any] = {"states": 200, "repeats": 10}
"""A budget that runs in about a minute."""

README_ROWS: tuple[Row, ...] = (
    Row("one decision, recorded, p99 (ms; worst domain)", "{decide_p99_ms:.1f}"),
    Row("decisions per second, batch of {states:,.0f}, recorded (worst network policy)", "{decide_states_per_s_min:,.0f}"),
)
"""The docs' figure table."""


def _recorded_run(domain: Domain, folder: Path, url: str) -> int:
    from decisions.platform.record import execute_recorded

    job = domain.prepare(domain.smoke_job(), folder)
    report = domain.run_job(job)
    return execute_recorded(domain.name, job.name, job.config(), lambda: report, url=url, output_dir=str(folder / "out"))


def _timed_domain(domain: Domain, folder: Path, url: str, states: int, repeats: int) -> dict[str, float]:
    from decisions.platform.operations import decide, deploy
    from decisions.store import create_asset, get_run
    from decisions.store.artifacts import report_folder

    run_id = _recorded_run(domain, folder, url)
    asset = f"bench {domain.name}"
    create_asset(asset, domain.name, {}, url=url)
    deployment, _ = deploy(asset, run_id, url=url)
    decider = domain.decider() if domain.decider else None
    assert decider is not None
    state = decider.example_state(report_folder(get_run(run_id, url=url)))
    decide(asset, [state], url=url)  # loads and compiles
    single = []
    for _ in range(repeats):
        start = time.perf_counter()
        decide(asset, [state], url=url)
        single.append(time.perf_counter() - start)
    batch = [state] * states
    decide(asset, batch, url=url, record=False)  # compiles the batch's shape
    start = time.perf_counter()
    decide(asset, batch, url=url, record=False)
    only = time.perf_counter() - start
    start = time.perf_counter()
    decide(asset, batch, url=url)
    recorded = time.perf_counter() - start
    name = domain.name
    return {f"{name}_decide_p50_ms": 1e3 * float(np.percentile(single, 50)),
            f"{name}_decide_p99_ms": 1e3 * float(np.percentile(single, 99)),
            f"{name}_decide_states_per_s": states / recorded, f"{name}_decide_only_states_per_s": states / only,
            f"{name}_policy_is_network": float(bool(deployment.settings.get("network")))}


def run_bench(progress: Callable[[str, int, int], None] | None = None, *, states: int = 10_000, repeats: int = 200,
              domains: tuple[str, ...] = ()) -> dict[str, Any]:
    """Time the operator's loop in every domain that can decide (or in ``domains``)."""
    from decisions.platform import registry
    from decisions.store import dispose_engines

    chosen = [d for d in registry.DOMAINS if d.decider is not None and (not domains or d.name in domains)]
    figures: dict[str, Any] = {}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        url = f"sqlite:///{Path(scratch) / 'bench.db'}"
        try:
            for index, domain in enumerate(chosen):
                if progress is not None:
                    progress(domain.name, index, len(chosen))
                figures |= _timed_domain(domain, Path(scratch) / domain.name, url, states, repeats)
        finally:
            dispose_engines()
    figures["decide_p99_ms"] = max(figures[f"{d.name}_decide_p99_ms"] for d in chosen)
    networks = [figures[f"{d.name}_decide_states_per_s"] for d in chosen if figures[f"{d.name}_policy_is_network"]]
    figures["decide_states_per_s_min"] = min(networks) if networks else min(
        figures[f"{d.name}_decide_states_per_s"] for d in chosen)
    return {**figures, "domains": ", ".join(d.name for d in chosen), "states": states, "repeats": repeats,
            "seconds": time.perf_counter() - start}
