"""The utility-weight job: simulate logs (or read the user's), train the Q-network, sweep lambda, evaluate."""

from __future__ import annotations

from decisions.core.progress import Progress, silent
from decisions.recsys.utility.report import UtilityReport
from decisions.recsys.utility.spec import UtilityJob

REPORT_MODEL = UtilityReport


def run_job(job: UtilityJob, *, progress: Progress = silent) -> UtilityReport:
    """Run a prepared job and return its report (nothing is recorded here): the job unpacked into the
    settings ``study.run_study`` (or, with ``logs.path``, ``logged.run_logged_study``) takes."""
    from decisions.recsys.utility.logged import run_logged_study
    from decisions.recsys.utility.study import run_study

    if job.logs.path is None:
        study = run_study(job.simulator, job.weights, job.logs, job.agent, job.frontier, job.drift, progress=progress)
    else:
        from decisions.recsys.utility.logs import read_logs

        logs, _ = read_logs(job.logs.path, int(job.weights.matrix().shape[0]))
        study = run_logged_study(logs, job.weights, job.simulator.hide_cost, job.agent, job.frontier,
                                 seed=job.logs.seed, progress=progress)
    return UtilityReport(
        front=study.front, off_policy=study.off_policy, estimator_errors=study.estimator_errors,
        segments=study.segments, drift=study.drift, obd_front=study.obd_front, model=study.model,
        metrics=study.metrics(),
    )
