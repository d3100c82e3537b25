"""The operator's loop, timed (``decisions bench platform --json``): for every domain that can decide, a
smoke-budget run recorded in a scratch store, an asset deployed with the run's proposed policy, then

- ``<domain>_decide_p99_ms`` / ``_p50_ms``: one state decided and recorded (validation, the policy,
  the store's write), the policy loaded, over ``repeats`` calls; ``decide_p99_ms`` is the worst domain's;
- ``<domain>_decide_states_per_s``: a batch of ``states`` states decided and recorded in one call by
  the proposed policy, and ``_decide_only_states_per_s`` the same without recording, each the best of
  ``batch_repeats`` calls (the two kinds interleaved, after one call that compiles); the same for the
  domain's first network candidate (``Candidate.network``) as ``<domain>_network_...``;
  ``decide_states_per_s_min`` is the worst network rate over the domains;
- with ``drift``, the monitor's proof on the simulated assets (``drift.drift_figures``) on the same runs:
  ``<domain>_drift_alarm_delay_max`` / ``_median`` and ``<domain>_unshifted_alarms_per_decision`` beside
  ``drift_false_alarm_rate``, over ``drift_seeds`` seeds and trials of ``drift_decisions`` decisions.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from decisions.core.bench_row import Row, Target
from decisions.kit.domain import Domain

SMOKE_BUDGET: dict[str, Any] = {"states": 200, "repeats": 10, "batch_repeats": 1, "drift_seeds": 1,
                                 "drift_decisions": 100}
"""A budget that runs in about a minute."""

TARGETS: tuple[Target, ...] = (
    Target("decide_p99_ms", "<=", 50.0, "one state decided, 99th percentile (ms), slowest domain"),
    Target("decide_states_per_s_min", ">=", 10_000,
           "network policies: states decided and recorded per second in a batch of 10,000, slowest domain"),
    Target("gas_storage_drift_within_bound", "==", 1.0, "gas storage, volatility doubled: alarm within the stated delay on every seed"),
    Target("building_drift_within_bound", "==", 1.0, "building, a new evening load: alarm within the stated delay on every seed"),
    Target("gas_storage_false_alarm_rate_consistent", "==", 1.0,
           "gas storage, unshifted: the stated false-alarm rate within the alarm rate's 95% interval"),
    Target("building_false_alarm_rate_consistent", "==", 1.0,
           "building, unshifted: the stated false-alarm rate within the alarm rate's 95% interval"),
)
"""The bounds the stored bench is held to (the README's targets table)."""

def README_ROWS(figures: Mapping[str, Any]) -> list[Row]:  # noqa: N802 - the bench modules' table name
    """The docs' figure table: the worst figures, then per domain its single-decision time and its batch
    rates (the proposed policy's and a network candidate's), then the monitor's proof."""
    rows = [Row("one decision, recorded, p99 (ms; worst domain)", "{decide_p99_ms:.1f}"),
            Row("decisions per second, batch of {states:,.0f}, recorded, network policies (worst domain)",
                "{decide_states_per_s_min:,.0f}", optional=True)]
    for name in str(figures.get("domains", "")).split(", "):
        if not name:
            continue
        rows.append(Row(f"{name}: one decision p50 / p99 (ms); batch decided only / recorded (per s)",
                        f"{{{name}_decide_p50_ms:.1f}} / {{{name}_decide_p99_ms:.1f}}; "
                        f"{{{name}_decide_only_states_per_s:,.0f}} / {{{name}_decide_states_per_s:,.0f}}"))
        rows.append(Row(f"{name}: network policy, batch decided only / recorded (per s)",
                        f"{{{name}_network_decide_only_states_per_s:,.0f}} / {{{name}_network_decide_states_per_s:,.0f}}",
                        optional=True))
    for name in ("gas_storage", "building"):
        rows.append(Row(f"{name}, simulated drift: decisions to the alarm per seed (bound), unshifted alarms per "
                        "decision with its exact 95% interval (stated {drift_false_alarm_rate})",
                        f"{{{name}_drift_alarm_delays}} ({{{name}_drift_delay_bound:.0f}}), "
                        f"{{{name}_unshifted_alarms_per_decision:.4f}} over {{{name}_unshifted_decisions:.0f}} "
                        f"({{{name}_unshifted_alarm_rate_low:.4f}} to {{{name}_unshifted_alarm_rate_high:.4f}})",
                        optional=True))
    return rows





def _recorded_run(domain: Domain, folder: Path, url: str) -> int:
    from decisions.platform.record import execute_recorded

    job = domain.prepare(domain.smoke_job(), folder)
    report = domain.run_job(job)
    return execute_recorded(domain.name, job.name, job.config(), lambda: report, url=url, output_dir=str(folder / "out"))


def _batch_rates(asset: str, state: dict[str, Any], states: int, url: str, repeats: int) -> tuple[float, float]:
    """States per second of a batch of ``states`` copies of ``state``, the best of ``repeats`` calls each:
    decided and recorded, and decided only."""
    from decisions.core.timing import interleaved
    from decisions.platform.operations import decide

    batch = [state] * states
    decide(asset, batch, url=url, record=False)  # compiles the batch's shape
    best = interleaved({"only": lambda: decide(asset, batch, url=url, record=False),
                        "recorded": lambda: decide(asset, batch, url=url)}, repeats, warmup=0)
    return states / best["recorded"], states / best["only"]


def _timed_domain(domain: Domain, folder: Path, url: str, states: int, repeats: int,
                  batch_repeats: int) -> dict[str, float]:
    from decisions.platform.operations import decide, deploy
    from decisions.store import create_asset, get_run
    from decisions.store.artifacts import report_folder

    run_id = _recorded_run(domain, folder, url)
    asset = f"bench {domain.name}"
    create_asset(asset, domain.name, {}, url=url)
    _, proposal = deploy(asset, run_id, url=url)
    decider = domain.decider() if domain.decider else None
    assert decider is not None
    state = decider.example_state(report_folder(get_run(run_id, url=url)))
    decide(asset, [state], url=url)  # loads and compiles
    single = []
    for _ in range(repeats):
        start = time.perf_counter()
        decide(asset, [state], url=url)
        single.append(time.perf_counter() - start)
    name = domain.name
    figures = {f"{name}_decide_p50_ms": 1e3 * float(np.percentile(single, 50)),
               f"{name}_decide_p99_ms": 1e3 * float(np.percentile(single, 99))}
    figures[f"{name}_decide_states_per_s"], figures[f"{name}_decide_only_states_per_s"] = _batch_rates(
        asset, state, states, url, batch_repeats)
    network = next((c for c in proposal.candidates if c.network), None)
    if network is not None:
        create_asset(f"{asset} network", domain.name, {}, url=url)
        deploy(f"{asset} network", run_id, network.name, url=url)
        rates = _batch_rates(f"{asset} network", state, states, url, batch_repeats)
        figures[f"{name}_network_decide_states_per_s"], figures[f"{name}_network_decide_only_states_per_s"] = rates
    return figures


def _drift(chosen: list[Domain], url: str, seeds: int, decisions: int,
           progress: Callable[[str, int, int], None] | None) -> dict[str, Any]:
    """``drift.drift_figures`` on the bench's recorded runs of the chosen domains that have a simulated asset."""
    from decisions.platform.drift import SIMULATED, DriftBudget, drift_figures
    from decisions.store import list_runs
    from decisions.store.artifacts import report_folder

    names = tuple(d.name for d in chosen if d.name in SIMULATED)
    if not names:
        return {}
    folders = {name: report_folder(list_runs(kind=name, limit=1, url=url)[0]) for name in names}
    budget = DriftBudget(shift_at=decisions // 4, after=decisions // 2, unshifted=decisions)
    return drift_figures(tuple(range(seeds)), budget=budget, run_folders=folders, domains=names, progress=progress)


def run_bench(progress: Callable[[str, int, int], None] | None = None, *, states: int = 10_000, repeats: int = 200,
              batch_repeats: int = 3, domains: tuple[str, ...] = (), drift: bool = True, drift_seeds: int = 5,
              drift_decisions: int = 400) -> dict[str, Any]:
    """Time the operator's loop in every domain that can decide (or in ``domains``: ``repeats`` single
    decisions, the best of ``batch_repeats`` calls of each batch rate); with ``drift``, the monitor's
    proof on those with a simulated asset (``drift_seeds`` seeds; unshifted trials of ``drift_decisions``
    decisions, shifted ones shifting at a quarter of that, for half of it after)."""
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
                figures |= _timed_domain(domain, Path(scratch) / domain.name, url, states, repeats, batch_repeats)
            if drift:
                figures |= _drift(chosen, url, drift_seeds, drift_decisions, progress)
        finally:
            dispose_engines()
    figures["decide_p99_ms"] = max(figures[f"{d.name}_decide_p99_ms"] for d in chosen)
    networks = [figures[f"{d.name}_network_decide_states_per_s"] for d in chosen
                if f"{d.name}_network_decide_states_per_s" in figures]
    figures["decide_states_per_s_min"] = min(networks) if networks else None
    return {**figures, "domains": ", ".join(d.name for d in chosen), "states": states, "repeats": repeats,
            "batch_repeats": batch_repeats, "seconds": time.perf_counter() - start}
