"""Lazy public names for a package: a name's module is imported only when the name is first used,
so a package's ``__init__`` stays light while offering its public API (PEP 562)::

    __getattr__, __dir__, __all__ = lazy_exports(__name__, {
        "env": ("CompEnv", "CompState"),
        "report": ("CompReport",),
    })
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_exports(
    package: str, modules: Mapping[str, Iterable[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``(__getattr__, __dir__, __all__)`` of ``package`` whose public names (submodule -> names) load
    on first use; ``__all__`` is sorted.

    Raises:
        TypeError: a module's names are one string, not a collection of names.
        ValueError: a name is listed under two modules.
    """
    exports: dict[str, str] = {}
    for module, names in modules.items():
        if isinstance(names, str):
            raise TypeError(f"{package}: the names of {module!r} must be a tuple of names, got {names!r}")
        for name in names:
            if exports.setdefault(name, module) != module:
                raise ValueError(f"{package}: {name!r} is listed under {exports[name]!r} and {module!r}")

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    return __getattr__, __dir__, sorted(exports)
