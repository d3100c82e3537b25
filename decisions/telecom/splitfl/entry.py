"""The platform's entry for ``decisions.telecom.splitfl``: its facts (``domain.toml``) and its modules, imported on
first use."""

from decisions.kit.domain import Domain, RunModules, SpecModule


def _spec() -> SpecModule:
    from decisions.telecom.splitfl import spec

    return spec


def _modules() -> RunModules:
    from decisions.telecom.splitfl import bench, decide, job

    return RunModules(job, bench, decide)


DOMAIN = Domain.declared(__file__, _spec, _modules)
"""The splitfl domain's entry in ``decisions.platform.registry`` (its facts in ``domain.toml``)."""
