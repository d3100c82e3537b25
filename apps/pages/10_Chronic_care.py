"""Chronic care page: run a study from a form, or open a recorded run (``?run=<id>``)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import app_common
import app_login
import page_skeleton
import pandas as pd
import streamlit as st

from decisions.errors import InputError
from decisions.health.chronic import ACTIONS, DOMAIN
from decisions.store import RunNotFoundError
from decisions.store.forgettings import forgettings_of


def settings_inputs() -> dict[str, Any]:
    """The run's name and seed, the clinicians' capabilities and the data size."""
    return {
        "name": st.text_input("Run name", value="chronic", key="run_name"),
        "seed": st.number_input("Seed", min_value=0, value=0, step=1, key="seed"),
        "low_share": st.slider("Share of low-capability clinicians", 0.0, 1.0, 0.6, key="low_share"),
        "kappa_low": st.slider("Low capability (kappa)", 0.0, 1.0, 0.2, key="kappa_low"),
        "kappa_high": st.slider("High capability (kappa)", 0.0, 1.0, 0.9, key="kappa_high"),
        "patients": st.number_input("Patients in the logs", min_value=2, value=1000, step=100, key="patients"),
        "seeds": st.number_input("Data draws", min_value=1, max_value=20, value=2, step=1, key="seeds"),
    }


def job_spec(settings: dict[str, Any], output_dir: str) -> dict[str, Any]:
    """The job spec of the form's values."""
    return {"job": app_common.job_table(DOMAIN, settings, output_dir),
            "clinicians": {k: float(settings[k]) for k in ("low_share", "kappa_low", "kappa_high")},
            "data": {"patients": int(settings["patients"]), "seeds": int(settings["seeds"])}}


def _curves(report: Any) -> None:
    """The cohort's TTC curves for one disease and regime, one line per method."""
    curves = report.ttc_curves
    disease = st.selectbox("Disease", list(dict.fromkeys(curves["disease"])), key="curve_disease")
    regime = st.selectbox("Regime (epsilon)", list(dict.fromkeys(curves["regime"])), key="curve_regime")
    shown = curves[(curves["disease"] == disease) & (curves["regime"] == regime)]
    st.line_chart(shown.pivot(index="visit", columns="method", values="share"))


def _state_inspector(report: Any) -> None:
    """A patient's state: the recommended action and the Q-values of the allowed actions (first visit)."""
    q = report.q_values
    cols = st.columns(6)
    disease = cols[0].selectbox("Disease", list(dict.fromkeys(q["disease"])), key="q_disease")
    picks = {name: cols[i + 1].selectbox(name, sorted(q[name].unique()), key=f"q_{name}")
             for i, name in enumerate(("band", "step", "adherent", "side_effect", "since"))}
    rows = q[(q["disease"] == disease) & (q[list(picks)] == list(picks.values())).all(axis=1)]
    table = rows.pivot(index="action", columns="method", values="q").reindex(list(ACTIONS)).dropna(how="all")
    for method in table.columns:
        st.write(f"**{method}** recommends **{table[method].idxmax()}** (value {table[method].max():.3f})")
    st.dataframe(table)


# The run's headline figures: (metric, label, format).
HEADLINE = (
    ("t2d_kappa_vs_uniform_ttc_pp", "T2D: kappa - uniform (pp)", "{:+.1f}"),
    ("htn_kappa_vs_uniform_ttc_pp", "HTN: kappa - uniform (pp)", "{:+.1f}"),
    ("offline_best_vs_optimal_t2d", "T2D: best offline / optimum", "{:.3f}"),
    ("offline_best_vs_optimal_htn", "HTN: best offline / optimum", "{:.3f}"),
    ("unlearn_seconds_vs_retrain", "unlearn / retrain time", "{:.2f}"),
)


def _confirm_forget(run_id: int, url: str) -> None:
    """Forget the typed patient and record it (a button callback, so it may clear the field before it is drawn)."""
    from decisions.platform.forgetting import forget_patients

    patient = st.session_state.pop("forget_pending", None)
    try:
        operator = app_login.writer("forget", url, str(st.session_state.get("forget_operator", "")).strip())
        [done] = forget_patients(run_id, [patient], created_by=operator, url=url)
    except (InputError, RunNotFoundError) as err:
        st.session_state["forget_outcome"] = (False, str(err))
        return
    st.session_state["forget_patient"] = ""
    check = "equals retraining bit for bit" if done.equal else "DIFFERS from retraining"
    st.session_state["forget_outcome"] = (True, f"Forgot {done.patient} from run #{run_id} (by {operator}): "
                                                f"unlearning {check}; data sha256 now {done.data_digest_after[:16]}...")


def _forget_section(run_id: int, url: str) -> None:
    """A patient's identifier and the operator's name (the logged-in user's, behind the login gate), a button
    (disabled for a role that may not forget), a confirmation, and the run's forgettings."""
    st.markdown("**Forget a patient**: take their visits out of the kappa-weighted learner, checked against "
                "retraining without them; each forgetting is recorded with its digests, who and when")
    named = app_login.current().logged_in
    left, right = st.columns(2)
    left.text_input("Patient identifier (e.g. t2d-17)", key="forget_patient")
    if not named:
        right.text_input("Your name (recorded with the forgetting)", key="forget_operator")
    if st.button("Forget this patient", key="forget", disabled=app_login.blocked("forget")):
        patient = str(st.session_state.get("forget_patient", "")).strip()
        if patient and (named or str(st.session_state.get("forget_operator", "")).strip()):
            st.session_state["forget_pending"] = patient
        else:
            st.error("patient: type the patient's identifier and your name (it is recorded with the forgetting)")
    pending = st.session_state.get("forget_pending")
    if pending:
        st.warning(f"Forget **{pending}** from run #{run_id}? It cannot be undone.")
        confirm, cancel = st.columns(2)
        confirm.button("Confirm forgetting", type="primary", key="forget_confirm", on_click=_confirm_forget,
                       args=(run_id, url))
        cancel.button("Cancel", key="forget_cancel", on_click=st.session_state.pop, args=("forget_pending", None))
    outcome = st.session_state.pop("forget_outcome", None)
    if outcome is not None:
        (st.success if outcome[0] else st.error)(outcome[1])
    records = forgettings_of(run_id, url=url)
    if records:
        st.dataframe(pd.DataFrame([asdict(r) for r in records]), hide_index=True)


def show_report(report: Any, run_id: int, url: str) -> None:
    """Headline figures, TTC curves per method and regime, the state inspector, sweep, unlearning and
    the run's forgettings."""
    app_common.results_header(run_id, app_common.format_figures(report.metrics, HEADLINE))
    st.dataframe(report.comparison[report.comparison["regime"] == report.train_regime], hide_index=True)
    _curves(report)
    st.markdown(f"**Why this action** (first visit, regime {report.train_regime})")
    _state_inspector(report)
    st.markdown("**Kappa sweep** (TTC share by the horizon)")
    st.dataframe(report.sweep, hide_index=True)
    st.markdown("**Exact unlearning**: forgetting patients against retraining without them")
    st.dataframe(report.unlearning, hide_index=True)
    _forget_section(run_id, url)


page_skeleton.run_page(page_skeleton.DomainPage(
    domain=DOMAIN, icon=":material/monitor_heart:", intro=DOMAIN.summary,
    settings=settings_inputs, job_spec=job_spec, show=show_report,
))
