"""The monitor's proof on a simulated asset: the operator's loop run on a domain's simulator whose model
shifts at a known decision, and the monitor's verdict.

``run_trial`` records a saved run folder in a scratch store, creates an asset, deploys the run's
policy, and for each step takes the simulator's state, decides it (``operations.decide``, recorded),
lets the simulator realise the outcome of the decision, records the outcomes, then runs
``monitoring.monitor_asset``. A domain simulator (``asset_sim.asset_steps`` in the domain's package)
is ``simulate(run_folder, *, seed, shift_at) -> iterator of (state, realise)``, where ``realise(decision)``
is the step's outcome in the domain's ``OUTCOME`` unit. ``drift_figures`` runs shifted and unshifted
trials on several seeds and gives the delays and the false-alarm rate beside ``1 / arl0``.
"""

from __future__ import annotations

import json
import math
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from decisions.errors import InputError
from decisions.kit.decide import Decision
from decisions.kit.report import REPORT_FILE

Step = tuple[Mapping[str, Any], Callable[[Decision], float]]
Simulator = Callable[..., Iterator[Step]]
"""``simulate(run_folder, *, seed, shift_at) -> iterator of (state, realise)``."""

ARL0 = 200
"""The false-alarm spacing the proof uses: one in 200 decisions, measurable in a few thousand."""


SIMULATED = ("gas_storage", "building")
"""The domains with a simulated asset (``simulator_of``)."""


def simulator_of(domain: str) -> Simulator:
    """The domain's simulated asset (``asset_sim.asset_steps``); ``InputError("domain")`` where it has none."""
    if domain == "gas_storage":
        from decisions.energy.gas_storage import asset_sim as gas

        return gas.asset_steps
    if domain == "building":
        from decisions.energy.building import asset_sim as building

        return building.asset_steps
    raise InputError("domain", f"{domain!r} has no simulated asset (gas_storage, building)")


@dataclass(frozen=True)
class Trial:
    """One simulated asset's verdict: ``decisions`` decided and realised, the shift's decision (None:
    unshifted), the first alarm at or after the shift (its index, ``delay``: decisions from the shift
    to it, counting it, and its channel; None where none came), every alarm's index, and the seconds."""

    domain: str
    seed: int
    decisions: int
    shift_at: int | None
    first_alarm: int | None
    delay: int | None
    channel: str | None
    alarm_indices: tuple[int, ...]
    seconds: float

    @property
    def false_alarms(self) -> int:
        """Alarms before the shift (every alarm, unshifted)."""
        start = self.decisions if self.shift_at is None else self.shift_at
        return sum(1 for i in self.alarm_indices if i < start)

    @property
    def alarms(self) -> int:
        """Alarms over the whole trial."""
        return len(self.alarm_indices)


def _whole(field: str, value: object, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise InputError(field, f"expected a whole number at least {low}, got {value!r}")
    return int(value)


def _checked(domain: str, run_folder: Path, seed: int, shift_at: int | None, decisions: int, arl0: float) -> None:
    from decisions.platform import registry
    from decisions.platform.monitoring import ARL0_RANGE
    from decisions.platform.operations import decider_of

    decider_of(registry.get(domain, field="domain"), field="domain")
    if not Path(run_folder).is_dir():
        raise InputError("run_folder", f"{run_folder} is not a folder")
    _whole("seed", seed, 0)
    _whole("decisions", decisions, 1)
    if shift_at is not None and _whole("shift_at", shift_at, 0) >= decisions:
        raise InputError("shift_at", f"{shift_at} is not below the trial's {decisions} decisions")
    if isinstance(arl0, bool) or not isinstance(arl0, int | float) or not ARL0_RANGE[0] <= arl0 <= ARL0_RANGE[1]:
        raise InputError("arl0", f"must be from {ARL0_RANGE[0]} to {ARL0_RANGE[1]} decisions, got {arl0!r}")


def _recorded_folder(domain: str, run_folder: Path, url: str) -> int:
    """Run id of ``run_folder`` recorded as a succeeded ``domain`` run in the store at ``url``."""
    from decisions.store import RunStatus, add_artifact, finish_run, log_metrics, start_run
    from decisions.store.artifacts import file_url

    report = Path(run_folder) / REPORT_FILE
    metrics = json.loads(report.read_text()).get("metrics", {}) if report.is_file() else {}
    run_id = start_run(domain, "drift", {"run_folder": str(run_folder)}, url=url)
    log_metrics(run_id, {k: float(v) for k, v in metrics.items() if math.isfinite(float(v))}, url=url)
    add_artifact(run_id, "report", report, url=url, location=file_url(report))
    finish_run(run_id, status=RunStatus.SUCCEEDED, url=url)
    return run_id


def _loop(asset: str, steps: Iterator[Step], decisions: int, url: str) -> None:
    """Decide (recorded) and realise ``decisions`` steps, then record their outcomes at once."""
    from decisions.platform.operations import decide
    from decisions.store import NewOutcome, record_outcomes

    outcomes = []
    for _ in range(decisions):
        try:
            state, realise = next(steps)
        except StopIteration:
            raise InputError("decisions", f"the simulator gave only {len(outcomes)} steps") from None
        (answer,) = decide(asset, [state], decided_by="drift", url=url)
        assert answer.decision_id is not None
        outcomes.append(NewOutcome(answer.decision_id, {}, realise(answer.decision)))
    record_outcomes(outcomes, recorded_by="drift", url=url)


def run_trial(domain: str, run_folder: Path, simulator: Simulator, *, candidate: str | None = None, seed: int = 0,
              shift_at: int | None = None, decisions: int = 300, arl0: float = ARL0,
              url: str | None = None) -> Trial:
    """Deploy ``candidate`` (default: the run's proposal) of the run saved in ``run_folder`` for a new
    asset in a scratch SQLite store (or the store at ``url``), decide and realise ``decisions`` steps of
    ``simulator`` (seed ``seed``, its model shifting at decision ``shift_at``), and run the monitor at
    ``arl0``.

    Raises:
        InputError: naming the bad argument (``domain``, ``run_folder``, ``seed``, ``shift_at``,
            ``decisions``, ``arl0``), or as ``operations.deploy`` (``policy``, ``run``).
    """
    from decisions.store import dispose_engines

    _checked(domain, run_folder, seed, shift_at, decisions, arl0)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        where = url or f"sqlite:///{Path(scratch) / 'drift.db'}"
        try:
            alarms, channels = _trial_in(domain, run_folder, simulator, candidate, seed, shift_at, decisions, arl0,
                                         where)
        finally:
            if url is None:
                dispose_engines()
    after = next((k for k, i in enumerate(alarms) if shift_at is None or i >= shift_at), None)
    if after is None:
        return Trial(domain, seed, decisions, shift_at, None, None, None, tuple(alarms), time.perf_counter() - start)
    index = alarms[after]
    return Trial(domain, seed, decisions, shift_at, index, index - (shift_at or 0) + 1, channels[after],
                 tuple(alarms), time.perf_counter() - start)


def _trial_in(domain: str, run_folder: Path, simulator: Simulator, candidate: str | None, seed: int,
              shift_at: int | None, decisions: int, arl0: float, url: str) -> tuple[list[int], list[str]]:
    """The alarms' indices and channels of one trial in the store at ``url``."""
    from decisions.platform.monitoring import monitor_asset
    from decisions.platform.operations import deploy
    from decisions.store import create_asset

    run_id = _recorded_folder(domain, run_folder, url)
    asset = f"drift {domain} seed {seed} run {run_id}"
    create_asset(asset, domain, {}, url=url)
    deploy(asset, run_id, candidate, note="simulated asset", chosen_by="drift", url=url)
    _loop(asset, simulator(Path(run_folder), seed=seed, shift_at=shift_at), decisions, url)
    verdict = monitor_asset(asset, arl0=arl0, url=url)
    position = {decision: i for i, decision in enumerate(verdict.decision_ids)}
    return [position[d] for d, _ in verdict.alarms], [alarm.channel for _, alarm in verdict.alarms]


@dataclass(frozen=True)
class DriftBudget:
    """How long the proof runs: per seed one shifted trial of ``shift_at + after`` decisions (the shift
    at decision ``shift_at``) and one unshifted trial of ``unshifted`` decisions, at ``arl0``."""

    shift_at: int = 100
    after: int = 200
    unshifted: int = 400
    arl0: float = ARL0


def rate_interval(events: int, exposure: int, coverage: float = 0.95) -> tuple[float, float]:
    """The exact (Garwood) central ``coverage`` interval of a Poisson rate per unit of ``exposure`` given
    ``events`` counted over it: the chi-square quantiles of ``2 * events`` and ``2 * (events + 1)``
    degrees of freedom, halved (low 0 at no event).

    Raises:
        InputError: ``events`` below 0, ``exposure`` below 1, or ``coverage`` outside (0, 1).
    """
    from scipy.stats import chi2

    _whole("events", events, 0)
    _whole("exposure", exposure, 1)
    if not 0.0 < coverage < 1.0:
        raise InputError("coverage", f"must be between 0 and 1, got {coverage!r}")
    tail = (1.0 - coverage) / 2.0
    low = 0.0 if events == 0 else float(chi2.ppf(tail, 2 * events)) / 2.0
    return low / exposure, float(chi2.ppf(1.0 - tail, 2 * (events + 1))) / 2.0 / exposure


BOUNDS = {"gas_storage": 40, "building": 24 * 7}
"""The stated bound on the delay, decisions from the shift to the first alarm (counting it), per domain.
The building's is a week of hourly decisions: its shift shows in 5 hours of 24, each by about two of
the interval's sigmas, against residuals that run together for hours and days, so one evening's evidence
is about what the calibrated thresholds ask for, and a quiet evening or a few lets it through."""

SHIFTS = {
    "gas_storage": "the price factor's volatility doubles from the shift on; the outcome, tomorrow's spot, "
                   "is standardised by the model's 95% interval",
    "building": "every home's load grows by 2 kWh in each hour from 17:00 to 22:00 from the shift on (a new EV) "
                "while the forecast keeps the old profile; the outcome, the hour's bill, is standardised by the "
                "decision's 95% interval (the seasonal forecast's errors at that hour in the training months); the "
                "monitor's thresholds are calibrated on the training months' residuals so standardised (resampled "
                "in weeks, clipped to ±3), not on N(0, 1)",
}
"""Each simulated asset's shift, in words."""


def domain_figures(domain: str, run_folder: Path, seeds: Sequence[int], budget: DriftBudget,
                   url: str) -> dict[str, Any]:
    """One domain's figures over ``seeds`` (see ``drift_figures``), its trials in the store at ``url``."""
    simulate = simulator_of(domain)
    shifted = [run_trial(domain, run_folder, simulate, seed=s, shift_at=budget.shift_at,
                         decisions=budget.shift_at + budget.after, arl0=budget.arl0, url=url) for s in seeds]
    quiet = [run_trial(domain, run_folder, simulate, seed=s, decisions=budget.unshifted, arl0=budget.arl0, url=url)
             for s in seeds]
    delays = [t.delay for t in shifted if t.delay is not None]
    missed = len(shifted) - len(delays)
    alarms, total = sum(t.alarms for t in quiet), budget.unshifted * len(quiet)
    low, high = rate_interval(alarms, total)
    bound = BOUNDS.get(domain)
    return {
        f"{domain}_drift_alarm_delay_max": float(max(delays)) if delays and not missed else math.nan,
        f"{domain}_drift_alarm_delay_median": float(np.median(delays)) if delays else math.nan,
        f"{domain}_drift_alarm_delays": ", ".join("none" if t.delay is None else str(t.delay) for t in shifted),
        f"{domain}_drift_alarm_channels": ", ".join(t.channel or "none" for t in shifted),
        f"{domain}_drift_missed": missed,
        f"{domain}_drift_delay_bound": bound,
        f"{domain}_drift_within_bound": float(bound is not None and not missed and max(delays) <= bound),
        f"{domain}_drift_alarms_before_shift": sum(t.false_alarms for t in shifted),
        f"{domain}_unshifted_alarms": alarms,
        f"{domain}_unshifted_decisions": total,
        f"{domain}_unshifted_alarms_per_decision": alarms / total,
        f"{domain}_unshifted_alarm_rate_low": low,
        f"{domain}_unshifted_alarm_rate_high": high,
        f"{domain}_false_alarm_rate_consistent": float(low <= 1.0 / budget.arl0 <= high),
        f"{domain}_drift_design": (f"{SHIFTS.get(domain, '')}; shift at decision {budget.shift_at} of "
                                   f"{budget.shift_at + budget.after}, {len(shifted)} seeds; stated bound {bound} "
                                   f"decisions; unshifted: {len(quiet)} trials of {budget.unshifted} decisions"),
        f"{domain}_drift_seconds": sum(t.seconds for t in shifted + quiet),
    }


def drift_figures(seeds: Sequence[int] = (0, 1, 2, 3, 4), *, budget: DriftBudget | None = None,
                  run_folders: Mapping[str, Path] | None = None, domains: Sequence[str] = SIMULATED,
                  progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
    """The monitor's proof on each domain's simulated asset: per domain the worst and median seed's delay
    from the shift to the first alarm (``<domain>_drift_alarm_delay_max``, ``_median``; NaN max where a
    seed saw none), and the unshifted trials' alarms per decision (``<domain>_unshifted_alarms_per_decision``)
    with its exact 95% Poisson interval (``_unshifted_alarm_rate_low``, ``_high``; ``rate_interval``) and
    whether ``drift_false_alarm_rate`` (``1 / arl0``) lies in it (``_false_alarm_rate_consistent``), with the
    design in words. ``run_folders``: each
    domain's saved run (default: its smoke run, made here).

    Raises:
        InputError: an empty ``seeds``, or a domain without a simulated asset (``domain``).
    """
    from decisions.store import dispose_engines

    budget = budget or DriftBudget()
    if not seeds:
        raise InputError("seeds", "give at least one seed")
    for domain in domains:
        simulator_of(domain)
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as scratch:
        url = f"sqlite:///{Path(scratch) / 'drift.db'}"
        try:
            for index, domain in enumerate(domains):
                if progress is not None:
                    progress(f"drift {domain}", index, len(domains))
                folder = (run_folders or {}).get(domain) or _smoke_folder(domain, Path(scratch) / domain)
                figures |= domain_figures(domain, folder, seeds, budget, url)
        finally:
            dispose_engines()
    return {**figures, "drift_arl0": budget.arl0, "drift_false_alarm_rate": 1.0 / budget.arl0,
            "drift_seeds": ", ".join(str(s) for s in seeds)}


def _smoke_folder(domain: str, folder: Path) -> Path:
    """The domain's smoke run, saved into ``folder``."""
    from decisions.platform import registry

    found = registry.get(domain, field="domain")
    found.run_job(found.prepare(found.smoke_job(), folder)).save(folder)
    return folder
