"""The one contract every domain system plugs into: a ``Domain`` entry.

Each domain package exports ``DOMAIN = Domain(...)`` from its ``__init__`` and
``decisions.jobs.registry`` lists them; the CLI (``run``, ``bench``, ``runs``), the
job runner, the benches and the app's Home page read that list and nothing else.

A ``Domain`` holds the light facts (name, title, headline figures, example spec,
app page, tiny budgets for the conformance test) and reaches the heavy pieces by
the template every domain follows, importing them only when they are used:

- ``<package>.spec``: ``JOB_MODEL`` (a ``JobBase`` subclass) and
  ``prepare(spec, base_dir) -> job``. It validates a spec with light modules only
  (pydantic, numpy: never JAX), so a bad spec is refused in well under a second;
- ``<package>.job``: ``REPORT_MODEL`` (a ``TablesReport`` subclass) and
  ``run_job(job, *, progress) -> report``; ``RESUMABLE = True`` where its trainers checkpoint
  into the run's folder (``decisions.jobs.checkpoints``), so ``decisions runs resume`` can
  continue a stopped run;
- ``<package>.bench``: ``run_bench(progress=None, **budget) -> dict`` of figures and
  ``SMOKE_BUDGET``, the ``run_bench`` keyword arguments of a benchmark that runs in seconds.

So importing a domain's scenario module never imports its bench or the platform.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from decisions.core.progress import Progress, silent

if TYPE_CHECKING:
    from decisions.jobs.base import JobBase
    from decisions.jobs.report import TablesReport

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
"""The example specs of a source checkout (``examples/`` beside the package)."""


@dataclass(frozen=True)
class Domain:
    """How one domain system plugs into the platform.

    Attributes:
        name: the job kind (``[job] kind``), bench name and run kind (``gas_storage``).
        title: human title (CLI tables, app).
        package: the domain's package (``decisions.energy.gas_storage``).
        summary: one sentence on what the domain decides.
        headline: the report's headline metric names, most important first (``runs list``
            shows the first one present, the app's Home page all of them).
        example: file name of its example spec under ``examples/``.
        page: the app page showing its runs (relative to ``apps/``), or None.
        smoke_spec: a job spec (without ``job.kind``) that runs in seconds: the conformance
            test runs and records it.
        demo_spec: the spec of ``decisions demo`` when this is the main domain, else None.
    """

    name: str
    title: str
    package: str
    summary: str
    headline: tuple[str, ...]
    example: str
    page: str | None
    smoke_spec: Mapping[str, Any] = field(default_factory=dict)
    demo_spec: Mapping[str, Any] | None = None

    def module(self, part: str) -> ModuleType:
        """Import one of the domain's modules by its template name (``job``, ``bench``)."""
        return importlib.import_module(f"{self.package}.{part}")

    @property
    def job_model(self) -> type[JobBase]:
        """The validated job model (``<package>.spec.JOB_MODEL``)."""
        return self.module("spec").JOB_MODEL

    @property
    def report_model(self) -> type[TablesReport]:
        """The report class (``<package>.job.REPORT_MODEL``); ``report_model.load(run)`` reopens a run."""
        return self.module("job").REPORT_MODEL

    def prepare(self, spec: Mapping[str, Any], base_dir: Path | None = None) -> JobBase:
        """Validate a spec into the domain's job (raises ``InputError`` naming the field).

        Only the domain's light ``spec`` module is imported: no JAX before the input is known good.
        """
        return self.module("spec").prepare(spec, base_dir)

    def job_from_config(self, config: Mapping[str, Any]) -> JobBase:
        """The job of a recorded run, rebuilt from the configuration the store holds (``JobBase.config``).

        Raises:
            InputError: the configuration no longer validates (naming the first bad field).
        """
        from pydantic import ValidationError

        from decisions.errors import from_validation_error

        try:
            return self.job_model.model_validate(dict(config))
        except ValidationError as exc:
            raise from_validation_error(exc, data=config) from None

    @property
    def resumable(self) -> bool:
        """Whether a stopped run of this domain can be resumed (``<package>.job.RESUMABLE``)."""
        return bool(getattr(self.module("job"), "RESUMABLE", False))

    def run_job(self, job: JobBase, *, progress: Progress = silent) -> TablesReport:
        """Run a prepared job and return its report (nothing is recorded)."""
        return self.module("job").run_job(job, progress=progress)

    def run_bench(self, progress: Callable[[str, int, int], None] | None = None, **budget: Any) -> dict[str, Any]:
        """Run the domain's benchmark; ``budget`` overrides its defaults (e.g. ``smoke_budget``).

        Returns:
            The figures as a flat JSON-ready dict (numpy scalars become Python numbers).
        """
        from decisions.jobs.bench_store import json_ready

        return json_ready(self.module("bench").run_bench(progress, **budget))

    @property
    def smoke_budget(self) -> Mapping[str, Any]:
        """``run_bench`` keyword arguments of a benchmark that runs in seconds (``bench.SMOKE_BUDGET``)."""
        return self.module("bench").SMOKE_BUDGET

    def execute(
        self,
        job: JobBase,
        *,
        url: str | None = None,
        progress: Progress = silent,
        sweep_id: str | None = None,
        resume: int | None = None,
    ) -> int:
        """Run a prepared job inside a recorded run (config, metrics, report files).

        With ``resume``, continue that stopped run of this job from its checkpoints, into the same
        record (``record.execute_recorded``).

        Returns:
            The run id. On an exception the run is recorded as failed and the exception re-raised.
        """
        from decisions.jobs.record import execute_recorded

        return execute_recorded(
            self.name, job.name, job.config(), lambda: self.run_job(job, progress=progress),
            url=url, sweep_id=sweep_id, output_dir=job.output_dir, resume=resume,
        )

    @property
    def example_path(self) -> Path:
        """Path of the example spec in a source checkout."""
        return EXAMPLES / self.example
