"""Bring a store made before migrations to exactly revision 0001, so it can be stamped and upgraded.

``adopt`` creates the 0001 tables, nullable columns and indexes the store lacks, and refuses a
store whose tables lack a required column or have unknown ones (names compared, not types).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Connection, inspect

from decisions.store.migrations.baseline import baseline_metadata


class LegacyMismatch(ValueError):
    """The tables of a store without a revision do not match revision 0001; the message says how."""


@dataclass
class Adopted:
    """What ``adopt`` changed."""

    # Tables created.
    tables: list[str] = field(default_factory=list)
    # Columns added, as ``"table.column"``.
    columns: list[str] = field(default_factory=list)
    # Indexes created.
    indexes: list[str] = field(default_factory=list)


def adopt(connection: Connection) -> Adopted:
    """Make a store without a revision match revision 0001 in the caller's locked transaction;
    what was created or added.

    Raises:
        LegacyMismatch: a table lacks a required (NOT NULL) column or has one 0001 does not have.
    """
    metadata = baseline_metadata()
    inspector = inspect(connection)
    present = set(inspector.get_table_names())
    adopted = Adopted()
    for table in metadata.sorted_tables:
        if table.name not in present:
            continue
        columns = {column["name"] for column in inspector.get_columns(table.name)}
        unknown = sorted(columns - set(table.columns.keys()))
        if unknown:
            raise LegacyMismatch(f"table {table.name} has columns revision 0001 does not: {', '.join(unknown)}")
        required = [c.name for c in table.columns if c.name not in columns and not c.nullable]
        if required:
            raise LegacyMismatch(f"table {table.name} lacks the required columns {', '.join(required)}")
    quote = connection.dialect.identifier_preparer
    for table in metadata.sorted_tables:
        if table.name not in present:
            table.create(connection)
            adopted.tables.append(table.name)
            continue
        columns = {column["name"] for column in inspector.get_columns(table.name)}
        for column in table.columns:
            if column.name not in columns:
                kind = column.type.compile(dialect=connection.dialect)
                connection.exec_driver_sql(
                    f"ALTER TABLE {quote.format_table(table)} ADD COLUMN {quote.format_column(column)} {kind}"
                )
                adopted.columns.append(f"{table.name}.{column.name}")
        indexes = {index["name"] for index in inspector.get_indexes(table.name)}
        for index in sorted(table.indexes, key=lambda index: str(index.name)):
            if index.name not in indexes:
                index.create(connection)
                adopted.indexes.append(str(index.name))
    return adopted
