"""The traffic-signal study: agents trained on training demand, every controller scored on held-out demand.

``run_study(job)`` unpacks the job into the settings each step reads; ``python -m
decisions.mobility.traffic.study --help`` runs one from the command line.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from decisions.core.progress import Progress
from decisions.mobility.traffic.agents import (
    DEFAULT_REWARD,
    DQNTuning,
    RewardFn,
    TrainedAgent,
    TrainingSettings,
    train_agent,
)
from decisions.mobility.traffic.demand import Demand
from decisions.mobility.traffic.figures import headline_figures, summarise, value
from decisions.mobility.traffic.junctions import network_junctions
from decisions.mobility.traffic.metrics import METRIC_NAMES
from decisions.mobility.traffic.own_network import own_scenario
from decisions.mobility.traffic.rewards import fair_reward, vehicle_only_reward
from decisions.mobility.traffic.scenarios import Scenario, get_scenario
from decisions.mobility.traffic.simulate import EpisodePool, EpisodeTask, read_phase_trace, simulate_many
from decisions.mobility.traffic.spec import (
    CUSTOM,
    HEURISTICS,
    DemandSettings,
    RewardSettings,
    ScenarioSettings,
    StudySettings,
    TrafficJob,
)

__all__ = ["PLAIN_BASELINES", "REPLAY_SECONDS", "Study", "main", "run_study", "scenario_of"]

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
    """A finished study: the job, its tables (as in :class:`report.TrafficReport`) and its agents.

    ``runs`` has :data:`RUN_COLUMNS`; ``summary`` their means per scenario, pedestrians and controller;
    ``headline`` the figures of :mod:`.figures`, ``best_heuristic`` per pedestrian scenario;
    ``replays`` the first :data:`REPLAY_SECONDS` of the first signal on the first held-out seed (phase
    -1: yellow); ``selection`` the validation figures of a pedestrian-weight grid or of plain-network
    candidates (heuristics' rows with ped_weight NaN); ``agents`` by ``"<scenario>/<agent>"``
    (``"<scenario>/plain/dqn"`` without pedestrians); ``train_seconds`` the wall time of training;
    ``junctions`` what deciding a junction later needs (``junctions.JUNCTIONS_FILE``'s content).
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
    junctions: dict[str, Any] = field(default_factory=dict)


def scenario_of(scenarios: ScenarioSettings, name: str) -> Scenario:
    """The scenario of that name: a registered one, or the custom network of ``scenarios``
    (``own_network.own_scenario``)."""
    if name == CUSTOM:
        return own_scenario(scenarios)
    return get_scenario(name)


def _demand(d: DemandSettings, seed: int) -> Demand:
    return Demand(seed, d.vehicle_scale, d.depart_jitter_s, d.ped_rate_per_hour)


@dataclass(frozen=True)
class _Fair:
    """The fair reward at the scenario's pedestrian weight (the job's, or the one chosen on validation demand)."""

    fairness_weight: float


def _reward(veh_weight: float, spec: RewardFn | _Fair, ped_weight: float) -> RewardFn:
    if isinstance(spec, _Fair):
        return fair_reward(veh_weight, ped_weight, spec.fairness_weight)
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


@dataclass(frozen=True)
class _Scoring:
    """Where episodes are scored: the demand settings, the episode length, the files, the progress and
    the worker processes."""

    demand: DemandSettings
    seconds: int | None
    workdir: Path
    cache_dir: Path | None
    progress: Progress | None
    pool: EpisodePool


def _agendas(scenarios: ScenarioSettings, r: RewardSettings, st: StudySettings) -> list[_Agenda]:
    peds = scenarios.pedestrians
    out = []
    for name in scenarios.names:
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
        out.append(_Agenda(scenario_of(scenarios, name), peds, tuple(agents), tuple(st.controllers)))
    for name in st.without_pedestrians:
        plain = (("dqn", vehicle_only_reward(), None),)
        out.append(_Agenda(scenario_of(scenarios, name), False, plain, PLAIN_BASELINES))
    return out


def _score(
    scoring: _Scoring, agenda: _Agenda, trained: dict[str, TrainedAgent], *,
    baselines: Sequence[str] | None = None, validation: bool = False,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every controller (the agenda's baselines, the trained agents) on every test seed: the run rows
    and the replay rows; with ``validation``, on the validation seeds, without replays."""
    names = agenda.baselines if baselines is None else baselines
    controllers: list[tuple[str, Any]] = [(name, name) for name in names]
    controllers += [(name, agent.controller()) for name, agent in trained.items()]
    seeds = scoring.demand.validation_seeds if validation else scoring.demand.test_seeds
    tag = agenda.prefix.replace("/", "-")
    tasks, keys = [], []
    for name, controller in controllers:
        for k, seed in enumerate(seeds):
            trace = scoring.workdir / f"trace-{tag}-{name}.csv" if k == 0 and not validation else None
            tasks.append(EpisodeTask(
                agenda.scenario, controller, _demand(scoring.demand, seed), pedestrians=agenda.pedestrians,
                seconds=scoring.seconds, cache_dir=scoring.cache_dir, phase_trace=trace,
                trace_seconds=REPLAY_SECONDS,
            ))  # fmt: skip
            keys.append((name, seed, trace))
    task_name = f"{agenda.prefix} {'validation' if validation else 'scoring'}"
    results = simulate_many(tasks, WORKERS, progress=scoring.progress, task_name=task_name, pool=scoring.pool)
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
    scoring: _Scoring, agenda: _Agenda, candidates: dict[str, TrainedAgent], heuristics: list[str]
) -> pd.DataFrame:
    """The heuristics and the candidates on the validation seeds: mean vehicle delay and pedestrian
    p95 wait per controller (the index)."""
    runs, _ = _score(scoring, agenda, candidates, baselines=heuristics, validation=True)
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
    scoring: _Scoring, agenda: _Agenda, candidates: dict[float, TrainedAgent], tolerance: float, train_seed: int
) -> tuple[float, pd.DataFrame]:
    """The chosen pedestrian weight and the validation figures.

    The rule: the lowest pedestrian p95 wait among the candidates whose mean vehicle delay is
    within ``tolerance`` of the best heuristic's, else the lowest vehicle delay.
    """
    heuristics = [h for h in HEURISTICS if h in agenda.baselines]
    named = {agent.name: agent for agent in candidates.values()}
    means = _validation_table(scoring, agenda, named, heuristics)
    weight_of = {agent.name: w for w, agent in candidates.items()}
    veh, p95 = means["veh_delay_mean"], means["ped_wait_p95"]
    names = list(weight_of)
    if heuristics:
        limit = (1.0 + tolerance) * float(veh[heuristics].min())
        feasible = [n for n in names if veh[n] <= limit]
    else:
        feasible = []
    chosen = min(feasible, key=lambda n: p95[n]) if feasible else min(names, key=lambda n: veh[n])
    seeds = dict.fromkeys(names, train_seed)
    return weight_of[chosen], _selection_rows(agenda, means, chosen, weight_of, seeds)


def _choose_plain_seed(
    scoring: _Scoring, agenda: _Agenda, candidates: dict[int, TrainedAgent]
) -> tuple[int, pd.DataFrame]:
    """The plain network's candidates (one training seed each) on the validation seeds: the seed
    with the lowest mean vehicle delay, and the figures (the plain baselines beside them)."""
    named = {agent.name: agent for agent in candidates.values()}
    means = _validation_table(scoring, agenda, named, list(agenda.baselines))
    seed_of = {agent.name: seed for seed, agent in candidates.items()}
    chosen = min(seed_of, key=lambda n: float(means.loc[n, "veh_delay_mean"]))
    return seed_of[chosen], _selection_rows(agenda, means, chosen, {}, seed_of)


def _train_block(
    agenda: _Agenda, training: TrainingSettings, reward: RewardSettings, study: StudySettings,
    scoring: _Scoring, tuning: DQNTuning | None,
) -> tuple[dict[str, TrainedAgent], pd.DataFrame | None, float]:
    """The agenda's agents (the pedestrian weight chosen first with ``reward.ped_weight_grid``, the
    plain agent's training seed when ``study.plain_candidates`` > 1); the validation figures of the
    choice (or None) and the wall time of all training."""
    ped_weight = reward.ped_weight
    agent_settings = training.agent
    trained: dict[str, TrainedAgent] = {}
    seconds = 0.0

    def train(name: str, reward_fn: RewardFn, seed: int | None = None) -> TrainedAgent:
        nonlocal seconds
        ppo = name.startswith("ppo")
        settings = training if seed is None else replace(
            training, agent=agent_settings.model_copy(update={"seed": seed})
        )
        agent = train_agent(
            settings, agenda.scenario, reward_fn, algorithm="ppo" if ppo else "dqn", pedestrians=agenda.pedestrians,
            progress=scoring.progress, name=name, tuning=None if ppo else tuning, cache_dir=scoring.cache_dir,
        )  # fmt: skip
        seconds += agent.train_seconds
        return agent

    table = None
    grid = reward.ped_weight_grid
    count = study.plain_candidates
    veh = reward.veh_weight
    if grid and agenda.pedestrians:
        fair = _Fair(reward.fairness_weight)
        candidates = {w: train(f"dqn_fair_p{w:g}", _reward(veh, fair, w)) for w in grid}
        ped_weight, table = _choose_ped_weight(
            scoring, agenda, candidates, study.veh_delay_tolerance, agent_settings.seed
        )
        trained["dqn_fair"] = replace(candidates[ped_weight], name="dqn_fair")
    elif count > 1 and not agenda.pedestrians:
        name, spec, _weight = agenda.agents[0]
        seeds = range(agent_settings.seed, agent_settings.seed + count)
        plain = {s: train(f"{name}_s{s}", _reward(veh, spec, ped_weight), seed=s) for s in seeds}
        seed, table = _choose_plain_seed(scoring, agenda, plain)
        trained[name] = replace(plain[seed], name=name)
    for name, spec, _weight in agenda.agents:
        if name not in trained:
            trained[name] = train(name, _reward(veh, spec, ped_weight))
    return trained, table, seconds


def _frontier(agendas: list[_Agenda], summary: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for agenda in agendas:
        if not agenda.pedestrians:
            continue
        s = agenda.scenario.name
        for name, _reward, weight in agenda.agents:
            if weight is None:
                continue
            figures = {m: value(summary, s, True, name, m) for m in FRONTIER_METRICS}
            rows.append({"scenario": s, "agent": name, "fairness_weight": weight, **figures})
    columns = ["scenario", "agent", "fairness_weight", *FRONTIER_METRICS]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.sort_values(["scenario", "fairness_weight"], kind="stable").reset_index(drop=True)


def run_study(
    job: TrafficJob,
    progress: Progress | None = None,
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
    """
    scenarios, study = job.scenarios, job.study
    train_settings = TrainingSettings.of(job)
    agendas = _agendas(scenarios, job.reward, study)
    own_dir = workdir is None
    base = Path(tempfile.mkdtemp(prefix="traffic-study-")) if own_dir else Path(workdir)
    pool = EpisodePool(WORKERS)  # its processes score every block: each starts once
    scoring = _Scoring(job.demand, scenarios.seconds, base, cache_dir, progress, pool)
    agents: dict[str, TrainedAgent] = {}
    runs: list[dict[str, Any]] = []
    replays: list[dict[str, Any]] = []
    train_seconds = 0.0
    tables: list[pd.DataFrame] = []
    networks: dict[str, Any] = {}
    try:
        for agenda in agendas:
            trained, table, seconds = _train_block(agenda, train_settings, job.reward, study, scoring, tuning)
            train_seconds += seconds
            if table is not None:
                tables.append(table)
            agents.update({f"{agenda.prefix}/{name}": agent for name, agent in trained.items()})
            signals = network_junctions(agenda.scenario, agenda.pedestrians,
                                        _demand(job.demand, job.demand.test_seeds[0]), cache_dir)
            networks[agenda.prefix] = {"scenario": agenda.scenario.name, "pedestrians": agenda.pedestrians,
                                       "signals": signals}
            block_runs, block_replays = _score(scoring, agenda, trained)
            runs += block_runs
            replays += block_replays
    finally:
        pool.close()
        if own_dir:
            shutil.rmtree(base, ignore_errors=True)
    runs_frame = pd.DataFrame(runs, columns=list(RUN_COLUMNS))
    summary = summarise(runs_frame)
    selection = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()
    names = [scenario_of(scenarios, n).name for n in scenarios.names]
    headline, best = headline_figures(summary, selection, names, scenarios.pedestrians, study)
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
        replays=pd.DataFrame(replays, columns=replay_columns), frontier=_frontier(agendas, summary),
        agents=agents, train_seconds=train_seconds, selection=selection,
        junctions={"networks": networks, "gamma": job.agent.gamma,
                   "reward_scale": (tuning or DQNTuning()).reward_scale},
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
