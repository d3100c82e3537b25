"""The pension allocation chart keeps its legend whole in a half-width column."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from decisions.finance.pension.scenario import Assets
from tests.apps.conftest import APPS

if str(APPS) not in sys.path:
    sys.path.insert(0, str(APPS))  # the page imports its helpers by name, as Streamlit runs it
import pension_views  # noqa: E402


def _allocation(assets: list[str]) -> pd.DataFrame:
    """A flat allocation over two years of the given assets, weights summing to one."""
    months = np.arange(24)
    weights = {a: np.full(24, 1.0 / len(assets)) for a in assets}
    return pd.DataFrame({"month": months, "year": months / 12.0, **weights, "contribution_rate": 0.1})


def test_allocation_legend_sits_below_in_rows_that_fit() -> None:
    """Seven default assets in one legend row above a half-width chart ran past its edge (real_estate cut off)."""
    assets = Assets().names
    assert len(assets) == 7
    legend = pension_views.allocation_chart(_allocation(assets), "SNAPO").to_dict()["encoding"]["color"]["legend"]
    assert legend["orient"] == "bottom"
    assert 1 <= legend["columns"] <= 4  # rows of at most four assets: about 360 px
    assert legend["labelLimit"] == 0  # no label is truncated


def test_allocation_legend_of_few_assets_is_one_row() -> None:
    legend = pension_views.allocation_chart(_allocation(["cash", "equities"]), "SNAPO").to_dict()["encoding"]["color"]
    assert legend["legend"]["columns"] == 2
