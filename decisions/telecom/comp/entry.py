"""The platform's entry for ``decisions.telecom.comp``: its facts (``domain.toml``) and its modules, imported on
first use."""

from decisions.kit.domain import Domain, RunModules, SpecModule


def _spec() -> SpecModule:
    from decisions.telecom.comp import spec

    return spec


def _modules() -> RunModules:
    from decisions.telecom.comp import bench, decide, job

    return RunModules(job, bench, decide)


DOMAIN = Domain.declared(__file__, _spec, _modules)
"""The comp domain's entry in ``decisions.platform.registry`` (its facts in ``domain.toml``)."""
