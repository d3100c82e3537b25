"""The ``comp`` batch job: runs the chosen study stages (``study.stages``) inside a recorded run.

The stages share one folder (``study.folder``, relative to the spec file); the evaluate stage records
the headline figures and writes the evaluation table and a chart. Trainings checkpoint into the run's
folder, so a stopped run resumes.
"""

from __future__ import annotations

from pathlib import Path

from decisions.core.progress import Progress, silent
from decisions.kit.checkpoints import checkpoint_file
from decisions.telecom.comp.deployable import deployable
from decisions.telecom.comp.report import CompReport
from decisions.telecom.comp.spec import CompJob
from decisions.telecom.comp.study.context import StudyContext
from decisions.telecom.comp.study.stages import run_study

__all__ = ["REPORT_MODEL", "run_job"]

REPORT_MODEL = CompReport
RESUMABLE = True
"""Its trainings checkpoint into the run's folder: a stopped run can be resumed."""


def run_job(job: CompJob, *, progress: Progress = silent) -> CompReport:
    """Run the job's stages; the report carries the evaluation table and the figures."""
    train, unseen = job.tasks.resolve()
    folder = Path(job.study.folder)
    own = job.own_tasks()
    ctx = StudyContext(folder, job.study.budget(), train, unseen, job.seed, progress, checkpoint_file, own)
    result = run_study(ctx, job.study.stages)
    offered = deployable(folder, [*train, *unseen, *own], ctx.budget.eval_episodes, result.table)
    return CompReport(metrics=result.figures, evaluation=result.table, folder=folder, conditioning=result.conditioning,
                      deployable=offered)
