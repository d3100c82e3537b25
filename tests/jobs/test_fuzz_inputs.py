"""Fuzzing the input paths, as the trusted tools do it: every outcome is a job or a one-line error.

Hypothesis perturbs every registered domain's example and smoke specs (wrong types, huge and
tiny numbers, NaN, infinities, empty tables and lists, unknown keys, missing keys) and runs the
domain's ``prepare`` on each: the result must be a job of the domain's model or an ``InputError``
naming a field, never another exception, and never slower than a per-example time limit (an
alarm interrupts a hang). The CSV readers (forward curves, tariffs) get random text the same way.
"""

from __future__ import annotations

import copy
import io
import math
import os
import signal
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from decisions.errors import InputError
from decisions.platform.registry import DOMAINS as REGISTERED

DOMAINS = {domain.name: domain for domain in REGISTERED}
NAMES = list(DOMAINS)
EXAMPLES_PER_DOMAIN = int(os.environ.get("DECISIONS_FUZZ_EXAMPLES", "100"))
"""Perturbed specs tried per domain (6 domains: 600 in all) in the default suite; set
``DECISIONS_FUZZ_EXAMPLES`` for a deeper run (the CSV readers get twice as many)."""

TIME_LIMIT_S = 10.0
"""Per-example limit: ``prepare`` validates only (no training), so anything near this is a hang."""

Path = tuple[Any, ...]

BAD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 1e-45, 1e-300, 3.5e38, 1e308, -1e308, math.inf, -math.inf, math.nan, 2**63]),
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


@pytest.mark.parametrize(
    ("reader", "header"),
    [
        ("decisions.energy.gas_storage.curve_io:load_forward_curve_csv", "date,price\n"),
        ("decisions.energy.building.tariff:read_price_csv", "price\n"),
    ],
)
def test_random_csv_text_gives_a_result_or_a_one_line_error(reader: str, header: str) -> None:
    module_name, function_name = reader.split(":")
    read = getattr(__import__(module_name, fromlist=[function_name]), function_name)

    @settings(max_examples=2 * EXAMPLES_PER_DOMAIN, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
    @given(text=CSV_TEXT, with_header=st.booleans())
    def check(text: str, with_header: bool) -> None:
        source = io.StringIO((header if with_header else "") + text)
        assert_job_or_input_error(lambda: read(source), object)

    check()
