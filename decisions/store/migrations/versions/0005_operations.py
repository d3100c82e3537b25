"""Operations: assets, deployments per asset, the decisions taken for an asset and their outcomes.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-06

New tables ``assets``, ``decisions`` (a decision outlives its deployment: ``deployment_id`` is set
NULL when that row is deleted) and ``outcomes``, their ids never reused (SQLite ``AUTOINCREMENT``, a
sequence on PostgreSQL). ``deployments`` gains nullable ``asset_id``, ``policy_digest``, ``figures`` and
``replaces_id``; existing rows keep them NULL. SQLite rebuilds ``deployments`` for its new foreign key
(nothing refers to it then), keeping ``AUTOINCREMENT``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from alembic import op

from decisions.store.migrations.ops import create_stamped, drop_indexed

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None

DEPLOYMENT_COLUMNS = ("asset_id", "policy_digest", "figures", "replaces_id")
"""The columns this revision adds to ``deployments``."""


@contextmanager
def _sequence_kept(table: str) -> Iterator[None]:
    """Keep SQLite's ``AUTOINCREMENT`` counter of ``table`` across a rebuild of it (the rebuilt table
    starts from its largest id, which would hand out again the ids of deleted newest rows)."""
    connection = op.get_bind()
    if connection.dialect.name != "sqlite":
        yield
        return
    query = "SELECT seq FROM sqlite_sequence WHERE name = :name"
    before = connection.execute(sa.text(query), {"name": table}).scalar()
    yield
    if before is None:
        return
    after = connection.execute(sa.text(query), {"name": table}).scalar()
    if after is None:
        connection.execute(sa.text("INSERT INTO sqlite_sequence (name, seq) VALUES (:name, :seq)"),
                           {"name": table, "seq": before})
    elif after < before:
        connection.execute(sa.text("UPDATE sqlite_sequence SET seq = :seq WHERE name = :name"),
                           {"name": table, "seq": before})


def _create_assets() -> None:
    create_stamped(
        "assets",
        sa.Column("name", sa.String(255), nullable=False, unique=True),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        stamp="created",
        after=[sa.Column("retired_at", sa.DateTime(), nullable=True)],
    )


def _extend_deployments() -> None:
    with _sequence_kept("deployments"), \
            op.batch_alter_table("deployments", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.add_column(sa.Column("asset_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("policy_digest", sa.String(64), nullable=True))
        batch.add_column(sa.Column("figures", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("replaces_id", sa.Integer(), nullable=True))
        batch.create_foreign_key("fk_deployments_asset_id_assets", "assets", ["asset_id"], ["id"])
        batch.create_index("ix_deployments_asset_id", ["asset_id"])


def _create_decisions() -> None:
    create_stamped(
        "decisions",
        sa.Column("asset_id", sa.Integer(), sa.ForeignKey("assets.id", name="fk_decisions_asset_id_assets"),
                  nullable=False),
        sa.Column("deployment_id", sa.Integer(),
                  sa.ForeignKey("deployments.id", name="fk_decisions_deployment_id_deployments", ondelete="SET NULL"),
                  nullable=True),
        sa.Column("policy_digest", sa.String(64), nullable=True),
        sa.Column("state", sa.JSON(), nullable=False),
        sa.Column("action", sa.JSON(), nullable=False),
        sa.Column("expected_value", sa.Float(), nullable=True),
        sa.Column("interval_low", sa.Float(), nullable=True),
        sa.Column("interval_high", sa.Float(), nullable=True),
        sa.Column("details", sa.JSON(), nullable=False),
        stamp="decided",
        indexes={"ix_decisions_asset_decided": ["asset_id", "decided_at"],
                 "ix_decisions_deployment_id": ["deployment_id"]},
    )


def _create_outcomes() -> None:
    create_stamped(
        "outcomes",
        sa.Column("decision_id", sa.Integer(),
                  sa.ForeignKey("decisions.id", name="fk_outcomes_decision_id_decisions", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("realised", sa.JSON(), nullable=False),
        sa.Column("realised_value", sa.Float(), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        stamp="recorded",
        indexes={"ix_outcomes_decision_id": ["decision_id"]},
    )


def upgrade() -> None:
    """Create ``assets``, extend ``deployments``, then create ``decisions`` and ``outcomes``."""
    _create_assets()
    _extend_deployments()
    _create_decisions()
    _create_outcomes()


def downgrade() -> None:
    """Drop ``outcomes``, ``decisions``, the deployments made for assets, the new ``deployments``
    columns and ``assets``: what they held is lost."""
    drop_indexed("outcomes", "ix_outcomes_decision_id")
    drop_indexed("decisions", "ix_decisions_deployment_id", "ix_decisions_asset_decided")
    op.execute("DELETE FROM deployments WHERE asset_id IS NOT NULL")  # without its asset, not a choice for a kind
    with _sequence_kept("deployments"), \
            op.batch_alter_table("deployments", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.drop_index("ix_deployments_asset_id")
        batch.drop_constraint("fk_deployments_asset_id_assets", type_="foreignkey")
        for column in DEPLOYMENT_COLUMNS:
            batch.drop_column(column)
    op.drop_table("assets")
