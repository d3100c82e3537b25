"""Check how much forecasting can matter on a fleet before benching it: the fastest-split rule on each
information, simulated round after round on the same draws, without training.

``python -m decisions.telecom.splitfl.forecast_check [--dataset fashion] [--plain]`` prints, per information
(``server_view.INFORMATION``), the mean round time, its ratio to the oracle's, the share of
client-rounds not trained, and the share of the available clients' splits that differ from the
oracle's. A fleet where the oracle's rounds are no shorter than the deployable rules' leaves no room
for any forecast, or any agent, to beat those rules.
"""

from __future__ import annotations

import argparse

import jax
import numpy as np
import pandas as pd

from decisions.telecom.splitfl import fleet as fl
from decisions.telecom.splitfl import server_view as sv
from decisions.telecom.splitfl.devices import DeviceScenario
from decisions.telecom.splitfl.strategies import fastest_splits

_play = jax.jit(fl.play_round)
_observe = jax.jit(sv.observe, static_argnums=5)
_seen = jax.jit(sv.seen_state, static_argnums=2)


def rule_rounds(
    p: fl.FleetParams, information: str, rounds: int, seed: int, window: int = 5, alpha: float = 0.3
) -> dict[str, np.ndarray]:
    """One run of the fastest-split rule on ``information``: per round, its ``round_time_s``, the
    ``trained`` and ``available`` masks, its ``splits`` and the oracle's ``oracle_splits`` on the same state."""
    state, view = fl.reset(jax.random.PRNGKey(seed + 7919), p), sv.initial_view(p, window)
    rows: dict[str, list[np.ndarray]] = {k: [] for k in ("round_time_s", "trained", "available", "splits",
                                                         "oracle_splits")}
    for t in range(rounds):
        splits = fastest_splits(_seen(view, state, information), p)
        rows["oracle_splits"].append(np.asarray(fastest_splits(state, p)))
        key = jax.random.fold_in(jax.random.PRNGKey(seed), t)
        new, outcome = _play(jax.random.split(key)[0], state, p, splits)
        view = _observe(view, state, outcome, new, p, alpha)
        for name, value in (("round_time_s", outcome.round_time_s), ("trained", outcome.participated),
                            ("available", state.available), ("splits", splits)):
            rows[name].append(np.asarray(value))
        state = new
    return {k: np.stack(v) for k, v in rows.items()}


def forecast_table(p: fl.FleetParams, rounds: int, seeds: int, window: int = 5, alpha: float = 0.3) -> pd.DataFrame:
    """One row per information: mean round (s), its ratio to the oracle's, the share of client-rounds
    not trained and the share of available clients' splits that are not the oracle's (means over seeds)."""
    rows = []
    for information in sv.INFORMATION:
        runs = [rule_rounds(p, information, rounds, seed, window, alpha) for seed in range(seeds)]
        rows.append({
            "information": information,
            "mean_round_s": float(np.mean([r["round_time_s"].mean() for r in runs])),
            "not_trained": float(np.mean([1.0 - r["trained"].mean() for r in runs])),
            "splits_off_oracle": float(np.mean([(r["splits"] != r["oracle_splits"])[r["available"]].mean()
                                                for r in runs])),
        })
    table = pd.DataFrame(rows)
    return table.assign(round_vs_oracle=table["mean_round_s"] / table.loc[0, "mean_round_s"])


def main() -> None:
    """Print ``forecast_table`` of the bench's server-study fleet (or, ``--plain``, its stored fleet)."""
    from decisions.telecom.splitfl.bench import DIGITS_SPEC, FASHION_SPEC, server_spec, with_default_tiers
    from decisions.telecom.splitfl.model import make_net
    from decisions.telecom.splitfl.spec import prepare

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=("digits", "fashion"), default="digits")
    parser.add_argument("--plain", action="store_true", help="the stored study's fleet (no persistence, no budget tier)")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    spec = {**(FASHION_SPEC if args.dataset == "fashion" else DIGITS_SPEC), "job": {"name": "forecast-check"}}
    job = prepare(with_default_tiers(spec if args.plain else server_spec(spec)))
    devices: DeviceScenario = job.devices
    p = fl.fleet_params(devices, make_net(job.arch.value).layer_table(), job.training.batch_size,
                        job.training.local_steps)
    table = forecast_table(p, args.rounds, args.seeds, job.study.forecast_window, job.study.forecast_alpha)
    print(table.round(4).to_string(index=False))


if __name__ == "__main__":
    main()
