"""``decisions bench comp`` figures on its smoke budget (speed only), and how parity figures are assembled.

The smoke run is the conformance kit's (``tests.smoke_runs``), shared through the module's
``smoke_runs`` mark; the full bench (minutes of mobile-env episodes) runs in a slow test.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from decisions.platform.bench_report import render_rows
from decisions.telecom.comp import bench
from decisions.telecom.comp.study import dagger_ablation, parity, parity_figures
from decisions.telecom.comp.study import figures as study_figures
from decisions.telecom.comp.study.folder import joint_study, shipped_study
from decisions.telecom.comp.study.scoring import headline, normalise
from tests.smoke_runs import smoke_bench

pytestmark = pytest.mark.smoke_runs("comp")

STEP_OK = {
    "steps": 100.0,
    "max_reward_error": 5e-7,
    "connection_mismatches": 0.0,
    "obs_max_error": 2e-6,
    "mobility_max_position_error_m": 3e-4,
    "mobility_max_reward_error": 6e-7,
    "mobility_connection_mismatches": 0.0,
    "mobility_obs_max_error": 4e-6,
    "roam_area_error_m": 0.0,
}


def test_bench_reports_batched_and_single_env_speed_beside_mobile_env() -> None:
    figures, seen = smoke_bench("comp")
    assert figures["num_envs"] == bench.SMOKE_BUDGET["num_envs"] and isinstance(figures["jax_backend"], str)
    assert figures["sim_steps_per_second"] > 0 and figures["sim_steps_per_second_1env"] > 0
    assert "sim_speedup_vs_mobile_env" not in figures
    assert not any(key.startswith("parity") for key in figures)  # the smoke budget runs no parity
    assert "CompEnv throughput" in seen
    if not figures["mobile_env_available"]:
        assert math.isnan(figures["sim_throughput_ratio_vs_mobile_env"])
        return
    rate = figures["mobile_env_steps_per_second"]
    assert rate > 0 and "mobile-env throughput" in seen
    assert figures["sim_throughput_ratio_vs_mobile_env"] == pytest.approx(figures["sim_steps_per_second"] / rate)
    assert figures["sim_1env_speed_ratio_vs_mobile_env"] == pytest.approx(figures["sim_steps_per_second_1env"] / rate)


def test_parity_figures_pass_only_when_returns_and_steps_agree() -> None:
    rng = np.random.default_rng(1)
    ours = rng.normal(0.0, 4.0, 512)
    good = parity.compare_samples(ours, rng.normal(0.0, 4.0, 16))
    figures = parity_figures.parity_figures("medium", "max_snr", good, STEP_OK)
    prefix = "parity/medium/max_snr"
    assert figures[f"{prefix}/returns_pass"] and figures[f"{prefix}/step_pass"] and figures[f"{prefix}/pass"]
    assert figures[f"{prefix}/mobile_env_episodes"] == 16 and figures[f"{prefix}/sim_episodes"] == 512
    assert figures[f"{prefix}/diff_ci99_low"] < figures[f"{prefix}/diff"] < figures[f"{prefix}/diff_ci99_high"]
    assert figures[f"{prefix}/mobility_connection_mismatches"] == 0

    shifted = parity.compare_samples(ours, rng.normal(-10.0, 4.0, 16))
    failed = parity_figures.parity_figures("medium", "max_snr", shifted, STEP_OK)
    assert not failed[f"{prefix}/returns_pass"] and failed[f"{prefix}/step_pass"] and not failed[f"{prefix}/pass"]
    drifted = parity_figures.parity_figures("medium", "max_snr", good, {**STEP_OK, "mobility_max_position_error_m": 0.5})
    assert drifted[f"{prefix}/returns_pass"] and not drifted[f"{prefix}/step_pass"] and not drifted[f"{prefix}/pass"]


def test_every_readme_row_reads_figures_the_bench_makes() -> None:
    """With mobile-env and both studies every row renders: none reads a figure the bench lacks (the joint
    study's rows read the shipped study's table, scored again, as if it were the joint study's)."""
    figures, _ = smoke_bench("comp")
    figures.update({"mobile_env_steps_per_second": 10.0, "sim_throughput_ratio_vs_mobile_env": 1.0,
                    "sim_1env_speed_ratio_vs_mobile_env": 1.0})
    rng = np.random.default_rng(2)
    returns = parity.compare_samples(rng.normal(0.0, 1.0, 64), rng.normal(0.0, 1.0, 8))
    for scenario in parity_figures.PARITY_EPISODES:
        for policy in ("max_snr", "random"):
            figures.update(parity_figures.parity_figures(scenario, policy, returns, STEP_OK))
    figures.update(parity_figures.parity_summary(figures))
    figures.update({"parity_tolerance": 8.0, "parity_mobile_env_episodes": 1, "parity_seconds": 1.0})
    figures.update(headline(pd.read_csv(shipped_study() / "evaluation.csv"), ("small", "medium", "large")))
    figures["spread_episodes"] = 16.0
    for part in ("training", "unseen", "all"):
        figures.update({f"spread_{part}_median_planner_{name}": 1.0 for name in ("qoe_gain", "edge_ratio")})
    figures["spread_all_min_planner_qoe_gain"] = 0.5
    shipped = pd.read_csv(shipped_study() / "evaluation.csv")
    rescored = normalise(shipped.drop(columns=[c for c in shipped if c.endswith("normalised_qoe")]))
    rescored = rescored.assign(mean_rate_mbps=lambda t: 20 * t.qoe, edge_rate_mbps=lambda t: t.qoe, below_floor=0.1)
    figures.update({f"joint_{k}": v for k, v in headline(rescored, ("small", "medium", "large")).items()})
    stages = pd.read_csv(joint_study() / dagger_ablation.TABLE)  # small and medium; medium stands in for large
    stages = pd.concat([stages, stages[stages.policy == "promptdt-medium"].assign(policy="promptdt-large")])
    figures.update({f"joint_{k}": v for k, v in dagger_ablation.stage_figures(stages).items()})
    lines = render_rows(figures, bench.README_ROWS, "comp")
    assert len(lines) == 2 + len(bench.README_ROWS)
    assert figures["parity_pass"] and figures["parity_connection_mismatches"] == 0


def test_the_joint_studys_dagger_stages_reuse_its_evaluation(monkeypatch) -> None:
    """The bench evaluates the joint study once: the DAgger ablation gets that table, so random, the experts
    and the final models are not played twice."""
    evaluation = pd.DataFrame({"task": ["t"], "policy": ["random"], "qoe": [0.1], "return_mean": [-1.0]})
    stages = pd.read_csv(joint_study() / dagger_ablation.TABLE)
    seen: dict[str, object] = {}

    def score_stages(folder, train, unseen, episodes, progress, evaluation=None):
        seen.update(folder=folder, episodes=episodes, evaluation=evaluation)
        return stages

    monkeypatch.setattr(study_figures, "study_finished", lambda folder: folder == joint_study())
    monkeypatch.setattr(study_figures, "evaluated_study", lambda episodes, progress, **_: ({"unseen_x": 0.5}, evaluation))
    monkeypatch.setattr(dagger_ablation, "has_stages", lambda folder: True)
    monkeypatch.setattr(dagger_ablation, "score_stages", score_stages)
    figures = bench.run_bench(parity_episodes={}, study_episodes=0, spread_episodes=0, throughput=False,
                              joint_study_episodes=3)
    assert seen["evaluation"] is evaluation and seen["episodes"] == 3 and seen["folder"] == joint_study()
    assert figures["joint_unseen_x"] == 0.5
    assert figures["joint_dagger_promptdt-small_r0_unseen"] == pytest.approx(
        dagger_ablation.stage_figures(stages)["dagger_promptdt-small_r0_unseen"])


@pytest.mark.slow  # the whole bench without the study: ~10 minutes of mobile-env episodes
def test_full_bench_parity_passes() -> None:
    pytest.importorskip("mobile_env")
    figures = bench.run_bench(study_episodes=0)
    failed = [key for key, value in figures.items() if key.endswith("/pass") and not value]
    assert figures["parity_pass"], failed
    assert figures["parity_mobile_env_episodes"] == 2 * sum(n + 1 for n in parity_figures.PARITY_EPISODES.values())
