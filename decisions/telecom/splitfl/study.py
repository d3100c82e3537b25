"""The split-point study: agents trained on the simulator, then every strategy run for real, seed by seed."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pandas as pd

from decisions.core.agents import dqn
from decisions.core.progress import Progress
from decisions.telecom.splitfl import env as E
from decisions.telecom.splitfl import fleet as fl
from decisions.telecom.splitfl.agent import Committee, train_committee
from decisions.telecom.splitfl.data import Dataset, dirichlet_partition, load_digits_data, load_fashion_mnist
from decisions.telecom.splitfl.devices import DeviceScenario
from decisions.telecom.splitfl.federation import Federation, History, LearningCache, run_federation
from decisions.telecom.splitfl.model import SplitNet, make_net
from decisions.telecom.splitfl.spec import (
    AgentSettings,
    DatasetName,
    DataSettings,
    Mode,
    SplitFLJob,
    StudySettings,
    TrainingSettings,
)
from decisions.telecom.splitfl.split import equivalence_error, evaluate, full_step, pad_clients
from decisions.telecom.splitfl.strategies import (
    ClientAgent,
    FastestSplit,
    FixedSplit,
    GreedyRule,
    RandomSplit,
    RoundAgent,
    Strategy,
)

"""``(task, done, total)``."""

HEADLINE_AGENT = {Mode.CLIENT: "dqn_client", Mode.ROUND: "dqn_round"}

DEPLOYABLE_RULES = ("last", "mean", "smoothed")
"""The server's forecasts the fastest-split rule runs on (``fastest_<forecast>``) with ``study.deployable_rules``."""

SMOOTHING_WINDOW = 3
"""Rounds in the trailing mean of ``time_to_target_smoothed_s``, reported beside the first-touch time
to the target for every strategy alike."""


@dataclass
class Study:
    """A finished study: the job, ``histories[seed][strategy]``, ``runs`` (one row per strategy and
    seed, :func:`run_metrics`), ``summary`` (means and spreads over seeds), ``headline``, the
    ``centralised`` reference accuracy per seed, the trained ``committees`` and their training time.
    """

    job: SplitFLJob
    histories: dict[int, dict[str, History]]
    runs: pd.DataFrame
    summary: pd.DataFrame
    headline: dict[str, float]
    centralised: dict[int, float]
    committees: dict[str, Committee] = field(repr=False)
    agent_seconds: float = 0.0
    tier_names: tuple[str, ...] = ()
    rounds_per_second: float = float("nan")
    """Rounds a second of the first seed's first run (compile included, nothing cached)."""


def load_dataset(d: DataSettings, seed: int) -> tuple[Dataset, tuple[np.ndarray, np.ndarray]]:
    """The images (digits split by ``seed``; Fashion-MNIST's own split), subsampled as configured, and
    the whole test set (which scores each run's final model)."""
    data = load_digits_data(seed=seed) if d.dataset is DatasetName.DIGITS else load_fashion_mnist(d.path)
    rng = np.random.default_rng(10_000 + seed)
    x_tr, y_tr, x_te, y_te = data.x_train, data.y_train, data.x_test, data.y_test
    if d.train_samples is not None and d.train_samples < len(y_tr):
        keep = rng.choice(len(y_tr), d.train_samples, replace=False)
        x_tr, y_tr = x_tr[keep], y_tr[keep]
    if d.test_samples is not None and d.test_samples < len(y_te):
        keep = rng.choice(len(y_te), d.test_samples, replace=False)
        x_te, y_te = x_te[keep], y_te[keep]
    return Dataset(x_tr, y_tr, x_te, y_te, data.classes), (data.x_test, data.y_test)


def optimizer(t: TrainingSettings) -> optax.GradientTransformation:
    """SGD at the training's learning rate and momentum (element-wise: split training equals unsplit training)."""
    return optax.sgd(t.learning_rate, momentum=t.momentum or None)


def fleet_for(devices: DeviceScenario, t: TrainingSettings, net: SplitNet) -> fl.FleetParams:
    """The fleet with the network's layer table and the round's workload."""
    return fl.fleet_params(devices, net.layer_table(), t.batch_size, t.local_steps)


def env_params_for(
    a: AgentSettings, rounds: int, fleet: fl.FleetParams, data_share: Any, decay: float | None = None,
    time_weight: float | None = None, study: StudySettings | None = None,
) -> E.SplitEnvParams:
    """The split environment's params (``decay`` and ``time_weight`` override the agent's; ``study``'s
    forecast window and alpha, the defaults' without it)."""
    s = study or StudySettings()
    return E.env_params(
        fleet, data_share, rounds, decay=a.decay if decay is None else decay,
        loss_weight=a.loss_weight, time_weight=a.time_weight if time_weight is None else time_weight,
        dropout_weight=a.dropout_weight, energy_weight=a.energy_weight, information=a.information.value,
        window=s.forecast_window, alpha=s.forecast_alpha,
    )


def build_federation(
    d: DataSettings, t: TrainingSettings, agent: AgentSettings, devices: DeviceScenario, arch: str, seed: int,
    study: StudySettings | None = None,
) -> tuple[Federation, tuple[np.ndarray, np.ndarray]]:
    """One seed's task: validation split, Dirichlet partition, padded client data; and the pooled client data.

    Raises:
        InputError: (``data.concentration`` / ``devices.tiers``) a partition that leaves a client empty.
    """
    data, whole_test = load_dataset(d, seed)
    net = make_net(arch)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(data.y_train))
    n_val = max(1, int(round(d.validation_share * len(order))))
    val_idx, train_idx = order[:n_val], order[n_val:]
    fleet = fleet_for(devices, t, net)
    parts = dirichlet_partition(data.y_train[train_idx], fleet.clients, d.concentration, seed)
    clients = [(data.x_train[train_idx[p]], data.y_train[train_idx[p]]) for p in parts]
    counts = np.array([len(p) for p in parts], np.float64)
    fed = Federation(
        net=net,
        data=pad_clients(clients),
        val=(data.x_train[val_idx], data.y_train[val_idx]),
        test=(data.x_test, data.y_test),
        pe=env_params_for(agent, t.rounds, fleet, counts, study=study),
        optimizer=optimizer(t),
        local_steps=t.local_steps,
        batch_size=t.batch_size,
        seed=seed,
        vmap_clients=arch == "cnn",
        final_test=whole_test if len(whole_test[1]) > len(data.y_test) else None,
    )
    return fed, (data.x_train[train_idx], data.y_train[train_idx])


def centralised_accuracy(t: TrainingSettings, fed: Federation, pooled: tuple[np.ndarray, np.ndarray]) -> float:
    """Test accuracy of the unsplit network trained on the pooled client data (the target's reference).

    By default it takes as many sequential minibatch steps, of the clients' batch size, as all the clients
    together take over the run (rounds x local steps x clients): the same samples and the same gradient
    work as federated training, without the averaging.
    """
    steps = t.centralised_steps or t.rounds * t.local_steps * fed.pe.fleet.clients
    batch = t.batch_size
    opt, net = fed.optimizer, fed.net
    params = net.init(jax.random.PRNGKey(fed.seed))
    x, y = jnp.asarray(pooled[0]), jnp.asarray(pooled[1])
    idx = jax.random.randint(jax.random.PRNGKey(fed.seed + 1), (steps, batch), 0, len(pooled[1]))

    def body(carry: tuple[Any, Any], ix: jax.Array) -> tuple[tuple[Any, Any], None]:
        p, s = full_step(net, opt, carry[0], carry[1], x[ix], y[ix])[:2]
        return (p, s), None

    if fed.vmap_clients:  # the small CNN: one scanned loop
        params, _ = jax.jit(lambda p: jax.lax.scan(body, (p, opt.init(p)), idx)[0])(params)
    else:  # convolutions inside a scan run ~4x slower on XLA:CPU (split.make_round): one jitted step a call
        step = jax.jit(lambda c, ix: body(c, ix)[0])
        carry = (params, opt.init(params))
        for i in range(steps):
            carry = step(carry, idx[i])
        params = carry[0]
    return evaluate(net, params, *fed.test)[1]


def dqn_config(a: AgentSettings, mode: Mode) -> dqn.DQNConfig:
    """The core DQN's settings for a mode (per-client episodes are ``n`` times longer)."""
    return dqn.DQNConfig(
        total_env_steps=a.env_steps, num_envs=8, learning_starts=min(2000, a.env_steps // 4), hidden=a.hidden,
        gamma=a.gamma, bootstrap_truncated=False, log_every=200, batch_size=64, exploration_fraction=0.3,
        learning_rate=a.learning_rate, tau=0.01, buffer_size=max(a.env_steps, 1000),
    )


def train_agents(
    a: AgentSettings, study: StudySettings, fleet: fl.FleetParams, rounds: int, progress: Progress | None = None
) -> tuple[dict[str, Committee], float]:
    """The agents by strategy name (module docstring, step 1), and their total training seconds."""
    share = np.ones(fleet.clients)
    key = jax.random.PRNGKey(a.seed)
    agents: dict[str, Committee] = {}
    seconds = 0.0

    def report(task: str) -> Callable[[str, int, int], None] | None:
        return None if progress is None else (lambda _t, done, total: progress(task, done, total))

    for mode in a.modes:
        pe = env_params_for(a, rounds, fleet, share, study=study)
        environment = E.ClientSplitEnv(pe) if mode is Mode.CLIENT else E.RoundSplitEnv(pe)
        size = a.committee
        if mode is Mode.CLIENT:
            size = max([size, *study.committees])
        committee = train_committee(environment, dqn_config(a, mode), members=size,
                                    key=jax.random.fold_in(key, 1 if mode is Mode.CLIENT else 0),
                                    progress=report(f"agent ({mode.value})"))
        seconds += committee.train_seconds
        name = HEADLINE_AGENT[mode]
        agents[name] = first_members(committee, a.committee)
        if mode is Mode.CLIENT:
            for m in study.committees:
                if m != a.committee:
                    agents[f"{name}_m{m}"] = first_members(committee, m)
            variants = [(f"decay{d:g}", f"decay {d:g}", {"decay": d}) for d in study.decays if d != a.decay]
            variants += [(f"tw{w:g}", f"time weight {w:g}", {"time_weight": w})
                         for w in study.time_weights if w != a.time_weight]  # fmt: skip
            for suffix, label, reward in variants:
                ablation = train_committee(E.ClientSplitEnv(env_params_for(a, rounds, fleet, share, study=study,
                                                                           **reward)),
                                           dqn_config(a, mode), members=a.committee,
                                           key=jax.random.fold_in(key, 2), progress=report(f"agent ({label})"))
                seconds += ablation.train_seconds
                agents[f"{name}_{suffix}"] = ablation
    return agents, seconds


def first_members(committee: Committee, m: int) -> Committee:
    """A committee of the first ``m`` members."""
    return Committee(committee.policy, jax.tree.map(lambda a: a[:m], committee.params), committee.train_seconds)


def strategies(
    study: StudySettings, layers: int, agents: dict[str, Committee], seed: int, information: str = "oracle"
) -> list[Strategy]:
    """Every strategy the study runs for a seed: fixed splits, random, greedy, fastest, the fastest-split
    rule on the server's forecasts, agents and ablations (the agents see ``information``)."""
    out: list[Strategy] = [FixedSplit(s) for s in (study.fixed_splits or range(1, layers + 1))]
    if study.random:
        out.append(RandomSplit(seed))
    if study.greedy:
        out.append(GreedyRule())
    if study.fastest:
        out.append(FastestSplit())
    if study.deployable_rules:
        out += [FastestSplit(information=kind) for kind in DEPLOYABLE_RULES]
    for name, committee in agents.items():
        agent = ClientAgent if name.startswith(HEADLINE_AGENT[Mode.CLIENT]) else RoundAgent
        out.append(agent(committee, name=name, information=information))
    return out


def run_metrics(history: History, target: float, tier_names: tuple[str, ...], deadline: float) -> dict[str, Any]:
    """One run's figures (module docstring, step 3)."""
    eligible = history.eligible
    row: dict[str, Any] = {
        "strategy": history.strategy,
        "final_test_acc": history.final_test_acc,
        "last_round_test_acc": float(history.test_acc[-1]),
        "best_test_acc": float(history.test_acc.max()),
        "time_to_target_s": history.time_to(target),
        "time_to_target_smoothed_s": history.time_to(target, SMOOTHING_WINDOW),
        "rounds_to_target": float(history.rounds_to(target) or math.inf),
        "total_time_s": float(history.round_time_s.sum()),
        "mean_round_s": float(history.round_time_s.mean()),
        "dropout_rate": float(1.0 - history.participated.mean()),
        "straggler_rate": float(history.timed_out.sum() / max(eligible.sum(), 1)),
        "refused_rate": float(history.refused.sum() / max(eligible.sum(), 1)),
        "battery_deaths": int(history.died.sum()),
        "offline_rate": float(1.0 - eligible.mean()),
        "deadline_rounds": float(np.mean(history.round_time_s >= deadline - 1e-6)),
        "mb_per_round": float(history.bytes_sent.sum(axis=1).mean() / 1e6),
        "mean_split": float(history.splits[history.participated].mean()) if history.participated.any() else float("nan"),
    }
    for k, name in enumerate(tier_names):
        mask = history.tier == k
        row[f"energy_j_per_round_{name}"] = float(history.energy_j[:, mask].mean()) if mask.any() else 0.0
    return row


def _summarise(runs: pd.DataFrame) -> pd.DataFrame:
    numeric = runs.drop(columns=["seed"]).groupby("strategy", sort=False)
    mean = numeric.mean(numeric_only=True)
    std = numeric.std(numeric_only=True, ddof=0).add_suffix("_std")
    return pd.concat([mean, std[["final_test_acc_std", "time_to_target_s_std"]]], axis=1).reset_index()


def best_fixed(runs: pd.DataFrame, time_column: str = "time_to_target_s") -> pd.Series:
    """Per seed, the fixed split in hindsight: shortest time to the target (``time_column``), then the higher
    final accuracy."""
    fixed = runs[runs["strategy"].str.startswith("fixed_")]
    ranked = fixed.sort_values(["seed", time_column, "final_test_acc"], ascending=[True, True, False])
    return ranked.groupby("seed").head(1).set_index("seed")["strategy"]


def time_ratio_of(time: float, reference: float) -> float:
    """``time / reference`` of two times to the target; NaN when the reference never reached it."""
    return float(time / reference) if math.isfinite(reference) else float("nan")


def best_fixed_rows(runs: pd.DataFrame, time_column: str = "time_to_target_s") -> pd.DataFrame:
    """Per seed (the index), the run of its best fixed split in hindsight (``best_fixed`` by ``time_column``)."""
    best = best_fixed(runs, time_column)
    return runs.set_index(["seed", "strategy"]).loc[list(best.items())].reset_index("strategy")


def vs_best_fixed(runs: pd.DataFrame, time_column: str = "time_to_target_s") -> pd.DataFrame:
    """Each run with ``time_ratio`` (``time_ratio_of`` of ``time_column``) and ``acc_ratio`` (final test
    accuracy) against its seed's best fixed split in hindsight (``best_fixed_rows``)."""
    ref = best_fixed_rows(runs, time_column)
    base_time = runs["seed"].map(ref[time_column])
    time_ratio = [time_ratio_of(t, b) for t, b in zip(runs[time_column], base_time, strict=True)]
    return runs.assign(time_ratio=time_ratio, acc_ratio=runs["final_test_acc"] / runs["seed"].map(ref["final_test_acc"]))


def headline(modes: Sequence[Mode], runs: pd.DataFrame) -> dict[str, float]:
    """The agent's ratios against the best fixed split in hindsight (mean, std, worst over seeds).

    The agent is the client-mode one when ``modes`` holds it, else the round-mode one.
    """
    agent = HEADLINE_AGENT[Mode.CLIENT if Mode.CLIENT in modes else Mode.ROUND]
    scored = vs_best_fixed(runs)
    mine = scored[scored["strategy"] == agent].set_index("seed")
    smoothed = vs_best_fixed(runs, "time_to_target_smoothed_s")
    mine_smoothed = smoothed[smoothed["strategy"] == agent].set_index("seed")["time_ratio"].to_numpy(float)
    fixed = runs[runs["strategy"].str.startswith("fixed_")].groupby("seed")
    t, acc = mine["time_ratio"].to_numpy(float), mine["acc_ratio"].to_numpy(float)
    winners = best_fixed_rows(runs)
    per_seed = {}
    for k, (seed, ratio) in enumerate(zip(mine.index, t, strict=True)):
        best = winners.loc[seed]
        per_seed[f"time_ratio_seed{k}"] = float(ratio)
        per_seed[f"best_fixed_split_seed{k}"] = float(best["strategy"].split("_")[1])
        per_seed[f"best_fixed_time_s_seed{k}"] = float(best["time_to_target_s"])
        per_seed[f"agent_time_s_seed{k}"] = float(mine.loc[seed, "time_to_target_s"])
        per_seed[f"agent_rounds_seed{k}"] = float(mine.loc[seed, "rounds_to_target"])
        per_seed[f"best_fixed_rounds_seed{k}"] = float(best["rounds_to_target"])
    return {
        "time_to_target_smoothed_ratio_vs_best_fixed": float(np.mean(mine_smoothed)),
        "time_to_target_smoothed_ratio_vs_best_fixed_worst": float(np.max(mine_smoothed)),
        **per_seed,
        "time_to_target_ratio_vs_best_fixed": float(np.mean(t)),
        "time_to_target_ratio_vs_best_fixed_std": float(np.std(t)),
        "time_to_target_ratio_vs_best_fixed_worst": float(np.max(t)),
        "final_test_acc_vs_best_fixed": float(np.mean(acc)),
        "final_test_acc_vs_best_fixed_worst": float(np.min(acc)),
        "final_test_acc_vs_max_fixed": float((mine["final_test_acc"] / fixed["final_test_acc"].max()).mean()),
        "dropout_rate_agent": float(mine["dropout_rate"].mean()),
        "dropout_margin_vs_fixed": float((fixed["dropout_rate"].min() - mine["dropout_rate"]).min()),
        "seeds": float(len(mine)),
    }


def run_study(job: SplitFLJob, progress: Progress | None = None) -> Study:
    """Train the agents, run every strategy on every seed, and score them (module docstring)."""
    arch, training, devices = job.arch.value, job.training, job.devices
    net = make_net(arch)
    agents, agent_seconds = train_agents(job.agent, job.study, fleet_for(devices, training, net), training.rounds,
                                         progress)
    histories: dict[int, dict[str, History]] = {}
    rows, centralised = [], {}
    speed = float("nan")
    tier_names = tuple(devices.tiers)
    for seed in training.seeds:
        fed, pooled = build_federation(job.data, training, job.agent, devices, arch, seed, job.study)
        centralised[seed] = centralised_accuracy(training, fed, pooled)
        target = training.target_share * centralised[seed]
        cache = LearningCache()
        histories[seed] = {}
        for strategy in strategies(job.study, net.num_layers, agents, seed, job.agent.information.value):
            task = f"seed {seed}: {strategy.name}"
            report = None if progress is None else (lambda d, n, task=task: progress(task, d, n))
            start = time.perf_counter()
            h = run_federation(fed, strategy, training.rounds, cache=cache, progress=report)
            if not math.isfinite(speed):
                speed = training.rounds / (time.perf_counter() - start)
            histories[seed][strategy.name] = h
            rows.append({"seed": seed, **run_metrics(h, target, tier_names, devices.round_deadline_s)})
    runs = pd.DataFrame(rows)
    return Study(job, histories, runs, _summarise(runs), headline(job.agent.modes, runs), centralised, agents,
                 agent_seconds, tier_names, speed)


def split_equivalence_max_err(arch: str, t: TrainingSettings, seed: int = 0) -> float:
    """The largest parameter difference between one split step and one unsplit step, over every split."""
    net = make_net(arch)
    rng = np.random.default_rng(seed)
    x = rng.random((t.batch_size, *net.input_shape), np.float32)
    y = rng.integers(0, 10, t.batch_size)
    return equivalence_error(net, jax.random.PRNGKey(seed), (x, y), optimizer(t))
