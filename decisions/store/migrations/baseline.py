"""The schema of revision 0001, frozen: the tables the release before migrations created with
``create_all``, written out so they stay put while the models move on. Do not edit: change the
schema in a new revision.
"""

from __future__ import annotations

import sqlalchemy as sa


def _of_run(name: str, metadata: sa.MetaData, *columns: sa.Column, indexes: tuple[sa.Index, ...] = ()) -> sa.Table:
    """A table whose rows belong to a run: ``id``, ``run_id`` (cascading, indexed) and ``name`` first."""
    return sa.Table(
        name,
        metadata,
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("name", sa.String(255), nullable=False),
        *columns,
        *indexes,
    )


def baseline_metadata() -> sa.MetaData:
    """A fresh ``MetaData`` holding revision 0001's tables: ``runs``, ``metrics``, ``artifacts``, ``deployments``."""
    metadata = sa.MetaData()
    sa.Table(
        "runs",
        metadata,
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("package_version", sa.String(64), nullable=False),
        sa.Column("git_commit", sa.String(64), nullable=True),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=True),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
        sa.Column("duration_seconds", sa.Float(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("sweep_id", sa.String(64), nullable=True, index=True),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.Column("heartbeat_at", sa.DateTime(), nullable=True),
        sa.Index("ix_runs_kind_created", "kind", "created_at"),
        sa.Index("ix_runs_status_created", "status", "created_at"),
    )
    _of_run(
        "metrics",
        metadata,
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("step", sa.Integer(), nullable=True),
    )
    _of_run(
        "artifacts",
        metadata,
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("media_type", sa.String(255), nullable=True),
    )
    sa.Table(
        "deployments",
        metadata,
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("label", sa.String(255), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("chosen_by", sa.String(255), nullable=True),
        sa.Column("chosen_at", sa.DateTime(), nullable=False),
        sa.Index("ix_deployments_kind_chosen_at", "kind", "chosen_at"),
    )
    return metadata
