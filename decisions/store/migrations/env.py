"""Alembic environment of the run store: migrations run on a connection ``decisions.store`` hands in.

``decisions.store.migrations.run`` puts an open connection, already inside the transaction that
holds the store's lock, into ``config.attributes["connection"]``; the migrations then run in that
transaction (Alembic begins none of its own), so the schema moves all the way or not at all. Without
one (Alembic's own command line, with ``sqlalchemy.url`` set), it connects to that URL. Offline
mode (``--sql``) writes the SQL for ``sqlalchemy.url``'s dialect.

``target_metadata`` is the models' ``Base.metadata``, for ``alembic revision --autogenerate``.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool

from decisions.store.models import Base

config = context.config
target_metadata = Base.metadata


def run_offline() -> None:
    """Emit the migrations' SQL for ``sqlalchemy.url`` instead of running them."""
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    """Run the migrations on the handed-in connection, or on a new one to ``sqlalchemy.url``."""
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_engine(config.get_main_option("sqlalchemy.url") or "", poolclass=NullPool)
    try:
        with engine.connect() as own:
            context.configure(connection=own, target_metadata=target_metadata, render_as_batch=True)
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
