"""Forgettings: each patient forgotten from a run's learnt policy, recorded with its digests and check.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-06

A new table, ``forgettings`` (its rows refer to ``runs`` and cascade on delete); its ids are never
reused (SQLite ``AUTOINCREMENT``, a sequence on PostgreSQL). Existing rows are untouched.
"""

from __future__ import annotations

import sqlalchemy as sa

from decisions.store.migrations.ops import create_stamped, drop_indexed

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Create ``forgettings`` and its index on ``run_id``."""
    create_stamped(
        "forgettings",
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("patient", sa.String(255), nullable=False),
        sa.Column("disease", sa.String(64), nullable=False),
        sa.Column("data_digest_before", sa.String(64), nullable=False),
        sa.Column("data_digest_after", sa.String(64), nullable=False),
        sa.Column("policy_digest_after", sa.String(64), nullable=False),
        sa.Column("equal", sa.Boolean(), nullable=False),
        sa.Column("unlearn_seconds", sa.Float(), nullable=False),
        sa.Column("retrain_seconds", sa.Float(), nullable=False),
        stamp="created",
        indexes={"ix_forgettings_run_id": ["run_id"]},
    )


def downgrade() -> None:
    """Drop ``forgettings`` (its rows are lost)."""
    drop_indexed("forgettings", "ix_forgettings_run_id")
