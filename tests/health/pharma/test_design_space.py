"""Design-space maps: probabilities in [0, 1], monotone where physics says, compiled once."""

from __future__ import annotations

import numpy as np

from decisions.health.pharma.design_space import DesignSpaceSettings, design_space, probability_grid
from decisions.health.pharma.scenario import Scenario

SMALL = {"points": 5, "samples": 32}


def test_default_axes_give_a_tidy_map_of_probabilities() -> None:
    settings = DesignSpaceSettings(**SMALL)
    frame = design_space(Scenario(), settings)
    assert list(frame.columns) == ["cpp_x", "cpp_y", "probability"]
    assert len(frame) == 25
    assert frame.attrs == {"cpp_x": "reactor_temperature", "cpp_y": "cooling_end_temperature"}
    p = frame["probability"].to_numpy()
    assert ((p >= 0) & (p <= 1)).all()
    assert p.max() > 0.5 and p.min() < 0.5  # the map shows a region inside and one outside
    # probabilities are shares of 32 draws
    np.testing.assert_allclose(p * 32, np.round(p * 32), atol=1e-4)


def test_drying_harder_never_lowers_the_probability_when_only_solvent_binds() -> None:
    """With the degradant and purity limits relaxed, the dryer CPPs act only through residual
    solvent, which falls in both: on common draws the probability cannot decrease."""
    scenario = Scenario.parse({"specs": {"degradant_max": 10.0, "purity_min": 90.0}})
    settings = DesignSpaceSettings(
        cpp_x="dryer_temperature",
        x_low=30.0,
        x_high=60.0,
        cpp_y="dryer_time",
        y_low=2.0,
        y_high=12.0,
        **SMALL,
    )
    frame = design_space(scenario, settings)
    p = frame["probability"].to_numpy().reshape(5, 5)  # (dryer temperature, dryer time)
    assert (np.diff(p, axis=0) >= 0).all()
    assert (np.diff(p, axis=1) >= 0).all()
    assert p[0, 0] == 0.0 and p[-1, -1] > 0.9

    size = probability_grid._cache_size()
    again = design_space(scenario, settings.model_copy(update={"x_low": 35.0, "y_high": 14.0}))
    assert probability_grid._cache_size() == size  # new axis values, same program
    assert not np.array_equal(again["cpp_x"].to_numpy(), frame["cpp_x"].to_numpy())
