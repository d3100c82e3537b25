"""The one contract every domain plugs into: a ``Domain`` entry, exported as ``DOMAIN`` by its package.

It holds the light facts (read from the package's ``domain.toml``) and two
functions that import the modules on first use: ``spec`` (JAX-free validation) and ``modules``
(the heavy ``job`` and ``bench`` modules, imported together), and, for a domain that decides, a third
that imports its ``decide`` module alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from decisions.core.progress import Progress, silent
from decisions.errors import InputError

if TYPE_CHECKING:
    from decisions.kit.base import JobBase
    from decisions.kit.decide import DecideModule
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


class RunModules(NamedTuple):
    """A domain's heavy modules: what ``Domain.modules`` returns."""

    job: JobModule
    bench: BenchModule


FACTS_FILE = "domain.toml"
"""The file of a domain package holding its ``Domain`` facts."""
@dataclass(frozen=True)
class Domain:
    """How one domain plugs into the platform.

    Attributes:
        name: the job kind, bench name and run kind (``gas_storage``).
        headline: the report's headline metric names, most important first.
        example: file name of its example spec under ``examples/``.
        page: the app page showing its runs (relative to ``apps/``), or None.
        spec: imports and returns the domain's JAX-free ``spec`` module.
        modules: imports and returns its ``job`` and ``bench`` modules.
        smoke_spec: a job spec (without ``job.kind``) that runs in seconds.
        demo_spec: the spec of ``decisions demo`` when this is the main domain, else None.
        headline_figure: ``label`` and ``value`` format templates over its stored bench's figures, for
            the README's domains table (None: its bench's first README row).
        decider: imports and returns its ``decide`` module (``kit.decide.DecideModule``) alone, or None
            where the domain cannot yet put a run's policy to work on a state.
    """

    name: str
    title: str
    summary: str
    headline: tuple[str, ...]
    example: str
    page: str | None
    spec: Callable[[], SpecModule]
    modules: Callable[[], RunModules]
    smoke_spec: Mapping[str, Any] = field(default_factory=dict)
    demo_spec: Mapping[str, Any] | None = None
    headline_figure: Mapping[str, str] | None = None
    decider: Callable[[], DecideModule] | None = None

    @classmethod
    def declared(
        cls, entry_file: str | Path, spec: Callable[[], SpecModule], modules: Callable[[], RunModules],
        decider: Callable[[], DecideModule] | None = None,
    ) -> Domain:
        """The domain whose facts are in the ``domain.toml`` beside ``entry_file`` (its package's ``entry``).

        Raises:
            InputError: the file is missing, is not TOML, lacks a fact, or holds an unknown or mistyped one.
        """
        return cls(**read_facts(Path(entry_file).with_name(FACTS_FILE)), spec=spec, modules=modules, decider=decider)

    def job(self) -> JobModule:
        """The domain's ``job`` module (imported on first use)."""
        return self.modules().job

    def bench(self) -> BenchModule:
        """The domain's ``bench`` module (imported on first use)."""
        return self.modules().bench

    @property
    def package(self) -> str:
        """The domain's package (whose ``entry`` module defines its ``spec`` reference)."""
        return self.spec.__module__.removesuffix(".entry")

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

    def smoke_job(self) -> dict[str, Any]:
        """The ``smoke_spec`` as a job spec of this domain (``job.kind`` set): a job that runs in seconds."""
        spec = {section: dict(table) for section, table in self.smoke_spec.items()}
        spec["job"] = {**spec.get("job", {}), "kind": self.name}
        return spec

    @property
    def smoke_budget(self) -> Mapping[str, Any]:
        """``bench.SMOKE_BUDGET``."""
        return self.bench().SMOKE_BUDGET

    @property
    def example_path(self) -> Path:
        """Path of the example spec in a source checkout."""
        return EXAMPLES / self.example


_TEXT_FACTS = ("name", "title", "summary", "example")
_OPTIONAL_FACTS = {"page": str, "smoke_spec": dict, "demo_spec": dict, "headline_figure": dict}


def read_facts(path: Path) -> dict[str, Any]:
    """A ``domain.toml``'s facts as ``Domain`` keyword arguments (``headline`` as a tuple).

    Raises:
        InputError: the file is missing or not TOML, or a fact is missing, unknown or of the wrong type.
    """
    import tomllib

    field_name = str(path)
    try:
        facts = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InputError(field_name, f"cannot read the domain's facts ({exc})") from None
    unknown = sorted(set(facts) - {*_TEXT_FACTS, "headline", *_OPTIONAL_FACTS})
    if unknown:
        raise InputError(f"{field_name}: {unknown[0]}", "is not a domain fact")
    for key in _TEXT_FACTS:
        if not isinstance(facts.get(key), str) or not facts[key]:
            raise InputError(f"{field_name}: {key}", "is required, a non-empty string")
    headline = facts.get("headline")
    if not isinstance(headline, list) or not headline or not all(isinstance(h, str) for h in headline):
        raise InputError(f"{field_name}: headline", "is required, a non-empty list of metric names")
    for key, kind in _OPTIONAL_FACTS.items():
        if key in facts and not isinstance(facts[key], kind):
            raise InputError(f"{field_name}: {key}", f"must be a {'table' if kind is dict else 'string'}")
    figure = facts.get("headline_figure")
    if figure is not None and (sorted(figure) != ["label", "value"] or not all(isinstance(v, str) for v in figure.values())):
        raise InputError(f"{field_name}: headline_figure", "must hold exactly two strings, label and value")
    return {**facts, "headline": tuple(headline), "page": facts.get("page")}
