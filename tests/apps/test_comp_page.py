"""The CoMP page: an episode of heuristics simulated on a map, curves and summary; the study views; a recorded run."""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import numpy as np
import pandas as pd
import pytest

from decisions.telecom.comp import (
    DOMAIN,
    JOINT_TRAINING_TASKS,
    TRAINING_TASKS,
    UNSEEN_TASKS,
    CompReport,
    available_policies,
    joint_study,
    policy_actions,
    replay,
    shipped_study,
    trace_frames,
)
from decisions.telecom.comp.policies.heuristics import SERVING_SET_POLICIES
from tests.apps.conftest import APPS
from tests.apps.helpers import open_page, record_report

COMP_PAGE = "pages/6_CoMP_cell_selection.py"

if str(APPS) not in sys.path:
    sys.path.insert(0, str(APPS))  # the page imports its helpers by name, as Streamlit runs it
import comp_views  # noqa: E402
import page_skeleton  # noqa: E402

TASK = TRAINING_TASKS[0]


def _evaluation() -> pd.DataFrame:
    """A study evaluation table with the columns ``study.evaluate`` writes (two tasks, two policies)."""
    return pd.DataFrame({
        "task": ["a", "a", "b", "b"], "split": ["train", "train", "unseen", "unseen"],
        "policy": ["promptdt-large", "max_snr", "promptdt-large", "max_snr"],
        "qoe": [0.6, 0.5, 0.55, 0.5], "jain_qoe": 0.9, "normalised_qoe": [1.0, 0.8, 0.9, 0.7],
    })

def test_trace_replays_the_episode_and_maps_links() -> None:
    key = jax.random.PRNGKey(2)
    actions = policy_actions("top2", TASK, key)
    trace = replay(TASK, actions, key)
    assert trace.pos.shape == (100, TASK.n_users, 2) and trace.conn.shape == (100, TASK.n_users, TASK.n_cells)
    assert trace.conn.sum(axis=2).max() <= 2 and ((trace.qoe >= 0) & (trace.qoe <= 1)).all()
    from decisions.telecom.comp.policies.rollouts import rollout

    reference = rollout(TASK, SERVING_SET_POLICIES["top2"], key[None], record=True)  # policy_actions' program
    np.testing.assert_allclose(trace.reward, reference["reward"][0], atol=1e-6)  # the same episode
    cells, users, links = trace_frames(trace, 10)
    assert len(cells) == TASK.n_cells and len(users) == TASK.n_users
    assert len(links) == 2 * int(trace.conn[10].sum())
    assert available_policies(None, TASK) == [*SERVING_SET_POLICIES, "planner"]
    planned = replay(TASK, policy_actions("planner", TASK, key), key)
    assert planned.reward.sum() > trace.reward.sum()  # the planner beats top-2 on the same episode
    with pytest.raises(ValueError, match="policy"):
        policy_actions("expert", TASK, key)  # no study folder


def test_views_summaries_and_charts() -> None:
    key = jax.random.PRNGKey(1)
    traces = {name: replay(TASK, policy_actions(name, TASK, key), key) for name in ("max_snr", "random")}
    summary = comp_views.episode_summary(traces)
    assert list(summary["policy"]) == ["max-SNR", "random"]  # max-SNR beats random play
    assert summary["links per user"].iloc[0] == pytest.approx(1.0, abs=0.2)
    comp_views.curves(traces).to_dict()
    comp_views.network_map(traces["max_snr"], 5, (200.0, 200.0)).to_dict()
    evaluation = _evaluation()
    table = comp_views.study_summary(evaluation)
    assert table.iloc[0]["policy"] == "PromptDT large" and table.iloc[0]["normalised_qoe"] == 1.0
    comp_views.study_bars(evaluation).to_dict()
    assert comp_views.policy_label("multitask_ppo") == "multi-task PPO"
    assert comp_views.study_scales(evaluation) == ["normalised_qoe"]
    # a joint-study table: the own-expert score first, and the operators' rate figures
    joint = evaluation.assign(expert_normalised_qoe=[0.9, 1.0, 0.5, 0.8], mean_rate_mbps=10.0,
                              edge_rate_mbps=[1.0, 2.0, 3.0, 4.0], below_floor=0.1)
    assert comp_views.study_scales(joint) == ["expert_normalised_qoe", "normalised_qoe"]
    table = comp_views.study_summary(joint)
    assert list(table.policy) == ["max-SNR", "PromptDT large"] * 2  # sorted on the own-expert score
    assert table.edge_rate_mbps.tolist() == [2.0, 1.0, 4.0, 3.0]
    comp_views.study_bars(joint, "expert_normalised_qoe").to_dict()
    stages = pd.DataFrame({"task": ["a", "a", "a", "b"], "split": ["train", "train", "train", "unseen"],
                           "policy": ["random", "promptdt-small", "promptdt-small", "promptdt-small"],
                           "stage": [-1, 0, 1, 1], "qoe": [0.3, 0.4, 0.5, 0.45],
                           "expert_normalised_qoe": [0.0, 0.8, 0.9, 0.7]})
    dagger = comp_views.dagger_summary(stages)
    assert dagger[["split", "stage", "mean_score"]].values.tolist() == [["train", 0, 0.8], ["train", 1, 0.9],
                                                                        ["unseen", 1, 0.7]]
    comp_views.dagger_chart(stages).to_dict()


def test_page_simulates_an_episode(store_url: str, tmp_path: Path) -> None:
    at = open_page(COMP_PAGE, timeout=120)
    assert at.radio(key="study").value == "joint"  # the joint-transmission study first, with its shipped folder
    assert at.text_input(key="study_folder").value == str(joint_study())
    assert JOINT_TRAINING_TASKS[0].name in at.selectbox(key="task").options[0]
    assert any(s.value.startswith("DAgger") for s in at.subheader)  # the shipped dagger_ablation.csv
    at.radio(key="study").set_value("parity").run()
    assert at.text_input(key="study_folder").value == str(shipped_study())
    at.text_input(key="study_folder").set_value("").run()  # heuristics only
    at.selectbox(key="task").set_value(UNSEEN_TASKS[0].name).run()
    at.multiselect(key="policies").set_value(["max_snr", "top2"]).run()
    at.button(key="simulate").click().run()
    assert not at.exception, at.exception
    assert not at.error
    assert len(at.dataframe) >= 1 and at.slider(key="map_step").max == 99
    at.slider(key="map_step").set_value(40).run()
    assert not at.exception, at.exception
    at.text_input(key="study_folder").set_value(str(tmp_path / "missing")).run()
    assert "study folder" in at.error[0].value


def test_recorded_run_opens_from_query_param(store_url: str, tmp_path: Path) -> None:
    report = CompReport(evaluation=_evaluation(), folder=tmp_path / "study", metrics={"unseen_vs_expert": 0.9})
    run_id = record_report(store_url, report, tmp_path / "run", kind=DOMAIN.name)
    at = open_page(COMP_PAGE, run=run_id, timeout=120)
    assert not at.error, [e.value for e in at.error]
    assert any(c.value.startswith(f"Evaluation of run #{run_id}") for c in at.caption)
    summary = next(d.value for d in at.dataframe if "normalised_qoe" in d.value)  # the DAgger table follows it
    assert summary.iloc[0]["policy"] == "PromptDT large" and summary.iloc[0]["normalised_qoe"] == 1.0
    assert at.download_button(key="download_evaluation").proto.label == "Download evaluation (CSV)"


def test_a_page_gives_either_a_job_spec_or_an_action() -> None:
    """The button either records a run of the form's job or does the page's own action (CoMP's episode)."""
    page = {"domain": DOMAIN, "icon": ":material/cell_tower:", "intro": "", "settings": dict}
    with pytest.raises(TypeError, match="comp: give job_spec or action, exactly one of them"):
        page_skeleton.DomainPage(**page)
    with pytest.raises(TypeError, match="exactly one"):
        page_skeleton.DomainPage(**page, job_spec=lambda form, output_dir: {}, action=lambda form, url: None)
    assert page_skeleton.DomainPage(**page, action=lambda form, url: None).report_key == "comp_report"
