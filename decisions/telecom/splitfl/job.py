"""The split-federated learning job: train the split-point agents, run every strategy for real, report."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from decisions.core.progress import Progress, silent
from decisions.telecom.splitfl.report import SplitFLReport, client_rows, round_rows
from decisions.telecom.splitfl.spec import SplitFLJob

REPORT_MODEL = SplitFLReport


def run_job(job: SplitFLJob, *, progress: Progress = silent) -> SplitFLReport:
    """Run a prepared job and return its report (nothing is recorded here)."""
    from decisions.telecom.splitfl.deployable import fleet_description
    from decisions.telecom.splitfl.study import run_study, split_equivalence_max_err

    study = run_study(job, progress)
    rounds = pd.concat([round_rows(seed, name, h, study.tier_names)
                        for seed, runs in study.histories.items() for name, h in runs.items()], ignore_index=True)
    first = min(study.histories)
    clients = pd.concat([client_rows(name, h, study.tier_names) for name, h in study.histories[first].items()],
                        ignore_index=True)
    metrics = {
        **study.headline,
        "split_equivalence_max_err": split_equivalence_max_err(job.arch.value, job.training),
        "centralised_test_acc": float(np.mean(list(study.centralised.values()))),
        "rounds_per_second": study.rounds_per_second,
        "agent_train_seconds": study.agent_seconds,
    }
    return SplitFLReport(
        summary=study.summary, runs=study.runs, rounds=rounds, clients=clients, committees=study.committees,
        fleet=fleet_description(job),
        metrics={k: float(v) for k, v in metrics.items() if math.isfinite(v)},
        target_accuracy=float(job.training.target_share * study.centralised[first]),
    )
