"""The CoMP batch job: generate data, train PromptDT and the baselines, evaluate (``study``).

``spec.prepare(spec, base_dir)`` (re-exported here) validates a job spec (TOML tables
``[job]``, ``[study]``, ``[tasks]``) into a ``CompJob`` without JAX; ``execute(job)`` runs the
chosen stages inside a recorded run. The stages share one folder (``study.folder``, relative to the spec file), so
``stage = ["data"]``, ``["train"]`` and ``["evaluate"]`` can be three runs, or one run does
all three. The evaluate stage records the headline figures as run metrics and writes the
evaluation table and a chart; the optional ``"conditioning"`` stage checks how the (Prompt-)DTs
respond to a higher target return (``study.conditioning_check``) and writes its table.
Inside a recorded run every training (experts, multi-task PPO, (Prompt-)DTs) checkpoints into the
run's folder (``decisions.jobs.checkpoints``), so a stopped run resumes (``decisions runs resume``).
"""

from __future__ import annotations

from pathlib import Path

from decisions.core.progress import Progress, silent
from decisions.jobs.checkpoints import checkpoint_file
from decisions.telecom.comp.report import CompReport
from decisions.telecom.comp.spec import (  # the light spec module, re-exported for existing callers
    JOB_MODEL,
    KIND,
    CompJob,
    Stage,
    StudySettings,
    TaskSettings,
    prepare,
)
from decisions.telecom.comp.study import run_study

__all__ = [
    "JOB_MODEL", "KIND", "REPORT_MODEL", "CompJob", "CompReport", "Stage", "StudySettings", "TaskSettings",
    "prepare", "run_job",
]

REPORT_MODEL = CompReport
RESUMABLE = True
"""Its trainings checkpoint into the run's folder: a stopped run can be resumed."""


def run_job(job: CompJob, *, progress: Progress = silent) -> CompReport:
    """Run the job's stages; the report carries the evaluation table and the figures."""
    train, unseen = job.tasks.resolve()
    folder = Path(job.study.folder)
    result = run_study(
        folder, job.study.budget(), job.study.stages, train, unseen, seed=job.seed, progress=progress,
        checkpoints=checkpoint_file,
    )
    return CompReport(metrics=result.figures, evaluation=result.table, folder=folder, conditioning=result.conditioning)
