"""Chronic care's scoring: every policy, learnt or exact, evaluated exactly on the true machine in
every deployment regime (what a clinic cannot carry out becomes its fallback action)."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from decisions.health.chronic.capability import estimate_kappas
from decisions.health.chronic.data import Logs, clinician_kappas, simulate_logs
from decisions.health.chronic.exact import Solution, deployed, evaluate, one_hot_policy, value_iteration_jit
from decisions.health.chronic.model import (
    HOLD,
    N_ACTIONS,
    Mdp,
    build,
    execution_factor,
    regime_fallback,
    regime_mask,
    state_table,
    transitions,
)
from decisions.health.chronic.settings import ACTIONS, Clinicians, Machine, Problem, Reward
from decisions.health.chronic.training import (
    behaviour_cloning,
    behaviour_policy,
    count_transitions,
    fit_model_based,
)

USUAL_CARE_INTENSIFY = 0.131
"""Share of uncontrolled visits at which usual care intensifies (the calibration's inertia figure)."""


@dataclass(frozen=True)
class Case:
    """One disease's known machine, its regimes' ``allowed[t, s, a]`` masks and ``fallback[t, s]``
    actions, the clinicians' habit, and the exact optimum in each regime."""

    name: str
    mdp: Mdp
    masks: dict[str, np.ndarray]
    fallbacks: dict[str, np.ndarray]
    habit: int
    optimal: dict[str, Solution]
    train_regime: str
    horizon: int
    reward: Reward
    machine: Machine


def make_case(name: str, machine: Machine, problem: Problem, reward: Reward, habit: str) -> Case:
    """Build the disease's machine and solve it exactly in every regime."""
    mdp = build(machine, reward, problem.horizon)
    masks = {name: regime_mask(regime, problem.horizon) for name, regime in problem.regimes.items()}
    habit_action = ACTIONS.index(habit)
    fallbacks = {name: regime_fallback(mask, (habit_action, HOLD)) for name, mask in masks.items()}
    optimal = {regime: value_iteration_jit(mdp.transitions, mdp.rewards, jnp.asarray(mask))
               for regime, mask in masks.items()}
    return Case(name, mdp, masks, fallbacks, habit_action, optimal, problem.train_regime, problem.horizon, reward, machine)


def score(case: Case, policy: jax.Array, regime: str) -> tuple[float, np.ndarray]:
    """The exact value and TTC curve of ``policy[t, s, a]`` deployed in ``regime``."""
    result = evaluate(case.mdp, deployed(policy, jnp.asarray(case.masks[regime]), jnp.asarray(case.fallbacks[regime])))
    return result.value, result.ttc_curve


def behaviour_population(case: Case, clinicians: Clinicians, regime: str) -> tuple[float, np.ndarray]:
    """The clinician population's exact value and TTC curve: the mean over its clinicians."""
    good = case.optimal[case.train_regime].policy
    habit = ACTIONS.index(clinicians.habit)
    parts = [score(case, behaviour_policy(good, float(k), habit), regime) for k in clinician_kappas(clinicians)]
    return float(np.mean([p[0] for p in parts])), np.mean([p[1] for p in parts], axis=0)


def usual_care(case: Case) -> jax.Array:
    """Usual care: intensify at ``USUAL_CARE_INTENSIFY`` of uncontrolled visits, hold otherwise."""
    uncontrolled = np.append(state_table()[:, 0] > 0, False).astype(np.float32)
    pi = np.zeros((case.horizon, len(uncontrolled), N_ACTIONS), np.float32)
    pi[..., ACTIONS.index("intensify")] = USUAL_CARE_INTENSIFY * uncontrolled
    pi[..., ACTIONS.index("hold")] = 1.0 - USUAL_CARE_INTENSIFY * uncontrolled
    return jnp.asarray(pi)


def draw_logs(case: Case, clinicians: Clinicians, patients: int, key: jax.Array) -> Logs:
    """Offline logs from the train regime, the clinicians' good policy being its exact optimum; with an
    execution gap, each patient's months move as their clinician carries treatment out."""
    gap = clinicians.execution_gap

    def executed(kappa: float) -> jax.Array:
        return transitions(case.machine, execution_factor(kappa, gap))

    return simulate_logs(key, case.mdp, case.optimal[case.train_regime].policy, clinicians, patients,
                         executed if gap > 0 else None)


def offline_policies(case: Case, logs: Logs, regimes: tuple[str, ...],
                     min_count: int = 1) -> dict[tuple[str, str], jax.Array]:
    """Every offline method's policy for each target regime: ``(method, regime) -> policy[t, s, a]``.

    Weightings: ``uniform``, ``kappa`` (the logs' kappa) and ``kappa_est`` (kappa estimated from the
    logs alone, ``capability.estimate_kappas``). ``*_aware`` methods are solved (or cloned) within the
    target regime's actions; ``*_naive`` ones within the train regime's, whatever the target.
    """
    habit = case.habit
    variants = {"uniform": (logs, False), "kappa": (logs, True),
                "kappa_est": (logs._replace(kappa=estimate_kappas(logs, habit)), True)}
    counts = {tag: count_transitions(data) for tag, (data, _) in variants.items()}
    train_mask = case.masks[case.train_regime]
    naive = {}
    for tag, (data, weighted) in variants.items():
        naive[f"mb_{tag}"] = fit_model_based(counts[tag], weighted, case.reward, case.horizon, train_mask,
                                             min_count).policy
        naive[f"bc_{tag}"] = behaviour_cloning(data, weighted, train_mask, case.fallbacks[case.train_regime])
    policies: dict[tuple[str, str], jax.Array] = {}
    for regime in regimes:
        mask = case.masks[regime]
        for tag, (data, weighted) in variants.items():
            aware_mb = fit_model_based(counts[tag], weighted, case.reward, case.horizon, mask, min_count).policy
            aware_bc = behaviour_cloning(data, weighted, mask, case.fallbacks[regime])
            for method, aware in ((f"mb_{tag}", aware_mb), (f"bc_{tag}", aware_bc)):
                policies[(f"{method}_aware", regime)] = one_hot_policy(aware, N_ACTIONS)
                policies[(f"{method}_naive", regime)] = one_hot_policy(naive[method], N_ACTIONS)
    return policies
