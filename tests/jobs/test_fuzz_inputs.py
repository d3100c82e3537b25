"""Fuzzing the input paths, as the trusted tools do it: every outcome is a job or a one-line error.

Hypothesis perturbs every registered domain's example and smoke specs (wrong types, huge and
tiny numbers, NaN, infinities, empty tables and lists, unknown keys, missing keys) and runs the
domain's ``prepare`` on each: the result must be a job of the domain's model or an ``InputError``
naming a field, never another exception, and never slower than a per-example time limit (an
alarm interrupts a hang). The CSV readers (forward curves, tariffs, request logs) get random text
the same way.

Beside the random search, two systematic sweeps: every field of every domain's job model given
each value it must refuse (integers beyond 64 bits, seeds beyond 2**32 - 1, 1e308 and 1e39,
NaN and infinities, booleans for numbers, numbers as text) must get an ``InputError`` naming
it from ``prepare``; every numeric cell of every input file given a bad value must be refused
naming its row, and a duplicated or unnamed column refused.
"""

from __future__ import annotations

import copy
import functools
import io
import math
import os
import signal
import tomllib
import types
import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from decisions.errors import InputError
from decisions.platform.registry import DOMAINS as REGISTERED

DOMAINS = {domain.name: domain for domain in REGISTERED}
NAMES = list(DOMAINS)
EXAMPLES_PER_DOMAIN = int(os.environ.get("DECISIONS_FUZZ_EXAMPLES", "100"))
"""Perturbed specs tried per domain (9 domains: 900 in all) in the default suite; set
``DECISIONS_FUZZ_EXAMPLES`` for a deeper run (the CSV readers get twice as many)."""

TIME_LIMIT_S = 10.0
"""Per-example limit: ``prepare`` validates only (no training), so anything near this is a hang."""

Path = tuple[Any, ...]

BAD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 1e-45, 1e-300, 3.5e38, 1e39, -1e39, 1e308, -1e308, math.inf, -math.inf, math.nan,
                     2**32, 2**63, 2**64, 10**20, "90", "1e308", "true", "nan"]),
    st.text(max_size=6),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=3),
    st.just([]),
    st.just({}),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


class _TimeLimit(Exception):
    """Raised by the alarm when one example runs past ``TIME_LIMIT_S``."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Interrupt the block with ``_TimeLimit`` after ``seconds`` (SIGALRM; main thread only)."""

    def _alarm(signum: int, frame: Any) -> None:
        raise _TimeLimit(f"ran past {seconds} s")

    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def leaf_paths(node: Any, prefix: Path = ()) -> list[Path]:
    """Every key path in a spec: tables, their keys and list items (so each can be perturbed)."""
    paths: list[Path] = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            paths += leaf_paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node[:4]):
            paths += leaf_paths(value, (*prefix, index))
    return paths


def _parent(spec: dict[str, Any], path: Path) -> Any:
    node: Any = spec
    for key in path[:-1]:
        node = node[key]
    return node


def perturb(spec: dict[str, Any], path: Path, how: str, value: Any) -> dict[str, Any]:
    """A copy of ``spec`` with the entry at ``path`` replaced, removed or given an unknown sibling."""
    changed = copy.deepcopy(spec)
    parent, key = _parent(changed, path), path[-1]
    if how == "replace":
        parent[key] = value
    elif how == "remove" and isinstance(parent, dict):
        del parent[key]
    elif how == "unknown" and isinstance(parent, dict):
        parent[f"{key}_unknown"] = value
    elif how == "empty":
        parent[key] = type(parent[key])() if isinstance(parent[key], dict | list) else value
    return changed


def base_specs(name: str) -> list[dict[str, Any]]:
    """The domain's example spec (without its sweep) and its smoke spec, each with ``job.kind``."""
    domain = DOMAINS[name]
    example = tomllib.loads(domain.example_path.read_text())
    example.pop("sweep", None)
    smoke = copy.deepcopy(dict(domain.smoke_spec))
    smoke["job"] = {**smoke.get("job", {}), "kind": domain.name}
    return [example, smoke]


def assert_job_or_input_error(call: Callable[[], Any], expected: type) -> None:
    """``call()`` returns an ``expected`` instance or raises a one-line ``InputError`` naming a field."""
    try:
        with time_limit(TIME_LIMIT_S):
            result = call()
    except InputError as error:
        assert error.field and "\n" not in str(error), repr(error)
        return
    assert isinstance(result, expected), type(result)


@pytest.mark.parametrize("name", NAMES)
def test_perturbed_specs_give_a_job_or_a_one_line_error(name: str) -> None:
    domain = DOMAINS[name]
    specs = base_specs(name)
    base_dir = domain.example_path.parent

    @settings(max_examples=EXAMPLES_PER_DOMAIN, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow])
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        spec = data.draw(st.sampled_from(specs))
        for _ in range(data.draw(st.integers(1, 3))):
            paths = leaf_paths(spec)
            if not paths:  # everything was removed: an empty spec is a case of its own
                break
            path = data.draw(st.sampled_from(paths))
            how = data.draw(st.sampled_from(["replace", "replace", "remove", "unknown", "empty"]))
            spec = perturb(spec, path, how, data.draw(BAD_VALUES))
        assert_job_or_input_error(lambda: domain.prepare(spec, base_dir), domain.job_model)

    check()


CSV_TEXT = st.text(alphabet="0123456789.,-+eE naif\n\"date\"price\"forward\"x;2026-01-", max_size=200)
LOG_HEADER = "action,propensity,success,hides,revenue,ctx_a\n"
LOG_TEXT = st.lists(st.lists(st.sampled_from(["0", "1", "0.5", "1e39", "1e308", "nan", "-inf", "", "true", "x", "2"]),
                             min_size=6, max_size=7).map(",".join), min_size=8, max_size=14).map("\n".join)
"""Log rows of six or seven cells, mostly numbers, some bad, enough of them to pass the row count."""


@pytest.mark.parametrize(
    ("reader", "header", "text"),
    [
        ("decisions.energy.gas_storage.curve_io:load_forward_curve_csv", "date,price\n", CSV_TEXT),
        ("decisions.energy.building.tariff:read_price_csv", "price\n", CSV_TEXT),
        ("decisions.recsys.utility.logs:read_logs", LOG_HEADER, LOG_TEXT),
    ],
)
def test_random_csv_text_gives_a_result_or_a_one_line_error(reader: str, header: str, text: Any) -> None:
    module_name, function_name = reader.split(":")
    read = getattr(__import__(module_name, fromlist=[function_name]), function_name)
    if function_name == "read_logs":
        read = functools.partial(read, actions=3)

    examples = EXAMPLES_PER_DOMAIN if function_name == "read_logs" else 2 * EXAMPLES_PER_DOMAIN  # a log: 8 to 14 rows

    @settings(max_examples=examples, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
    @given(text=text, with_header=st.booleans())
    def check(text: str, with_header: bool) -> None:
        source = io.StringIO((header if with_header else "") + text)
        assert_job_or_input_error(lambda: read(source), object)

    check()


# Every field of every domain's job model, one by one: the strict reading of user input.

INT_BAD = (2**64, -(10**20), True, "90", math.nan)
"""Refused in any integer field: beyond 64 bits, a boolean, a number as text, not finite."""
SEED_BAD = (2**32, *INT_BAD)
"""Refused in a seed: also beyond ``2**32 - 1``."""
FLOAT_BAD = (1e308, -1e39, math.nan, math.inf, -math.inf, True, "90")
"""Refused in any float field: beyond float32, not finite, a boolean, a number as text."""
BOOL_BAD = (1, 0, "true")
"""Refused in a boolean field: a number, text."""

Leaf = tuple[tuple[str, ...], dict[tuple[str, ...], Any], Any]
"""A field's path in a spec, the entries it needs beside it (a union member's ``kind``), its annotation."""


def _members(annotation: Any) -> list[Any]:
    """The types of an annotation, ``Annotated`` and ``None`` dropped, a union's members each."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if origin is typing.Union or origin is types.UnionType:
        return [m for arg in typing.get_args(annotation) if arg is not type(None) for m in _members(arg)]
    return [annotation]


def model_leaves(model: type[BaseModel], path: tuple[str, ...], needs: dict[tuple[str, ...], Any]) -> list[Leaf]:
    """Every scalar or list field under ``model`` (at ``path`` of a spec), through nested tables and
    each member of a union of tables (with the ``kind`` that picks it)."""
    leaves: list[Leaf] = []
    for name, info in model.model_fields.items():
        where = (*path, name) if path else ("job", name)
        tables = [m for m in _members(info.annotation) if isinstance(m, type) and issubclass(m, BaseModel)]
        if not tables:
            typed = typing.Annotated[info.annotation, *info.metadata] if info.metadata else info.annotation
            leaves.append((where, needs, typed))
        for table in tables:
            kind = table.model_fields.get("kind")
            pick = {(*where, "kind"): kind.default} if kind is not None and len(tables) > 1 else {}
            leaves += model_leaves(table, where, {**needs, **pick})
    return leaves


def _job_leaves(domain: Any) -> list[Leaf]:
    model = domain.job_model
    top = [leaf for leaf in model_leaves(model, (), {}) if leaf[0][1] not in model.SECTIONS]
    sections = [leaf for s in model.SECTIONS for table in _members(model.model_fields[s].annotation)
                for leaf in model_leaves(table, (s,), {})]
    return top + sections


def bad_values(annotation: Any) -> list[Any]:
    """Values ``annotation`` must refuse (a list's item in a one-item list), [] where none is sure."""
    members = _members(annotation)
    if len(members) != 1:
        return []
    kind = members[0]
    item = typing.get_args(kind)[:1] if typing.get_origin(kind) in (list, tuple) else ()
    if item:
        return [[value] for value in bad_values(item[0]) if not isinstance(value, list)]
    if kind is bool:
        return list(BOOL_BAD)
    if kind is float:
        return list(FLOAT_BAD)
    if kind is int:
        limits = [getattr(m, "le", None) for m in _metadata(annotation)]
        return list(SEED_BAD) if any(limit is not None and limit <= 2**32 - 1 for limit in limits) else list(INT_BAD)
    return []


def _metadata(annotation: Any) -> list[Any]:
    if typing.get_origin(annotation) is typing.Annotated:
        return [m for m in typing.get_args(annotation)[1:] for m in (m, *getattr(m, "metadata", ()))]
    return []


def _with(spec: dict[str, Any], entries: dict[tuple[str, ...], Any]) -> dict[str, Any] | None:
    """A copy of ``spec`` with each dotted entry set (a union member's table started afresh), or None
    where a path runs through a value that is not a table."""
    changed = copy.deepcopy(spec)
    for path, value in entries.items():
        node = changed
        for key in path[:-1]:
            child = node.setdefault(key, {})
            if not isinstance(child, dict):
                return None
            node = child
        if path[-1] == "kind" and node.get("kind") != value:
            node.clear()
        node[path[-1]] = value
    return changed


def field_cases(name: str) -> list[tuple[str, dict[str, Any], Any]]:
    """``(field, spec, bad value)`` for every field of the domain's job and every value it must refuse."""
    domain = DOMAINS[name]
    example = base_specs(name)[0]
    cases = []
    for path, needs, annotation in _job_leaves(domain):
        for value in bad_values(annotation):
            spec = _with(example, {**needs, path: value})
            if spec is not None:
                cases.append((".".join(path), spec, value))
    return cases


@pytest.mark.parametrize("name", NAMES)
def test_every_field_refuses_huge_mistyped_and_non_finite_values_naming_itself(name: str) -> None:
    """Each field of the job, given each value it must refuse, gets a one-line ``InputError`` naming it
    (or one of its items) from ``prepare``: before any run starts."""
    domain = DOMAINS[name]
    cases = field_cases(name)
    assert len(cases) > 50
    failures = []
    for field, spec, value in cases:
        try:
            domain.prepare(spec, domain.example_path.parent)
        except InputError as error:
            if not (error.field == field or error.field.startswith(f"{field}.")) or "\n" in str(error):
                failures.append(f"{field} = {value!r}: {error}")
            continue
        failures.append(f"{field} = {value!r}: accepted")
    assert not failures, "\n".join(failures[:30])


CSV_BAD_CELLS = ("1e308", "-1e308", "1e39", "nan", "inf", "-inf", "true", "", "x")
"""Refused in any numeric cell of an input file."""

LOG_ROW = "0,0.5,1,0,1.5,0.1"
CSV_FILES = {
    "forward curve": ("decisions.energy.gas_storage.curve_io:load_forward_curve_csv",
                      ["date,price", *(f"2026-04-{d:02d},{20 + d}" for d in range(1, 6))]),
    "tariff": ("decisions.energy.building.tariff:read_price_csv", ["price", *["0.2"] * 8760]),
    "request log": ("decisions.recsys.utility.logs:read_logs", [LOG_HEADER.strip(), *[LOG_ROW] * 12]),
}
"""Each input file a spec names: its reader and a valid file's lines."""


def _reader(reader: str) -> Callable[[Any], Any]:
    module_name, function_name = reader.split(":")
    read = getattr(__import__(module_name, fromlist=[function_name]), function_name)
    return functools.partial(read, actions=3) if function_name == "read_logs" else read


@pytest.mark.parametrize("kind", list(CSV_FILES))
def test_every_numeric_cell_and_the_header_of_an_input_file_are_checked(kind: str) -> None:
    """A bad cell in any numeric column is refused naming its row (and column, where there are several);
    a duplicated or unnamed column is refused too; the valid file reads."""
    reader, lines = CSV_FILES[kind]
    read = _reader(reader)
    read(io.StringIO("\n".join(lines) + "\n"))
    header = lines[0].split(",")
    numeric = [i for i, name in enumerate(header) if name != "date"]
    for column in numeric:
        for cell in CSV_BAD_CELLS:
            cells = lines[3].split(",")
            cells[column] = cell
            text = "\n".join([*lines[:3], ",".join(cells), *lines[4:]]) + "\n"
            with pytest.raises(InputError) as info:
                read(io.StringIO(text))
            where = f"{header[column]}, row 4:" if len(numeric) > 1 else "row 4:"
            assert where in info.value.problem and "\n" not in str(info.value), (kind, cell, str(info.value))
    for bad_header, problem in ((f"{lines[0]},{header[-1].upper()}", "appears twice in the header"),
                                (f"{lines[0]},", "of the header has no name")):
        text = "\n".join([bad_header, *(f"{line},1" for line in lines[1:])]) + "\n"
        with pytest.raises(InputError, match=problem):
            read(io.StringIO(text))


def test_every_seed_of_every_domain_is_bounded() -> None:
    """A seed field (``seed``, ``*_seed``, ``seeds``, ``*_seeds``) takes at most ``2**32 - 1``: the
    every-field sweep tries ``2**32``."""
    seeds = [(name, path, annotation) for name in NAMES for path, _, annotation in _job_leaves(DOMAINS[name])
             if path[-1].removesuffix("s").split("_")[-1] == "seed"]
    assert len(seeds) >= len(NAMES)
    unbounded = [f"{name}: {'.'.join(path)}" for name, path, annotation in seeds
                 if 2**32 not in bad_values(annotation) and [2**32] not in bad_values(annotation)]
    assert not unbounded, unbounded
