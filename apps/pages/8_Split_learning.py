"""Split learning page: where to split a network between edge devices and the server, round by round
or client by client, against fixed splits and plain FedAvg.

The run goes through ``execute_domain``, so it is recorded in the run store like a
CLI run; the page then reopens the recorded report (``SplitFLReport.load``, the CSV tables read
back) and draws the headline figures, test accuracy per round and against the simulated wall
clock per strategy, a strategy's chosen split beside the devices' battery and CPU (per tier or per
client), the dropouts per round and the clients' fates, the energy per tier and the summary table.
``?run=<id>`` opens the report of a recorded run. The page imports the domain's package API only.
"""

from __future__ import annotations

from typing import Any

import app_common
import page_skeleton
import splitfl_device_views
import splitfl_views
import streamlit as st

from decisions.errors import InputError
from decisions.store import RunNotFoundError, get_run
from decisions.telecom.splitfl import DOMAIN, SplitFLReport

# What the page decides, under its title.
INTRO = (
    "In split-federated learning each client trains a network up to a split point and the server "
    "trains the rest; the client parts are averaged every round (the largest split is the whole "
    "network on the client: plain FedAvg). The split does not change what is learnt, only time, "
    "energy, memory and who makes the round. A committee DQN chooses the split from the devices' "
    "battery, CPU and link, once per round or per client, against every fixed split, a random split, "
    "a greedy rule and each client's fastest split on the same fleet."
)

# Budgets small enough for an interactive run of a minute or two on a CPU (no bare string
# literals at module level here: Streamlit's "magic" would print them).
INTERACTIVE_DEFAULTS = {"rounds": 20, "seeds": 1, "committee": 3}
AGENT_ENV_STEPS = 2000
DATASETS = {
    "digits": "Handwritten digits (8x8, scikit-learn; CNN)",
    "fashion": "Fashion-MNIST (28x28; MobileNet; needs Debian's dataset-fashion-mnist)",
}
DEVICE_VIEWS = {"tier": "Per tier (mean of its clients)", "client": "Per client (first seed)"}


def settings_inputs() -> dict[str, Any]:
    """Run name, dataset, rounds, seeds and the committee size of the agents."""
    left, right = st.columns(2, gap="large")
    left.subheader("Data and training")
    data: dict[str, Any] = {
        "name": left.text_input("Run name", value="splitfl-app", key="run_name"),
        "dataset": left.selectbox("Dataset", list(DATASETS), format_func=DATASETS.__getitem__, key="dataset"),
        "rounds": left.number_input("Federated rounds", min_value=0, value=INTERACTIVE_DEFAULTS["rounds"], step=5,
                                    key="rounds"),
    }
    with right:
        st.subheader("Study")
        data |= {
            "seeds": st.number_input("Seeds (data partition, model, fleet)", min_value=0,
                                     value=INTERACTIVE_DEFAULTS["seeds"], key="seeds"),
            "committee": st.number_input("Committee size (DQN members voting)", min_value=0,
                                         value=INTERACTIVE_DEFAULTS["committee"], key="committee"),
        }
        st.caption(f"Both agents (one split per round, one per client) train on {AGENT_ENV_STEPS:,} simulated "
                   "decisions per member; every fixed split, the random split, the greedy rule and the fastest "
                   "split per client run beside them. The ablations (committee sizes, decays) run from the command line.")
    data["seed"] = 0
    return data


def job_spec(settings: dict[str, Any], output_dir: str | None) -> dict[str, Any]:
    """The job spec (``[job]``, ``[data]``, ``[training]``, ``[agent]``, ``[study]``) of the form."""
    return {
        "job": app_common.job_table(DOMAIN, settings, output_dir),
        "data": {"dataset": settings["dataset"]},
        "training": {"rounds": int(settings["rounds"]), "seeds": list(range(int(settings["seeds"])))},
        "agent": {"committee": int(settings["committee"]), "env_steps": AGENT_ENV_STEPS},
        "study": {"committees": [], "decays": []},
    }


def run_config(run_id: int, url: str) -> dict[str, Any]:
    """The recorded run's configuration (for its target share), empty when the run is gone."""
    try:
        return dict(get_run(run_id, url=url).config)
    except (RunNotFoundError, InputError):
        return {}


def chosen_seed(report: SplitFLReport, run_id: int) -> int | None:
    """The seed the curves show: the only one, or the operator's choice (None: the mean over seeds)."""
    found = splitfl_views.seeds(report.rounds)
    if len(found) <= 1:
        return found[0] if found else None
    return st.selectbox("Seed", [splitfl_views.MEAN_OF_SEEDS, *found], key=f"curve_seed_{run_id}",
                        format_func=lambda s: "mean over seeds" if s is None else f"seed {s}")


def show_accuracy(report: SplitFLReport, run_id: int, url: str) -> tuple[list[str], int | None]:
    """Test accuracy per round and against the wall clock of the chosen strategies; returns them and the seed."""
    st.subheader("Accuracy per round and against the wall clock")
    names = splitfl_views.labels(report.summary)
    left, middle, right = st.columns([4, 1, 1])
    strategies = left.multiselect(
        "Strategies", list(names), default=splitfl_views.default_strategies(report.summary),
        format_func=names.__getitem__, key=f"strategies_{run_id}",
    )
    with middle:
        seed = chosen_seed(report, run_id)
    log_x = right.checkbox("Log time axis", value=True, key=f"log_time_{run_id}")
    if not strategies:
        st.info("Choose at least one strategy to draw.")
        return strategies, seed
    st.caption("Solid: the agents; dashed: the baselines. The wall clock is the simulated fleet's: each round "
               "lasts as long as its slowest trained client, up to the deadline. Dotted: the target accuracy "
               "(the run's share of the centralised model's).")
    curve = splitfl_views.curves(report.rounds, strategies, seed=seed, names=names)
    palette = splitfl_views.colours(report.summary)
    target = splitfl_views.target_accuracy(report.metrics, run_config(run_id, url))
    by_round, by_time = st.columns(2)
    by_round.altair_chart(splitfl_views.accuracy_chart(curve, x="round", palette=palette, target=target),
                          width="stretch")
    by_time.altair_chart(splitfl_views.accuracy_chart(curve, x="wall_clock_s", log_x=log_x, palette=palette,
                                                      target=target), width="stretch")
    return strategies, seed


def show_devices(report: SplitFLReport, run_id: int, seed: int | None) -> None:
    """A strategy's chosen split beside the devices' battery and CPU share, per tier or per client."""
    st.subheader("Chosen split, battery and CPU")
    names = splitfl_views.labels(report.summary)
    options = list(names)
    preferred = next((s for s in splitfl_views.AGENTS if s in names), options[0] if options else None)
    left, right = st.columns([2, 3])
    strategy = left.selectbox("Strategy", options, index=options.index(preferred) if preferred else 0,
                              format_func=names.__getitem__, key=f"device_strategy_{run_id}")
    view = right.radio("View", list(DEVICE_VIEWS), format_func=DEVICE_VIEWS.__getitem__, horizontal=True,
                       key=f"device_view_{run_id}")
    if strategy is None:
        return
    if view == "client":
        frame = splitfl_device_views.device_by_client(report.clients, strategy)
        st.caption("Every client of the first seed: the split chosen for it (points shaped by what became of "
                   "it in the round), its battery share and the CPU share it had free.")
    else:
        frame = splitfl_device_views.device_by_tier(report.rounds, strategy, seed=seed)
        st.caption("The mean over each tier's clients: the split chosen, the battery share and the CPU share "
                   "free. A weak device should offload early (small split) and a poorly connected one keep most "
                   "of the network (large split).")
    if frame.empty:
        st.info("This run recorded no device rows for that strategy.")
        return
    st.altair_chart(splitfl_device_views.device_chart(frame, per_client=view == "client"), width="stretch")


def show_dropouts(report: SplitFLReport, run_id: int, strategies: list[str], seed: int | None) -> None:
    """Dropouts per round of the chosen strategies, and what became of their clients."""
    if not strategies:
        return
    st.subheader("Dropouts")
    names = splitfl_views.labels(report.summary)
    left, right = st.columns(2)
    curve = splitfl_views.curves(report.rounds, strategies, seed=seed, names=names)
    left.caption("Clients that did not train in each round (any cause).")
    left.altair_chart(splitfl_device_views.dropout_chart(curve, palette=splitfl_views.colours(report.summary)),
                      width="stretch")
    counts = splitfl_device_views.fate_counts(report.clients, strategies, names)
    if not counts.empty:
        right.caption("What became of every client in every round (first seed): trained, timed out (straggler), "
                      "refused (not enough memory for its part), battery ran out, not chosen, offline.")
        right.altair_chart(splitfl_device_views.fate_chart(counts), width="stretch")
    app_common.download_csv(report.clients, "clients", run_id)


def show_energy(report: SplitFLReport, strategies: list[str]) -> None:
    """Mean energy per client and round of each tier, per chosen strategy."""
    energy = splitfl_device_views.energy_frame(report.summary, strategies)
    if energy.empty:
        return
    page_skeleton.chart_section(
        "Energy per tier",
        "Mean energy a client of each tier spends per round (training, transmitting, waiting), mean over seeds.",
        splitfl_device_views.energy_chart(energy),
    )


def show_summary(report: SplitFLReport, run_id: int) -> None:
    """The summary table of every strategy and the downloads of the run's tables."""
    st.subheader("Summary")
    st.caption("Means over seeds. Time to target is empty where the target was never reached.")
    view = splitfl_views.summary_view(report.summary)
    percent = ("dropout_rate", "straggler_rate", "refused_rate", "offline_rate", "deadline_rounds")
    st.dataframe(
        view, hide_index=True, width="stretch",
        column_config={
            **{name: st.column_config.NumberColumn(format="%.3f")
               for name in ("final_test_acc", "final_test_acc_std", "best_test_acc", "mean_split")},
            **{name: st.column_config.NumberColumn(format="%.1f")
               for name in ("time_to_target_s", "time_to_target_s_std", "total_time_s")},
            **{name: st.column_config.NumberColumn(format="percent") for name in percent},
        },
    )
    for name in ("summary", "runs", "rounds"):
        app_common.download_csv(getattr(report, name), name, run_id)


def show_report(report: SplitFLReport, run_id: int, url: str) -> None:
    """Draw a report: headline figures, accuracy, devices, dropouts, energy, summary."""
    app_common.results_header(run_id, splitfl_views.headline(report.metrics))
    st.markdown(splitfl_views.choice_text(report.summary, report.metrics))
    strategies, seed = show_accuracy(report, run_id, url)
    show_devices(report, run_id, seed)
    show_dropouts(report, run_id, strategies, seed)
    show_energy(report, strategies)
    show_summary(report, run_id)


page_skeleton.run_page(page_skeleton.DomainPage(
    domain=DOMAIN, icon=":material/call_split:", intro=INTRO,
    settings=settings_inputs, job_spec=job_spec, show=show_report,
))
