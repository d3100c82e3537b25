"""Strict reading of user input, by a field's declared type, before pydantic's own checks: no
boolean or text where a number is meant (nor a number where a boolean is), every number finite,
an integer within 64 bits, a float within float32's range unless its field is marked ``Float64``.
``StrictInput`` applies it to every field of a model; ``Seed`` is the type of a random seed.
"""

from __future__ import annotations

import math
import numbers
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from operator import call, itemgetter
from typing import Annotated, Any, Union, get_args, get_origin

import numpy as np
from pydantic import BaseModel, Field, GetCoreSchemaHandler, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import InitErrorDetails, PydanticCustomError, SchemaValidator, core_schema

from decisions.core.numbers import (
    FLOAT32_MAX,
    NEAR_FLOAT32_ZERO,
    finite_floats,
    float32_problem,
    plainly_float32s,
)

SEED_MAX = 2**32 - 1
"""Largest seed (what numpy's and most libraries' generators take)."""

Seed = Annotated[int, Field(ge=0, le=SEED_MAX)]
"""A random seed: an integer in ``[0, 2**32 - 1]``."""

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True)
class Float64:
    """``Annotated`` metadata: the float is computed in float64, so float32's range does not apply."""


def shown(value: object) -> str:
    """A user's value as the spec writes it (``true``, ``'90'``, ``1e+39``)."""
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 else repr(value[:37] + "...")
    text = str(value)
    return text if len(text) <= 24 else f"{text[:8]}...{text[-4:]} ({len(text.lstrip('-'))} digits)"


def _not_a_number(value: object, what: str) -> str | None:
    """The problem of a bool or text given for a number (``what``: "an integer", "a number")."""
    if isinstance(value, bool | np.bool_):
        return f"expected {what}, got the boolean {shown(value)}"
    if isinstance(value, str | bytes):
        return f"expected {what}, got the text {shown(value)}"
    return None


def int_problem(value: object) -> str | None:
    """What is wrong with ``value`` for an integer field (bool, text, not finite, beyond 64 bits), or None."""
    problem = _not_a_number(value, "an integer")
    if problem or not isinstance(value, numbers.Real):
        return problem
    if isinstance(value, numbers.Integral):
        whole = int(value)
    else:
        number = float(value)
        if not math.isfinite(number):
            return f"{shown(value)} is not finite"
        if not number.is_integer():
            return None  # pydantic names the fractional part
        whole = int(number)
    if not INT64_MIN <= whole <= INT64_MAX:
        return f"{shown(value)} is beyond the 64-bit integer range"
    return None


def float_problem(value: object, *, float64: bool = False) -> str | None:
    """What is wrong with ``value`` for a float field (bool, text, not finite, beyond float32 unless
    ``float64``, rounding to 0 in float32), or None."""
    if type(value) is float:  # the common case, without the checks a float cannot fail
        if math.isnan(value) or math.isinf(value):
            return f"{shown(value)} is not finite"
        return None if float64 else float32_problem(value)
    problem = _not_a_number(value, "a number")
    if problem or not isinstance(value, numbers.Real):
        return problem
    try:
        number = float(value)
    except OverflowError:
        return f"{shown(value)} is out of range"
    if math.isnan(number) or math.isinf(number):
        return f"{shown(value)} is not finite"
    return None if float64 else float32_problem(number)


def bool_problem(value: object) -> str | None:
    """What is wrong with ``value`` for a boolean field (anything but true or false), or None."""
    if isinstance(value, bool | np.bool_):
        return None
    if isinstance(value, numbers.Number | str):
        return f"expected true or false, got {shown(value)}"
    return None


Problem = tuple[tuple[str | int, ...], str]
"""Where a problem lies inside a value (list indexes, mapping keys) and what it is."""


def value_problem(annotation: Any, value: object, *, float64: bool = False) -> Problem | None:
    """What is wrong with a user's ``value`` for a field of type ``annotation``, or None; list and
    tuple items and mapping values are checked one by one (the location names the item)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        base, *metadata = get_args(annotation)
        return value_problem(base, value, float64=float64 or any(isinstance(m, Float64) for m in metadata))
    if origin is Union or origin is types.UnionType:
        return None if value is None else _union_problem(get_args(annotation), value, float64=float64)
    if annotation is bool or annotation is int or annotation is float:
        problem = (bool_problem(value) if annotation is bool else int_problem(value) if annotation is int
                   else float_problem(value, float64=float64))
        return None if problem is None else ((), problem)
    if origin in (list, tuple, Sequence) and isinstance(value, list | tuple):
        return _items_problem(get_args(annotation), origin, value, float64=float64)
    if origin in (dict, Mapping) and isinstance(value, Mapping) and len(get_args(annotation)) == 2:
        for key, entry in value.items():
            found = value_problem(get_args(annotation)[1], entry, float64=float64)
            if found:
                return (key, *found[0]), found[1]
    return None


def _union_problem(members: tuple[Any, ...], value: object, *, float64: bool) -> Problem | None:
    """The problem of the first member of a union that could take ``value``'s kind, unless another
    such member takes it (a list for a list member, a mapping for a table, anything for the others)."""
    problems = []
    for member in members:
        if member is type(None) or not _could_take(member, value):
            continue
        found = value_problem(member, value, float64=float64)
        if found is None:
            return None
        problems.append(found)
    return problems[0] if problems else None


def _could_take(annotation: Any, value: object) -> bool:
    """Whether ``value`` is of the kind ``annotation`` reads: a list or tuple for a sequence, a
    mapping for a mapping or a table, anything else for a scalar type."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _could_take(get_args(annotation)[0], value)
    if origin in (list, tuple, Sequence):
        return isinstance(value, list | tuple)
    if origin in (dict, Mapping) or (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
        return isinstance(value, Mapping)
    return not isinstance(value, list | tuple | Mapping)


def _items_problem(args: tuple[Any, ...], origin: Any, value: Sequence[object], *, float64: bool) -> Problem | None:
    """The first problem among the items of a list or tuple, located at its index."""
    if origin is tuple and args and args[-1] is not Ellipsis:
        item_types = list(args)
    else:
        item_types = [args[0] if args else Any] * len(value)
    for index, (item_type, item) in enumerate(zip(item_types, value, strict=False)):
        found = value_problem(item_type, item, float64=float64)
        if found:
            return (index, *found[0]), found[1]
    return None


def field_problem(field: FieldInfo, value: object) -> Problem | None:
    """``value_problem`` for a model field (its annotation and ``Float64`` marker)."""
    float64 = any(isinstance(m, Float64) for m in field.metadata)
    return value_problem(field.annotation, value, float64=float64)


def _unwrapped(annotation: Any, float64: bool) -> tuple[Any, bool]:
    """``annotation`` without its ``Annotated`` layers, and whether ``float64`` or one of them marks it ``Float64``."""
    while get_origin(annotation) is Annotated:
        annotation, *metadata = get_args(annotation)
        float64 = float64 or any(isinstance(m, Float64) for m in metadata)
    return annotation, float64


def _scalar_check(annotation: Any, float64: bool) -> tuple[Any, str | None]:
    """The problem function of a plain ``bool``, ``int`` or ``float`` annotation (``Annotated`` unwrapped)
    and its kind (``bool``, ``int``, ``f32``, ``f64``), or ``(None, None)`` for any other."""
    annotation, float64 = _unwrapped(annotation, float64)
    if annotation is bool:
        return bool_problem, "bool"
    if annotation is int:
        return int_problem, "int"
    if annotation is float:
        return partial(float_problem, float64=float64), "f64" if float64 else "f32"
    return None, None


def _kind(annotation: Any, float64: bool) -> str | None:
    """The kind ``_glance`` reads a value of ``annotation`` by: a plain scalar's (``_scalar_check``), a list's
    or a model's (``_items_kind``), an optional one's (``_optional_kind``), or None."""
    return (_scalar_check(annotation, float64)[1] or _items_kind(annotation, float64)
            or _optional_kind(annotation, float64) or _text_kind(annotation))


def _text_kind(annotation: Any) -> str | None:
    """``"text"`` for ``str`` (``Annotated`` unwrapped): ``value_problem`` finds nothing in text, whatever
    the value (pydantic checks its type), so a text field passes at a glance."""
    return "text" if _unwrapped(annotation, False)[0] is str else None


def _items_kind(annotation: Any, float64: bool) -> str | None:
    """``"list:<kind>"`` for a list or homogeneous tuple of items with a kind (``_kind``; ``"list:list:f32"``
    for a table of floats), ``"model"`` for a model (it checks its own fields when it is read), else None;
    ``Annotated`` unwrapped."""
    annotation, float64 = _unwrapped(annotation, float64)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "model"
    args = get_args(annotation)
    if (get_origin(annotation) is list and len(args) == 1) or (get_origin(annotation) is tuple and args[1:] == (Ellipsis,)):
        kind = _kind(args[0], float64)
        return None if kind is None else f"list:{kind}"
    return None


def _optional_kind(annotation: Any, float64: bool) -> str | None:
    """``"opt:<kind>"`` for ``X | None`` where ``X`` has a kind (``_kind``), else None; ``Annotated`` unwrapped."""
    annotation, float64 = _unwrapped(annotation, float64)
    if get_origin(annotation) not in (Union, types.UnionType):
        return None
    members = [m for m in get_args(annotation) if m is not type(None)]
    if len(members) != 1:  # a union's members are at least two: one left means the other was None
        return None
    kind = _kind(members[0], float64)
    return None if kind is None else f"opt:{kind}"


def _f32_fine(value: object) -> bool:  # plainly_float32 written out: a call fewer per float
    return type(value) is float and (value == 0.0 or NEAR_FLOAT32_ZERO <= abs(value) <= FLOAT32_MAX)


def _f64_fine(value: object) -> bool:
    return type(value) is float and math.isfinite(value)


def _int_fine(value: object) -> bool:
    return type(value) is int and INT64_MIN <= value <= INT64_MAX


def _bool_fine(value: object) -> bool:
    return type(value) is bool


def _never_fine(value: object) -> bool:
    return False


def _always_fine(value: object) -> bool:
    return True


_SCALAR_GLANCES = {"f32": _f32_fine, "f64": _f64_fine, "int": _int_fine, "bool": _bool_fine, "model": _always_fine,
                   "text": _always_fine}

def _f32_items_fine(value: Sequence[object]) -> bool:
    """``_f32_fine`` of every item, all at once (``plainly_float32s`` of a list of floats)."""
    return tuple(map(type, value)).count(float) == len(value) and plainly_float32s(value)  # type: ignore[arg-type]


def _glance(kind: str | None) -> Callable[[object], bool]:
    """Whether a value passes a field of ``kind`` (a scalar's, a model's, a ``list:`` or ``opt:`` one's) at a glance
    (the common case; False sends it to the full check, which names any problem)."""
    if kind is not None and kind.startswith("opt:"):
        present = _glance(kind[4:])
        return lambda value: value is None or present(value)
    if kind is None or not kind.startswith("list:"):
        return _SCALAR_GLANCES.get(kind or "", _never_fine)
    if kind == "list:model":  # each model checks its own fields when it is read
        return lambda value: type(value) is list or type(value) is tuple
    whole = {"list:f32": _f32_items_fine, "list:f64": finite_floats}.get(kind)
    if whole is not None:
        return lambda value: (type(value) is list or type(value) is tuple) and whole(value)  # type: ignore[arg-type]
    item = _glance(kind[5:])

    def items_fine(value: object) -> bool:
        return (type(value) is list or type(value) is tuple) and all(map(item, value))  # type: ignore[arg-type]

    return items_fine


FieldCheck = tuple[str, FieldInfo, Any, Callable[[object], bool], str | None]
"""A field's key in the input, its info, its scalar problem function (None: ``field_problem`` reads it),
its check at a glance and its kind (``_kind``)."""


@lru_cache(maxsize=512)
def _field_checks(model: type[BaseModel]) -> tuple[FieldCheck, ...]:
    """Each field of ``model`` as a ``FieldCheck``."""
    found = []
    for name, field in model.model_fields.items():
        float64 = any(isinstance(m, Float64) for m in field.metadata)
        scalar, kind = _scalar_check(field.annotation, float64)
        kind = kind or _kind(field.annotation, float64)
        found.append((field.alias or name, field, scalar, _glance(kind), kind))
    return tuple(found)


@lru_cache(maxsize=512)
def _model_glance(model: type[BaseModel]) -> Callable[[dict[str, Any]], bool]:
    """Whether every field of ``model`` in a dict passes at a glance, in one call: a field absent or None
    passes (the full check finds nothing in either), a model's field passes (it checks its own), so does
    text, a scalar's by its exact type and range, a list's or an optional one's by its ``_glance``, any
    other fails. True means ``strict_errors`` finds nothing; False sends the dict to it."""
    checks = _field_checks(model)
    scalar_kinds = ("bool", "int", "f32", "f64")
    fines = tuple((key, fine) for key, _, _, fine, kind in checks if kind in scalar_kinds)
    others = tuple((key, fine) for key, _, _, fine, kind in checks if kind not in (*scalar_kinds, "model", "text"))
    getter = itemgetter(*(key for key, _ in fines)) if fines else (lambda data: ())
    scalar_checks = tuple(check for _, check in fines)
    single = len(fines) == 1

    def one_by_one(data: dict[str, Any]) -> bool:
        """Every field by its own glance, None or absent passing."""
        get = data.get
        return all(v is None or check(v) for check, v in ((check, get(key)) for key, check in fines + others))

    def fine(data: dict[str, Any]) -> bool:
        try:
            values = getter(data)
        except KeyError:  # a field left out: each field in turn
            return one_by_one(data)
        if single:
            values = (values,)
        if not all(map(call, scalar_checks, values)):  # every scalar present: by its exact type and range
            return one_by_one(data)
        for key, check in others:
            v = data.get(key)
            if v is not None and not check(v):
                return False
        return True

    return fine


def strict_errors(model: type[BaseModel], data: Mapping[str, Any]) -> list[InitErrorDetails]:
    """Pydantic error details for every field of ``model`` in ``data`` that ``field_problem`` refuses."""
    errors: list[InitErrorDetails] = []
    for key, field, scalar, fine, _ in _field_checks(model):
        if key not in data:
            continue
        value = data[key]
        if fine(value):
            continue
        if scalar is not None:
            problem = scalar(value)
            found = None if problem is None else ((), problem)
        else:
            found = field_problem(field, value)
        if found:
            where, problem = found
            errors.append(InitErrorDetails(
                type=PydanticCustomError("strict_input", "{problem}", {"problem": problem}),
                loc=(key, *where), input=value,
            ))
    return errors


def strict_check(model: type[BaseModel], data: Any) -> Any:
    """``data`` unchanged; a ``ValidationError`` locating every field ``strict_errors`` finds (a dict
    whose every field passes at a glance, ``_model_glance``, without looking further)."""
    if type(data) is dict and _model_glance(model)(data):
        return data
    return _checked_in_full(model, data)


def _checked_in_full(model: type[BaseModel], data: Any) -> Any:
    """``strict_check`` without the glance: a mapping's every field by ``strict_errors``."""
    if isinstance(data, Mapping):
        errors = strict_errors(model, data)
        if errors:
            raise ValidationError.from_exception_data(model.__name__, errors)
    return data


def _strict_checker(model: type[BaseModel]) -> Callable[[Any], Any]:
    """``strict_check`` of ``model`` as one function, its glance made on first use (once the model's
    fields are known)."""
    glance: Callable[[dict[str, Any]], bool] | None = None

    def check(data: Any) -> Any:
        nonlocal glance
        if type(data) is dict:
            if glance is None:
                glance = _model_glance(model)
            if glance(data):
                return data
        return _checked_in_full(model, data)

    check.strict_model = model  # type: ignore[attr-defined]
    return check


def _checks_first(schema: core_schema.CoreSchema, model: type[BaseModel]) -> bool:
    """Whether ``schema`` starts with ``model``'s ``_strict_checker``."""
    if schema.get("type") != "function-before":
        return False
    function = schema["function"].get("function")  # type: ignore[typeddict-item]
    return getattr(function, "strict_model", None) is model


def _validated_by_itself(schema: core_schema.CoreSchema, model: type[BaseModel]) -> bool:
    """Whether ``schema`` is ``model``'s own complete schema around its model part, which pydantic validates
    with ``model``'s own validator (built from ``schema``, so checking first)."""
    inner = schema.get("schema", {})
    validator = model.__dict__.get("__pydantic_validator__")
    return (schema is model.__dict__.get("__pydantic_core_schema__") and model.__dict__.get("__pydantic_complete__") is True
            and isinstance(validator, SchemaValidator) and inner.get("type") == "model" and inner.get("cls") is model)


class StrictInput(BaseModel):
    """A model whose every field is read strictly (``value_problem``) before any validator of its own."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        """The model's schema behind ``strict_check``, so the check runs before the model's validators.

        Where the model is another's field, pydantic hands back the model's own schema, check included, and
        validates its model part with the model's own validator, which checks again: the field's schema is then
        that model part alone, so a value is checked once, by the model's own validator."""
        schema = handler(source)
        if _checks_first(schema, cls):
            return schema["schema"] if _validated_by_itself(schema, cls) else schema
        return core_schema.no_info_before_validator_function(_strict_checker(cls), schema)

