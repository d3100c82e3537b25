"""The building-energy page: a recorded run's report and explanation, the new-run form, the pure data and chart helpers.

One small building run is recorded once per module through ``execute_domain`` (baselines, scoring,
explanation, artifacts and the policy msgpack are real); training is replaced by an untrained
PPO policy so the module stays fast (training itself is covered by ``tests/energy/building``).
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from decisions.core.agents.common import ProgressFn, TrainResult
from decisions.core.agents.onpolicy import ActorCriticPolicy
from decisions.energy.building.agents import AgentName, AgentSettings, agent_config, agent_env
from decisions.energy.building.scenario import Scenario
from decisions.platform.record import execute_domain
from decisions.store import dispose_engines, get_run, list_runs, recorded_run
from decisions.store.artifacts import report_folder
from tests.apps.conftest import APPS
from tests.apps.helpers import open_page, submit

if str(APPS) not in sys.path:
    sys.path.insert(0, str(APPS))  # the page imports its helpers by name, as Streamlit runs it

import app_common  # noqa: E402
import building_charts as charts  # noqa: E402
import building_data as data  # noqa: E402
import building_views as views  # noqa: E402
from building_data import ControllerId  # noqa: E402

import decisions.energy.building as building  # noqa: E402

BUILDING_PAGE = "pages/2_Building_energy.py"


def _untrained_agent(
    name: AgentName,
    scenario: Scenario,
    settings: AgentSettings,
    *,
    key: jax.Array,
    progress: ProgressFn | None = None,
    checkpoint: object = None,
    overrides: object = None,
) -> TrainResult:
    """Stand-in for ``agents.train_agent``: freshly initialised PPO params, one per seed."""
    env, params = agent_env(scenario, name, "train")
    policy = ActorCriticPolicy.from_env(env, params, agent_config(name, settings, overrides))
    seeds = [policy.init(k) for k in jax.random.split(key, settings.seeds)]
    stacked = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *seeds)
    if progress is not None:
        progress("train", 1, 1)
    return TrainResult(policy, stacked, {"episode_return": np.zeros((settings.seeds, 2))}, 0.0, 0)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """``(store url, run id)`` of one tiny recorded building run (PPO, one seed, explained)."""
    from decisions.energy.building import spec as building_spec
    from decisions.energy.building import study as building_study

    folder = tmp_path_factory.mktemp("building")
    url = f"sqlite:///{folder / 'runs.db'}"
    spec = {
        "job": {"name": "tiny-building", "seed": 0, "output_dir": str(folder / "artifacts")},
        "scenario": {"buildings": [1], "relative_reward": True},
        "agents": {"names": ["ppo"], "seeds": 1, "on_policy_steps": 10_752},
        "evaluation": {"explain": True},
    }
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(building_study, "train_agent", _untrained_agent)
        run_id = execute_domain(building.DOMAIN, building_spec.prepare(spec), url=url)
    yield url, run_id
    dispose_engines()


@pytest.fixture
def building_store(recorded: tuple[str, int], monkeypatch: pytest.MonkeyPatch) -> tuple[str, int]:
    """Point the page at the store holding the recorded run."""
    monkeypatch.setenv("DECISIONS_DB_URL", recorded[0])
    monkeypatch.delenv("DECISIONS_APP_PASSWORD", raising=False)
    return recorded


def _page(run: int | str | None = None) -> AppTest:
    return open_page(BUILDING_PAGE, run=run, timeout=90)


def _markdown(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


# ----------------------------------------------------------------------------- the page


def test_recorded_run_shows_kpis_week_and_explanation(building_store: tuple[str, int]) -> None:
    url, run_id = building_store
    at = _page(run_id)
    assert not at.error and not at.warning, [e.value for e in (*at.error, *at.warning)]
    assert at.header[0].value == f"Run #{run_id}: tiny-building"
    assert at.selectbox(key=views.SELECT_KEY).value == run_id

    kpis = at.dataframe[0].value
    assert list(kpis["name"]) == ["no_battery", "rule_based", "perfect_foresight", "ppo"]
    assert kpis["seed"].isna().tolist() == [True, True, True, False] and kpis["seed"].iloc[3] == 0
    assert kpis["controller"].iloc[3] == "PPO seed 0"
    assert "saving_fraction_of_lp" in kpis and "cost_usd" in kpis
    agents = at.dataframe[1].value
    assert list(agents["agent"]) == ["PPO"] and agents["share of LP saving"][0].count("±") == 1
    assert {m.label for m in at.metric} >= {
        "LP saving on held-out months",
        "Fidelity: same decision (held-out states)",
    }

    assert at.selectbox(key=f"b_controller_{run_id}").value == ControllerId("ppo", 0)  # the explained seed
    assert at.selectbox(key=f"b_week_{run_id}").value == pd.Timestamp("2016-09-01")
    assert len(at.get("vega_lite_chart")) >= 6  # cost bars, site, battery, SoC, importance, sensitivity

    text = _markdown(at)
    assert "Why did PPO seed 0 do this on" in text
    assert "- Action:" in text and "- Rule the surrogate tree follows:" in text
    recorded_rules = Path({a.name: a.path for a in get_run(run_id, url=url).artifacts}["surrogate_rules"])
    assert at.code[0].value == recorded_rules.read_text().strip()
    assert at.get("image"), "the attribution chart of the 'why' hour"

    hour = next(s for s in at.selectbox if s.label == "Hour")
    hour.select(3).run()
    assert not at.exception
    assert " at 03:00?" in _markdown(at)


def test_last_partial_week_redraws_with_its_own_default_hour(building_store: tuple[str, int]) -> None:
    _, run_id = building_store
    at = _page(run_id)
    at.selectbox(key=f"b_week_{run_id}").set_value(pd.Timestamp("2016-12-29")).run()
    assert not at.exception and not at.error
    day = next(s for s in at.selectbox if s.label == "Day")
    assert day.value in {pd.Timestamp(f"2016-12-{d}") for d in (29, 30, 31)}
    assert f"on {day.value:%a %d %b} at" in _markdown(at)
    assert at.header[0].value.startswith(f"Run #{run_id}")


def test_bad_buildings_in_the_form_show_one_line_error_and_record_nothing(store_url: str) -> None:
    at = _page()
    assert any("No building run recorded yet" in i.value for i in at.info)
    at.text_input(key="b_buildings").input("18")
    at.button(key="b_run").click().run()
    assert not at.exception
    assert len(at.error) == 1
    message = at.error[0].value
    assert message.startswith("scenario.buildings:") and "18" in message and "\n" not in message
    assert list_runs(url=store_url) == []


def test_too_few_training_steps_name_their_field(store_url: str) -> None:
    at = _page()
    submit(at, {"b_on_policy_steps": 100}, button="b_run")
    assert [e.value.split(":")[0] for e in at.error] == ["agents.on_policy_steps"]


def test_large_budgets_point_to_the_cli(store_url: str) -> None:
    at = _page()
    assert any(views.CLI_COMMAND in c.value for c in at.caption)
    assert not at.warning
    at.number_input(key="b_on_policy_steps").set_value(5_000_000).run()
    assert views.CLI_COMMAND in at.warning[0].value


def test_form_runs_the_job_with_progress_and_opens_the_new_run(
    building_store: tuple[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, run_id = building_store
    seen = []

    def fake_execute(domain, job, *, url, progress):
        seen.append(job)
        progress("baselines", 1, 1)
        progress("PPO training", 200_000, 200_000)
        return run_id

    monkeypatch.setattr(app_common, "execute_domain", fake_execute)  # what the page runs its job with
    at = _page()
    at.multiselect(key="b_agents").set_value(["ppo"])
    at.button(key="b_run").click().run()
    assert not at.exception and not at.error
    (job,) = seen
    assert job.agents.names == ("ppo",) and job.agents.on_policy_steps == 200_000 and job.agents.seeds == 1
    assert job.evaluation.explain and job.scenario.buildings == (1,)
    assert at.status[0].label == f"Run #{run_id} finished"
    assert [bar.proto.text for bar in at.status[0].get("progress")] == [
        "baselines: 1/1",
        "PPO training: 200000/200000",
    ]
    assert at.header[0].value.startswith(f"Run #{run_id}")


def test_failing_job_shows_one_line_error(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(domain, job, *, url, progress):
        raise RuntimeError("solver\nexploded")

    monkeypatch.setattr(app_common, "execute_domain", boom)
    at = _page()
    at.button(key="b_run").click().run()
    assert not at.exception
    assert [e.value for e in at.error] == ["RuntimeError: solver exploded"]
    assert at.status[0].label == "Run failed"


def test_unknown_or_wrong_kind_run_from_query_param_shows_error(store_url: str) -> None:
    at = _page(999)
    assert at.error[0].value.startswith("run: cannot open run '999'")
    with recorded_run("gas_storage", "gas", {}, url=store_url) as gas:
        pass
    at = _page(gas.run_id)
    assert (
        at.error[0].value
        == f"run: cannot open run '{gas.run_id}': run: run {gas.run_id} is a gas_storage run, not building"
    )


def _hand_made_run(url: str, source: tuple[str, int], folder: Path) -> int:
    """A run whose tables copy the recorded run's, plus a DQN seed, with no policy files recorded."""
    record = get_run(source[1], url=source[0])
    report = building.BuildingReport.load(report_folder(record))
    kpis, hourly = report.kpis, report.hourly
    report.kpis = pd.concat([kpis, kpis[kpis["controller"] == "ppo"].assign(controller="dqn")], ignore_index=True)
    report.hourly = pd.concat([hourly, hourly[hourly["controller"] == "ppo"].assign(controller="dqn")],
                              ignore_index=True)
    agents = report.agents.reset_index()
    report.agents = pd.concat(
        [agents, agents.assign(agent="dqn", family="off-policy", saving_vs_lp_mean=0.5)]
    ).set_index("agent")
    with recorded_run("building", "hand-made", record.config, url=url) as run:
        for name, path in report.save(folder).items():  # a reloaded report has no policies to save
            run.add_artifact(name, path)
    return run.run_id


def test_missing_policy_file_and_dqn_seed_get_notes_not_tracebacks(
    store_url: str, recorded: tuple[str, int], tmp_path: Path
) -> None:
    run_id = _hand_made_run(store_url, recorded, tmp_path / "run")
    at = _page(run_id)
    assert not at.error
    assert at.selectbox(key=f"b_controller_{run_id}").value == ControllerId("ppo", 0)  # never DQN
    assert [w.value for w in at.warning] == [
        "Cannot re-simulate PPO seed 0: policy: the policy file of ppo_seed0 is not on disk (not recorded)"
    ]
    assert at.code, "the recorded rules are still shown"
    at.selectbox(key=f"b_controller_{run_id}").select(ControllerId("dqn", 0)).run()
    assert not at.exception and not at.error
    assert any("continuous-action agents" in i.value for i in at.info)


# ----------------------------------------------------------------------------- pure helpers


PPO0 = ControllerId("ppo", 0)
LP = ControllerId("perfect_foresight")


def _hourly(days: int = 10, controllers: tuple[ControllerId, ...] = (PPO0, LP)) -> pd.DataFrame:
    dates = np.repeat(pd.date_range("2016-09-01", periods=days, freq="D"), 24)
    hours = np.tile(np.arange(1, 25), days)
    frames = [
        pd.DataFrame(
            {"controller": c.controller, "seed": c.seed, "date": dates, "hour": hours, "battery": 0.0, "soc": 0.5}
        )
        for c in controllers
    ]
    hourly = pd.concat(frames, ignore_index=True)
    hourly["seed"] = hourly["seed"].astype("Int64")
    return data.with_time(hourly)


def test_time_is_the_start_of_each_citylearn_hour() -> None:
    hourly = _hourly(1)
    assert hourly["time"].iloc[0] == pd.Timestamp("2016-09-01 00:00")
    assert hourly["time"].iloc[23] == pd.Timestamp("2016-09-01 23:00")


def test_week_starts_cover_the_window_in_seven_day_steps() -> None:
    starts = data.week_starts(_hourly(10))
    assert starts == [pd.Timestamp("2016-09-01"), pd.Timestamp("2016-09-08")]
    assert data.week_starts(_hourly(7)) == [pd.Timestamp("2016-09-01")]
    assert data.week_starts(_hourly(0)) == []
    week = data.week_rows(_hourly(10), starts[1], [PPO0])
    assert len(week) == 3 * 24 and set(data.controller_ids(week)) == {PPO0}
    both = data.week_rows(_hourly(10, (PPO0, ControllerId("ppo", 1), LP)), starts[0], [ControllerId("ppo", 1), LP])
    assert set(data.controller_ids(both)) == {ControllerId("ppo", 1), LP} and len(both) == 2 * 7 * 24


def test_default_why_hour_prefers_the_largest_evening_discharge() -> None:
    week = _hourly(7, (PPO0,))
    at = {pd.Timestamp(t): i for i, t in enumerate(week["time"])}
    week.loc[at[pd.Timestamp("2016-09-02 03:00")], "battery"] = -5.0  # larger, but at night
    week.loc[at[pd.Timestamp("2016-09-03 18:00")], "battery"] = -1.0
    week.loc[at[pd.Timestamp("2016-09-04 19:00")], "battery"] = -2.0
    assert data.default_why_time(week) == pd.Timestamp("2016-09-04 19:00")
    week.loc[week["time"].dt.hour.between(16, 21), "battery"] = 0.0
    assert data.default_why_time(week) == pd.Timestamp("2016-09-02 03:00")  # no evening discharge
    week["battery"] = 0.0
    assert data.default_why_time(week) == pd.Timestamp("2016-09-01 18:00")  # no discharge at all
    assert data.default_why_time(week.iloc[:0]) is None


def test_hour_index_is_the_position_in_the_controllers_trajectory() -> None:
    hourly = _hourly(3)
    assert data.hour_index(hourly, LP, pd.Timestamp("2016-09-02 18:00")) == 24 + 18
    with pytest.raises(data.InputError, match=r"^hour: ppo_seed0 has no hour starting 2016-10-01 00:00"):
        data.hour_index(hourly, PPO0, pd.Timestamp("2016-10-01"))


def test_controllers_are_name_and_seed_pairs() -> None:
    kpis = pd.DataFrame({"controller": ["rule_based", "sac", "sac"], "seed": pd.array([None, 12, 3], dtype="Int64")})
    assert data.controller_ids(kpis) == [ControllerId("rule_based"), ControllerId("sac", 12), ControllerId("sac", 3)]
    assert data.rows_of(kpis, ControllerId("sac", 3)).tolist() == [False, False, True]
    assert data.rows_of(kpis, ControllerId("rule_based")).tolist() == [True, False, False]
    assert data.controller_label(ControllerId("a2c", 1)) == "A2C seed 1"
    assert data.controller_label(LP) == "perfect-foresight LP"
    assert PPO0.is_continuous and not ControllerId("dqn", 0).is_continuous
    assert not ControllerId("rule_based").is_agent and not ControllerId("rule_based").is_continuous
    assert PPO0.name == "ppo_seed0" == building.seed_name("ppo", 0) and LP.name == "perfect_foresight"


def test_runs_recorded_before_the_seed_column_still_name_their_agent_seeds() -> None:
    agents = pd.DataFrame({"seeds": [2]}, index=pd.Index(["ppo"], name="agent"))
    old = pd.DataFrame({"controller": ["no_battery", "ppo_seed0", "ppo_seed1"], "cost": [1.0, 0.8, 0.7]})
    assert data.controller_ids(data.with_seed(old, agents)) == [ControllerId("no_battery"), PPO0, ControllerId("ppo", 1)]


def test_explained_controller_is_the_best_seed_of_the_best_continuous_agent() -> None:
    kpis = pd.DataFrame(
        {
            "controller": ["perfect_foresight", "ppo", "ppo", "sac", "sac", "dqn"],
            "seed": pd.array([None, 0, 1, 0, 1, 0], dtype="Int64"),
            "saving_fraction_of_lp": [1.0, 0.6, 0.8, 0.7, 0.75, 0.99],
        }
    )
    agents = pd.DataFrame({"saving_vs_lp_mean": [0.7, 0.725, 0.99]}, index=["ppo", "sac", "dqn"])
    assert data.explained_controller(kpis, agents) == ControllerId("sac", 1)
    assert data.explained_controller(kpis, agents.loc[["dqn"]]) is None
    recorded = agents.assign(explained_seed=[0, -1, -1])
    assert data.explained_controller(kpis, recorded) == PPO0  # the job's record wins


def test_agent_and_family_tables_show_mean_and_std_over_seeds() -> None:
    agents = pd.DataFrame(
        {
            "family": ["on-policy", "off-policy", "on-policy"],
            "cost_mean": [0.7, 0.8, 0.75],
            "cost_std": [0.01, 0.02, 0.0],
            "saving_vs_lp_mean": [0.8, 0.6, 0.85],
            "saving_vs_lp_std": [0.05, 0.1, 0.0],
            "saving_vs_lp_best_seed": [0.86, 0.7, 0.85],
            "seeds": [3, 3, 1],
            "train_seconds": [10.0, 20.0, 5.0],
        },
        index=pd.Index(["ppo", "sac", "a2c"], name="agent"),
    )
    table = data.agent_view(agents)
    assert table.loc[0, "share of LP saving"] == "0.800 ± 0.050"
    assert table.loc[1, "cost / no battery"] == "0.800 ± 0.020"
    families = data.family_view(agents).set_index("family")
    assert families.loc["on-policy", "best agent"] == "A2C"
    assert families.loc["off-policy", "share of LP saving"] == "0.600 ± 0.100"


def test_form_values_make_a_valid_job_spec() -> None:
    form = {
        "name": "x",
        "seed": 1,
        "buildings": "1, 4",
        "tariff": "dynamic",
        "agents": ["ppo", "sac"],
        "seeds": 2,
        "on_policy_steps": 200_000,
        "off_policy_steps": 20_000,
        "explain": True,
        "include_mpc": False,
    }
    job = building.prepare(data.job_spec(form, "/tmp/out"))
    assert job.scenario.buildings == (1, 4) and job.scenario.tariff.kind == "dynamic"
    assert job.agents.off_policy_steps == 20_000 and job.output_dir == "/tmp/out"
    assert data.parse_buildings("district") == "district" and data.parse_buildings("3") == [3]
    assert not data.is_large(form) and data.is_large({**form, "seeds": 5})


def test_every_agent_choice_makes_a_spec_that_prepare_accepts() -> None:
    """The form sends only the settings the chosen agents use: prepare refuses the others."""
    form = {"name": "x", "seed": 1, "buildings": "1", "tariff": "dynamic", "seeds": 1, "on_policy_steps": 200_000,
            "off_policy_steps": 20_000, "explain": True, "include_mpc": False}
    for count in range(1, len(data.AGENTS) + 1):
        for agents in itertools.combinations(data.AGENTS, count):
            spec = data.job_spec({**form, "agents": list(agents)}, None)
            job = building.prepare(spec)
            assert job.agents.names == tuple(building.AgentName(a) for a in agents)
            assert spec["evaluation"]["explain"] == (agents != ("dqn",))


def test_charts_validate_against_the_vega_lite_schema() -> None:
    kpis = pd.DataFrame(
        {
            "controller": ["no_battery", "perfect_foresight", "ppo"],
            "seed": pd.array([None, None, 0], dtype="Int64"),
            "cost": [1.0, 0.6, 0.7],
            "saving_fraction_of_lp": [0.0, 1.0, 0.8],
        }
    )
    bars = charts.cost_bars(kpis).to_dict()
    labels = {row["label"]: row["kind"] for row in next(iter(bars["datasets"].values())) if "label" in row}
    assert labels == {"no battery": "baseline", "perfect-foresight LP": "baseline", "PPO seed 0": "agent"}
    week = _hourly(7).assign(load=1.0, pv=0.5, price=0.2)
    charts.site_chart(week[data.rows_of(week, PPO0)]).to_dict()
    battery = charts.battery_chart(week, PPO0, pd.Timestamp("2016-09-02 18:00")).to_dict()
    series = {row["series"] for rows in battery["datasets"].values() for row in rows if "series" in row}
    assert series == {"PPO seed 0", "perfect-foresight LP"}
    charts.soc_chart(week, PPO0).to_dict()
    importance = pd.DataFrame(
        {"group": ["calendar", "price now"], "importance": [0.2, 0.1], "permutation": [0.1, 0.3]}
    )
    assert charts.importance_chart(importance).to_dict()["encoding"]["yOffset"]["field"] == "measure"
    sensitivity = pd.DataFrame({"feature": ["price_6h"], "importance": [0.1], "mean_gradient": [-0.1]})
    charts.sensitivity_bars(sensitivity).to_dict()
