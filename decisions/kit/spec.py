"""Job specifications: TOML files and their parameter sweeps.

A ``[sweep]`` table maps dotted keys (quoted or as nested tables) to lists of values;
``expand_sweep`` turns a spec into the Cartesian grid of specs.
"""

from __future__ import annotations

import copy
import itertools
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

SWEEP_KEY = "sweep"

_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column \d+\)\s*$")
_TOML_END = re.compile(r"\s*\(at end of document\)\s*$")


class SpecError(ValueError):
    """A job specification that cannot be read or expanded; the message is one line."""


def load_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a TOML file.

    Raises:
        SpecError: ``"FILE: cannot read: ..."`` when the file cannot be read or is not UTF-8,
            ``"FILE: invalid TOML at line N: ..."`` when it does not parse.
    """
    file = Path(path)
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise SpecError(f"{file}: cannot read: {exc.strerror or exc}") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{file}: cannot read: not UTF-8 text (byte {exc.start})") from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line, message = _toml_error_position(str(exc), text)
        raise SpecError(f"{file}: invalid TOML at line {line}: {message}") from exc


def _toml_error_position(message: str, text: str) -> tuple[int, str]:
    """Split a tomllib error message into (line number, message without position)."""
    match = _TOML_POSITION.search(message)
    if match:
        return int(match.group(1)), message[: match.start()]
    match = _TOML_END.search(message)
    if match:
        return max(text.count("\n") + (0 if text.endswith("\n") else 1), 1), message[: match.start()]
    return 1, message


def _flatten_sweep(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Flatten nested sweep tables into dotted keys (``{"a": {"b": [..]}}`` -> ``{"a.b": [..]}``)."""
    flat: dict[str, Any] = {}
    for key, value in table.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flatten_sweep(value, f"{dotted}."))
        else:
            flat[dotted] = value
    return flat


def sweep_grid(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The points of a spec's sweep as dotted key -> value, the last key varying fastest; ``[{}]`` without one.

    Raises:
        SpecError: if ``sweep`` is not a table, a key is malformed, or a value is not a non-empty list.
    """
    sweep = spec.get(SWEEP_KEY)
    if sweep is None:
        return [{}]
    if not isinstance(sweep, Mapping):
        raise SpecError(f"'{SWEEP_KEY}' must be a table of key = [values], got {type(sweep).__name__}")
    axes = _flatten_sweep(sweep)
    for key, values in axes.items():
        if any(not part for part in key.split(".")):
            raise SpecError(f"sweep key {key!r} has an empty part")
        if not isinstance(values, list) or not values:
            raise SpecError(f"sweep key {key!r} must be a non-empty list of values, got {values!r}")
    keys = list(axes)
    return [dict(zip(keys, point, strict=True)) for point in itertools.product(*axes.values())]


def _set_dotted(target: dict[str, Any], key: str, value: Any) -> None:
    """Set ``target["a"]["b"]["c"] = value`` for ``key = "a.b.c"``, creating missing tables."""
    *parents, leaf = key.split(".")
    node = target
    for depth, part in enumerate(parents):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            where = ".".join(parents[: depth + 1])
            raise SpecError(f"sweep key {key!r}: {where!r} is a {type(child).__name__}, not a table")
        node = child
    node[leaf] = copy.deepcopy(value)


def expand_sweep(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One deep copy of ``spec`` per sweep point, without ``sweep`` and with the swept keys set.

    Raises:
        SpecError: if the sweep is malformed or a swept key runs through a value that is not a table.
    """
    base = {key: value for key, value in spec.items() if key != SWEEP_KEY}
    expanded = []
    for point in sweep_grid(spec):
        config = copy.deepcopy(base)
        for key, value in point.items():
            _set_dotted(config, key, value)
        expanded.append(config)
    return expanded
