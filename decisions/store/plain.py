"""The store's JSON: the check of what it keeps (settings, figures, states, actions, outcomes: plain
JSON only) and the engine's encoder and decoder (orjson, with the standard library where orjson
refuses a value the standard library takes: an integer beyond 64 bits, a non-finite literal)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import orjson

from decisions.errors import InputError

_OPTIONS = orjson.OPT_NON_STR_KEYS


def _float_subclass(value: Any) -> float:
    """orjson's ``default``: a float subclass (numpy's float64) as the float the standard library writes."""
    if isinstance(value, float):
        return float(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def json_text(value: Any) -> str:
    """``value`` as JSON text (the engine's ``json_serializer``); non-finite floats become null."""
    try:
        return orjson.dumps(value, default=_float_subclass, option=_OPTIONS).decode()
    except TypeError:
        return json.dumps(_finite(value))


def json_value(text: str | bytes) -> Any:
    """JSON text read back (the engine's ``json_deserializer``)."""
    try:
        return orjson.loads(text if type(text) is str or type(text) is bytes else str(text))
    except orjson.JSONDecodeError:
        return json.loads(text)


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float, at any depth of dicts, lists and tuples, replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


class JsonText(str):
    """JSON text already checked by ``json_document``: the store writes it as it is."""


def json_document(value: Mapping[str, Any], field: str = "settings") -> JsonText:
    """``value`` as the strict JSON object text the store keeps: non-finite numbers (at any depth)
    become null, tuples lists.

    Raises:
        InputError: on ``field`` when ``value`` is not a mapping or holds something JSON cannot hold (an
            object, a tuple key...).
    """
    if type(value) is dict:
        try:  # the usual case, at C speed (orjson writes a non-finite float as null)
            return JsonText(orjson.dumps(value, default=_float_subclass).decode())
        except TypeError:
            pass
    elif not isinstance(value, Mapping):
        raise InputError(field, f"must be a JSON object, not {type(value).__name__}")
    clean = _finite(value)
    try:
        return JsonText(json.dumps(clean, allow_nan=False))
    except (TypeError, ValueError) as err:
        raise InputError(field, f"must be plain JSON ({err})") from None


def plain_json(value: Mapping[str, Any], field: str = "settings") -> dict[str, Any]:
    """``value`` as a strict JSON object, as the store will read it back (``json_document`` read back).

    Raises:
        InputError: as ``json_document``.
    """
    return json_value(json_document(value, field))


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
