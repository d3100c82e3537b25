"""The Split learning page: the form and the spec it sends, a recorded run opened with ``?run=<id>``
and every section drawn from its tables read back, the views on small hand-made tables."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from decisions.store import list_runs
from decisions.telecom.splitfl import DOMAIN, SplitFLReport
from tests.apps.conftest import APPS
from tests.apps.helpers import open_form, open_page, open_report, record_report, run_from_form, submit

SPLITFL_PAGE = DOMAIN.page

if str(APPS) not in sys.path:
    sys.path.insert(0, str(APPS))  # the page imports its helpers by name, as Streamlit runs it
import splitfl_device_views  # noqa: E402
import splitfl_views  # noqa: E402

INF = math.inf
TIERS = ("weak", "medium", "strong")
CLIENT_TIERS = ("weak", "weak", "medium", "strong")
# strategy -> (time to target, final accuracy, round time): fixed_3 is the fastest fixed split to the target,
# fixed_2 never reaches it, fixed_13 is the largest split (FedAvg; "fixed_3" > "fixed_13" as text).
STRATEGIES = {
    "fixed_2": (INF, 0.80, 4.0), "fixed_3": (20.0, 0.78, 2.0), "fixed_13": (30.0, 0.79, 3.0),
    "random": (INF, 0.70, 2.5), "greedy": (25.0, 0.79, 2.2), "fastest": (16.5, 0.80, 1.55),
    "dqn_round": (18.0, 0.80, 1.8),
    "dqn_client": (15.0, 0.82, 1.5), "dqn_client_m5": (16.0, 0.81, 1.6), "dqn_client_decay0.1": (17.0, 0.81, 1.7),
}
ROUNDS = 3
METRICS = {"time_to_target_ratio_vs_best_fixed": 0.75, "final_test_acc_vs_best_fixed": 1.05,
           "dropout_rate_agent": 1 / 12, "split_equivalence_max_err": 0.0, "centralised_test_acc": 0.9}


def _summary() -> pd.DataFrame:
    rows = []
    for name, (time, acc, round_s) in STRATEGIES.items():
        rows.append({
            "strategy": name, "final_test_acc": acc, "best_test_acc": acc + 0.01, "time_to_target_s": time,
            "total_time_s": ROUNDS * round_s, "mean_round_s": round_s, "dropout_rate": 0.5 if name == "fixed_13" else 0.0,
            "straggler_rate": 0.0, "refused_rate": 0.5 if name == "fixed_13" else 0.0, "battery_deaths": 0.0,
            "offline_rate": 0.0, "deadline_rounds": 0.0, "mb_per_round": 2.0, "mean_split": 3.0,
            "energy_j_per_round_weak": 1.0, "energy_j_per_round_medium": 2.0 + round_s,
            "energy_j_per_round_strong": 4.0, "final_test_acc_std": 0.01,
            "time_to_target_s_std": np.nan if time == INF else 1.0,
        })
    return pd.DataFrame(rows)


def _rounds() -> pd.DataFrame:
    """Two seeds, three rounds: accuracy 0.5 + 0.1 round + 0.02 seed, round time (1 + seed) x the strategy's."""
    rows = []
    for seed in (0, 1):
        for name, (_, _, round_s) in STRATEGIES.items():
            for r in range(1, ROUNDS + 1):
                step = round_s * (1 + seed)
                row = {"seed": seed, "strategy": name, "round": r, "test_acc": 0.5 + 0.1 * r + 0.02 * seed,
                       "val_loss": 1.0 / r, "round_time_s": step, "wall_clock_s": step * r,
                       "participants": 4 - seed, "dropouts": seed, "reward": -0.1}
                for k, tier in enumerate(TIERS):
                    row |= {f"split_{tier}": 1.0 + k + r, f"battery_{tier}": 1.0 - 0.1 * r, f"cpu_{tier}": 0.5,
                            f"energy_j_{tier}": 1.0 + k}
                rows.append(row)
    return pd.DataFrame(rows)


def _clients() -> pd.DataFrame:
    """The first seed's clients: fixed_13 refused on its weak clients, dqn_client timed out once."""
    rows = []
    for name in STRATEGIES:
        for r in range(1, ROUNDS + 1):
            for client, tier in enumerate(CLIENT_TIERS):
                fate = "trained"
                if name == "fixed_13" and tier == "weak":
                    fate = "refused"
                elif name == "dqn_client" and (r, client) == (1, 0):
                    fate = "timed_out"
                rows.append({"strategy": name, "round": r, "client": client, "tier": tier, "split": 1 + client,
                             "fate": fate, "battery": 0.9, "cpu": 0.5, "energy_j": 1.0})
    return pd.DataFrame(rows)


def _hand_made_report() -> SplitFLReport:
    """A small report with the real tables' columns, written by hand (no JAX run needed)."""
    summary = _summary()
    runs = summary.drop(columns=["final_test_acc_std", "time_to_target_s_std"]).assign(seed=0)
    return SplitFLReport(summary=summary, runs=runs[["seed", *runs.columns[:-1]]], rounds=_rounds(),
                         clients=_clients(), metrics=dict(METRICS))


@pytest.fixture
def run_id(store_url: str, tmp_path: Path) -> int:
    """A recorded splitfl run of the hand-made report (its tables written and read back as CSV)."""
    return record_report(store_url, _hand_made_report(), tmp_path / "run", kind=DOMAIN.name,
                         config={"training": {"target_share": 0.9}})


def test_views_best_fixed_split_fedavg_and_the_default_strategies() -> None:
    summary = _summary()
    assert splitfl_views.best_fixed(summary) == "fixed_3"  # shortest time to the target, inf never wins
    assert splitfl_views.fedavg(list(summary["strategy"])) == "fixed_13"  # the largest split, not the last text
    assert splitfl_views.default_strategies(summary) == [
        "dqn_client", "dqn_round", "greedy", "fastest", "fixed_3", "fixed_13"]

    never = summary.assign(time_to_target_s=INF)  # no fixed split reaches the target: the most accurate one
    assert splitfl_views.best_fixed(never) == "fixed_2"
    missing = summary.assign(time_to_target_s=summary["time_to_target_s"].where(summary["strategy"] != "fixed_3"))
    assert splitfl_views.best_fixed(missing) == "fixed_13"  # NaN reads as never
    fedavg_best = summary.assign(time_to_target_s=[INF, 40.0, 10.0, *[20.0] * 7])
    assert splitfl_views.default_strategies(fedavg_best) == ["dqn_client", "dqn_round", "greedy", "fastest", "fixed_13"]
    no_fixed = summary[~summary["strategy"].str.startswith("fixed_")]
    assert splitfl_views.best_fixed(no_fixed) is None and splitfl_views.fedavg(list(no_fixed["strategy"])) is None
    assert splitfl_views.default_strategies(no_fixed) == ["dqn_client", "dqn_round", "greedy", "fastest"]

    assert splitfl_views.labels(summary) == {
        "fixed_2": "split 2", "fixed_3": "split 3", "fixed_13": "FedAvg (split 13)", "random": "random split",
        "greedy": "greedy rule", "fastest": "fastest split per client", "dqn_round": "DQN per round",
        "dqn_client": "DQN per client",
        "dqn_client_m5": "DQN per client, committee of 5", "dqn_client_decay0.1": "DQN per client, decay 0.1",
    }
    assert len(set(splitfl_views.colours(summary).values())) == len(STRATEGIES)


def test_views_curves_and_accuracy_charts() -> None:
    rounds = _rounds()
    chosen = ["dqn_client", "fixed_3", "fixed_13"]
    mean = splitfl_views.curves(rounds, chosen)
    assert list(dict.fromkeys(mean["strategy"])) == chosen and len(mean) == 3 * ROUNDS
    first = mean.iloc[0]
    assert first["test_acc"] == pytest.approx(0.61)  # mean of seeds 0 and 1 at round 1
    assert first["wall_clock_s"] == pytest.approx((1.5 + 3.0) / 2) and first["dropouts"] == pytest.approx(0.5)
    assert list(mean["kind"].unique()) == ["agent", "baseline"]
    assert set(mean["label"]) == {"DQN per client", "split 3", "FedAvg (split 13)"}
    seed1 = splitfl_views.curves(rounds, chosen, seed=1)
    assert seed1["wall_clock_s"].iloc[2] == pytest.approx(1.5 * 2 * 3) and (seed1["dropouts"] == 1).all()
    assert splitfl_views.curves(rounds, ["absent"]).empty

    palette = splitfl_views.colours(_summary())
    by_time = splitfl_views.accuracy_chart(mean, x="wall_clock_s", log_x=True, palette=palette, target=0.81).to_dict()
    lines, rule = by_time["layer"]
    assert lines["encoding"]["x"]["field"] == "wall_clock_s" and lines["encoding"]["x"]["scale"]["type"] == "log"
    assert lines["encoding"]["color"]["scale"]["domain"] == ["DQN per client", "split 3", "FedAvg (split 13)"]
    assert lines["encoding"]["color"]["scale"]["range"] == [palette[s] for s in lines["encoding"]["color"]["sort"]]
    assert by_time["datasets"][rule["data"]["name"]] == [{"target": 0.81}]
    by_round = splitfl_views.accuracy_chart(mean).to_dict()
    assert len(by_round["layer"]) == 1 and by_round["layer"][0]["encoding"]["x"]["field"] == "round"
    data = by_round["layer"][0].get("data") or by_round["data"]  # a single layer's data is the chart's
    series = {row["strategy"] for row in by_round["datasets"][data["name"]]}
    assert series == set(chosen)  # one line per strategy
    with pytest.raises(ValueError, match="x must be"):
        splitfl_views.accuracy_chart(mean, x="test_acc")


def test_views_devices_dropouts_fates_and_energy() -> None:
    rounds, clients, summary = _rounds(), _clients(), _summary()
    tier_rows = splitfl_device_views.device_by_tier(rounds, "dqn_client")
    assert len(tier_rows) == ROUNDS * len(TIERS) and list(tier_rows["tier"][:3]) == list(TIERS)
    strong = tier_rows[tier_rows["tier"] == "strong"]
    assert list(strong["split"]) == [4.0, 5.0, 6.0] and list(strong["battery"]) == pytest.approx([0.9, 0.8, 0.7])
    panels = splitfl_device_views.device_chart(tier_rows).to_dict()["vconcat"]
    assert [p["encoding"]["y"]["field"] for p in panels] == ["split", "battery", "cpu"]

    client_rows = splitfl_device_views.device_by_client(clients, "dqn_client")
    assert len(client_rows) == ROUNDS * len(CLIENT_TIERS) and client_rows["device"].iloc[0] == "weak #0"
    split_panel = splitfl_device_views.device_chart(client_rows, per_client=True).to_dict()["vconcat"][0]
    assert split_panel["layer"][1]["encoding"]["shape"]["field"] == "fate"
    assert splitfl_device_views.device_by_client(pd.DataFrame(), "dqn_client").empty

    counts = splitfl_device_views.fate_counts(clients, ["dqn_client", "fixed_13"])
    assert len(counts) == 2 * len(splitfl_device_views.FATES)  # zero counts kept
    fixed = counts[counts["strategy"] == "fixed_13"].set_index("fate")
    assert fixed.loc["refused", "count"] == 6 and fixed.loc["trained", "share"] == pytest.approx(0.5)
    assert counts.groupby("strategy")["share"].sum().tolist() == pytest.approx([1.0, 1.0])
    assert counts[counts["strategy"] == "dqn_client"].set_index("fate").loc["timed_out", "count"] == 1
    fates = splitfl_device_views.fate_chart(counts).to_dict()
    assert fates["encoding"]["x"]["field"] == "share"
    assert fates["height"] == {"step": 30}  # a band per strategy: the legend below never squeezes the bars flat
    assert splitfl_device_views.dropout_chart(splitfl_views.curves(rounds, ["greedy"])).to_dict()["encoding"]["y"][
        "field"] == "dropouts"

    energy = splitfl_device_views.energy_frame(summary, ["dqn_client", "fixed_13", "absent"])
    assert len(energy) == 2 * len(TIERS) and list(energy["tier"][:3]) == list(TIERS)
    assert energy.set_index(["strategy", "tier"]).loc[("fixed_13", "medium"), "energy_j"] == pytest.approx(5.0)
    spec = splitfl_device_views.energy_chart(energy).to_dict()
    assert spec["encoding"]["xOffset"]["field"] == "tier" and spec["encoding"]["y"]["field"] == "energy_j"


def test_views_summary_headline_and_choice_handle_the_never_reached_target() -> None:
    summary = _summary()
    view = splitfl_views.summary_view(summary).set_index("strategy")
    assert not view.loc["fixed_2", "reached_target"] and math.isnan(view.loc["fixed_2", "time_to_target_s"])
    assert view.loc["fixed_3", "time_to_target_s"] == 20.0 and view.loc["fixed_3", "reached_target"]
    assert np.isfinite(view["time_to_target_s"].dropna()).all()  # no inf left for the table
    assert view.loc["fixed_3", "role"] == "best fixed split" and view.loc["fixed_13", "role"] == "FedAvg"
    assert view.loc["dqn_client", "role"] == "agent" and view.loc["dqn_client_m5", "role"] == "agent ablation"
    assert list(view.columns[-3:]) == [f"energy_j_per_round_{t}" for t in TIERS]

    assert [v for _, v, _ in splitfl_views.headline(METRICS)] == ["0.75×", "1.050×", "8.3%", "0.0e+00", "90.0%"]
    no_time = {k: v for k, v in METRICS.items() if k != "time_to_target_ratio_vs_best_fixed"}
    assert splitfl_views.headline(no_time | {"centralised_test_acc": INF})[0][1] == "n/a"
    assert splitfl_views.headline(no_time)[4][1] == "90.0%"
    text = splitfl_views.choice_text(summary, METRICS)
    assert "**split 3** (reaches the target in 20.0 s)" in text and "FedAvg is **FedAvg (split 13)**" in text
    never = splitfl_views.choice_text(summary.assign(time_to_target_s=INF), no_time)
    assert "no fixed split reaches the target" in never and "No time ratio" in never
    assert splitfl_views.target_accuracy(METRICS, {"training": {"target_share": 0.9}}) == pytest.approx(0.81)
    assert splitfl_views.target_accuracy({}) is None


def test_page_renders_its_form_and_sends_a_spec_prepare_accepts(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    at, prepared = open_form(DOMAIN, monkeypatch)
    assert at.selectbox(key="dataset").value == "digits" and at.number_input(key="rounds").value == 20
    at.button(key="run").click().run()
    at.selectbox(key="dataset").set_value("fashion")
    submit(at, {"rounds": 7, "seeds": 3, "committee": 5})
    assert [e.value for e in at.error] == ["test: prepared"]
    first, second = prepared
    assert (first.data.dataset.value, first.arch.value, first.training.seeds) == ("digits", "cnn", [0])
    assert (second.data.dataset.value, second.arch.value) == ("fashion", "mobilenet")
    assert second.training.rounds == 7 and second.training.seeds == [0, 1, 2] and second.agent.committee == 5
    assert second.agent.env_steps == 2000 and second.study.committees == [] and second.study.decays == []
    assert list_runs(url=store_url) == []


def test_recorded_run_opens_with_every_section(store_url: str, run_id: int) -> None:
    at = open_report(SPLITFL_PAGE, run_id)
    assert [m.value for m in at.metric] == ["0.75×", "1.050×", "8.3%", "0.0e+00", "90.0%"]
    subheaders = [s.value for s in at.subheader]
    for section in ("Accuracy per round and against the wall clock", "Chosen split, battery and CPU", "Dropouts",
                    "Energy per tier", "Summary"):
        assert section in subheaders, subheaders
    assert any("Best fixed split in hindsight: **split 3**" in m.value for m in at.markdown)
    assert at.multiselect(key=f"strategies_{run_id}").value == [
        "dqn_client", "dqn_round", "greedy", "fastest", "fixed_3", "fixed_13"]
    assert at.selectbox(key=f"device_strategy_{run_id}").value == "dqn_client"
    assert len(at.get("vega_lite_chart")) == 6  # accuracy x2, devices, dropouts, fates, energy
    summary = at.dataframe[0].value
    assert list(summary["strategy"]) == list(STRATEGIES)
    assert summary.set_index("strategy").loc["fixed_2", "reached_target"] is np.False_
    assert {b.key for b in at.download_button} == {
        "download_clients", "download_summary", "download_runs", "download_rounds"}

    at.selectbox(key=f"curve_seed_{run_id}").set_value(1)
    at.radio(key=f"device_view_{run_id}").set_value("client")
    at.multiselect(key=f"strategies_{run_id}").set_value(["random"]).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert len(at.get("vega_lite_chart")) == 6
    at.multiselect(key=f"strategies_{run_id}").set_value([]).run()
    assert not at.exception and "Choose at least one strategy to draw." in [i.value for i in at.info]
    assert len(at.get("vega_lite_chart")) == 1  # the devices of the chosen strategy only


@pytest.mark.slow
def test_tiny_run_from_the_form_is_recorded_and_shown(store_url: str) -> None:
    """A real run (two rounds, one seed, committees of one) from the form, drawn from its recorded tables."""
    at = open_page(SPLITFL_PAGE, timeout=600)
    run = run_from_form(at, store_url, name="tiny-splitfl", kind=DOMAIN.name,
                        numbers={"rounds": 2, "seeds": 1, "committee": 1})
    summary = at.dataframe[0].value
    assert {"dqn_client", "dqn_round", "greedy", "random", "fixed_9"} <= set(summary["strategy"])
    assert at.multiselect(key=f"strategies_{run.id}").value[:4] == ["dqn_client", "dqn_round", "greedy", "fastest"]
    assert len(at.get("vega_lite_chart")) == 6 and len(at.metric) == 5
