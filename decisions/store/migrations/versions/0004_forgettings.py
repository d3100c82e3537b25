"""Forgettings: each patient forgotten from a run's learnt policy, recorded with its digests and check.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-06

A new table, ``forgettings`` (its rows refer to ``runs`` and cascade on delete); its ids are never
reused (SQLite ``AUTOINCREMENT``, a sequence on PostgreSQL). Existing rows are untouched.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Create ``forgettings`` and its index on ``run_id``."""
    op.create_table(
        "forgettings",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("patient", sa.String(255), nullable=False),
        sa.Column("disease", sa.String(64), nullable=False),
        sa.Column("data_digest_before", sa.String(64), nullable=False),
        sa.Column("data_digest_after", sa.String(64), nullable=False),
        sa.Column("policy_digest_after", sa.String(64), nullable=False),
        sa.Column("equal", sa.Boolean(), nullable=False),
        sa.Column("unlearn_seconds", sa.Float(), nullable=False),
        sa.Column("retrain_seconds", sa.Float(), nullable=False),
        sa.Column("created_by", sa.String(255), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_forgettings_run_id", "forgettings", ["run_id"])


def downgrade() -> None:
    """Drop ``forgettings`` (its rows are lost)."""
    op.drop_index("ix_forgettings_run_id", table_name="forgettings")
    op.drop_table("forgettings")
