"""The one contract every domain plugs into: a ``Domain`` entry, exported as ``DOMAIN`` by its package.

It holds the light facts and three functions that import the heavy modules on first use:
``spec()`` (JAX-free validation), ``job()`` (running) and ``bench()`` (the benchmark).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from decisions.core.progress import Progress, silent

if TYPE_CHECKING:
    from decisions.kit.base import JobBase
    from decisions.kit.report import TablesReport

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


class SpecModule(Protocol):
    """A domain's ``spec`` module: validates a spec into its job without importing JAX."""

    JOB_MODEL: type[JobBase]

    def prepare(self, spec: Mapping[str, Any], base_dir: Path | None = None) -> JobBase: ...


class JobModule(Protocol):
    """A domain's ``job`` module: runs a validated job into its report (``RESUMABLE`` if it checkpoints)."""

    REPORT_MODEL: type[TablesReport]

    def run_job(self, job: Any, *, progress: Progress = silent) -> TablesReport: ...


class BenchModule(Protocol):
    """A domain's ``bench`` module: its figures as a flat dict; ``SMOKE_BUDGET`` runs in seconds."""

    SMOKE_BUDGET: Mapping[str, Any]

    def run_bench(self, progress: Callable[[str, int, int], None] | None = None, **budget: Any) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Domain:
    """How one domain plugs into the platform.

    Attributes:
        name: the job kind, bench name and run kind (``gas_storage``).
        headline: the report's headline metric names, most important first.
        example: file name of its example spec under ``examples/``.
        page: the app page showing its runs (relative to ``apps/``), or None.
        smoke_spec: a job spec (without ``job.kind``) that runs in seconds.
        demo_spec: the spec of ``decisions demo`` when this is the main domain, else None.
    """

    name: str
    title: str
    summary: str
    headline: tuple[str, ...]
    example: str
    page: str | None
    spec: Callable[[], SpecModule]
    job: Callable[[], JobModule]
    bench: Callable[[], BenchModule]
    smoke_spec: Mapping[str, Any] = field(default_factory=dict)
    demo_spec: Mapping[str, Any] | None = None

    @property
    def package(self) -> str:
        """The domain's package (where its ``spec`` reference is defined)."""
        return self.spec.__module__

    @property
    def job_model(self) -> type[JobBase]:
        """The validated job model (``spec.JOB_MODEL``)."""
        return self.spec().JOB_MODEL

    @property
    def report_model(self) -> type[TablesReport]:
        """The report class (``job.REPORT_MODEL``)."""
        return self.job().REPORT_MODEL

    def prepare(self, spec: Mapping[str, Any], base_dir: Path | None = None) -> JobBase:
        """Validate a spec into the domain's job (raises ``InputError`` naming the field); no JAX is imported."""
        return self.spec().prepare(spec, base_dir)

    def job_from_config(self, config: Mapping[str, Any]) -> JobBase:
        """The job of a recorded run, rebuilt from its stored configuration.

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
        """Whether a stopped run of this domain can be resumed (``job.RESUMABLE``)."""
        return bool(getattr(self.job(), "RESUMABLE", False))

    def run_job(self, job: JobBase, *, progress: Progress = silent) -> TablesReport:
        """Run a prepared job and return its report (nothing is recorded)."""
        return self.job().run_job(job, progress=progress)

    @property
    def smoke_budget(self) -> Mapping[str, Any]:
        """``bench.SMOKE_BUDGET``."""
        return self.bench().SMOKE_BUDGET

    @property
    def example_path(self) -> Path:
        """Path of the example spec in a source checkout."""
        return EXAMPLES / self.example
