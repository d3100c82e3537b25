"""Lazy public names for a package: import a name's module only when the name is first used.

A domain package's ``__init__`` must stay light (the platform's registry imports it to read
its ``DOMAIN`` entry) while still offering its public API (``from decisions.telecom.comp
import CompEnv``). ``lazy_exports`` gives it the module-level ``__getattr__`` and
``__dir__`` (PEP 562) that do this.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a package whose public names load on first use.

    Args:
        package: the package's ``__name__``.
        exports: public name -> the submodule (relative to ``package``) that defines it.

    Returns:
        ``(__getattr__, __dir__)`` to assign at the package's module level.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    return __getattr__, __dir__
