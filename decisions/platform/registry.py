"""The one list of domains: every name the CLI, the runner, the benches and the app know."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from decisions.energy.building.entry import DOMAIN as BUILDING
from decisions.energy.gas_storage.entry import DOMAIN as GAS_STORAGE
from decisions.errors import InputError
from decisions.finance.pension.entry import DOMAIN as PENSION
from decisions.finance.wealth.entry import DOMAIN as WEALTH
from decisions.health.chronic.entry import DOMAIN as CHRONIC
from decisions.health.pharma.entry import DOMAIN as PHARMA
from decisions.kit.domain import Domain
from decisions.mobility.traffic.entry import DOMAIN as TRAFFIC
from decisions.recsys.utility.entry import DOMAIN as UTILITY
from decisions.telecom.comp.entry import DOMAIN as COMP
from decisions.telecom.splitfl.entry import DOMAIN as SPLITFL

DOMAINS: tuple[Domain, ...] = (GAS_STORAGE, BUILDING, PENSION, WEALTH, PHARMA, COMP, UTILITY, SPLITFL, TRAFFIC, CHRONIC)
"""Every domain, in the order the CLI and the app list them."""

MAIN: Domain = GAS_STORAGE
"""The domain of ``decisions demo`` (its ``demo_spec``)."""

_BY_NAME: dict[str, Domain] = {d.name: d for d in DOMAINS}


def names() -> tuple[str, ...]:
    """The known domain names (job kinds, bench names)."""
    return tuple(_BY_NAME)


def known() -> str:
    """The known names as one comma-separated string, for error messages."""
    return ", ".join(names())


def find(name: str) -> Domain | None:
    """The domain called ``name`` (``-`` read as ``_``, so ``gas-storage`` works), or None."""
    return _BY_NAME.get(name.replace("-", "_"))


def get(name: str, *, field: str = "job.kind") -> Domain:
    """The domain called ``name``; raises ``InputError`` on ``field`` listing the known names."""
    found = find(name) if isinstance(name, str) else None
    if found is None:
        raise InputError(field, f"unknown domain {name!r} (known: {known()})")
    return found


def spec_domain(spec: Mapping[str, Any]) -> Domain:
    """The domain a job spec names in ``[job] kind``.

    Raises:
        InputError: no ``[job]`` table, no ``kind``, or an unknown kind.
    """
    table = spec.get("job")
    if table is None:
        raise InputError("job.kind", f"missing: a spec needs a [job] table with kind = one of {known()}")
    if not isinstance(table, Mapping):
        raise InputError("job", "must be a table")
    if "kind" not in table:
        raise InputError("job.kind", f"missing: say which domain runs (one of {known()})")
    return get(table["kind"])
