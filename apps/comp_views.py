"""Tables and Altair charts of the CoMP page: pure functions of traces and study tables, no Streamlit calls.

- ``network_map``: cells, users coloured by QoE and their serving links at one step;
- ``curves``: QoE and Jain's fairness over an episode, one line per policy;
- ``episode_summary``: mean QoE, fairness, return and links per user of each traced policy;
- ``study_bars`` / ``study_summary``: PromptDT against the baselines from a study's
  ``evaluation.csv`` (a score per policy on one of ``SCALES``, training tasks beside unseen ones,
  with the raw QoE and, where the study measured them, the operators' rate figures, the package's ``RATE_COLUMNS``);
- ``dagger_chart`` / ``dagger_summary``: each PromptDT before and after its DAgger rounds, from a
  study's ``dagger_ablation.csv``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd

from decisions.telecom.comp import RATE_COLUMNS, Trace, trace_frames

POLICY_LABELS = {
    "max_snr": "max-SNR",
    "top2": "top-2 cells",
    "random": "random",
    "expert": "per-task PPO expert",
    "multitask_ppo": "multi-task PPO",
    "dt": "DT (no prompt)",
    "planner": "greedy planner (reads the state)",
}


def policy_label(name: str) -> str:
    """Readable policy name (``"promptdt-large"`` -> ``"PromptDT large"``)."""
    if name.startswith("promptdt-"):
        return "PromptDT " + name.split("-", 1)[1]
    return POLICY_LABELS.get(name, name)


SCALES = {
    "expert_normalised_qoe": "score (0 random, 1 the network's own expert)",
    "normalised_qoe": "normalised QoE (0 random, 1 best of expert and heuristics)",
}
"""The evaluation's normalised scores, by column, with their axis titles."""

def shipped_folder(joint: bool = False) -> Path | None:
    """The shipped study folder (trained experts, models, demos; ``decisions.kit.shipped``), if present: the
    first study's, or with ``joint`` the joint-transmission study's."""
    from decisions.telecom.comp import joint_study, shipped_study

    try:
        folder = joint_study() if joint else shipped_study()
    except FileNotFoundError:
        return None
    return folder if folder.is_dir() else None


def study_scales(evaluation: pd.DataFrame) -> list[str]:
    """The ``SCALES`` an evaluation table has, the own-expert score first."""
    return [c for c in SCALES if c in evaluation]


def network_map(trace: Trace, step: int, size: tuple[float, float]) -> alt.LayerChart:
    """Cells (black squares), users (circles coloured by QoE) and serving links at ``step``."""
    cells, users, links = trace_frames(trace, step)
    x = alt.X("x:Q", scale=alt.Scale(domain=[0, size[0]]), title="x (m)")
    y = alt.Y("y:Q", scale=alt.Scale(domain=[0, size[1]]), title="y (m)")
    link_layer = alt.Chart(links).mark_line(color="#4c78a8", opacity=0.6).encode(x=x, y=y, detail="link:N")
    cell_layer = alt.Chart(cells).mark_square(size=160, color="black").encode(
        x=x, y=y, tooltip=["cell:Q", "x:Q", "y:Q"]
    )
    user_layer = alt.Chart(users).mark_circle(size=90, stroke="black", strokeWidth=0.5).encode(
        x=x, y=y,
        color=alt.Color("qoe:Q", scale=alt.Scale(domain=[0, 1], scheme="redyellowgreen"), title="QoE"),
        tooltip=["user:Q", alt.Tooltip("qoe:Q", format=".2f"), "links:Q"],
    )
    return (link_layer + cell_layer + user_layer).properties(height=420)


def curves(traces: Mapping[str, Trace]) -> alt.Chart:
    """Mean QoE and Jain's index over time, one line per policy (two facets)."""
    frames = []
    for name, trace in traces.items():
        steps = np.arange(len(trace.qoe))
        frames.append(pd.DataFrame({"step": steps, "policy": policy_label(name), "measure": "mean QoE",
                                    "value": trace.qoe}))
        frames.append(pd.DataFrame({"step": steps, "policy": policy_label(name), "measure": "Jain's index (QoE)",
                                    "value": trace.jain}))
    data = pd.concat(frames, ignore_index=True)
    return alt.Chart(data).mark_line().encode(
        x=alt.X("step:Q", title="step"),
        y=alt.Y("value:Q", title=None),
        color=alt.Color("policy:N", title="policy"),
        tooltip=["policy:N", "step:Q", alt.Tooltip("value:Q", format=".3f")],
    ).properties(height=220).facet(row=alt.Row("measure:N", title=None)).resolve_scale(y="independent")


def episode_summary(traces: Mapping[str, Trace]) -> pd.DataFrame:
    """One row per policy: mean QoE, mean Jain's index, return and mean links per user."""
    rows = [
        {
            "policy": policy_label(name),
            "mean QoE": float(trace.qoe.mean()),
            "Jain's index": float(trace.jain.mean()),
            "return": float(trace.reward.sum()),
            "links per user": float(trace.conn.sum(axis=2).mean()),
        }
        for name, trace in traces.items()
    ]
    return pd.DataFrame(rows).sort_values("mean QoE", ascending=False, ignore_index=True)


def study_summary(evaluation: pd.DataFrame) -> pd.DataFrame:
    """Mean score(s), QoE, Jain's index and (where measured) rate figures per policy and split (training /
    unseen tasks), best first on the table's first scale."""
    columns = [c for c in (*study_scales(evaluation), "qoe", "jain_qoe", *RATE_COLUMNS) if c in evaluation]
    table = evaluation.groupby(["policy", "split"], as_index=False)[columns].mean()
    table["policy"] = table["policy"].map(policy_label)
    return table.sort_values(["split", columns[0]], ascending=[True, False], ignore_index=True)


def study_bars(evaluation: pd.DataFrame, scale: str = "normalised_qoe") -> alt.Chart:
    """Mean ``scale`` score per policy (bars), training and unseen tasks side by side."""
    table = study_summary(evaluation)
    return alt.Chart(table).mark_bar().encode(
        y=alt.Y("policy:N", sort="-x", title=None),
        x=alt.X(f"{scale}:Q", title=SCALES[scale]),
        color=alt.Color("split:N", title="tasks"),
        yOffset="split:N",
        tooltip=["policy:N", "split:N", alt.Tooltip(f"{scale}:Q", format=".3f"),
                 alt.Tooltip("qoe:Q", format=".3f")],
    ).properties(height=320)


def dagger_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Mean and worst own-expert score and mean QoE of each model at each DAgger stage (0: before any round),
    per split, from ``dagger_ablation.csv``."""
    models = table[table.stage >= 0]
    grouped = models.groupby(["policy", "stage", "split"], as_index=False)
    summary = grouped.agg(mean_score=("expert_normalised_qoe", "mean"), worst_score=("expert_normalised_qoe", "min"),
                          qoe=("qoe", "mean"))  # fmt: skip
    summary["policy"] = summary["policy"].map(policy_label)
    return summary.sort_values(["split", "policy", "stage"], ignore_index=True)


def dagger_chart(table: pd.DataFrame) -> alt.Chart:
    """Each model's mean own-expert score against its DAgger rounds, a line per model and split."""
    summary = dagger_summary(table)
    return alt.Chart(summary).mark_line(point=True).encode(
        x=alt.X("stage:O", title="DAgger rounds done", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("mean_score:Q", title="score (0 random, 1 own expert)", scale=alt.Scale(zero=False)),
        color=alt.Color("policy:N", title="model"),
        strokeDash=alt.StrokeDash("split:N", title="networks", legend=alt.Legend(symbolType="stroke"),
                                  scale=alt.Scale(domain=["train", "unseen"], range=[[1, 0], [6, 3]])),
        tooltip=["policy:N", "split:N", "stage:O", alt.Tooltip("mean_score:Q", format=".3f"),
                 alt.Tooltip("worst_score:Q", format=".3f")],
    ).properties(height=280)
