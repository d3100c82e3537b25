"""The monitor of an asset: realised outcomes against what its deployed policy expected.

Each decision with an outcome since the asset's current deployment gives a standardised residual
(``core.monitor.standardise``: by the decision's 95% interval where it has one, else by the robust
spread of the residuals before it); the pair of CUSUM channels of ``core.monitor_pair`` (mean and
spread) runs on them with one stated false-alarm rate, calibrated on N(0, 1) residuals or, where the
domain's decide module offers them (``in_control_residuals(run_folder, candidate) ->
core.monitor_design.InControl``), on the deployed run's residuals of a period in control. An alarm
after the deployment is open until the asset is deployed again (after retraining on its recorded outcomes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from decisions.core.monitor import standardise
from decisions.core.monitor_design import InControl, delay_words, false_alarm_words, spread_words
from decisions.core.monitor_pair import Alarm, Monitor
from decisions.errors import InputError
from decisions.platform import registry
from decisions.platform.operations import decider_of
from decisions.store import DeploymentRecord, current, get_asset, get_run, outcomes_of
from decisions.store.artifacts import report_folder

ARL0 = 500
"""Decisions between false alarms on average, by default (a rate of 1 in 500 per decision)."""

COVERAGE = 0.95
"""The coverage of a decision's interval (``kit.decide.Decision.interval``)."""

ARL0_RANGE = (20, 10_000)
"""The false-alarm spacings a monitor may be asked for."""


@dataclass(frozen=True)
class AssetMonitor:
    """An asset's monitor: the outcomes since its deployment (``decision_ids`` in order, their ``z``
    and the three CUSUM statistics), the alarms (as decision ids, with channel and side), and the
    design in words."""

    asset: str
    decision_ids: tuple[int, ...]
    z: np.ndarray
    statistics: dict[str, np.ndarray]
    thresholds: dict[str, float]
    alarms: tuple[tuple[int, Alarm], ...]
    arl0: float
    design: tuple[str, ...]

    @property
    def outcomes(self) -> int:
        """Outcomes monitored."""
        return len(self.decision_ids)

    @property
    def open_alarm(self) -> tuple[int, Alarm] | None:
        """The first alarm since the deployment (decision id, alarm), or None: reality has not parted
        from the model."""
        return self.alarms[0] if self.alarms else None

    def words(self) -> str:
        """The verdict in a sentence, with what to do about it."""
        if self.open_alarm is None:
            return (f"{self.asset}: no alarm over {self.outcomes} outcomes since its deployment "
                    f"({self.design[0]}).")
        decision, alarm = self.open_alarm
        what = ("the spread of outcomes grew" if alarm.channel == "scale"
                else f"outcomes run {'above' if alarm.side > 0 else 'below'} what the policy expected")
        more = f" ({len(self.alarms)} alarms since)" if len(self.alarms) > 1 else ""
        return (f"{self.asset}: ALARM from decision {decision}{more}: {what}. Retrain with the asset's "
                f"{self.outcomes} recorded outcomes and deploy again.")


def monitor_asset(asset_name: str, *, arl0: float = ARL0, url: str | None = None) -> AssetMonitor:
    """Run the monitor over the asset's outcomes since its current deployment.

    Raises:
        InputError: an unknown asset, or ``arl0`` outside ``ARL0_RANGE``.
    """
    if not ARL0_RANGE[0] <= arl0 <= ARL0_RANGE[1]:
        raise InputError("arl0", f"must be from {ARL0_RANGE[0]} to {ARL0_RANGE[1]} decisions, got {arl0:g}")
    asset = get_asset(asset_name, url=url)
    deployed = current(asset_name, url=url)
    since = deployed.chosen_at if deployed is not None else None
    rows = [r for r in outcomes_of(asset_name, url=url)
            if r.expected_value is not None and r.realised_value is not None
            and (since is None or r.decided_at >= since)]
    in_control = _in_control(asset.kind, deployed, url)
    monitor = Monitor(arl0, in_control=in_control)
    h = monitor.thresholds
    design = (false_alarm_words(arl0), delay_words(1.0, monitor.expected_delay(shift=1.0)),
              spread_words(2.0, monitor.expected_delay(ratio=2.0)))
    design += (in_control.words(),) if in_control is not None else ()
    limits = {"mean": h.h_mean, "scale": h.h_scale}
    if not rows:
        empty = np.zeros(0)
        return AssetMonitor(asset.name, (), empty, {"s_plus": empty, "s_minus": empty, "s_scale": empty},
                            limits, (), arl0, design)
    low = np.array([np.nan if r.interval_low is None else r.interval_low for r in rows])
    high = np.array([np.nan if r.interval_high is None else r.interval_high for r in rows])
    low, high = _usable_intervals(low, high)
    z = standardise([r.realised_value for r in rows], [r.expected_value for r in rows], low, high,
                    coverage=COVERAGE)
    scanned = monitor.scan(z)
    ids = tuple(r.decision_id for r in rows)
    alarms = tuple((ids[int(i)], Alarm(c, int(s))) for i, c, s in zip(scanned.alarms, scanned.channels, scanned.sides, strict=True))
    return AssetMonitor(asset.name, ids, z, {"s_plus": scanned.s_plus, "s_minus": scanned.s_minus,
                                             "s_scale": scanned.s_scale}, limits, alarms, arl0, design)


def _in_control(kind: str, deployed: DeploymentRecord | None, url: str | None) -> InControl | None:
    """The deployed run's residuals of a period in control, where the domain's decide module offers them
    (``in_control_residuals``), else None."""
    offer = getattr(decider_of(registry.get(kind)), "in_control_residuals", None) if deployed else None
    if deployed is None or offer is None:
        return None
    found = offer(report_folder(get_run(deployed.run_id, url=url)), str(deployed.settings["policy"]))
    return found if isinstance(found, InControl) else None


def _usable_intervals(low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Intervals of no width (a certain outcome, by the model) are left out: the robust spread scales them."""
    flat = ~(high > low)
    return np.where(flat, np.nan, low), np.where(flat, np.nan, high)
