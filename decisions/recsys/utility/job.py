"""The utility-weight job: simulate logs (or read the user's), train the Q-network, sweep lambda, evaluate."""

from __future__ import annotations

import math

from decisions.core.progress import Progress, silent
from decisions.recsys.utility.report import UtilityReport
from decisions.recsys.utility.spec import UtilityJob

REPORT_MODEL = UtilityReport


def run_job(job: UtilityJob, *, progress: Progress = silent) -> UtilityReport:
    """Run a prepared job and return its report (nothing is recorded here)."""
    from decisions.recsys.utility.logged import run_logged_study
    from decisions.recsys.utility.study import run_study

    if job.logs.path is None:
        study = run_study(job, progress)
    else:
        from decisions.recsys.utility.logs import read_logs

        logs, _ = read_logs(job.logs.path, int(job.weights.matrix().shape[0]))
        study = run_logged_study(job, logs, progress)
    return UtilityReport(
        front=study.front, off_policy=study.off_policy, estimator_errors=study.estimator_errors,
        segments=study.segments, drift=study.drift, obd_front=study.obd_front, model=study.model,
        metrics={k: float(v) for k, v in study.figures.items() if math.isfinite(v)},
    )
