"""What the server knows: its view is built from earlier rounds' measurements only (never this round's
draws), its forecasts, the fastest-split rule on them, the agent's observation, and the study's figures
against the best deployable rule."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from decisions.telecom.splitfl import env as E
from decisions.telecom.splitfl import fleet as fl
from decisions.telecom.splitfl import server_view as sv
from decisions.telecom.splitfl.devices import DeviceScenario
from decisions.telecom.splitfl.model import make_net
from decisions.telecom.splitfl.server_figures import best_deployable_rule, deployable_figures
from decisions.telecom.splitfl.strategies import FastestSplit, fastest_splits

FORECASTS = ("last", "mean", "smoothed")


def _params(**devices: Any) -> fl.FleetParams:
    scenario = DeviceScenario(link_jitter=0.5, load_persistence=0.8, link_persistence=0.8, **devices)
    return fl.fleet_params(scenario, make_net("cnn").layer_table(), 32, 2)


def _env(p: fl.FleetParams, information: str = "oracle") -> E.SplitEnvParams:
    return E.env_params(p, np.ones(p.clients), 10, decay=0.05, loss_weight=1.0, time_weight=1.0, dropout_weight=1.0,
                        energy_weight=0.0, information=information, window=3, alpha=0.5)


def _played(
    p: fl.FleetParams, rounds: int, window: int = 3, alpha: float = 0.5
) -> tuple[sv.ServerView, fl.FleetState, list[fl.FleetState]]:
    """The view and the state after ``rounds`` rounds at split 3, and the states before each round."""
    state, view, before = fl.reset(jax.random.PRNGKey(0), p), sv.initial_view(p, window), []
    play, observe = jax.jit(fl.play_round), jax.jit(sv.observe)  # each compiled once for the round loop
    for t in range(rounds):
        new, outcome = play(jax.random.PRNGKey(t + 1), state, p, jnp.full(p.clients, 3, jnp.int32))
        view = observe(view, state, outcome, new, p, alpha)
        before.append(state)
        state = new
    return view, state, before


def _redrawn(state: fl.FleetState, seed: int) -> fl.FleetState:
    """``state`` with other draws for the round: CPU share, link factor and their latents."""
    k1, k2, k3, k4 = jax.random.split(jax.random.PRNGKey(seed), 4)
    n = state.cpu_share.shape[0]
    return state.replace(cpu_share=jax.random.uniform(k1, (n,), minval=0.5, maxval=1.0),
                         link_factor=jnp.exp(jax.random.normal(k2, (n,))), load_z=jax.random.normal(k3, (n,)),
                         link_z=jax.random.normal(k4, (n,)))


@pytest.mark.parametrize("information", FORECASTS)
def test_the_view_never_reads_this_rounds_draws(information: str) -> None:
    p = _params()
    view, state, _ = _played(p, 4)
    other = _redrawn(state, 99)
    assert not np.allclose(other.cpu_share, state.cpu_share)
    seen, seen_other = sv.seen_state(view, state, information), sv.seen_state(view, other, information)
    for a, b in zip(jax.tree.leaves(seen), jax.tree.leaves(seen_other), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(fastest_splits(seen, p), fastest_splits(seen_other, p))
    pe = _env(p, information)
    np.testing.assert_array_equal(E.round_obs(E.seen(pe, state, view), pe, jnp.asarray(4)),
                                  E.round_obs(E.seen(pe, other, view), pe, jnp.asarray(4)))
    oracle = sv.seen_state(view, other, "oracle")  # the bound reads them
    np.testing.assert_array_equal(oracle.cpu_share, other.cpu_share)


def test_forecasts_are_the_last_the_windows_mean_and_the_smoothed_measurement() -> None:
    p = _params()
    view, state, before = _played(p, 5, window=3, alpha=0.5)
    cpu = np.stack([np.asarray(s.cpu_share) for s in before])  # every client took part in every round here
    np.testing.assert_allclose(sv.forecast(view, "last")[0], cpu[-1], rtol=1e-6)
    np.testing.assert_allclose(sv.forecast(view, "mean")[0], cpu[-3:].mean(axis=0), rtol=1e-5)
    smooth = cpu[0]
    for row in cpu[1:]:
        smooth = 0.5 * row + 0.5 * smooth
    np.testing.assert_allclose(sv.forecast(view, "smoothed")[0], smooth, rtol=1e-5)
    seen = sv.seen_state(view, state, "last")
    np.testing.assert_array_equal(seen.battery_j, state.battery_j)  # the report: charge and availability now
    np.testing.assert_array_equal(seen.available, state.available)
    assert seen.load_z is None and seen.link_z is None


def test_before_any_measurement_the_forecast_is_the_long_run_mean_and_a_joined_device_starts_afresh() -> None:
    p = _params(leave_prob=0.5, join_prob=0.5)
    view = sv.initial_view(p, 3)
    for information in FORECASTS:
        cpu, link = sv.forecast(view, information)
        np.testing.assert_allclose(cpu, 0.75)
        np.testing.assert_allclose(link, 1.0)
    view, state, before = _played(p, 12)
    joined = np.asarray(fl.present(state, p) & ~fl.present(before[-1], p))
    assert joined.any()
    assert not np.asarray(view.measured)[joined].any()
    np.testing.assert_allclose(np.asarray(sv.forecast(view, "mean")[0])[joined], 0.75)


def test_the_deployable_rules_decide_on_the_forecast() -> None:
    p = _params()
    view, state, _ = _played(p, 4)
    pe = _env(p)
    slow = state.replace(link_factor=jnp.full(p.clients, 0.02))  # this round's links collapse; no server knows
    oracle = np.asarray(FastestSplit().decide(slow, pe, 0))
    for information in FORECASTS:
        rule = FastestSplit(information=information)
        assert rule.name == f"fastest_{information}"
        splits = np.asarray(rule.decide(sv.seen_state(view, slow, information), pe, 0))
        np.testing.assert_array_equal(splits, fastest_splits(sv.seen_state(view, state, information), p))
        assert ((splits >= 1) & (splits <= p.layers)).all()
    assert FastestSplit().name == "fastest"
    last = np.asarray(FastestSplit(information="last").decide(sv.seen_state(view, slow, "last"), pe, 0))
    assert not np.array_equal(oracle, last)  # the bound moves with the round's draws, the rule does not


def _runs() -> pd.DataFrame:
    rows = []
    times = {"fastest_last": [10.0, 20.0], "fastest_mean": [12.0, 16.0], "fastest_smoothed": [11.0, 30.0],
             "fastest": [8.0, 12.0], "dqn_client": [9.0, math.inf], "fixed_3": [40.0, 40.0]}
    for name, values in times.items():
        for seed, value in enumerate(values):
            rows.append({"seed": seed, "strategy": name, "time_to_target_s": value, "final_test_acc": 0.9,
                         "dropout_rate": 0.1 if name == "dqn_client" else 0.05})
    return pd.DataFrame(rows)


def test_figures_against_the_best_deployable_rule() -> None:
    runs = _runs()
    assert best_deployable_rule(runs) == "fastest_mean"  # mean 14 against 15 and 20.5
    figures = deployable_figures(runs, "dqn_client")
    assert figures["best_deployable_rule_index"] == 1.0
    assert math.isinf(figures["time_to_target_vs_best_deployable_rule"])  # a seed the agent never reached it
    assert figures["oracle_time_to_target_vs_best_deployable_rule"] == pytest.approx((8 / 12 + 12 / 16) / 2)
    assert figures["dropout_rate_agent_vs_best_deployable_rule"] == pytest.approx(0.05)
    assert figures["server_time_to_target_s_fastest_mean"] == 14.0
    reached = runs.assign(time_to_target_s=runs["time_to_target_s"].replace(math.inf, 8.0))
    assert deployable_figures(reached, "dqn_client")["time_to_target_vs_best_deployable_rule"] == pytest.approx(
        (9 / 12 + 8 / 16) / 2)
    with pytest.raises(ValueError, match="no deployable rule"):
        best_deployable_rule(runs[~runs["strategy"].str.startswith("fastest_")])


@dataclass
class _Recorder:
    """The fastest-split rule on the last report, keeping the fleet it was shown each round."""

    information: str = "last"
    name: str = "recorder"
    seen: list[fl.FleetState] = field(default_factory=list)

    def decide(self, state: fl.FleetState, pe: E.SplitEnvParams, t: int) -> np.ndarray:
        self.seen.append(state)
        return np.asarray(fastest_splits(state, pe.fleet))


def test_the_federation_shows_a_deployable_strategy_only_earlier_rounds_measurements() -> None:
    import optax

    from decisions.telecom.splitfl.federation import Federation, run_federation
    from decisions.telecom.splitfl.split import pad_clients

    p = _params()
    rng = np.random.default_rng(0)
    data = [(rng.random((12, 8, 8, 1), np.float32), rng.integers(0, 10, 12)) for _ in range(p.clients)]
    val = (rng.random((20, 8, 8, 1), np.float32), rng.integers(0, 10, 20))
    fed = Federation(net=make_net("cnn"), data=pad_clients(data), val=val, test=val, pe=_env(p),
                     optimizer=optax.sgd(0.05), local_steps=1, batch_size=4, seed=0)
    recorder = _Recorder()
    history = run_federation(fed, recorder, 4)
    np.testing.assert_allclose(recorder.seen[0].cpu_share, 0.75)  # nothing measured before round 0
    for t in range(1, 4):
        reported = history.eligible[t - 1] & ~history.died[t - 1]
        assert reported.any()
        np.testing.assert_allclose(np.asarray(recorder.seen[t].cpu_share)[reported], history.cpu_share[t - 1][reported])
        assert not np.allclose(recorder.seen[t].cpu_share, history.cpu_share[t])  # the round's own draws stay unseen
        np.testing.assert_array_equal(history.splits[t], fastest_splits(recorder.seen[t], p))


@pytest.mark.slow
def test_the_server_study_runs_at_a_tiny_budget() -> None:
    from decisions.telecom.splitfl.bench import DIGITS_SPEC, server_study_figures

    spec = {**DIGITS_SPEC, "job": {"name": "bench"}, "training": {**DIGITS_SPEC["training"], "rounds": 2, "seeds": [0]},
            "agent": {"env_steps": 200, "committee": 1}, "study": {"fixed_splits": [3, 9]}}
    tasks: list[str] = []
    figures = server_study_figures(spec, lambda task, done, total: tasks.append(task))
    for name in ("fastest_last", "fastest_mean", "fastest_smoothed", "fastest", "dqn_client"):
        assert 0.0 <= figures[f"server_dropout_rate_{name}"] <= 1.0
    assert figures["best_deployable_rule_index"] in (0.0, 1.0, 2.0)
    assert {"time_to_target_vs_best_deployable_rule", "oracle_time_to_target_vs_best_deployable_rule"} <= set(figures)
    assert any(task.startswith("server seed 0: fastest_smoothed") for task in tasks)


def test_a_bench_without_either_study_names_plain() -> None:
    from decisions.errors import InputError
    from decisions.telecom.splitfl.bench import run_bench

    with pytest.raises(InputError) as err:
        run_bench(plain=False, server=False)
    assert err.value.field == "plain"


def test_the_forecast_check_simulates_every_information_on_the_same_draws() -> None:
    from decisions.telecom.splitfl.forecast_check import forecast_table

    table = forecast_table(_params(), rounds=6, seeds=1)
    assert table["information"].tolist() == list(sv.INFORMATION)
    oracle = table.iloc[0]
    assert oracle["splits_off_oracle"] == 0.0 and oracle["round_vs_oracle"] == 1.0
    assert (table["mean_round_s"] > 0).all() and table["not_trained"].between(0, 1).all()
