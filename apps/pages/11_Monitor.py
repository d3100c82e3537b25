"""Monitor page: every asset's deployed policy, latest decision and outcome and alarm; for one asset,
realised against expected outcomes with the change detector's statistics."""

from __future__ import annotations

import app_login
import monitor_views
import pandas as pd
import streamlit as st

from decisions.errors import InputError
from decisions.platform.monitoring import ARL0, ARL0_RANGE, monitor_asset
from decisions.store import database_url, list_assets, outcomes_of

st.set_page_config(page_title="Monitor · decisions", page_icon=":material/monitoring:", layout="wide")
url = database_url()
app_login.require_login(url)
st.title("Monitor")
st.markdown("Realised outcomes against what each asset's deployed policy expected. An alarm means reality "
            "has parted from the model: retrain with the asset's recorded outcomes and deploy again.")
assets = list_assets(url=url)
if not assets:
    st.info("No asset yet. Add one on a domain page's Today panel (or `decisions assets add`), deploy a run's "
            "policy for it, decide and record outcomes: they are monitored here.")
    st.stop()

st.dataframe(monitor_views.overview_frame(assets, url), hide_index=True, width="stretch")
left, right = st.columns([2, 1])
asset = left.selectbox("Asset", [a.name for a in assets], key="monitor_asset")
arl0 = right.number_input("Decisions between false alarms", min_value=ARL0_RANGE[0], max_value=ARL0_RANGE[1],
                          value=ARL0, step=100, key="monitor_arl0")
try:
    with st.spinner("Calibrating the detector..."):
        monitor = monitor_asset(asset, arl0=float(arl0), url=url)
except InputError as err:
    st.error(str(err))
    st.stop()
(st.error if monitor.open_alarm else st.success)(monitor.words())
st.caption("Design: " + "; ".join(monitor.design))
if monitor.outcomes:
    st.subheader("Change detector")
    st.altair_chart(monitor_views.statistics_chart(monitor), width="stretch")
    st.subheader("Realised against expected")
    st.altair_chart(monitor_views.residuals_chart(monitor), width="stretch")
    rows = outcomes_of(asset, url=url)
    st.dataframe(pd.DataFrame([{"decision": r.decision_id, "expected": r.expected_value, "realised": r.realised_value,
                                "residual": r.residual, "recorded at": r.recorded_at} for r in rows]),
                 hide_index=True)
else:
    st.info(f"No outcome recorded for {asset} since its deployment.")
