"""CoMP cell selection page: pick a network (task) and policies, watch one episode on a map, compare.

The operator picks a study (the joint-transmission networks, rates from the SINR with
interference, or the first study's mobile-env networks), a task of it (cells, users, scheduler),
the policies to compare and a seed; the page simulates one episode per policy on the same users
and movement (common random numbers) and shows the network map with the serving links at any
step, QoE and Jain's fairness over time, and a summary. Below, the study's evaluation (PromptDT
against the baselines over all training and unseen tasks, on each normalised scale the table has,
with raw QoE and the operators' rate figures) from the study folder's ``evaluation.csv``, or from a
recorded ``comp`` run opened with ``?run=<id>`` (its reloaded ``CompReport``), and DAgger's effect
from the folder's ``dagger_ablation.csv`` when there is one. The study folder defaults to the
chosen study's, shipped with the package. The page imports the domain's package API only.
"""

from __future__ import annotations

from pathlib import Path

import comp_views
import jax
import page_skeleton
import pandas as pd
import streamlit as st

from decisions.telecom.comp import (
    DOMAIN,
    JOINT_TRAINING_TASKS,
    JOINT_UNSEEN_TASKS,
    RATE_COLUMNS,
    TRAINING_TASKS,
    UNSEEN_TASKS,
    CompReport,
    available_policies,
    policy_actions,
    replay,
    task_by_name,
)
from decisions.telecom.comp.study.folder import evaluation_table

# What the page decides, under its title.
INTRO = (
    "Coordinated multipoint lets a user be served by several cells at once. Each step, a policy "
    "chooses every user's serving set (how many of its strongest cells serve it); more links "
    "raise a user's rate and take resources from the other users of those cells. One Prompt "
    "Decision Transformer serves every network configuration, including unseen ones."
)

TRACES_KEY = "comp_traces"
# The studies the page offers: label, training and unseen tasks (a comment: Streamlit would print a bare string).
STUDIES = {
    "joint": ("Joint transmission (SINR with interference)", JOINT_TRAINING_TASKS, JOINT_UNSEEN_TASKS),
    "parity": ("mobile-env networks (SNR, the first study)", TRAINING_TASKS, UNSEEN_TASKS),
}
UNSEEN_NAMES = {t.name for t in (*UNSEEN_TASKS, *JOINT_UNSEEN_TASKS)}
DEFAULT_POLICIES = ("max_snr", "planner", "expert", "multitask_ppo", "promptdt-large", "promptdt-medium")


def task_label(name: str) -> str:
    """Task name with a marker for the held-out (unseen) tasks."""
    task = task_by_name(name)
    kind = "unseen" if name in UNSEEN_NAMES else "training"
    return f"{task.n_cells} cells, {task.n_users} users, {task.scheduler.replace('_', '-')} ({kind}: {name})"


def _default_folder(study: str) -> str:
    shipped = comp_views.shipped_folder(joint=study == "joint")
    return str(shipped) if shipped else ""


def _study_changed() -> None:
    """A new study: its shipped folder, its first task, and no episode of the old one's network."""
    st.session_state["study_folder"] = _default_folder(st.session_state["study"])
    st.session_state.pop("task", None)
    st.session_state.pop(TRACES_KEY, None)


def choose_study() -> str:
    """The study the operator chose (a key of ``STUDIES``)."""
    return st.radio("Study", list(STUDIES), format_func=lambda k: STUDIES[k][0], key="study", horizontal=True,
                    on_change=_study_changed)  # fmt: skip


def study_folder(study: str) -> Path | None:
    """The study folder the operator chose (default: the study's shipped one); None when it does not exist."""
    if "study_folder" not in st.session_state:
        st.session_state["study_folder"] = _default_folder(study)
    typed = st.text_input(
        "Study folder", key="study_folder",
        help="A folder written by a 'comp' job (experts, demos, models, evaluation.csv). "
             "Empty: heuristics only.",
    )
    if not typed:
        return None
    folder = Path(typed)
    if not folder.is_dir():
        st.error(f"study folder: no folder at {folder}")
        return None
    return folder


def simulate(task_name: str, policies: list[str], seed: int, folder: Path | None) -> None:
    """One episode per policy on common random numbers, with a progress bar; keeps the traces."""
    task = task_by_name(task_name)
    key = jax.random.PRNGKey(int(seed))
    bar = st.progress(0.0, text="Simulating…")
    traces = {}
    for i, name in enumerate(policies):
        bar.progress(i / len(policies), text=f"Simulating {comp_views.policy_label(name)}…")
        traces[name] = replay(task, policy_actions(name, task, key, folder), key)
    bar.progress(1.0, text="Done")
    st.session_state[TRACES_KEY] = (task_name, traces)


def show_episode(task_name: str, traces: dict) -> None:
    """Summary table, QoE and fairness curves, and the network map at a chosen step."""
    task = task_by_name(task_name)
    st.subheader("One episode, every policy on the same users and movement")
    summary = comp_views.episode_summary(traces)
    st.dataframe(summary, hide_index=True, width="stretch")
    st.altair_chart(comp_views.curves(traces), width="stretch")
    st.subheader("Network map")
    left, right = st.columns([1, 3])
    name = left.selectbox("Policy", list(traces), format_func=comp_views.policy_label, key="map_policy")
    steps = len(traces[name].qoe)
    step = left.slider("Step", 0, steps - 1, 0, key="map_step")
    trace = traces[name]
    left.metric("Mean QoE at this step", f"{trace.qoe[step]:.3f}")
    left.metric("Jain's index", f"{trace.jain[step]:.3f}")
    left.caption("Squares: cells; circles: users coloured by QoE; lines: serving links (CoMP: several per user).")
    size = tuple(float(v) for v in task.params().size)
    right.altair_chart(comp_views.network_map(trace, step, size), width="stretch")


def show_study(folder: Path | None, recorded: tuple[int, CompReport] | None = None) -> None:
    """PromptDT against the baselines over all tasks: a recorded run's evaluation, else the folder's ``evaluation.csv``.

    Args:
        folder: the study folder chosen on the page (None: none).
        recorded: ``(run id, report)`` of a run opened with ``?run=<id>``, if any.
    """
    st.subheader("PromptDT against the baselines (study evaluation)")
    if recorded is not None and recorded[1].evaluation is not None:
        run_id, report = recorded
        evaluation = report.evaluation
        st.caption(f"Evaluation of run #{run_id} (study folder {report.folder}).")
        file_name = f"run-{run_id}-evaluation.csv"
    else:
        if recorded is not None:
            st.info(f"Run #{recorded[0]} has no evaluation (its stages did not include evaluate).")
        path = None if folder is None else evaluation_table(folder)
        if path is None or not path.exists():
            st.info(f"No evaluation.csv in the study folder: run a '{DOMAIN.name}' job with the evaluate stage.")
            return
        evaluation = pd.read_csv(path)
        file_name = "comp-evaluation.csv"
    scales = comp_views.study_scales(evaluation)
    scale = st.radio("Score", scales, format_func=comp_views.SCALES.get, key="study_scale", horizontal=True)
    st.caption("Mean over tasks of the chosen score: 0 is random play, 1 the network's own per-task PPO expert, "
               "or the best of that expert and the heuristics. Unseen tasks: PromptDT reads a prompt from a few "
               "demonstrations of the task, with no gradient step.")
    st.altair_chart(comp_views.study_bars(evaluation, scale), width="stretch")
    if any(c in evaluation for c in RATE_COLUMNS):
        st.caption("Beside the QoE, the operators' figures: mean user rate and cell-edge rate (each network's 5th "
                   "percentile of the users' mean rates), Mbit/s, and the share of user-steps below 1 Mbit/s.")
    st.dataframe(comp_views.study_summary(evaluation), hide_index=True, width="stretch")
    st.download_button("Download evaluation (CSV)", evaluation.to_csv(index=False).encode(),
                       file_name=file_name, mime="text/csv", key="download_evaluation")


def show_dagger(folder: Path | None) -> None:
    """Each PromptDT before and after its DAgger rounds, from the folder's ``dagger_ablation.csv`` (if any)."""
    path = None if folder is None else folder / "dagger_ablation.csv"
    if path is None or not path.exists():
        return
    table = pd.read_csv(path)
    st.subheader("DAgger: the planner labels each model's own episodes")
    st.caption("Each PromptDT before its DAgger rounds and after each, scored 0 random, 1 the network's own expert "
               "(solid: training networks; dashed: unseen).")
    st.altair_chart(comp_views.dagger_chart(table), width="stretch")
    st.dataframe(comp_views.dagger_summary(table), hide_index=True, width="stretch")


def form_inputs() -> dict:
    """The study, its folder, the network (task), the policies to compare and the episode seed."""
    study = choose_study()
    folder = study_folder(study)
    _, training, unseen = STUDIES[study]
    task_name = st.selectbox("Network (task)", [t.name for t in (*training, *unseen)], format_func=task_label,
                             key="task")
    options = available_policies(folder, task_by_name(task_name))
    chosen = st.multiselect("Policies", options, default=[p for p in DEFAULT_POLICIES if p in options] or options[:2],
                            format_func=comp_views.policy_label, key="policies")
    seed = st.number_input("Episode seed", min_value=0, value=0, key="seed")
    return {"folder": folder, "task": task_name, "policies": chosen, "seed": int(seed)}


def simulate_chosen(form: dict, url: str) -> None:
    """The button's action: simulate the chosen policies' episode; no policy chosen is one error line."""
    del url
    if form["policies"]:
        simulate(form["task"], form["policies"], form["seed"], form["folder"])
    else:
        st.error("policies: choose at least one policy")


def show_sections(form: dict, url: str) -> None:
    """The simulated episode, the study's evaluation (of the run opened with ``?run=<id>`` if any), DAgger."""
    del url
    if TRACES_KEY in st.session_state:
        shown_task, traces = st.session_state[TRACES_KEY]
        show_episode(shown_task, traces)
    kept = PAGE.kept_report()
    show_study(form["folder"], None if kept is None else (kept[1], kept[0]))
    show_dagger(form["folder"])


PAGE = page_skeleton.DomainPage(
    domain=DOMAIN, icon=":material/cell_tower:", intro=INTRO,
    settings=form_inputs, button="Simulate episode", button_key="simulate", action=simulate_chosen,
    after=show_sections,
)
page_skeleton.run_page(PAGE)
