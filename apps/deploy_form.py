"""The deploy control of a page: the operator's name and note, a deploy button, a confirmation step.

Nothing is recorded on the first click: the page asks to confirm (or cancel) the choice. Behind the login
gate the logged-in user is recorded as who chose, and the button is disabled for a role that may not
deploy; with no user defined, the name the operator types is required and recorded instead
(``decisions.store.deployments.choose``'s ``chosen_by``). The note is cleared once the choice is recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import app_login
import streamlit as st

from decisions.errors import InputError
from decisions.store import RunNotFoundError, deployments


def deploy_controls(*, run_id: int, kind: str, label: str, settings: Mapping[str, Any], url: str,
                    key: str = "deploy") -> None:
    """Name and note fields and the deploy button; on confirmation, record ``label`` of run ``run_id`` as deployed.

    Args:
        run_id: the run whose policy is deployed.
        kind: the run kind (the domain's name).
        label: what is deployed, as the history shows it.
        settings: the policy's settings recorded with it.
        url: the run store.
        key: prefix of the widgets' keys (``<key>``: the button, ``<key>_operator``, ``<key>_note``).
    """
    named = app_login.current().logged_in
    left, right = st.columns([1, 2])
    if not named:
        left.text_input("Your name (recorded with the choice)", key=f"{key}_operator")
    right.text_input("Note (why this point)", key=f"{key}_note")
    if st.button("Deploy this operating point", type="primary", key=key, disabled=app_login.blocked("deploy")):
        if named or st.session_state.get(f"{key}_operator", "").strip():
            st.session_state[f"{key}_pending"] = label
        else:
            st.error("Type your name to deploy: it is recorded with the choice.")
    if st.session_state.get(f"{key}_pending") not in (None, label):  # another point was chosen meanwhile
        st.session_state[f"{key}_pending"] = None
    if st.session_state.get(f"{key}_pending") == label:
        st.warning(f"Deploy **{label}** from run #{run_id}? It replaces the policy deployed for {kind} now.")
        confirm, cancel = st.columns(2)
        confirm.button("Confirm deployment", type="primary", key=f"{key}_confirm", on_click=_confirm,
                       args=(key, run_id, kind, label, dict(settings), url))
        cancel.button("Cancel", key=f"{key}_cancel", on_click=_clear_pending, args=(key,))
    outcome = st.session_state.pop(f"{key}_outcome", None)
    if outcome is not None:
        ok, message = outcome
        (st.success if ok else st.error)(message)


def _clear_pending(key: str) -> None:
    st.session_state[f"{key}_pending"] = None


def _confirm(key: str, run_id: int, kind: str, label: str, settings: dict[str, Any], url: str) -> None:
    """Record the choice (a button callback, so it may clear the note before the fields are drawn again)."""
    _clear_pending(key)
    typed = str(st.session_state.get(f"{key}_operator", "")).strip()
    note = str(st.session_state.get(f"{key}_note", "")).strip()
    try:
        if not typed and not app_login.current().logged_in:
            raise InputError("name", "type your name to deploy: it is recorded with the choice")
        operator = app_login.writer("deploy", url, typed) or typed
        deployments.choose(run_id, kind, label, settings, note=note or None, chosen_by=operator, url=url)
    except (InputError, RunNotFoundError) as err:
        st.session_state[f"{key}_outcome"] = (False, str(err))
        return
    st.session_state[f"{key}_note"] = ""
    st.session_state[f"{key}_outcome"] = (True, f"Deployed {label} from run #{run_id} (chosen by {operator}).")
