"""Helpers shared by the domain tests: job specs with overridden sections, one-line input errors."""

from __future__ import annotations

import copy
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from decisions.errors import InputError


def with_sections(spec: Mapping[str, Any], **overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a job spec with keys of some of its sections replaced or added.

    Args:
        spec: the base spec (not changed: the copy is deep).
        **overrides: section name -> keys to set in that section (a missing section is created).

    Returns:
        The new spec.
    """
    merged = copy.deepcopy(dict(spec))
    for section, values in overrides.items():
        merged[section] = {**merged.get(section, {}), **values}
    return merged


def assert_input_error(call: Callable[..., Any], *args: Any, field: str, words: str = "") -> InputError:
    """Check that ``call(*args)`` raises a one-line ``InputError`` naming ``field``.

    Args:
        call: what validates the input, e.g. ``Scenario.parse``.
        *args: its arguments.
        field: the dotted field the error must name.
        words: text the error's problem must contain (default: anything).

    Returns:
        The error, for further checks.
    """
    with pytest.raises(InputError) as info:
        call(*args)
    assert info.value.field == field, info.value
    assert words in info.value.problem, info.value
    assert "\n" not in str(info.value)
    return info.value


TINY_GAS_SPEC = """
[job]
kind = "gas_storage"
name = "{name}"
method = "{method}"

[scenario]
forward_curve = [{curve}]

[scenario.facility]
max_inventory = {max_inventory}
max_injection = 25.0
max_withdrawal = 50.0

[scenario.prices]
model = "{prices}"
{snapo}
[evaluation]
paths = 16
{lsmc}"""


def tiny_gas_spec(
    method: str = "baselines", curve: str = "20.0, 21.0, 25.0, 25.0, 20.0, 20.0, 22.0, 20.0, 21.0, 25.0",
    name: str = "tiny", max_inventory: object = "100.0", prices: str = "seasonal_ou",
) -> str:
    """A gas storage job spec (TOML text) that runs in seconds: ``curve`` is the forward curve's values.

    ``[snapo]`` and ``evaluation.lsmc_paths`` are written only for a method that uses them
    (``prepare`` refuses settings the job would ignore).
    """
    snapo = "" if method == "baselines" else "\n[snapo]\nsteps = 30\npaths_per_step = 16\n"
    lsmc = "" if method == "snapo" else "lsmc_paths = 64\n"
    return TINY_GAS_SPEC.format(
        method=method, curve=curve, name=name, max_inventory=max_inventory, prices=prices, snapo=snapo, lsmc=lsmc,
    )


def dead_pid() -> int:
    """The id of a process that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def set_row(url: str, run_id: int, **values: object) -> None:
    """Change columns of a run row directly, as another process (or time) would."""
    from sqlalchemy import update

    from decisions.store import Run, session_scope

    with session_scope(url) as session:
        session.execute(update(Run).where(Run.id == run_id).values(**values))


def stored_statuses(db_file: Path) -> list[str]:
    """The status column of every run row, read directly from the SQLite file (no judging)."""
    if not db_file.exists():
        return []
    connection = sqlite3.connect(db_file, timeout=30)
    try:
        return [row[0] for row in connection.execute("SELECT status FROM runs ORDER BY id")]
    except sqlite3.OperationalError:  # the tables are not created yet
        return []
    finally:
        connection.close()


def wait_for(condition: Callable[[], Any], timeout: float, what: str) -> None:
    """Poll ``condition`` every 0.1 s; fail the test when it is not true within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)


def takers_of(job_type: str, *modules: Any) -> list[str]:
    """The functions and methods defined in ``modules`` with a parameter annotated ``job_type`` (the inner
    shape: below ``job.run_job`` no function takes the whole job), as ``module.name`` strings."""
    import inspect

    found = []
    for module in modules:
        for name, value in vars(module).items():
            if inspect.isclass(value) and value.__module__ == module.__name__:
                members = [(f"{name}.{m}", f) for m, f in vars(value).items() if inspect.isfunction(f)]
            elif inspect.isfunction(value) and value.__module__ == module.__name__:
                members = [(name, value)]
            else:
                continue
            for label, function in members:
                annotations = [str(p.annotation) for p in inspect.signature(function).parameters.values()]
                if any(job_type in a for a in annotations):
                    found.append(f"{module.__name__.rsplit('.', 1)[-1]}.{label}")
    return found

