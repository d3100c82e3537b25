"""The traffic-signal study: agents trained on training demand, every controller scored on held-out demand.

``run_study(job)``, per scenario of ``job.scenarios.names`` (with pedestrians when
``job.scenarios.pedestrians``):

1. trains the agents (:func:`agents.train_dqn`, one after another, ``agent.num_envs`` SUMO
   processes each): ``dqn_fair`` on the fair reward of ``job.reward``, ``dqn_vehicle`` on the
   vehicle-only reward (``study.vehicle_only``), ``dqn_default`` on sumo-rl's default
   ``diff-waiting-time`` (``study.default_reward``), ``ppo_fair`` (the core PPO on the fair
   reward, :func:`agents.train_ppo`, ``study.ppo``) and ``dqn_fair_w<w>`` per fairness weight of
   ``study.fairness_weights``;
2. scores every baseline of ``study.controllers`` and every agent on every held-out demand seed
   (``demand.test_seeds``) through :func:`simulate.simulate_many` (two worker processes), the
   first seed also recording the signals' phases for the first 900 simulated seconds (replays);

With ``reward.ped_weight_grid`` the fair agents' pedestrian weight is chosen per scenario
before step 1's fair agents are kept: one DQN per weight of the grid trains, each is scored with
the heuristics on the *validation* demand seeds (``demand.validation_seeds``, distinct from the
training and the test seeds), and the operator's rule picks the weight: the lowest pedestrian
p95 wait among the candidates whose mean vehicle delay is within ``study.veh_delay_tolerance``
of the best heuristic's, else the lowest vehicle delay. That candidate is ``dqn_fair``, and
``ppo_fair`` and the fairness sweep train at the chosen weight (``Study.selection`` keeps the
validation figures; the candidates are not scored on the test seeds).

then, per scenario of ``study.without_pedestrians``, the same on the plain network: a DQN ``dqn``
on the vehicle-only reward against fixed-time, max-pressure and queue-greedy. With
``study.plain_candidates`` = n > 1, n DQNs train there (training seeds ``agent.seed`` to
``agent.seed + n - 1``), each is scored with those baselines on the validation seeds, and the one
with the lowest mean vehicle delay is ``dqn`` (the same budget and rule as the pedestrian weight's
choice: n trainings, validation demand only; ``Study.selection`` keeps the figures).

The headline (per pedestrian scenario ``s``): ``veh_delay_vs_best_heuristic_s`` and
``ped_p95_wait_vs_best_heuristic_s`` (``dqn_fair`` over the heuristic of ``spec.HEURISTICS`` with
the lowest mean vehicle delay among those run, named in ``Study.best_heuristic``),
``fair_beats_fixed_both_s`` (1.0 when ``dqn_fair`` has both a lower vehicle mean delay and a lower
pedestrian p95 wait than fixed-time), ``vehicle_only_ped_p95_vs_fair_s``, and with PPO
``ppo_veh_delay_vs_best_heuristic_s`` and ``ppo_ped_p95_wait_vs_best_heuristic_s``, and with a grid
``fair_ped_weight_s`` (the chosen weight); per plain scenario
``nopeds_dqn_vs_max_pressure_s`` and ``nopeds_dqn_vs_fixed_s`` (vehicle mean delays), with
candidates ``nopeds_dqn_train_seed_s`` (the chosen training seed); and
``training_sim_seconds_per_wall_second``. Ratios of figures that were not run are NaN.

``python -m decisions.mobility.traffic.study --scenarios single-intersection --env-steps 20000``
prints the summary and the headline (``--help`` for the options).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from decisions.mobility.traffic.agents import DEFAULT_REWARD, DQNTuning, RewardFn, TrainedAgent, train_agent
from decisions.mobility.traffic.demand import Demand
from decisions.mobility.traffic.metrics import METRIC_NAMES
from decisions.mobility.traffic.rewards import fair_reward, vehicle_only_reward
from decisions.mobility.traffic.scenarios import Scenario, custom_scenario, get_scenario
from decisions.mobility.traffic.simulate import EpisodeTask, read_phase_trace, simulate_many
from decisions.mobility.traffic.spec import CUSTOM, HEURISTICS, TrafficJob

__all__ = ["PLAIN_BASELINES", "REPLAY_SECONDS", "Study", "main", "run_study", "scenario_of"]

ProgressFn = Callable[[str, int, int], None]

PLAIN_BASELINES = ("fixed", "max_pressure", "queue_greedy")
"""The baselines of the no-pedestrian comparison."""
REPLAY_SECONDS = 900.0
"""Simulated seconds of the phase replays."""
TIMING = ("sim_seconds", "wall_seconds", "sim_seconds_per_wall_second")
RUN_COLUMNS = ("scenario", "pedestrians", "controller", "seed", *METRIC_NAMES, *TIMING)
"""Columns of ``Study.runs``."""
WORKERS = 2
"""Worker processes scoring the controllers (SUMO processes at a time)."""
FRONTIER_METRICS = ("veh_delay_mean", "ped_wait_p95", "ped_wait_mean")
"""Columns of ``Study.frontier`` besides scenario, agent and weight."""


@dataclass
class Study:
    """A finished study.

    Attributes:
        job: the spec.
        runs: one row per scenario, pedestrians, controller and held-out seed (:data:`RUN_COLUMNS`).
        summary: the means of ``runs`` over seeds per scenario, pedestrians and controller, with ``seeds``.
        headline: the figures of the module docstring.
        best_heuristic: per pedestrian scenario, the heuristic with the lowest mean vehicle delay.
        training: one row per agent and log row: scenario, pedestrians, agent, env_steps, episode_return.
        replays: scenario, pedestrians, controller, signal, time_s, phase: the first signal of each
            scenario on the first held-out seed, the first :data:`REPLAY_SECONDS` (phase -1: yellow).
        frontier: per scenario and fairness weight (the sweep, ``dqn_fair`` at the job's weight and
            ``dqn_vehicle`` at 0): veh_delay_mean, ped_wait_p95, ped_wait_mean.
        selection: with ``reward.ped_weight_grid`` (pedestrian networks) or ``study.plain_candidates``
            > 1 (plain networks), per scenario and candidate: the validation figures (scenario,
            pedestrians, controller, ped_weight, train_seed, veh_delay_mean, ped_wait_p95, chosen);
            the heuristics' rows too (ped_weight NaN, train_seed missing).
        agents: the trained agents by ``"<scenario>/<agent>"`` (``"<scenario>/plain/dqn"`` without
            pedestrians).
        train_seconds: wall time of all training.
    """

    job: TrafficJob
    runs: pd.DataFrame
    summary: pd.DataFrame
    headline: dict[str, float]
    best_heuristic: dict[str, str]
    training: pd.DataFrame
    replays: pd.DataFrame
    frontier: pd.DataFrame
    agents: dict[str, TrainedAgent] = field(repr=False)
    train_seconds: float = 0.0
    selection: pd.DataFrame = field(default_factory=pd.DataFrame)


def scenario_of(job: TrafficJob, name: str) -> Scenario:
    """The scenario named in the job: a registered one, or the custom network of ``scenarios``."""
    s = job.scenarios
    if name == CUSTOM:
        net, routes = Path(s.net_file or ""), Path(s.route_file or "")
        return custom_scenario(net, routes, begin=s.begin, seconds=s.seconds)
    return get_scenario(name)


def _demand(job: TrafficJob, seed: int) -> Demand:
    d = job.demand
    return Demand(seed, d.vehicle_scale, d.depart_jitter_s, d.ped_rate_per_hour)


@dataclass(frozen=True)
class _Fair:
    """The fair reward at the scenario's pedestrian weight (the job's, or the one chosen on validation demand)."""

    fairness_weight: float


def _reward(job: TrafficJob, spec: RewardFn | _Fair, ped_weight: float) -> RewardFn:
    if isinstance(spec, _Fair):
        return fair_reward(job.reward.veh_weight, ped_weight, spec.fairness_weight)
    return spec


@dataclass(frozen=True)
class _Agenda:
    """What one scenario block trains and scores."""

    scenario: Scenario
    pedestrians: bool
    agents: tuple[tuple[str, RewardFn | _Fair, float | None], ...]  # (name, reward, fairness weight for the frontier)
    # an agent whose name starts with "ppo" is the core PPO, any other the core DQN
    baselines: tuple[str, ...]

    @property
    def prefix(self) -> str:
        return self.scenario.name if self.pedestrians else f"{self.scenario.name}/plain"


def _agendas(job: TrafficJob) -> list[_Agenda]:
    r, st = job.reward, job.study
    peds = job.scenarios.pedestrians
    out = []
    for name in job.scenarios.names:
        agents: list[tuple[str, RewardFn | _Fair, float | None]] = [
            ("dqn_fair", _Fair(r.fairness_weight), r.fairness_weight)
        ]
        if st.vehicle_only:
            agents.append(("dqn_vehicle", vehicle_only_reward(), 0.0))
        if st.default_reward:
            agents.append(("dqn_default", DEFAULT_REWARD, None))
        if st.ppo:
            agents.append(("ppo_fair", _Fair(r.fairness_weight), None))
        for w in st.fairness_weights:
            agents.append((f"dqn_fair_w{w:g}", _Fair(w), w))
        out.append(_Agenda(scenario_of(job, name), peds, tuple(agents), tuple(st.controllers)))
    for name in st.without_pedestrians:
        plain = (("dqn", vehicle_only_reward(), None),)
        out.append(_Agenda(scenario_of(job, name), False, plain, PLAIN_BASELINES))
    return out


def _score(
    job: TrafficJob, agenda: _Agenda, trained: dict[str, TrainedAgent], workdir: Path, cache_dir: Path | None,
    progress: ProgressFn | None, *, baselines: Sequence[str] | None = None, validation: bool = False,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every controller (the agenda's baselines, the trained agents) on every test seed: the run rows
    and the replay rows; with ``validation``, on the validation seeds, without replays."""
    names = agenda.baselines if baselines is None else baselines
    controllers: list[tuple[str, Any]] = [(name, name) for name in names]
    controllers += [(name, agent.controller()) for name, agent in trained.items()]
    seeds = job.demand.validation_seeds if validation else job.demand.test_seeds
    tag = agenda.prefix.replace("/", "-")
    tasks, keys = [], []
    for name, controller in controllers:
        for k, seed in enumerate(seeds):
            trace = workdir / f"trace-{tag}-{name}.csv" if k == 0 and not validation else None
            tasks.append(EpisodeTask(
                agenda.scenario, controller, _demand(job, seed), pedestrians=agenda.pedestrians,
                seconds=job.scenarios.seconds, cache_dir=cache_dir, phase_trace=trace,
                trace_seconds=REPLAY_SECONDS,
            ))  # fmt: skip
            keys.append((name, seed, trace))
    task_name = f"{agenda.prefix} {'validation' if validation else 'scoring'}"
    results = simulate_many(tasks, WORKERS, progress=progress, task_name=task_name)
    runs, replays = [], []
    for (name, seed, trace), metrics in zip(keys, results, strict=True):
        runs.append({"scenario": agenda.scenario.name, "pedestrians": agenda.pedestrians, "controller": name,
                     "seed": seed, **{c: metrics[c] for c in (*METRIC_NAMES, *TIMING)}})
        if trace is not None:
            rows = read_phase_trace(trace)
            first = rows[0][0] if rows else None
            replays += [
                {"scenario": agenda.scenario.name, "pedestrians": agenda.pedestrians, "controller": name,
                 "signal": signal, "time_s": t, "phase": phase}
                for signal, t, phase in rows if signal == first
            ]  # fmt: skip
    return runs, replays


def _validation_table(
    job: TrafficJob, agenda: _Agenda, candidates: dict[str, TrainedAgent], heuristics: list[str], workdir: Path,
    cache_dir: Path | None, progress: ProgressFn | None,
) -> pd.DataFrame:
    """The heuristics and the candidates on the validation seeds: mean vehicle delay and pedestrian
    p95 wait per controller (the index)."""
    runs, _ = _score(job, agenda, candidates, workdir, cache_dir, progress, baselines=heuristics, validation=True)
    return pd.DataFrame(runs).groupby("controller", sort=False)[["veh_delay_mean", "ped_wait_p95"]].mean()


def _selection_rows(
    agenda: _Agenda, means: pd.DataFrame, chosen: str, weights: dict[str, float], seeds: dict[str, int]
) -> pd.DataFrame:
    table = means.reset_index()
    table.insert(0, "scenario", agenda.scenario.name)
    table.insert(1, "pedestrians", agenda.pedestrians)
    table.insert(3, "ped_weight", [weights.get(n, math.nan) for n in table["controller"]])
    table.insert(4, "train_seed", pd.array([seeds.get(n) for n in table["controller"]], dtype="Int64"))
    table["chosen"] = table["controller"] == chosen
    return table


def _choose_ped_weight(
    job: TrafficJob, agenda: _Agenda, candidates: dict[float, TrainedAgent], workdir: Path,
    cache_dir: Path | None, progress: ProgressFn | None,
) -> tuple[float, pd.DataFrame]:
    """The operator's rule on the validation seeds (module docstring): the chosen weight and the figures."""
    heuristics = [h for h in HEURISTICS if h in agenda.baselines]
    named = {agent.name: agent for agent in candidates.values()}
    means = _validation_table(job, agenda, named, heuristics, workdir, cache_dir, progress)
    weight_of = {agent.name: w for w, agent in candidates.items()}
    veh, p95 = means["veh_delay_mean"], means["ped_wait_p95"]
    names = list(weight_of)
    if heuristics:
        limit = (1.0 + job.study.veh_delay_tolerance) * float(veh[heuristics].min())
        feasible = [n for n in names if veh[n] <= limit]
    else:
        feasible = []
    chosen = min(feasible, key=lambda n: p95[n]) if feasible else min(names, key=lambda n: veh[n])
    seeds = dict.fromkeys(names, job.agent.seed)
    return weight_of[chosen], _selection_rows(agenda, means, chosen, weight_of, seeds)


def _choose_plain_seed(
    job: TrafficJob, agenda: _Agenda, candidates: dict[int, TrainedAgent], workdir: Path,
    cache_dir: Path | None, progress: ProgressFn | None,
) -> tuple[int, pd.DataFrame]:
    """The plain network's candidates (one training seed each) on the validation seeds: the seed
    with the lowest mean vehicle delay, and the figures (the plain baselines beside them)."""
    named = {agent.name: agent for agent in candidates.values()}
    means = _validation_table(job, agenda, named, list(agenda.baselines), workdir, cache_dir, progress)
    seed_of = {agent.name: seed for seed, agent in candidates.items()}
    chosen = min(seed_of, key=lambda n: float(means.loc[n, "veh_delay_mean"]))
    return seed_of[chosen], _selection_rows(agenda, means, chosen, {}, seed_of)


def _train_block(
    job: TrafficJob, agenda: _Agenda, tuning: DQNTuning | None, workdir: Path, cache_dir: Path | None,
    progress: ProgressFn | None,
) -> tuple[dict[str, TrainedAgent], pd.DataFrame | None, float]:
    """The agenda's agents (the pedestrian weight chosen first when the job has a grid, the plain
    agent's training seed when ``study.plain_candidates`` > 1); the validation figures of the
    choice (or None) and the wall time of all training."""
    ped_weight = job.reward.ped_weight
    trained: dict[str, TrainedAgent] = {}
    seconds = 0.0

    def train(name: str, reward: RewardFn, seed: int | None = None) -> TrainedAgent:
        nonlocal seconds
        ppo = name.startswith("ppo")
        run_job = job if seed is None else job.model_copy(update={"agent": job.agent.model_copy(update={"seed": seed})})
        agent = train_agent(
            run_job, agenda.scenario, reward, algorithm="ppo" if ppo else "dqn", pedestrians=agenda.pedestrians,
            progress=progress, name=name, tuning=None if ppo else tuning, cache_dir=cache_dir,
        )  # fmt: skip
        seconds += agent.train_seconds
        return agent

    table = None
    grid = job.reward.ped_weight_grid
    count = job.study.plain_candidates
    if grid and agenda.pedestrians:
        fair = _Fair(job.reward.fairness_weight)
        candidates = {w: train(f"dqn_fair_p{w:g}", _reward(job, fair, w)) for w in grid}
        ped_weight, table = _choose_ped_weight(job, agenda, candidates, workdir, cache_dir, progress)
        trained["dqn_fair"] = replace(candidates[ped_weight], name="dqn_fair")
    elif count > 1 and not agenda.pedestrians:
        name, spec, _weight = agenda.agents[0]
        seeds = range(job.agent.seed, job.agent.seed + count)
        plain = {s: train(f"{name}_s{s}", _reward(job, spec, ped_weight), seed=s) for s in seeds}
        seed, table = _choose_plain_seed(job, agenda, plain, workdir, cache_dir, progress)
        trained[name] = replace(plain[seed], name=name)
    for name, spec, _weight in agenda.agents:
        if name not in trained:
            trained[name] = train(name, _reward(job, spec, ped_weight))
    return trained, table, seconds


def _summary(runs: pd.DataFrame) -> pd.DataFrame:
    keys = ["scenario", "pedestrians", "controller"]
    values = [c for c in runs.columns if c not in (*keys, "seed")]
    grouped = runs.groupby(keys, sort=False)
    summary = grouped[values].mean().reset_index()
    summary.insert(3, "seeds", grouped.size().to_numpy())
    return summary


def _value(summary: pd.DataFrame, scenario: str, pedestrians: bool, controller: str, metric: str) -> float:
    rows = summary[(summary["scenario"] == scenario) & (summary["pedestrians"] == pedestrians)
                   & (summary["controller"] == controller)]  # fmt: skip
    return float(rows[metric].iloc[0]) if len(rows) else math.nan


def _ratio(a: float, b: float) -> float:
    return a / b if math.isfinite(a) and math.isfinite(b) and b > 0 else math.nan


def _chosen(selection: pd.DataFrame, scenario: str, pedestrians: bool, column: str) -> float:
    """``column`` (ped_weight or train_seed) of the candidate chosen for the scenario, or NaN."""
    if selection.empty:
        return math.nan
    rows = selection[(selection["scenario"] == scenario) & (selection["pedestrians"] == pedestrians)
                     & selection["chosen"]]  # fmt: skip
    return float(rows[column].iloc[0]) if len(rows) else math.nan


def _headline(
    job: TrafficJob, summary: pd.DataFrame, selection: pd.DataFrame
) -> tuple[dict[str, float], dict[str, str]]:
    headline: dict[str, float] = {}
    best: dict[str, str] = {}
    peds = job.scenarios.pedestrians
    for s in (scenario_of(job, n).name for n in job.scenarios.names):
        heuristics = [h for h in HEURISTICS if h in job.study.controllers]
        delays = {h: _value(summary, s, peds, h, "veh_delay_mean") for h in heuristics}
        delays = {h: v for h, v in delays.items() if math.isfinite(v)}
        fair_veh = _value(summary, s, peds, "dqn_fair", "veh_delay_mean")
        fair_p95 = _value(summary, s, peds, "dqn_fair", "ped_wait_p95")
        if delays:
            best[s] = min(delays, key=delays.__getitem__)
            headline[f"veh_delay_vs_best_heuristic_{s}"] = _ratio(fair_veh, delays[best[s]])
            headline[f"ped_p95_wait_vs_best_heuristic_{s}"] = _ratio(
                fair_p95, _value(summary, s, peds, best[s], "ped_wait_p95")
            )
        fixed_veh = _value(summary, s, peds, "fixed", "veh_delay_mean")
        fixed_p95 = _value(summary, s, peds, "fixed", "ped_wait_p95")
        if all(math.isfinite(v) for v in (fair_veh, fair_p95, fixed_veh, fixed_p95)):
            headline[f"fair_beats_fixed_both_{s}"] = float(fair_veh < fixed_veh and fair_p95 < fixed_p95)
        else:
            headline[f"fair_beats_fixed_both_{s}"] = math.nan
        if job.study.vehicle_only:
            headline[f"vehicle_only_ped_p95_vs_fair_{s}"] = _ratio(
                _value(summary, s, peds, "dqn_vehicle", "ped_wait_p95"), fair_p95
            )
        chosen = _chosen(selection, s, True, "ped_weight")
        if math.isfinite(chosen):
            headline[f"fair_ped_weight_{s}"] = chosen
        if job.study.ppo and s in best:
            for metric, tag in (("veh_delay_mean", "veh_delay"), ("ped_wait_p95", "ped_p95_wait")):
                headline[f"ppo_{tag}_vs_best_heuristic_{s}"] = _ratio(
                    _value(summary, s, peds, "ppo_fair", metric), _value(summary, s, peds, best[s], metric)
                )
    for s in job.study.without_pedestrians:
        dqn = _value(summary, s, False, "dqn", "veh_delay_mean")
        for baseline in ("max_pressure", "fixed"):
            other = _value(summary, s, False, baseline, "veh_delay_mean")
            headline[f"nopeds_dqn_vs_{baseline}_{s}"] = _ratio(dqn, other)
        seed = _chosen(selection, s, False, "train_seed")
        if math.isfinite(seed):
            headline[f"nopeds_dqn_train_seed_{s}"] = seed
    return headline, best


def _frontier(job: TrafficJob, agendas: list[_Agenda], summary: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for agenda in agendas:
        if not agenda.pedestrians:
            continue
        s = agenda.scenario.name
        for name, _reward, weight in agenda.agents:
            if weight is None:
                continue
            figures = {m: _value(summary, s, True, name, m) for m in FRONTIER_METRICS}
            rows.append({"scenario": s, "agent": name, "fairness_weight": weight, **figures})
    columns = ["scenario", "agent", "fairness_weight", *FRONTIER_METRICS]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.sort_values(["scenario", "fairness_weight"], kind="stable").reset_index(drop=True)


def run_study(
    job: TrafficJob,
    progress: ProgressFn | None = None,
    *,
    tuning: DQNTuning | None = None,
    workdir: Path | None = None,
    cache_dir: Path | None = None,
) -> Study:
    """Train the agents and score every controller (module docstring).

    Args:
        job: the prepared job (``spec.prepare``).
        progress: optional ``(task, done, total)`` callback (training and scoring tasks).
        tuning: DQN settings beyond the spec's (default :class:`agents.DQNTuning`).
        workdir: where the phase traces go (default: a temporary directory, removed).
        cache_dir: pedestrian-net cache (default ``scenarios.default_cache_dir``).

    Returns:
        The study.
    """
    agendas = _agendas(job)
    own_dir = workdir is None
    base = Path(tempfile.mkdtemp(prefix="traffic-study-")) if own_dir else Path(workdir)
    agents: dict[str, TrainedAgent] = {}
    runs: list[dict[str, Any]] = []
    replays: list[dict[str, Any]] = []
    train_seconds = 0.0
    tables: list[pd.DataFrame] = []
    try:
        for agenda in agendas:
            trained, table, seconds = _train_block(job, agenda, tuning, base, cache_dir, progress)
            train_seconds += seconds
            if table is not None:
                tables.append(table)
            agents.update({f"{agenda.prefix}/{name}": agent for name, agent in trained.items()})
            block_runs, block_replays = _score(job, agenda, trained, base, cache_dir, progress)
            runs += block_runs
            replays += block_replays
    finally:
        if own_dir:
            shutil.rmtree(base, ignore_errors=True)
    runs_frame = pd.DataFrame(runs, columns=list(RUN_COLUMNS))
    summary = _summary(runs_frame)
    selection = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()
    headline, best = _headline(job, summary, selection)
    sim = sum(a.sim_seconds for a in agents.values())
    wall = sum(a.train_seconds for a in agents.values())
    headline["training_sim_seconds_per_wall_second"] = sim / wall if wall > 0 else math.nan
    training = pd.DataFrame(
        [{"scenario": a.scenario, "pedestrians": a.pedestrians, "agent": key.rsplit("/", 1)[-1],
          "env_steps": int(row.env_steps), "episode_return": float(row.episode_return)}
         for key, a in agents.items() for row in a.log.itertuples()],
        columns=["scenario", "pedestrians", "agent", "env_steps", "episode_return"],
    )  # fmt: skip
    replay_columns = ["scenario", "pedestrians", "controller", "signal", "time_s", "phase"]
    return Study(
        job=job, runs=runs_frame, summary=summary, headline=headline, best_heuristic=best, training=training,
        replays=pd.DataFrame(replays, columns=replay_columns), frontier=_frontier(job, agendas, summary),
        agents=agents, train_seconds=train_seconds, selection=selection,
    )  # fmt: skip


TABLE_COLUMNS = (
    "veh_delay_mean", "veh_delay_p95", "ped_wait_mean", "ped_wait_p95", "ped_wait_max", "unfinished_vehicles",
)


def _table(summary: pd.DataFrame) -> str:
    header = " ".join(f"{c:>19s}" for c in TABLE_COLUMNS)
    lines = [f"{'scenario':20s} {'peds':5s} {'controller':14s} {header}"]
    for row in summary.itertuples():
        cells = " ".join(f"{float(getattr(row, c)):19.2f}" for c in TABLE_COLUMNS)
        lines.append(f"{row.scenario:20s} {bool(row.pedestrians)!s:5s} {row.controller:14s} {cells}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: run a study and print its summary table, training times and headline (JSON)."""
    from decisions.mobility.traffic.spec import prepare

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default="single-intersection", help="comma-separated (pedestrians)")
    parser.add_argument("--without-pedestrians", default="", help="comma-separated plain-network scenarios")
    parser.add_argument("--plain-candidates", type=int, default=1, help="DQN seeds per plain scenario")
    parser.add_argument("--controllers", default=None, help="comma-separated baselines (default: all)")
    parser.add_argument("--env-steps", type=int, default=None)
    parser.add_argument("--max-green", type=int, default=None, help="agents' maximum green (s; 0: none)")
    parser.add_argument("--ped-weight", type=float, default=None, help="the fair reward's pedestrian weight")
    parser.add_argument("--fairness-weight", type=float, default=None, help="the fair reward's fairness weight")
    parser.add_argument("--ped-weight-grid", default="", help="comma-separated pedestrian weights to choose from")
    parser.add_argument("--seconds", type=int, default=None)
    parser.add_argument("--train-seeds", default=None, help="comma-separated")
    parser.add_argument("--test-seeds", default=None, help="comma-separated")
    parser.add_argument("--fairness-weights", default="", help="comma-separated sweep")
    parser.add_argument("--no-vehicle-only", action="store_true")
    parser.add_argument("--no-default-reward", action="store_true")
    parser.add_argument("--no-ppo", action="store_true")
    parser.add_argument("--json", type=Path, default=None, help="also write summary and headline here")
    args = parser.parse_args(argv)
    ints = lambda text: [int(x) for x in text.split(",") if x]  # noqa: E731
    spec: dict[str, Any] = {
        "scenarios": {"names": args.scenarios.split(","),
                      **({"seconds": args.seconds} if args.seconds else {})},
        "demand": {**({"train_seeds": ints(args.train_seeds)} if args.train_seeds else {}),
                   **({"test_seeds": ints(args.test_seeds)} if args.test_seeds else {})},
        "reward": {**({"ped_weight": args.ped_weight} if args.ped_weight is not None else {}),
                   **({"fairness_weight": args.fairness_weight} if args.fairness_weight is not None else {}),
                   "ped_weight_grid": [float(w) for w in args.ped_weight_grid.split(",") if w]},
        "agent": {**({"env_steps": args.env_steps} if args.env_steps else {}),
                  **({"max_green_s": args.max_green} if args.max_green is not None else {})},
        "study": {"without_pedestrians": [s for s in args.without_pedestrians.split(",") if s],
                  "fairness_weights": [float(w) for w in args.fairness_weights.split(",") if w],
                  "vehicle_only": not args.no_vehicle_only, "default_reward": not args.no_default_reward,
                  "ppo": not args.no_ppo, "plain_candidates": args.plain_candidates,
                  **({"controllers": args.controllers.split(",")} if args.controllers else {})},
    }  # fmt: skip
    start = time.perf_counter()
    def report(task: str, done: int, total: int) -> None:
        print(f"{task}: {done}/{total}", file=sys.stderr)

    study = run_study(prepare(spec), report)
    print(_table(study.summary))
    if not study.selection.empty:
        print("validation (choosing the pedestrian weight or the plain agent's seed):")
        print(study.selection.to_string(index=False))
    for key, agent in study.agents.items():
        speed = agent.sim_seconds_per_wall_second
        print(f"{key}: trained {agent.train_seconds:.0f} s, {speed:.0f} sim s / wall s")
    print(json.dumps({"best_heuristic": study.best_heuristic, "headline": study.headline,
                      "seconds": time.perf_counter() - start}, indent=1))  # fmt: skip
    if args.json is not None:
        args.json.write_text(json.dumps({"summary": study.summary.to_dict(orient="records"),
                                         "headline": study.headline, "best_heuristic": study.best_heuristic}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
