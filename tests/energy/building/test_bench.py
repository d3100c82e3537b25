"""``decisions bench building`` figures: the smoke run's (speed, baselines) and, slow, the agents' at a tiny budget."""

from __future__ import annotations

import re
import time

import jax
import jax.numpy as jnp
import pytest

from decisions.energy.building import bench
from decisions.energy.building.bench import BENCH_BUILDINGS, run_bench
from decisions.energy.building.env import BuildingEnv
from tests.smoke_runs import smoke_bench

pytestmark = pytest.mark.smoke_runs("building")

AGENTS = ("ppo", "a2c", "sac", "dqn")


def _documented_name(key: str) -> str:
    """A figure's name as the bench's docstring writes it (``<agent>``, ``b<b>``, ``<param>``)."""
    name = re.sub(r"(^|_)(ppo|a2c|sac|dqn)(?=_|$)", r"\1<agent>", key)
    name = re.sub(r"(^|_)b\d+_", r"\1b<b>_", name)
    return re.sub(r"^tuned_<agent>_.+$", "tuned_<agent>_<param>", name)


def _undocumented(figures: dict) -> list[str]:
    doc = bench.__doc__ or ""
    missing = []
    for key in figures:
        name = _documented_name(key)
        suffix = next((s for s in ("_std", "_best_seed") if name.endswith(s)), None)
        if suffix and f"``{name.removesuffix(suffix)}``" in doc and f"``{suffix}``" in doc:
            continue
        if f"``{name}``" not in doc:
            missing.append(key)
    return missing


def _python_loop_steps_per_second(steps: int = 300) -> float:
    """One home stepped by a Python loop over the jitted step: what a simulator without a scan does."""
    env = BuildingEnv(1)
    params, key, action = env.default_params, jax.random.PRNGKey(0), jnp.zeros((1,), jnp.float32)
    step = jax.jit(env.step)
    _, state = env.reset_at(0, params)
    jax.block_until_ready(step(key, state, action, params))  # compile
    started = time.perf_counter()
    for _ in range(steps):
        _, state, *_ = step(key, state, action, params)
    jax.block_until_ready(state)
    return steps / (time.perf_counter() - started)


def test_environment_speed_beats_a_python_driven_loop_by_far() -> None:
    """The scanned year of one home runs at millions of steps a second, a Python loop over the
    same jitted step at tens of thousands (measured here, under the same load). A reset computed
    every step (``AutoResetEnv``) costs time, so that rate is below the plain one. The absolute
    floors sit 100x below this machine's rates under a loaded suite (about 1e7, 1e6, 1e7)."""
    figures, tasks = smoke_bench("building")
    assert figures["env_steps_per_second_one_home_year"] > 10 * _python_loop_steps_per_second()
    assert figures["env_steps_per_second_one_home_year"] > 1e5
    assert 1e4 < figures["env_steps_per_second_autoreset"] < figures["env_steps_per_second"]
    assert figures["env_steps_per_second"] > 1e5
    assert {"env steps per second", "baselines"} <= set(tasks)


def test_baseline_figures_are_consistent_shares_of_one_bill() -> None:
    """Each home's baselines at the smoke budget (building 1, the agents' home; the full bench adds
    the other ``BENCH_BUILDINGS``) are shares of its no-battery bill."""
    figures, _ = smoke_bench("building")
    buildings = bench.SMOKE_BUDGET["buildings"]
    assert buildings[0] == BENCH_BUILDINGS[0] == 1 and set(buildings) <= set(BENCH_BUILDINGS)
    assert {k for k in figures if k.endswith("_no_battery_cost")} == {f"b{b}_no_battery_cost" for b in buildings}
    for b in buildings:
        rule, lp = figures[f"b{b}_rule_based_saving"], figures[f"b{b}_lp_saving"]
        assert 0 < rule < lp < 1 and figures[f"b{b}_no_battery_cost"] > 0
        assert figures[f"b{b}_rule_based_share_of_lp"] == pytest.approx(rule / lp, rel=1e-9)
    # the rule-based row of the headline table: building 1, the agents' held-out window
    assert figures["saving_vs_lp_rule_based"] == figures["b1_rule_based_share_of_lp"]


def test_the_baselines_start_with_the_agents_home() -> None:
    """``saving_vs_lp_rule_based`` is building 1's figure: a bench without it first is refused before any work."""
    for buildings in ((), (5, 1)):
        with pytest.raises(ValueError, match="building 1"):
            run_bench(buildings=buildings)


def test_the_docstring_lists_every_smoke_figure() -> None:
    figures, _ = smoke_bench("building")
    assert _undocumented(figures) == []
    assert _undocumented({"made_up_figure": 1.0}) == ["made_up_figure"]  # the check itself can fail


@pytest.mark.slow  # tunes (14 candidates), trains 4 agents x 2 seeds and 2 equal-step agents: minutes of compiles
def test_agent_figures_at_a_tiny_budget() -> None:
    figures = run_bench(seeds=2, on_policy_steps=10_752, off_policy_steps=6_000, tune_budget=1.0)
    print(figures)  # shown when an assertion below fails
    assert "on_policy_beats_off_policy" not in figures  # budgets differ: no verdict by family
    assert [figures[f"env_steps_{a}"] for a in AGENTS] == [10_752, 10_752, 6_000, 6_000]
    assert figures["equal_steps_budget"] == 6_000
    for agent, batch in (("ppo", 32 * 168), ("a2c", 32 * 16)):
        assert 6_000 - batch < figures[f"equal_steps_env_steps_{agent}"] <= 6_000
        assert figures[f"equal_steps_train_seconds_{agent}"] > 0
    assert figures["hyperparameters_tuned_on"].startswith("validation months 7-8 (candidates trained on months 1-6")
    assert figures["tuned_ppo_learning_rate"] in (3e-4, 1e-4, 9e-4)
    assert figures["tuned_ppo_gamma"] in (0.995, 0.99)
    assert figures["tuning_env_steps_ppo"] == 10_752 and figures["tuning_env_steps_sac"] == 6_000
    assert figures["tuning_scores_ppo"].count(";") == 3  # four candidates
    # the job scores the rule-based controller on the same home and window as the bench
    assert figures["saving_vs_lp_rule_based"] == pytest.approx(figures["b1_rule_based_share_of_lp"], rel=1e-9)
    for agent in AGENTS:
        # both are savings of the same window over the same LP saving
        ratio = figures[f"saving_vs_lp_{agent}"] / figures["saving_vs_lp_rule_based"]
        assert figures[f"{agent}_saving_vs_rule_based"] == pytest.approx(ratio, rel=1e-9)
        assert figures[f"train_seconds_{agent}"] > 0
    assert figures["best_agent"] in AGENTS
    assert {f"transfer_b{b}_saving_vs_lp" for b in BENCH_BUILDINGS[1:]} <= set(figures)
    assert _undocumented(figures) == []
