"""decisions.core.numbers: inputs checked after the cast to float32, and every domain uses the check."""

from __future__ import annotations

import math
import types
import typing
from typing import Annotated

import pytest
from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel, Field

from decisions.core.csv_input import row_prices
from decisions.core.numbers import FLOAT32_MAX, Float32, check_float32, float32_problem
from decisions.core.settings import Settings
from decisions.core.strict_input import Float64, StrictInput
from decisions.errors import InputError

KNOWN_GAPS: set[str] = set()
"""Float fields allowed without a float32 range check (finite in float64 only, so ``1e308`` would pass)."""


class _Tank(Settings):
    section = "tank"

    volume: Annotated[float, Float32(1e9)] = Field(10.0, gt=0)
    prices: list[Annotated[float, Float32(1e6)]] = Field(default_factory=list)


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (1e308, "out of range"),
        (1e20, "out of range"),
        (-1e10, "out of range"),
        (float("nan"), "not a finite number"),
        (float("inf"), "not a finite number"),
        (1e-50, "rounds to 0"),
    ],
)
def test_float32_problem_names_the_problem(value: float, words: str) -> None:
    problem = float32_problem(value, 1e9)
    assert problem is not None and words in problem
    with pytest.raises(ValueError, match=words):
        check_float32(value, 1e9)


@pytest.mark.parametrize("value", [0.0, 1.0, -1e9, 1e9, 3e-38, 1e-40])
def test_float32_problem_accepts_values_in_range(value: float) -> None:
    assert float32_problem(value, 1e9) is None
    assert check_float32(value, 1e9) == value


def test_default_limit_is_float32_range() -> None:
    assert float32_problem(3e38) is None
    assert "out of range" in float32_problem(1e39)  # finite in float64, inf in float32
    assert Float32().max_abs == FLOAT32_MAX
    with pytest.raises(ValueError, match="max_abs"):
        Float32(0.0)


@pytest.mark.parametrize(
    ("value", "words"),
    [(1e308, "out of range"), (1e20, "out of range"), (10**400, "out of range"),
     ("1e308", "expected a number, got the text '1e308'"), (True, "expected a number, got the boolean true")],
)
def test_field_refuses_huge_values_with_one_line_naming_it(value: object, words: str) -> None:
    with pytest.raises(InputError) as info:
        _Tank.parse({"volume": value})
    assert info.value.field == "tank.volume"
    assert words in str(info.value) and "\n" not in str(info.value)


def test_list_items_are_checked_and_named() -> None:
    with pytest.raises(InputError) as info:
        _Tank.parse({"prices": [1.0, 2.0, 1e20]})
    assert info.value.field == "tank.prices.2"
    assert _Tank.parse({"volume": 1e9, "prices": [-1e6, 0.0]}).volume == 1e9  # the limits are inclusive
    assert _Tank.parse({"volume": 5}).volume == 5.0  # field constraints still apply, values unchanged


def test_csv_cells_are_checked_after_float32_cast() -> None:
    def fine(value: float) -> None:
        return None

    assert row_prices(["1.5", "2"], fine) == [1.5, 2.0]
    with pytest.raises(ValueError, match="row 3: price 1e\\+20 is out of range"):
        row_prices(["1.5", "1e20"], fine)
    with pytest.raises(ValueError, match="row 2: price 1e\\+308 is out of range"):
        row_prices(["1e308"], fine)
    with pytest.raises(ValueError, match="row 2: 'nan' is not a finite number"):
        row_prices(["nan"], fine)
    with pytest.raises(ValueError, match="out of range"):
        row_prices(["2e3"], fine, max_abs=1e3)


def _leaves(tp: object, meta: tuple[object, ...] = ()) -> typing.Iterator[tuple[object, tuple[object, ...]]]:
    """Leaf types of an annotation with the ``Annotated`` metadata on the way to them."""
    origin = typing.get_origin(tp)
    if origin is Annotated:
        base, *extra = typing.get_args(tp)
        flat: list[object] = []
        for item in extra:
            flat += [item, *getattr(item, "metadata", [])]  # a FieldInfo carries its constraints
        yield from _leaves(base, meta + tuple(flat))
        return
    if origin in (typing.Union, types.UnionType, list, tuple, dict):
        for arg in typing.get_args(tp):
            if arg is not Ellipsis:
                yield from _leaves(arg, meta)
        return
    yield tp, meta


def _float_fields() -> list[tuple[str, type[BaseModel], tuple[object, ...]]]:
    """Every float leaf of every domain's job model: ``(module.Model.field, Model, metadata)``."""
    found: list[tuple[str, type[BaseModel], tuple[object, ...]]] = []
    seen: set[type] = set()

    def walk(model: type[BaseModel]) -> None:
        if model in seen:
            return
        seen.add(model)
        for name, info in model.model_fields.items():
            for leaf, meta in _leaves(info.annotation):
                if isinstance(leaf, type) and issubclass(leaf, BaseModel):
                    walk(leaf)
                elif leaf is float:
                    found.append((f"{model.__module__}.{model.__qualname__}.{name}", model, meta + tuple(info.metadata)))

    from decisions.platform.registry import DOMAINS

    for domain in DOMAINS:
        walk(domain.job_model)
    return found


def _bounded(meta: tuple[object, ...]) -> bool:
    """Both a lower and an upper bound, finite and inside float32's range (NaN fails them too)."""
    lows = [m.gt if isinstance(m, Gt) else m.ge for m in meta if isinstance(m, Gt | Ge)]
    highs = [m.lt if isinstance(m, Lt) else m.le for m in meta if isinstance(m, Lt | Le)]
    return any(math.isfinite(lo) and lo >= -FLOAT32_MAX for lo in lows) and any(
        math.isfinite(hi) and hi <= FLOAT32_MAX for hi in highs
    )


def test_every_float_input_of_every_job_spec_is_checked_in_float32() -> None:
    """A float field is checked by its own bounds or ``Float32``, or by its model's strict reading
    (``StrictInput``: float32's range unless the field is marked ``Float64``)."""
    fields = _float_fields()
    assert len(fields) > 150  # the walk reaches the nested tables of every registered domain
    unchecked = [
        name for name, model, meta in fields
        if not any(isinstance(m, Float32) for m in meta) and not _bounded(meta)
        and not (issubclass(model, StrictInput) and not any(isinstance(m, Float64) for m in meta))
    ]
    assert sorted(unchecked) == sorted(KNOWN_GAPS)


@pytest.mark.parametrize("value", [0.0, -0.0, 1e-40, -5.0, 10.0, -10.0])
def test_float32_metadata_passes_plain_numbers_unchanged(value: float) -> None:
    assert Float32(10.0).check(value) == value


@pytest.mark.parametrize(("value", "problem"), [(10.5, "out of range"), (-11.0, "out of range"), (math.nan, "not a finite"),
                                                (math.inf, "not a finite"), (1e-46, "rounds to 0")])
def test_float32_metadata_refuses_what_the_full_check_refuses(value: float, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        Float32(10.0).check(value)
