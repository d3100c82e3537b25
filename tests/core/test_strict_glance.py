"""The strict check's fast paths (``decisions.core.strict_input``): a model's fields at a glance, long lists
of floats all at once, ``finite_numbers`` and ``Float32`` likewise. Each passes only what the full check
passes, and anything else still gets the full check's error, naming the field and the list item."""

from __future__ import annotations

import math
from typing import Annotated, Any

import numpy as np
import pytest
from pydantic import Field

from decisions.core import strict_input
from decisions.core.numbers import (
    PRICE_MAX,
    Float32,
    Float32Items,
    _float32_check,
    plainly_float32,
    plainly_float32s,
)
from decisions.core.settings import Settings, finite_numbers
from decisions.core.strict_input import Float64, _f32_fine, _glance, _model_glance, strict_errors
from decisions.errors import InputError


class _Item(Settings):
    share: float = 0.5
    on: bool = True


class _Every(Settings):
    section = "every"

    count: int = 1
    rate: float = 0.5
    wide: Annotated[float, Float64()] = 0.0
    flag: bool = False
    rates: list[float] = Field(default_factory=list)
    wides: list[Annotated[float, Float64()]] = Field(default_factory=list)
    cap: float | None = None
    items: list[_Item] = Field(default_factory=list)
    item: _Item | None = None
    table: dict[str, float] = Field(default_factory=dict)
    name: str = "x"
    label: Annotated[str, Field(min_length=1)] | None = None
    names: list[str] = Field(default_factory=list)


_VALUES: list[Any] = [0.0, -0.0, 0.5, -2.5, 1e-45, 1e-44, -1e-44, 3e38, 3.5e38, 1e39, 1e308, math.nan, math.inf,
                      -math.inf, True, False, 0, 1, -(2**63), 2**63, 2**64, "1", b"1", None, np.float64(0.5),
                      np.float32(0.5), np.int64(3), np.bool_(True), [], [0.5], {"a": 1.0}]
_LONG = [float(i + 1) for i in range(100)]


def _cases() -> list[dict[str, Any]]:
    """Inputs of ``_Every``: each field given each value, lists with each value at their end, left out."""
    cases: list[dict[str, Any]] = [{}]
    for key in ("count", "rate", "wide", "flag", "cap", "item", "table", "items", "name", "label", "names"):
        cases += [{key: value} for value in _VALUES]
    for key in ("rates", "wides"):
        cases += [{key: [0.5, value]} for value in _VALUES] + [{key: [*_LONG, value]} for value in _VALUES]
        cases += [{key: _LONG}, {key: [0.0] * 70}, {key: (*_LONG,)}]
    cases += [{"table": {"a": value}} for value in _VALUES] + [{"items": [{"share": value}]} for value in _VALUES]
    cases += [{"names": ["a", value]} for value in _VALUES]
    return cases


@pytest.mark.parametrize("data", _cases(), ids=repr)
def test_a_model_at_a_glance_passes_only_what_the_full_check_passes(data: dict[str, Any]) -> None:
    if _model_glance(_Every)(data):
        assert strict_errors(_Every, data) == []


def test_plain_input_passes_at_a_glance() -> None:
    data = {"count": 3, "rate": 0.0, "wide": 1e300, "flag": True, "rates": _LONG, "wides": [1e300] * 80,
            "cap": None, "items": [{"share": 0.1, "on": False}], "item": {"share": 0.2}, "name": "n", "label": "l",
            "names": ["a", "b"]}
    assert _model_glance(_Every)(data) and _model_glance(_Item)({"share": 0.1, "on": False})
    assert _model_glance(_Item)({}) and _model_glance(_Item)({"share": None})


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 1e39, 1e-45, True, "1.0", 1, np.float64(2.0)])
@pytest.mark.parametrize("at", [0, 57, 99])
def test_a_long_list_of_floats_at_a_glance_agrees_item_by_item_and_its_error_names_the_item(bad: Any, at: int) -> None:
    values = [*_LONG]
    values[at] = bad
    assert _glance("list:f32")(values) is False is all(map(_f32_fine, values))
    try:
        _Every.parse({"rates": values})
    except InputError as err:
        assert err.field == f"every.rates.{at}"
    else:
        assert not isinstance(bad, str) and not isinstance(bad, bool)  # an int or a numpy float is read as it is


@pytest.mark.parametrize("length", [1, 16, 17, 63, 64, 65, 200])
def test_floats_all_at_once_agree_with_one_by_one(length: int) -> None:
    rng = np.random.default_rng(length)
    for edge in (0.0, -0.0, 1e-44, -1e-45, 3.4e38, 3.5e38, math.nan, math.inf, 5e-324):
        values = [float(v) for v in rng.uniform(-1e3, 1e3, length)]
        values[int(rng.integers(length))] = edge
        for limit in (PRICE_MAX, 3.4028234663852886e38):
            assert plainly_float32s(values, limit) == all(plainly_float32(v, limit) for v in values)
        assert _glance("list:f32")(values) == all(map(_f32_fine, values))


def test_a_nested_model_is_checked_once_per_item(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    glance = strict_input._model_glance

    def counted(model: type) -> Any:
        fine = glance(model)

        def counting(data: dict[str, Any]) -> bool:
            seen.append(model.__name__)
            return fine(data)

        return counting

    class _Inner(Settings):
        share: float = 0.5
        on: bool = True

    class _Outer(Settings):
        items: list[_Inner]
        item: _Inner

    monkeypatch.setattr(strict_input, "_model_glance", counted)
    _Outer.parse({"items": [{"share": 0.1}, {"share": 0.2}], "item": {"on": False}})
    assert sorted(seen) == ["_Inner", "_Inner", "_Inner", "_Outer"]
    with pytest.raises(InputError, match=r"^items\.1\.on: expected true or false, got 1"):
        _Outer.parse({"items": [{"share": 0.1}, {"on": 1}], "item": {}})


def _finite_numbers_item_by_item(value: object, where: str) -> object:
    """``finite_numbers`` without its glance."""
    for i, v in enumerate(value):  # type: ignore[arg-type]
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ValueError(f"{where.format(i=i)}: {v!r} is not a number")
        if not math.isfinite(v):
            raise ValueError(f"{where.format(i=i)}: {v} is not a finite number")
    return value


@pytest.mark.parametrize("bad", [None, math.nan, math.inf, True, "1", 2, np.float64(math.nan)])
def test_finite_numbers_at_a_glance_agrees_item_by_item(bad: Any) -> None:
    for values in ([*_LONG], [*_LONG[:3], bad], [*_LONG[:40], bad, 1.0]):
        try:
            expected: Any = _finite_numbers_item_by_item(values, "day {i}")
        except ValueError as err:
            expected = str(err)
        try:
            got: Any = finite_numbers(values, "day {i}")
        except ValueError as err:
            got = str(err)
        assert got == expected


@pytest.mark.parametrize("value", [0.0, -0.0, 1.0, -5.0, 1e6, 1.0000001e6, 1e-45, 1e-44, 3e38, 1e39, math.nan, -math.inf])
@pytest.mark.parametrize("max_abs", [PRICE_MAX, 3.4028234663852886e38, 1e300])
def test_float32_in_a_schema_agrees_with_its_check(value: float, max_abs: float) -> None:
    outcomes = []
    for check in (Float32(max_abs).check, _float32_check(max_abs)):
        try:
            outcomes.append(check(value))
        except ValueError as err:
            outcomes.append(str(err))
    assert outcomes[0] == outcomes[1] or all(isinstance(o, float) and math.isnan(o) for o in outcomes)
    with pytest.raises(InputError, match=r"^price: 2e\+06 is out of range \(magnitude at most 1e\+06\)"):
        _Priced.parse({"price": 2e6})


class _Priced(Settings):
    price: Annotated[float, Float32(PRICE_MAX)]


class _Curve(Settings):
    prices: Annotated[list[float], Float32Items(PRICE_MAX, "day {i}")]


class _CurveItemByItem(Settings):
    prices: list[Annotated[float, Float32(PRICE_MAX)]]


@pytest.mark.parametrize("bad", [2e6, -2e6, 1e-45, -1e-46, 5e-324, 0.0, -0.0, 1e6, 3e38, 1e-44])
@pytest.mark.parametrize("at", [0, 3, 99])
def test_float32_items_agree_with_float32_item_by_item_and_name_the_day(bad: float, at: int) -> None:
    prices = [*_LONG]
    prices[at] = bad
    outcomes = []
    for model in (_Curve, _CurveItemByItem):
        try:
            outcomes.append(model.parse({"prices": prices}).prices)
        except InputError as err:
            outcomes.append(err)
    one, each = outcomes
    if isinstance(each, InputError):  # the strict check finds a float32 underflow first, at the item
        assert isinstance(one, InputError) and each.field == f"prices.{at}"
        assert (one.field, one.problem) in ((each.field, each.problem), ("prices", f"day {at}: {each.problem}"))
    else:
        assert one == each
