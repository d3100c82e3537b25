"""A run's saved folder read back for deciding: its tables and the validated settings it saved.

``settings_file`` writes a settings model (a run's scenario) beside the report, as
``report.trained_file`` writes a trained policy; ``saved_table`` and ``saved_settings`` read them
back, refusing a run that did not save them with a one-line ``InputError("run", ...)``.
A SNAPO run saves its trained policy and its scenario together (``policy_files``); deciding reads
them back with ``saved_scenario`` and ``saved_comparison``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from decisions.core.settings import Settings
from decisions.errors import InputError
from decisions.kit.report import trained_file

S = TypeVar("S", bound=Settings)

SCENARIO_STEM = "scenario"
"""The run's scenario file (``scenario.json``: ``settings_file``)."""


def settings_file(directory: Path, stem: str, settings: Settings | None) -> dict[str, Path]:
    """Write ``settings`` as ``<stem>.json``; ``{stem: path}``, or ``{}`` for None."""
    if settings is None:
        return {}
    path = directory / f"{stem}.json"
    path.write_text(settings.model_dump_json(indent=1))
    return {stem: path}


def saved_settings(run_folder: Path, stem: str, model: type[S]) -> S:
    """The settings ``settings_file`` wrote as ``<stem>.json``, validated again by ``model``.

    Raises:
        InputError: ``run``, the run saved no such file (recorded before decisions could be taken).
    """
    path = run_folder / f"{stem}.json"
    if not path.is_file():
        raise InputError("run", f"it saved no {stem} (recorded before decisions could be taken)")
    return model.parse(json.loads(path.read_text()))


def saved_table(run_folder: Path, stem: str, index: str | None = None) -> pd.DataFrame:
    """A run's table ``<stem>.csv`` (indexed by the column ``index`` when given).

    Raises:
        InputError: ``run``, the run saved no such table.
    """
    path = run_folder / f"{stem}.csv"
    if not path.is_file():
        raise InputError("run", f"it saved no {stem} table")
    table = pd.read_csv(path)
    return table.set_index(index) if index is not None else table


def policy_files(
    directory: Path, stem: str, policy: Any, write: Callable[[Path, Any], Any], scenario: Settings | None,
) -> dict[str, Path]:
    """Write the trained ``policy`` as ``<stem>.msgpack`` (``report.trained_file``) and the run's ``scenario``
    as ``scenario.json``; each is left out (and absent from the paths returned) when None."""
    return {**trained_file(directory, stem, policy, write), **settings_file(directory, SCENARIO_STEM, scenario)}


def saved_scenario(run_folder: Path, model: type[S]) -> S:
    """The scenario ``policy_files`` wrote, validated again by ``model`` (raises as ``saved_settings``)."""
    return saved_settings(run_folder, SCENARIO_STEM, model)


def saved_comparison(run_folder: Path) -> pd.DataFrame:
    """The run's ``comparison`` table, indexed by ``method`` (raises as ``saved_table``)."""
    return saved_table(run_folder, "comparison", "method")
