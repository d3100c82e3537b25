"""Artifacts record their URL: where the file lives (``file://``, ``s3://``, ...), for stores shared by hosts.

Revision ID: 0002
Revises: 0001
Create Date: 2025-12-04

``artifacts.url`` is nullable: rows recorded before it keep NULL and are read by their ``path``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Add the nullable ``artifacts.url`` column."""
    with op.batch_alter_table("artifacts") as batch:
        batch.add_column(sa.Column("url", sa.Text(), nullable=True))


def downgrade() -> None:
    """Drop ``artifacts.url``."""
    with op.batch_alter_table("artifacts") as batch:
        batch.drop_column("url")
