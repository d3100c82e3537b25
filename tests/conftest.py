"""How pytest-xdist splits the suite between the two workers.

``make test`` runs ``pytest -n 2 --dist loadgroup``: each test module is one group (kept on
one worker, so its module-scoped fixtures run once), except the domain conformance kit, whose
tests are grouped per domain so the two workers share the six domains' tiny jobs and benches.
"""

from __future__ import annotations

import pytest

PER_DOMAIN_MODULES = ("tests/jobs/test_conformance.py",)
"""Modules whose parametrized tests form one xdist group per domain (parameter ``name``)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put each test in an xdist group: its module, or its module and domain for the conformance kit."""
    for item in items:
        group = item.nodeid.split("::")[0]
        callspec = getattr(item, "callspec", None)
        if group in PER_DOMAIN_MODULES and callspec is not None and "name" in callspec.params:
            group = f"{group}[{callspec.params['name']}]"
        item.add_marker(pytest.mark.xdist_group(group))
