"""The traffic-signal job: train the signal agents on SUMO, score every controller on held-out demand, report."""

from __future__ import annotations

import math

from decisions.core.progress import Progress, silent
from decisions.mobility.traffic.report import TrafficReport
from decisions.mobility.traffic.spec import TrafficJob

REPORT_MODEL = TrafficReport


def run_job(job: TrafficJob, *, progress: Progress = silent) -> TrafficReport:
    """Run a prepared job and return its report (nothing is recorded here)."""
    from decisions.mobility.traffic.study import run_study

    study = run_study(job, progress)
    metrics = {**study.headline, "agent_train_seconds": study.train_seconds}
    return TrafficReport(
        summary=study.summary, runs=study.runs, training=study.training, replays=study.replays,
        frontier=study.frontier, agents=study.agents, junctions=study.junctions,
        selection=None if study.selection.empty else study.selection,
        metrics={k: float(v) for k, v in metrics.items() if math.isfinite(v)},
    )
