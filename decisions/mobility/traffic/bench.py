"""``decisions bench traffic``: the figures the fair signal agent promises, measured on SUMO."""

from __future__ import annotations

from typing import Any

from decisions.core.bench_row import Row
from decisions.core.progress import Progress
from decisions.mobility.traffic.spec import prepare

RAW_METRICS = ("veh_delay_mean", "ped_wait_p95", "ped_wait_mean", "ped_wait_max")
"""Per-controller figures flattened into the bench output."""

BENCH_SPEC: dict[str, Any] = {
    "scenarios": {"names": ["single-intersection", "cologne1", "ingolstadt1", "grid4x4"]},
    "reward": {"ped_weight_grid": [0.0, 1.0, 3.0]},
    "agent": {"env_steps": 60_000, "scenario_env_steps": {"grid4x4": 720_000}},
    "study": {"without_pedestrians": ["cologne1", "ingolstadt1", "grid4x4"], "plain_candidates": 3},
}
"""The study of the bench (the spec's defaults otherwise); docs/notes/traffic.md gives the reasons."""

SMOKE_BUDGET: dict[str, Any] = {"scenarios": ["single-intersection"], "seconds": 90, "env_steps": 200,
                                "test_seeds": 1, "without_pedestrians": [], "ped_weight_grid": []}
"""A benchmark that runs in seconds (the conformance test's)."""


def flatten(study: Any) -> dict[str, float]:
    """The headline and every controller's raw figures (module docstring) as one flat dict of floats."""
    figures = {k: float(v) for k, v in study.headline.items()}
    for _, row in study.summary.iterrows():
        tag = f"{row['controller']}_{row['scenario']}" + ("" if row["pedestrians"] else "_plain")
        for metric in RAW_METRICS:
            if metric in row:
                figures[f"{metric}_{tag}"] = float(row[metric])
    figures["agent_train_seconds"] = float(study.train_seconds)
    return figures


def run_bench(
    progress: Progress | None = None,
    *,
    scenarios: list[str] | None = None,
    seconds: int | None = None,
    env_steps: int | None = None,
    test_seeds: int = 3,
    without_pedestrians: list[str] | None = None,
    ped_weight_grid: list[float] | None = None,
) -> dict[str, Any]:
    """Run the traffic study and flatten its figures.

    Args:
        progress: optional ``(task, done, total)`` callback.
        scenarios: scenarios with pedestrians (default ``BENCH_SPEC``'s; [] with
            ``without_pedestrians`` runs only those, without pedestrians).
        seconds: simulated seconds per episode (default: each scenario's hour).
        env_steps: decisions each agent trains on, on every scenario (default: ``BENCH_SPEC``'s).
        test_seeds: held-out demand seeds scored.
        without_pedestrians: scenarios also run without pedestrians (default ``BENCH_SPEC``'s).
        ped_weight_grid: the pedestrian weights chosen from on validation demand (default
            ``BENCH_SPEC``'s; [] keeps the spec's weight).
    """
    from decisions.mobility.traffic.study import run_study

    spec: dict[str, Any] = {
        "job": {"name": "bench"},
        "scenarios": {**BENCH_SPEC["scenarios"], **({"names": scenarios} if scenarios is not None else {}),
                      **({"seconds": seconds} if seconds else {})},
        "demand": {"test_seeds": list(range(100, 100 + test_seeds))},
        "reward": {**BENCH_SPEC["reward"],
                   **({"ped_weight_grid": ped_weight_grid} if ped_weight_grid is not None else {})},
        "agent": {**BENCH_SPEC["agent"], **({"env_steps": env_steps, "scenario_env_steps": {}} if env_steps else {})},
        "study": {**BENCH_SPEC["study"],
                  **({"without_pedestrians": without_pedestrians} if without_pedestrians is not None else {})},
    }
    study = run_study(prepare(spec), progress)
    figures = flatten(study)
    figures["test_seeds"] = float(test_seeds)
    return figures


CONTROLLER_COLUMNS = ("fixed", "webster", "actuated", "max_pressure", "queue_greedy", "dqn_fair", "ppo_fair",
                      "dqn_vehicle")  # fmt: skip
"""The controllers of the README's raw-figure rows, in order."""


def _scenario_rows(scenario: str) -> tuple[Row, ...]:
    raw = " / ".join(f"{{veh_delay_mean_{c}_{scenario}:.1f}}" for c in CONTROLLER_COLUMNS)
    peds = " / ".join(f"{{ped_wait_p95_{c}_{scenario}:.0f}}" for c in CONTROLLER_COLUMNS)
    return (
        Row(
            f"{scenario}, with pedestrians: fair DQN / best heuristic, vehicles' mean delay; pedestrians' p95 wait"
            "; fair DQN beats fixed-time on both (1 = yes)",
            f"{{veh_delay_vs_best_heuristic_{scenario}:.2f}}; {{ped_p95_wait_vs_best_heuristic_{scenario}:.2f}}"
            f"; {{fair_beats_fixed_both_{scenario}:.0f}}",
        ),
        Row(
            f"{scenario}: fair PPO / best heuristic, the same two ratios; vehicle-only DQN's pedestrian p95 wait /"
            " the fair DQN's",
            f"{{ppo_veh_delay_vs_best_heuristic_{scenario}:.2f}}; {{ppo_ped_p95_wait_vs_best_heuristic_{scenario}:.2f}}"
            f"; {{vehicle_only_ped_p95_vs_fair_{scenario}:.1f}}",
            optional=True,
        ),
        Row(f"{scenario}: vehicles' mean delay (s), {' / '.join(CONTROLLER_COLUMNS)}", raw, optional=True),
        Row(f"{scenario}: pedestrians' p95 wait (s), same order", peds, optional=True),
    )


README_ROWS: tuple[Row, ...] = (
    *(row for scenario in BENCH_SPEC["scenarios"]["names"] for row in _scenario_rows(scenario)),
    *(
        Row(
            f"{scenario} without pedestrians: DQN's vehicle mean delay / max-pressure's; / fixed-time's; vehicles' "
            "mean delay (s), DQN / fixed / max_pressure / queue_greedy",
            f"{{nopeds_dqn_vs_max_pressure_{scenario}:.2f}}; {{nopeds_dqn_vs_fixed_{scenario}:.2f}}; "
            + " / ".join(f"{{veh_delay_mean_{c}_{scenario}_plain:.1f}}" for c in ("dqn", "fixed", "max_pressure", "queue_greedy")),
        )
        for scenario in BENCH_SPEC["study"]["without_pedestrians"]
    ),
    Row("training: simulated seconds per wall second (2 SUMO processes)", "{training_sim_seconds_per_wall_second:.0f}"),
)
"""The README's traffic table, filled from the stored bench result."""
