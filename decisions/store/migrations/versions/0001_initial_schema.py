"""The run store as the release before migrations made it: runs, metrics, artifacts, deployments.

Revision ID: 0001
Revises:
Create Date: 2025-12-04

The tables are ``decisions.store.migrations.baseline``'s (also what ``decisions db upgrade``
compares a store made before migrations with, before it stamps it 0001).
"""

from __future__ import annotations

from alembic import op

from decisions.store.migrations.baseline import baseline_metadata

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Create the four tables with their indexes."""
    baseline_metadata().create_all(op.get_bind(), checkfirst=False)


def downgrade() -> None:
    """Drop the four tables."""
    baseline_metadata().drop_all(op.get_bind(), checkfirst=False)
