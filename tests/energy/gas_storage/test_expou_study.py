"""Every method on QuantLib's storage test instance (the gas bench's ``expou_*`` block)."""

from __future__ import annotations

import pytest

from decisions.energy.gas_storage import quantlib_peer
from decisions.energy.gas_storage.expou_study import exponential_ou_figures
from decisions.energy.gas_storage.snapo_policy import SnapoSettings


@pytest.mark.slow  # a year of daily LSMC on a few thousand paths, and a short SNAPO training
def test_few_regression_paths_overfit_and_every_method_is_scored_on_the_same_paths() -> None:
    figures = exponential_ou_figures(
        path_counts=(256, 4_096), paths=1_024, settings=SnapoSettings(steps=60, log_every=30)
    )
    # 256 regression paths: the in-sample estimate is far above what the policy earns on fresh paths
    assert figures["expou_lsmc_256_in_sample"] > figures["expou_lsmc_256_value"] + 2 * figures["expou_lsmc_256_in_sample_stderr"]
    assert figures["expou_lsmc_4096_value"] > figures["expou_lsmc_256_value"]
    assert figures["expou_lsmc_best_paths"] == 4_096
    for method in ("snapo", "lsmc_best", "rolling_intrinsic"):
        assert figures[f"expou_{method}_stderr"] > 0 and figures[f"expou_{method}_seconds"] > 0
    assert figures["expou_rolling_intrinsic_value"] > 0.5 * figures["expou_lsmc_best_value"]
    assert figures["expou_quantlib_available"] is quantlib_peer.available()
    if quantlib_peer.available():
        # no policy beats the converged option value by more than its Monte Carlo noise
        for method in ("snapo", "lsmc_best", "rolling_intrinsic"):
            upper = figures["expou_quantlib_value"] + 3 * figures[f"expou_{method}_stderr"]
            assert figures[f"expou_{method}_value"] < upper
            assert figures[f"expou_{method}_vs_quantlib"] == pytest.approx(
                figures[f"expou_{method}_value"] / figures["expou_quantlib_value"]
            )
