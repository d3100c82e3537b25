"""``decisions bench building``: the figures the building slice promises, measured.

``run_bench()`` returns one flat dict (printed as JSON by the CLI). Environment speed:

- ``env_steps_per_second``: environment steps per second of ``VmapEnv(BuildingEnv(1), 1024)``
  scanned ``speed_steps`` steps (1000 by default) with zero actions under one ``jit`` (no
  policy; compile excluded; best of 3), the observation and reward consumed so nothing is dead code;
  ``env_steps_per_second_autoreset``: the same inside ``AutoResetEnv`` (a reset computed every
  step, as in training); ``env_steps_per_second_one_home_year``: one home, no ``vmap``, from the
  data's first hour through the year (8759 steps, the last row having no next observation) in
  one jitted scan: the shape of one CityLearn episode, where the rate is latency-bound.

Baselines, per building ``b`` of ``buildings`` (``BENCH_BUILDINGS`` by default) on the default
held-out window (September-December): ``b<b>_no_battery_cost`` ($), ``b<b>_rule_based_saving`` and
``b<b>_lp_saving`` (fractions of the no-battery bill) and ``b<b>_rule_based_share_of_lp``
(``saving_fraction_of_lp``); ``saving_vs_lp_rule_based``: the rule-based controller's share of
the LP saving on the building and window the agents are scored on (building 1, held out), the
row beside the agents' ``saving_vs_lp_<agent>``.

Agents (``agents=True``; PPO, A2C, SAC, DQN, ``seeds`` seeds each, building 1, relative reward):

- hyperparameters (``tune=True``, module ``tuning``): each agent's candidates (learning rate x
  1/3, 1, 3; for PPO and A2C also the library's gamma 0.99 and initial log-std 0) train
  ``tune_seeds`` seed(s) at ``tune_budget`` of the agent's steps on months 1-6 and are scored on
  months 7-8, never on the held-out months. ``hyperparameters_tuned_on`` says where the values
  used were chosen (with ``tune=False``: that they are ``agents.agent_config``'s, and which of
  those were once picked on held-out scores); ``tuned_<agent>_<param>``: the chosen value;
  ``validation_saving_vs_lp_<agent>``: its share of the LP saving on months 7-8;
  ``validation_saving_vs_lp_rule_based``: the rule-based controller's there;
  ``tuning_scores_<agent>``: every candidate with its validation share (text);
  ``tuning_env_steps_<agent>``: steps of one tuning run per seed; ``tuning_seconds``: wall time
  of the whole tuning;
- the final training on months 1-8 with those values, scored on September-December:
  ``seeds`` (seeds per agent), ``env_steps_<agent>`` (environment steps per seed: the on-policy and off-policy budgets
  differ, ``on_policy_steps`` / ``off_policy_steps``), ``train_seconds_<agent>`` (all seeds,
  compile included), ``saving_vs_lp_<agent>`` (mean over seeds of the share of the LP saving) /
  ``_std`` / ``_best_seed``, ``<agent>_saving_vs_rule_based`` (the agent's mean saving in $ over
  the rule-based controller's: above 1 it saves more), ``best_agent`` and
  ``best_agent_saving_vs_lp``, ``best_on_policy_saving_vs_lp`` / ``best_off_policy_saving_vs_lp``
  (at their own budgets), ``lp_saving_usd`` and ``no_battery_cost_usd`` of the window,
  ``surrogate_fidelity_agreement`` and ``surrogate_fidelity_r2`` of the explained agent;
- equal step budgets (``equal_steps=True``): PPO and A2C retrained (same values, ``seeds`` seeds)
  on the off-policy agents' step budget: ``equal_steps_env_steps_<agent>`` (per seed; a whole
  number of rollouts, so at most one rollout short) and ``equal_steps_budget`` (the off-policy
  steps asked for), ``equal_steps_saving_vs_lp_<agent>`` /
  ``_std``, ``equal_steps_train_seconds_<agent>``;
- ``transfer_b<b>_saving_vs_lp``: the best agent, trained on building 1, on the held-out months
  of the other homes (no retraining), beside ``transfer_b<b>_rule_based_saving_vs_lp``.

The generalist (``generalist=True``; module ``generalist``): one PPO policy trained on the homes
``generalist_train_homes`` at once (``generalist_heldout_homes`` never seen), ``generalist_seeds``
seeds of ``generalist_env_steps`` steps each in ``generalist_train_seconds`` (all seeds), at the
learning rate ``generalist_learning_rate``; ``generalist_tuned_on`` says what every controller's
parameters were chosen on (with ``generalist_tune``: the learning rate on validation months 7-8 of
the training homes, ``generalist_tuning_scores`` per candidate, ``generalist_validation_saving_vs_lp``
of the chosen one beside ``generalist_validation_rule_based_saving_vs_lp``, ``generalist_tuning_seconds``).
Scored on every home's September-December (mean over seeds):
``generalist_b<b>_saving_vs_lp`` (share of the LP saving), ``generalist_b<b>_saving_vs_rule`` (saving
over the rule-based controller's; 1 matches it), ``generalist_b<b>_rule_based_saving_vs_lp`` and,
with ``generalist_mpc``, ``generalist_b<b>_mpc_saving_vs_lp``; over the held-out homes:
``generalist_saving_vs_lp_heldout_mean``, ``generalist_saving_vs_lp_heldout_min``,
``generalist_saving_vs_rule_heldout_min`` (the lowest: 1 or more matches the rule on every home),
``generalist_saving_vs_rule_heldout_mean``, ``rule_based_saving_vs_lp_heldout_mean``,
``mpc_saving_vs_lp_heldout_mean``, ``mpc_saving_vs_rule_heldout_min``, ``mpc_saving_vs_rule_heldout_mean``;
over the training homes the same with ``train``: ``generalist_saving_vs_lp_train_mean``,
``generalist_saving_vs_lp_train_min``, ``generalist_saving_vs_rule_train_min``,
``generalist_saving_vs_rule_train_mean``, ``rule_based_saving_vs_lp_train_mean``,
``mpc_saving_vs_lp_train_mean``, ``mpc_saving_vs_rule_train_min``, ``mpc_saving_vs_rule_train_mean``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp

from decisions.core.bench_row import Row, Target
from decisions.core.progress import Progress
from decisions.core.wrappers import AutoResetEnv, VmapEnv
from decisions.energy.building.agents import AgentName, Overrides, score_seeds, train_agent
from decisions.energy.building.dataset import NUM_HOURS
from decisions.energy.building.env import BuildingEnv
from decisions.energy.building.evaluation import run_baselines
from decisions.energy.building.generalist import generalist_figures
from decisions.energy.building.job import run_job
from decisions.energy.building.kpis import kpi_table
from decisions.energy.building.params import BuildingParams
from decisions.energy.building.scenario import Scenario
from decisions.energy.building.simulate import Trajectory
from decisions.energy.building.spec import AgentSettings, BuildingJob
from decisions.energy.building.study import baseline_kpis, controller_kpis, controller_runs, seed_kpis
from decisions.energy.building.tuning import tune_agents

BENCH_BUILDINGS = (1, 5, 12)
"""Homes whose baseline savings the bench reports (the agents train on the first)."""

GENERALIST_STEPS = 20_000_000
"""The generalist's environment steps per seed by default."""

UNTUNED = (
    "not tuned: agents.agent_config's values; PPO and A2C's gamma 0.995 and initial log-std -1 "
    "were picked by comparing held-out scores when the slice was written"
)
"""``hyperparameters_tuned_on`` of a run with ``tune=False`` (the truth about those defaults)."""


def measure_env_steps_per_second(
    num_envs: int = 1024, num_steps: int = 1000, *, auto_reset: bool = False, repeats: int = 3
) -> float:
    """Environment steps per second of ``num_envs`` vmapped environments (optionally in ``AutoResetEnv``),
    scanned and jitted with zero actions: ``num_envs * num_steps`` over the best of ``repeats`` timed calls.
    """
    base = BuildingEnv(1)
    params = base.default_params
    env = VmapEnv(AutoResetEnv(base) if auto_reset else base, num_envs)
    actions = jnp.zeros((num_envs, 1), jnp.float32)

    @jax.jit
    def rollout(key: jax.Array) -> jax.Array:
        obs, state = env.reset(key, params)

        def body(carry: tuple[Any, jax.Array], step_key: jax.Array) -> tuple[tuple[Any, jax.Array], None]:
            state, total = carry
            obs, state, reward, _, _, _ = env.step(step_key, state, actions, params)
            return (state, total + obs.sum() + reward.sum()), None

        (_, total), _ = jax.lax.scan(body, (state, jnp.zeros(())), jax.random.split(key, num_steps))
        return total

    return num_envs * num_steps / _best_seconds(rollout, repeats)


def measure_one_home_year(repeats: int = 3) -> float:
    """Environment steps per second of one home stepped through the data year, unbatched (best of ``repeats``)."""
    env = BuildingEnv(1)
    hours = NUM_HOURS - 1
    action = jnp.zeros((1,), jnp.float32)

    @jax.jit
    def year(params: BuildingParams, key: jax.Array) -> jax.Array:
        # params and the start are arguments, not constants: XLA would otherwise fold the whole year at compile time
        obs, state = env.reset_at(jax.random.randint(key, (), 0, 1), params)

        def body(carry: tuple[Any, jax.Array], _: None) -> tuple[tuple[Any, jax.Array], None]:
            state, total = carry
            obs, state, reward, _, _, _ = env.step(key, state, action, params)
            return (state, total + obs.sum() + reward.sum()), None

        (_, total), _ = jax.lax.scan(body, (state, obs.sum()), None, length=hours)
        return total

    return hours / _best_seconds(functools.partial(year, env.default_params), repeats)


def _best_seconds(fn: Callable[[jax.Array], jax.Array], repeats: int) -> float:
    """Best wall time of ``fn(key)`` over ``repeats`` calls with fresh keys, after one compiling call."""
    fn(jax.random.PRNGKey(0)).block_until_ready()
    best = float("inf")
    for r in range(repeats):
        started = time.perf_counter()
        fn(jax.random.PRNGKey(r + 1)).block_until_ready()
        best = min(best, time.perf_counter() - started)
    return best


def run_bench(
    progress: Progress | None = None,
    *,
    agents: bool = True,
    tune: bool = True,
    tune_budget: float = 0.25,
    tune_seeds: int = 1,
    equal_steps: bool = True,
    seeds: int = 3,
    on_policy_steps: int | None = None,
    off_policy_steps: int | None = None,
    generalist: bool = True,
    generalist_steps: int = GENERALIST_STEPS,
    generalist_seeds: int = 1,
    generalist_tune: bool = True,
    generalist_tune_budget: float = 1.0,
    generalist_mpc: bool = True,
    buildings: tuple[int, ...] = BENCH_BUILDINGS,
    speed_steps: int = 1000,
) -> dict[str, Any]:
    """Measure every building figure (see the module docstring); a flat dict of numbers and a few strings.

    ``agents`` trains and scores the four agents (minutes to hours), after choosing their
    hyperparameters on months 7-8 when ``tune``; ``equal_steps`` also trains PPO and A2C on the
    off-policy step budget; step budgets default to ``AgentSettings``'s. ``generalist`` trains one
    PPO over the generalist's training homes (``generalist_steps`` per seed, its candidates trained on
    ``generalist_tune_budget`` of them when ``generalist_tune``) and scores it on every home, with MPC
    when ``generalist_mpc``. ``buildings`` are the homes whose baselines are reported (building 1,
    the agents' home, first); ``speed_steps`` the scan length of the vmapped speed measurements.
    """
    if not buildings or buildings[0] != 1:
        raise ValueError(f"buildings must start with building 1 (the agents' home), got {buildings!r}")
    report = progress or (lambda task, done, total: None)
    figures: dict[str, Any] = {}
    speeds: list[tuple[str, Callable[[], float]]] = [
        ("env_steps_per_second", lambda: measure_env_steps_per_second(num_steps=speed_steps)),
        ("env_steps_per_second_autoreset",
         lambda: measure_env_steps_per_second(num_steps=speed_steps, auto_reset=True)),
        ("env_steps_per_second_one_home_year", measure_one_home_year),
    ]
    for i, (name, measure) in enumerate(speeds):
        report("env steps per second", i, len(speeds))
        figures[name] = measure()
    report("env steps per second", len(speeds), len(speeds))
    for i, building in enumerate(buildings):
        report("baselines", i, len(buildings))
        table = kpi_table(run_baselines(Scenario(buildings=building)))
        reference = table.loc["no_battery", "cost_usd"]
        figures[f"b{building}_no_battery_cost"] = float(reference)
        for name, tag in (("rule_based", "rule_based"), ("perfect_foresight", "lp")):
            figures[f"b{building}_{tag}_saving"] = float(table.loc[name, "saving_usd"] / reference)
        figures[f"b{building}_rule_based_share_of_lp"] = float(table.loc["rule_based", "saving_fraction_of_lp"])
    report("baselines", len(buildings), len(buildings))
    figures["saving_vs_lp_rule_based"] = figures[f"b{buildings[0]}_rule_based_share_of_lp"]
    if agents:
        budgets = {k: v for k, v in (("on_policy_steps", on_policy_steps), ("off_policy_steps", off_policy_steps))
                   if v is not None}
        settings = AgentSettings(seeds=seeds, **budgets)
        figures.update(agent_figures(
            report, settings=settings, tune=tune, tune_budget=tune_budget, tune_seeds=tune_seeds,
            equal_steps=equal_steps,
        ))
    if generalist:
        figures.update(generalist_figures(
            report, steps=generalist_steps, seeds=generalist_seeds, tune=generalist_tune,
            tune_budget=generalist_tune_budget, mpc=generalist_mpc,
        ))
    return figures


def agent_figures(
    report: Progress,
    *,
    settings: AgentSettings | None = None,
    tune: bool = True,
    tune_budget: float = 0.25,
    tune_seeds: int = 1,
    equal_steps: bool = True,
) -> dict[str, Any]:
    """Tune (when ``tune``, at ``tune_budget`` on the validation months), train and score the agents of
    ``settings`` on building 1, and with ``equal_steps`` the on-policy agents on the off-policy budget.
    """
    job = BuildingJob(scenario=Scenario(buildings=(1,), relative_reward=True), agents=settings or AgentSettings())
    figures: dict[str, Any] = {}
    overrides: dict[AgentName, Overrides] = {}
    if tune:
        tuning = tune_agents(
            job.scenario, job.agents, key=jax.random.fold_in(jax.random.PRNGKey(job.seed), 1),
            budget_fraction=tune_budget, seeds=tune_seeds, progress=report,
        )
        overrides = tuning.chosen
        figures.update(tuning.figures(job.agents))
    else:
        figures["hyperparameters_tuned_on"] = UNTUNED
    result = run_job(job, progress=report, overrides=overrides)
    figures.update(result.metrics)
    figures["seeds"] = job.agents.seeds
    rule_based = baseline_kpis(result.kpis).loc["rule_based", "saving_usd"]
    for name, row in result.agents.iterrows():
        figures[f"saving_vs_lp_{name}_best_seed"] = float(row["saving_vs_lp_best_seed"])
        figures[f"env_steps_{name}"] = int(result.policies[str(name)].env_steps)
        figures[f"{name}_saving_vs_rule_based"] = float(seed_kpis(result.kpis, str(name))["saving_usd"].mean() / rule_based)
    best = AgentName(str(result.agents["saving_vs_lp_mean"].idxmax()))
    figures["best_agent"] = best.value
    baselines = run_baselines(job.scenario)
    if equal_steps:
        figures.update(equal_steps_figures(job, overrides, baselines, report))
    trained = result.policies[best.value]
    for building in BENCH_BUILDINGS[1:]:
        other = Scenario(buildings=(building,), relative_reward=True)
        table = controller_kpis(controller_runs(run_baselines(other), {best: score_seeds(best, trained, other)}))
        figures[f"transfer_b{building}_saving_vs_lp"] = float(seed_kpis(table, best)["saving_fraction_of_lp"].mean())
        figures[f"transfer_b{building}_rule_based_saving_vs_lp"] = float(
            baseline_kpis(table).loc["rule_based", "saving_fraction_of_lp"]
        )
    return figures


def equal_steps_figures(
    job: BuildingJob,
    overrides: dict[AgentName, Overrides],
    baselines: dict[str, Trajectory],
    report: Progress,
) -> dict[str, Any]:
    """The job's on-policy agents retrained on its off-policy step budget (with the main training's
    ``overrides``) and scored on the held-out months: ``equal_steps_*`` figures per on-policy agent
    (none without both families in the job).
    """
    names = job.agents.names
    on_policy = [n for n in names if n.on_policy]
    if not on_policy or len(on_policy) == len(names):
        return {}
    steps = job.agents.off_policy_steps
    figures: dict[str, Any] = {"equal_steps_budget": steps}
    keys = jax.random.split(jax.random.fold_in(jax.random.PRNGKey(job.seed), 2), len(on_policy))
    for name, key in zip(on_policy, keys, strict=True):
        task = f"{name.value.upper()} at {steps:,} steps"
        started = time.perf_counter()
        result = train_agent(
            name, job.scenario, job.agents, key=key, progress=lambda t, d, n, task=task: report(task, d, n),
            overrides={**overrides.get(name, {}), "total_env_steps": steps},
        )
        seconds = time.perf_counter() - started
        shares = seed_kpis(
            controller_kpis(controller_runs(baselines, {name: score_seeds(name, result, job.scenario)})), name
        )["saving_fraction_of_lp"]
        figures[f"equal_steps_env_steps_{name.value}"] = int(result.env_steps)
        figures[f"equal_steps_saving_vs_lp_{name.value}"] = float(shares.mean())
        figures[f"equal_steps_saving_vs_lp_{name.value}_std"] = float(shares.std(ddof=1)) if len(shares) > 1 else 0.0
        figures[f"equal_steps_train_seconds_{name.value}"] = seconds
    return figures


TARGETS: tuple[Target, ...] = (
    Target("generalist_saving_vs_rule_heldout_min", ">=", 1.0,
           "generalist, held-out homes: saving over the rule-based controller's, lowest home"),
    Target("generalist_saving_vs_lp_heldout_mean", ">=", 0.9, "generalist, held-out homes: share of the LP's saving, mean"),
    Target("generalist_saving_vs_rule_train_min", ">=", 1.0, "generalist, training homes: saving over the rule's, lowest home"),
    Target("generalist_saving_vs_lp_train_mean", ">=", 0.9, "generalist, training homes: share of the LP's saving, mean"),
)
"""The bounds the stored bench is held to (the README's targets table)."""

SMOKE_BUDGET: dict[str, Any] = {"agents": False, "generalist": False, "buildings": (1,), "speed_steps": 100}
"""A benchmark that runs in seconds (the platform's conformance test): simulator speed (shorter
scans) and the baselines of building 1 only."""


AGENT_LABELS = {"ppo": "PPO", "a2c": "A2C", "sac": "SAC", "dqn": "DQN (11 levels)"}
"""How the README names each agent."""


def README_ROWS(figures: Mapping[str, Any]) -> list[Row]:  # noqa: N802 (the bench contract's name)
    """The README's building table: every controller's share of the LP saving on the held-out
    months, its budget and training time, the best controller in bold (rule-based included)."""
    shares = {name: figures.get(f"saving_vs_lp_{name}", float("-inf")) for name in (*AGENT_LABELS, "rule_based")}
    best = max(shares, key=shares.__getitem__)

    def bold(template: str, name: str) -> str:
        return f"**{template}**" if name == best else template

    rows = [
        Row(
            f"{label} ({{env_steps_{name}:,}} steps per seed, {{seeds}} seeds in {{train_seconds_{name}:.0f}} s)",
            bold(f"{{saving_vs_lp_{name}:.3f}}", name)
            + f" (std {{saving_vs_lp_{name}_std:.3f}}; {{{name}_saving_vs_rule_based:.3f}} of the rule-based saving)",
            optional=True,
        )
        for name, label in AGENT_LABELS.items()
    ]
    rows += [
        Row("rule-based controller", bold("{saving_vs_lp_rule_based:.3f}", "rule_based")),
        Row(
            "PPO / A2C at the off-policy agents' budget (equal steps)",
            "{equal_steps_saving_vs_lp_ppo:.3f} / {equal_steps_saving_vs_lp_a2c:.3f} ({equal_steps_budget:,} steps)",
            optional=True,
        ),
        Row("hyperparameters chosen on", "{hyperparameters_tuned_on}", optional=True),
        Row(
            "validation months: PPO / A2C / SAC / DQN / rule-based",
            "{validation_saving_vs_lp_ppo:.3f} / {validation_saving_vs_lp_a2c:.3f} / {validation_saving_vs_lp_sac:.3f} / "
            "{validation_saving_vs_lp_dqn:.3f} / {validation_saving_vs_lp_rule_based:.3f} (tuning {tuning_seconds:.0f} s)",
            optional=True,
        ),
        Row(
            "surrogate tree of the best agent: agreement on held-out states (R^2)",
            "{surrogate_fidelity_agreement:.3f} ({surrogate_fidelity_r2:.2f})",
            optional=True,
        ),
        Row(
            "the best agent on other homes, no retraining: building 5 / 12 (their rule-based)",
            "{transfer_b5_saving_vs_lp:.3f} / {transfer_b12_saving_vs_lp:.2f} ({transfer_b5_rule_based_saving_vs_lp:.3f} / "
            "{transfer_b12_rule_based_saving_vs_lp:.3f})",
            optional=True,
        ),
        Row(
            "one PPO for many homes ({generalist_env_steps:,} steps, {generalist_seeds} seed(s) in "
            "{generalist_train_seconds:.0f} s): held-out homes {generalist_heldout_homes}, mean (lowest vs rule-based)",
            "{generalist_saving_vs_lp_heldout_mean:.3f} ({generalist_saving_vs_rule_heldout_min:.3f}); rule-based "
            "{rule_based_saving_vs_lp_heldout_mean:.3f}, MPC {mpc_saving_vs_lp_heldout_mean:.3f} "
            "({mpc_saving_vs_rule_heldout_min:.3f})",
            optional=True,
        ),
        Row(
            "one PPO for many homes: training homes {generalist_train_homes}, mean (lowest vs rule-based)",
            "{generalist_saving_vs_lp_train_mean:.3f} ({generalist_saving_vs_rule_train_min:.3f}); rule-based "
            "{rule_based_saving_vs_lp_train_mean:.3f}, MPC {mpc_saving_vs_lp_train_mean:.3f} "
            "({mpc_saving_vs_rule_train_min:.3f})",
            optional=True,
        ),
        Row("one PPO for many homes: parameters chosen on", "{generalist_tuned_on}", optional=True),
        Row(
            "environment steps per second: 1,024 homes vmapped / with a reset every step / one home through a year",
            "{env_steps_per_second:.2e} / {env_steps_per_second_autoreset:.2e} / {env_steps_per_second_one_home_year:.2e}",
        ),
    ]
    return rows
