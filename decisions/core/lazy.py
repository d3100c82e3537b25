"""Lazy public names for a package: import a name's module only when the name is first used.

A domain package's ``__init__`` must stay light (the platform's registry imports it to read
its ``DOMAIN`` entry) while still offering its public API (``from decisions.telecom.comp
import CompEnv``). ``lazy_exports`` gives it the module-level ``__getattr__``, ``__dir__``
(PEP 562) and ``__all__`` that do this, from one declaration read like its imports::

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
    """The ``__getattr__``, ``__dir__`` and ``__all__`` of a package whose public names load on first use.

    Args:
        package: the package's ``__name__``.
        modules: submodule (relative to ``package``) -> the public names it defines.

    Returns:
        ``(__getattr__, __dir__, __all__)`` to assign at the package's module level;
        ``__all__`` is the sorted public names.

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
