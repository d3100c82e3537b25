"""The platform's entry for ``decisions.energy.gas_storage``: its facts (``domain.toml``) and its modules, imported on
first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from decisions.kit.domain import Domain, RunModules, SpecModule

if TYPE_CHECKING:
    from decisions.kit.decide import DecideModule


def _spec() -> SpecModule:
    from decisions.energy.gas_storage import spec

    return spec


def _modules() -> RunModules:
    from decisions.energy.gas_storage import bench, job

    return RunModules(job, bench)


def _decider() -> DecideModule:
    from decisions.energy.gas_storage import decide

    return decide


DOMAIN = Domain.declared(__file__, _spec, _modules, _decider)
"""The gas_storage domain's entry in ``decisions.platform.registry`` (its facts in ``domain.toml``)."""
