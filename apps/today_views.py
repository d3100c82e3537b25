"""The Today panel every domain page shows: an asset of the domain, the policy deployed for it, today's
decision on a state with its reasons, and the outcome once it is known. Deploying (a recorded run's
policy, the study's favourite proposed) and adding an asset are one form each. Every write names the
logged-in user (behind the login gate: a control the role may not use is disabled, and the write is
refused too), else the operator's name typed in the panel.
"""

from __future__ import annotations

import json
from typing import Any

import app_login
import pandas as pd
import streamlit as st

from decisions.errors import InputError
from decisions.kit.domain import Domain
from decisions.store import RunNotFoundError

NEW_ASSET = "+ new asset"


def _operator(domain: Domain) -> str:
    """The logged-in user's name, else the name typed in the panel (empty when none)."""
    actor = app_login.current()
    if actor.logged_in and actor.name:
        return actor.name
    return str(st.session_state.get(f"{domain.name}_today_operator", "")).strip()


def _writer(domain: Domain, action: str, url: str) -> str | None:
    """The name recorded with a write of ``action`` (``app_login.writer``), None for the OS user."""
    return app_login.writer(action, url, _operator(domain) or None)


def _add_asset(domain: Domain, url: str) -> None:
    """Create the typed asset and select it (a button callback: it runs before the widgets are drawn)."""
    from decisions.store import create_asset

    name = str(st.session_state.get(f"{domain.name}_new_asset", "")).strip()
    if not name:
        st.session_state[f"{domain.name}_today_error"] = "name: type the asset's name"
        return
    try:
        create_asset(name, domain.name, {}, created_by=_writer(domain, "add assets", url), url=url)
    except InputError as err:
        st.session_state[f"{domain.name}_today_error"] = str(err)
        return
    st.session_state[f"{domain.name}_today_asset"] = name


def _new_asset(domain: Domain, url: str) -> None:
    st.text_input("Asset name", key=f"{domain.name}_new_asset")
    st.button("Add asset", key=f"{domain.name}_add_asset", on_click=_add_asset, args=(domain, url),
              disabled=app_login.blocked("add assets"))
    error = st.session_state.pop(f"{domain.name}_today_error", None)
    if error:
        st.error(error)


def _deploy(domain: Domain, asset: str, run_id: int | None, url: str) -> None:
    """Propose the shown run's policies for the asset and deploy the chosen one."""
    from decisions.platform.operations import propose

    if run_id is None:
        st.caption("Open or run a study above to deploy one of its policies for this asset.")
        return
    try:
        proposal = propose(asset, run_id, url=url)
    except (InputError, RunNotFoundError) as err:
        st.caption(f"Run #{run_id} cannot be deployed: {err}")
        return
    st.caption(proposal.words())
    names = [c.name for c in proposal.candidates]
    labels = {c.name: f"{c.label} ({c.score_name} {c.score:.4g})" for c in proposal.candidates}
    st.selectbox("Policy", names, format_func=labels.__getitem__, key=f"{domain.name}_today_policy")
    st.text_input("Note (why)", key=f"{domain.name}_today_note")
    st.button(f"Deploy for {asset}", key=f"{domain.name}_today_deploy", on_click=_deploy_chosen,
              args=(domain, asset, run_id, url), disabled=app_login.blocked("deploy"))


def _deploy_chosen(domain: Domain, asset: str, run_id: int, url: str) -> None:
    """Deploy the chosen policy (a button callback: the page is then drawn with the new deployment)."""
    from decisions.platform.operations import deploy

    messages = f"{domain.name}_today_messages"
    if not _operator(domain):
        st.session_state[messages] = [("error", "Type your name: it is recorded with the deployment.")]
        return
    chosen = st.session_state.get(f"{domain.name}_today_policy")
    note = str(st.session_state.get(f"{domain.name}_today_note", "")).strip() or None
    try:
        chosen_by = _writer(domain, "deploy", url)
        record, _ = deploy(asset, run_id, chosen, note=note, chosen_by=chosen_by, url=url)
    except (InputError, RunNotFoundError) as err:
        st.session_state[messages] = [("error", str(err))]
        return
    st.session_state.pop(f"{domain.name}_today_state", None)  # the new run's example state
    st.session_state[messages] = [("success", f"Deployed {record.label} (run #{record.run_id}) for {asset}.")]


def _example_state(domain: Domain, deployed_run: int, url: str) -> dict[str, Any]:
    from decisions.store import get_run
    from decisions.store.artifacts import report_folder

    decider = domain.decider() if domain.decider else None
    return decider.example_state(report_folder(get_run(deployed_run, url=url))) if decider else {}


def _decision_view(answer: Any, outcome: str) -> None:
    d = answer.decision
    cols = st.columns(4)
    cols[0].metric("Action", ", ".join(f"{v}" for v in d.action.values()) if len(d.action) < 4 else "see below")
    cols[1].metric("Expected outcome", f"{d.expected:.4g}",
                   help=f"95% interval {d.interval[0]:.4g} .. {d.interval[1]:.4g}" if d.interval else None)
    cols[2].metric("Value", f"{d.value:.4g}")
    cols[3].metric(f"Alternative: {d.alternative.get('policy', '-')}", json.dumps(d.alternative.get("action")),
                   help=f"its value {d.alternative.get('value')}")
    recorded = "Not recorded" if answer.decision_id is None else f"Decision #{answer.decision_id} recorded"
    st.caption(f"{recorded}. Expected outcome: {outcome}. Action in full: {json.dumps(dict(d.action))}")
    q = d.reasons.get("q_values") if isinstance(d.reasons, dict) else None
    if isinstance(q, dict) and q:
        st.caption("Why: the value of each allowed action")
        st.bar_chart(pd.Series(q, name="value"))
    elif d.reasons:
        st.caption("Why")
        st.json(dict(d.reasons), expanded=False)
    if d.sensitivities:
        st.caption("Sensitivity of the value to today's inputs")
        st.bar_chart(pd.Series(dict(d.sensitivities), name="d value / d input"))


def _decide(domain: Domain, asset: str, deployed_run: int, url: str) -> None:
    from decisions.platform.operations import decide

    key = f"{domain.name}_today_state"
    if key not in st.session_state:
        try:
            st.session_state[key] = json.dumps(_example_state(domain, deployed_run, url), indent=1)
        except (InputError, FileNotFoundError, RunNotFoundError) as err:
            st.session_state[key] = "{}"
            st.caption(f"No example state: {err}")
    st.text_area("Today's state (JSON)", key=key, height=160)
    if st.button("Decide", type="primary", key=f"{domain.name}_today_decide", disabled=app_login.blocked("decide")):
        try:
            state = json.loads(st.session_state[key])
        except ValueError as err:
            st.error(f"state: not JSON ({err})")
            return
        try:
            answers = decide(asset, [state], decided_by=_writer(domain, "decide", url), url=url)
        except (InputError, RunNotFoundError) as err:
            st.error(str(err))
            return
        st.session_state[f"{domain.name}_today_answer"] = answers[0]
    answer = st.session_state.get(f"{domain.name}_today_answer")
    if answer is not None:
        _decision_view(answer, domain.decider().OUTCOME if domain.decider else "")


def _outcome(domain: Domain, url: str) -> None:
    from decisions.store import NewOutcome, record_outcomes

    decider = domain.decider() if domain.decider else None
    st.caption(f"Record what happened: {decider.OUTCOME if decider else 'the realised value'}")
    left, right = st.columns(2)
    decision = left.number_input("Decision #", min_value=1, step=1, key=f"{domain.name}_today_outcome_decision")
    value = right.number_input("Realised value", key=f"{domain.name}_today_outcome_value", format="%.6g")
    if st.button("Record outcome", key=f"{domain.name}_today_outcome", disabled=app_login.blocked("record outcomes")):
        try:
            [written] = record_outcomes([NewOutcome(int(decision), {}, float(value))],
                                        recorded_by=_writer(domain, "record outcomes", url), url=url)
        except InputError as err:
            st.error(str(err))
            return
        st.success(f"Outcome {written.id} of decision {decision} recorded.")


def today_panel(domain: Domain, run_id: int | None, url: str) -> None:
    """The panel (nothing where the domain cannot decide yet): pick or add an asset, deploy the shown
    run's policy, decide a state, record an outcome."""
    if domain.decider is None:
        return
    from decisions.store import current, list_assets

    st.subheader("Today")
    st.caption("Deploy a recorded run's policy for an asset, then decide today's state with it; below, run or "
               "open a study.")
    if not app_login.current().logged_in:
        st.text_input("Your name (recorded with every write)", key=f"{domain.name}_today_operator")
    names = [a.name for a in list_assets(domain.name, url=url)]
    asset = st.selectbox("Asset", [*names, NEW_ASSET], key=f"{domain.name}_today_asset")
    if asset == NEW_ASSET:
        _new_asset(domain, url)
        return
    for kind, message in st.session_state.pop(f"{domain.name}_today_messages", []):
        (st.success if kind == "success" else st.error)(message)
    deployed = current(asset, url=url)
    if deployed is None:
        st.info(f"Nothing is deployed for {asset} yet.")
    else:
        st.markdown(f"**{asset}** runs **{deployed.label}** from run #{deployed.run_id} since "
                    f"{deployed.chosen_at:%Y-%m-%d %H:%M} UTC (by {deployed.chosen_by or 'unknown'})")
    with st.expander("Deploy a policy", expanded=deployed is None):
        _deploy(domain, asset, run_id, url)
    if deployed is not None:
        _decide(domain, asset, deployed.run_id, url)
        with st.expander("Record an outcome"):
            _outcome(domain, url)
