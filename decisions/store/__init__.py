"""Run store: SQLAlchemy models of runs, metrics and artifacts, and functions to record and read them.

Typical use from a job::

    from decisions.store import recorded_run

    with recorded_run("gas_storage", "baseline", config) as run:
        run.log_metrics({"value": 1.23e6})
        run.add_artifact("policy", "out/policy.msgpack")

The database is ``$DECISIONS_DB_URL`` or a SQLite file in the user's data
directory; see ``decisions.store.db``. A recorded run keeps a heartbeat; one whose
process died reads back as ``lost`` (``decisions.store.liveness``), and
``decisions.store.lifecycle`` reaps, interrupts and deletes runs.

An operator's assets (``assets``), the deployments of a run's policy for each (``asset_deployments``),
and the decisions taken for an asset with their outcomes (``decision_log``) are kept here too.
"""

from decisions.errors import error_line
from decisions.store.artifacts import artifacts_root
from decisions.store.asset_deployments import asset_history, current, deploy, rollback
from decisions.store.assets import AssetRecord, create_asset, get_asset, list_assets, retire_asset
from decisions.store.db import database_url, dispose_engines, get_engine, session_scope
from decisions.store.decision_log import (
    DecisionRecord,
    NewDecision,
    NewOutcome,
    OutcomeRecord,
    RealisedRecord,
    decisions_of,
    get_decision,
    outcomes_for,
    outcomes_of,
    record_decision,
    record_decision_ids,
    record_decisions,
    record_outcome,
    record_outcomes,
)
from decisions.store.deployments import DeploymentRecord
from decisions.store.heartbeat import Heartbeat
from decisions.store.lifecycle import (
    DeletedRun,
    RunAliveError,
    RunDeployedError,
    artifact_folders,
    beat,
    delete_run,
    interrupt_running,
    reap_lost_runs,
)
from decisions.store.liveness import heartbeat_interval, lost_after
from decisions.store.models import Artifact, Metric, Run, RunStatus
from decisions.store.recorder import RunRecorder, recorded_run
from decisions.store.records import ArtifactRecord, MetricRecord, RunRecord
from decisions.store.repository import (
    RunNotFoundError,
    add_artifact,
    finish_run,
    get_run,
    list_runs,
    log_metrics,
    start_run,
)

__all__ = [
    "Artifact",
    "ArtifactRecord",
    "AssetRecord",
    "artifacts_root",
    "asset_history",
    "create_asset",
    "current",
    "DecisionRecord",
    "NewDecision",
    "NewOutcome",
    "decisions_of",
    "deploy",
    "DeploymentRecord",
    "get_asset",
    "get_decision",
    "list_assets",
    "OutcomeRecord",
    "outcomes_for",
    "outcomes_of",
    "RealisedRecord",
    "record_decision",
    "record_decision_ids",
    "record_decisions",
    "record_outcome",
    "record_outcomes",
    "retire_asset",
    "rollback",
    "DeletedRun",
    "Heartbeat",
    "Metric",
    "MetricRecord",
    "Run",
    "RunNotFoundError",
    "RunRecord",
    "RunAliveError",
    "RunDeployedError",
    "RunRecorder",
    "RunStatus",
    "add_artifact",
    "artifact_folders",
    "beat",
    "database_url",
    "delete_run",
    "dispose_engines",
    "error_line",
    "finish_run",
    "get_engine",
    "get_run",
    "heartbeat_interval",
    "interrupt_running",
    "list_runs",
    "log_metrics",
    "lost_after",
    "reap_lost_runs",
    "recorded_run",
    "session_scope",
    "start_run",
]
