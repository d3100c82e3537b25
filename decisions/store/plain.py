"""The store's check of the JSON it keeps (settings, figures, states, actions, outcomes): plain JSON only."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from decisions.errors import InputError


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float, at any depth of dicts, lists and tuples, replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def plain_json(value: Mapping[str, Any], field: str = "settings") -> dict[str, Any]:
    """``value`` as a strict JSON object: non-finite numbers (at any depth) become None.

    Raises:
        InputError: on ``field`` when ``value`` is not a mapping or holds something JSON cannot hold (an
            object, a tuple key...).
    """
    if not isinstance(value, Mapping):
        raise InputError(field, f"must be a JSON object, not {type(value).__name__}")
    if type(value) is dict:
        try:  # the usual case, checked at C speed: plain and finite already
            json.dumps(value, allow_nan=False)
            return value
        except (TypeError, ValueError):
            pass
    clean = _finite(value)
    try:
        json.dumps(clean, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise InputError(field, f"must be plain JSON ({err})") from None
    return clean


def finite_or_none(value: float | None, field: str) -> float | None:
    """``value`` as a float, None when it is None, nan or infinite.

    Raises:
        InputError: on ``field`` when ``value`` is not a number.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise InputError(field, f"must be a number, not {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(field, f"must be a number, not {value!r}") from None
    return number if math.isfinite(number) else None
