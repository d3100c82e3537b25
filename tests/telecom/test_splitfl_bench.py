"""``decisions bench splitfl`` figures on its smoke budget, and how the ratios against the best fixed split are read.

The smoke run is the conformance kit's (``tests.smoke_runs``), shared through the module's
``smoke_runs`` mark.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from decisions.telecom.splitfl.bench import README_ROWS
from decisions.telecom.splitfl.study import best_fixed, time_ratio_of
from tests.smoke_runs import smoke_bench

pytestmark = pytest.mark.smoke_runs("splitfl")


def test_smoke_bench_figures() -> None:
    figures, tasks = smoke_bench("splitfl")
    assert figures["split_equivalence_max_err"] <= 1e-5
    assert figures["rounds_per_second"] > 0 and figures["rounds"] == 2.0 and figures["clients"] == 10.0
    for name in ("fixed_3", "fixed_9", "random", "greedy", "fastest", "dqn_round", "dqn_client"):
        assert 0.0 <= figures[f"final_acc_{name}"] <= 1.0
        assert figures[f"mean_round_s_{name}"] > 0 and figures[f"rounds_to_target_{name}"] >= 1
        assert 0.0 <= figures[f"dropout_rate_{name}"] <= 1.0
    # split 9 (the whole CNN) does not fit the weak tier's 0.5 MB: its four clients never train
    assert figures["dropout_rate_fixed_9"] >= 0.4
    assert any(task.startswith("agent (client)") for task in tasks)
    assert any(task.startswith("seed 0: dqn_client") for task in tasks)


def test_readme_rows_name_only_figures_the_full_bench_writes() -> None:
    written = {
        "seeds", "rounds", "clients", "target_share", "time_to_target_ratio_vs_best_fixed",
        "time_to_target_ratio_vs_best_fixed_std", "time_to_target_ratio_vs_best_fixed_worst",
        "final_test_acc_vs_best_fixed", "final_test_acc_vs_max_fixed", "dropout_rate_agent",
        "dropout_margin_vs_fixed", "time_ratio_dqn_round", "time_ratio_greedy", "time_ratio_random",
        "time_ratio_fastest", "mean_round_s_fastest", "mean_round_s_dqn_client", "dropout_rate_fastest",
        "dropout_rate_dqn_client",
        "time_ratio_fixed_9", "time_ratio_dqn_client_m1", "time_ratio_dqn_client", "time_ratio_dqn_client_m5",
        "time_ratio_dqn_client_decay0", "split_equivalence_max_err", "rounds_per_second",
    }
    server = {  # the server study's (``server_figures.deployable_figures``), written when it runs
        "time_to_target_vs_best_deployable_rule", "time_to_target_vs_best_deployable_rule_worst",
        "oracle_time_to_target_vs_best_deployable_rule", "dropout_rate_best_deployable_rule",
        "dropout_rate_agent_vs_best_deployable_rule",
    }
    for row in README_ROWS:
        fields = set(row.fields())
        if row.optional:  # a part that may not run: Fashion-MNIST, or a server study
            assert all(f.startswith("fashion_") or f in server or f in written for f in fields), fields
            assert any(f.startswith("fashion_") or f in server for f in fields), fields
        else:
            assert fields <= written, fields - written


def test_best_fixed_in_hindsight_and_ratios() -> None:
    runs = pd.DataFrame({
        "seed": [0, 0, 0, 1, 1, 1],
        "strategy": ["fixed_1", "fixed_2", "dqn_client"] * 2,
        "time_to_target_s": [50.0, 40.0, 20.0, math.inf, 30.0, 60.0],
        "final_test_acc": [0.9, 0.8, 0.9, 0.9, 0.9, 0.9],
    })
    best = best_fixed(runs)
    assert best.to_dict() == {0: "fixed_2", 1: "fixed_2"}
    assert time_ratio_of(20.0, 40.0) == 0.5
    assert math.isinf(time_ratio_of(math.inf, 40.0))
    assert np.isnan(time_ratio_of(math.inf, math.inf))
    tie = runs.assign(time_to_target_s=[40.0, 40.0, 1.0, 1.0, 1.0, 1.0], final_test_acc=[0.7, 0.8, 0, 0.9, 0.8, 0])
    assert best_fixed(tie).to_dict() == {0: "fixed_2", 1: "fixed_1"}


def test_a_bench_that_runs_no_study_names_digits() -> None:
    from decisions.errors import InputError
    from decisions.telecom.splitfl.bench import run_bench

    with pytest.raises(InputError) as err:
        run_bench(digits=False, fashion_rounds=0)
    assert err.value.field == "digits"


def test_time_to_target_on_a_trailing_mean_ignores_a_lucky_round() -> None:
    from decisions.telecom.splitfl.federation import History

    history = object.__new__(History)
    history.test_acc = np.array([0.2, 0.7, 0.3, 0.6, 0.7, 0.8])
    history.round_time_s = np.full(6, 10.0)
    assert history.time_to(0.65) == 20.0 and history.rounds_to(0.65) == 2  # the first touch: round 2's lucky 0.7
    assert history.rounds_to(0.65, window=3) == 6 and history.rounds_to(0.9) is None
    assert history.time_to(0.65, window=3) == 60.0  # mean(0.6, 0.7, 0.8) = 0.7 after round 6
    assert history.time_to(0.5, window=3) == 40.0  # mean(0.7, 0.3, 0.6) = 0.533 after round 4
    assert math.isinf(history.time_to(0.9, window=3))
    with pytest.raises(ValueError, match="window"):
        history.time_to(0.5, window=0)


def test_headline_reports_the_smoothed_ratio_and_each_seeds_winner() -> None:
    from decisions.telecom.splitfl.spec import Mode
    from decisions.telecom.splitfl.study import headline

    runs = pd.DataFrame({
        "seed": [0, 0, 0, 1, 1, 1],
        "strategy": ["fixed_1", "fixed_2", "dqn_client"] * 2,
        "time_to_target_s": [50.0, 40.0, 20.0, 10.0, 30.0, 60.0],
        "time_to_target_smoothed_s": [50.0, 60.0, 25.0, 40.0, 30.0, 60.0],
        "rounds_to_target": [5.0, 4.0, 2.0, 1.0, 3.0, 6.0],
        "final_test_acc": [0.9, 0.8, 0.9, 0.9, 0.9, 0.9],
        "dropout_rate": [0.1, 0.2, 0.0, 0.1, 0.2, 0.0],
    })
    figures = headline([Mode.CLIENT], runs)
    assert figures["time_ratio_seed0"] == 0.5 and figures["time_ratio_seed1"] == 6.0
    assert figures["best_fixed_split_seed0"] == 2.0 and figures["best_fixed_split_seed1"] == 1.0
    assert figures["best_fixed_time_s_seed1"] == 10.0 and figures["agent_time_s_seed1"] == 60.0
    assert figures["best_fixed_rounds_seed1"] == 1.0 and figures["agent_rounds_seed1"] == 6.0
    assert figures["time_to_target_ratio_vs_best_fixed"] == pytest.approx(3.25)
    # on the smoothed times the winners are fixed_1 (50 s) and fixed_2 (30 s): 25/50 and 60/30
    assert figures["time_to_target_smoothed_ratio_vs_best_fixed"] == pytest.approx(1.25)
    assert figures["time_to_target_smoothed_ratio_vs_best_fixed_worst"] == pytest.approx(2.0)
