"""Run and deployment ids are never reused: SQLite's ``runs`` and ``deployments`` get ``AUTOINCREMENT``.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-06

Without it SQLite gives a new row the largest id plus one, so deleting the newest run handed its id
(and its folder) to the next run. PostgreSQL's ``SERIAL`` sequences never go back: nothing changes there.
The tables are rebuilt in the migration's transaction, where foreign keys may be enforced: the rows of
the tables that refer to ``runs`` are kept aside while ``runs`` is replaced.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from decisions.store.migrations.baseline import baseline_metadata

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None

CHILDREN = ("metrics", "artifacts", "deployments")
"""The tables whose rows refer to ``runs`` (their ``run_id`` cascades on delete)."""


def _columns(connection: sa.Connection, table: str) -> list[str]:
    """The column names of ``table`` in this store, in order."""
    return [column["name"] for column in sa.inspect(connection).get_columns(table)]


def _replace(connection: sa.Connection, table: sa.Table, autoincrement: bool) -> None:
    """Rebuild ``table`` (a 0001 table, unchanged by 0002) with or without ``AUTOINCREMENT``, rows kept.

    The rows move through ``<table>_rebuilt``, which is renamed into place; the indexes are made again.
    """
    names = _columns(connection, table.name)
    rebuilt = sa.Table(
        f"{table.name}_rebuilt",
        table.metadata,  # where the table it refers to is
        *[
            sa.Column(column.name, column.type,
                      *[sa.ForeignKey(key.target_fullname, ondelete=key.ondelete) for key in column.foreign_keys],
                      primary_key=column.primary_key, nullable=column.nullable)
            for column in table.columns
        ],
        sqlite_autoincrement=autoincrement,
    )
    rebuilt.create(connection)
    listed = ", ".join(f'"{name}"' for name in names)
    connection.exec_driver_sql(f'INSERT INTO "{rebuilt.name}" ({listed}) SELECT {listed} FROM "{table.name}"')
    connection.exec_driver_sql(f'DROP TABLE "{table.name}"')
    connection.exec_driver_sql(f'ALTER TABLE "{rebuilt.name}" RENAME TO "{table.name}"')
    for index in table.indexes:
        index.create(connection)


def _rebuild(autoincrement: bool) -> None:
    """Rebuild SQLite's ``runs`` and ``deployments`` with or without ``AUTOINCREMENT``, every row kept."""
    connection = op.get_bind()
    if connection.dialect.name != "sqlite":
        return
    tables = baseline_metadata().tables
    kept = {name: _columns(connection, name) for name in CHILDREN}
    for name in CHILDREN:  # dropping runs deletes the rows that refer to it (foreign keys on): keep them aside
        connection.exec_driver_sql(f'CREATE TEMP TABLE "kept_{name}" AS SELECT * FROM "{name}"')
        connection.exec_driver_sql(f'DELETE FROM "{name}"')
    _replace(connection, tables["runs"], autoincrement)
    for name, columns in kept.items():
        listed = ", ".join(f'"{column}"' for column in columns)
        connection.exec_driver_sql(f'INSERT INTO "{name}" ({listed}) SELECT {listed} FROM "kept_{name}"')
        connection.exec_driver_sql(f'DROP TABLE "kept_{name}"')
    _replace(connection, tables["deployments"], autoincrement)


def upgrade() -> None:
    """Give SQLite's ``runs`` and ``deployments`` ``AUTOINCREMENT`` ids (PostgreSQL's are sequences already)."""
    _rebuild(autoincrement=True)


def downgrade() -> None:
    """Rebuild SQLite's ``runs`` and ``deployments`` without ``AUTOINCREMENT``."""
    _rebuild(autoincrement=False)
