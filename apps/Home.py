"""Home page of the operator app: the assets with what is deployed for each, their latest decision and
outcome and open alarms, then the runs recorded in the store.

Every run is listed with its state (a run whose process died reads ``lost``) and, for a failed,
interrupted or lost run, its error; the run chosen below links to its domain's page.

Start it with ``decisions app`` or ``streamlit run apps/Home.py``.
"""

from __future__ import annotations

import app_common
import app_login
import monitor_views
import pandas as pd
import streamlit as st

from decisions.platform.registry import DOMAINS, find
from decisions.store import RunStatus, database_url, get_run, list_assets, list_runs
from decisions.store.artifacts import location, read_bytes

ALL = "all"

st.set_page_config(page_title="decisions", page_icon=":material/insights:", layout="wide")
url = database_url()
app_login.require_login(url)

st.title("decisions")
st.markdown(app_common.platform_overview())

st.header("Assets")
assets = list_assets(url=url)
if assets:
    overview = monitor_views.overview_frame(assets, url)
    st.dataframe(overview, hide_index=True, width="stretch")
    alarms = overview[overview["alarm"] != ""]["asset"].tolist()
    if alarms:
        st.error(f"Open alarm{'s' if len(alarms) > 1 else ''}: {', '.join(alarms)}: reality has parted from the "
                 "model; see the Monitor page.")
    st.page_link("pages/11_Monitor.py", label="Open the monitor")
else:
    st.caption("No asset yet: a domain page's Today panel adds one and deploys a run's policy for it.")

st.header("Recent runs")
kinds = app_common.run_kinds(url)
if not kinds:
    titles = ", ".join(f"**{domain.title}**" for domain in DOMAINS if domain.page)
    st.info(
        f"No runs recorded yet. Open a domain page ({titles}) in the sidebar and press *Run*, or run a job "
        "from the command line (`decisions run spec.toml`); it will show up here."
    )
    st.caption(f"Store: `{url}`")
    st.stop()

filters = st.columns([1, 1, 1, 3])
kind = filters[0].selectbox("Kind", [ALL, *kinds], key="runs_kind")
status = filters[1].selectbox("Status", [ALL, *(s.value for s in RunStatus)], key="runs_status")
limit = filters[2].number_input("Show at most", min_value=1, max_value=1000, value=50, step=10, key="runs_limit")
runs = list_runs(
    limit=int(limit),
    kind=None if kind == ALL else kind,
    status=None if status == ALL else RunStatus(status),
    url=url,
)
if not runs:
    st.info("No run matches these filters.")
    st.stop()

table = app_common.runs_frame(runs)
st.dataframe(
    table,
    hide_index=True,
    width="stretch",
    column_config={
        "started": st.column_config.DatetimeColumn("started", format="YYYY-MM-DD HH:mm:ss"),
        "duration_s": st.column_config.NumberColumn("duration (s)", format="%.1f"),
        "headline": st.column_config.TextColumn("headline", width="large",
                                                help="The run's own headline figures (its domain's)"),
        "error": st.column_config.TextColumn("error", width="large"),
    },
)
st.caption(f"Store: `{url}`")
lost = [run for run in runs if run.status is RunStatus.LOST]
if lost:
    ids = ", ".join(f"#{run.id}" for run in lost)
    st.warning(
        f"{len(lost)} run{'s' if len(lost) > 1 else ''} lost ({ids}): the process died without recording "
        "its end (killed, out of memory, machine restarted). `decisions runs reap` marks them lost in the "
        "store; `decisions runs delete <id>` removes one."
    )

labels = {run.id: f"#{run.id} {run.kind} / {run.name} ({run.status.value})" for run in runs}
chosen = st.selectbox("Run details", list(labels), format_func=labels.__getitem__, key="runs_detail")
record = get_run(chosen, url=url)
with st.expander(f"Run #{record.id}: {record.name}", expanded=True):
    if record.error:
        st.error(record.error)
    domain = find(record.kind)
    if domain is not None and domain.page:
        label = "Open its report" if record.status is RunStatus.SUCCEEDED else f"Open it on the {domain.title} page"
        st.page_link(domain.page, label=label, query_params={"run": str(record.id)})
    meta = {
        "kind": record.kind,
        "status": record.status.value,
        "package version": record.package_version,
        "git commit": record.git_commit or "",
        "host": record.host,
        "process": "" if record.pid is None else str(record.pid),
        "last heartbeat": record.heartbeat_at.strftime("%Y-%m-%d %H:%M:%S UTC") if record.heartbeat_at else "",
        "sweep": record.sweep_id or "",
    }
    st.dataframe(pd.Series(meta, name="value").to_frame(), width="stretch")
    metrics = record.latest_metrics()
    if metrics:
        st.markdown("**Metrics**")
        st.dataframe(
            pd.DataFrame({"metric": list(metrics), "value": list(metrics.values())}),
            hide_index=True,
            width="stretch",
        )
    st.markdown("**Configuration**")
    st.json(record.config, expanded=False)
    if record.artifacts:
        st.markdown("**Artifacts**")
        st.dataframe(
            pd.DataFrame([{"name": a.name, "location": location(a), "type": a.media_type} for a in record.artifacts]),
            hide_index=True,
            width="stretch",
        )
        images = [a for a in record.artifacts if (a.media_type or "").startswith("image/")]
        for artifact in images:
            try:
                st.image(read_bytes(location(artifact)), caption=artifact.name)
            except FileNotFoundError:
                st.caption(f"{artifact.name}: {location(artifact)} is no longer there")
