"""The deployed-policy record: choose, history newest first, refusals."""

from __future__ import annotations

import pytest

from decisions.errors import InputError
from decisions.store import deployments
from decisions.store.repository import RunNotFoundError, start_run


def test_choices_are_recorded_newest_first_and_the_newest_is_deployed(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    run = start_run("utility", "r", {}, url=url)
    assert deployments.deployed("utility", url=url) is None
    first = deployments.choose(run, "utility", "learnt, linear, lambda 0.3", {"lambda": 0.3, "x": float("nan")},
                               note="keep revenue", url=url)
    second = deployments.choose(run, "utility", "learnt, linear, lambda 0.5", {"lambda": 0.5}, url=url)
    assert first.settings == {"lambda": 0.3, "x": None} and first.note == "keep revenue"
    assert [d.id for d in deployments.history("utility", url=url)] == [second.id, first.id]
    assert deployments.deployed("utility", url=url).settings["lambda"] == 0.5
    assert deployments.history("gas_storage", url=url) == []


def test_refusals_name_the_problem(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    run = start_run("gas_storage", "r", {}, url=url)
    with pytest.raises(InputError, match="run: run .* is a 'gas_storage' run"):
        deployments.choose(run, "utility", "x", {}, url=url)
    with pytest.raises(InputError, match="label"):
        deployments.choose(run, "gas_storage", "  ", {}, url=url)
    with pytest.raises(InputError, match="settings"):
        deployments.choose(run, "gas_storage", "x", {"f": object()}, url=url)
    with pytest.raises(RunNotFoundError):
        deployments.choose(run + 100, "gas_storage", "x", {}, url=url)
